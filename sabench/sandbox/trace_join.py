# ruff: noqa: F821  (a sandbox program: 3.8 syntax, after sabench/sandbox/trace_site.py)
# Under a check, a Python process the code under test started joins the check's runner
# (docs/checks.md, "Workers of the code under test"); in a run nothing listens and nothing happens.
_WORKERS = _SETTINGS.get("workers") or ""  # a check's socket for the code's workers (abstract)


def _join_check():
    """Under a check, a Python process the code under test started anew (a spawn or forkserver
    worker, a subprocess) joins it: the check's runner answers on its socket with the program
    that installs the check's patches of modules here and calls back into the check
    (sabench/checks/sandbox_worker.py). In a run nothing listens there, and nothing happens."""
    if not _WORKERS:
        return
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect("\0" + _WORKERS)
    except OSError:
        sock.close()
        return
    import _thread

    send(sock.fileno(), {"hello": {"pid": _os.getpid(), "thread": _thread.get_ident(), "fresh": 1}})
    joined = recv(sock.fileno()) or {}
    if not isinstance(joined.get("program"), str):
        sock.close()
        return
    program = compile(joined.pop("program"), "<string>", "exec")
    exec(program, {"__name__": "__sabench_worker__", "CONNECTION": sock, "JOINED": joined})


try:
    _join_check.__code__ = _disguise(_join_check.__code__)
    _join_check()
except BaseException:
    pass
