
# What serves a check's requests in a process of the code under test, and calls back into the
# check: the child's (sandbox_child.py) and every worker's (sandbox_worker.py) after this, both
# after sandbox_wire.py. Each caller (a thread of a process of the code under test) talks to the
# runner over a channel of its own: the child's main thread over the child's pipes, any other
# thread, and every thread of a worker process, over its own connection to the runner's socket
# (docs/checks.md, "Workers of the code under test").
import builtins, importlib, importlib.util, threading, traceback

REFS = []
REFS_LOCK = threading.Lock()
RNGS = {}  # the check's numpy Generators, by slot: their states go back with the next reply
TOUCHED = []
#: (module, name) -> the value the check's patch replaced there: a worker resolves the check's
#: reference to the function it spied on (``real = main.split_data``) to its own copy of it
ORIGINALS = {}
APPLIED = {}  # (module, name) -> the patch (as sent) this process holds there
PENDING = {}  # module -> {name: patch as sent}, for modules this process has not imported yet
CONNS = {}  # (pid, thread) -> this caller's connection to the runner
MISSING = object()


def keep(x):
    with REFS_LOCK:
        REFS.append(x)
        ref = len(REFS) - 1
    return {"__ref__": ref, "type": type(x).__name__, "callable": callable(x)}


def resolve(x):
    if "__ref__" in x:
        return REFS[int(x["__ref__"])]
    if "__cb__" in x:
        return stub(int(x["__cb__"]))
    if "__rng__" in x:
        slot, state = int(x["__rng__"]), decode(x["state"], resolve)
        if slot not in RNGS:
            import numpy as np
            RNGS[slot] = np.random.Generator(getattr(np.random, state["bit_generator"])())
        RNGS[slot].bit_generator.state = state  # the check may have drawn since
        TOUCHED.append(slot)
        return RNGS[slot]
    raise TypeError("not a value: %r" % (x,))


def with_states(msg):
    """The message, with the states of the check's Generators that this side used."""
    states = {slot: RNGS[slot].bit_generator.state for slot in TOUCHED}
    del TOUCHED[:]
    msg["rng"] = [[slot, encode(state, keep)] for slot, state in states.items()]
    return msg


class CheckCallbackError(Exception):
    """A function of the check, called by the code under test, raised."""

    def __reduce__(self):  # a worker's crosses to its pool's parent (which lacks this class)
        return RuntimeError, self.args


def connect():
    """A new connection to the runner for the calling thread: says whose it is, and applies the
    check's patches this process does not hold yet. Kept only by a caller that calls back: each
    connection held costs the runner a thread, and the sandbox counts threads as processes."""
    import socket
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect("\0" + ADDRESS)
    send(sock.fileno(), {"hello": {"pid": os.getpid(), "thread": threading.get_ident()}})
    reply = recv(sock.fileno()) or {}
    apply_patches(reply.get("patches") or [])
    return sock


def channel():
    """The calling thread's (read fd, write fd) to the runner."""
    key = (os.getpid(), threading.get_ident())
    if key == PIPE_CALLER:
        return REQ, REP
    sock = CONNS.get(key)
    if sock is None:
        sock = CONNS[key] = connect()
    return sock.fileno(), sock.fileno()


def stub(cid):
    def from_the_check(*args, **kwargs):
        r, w = channel()
        send(w, with_states({"op": "callback", "id": cid, "args": encode(list(args), keep),
                             "kwargs": encode(kwargs, keep)}))
        reply = serve(r, w)
        if "ok" in reply:
            return decode(reply["ok"], resolve)
        raise CheckCallbackError("a function of the check raised (see the check's traceback)")
    return from_the_check


def after_fork():
    """A forked process is a caller of its own: it leaves its parent's channels alone, and takes
    the check's patches its parent may have started before (a forkserver started by replay)."""
    global REQ, REP
    for fd in (REQ, REP):
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
    REQ = REP = None
    for sock in CONNS.values():
        try:
            sock.close()  # this process's copy: the parent's connection stays open
        except Exception:
            pass
    CONNS.clear()
    try:
        connect().close()
    except Exception:
        pass


def patch(module, name, sent, value=MISSING):
    """Set the check's value (``sent``, as the runner sent it) on ``module``, keeping what it
    replaced."""
    ORIGINALS.setdefault((module.__name__, name), getattr(module, name, MISSING))
    setattr(module, name, decode(sent, resolve) if value is MISSING else value)
    APPLIED[(module.__name__, name)] = sent


def apply_patches(patches):
    """The check's patches of modules (``main.split_data = spy``): now on those loaded, on the
    others as they are imported (PatchFinder)."""
    for module, name, sent in patches:
        if APPLIED.get((module, name)) == sent:
            continue
        loaded = sys.modules.get(module)
        if loaded is not None:
            patch(loaded, name, sent)
        else:
            PENDING.setdefault(module, {})[name] = sent


class PatchFinder:
    """First on sys.meta_path: a module the check patched gets its patches once it has loaded."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name not in PENDING:
            return None
        sys.meta_path.remove(PatchFinder)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, PatchFinder)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real = spec.loader.exec_module

        def exec_module(module):
            real(module)
            for attr, sent in (PENDING.pop(name, None) or {}).items():
                patch(module, attr, sent)

        spec.loader.exec_module = exec_module
        return spec


def describe(exc):
    out, seen = [], []
    while exc is not None and exc not in seen and len(out) < 8:
        seen.append(exc)
        base = next(c for c in type(exc).__mro__ if c.__module__ == "builtins")
        try:
            message = str(exc)
        except BaseException:
            message = "<unprintable>"
        d = {"type": type(exc).__name__, "module": str(type(exc).__module__),
             "base": base.__name__, "message": message[:4000],
             "stack": [[f.filename, f.lineno] for f in traceback.extract_tb(exc.__traceback__)]}
        if isinstance(exc, ImportError):
            d["name"] = exc.name if isinstance(exc.name, str) else None
            d["path"] = exc.path if isinstance(exc.path, str) else None
        if isinstance(exc, OSError):
            d["errno"] = exc.errno if isinstance(exc.errno, int) else None
            d["filename"] = exc.filename if isinstance(exc.filename, str) else None
        if isinstance(exc, SystemExit):
            d["code"] = exc.code if exc.code is None or isinstance(exc.code, int) else str(exc.code)
        out.append(d)
        exc = exc.__cause__ or exc.__context__
    return out


def set_global_rngs(state):
    if "numpy" in state:
        import numpy as np
        kind, key, pos, has_gauss, cached = state["numpy"]
        np.random.set_state((kind, np.asarray(key, dtype=np.uint32), pos, has_gauss, cached))
    if "random" in state:
        import random
        version, internal, gauss = state["random"]
        random.setstate((version, tuple(internal), gauss))


def signature(fn):
    import inspect
    return [[p.name, int(p.kind), p.default is not p.empty, None if p.default is p.empty
             else p.default] for p in inspect.signature(fn).parameters.values()]


def submission_modules():
    """The modules loaded from the submission's files: those in sys.modules, and the modules
    they hold (one loaded by ``spec_from_file_location`` need not be in sys.modules)."""
    root, module = os.path.realpath(SUBMISSION) + "/", type(sys)
    found = {}
    for mod in [m for m in list(sys.modules.values()) if isinstance(m, module)]:
        for m in [mod, *(v for v in list(vars(mod).values()) if isinstance(v, module))]:
            path = getattr(m, "__file__", None)
            if isinstance(path, str) and os.path.realpath(path).startswith(root):
                found[id(m)] = m
    return list(found.values())


def module_of(rel, name):
    """The module the code under test loaded from the file ``rel``, else that file imported."""
    path = os.path.realpath(os.path.join(SUBMISSION, rel))
    for mod in submission_modules():
        if os.path.realpath(mod.__file__) == path:
            return mod
    return importlib.import_module(name)


def set_on_module(owner, name, sent, also_bound):
    """Set ``owner.name`` to the check's value and, with ``also_bound``, every binding of the same
    function in the submission's modules (``from data import f`` in another module): a check's
    spy is called where the code calls. The modules set, by name (the runner's patches)."""
    old = getattr(owner, name, None)
    mods = [owner]
    if also_bound:
        mods += [m for m in submission_modules()
                 if m is not owner and old is not None and getattr(m, name, None) is old]
    value = decode(sent, resolve)
    for mod in mods:
        patch(mod, name, sent, value)
    return [mod.__name__ for mod in mods]


def by_path(path):
    """What ``module.attr...`` is in this process, the check's patches undone: the object a
    reference of the check's into another process of the code under test stands for here."""
    module = str(path[0])
    obj = importlib.import_module(module)
    for i, attr in enumerate(path[1:]):
        original = ORIGINALS.get((module, attr), MISSING) if i == 0 else MISSING
        obj = getattr(obj, attr) if original is MISSING else original
    return obj


def handle(m, w):
    try:
        op = m["op"]
        ref = False  # the value goes back as a handle, even where it is data
        if op == "import":
            value = importlib.import_module(m["name"])
        elif op == "module_of":
            value = module_of(m["path"], m["name"])
        elif op == "path":
            value, ref = by_path(m["path"]), True
        elif op == "global_rng":  # replay: the global random states the recorded call began with
            value = set_global_rngs(decode(m["state"], resolve))
        elif op == "lines":  # what ran here, by the trace the real run also had (if any)
            recorder = getattr(sys.modules.get("sitecustomize"), "_recorder", None)
            value = recorder.collect_lines() if recorder is not None else None
        else:
            target = REFS[int(m["ref"])]
            if op == "getattr":
                value = getattr(target, m["name"])
            elif op == "setattr":
                if isinstance(target, type(sys)):
                    value = set_on_module(target, m["name"], m["value"], False)
                else:
                    value = setattr(target, m["name"], decode(m["value"], resolve))
            elif op == "rebind":
                value = set_on_module(target, m["name"], m["value"], True)
            elif op == "call":
                value = target(*decode(m["args"], resolve), **decode(m["kwargs"], resolve))
            elif op == "special":
                args = decode(m["args"], resolve)
                value = {"len": len, "iter": lambda t: list(iter(t)), "getitem": lambda t, k: t[k],
                         "contains": lambda t, k: k in t, "float": float, "int": int,
                         "bool": bool, "str": str, "repr": repr,
                         "signature": signature}[m["name"]](target, *args)
            else:
                raise ValueError("unknown request %r" % (op,))
        reply = {"ok": keep(value) if ref else encode(value, keep)}
    except BaseException as exc:
        if m.get("op") in ("import", "call"):
            traceback.print_exc()
        reply = {"err": describe(exc)}
    flush()
    send(w, {"reply": with_states(reply)})


def flush():
    """Its output so far, into the relay: the child runs as the real run does (buffered output,
    no -u), and it ends with os._exit, which flushes nothing."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def serve(r, w):
    """Serve the runner's requests on one channel until the reply it is waiting for comes."""
    while True:
        m = recv(r)
        if m is None:
            flush()
            os._exit(0)
        if "reply" in m:
            return m["reply"]
        handle(m, w)
