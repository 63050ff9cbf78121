# The callers of the check in the code under test (docs/checks.md, "Workers of the code under
# test"): part of the runner (sandbox_runner.py), sent in its place; it uses the runner's rpc,
# serve_callback, sync_rngs, STATE, LOCAL, PATCHES and WORKERS.

class WorkerGone(Exception):
    """A worker of the code under test ended while the check's function it called ran: its
    caller's business (a pool terminated), not the check's."""


class Peer:
    """One caller in the code under test and its channel: the child's main thread (its pipes), or
    another thread of the child or of a worker process (a connection of its own). Handles of its
    process are valid on it; a handle of another process crosses by the path it was reached by
    (``main.split_data``: the function of that name in this process, the check's patches undone)."""

    def __init__(self, r, w, pid, main=False):
        self.r, self.w, self.pid, self.main = r, w, pid, main
        self.paths = {}


def current_peer():
    return getattr(LOCAL, "peer", None) or STATE["main"]


def ref_in(pid, ref, path, what="an object"):
    """The handle ``ref`` of process ``pid`` as the calling thread's peer names it."""
    peer = current_peer()
    if peer is None or peer.pid == pid:
        return ref
    if not path:
        raise Undecidable("%s of one process of the code under test went to another (a worker):"
                          " only functions and modules it imports cross by name" % what)
    key = tuple(path)
    if key not in peer.paths:
        found = rpc({"op": "path", "path": list(path)}, "a look-up of " + ".".join(path))
        peer.paths[key] = object.__getattribute__(found, "_ref")
    return peer.paths[key]


def portable(sent):
    """Whether a value as sent holds no handle or Generator of one process (so every process of
    the code under test can have it)."""
    if isinstance(sent, list):
        return all(portable(v) for v in sent)
    if isinstance(sent, dict):
        return not ({"__ref__", "__rng__"} & set(sent)) and all(portable(v) for v in sent.values())
    return True


def patched(modules, name, sent):
    """The check set ``name`` on ``modules`` (as the child reports them): workers get it too."""
    if not isinstance(modules, list):
        return
    for module in modules:
        PATCHES[:] = [p for p in PATCHES if p[:2] != [str(module), name]]
        if portable(sent):
            PATCHES.append([str(module), name, sent])


def serve_workers():
    """Listen for the workers of the code under test (docs/checks.md, "Workers of the code under
    test"): each caller other than the child's main thread connects here, one thread each."""
    if not WORKERS:
        return
    try:  # now, in one thread: another thread must never find numpy half imported
        import numpy
    except Exception:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind("\0" + WORKERS)
        sock.listen(64)
    except OSError:
        return

    def accept():
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            try:
                threading.Thread(target=serve_worker, args=(conn,), daemon=True).start()
            except RuntimeError:  # no thread left (the sandbox's pids): that caller goes unserved
                conn.close()

    threading.Thread(target=accept, daemon=True).start()


def serve_worker(conn):
    """One caller's connection: a hello (its process; a fresh one gets the worker program), the
    check's patches, then its calls back into the check, served in this thread."""
    fd = conn.fileno()
    try:
        hello = (recv(fd) or {}).get("hello")
        pid = int(hello["pid"])
        joined = {"patches": list(PATCHES)}
        if hello.get("fresh"):
            if pid == STATE["proc"].pid:  # the child itself, as it started: not a worker
                send(fd, {})
                return
            joined.update(program=WORKER_SOURCE, address=WORKERS, submission=SUBMISSION)
        send(fd, joined)
        peer = LOCAL.peer = Peer(fd, fd, pid)
        while True:
            m = recv(fd)
            if m is None or m.get("op") != "callback":
                return
            sync_rngs(m.get("rng") or [])
            serve_callback(m, peer)
    except BaseException:
        pass
    finally:
        conn.close()


def lost(peer, what):
    if peer.main:
        gone(what)
    raise WorkerGone("a worker of the code under test ended during %s" % what)
