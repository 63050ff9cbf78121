# ruff: noqa: F821, B006, SIM105, UP031  (a sandbox program: 3.8 syntax, after sandbox_wire.py)
# sabench's execution trace (docs/architecture.md, "The execution trace"), installed as
# sitecustomize.py after sabench/checks/sandbox_wire.py by sabench.runtrace.install_site: the lines
# of the submission's files that ran and the first calls of their module-level functions, sent to
# the trace channel (a unix socket that sabench holds outside the sandbox, sabench.runtrace): a
# hello when the process starts, lines and calls as they run (sys.monitoring: a process killed at
# any moment has sent what it ran), its end (exit, os._exit, exec; SIGTERM where the record comes
# only at the end). Nothing is written where the run can reach it. Before 3.12 its calls are
# recorded by trace_wrapping.py, placed before it. Standard library, Python 3.8-3.14; its own
# failures are swallowed: the program it rides in must run exactly as it would without it.
import os as _os
import sys as _sys

_SETTINGS = globals().get("_TRACE_SETTINGS") or {}  # written by install_site, never the env
_ROOT = _os.path.normpath(_SETTINGS.get("root") or "/submission").rstrip("/") or "/"
_PREFIX = _ROOT + "/"
_CHANNEL = _SETTINGS.get("channel") or ""
_RESEED = int(_SETTINGS.get("reseed") or 0)  # the re-seeded run's salt (0: the run itself)
_MAX_SPAWNS = 256
_MAX_OPENED = 4096
_MAX_CALLS = 2
_MAX_ELEMENTS = 100000
_MAX_CALL_BYTES = 4 << 20
_GENERATOR_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generator, coroutine, iterable coro, async gen
_PROFILE_BUDGET = 1000000  # events the __main__ watch sees at most (before 3.12)
_PENDING_BUDGET = 20000  # events of a script call under way before it is given up
# this program's frames (a wrapped call's, a hooked import's) get a file name in the stdlib's folder
_STD_FILE = _os.path.join(_os.path.dirname(_os.__file__), "_trace_site.py")
_FunctionType = type(lambda: None)


def _chain_sitecustomize():
    """Run the sitecustomize this folder shadows (an image's own), as Python would have."""
    try:
        import importlib.machinery
        import importlib.util

        here = _os.path.dirname(_os.path.abspath(__file__))
        rest = [p for p in _sys.path if _os.path.abspath(p or ".") != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        _sys.modules["_sabench_chained_sitecustomize"] = module
        spec.loader.exec_module(module)
    except BaseException:
        pass


class _Skip(Exception):
    pass


def _reject(value):
    raise _Skip()


def _fits(x, depth=0):
    """Whether ``x`` is plain data the trace keeps (arrays up to _MAX_ELEMENTS elements)."""
    if depth > 32:
        return False
    if x is None or isinstance(x, (bool, int, float, str)):
        return True
    if isinstance(x, (list, tuple)):
        return len(x) <= _MAX_ELEMENTS and all(_fits(v, depth + 1) for v in x)
    if isinstance(x, dict):
        return len(x) <= _MAX_ELEMENTS and all(
            _fits(k, depth + 1) and _fits(v, depth + 1) for k, v in x.items()
        )
    np = _sys.modules.get("numpy")
    if np is not None and isinstance(x, (np.ndarray, np.generic)):
        return x.dtype.kind in NUMERIC and x.size <= _MAX_ELEMENTS
    return np is not None and isinstance(x, np.random.Generator)


def _generator(obj):
    """A numpy Generator as the state it holds (replay builds one in that state)."""
    np = _sys.modules.get("numpy")
    if np is None or not isinstance(obj, np.random.Generator):
        raise _Skip()
    return {"__generator__": encode(obj.bit_generator.state, _reject)}


def _data(x):
    if not _fits(x):
        raise _Skip()
    return encode(x, _generator)  # sandbox_wire.py's, prepended to this program


def _global_rngs():
    """The process's global random states (numpy's legacy one, the random module's) where those
    modules are loaded: replay sets them before calling, so a function that draws from them gives
    its run's answer again."""
    out = {}
    try:
        np = _sys.modules.get("numpy")
        if np is not None:
            out["numpy"] = _data(list(np.random.get_state(legacy=True)))
        rnd = _sys.modules.get("random")
        if rnd is not None:
            version, internal, gauss = rnd.getstate()
            out["random"] = _data([version, list(internal), gauss])
    except BaseException:
        pass
    return out


def _relpath(filename, cache={}):
    """The path under the root of a code object's file, or None (cached per file name)."""
    if filename in cache:
        return cache[filename]
    rel = None
    try:
        path = filename if _os.path.isabs(filename) else _os.path.abspath(filename)
        if path.startswith(_PREFIX) and not filename.startswith("<") and _os.path.isfile(path):
            rel = _os.path.normpath(path[len(_PREFIX) :])
    except Exception:
        rel = None
    cache[filename] = rel
    return rel


def _opened_relpath(path):
    """An opened path's place under the root, or None."""
    try:
        if isinstance(path, bytes):
            path = path.decode("utf-8", "replace")
        full = _os.path.abspath(path)
        return full[len(_PREFIX) :] if full.startswith(_PREFIX) else None
    except Exception:
        return None


def _key(code):
    """A code object as a key: code objects compare by value, file aside (the same helper pasted
    into two files is one code object to a set), so the file goes with it."""
    return code, code.co_filename


def _module_name(globals_, rel):
    name = globals_.get("__name__")
    if name == "__main__" and rel and rel.endswith(".py"):
        parts = rel[:-3].split("/")
        if parts[-1] == "__init__":
            parts.pop()
        if parts and all(p.isidentifier() for p in parts):
            return ".".join(parts)
    return name if isinstance(name, str) else None


def _at_module_scope(code, globals_):
    qualname = getattr(code, "co_qualname", None)
    if qualname is not None:
        return "." not in qualname and "<" not in qualname
    return getattr(globals_.get(code.co_name), "__code__", None) is code


class _Recorder:
    """Lines per file and the first calls of module-level functions of one process."""

    def __init__(self):
        self.name = None
        self.lines = {}  # relpath -> set of line numbers (sys.monitoring, settrace)
        self.coverage = None
        self.calls = []
        self.call_bytes = 0
        self.seen = {}  # _key(code) -> calls started so far (targets), or -1 (not a target)
        self.pending = {}  # frame -> the call record awaiting its result
        self.written = False
        #: lines and calls sent as they happen (sys.monitoring): a process killed at any moment
        #: has sent what it ran; the others send theirs at the end (and on SIGTERM: _terminated)
        self.streams = False
        self.sending = False  # the record is on its way: a SIGTERM now waits for it (_terminated)
        self.ending = False  # a SIGTERM came while it was: the process ends once it is sent
        self.spawned = []  # Python interpreters this process started: [kind, executable, argv]
        self.last_popen = None
        self.opened = {}  # the submission's files this process opened, relative to the root

    # -- calls -------------------------------------------------------------------------------
    def target(self, code, frame):
        """Whether this call of ``code`` is one of the first calls to record (counts it)."""
        key = _key(code)
        n = self.seen.get(key)
        if n is None:
            ok = _relpath(code.co_filename) is not None and not code.co_flags & _GENERATOR_FLAGS
            n = 0 if ok and _at_module_scope(code, frame.f_globals) else -1
        if n < 0 or n >= _MAX_CALLS:
            self.seen[key] = n
            return False
        self.seen[key] = n + 1
        return True

    def enter(self, code, frame):
        if self.call_bytes >= _MAX_CALL_BYTES:
            return
        try:
            local = frame.f_locals
            nargs = code.co_argcount + code.co_kwonlyargcount
            names = code.co_varnames
            args, kwargs = {}, {}
            for i, name in enumerate(names[:nargs]):
                target = args if i < code.co_argcount else kwargs
                target[name] = _data(local[name])
            if code.co_flags & 0x04:  # *args
                args[names[nargs]] = _data(list(local[names[nargs]]))
                nargs += 1
            if code.co_flags & 0x08:  # **kwargs
                for key, value in local[names[nargs]].items():
                    kwargs[key] = _data(value)
            rel = _relpath(code.co_filename)
            # every other name the module binds the function to (``rmse = _rmse_v2``)
            names = [
                k
                for k, v in list(frame.f_globals.items())
                if getattr(v, "__code__", None) is code and k != code.co_name
            ]
            self.pending[frame] = {
                "module": _module_name(frame.f_globals, rel),
                "function": code.co_name,
                "args": args,
                "kwargs": kwargs,
                "rng": _global_rngs(),
            }
            if names:
                self.pending[frame]["aliases"] = names
        except BaseException:
            pass

    def leave(self, frame, value, returned=True):
        record = self.pending.pop(frame, None)
        if record is None or not returned:
            return
        self.store(record, value)

    # -- the recorders -------------------------------------------------------------------------
    def start(self):
        wanted = _SETTINGS.get("recorder") or ""
        order = [wanted] if wanted else []
        # sys.monitoring stops each line after its first hit: exact and cheaper than a tracer
        order += ["sys.monitoring", "coverage", "settrace"]
        for name in order:
            try:
                if getattr(self, "_start_" + name.replace(".", "_"))():
                    return
            except BaseException:
                self.name = None

    def _start_sys_monitoring(self):
        mon = getattr(_sys, "monitoring", None)
        if mon is None:
            return False
        for tool in (4, 3, 2):
            try:
                mon.use_tool_id(tool, "sabench-trace")
                break
            except ValueError:
                continue
        else:
            return False
        ev, disable = mon.events, mon.DISABLE
        lines, seen, pending, relpath = self.lines, self.seen, self.pending, _relpath
        watched = set()
        getframe = _sys._getframe

        def done(code):
            n = seen.get(_key(code), -1)
            return (n < 0 or n >= _MAX_CALLS) and not any(f.f_code is code for f in pending)

        def on_start(code, offset):
            try:
                rel = relpath(code.co_filename)
                if rel is None:
                    return disable
                frame = getframe(1)
                if _key(code) not in watched:
                    watched.add(_key(code))
                    lines.setdefault(rel, set())
                    wanted = ev.LINE
                    if self.target(code, frame):
                        wanted |= ev.PY_RETURN
                        self.enter(code, frame)
                    mon.set_local_events(tool, code, wanted)
                elif self.target(code, frame):
                    self.enter(code, frame)
                if pending:
                    mon.set_events(tool, ev.PY_START | ev.PY_UNWIND)
                return disable if done(code) else None
            except BaseException:
                return disable

        def on_line(code, line):  # each line once: sent as it first runs (see _Recorder.write)
            try:
                rel = relpath(code.co_filename)
                lines[rel].add(line)
                _channel.line(rel, line)
            except BaseException:
                pass
            return disable

        def on_return(code, offset, value):
            try:
                frame = getframe(1)
                if frame in pending:
                    self.leave(frame, value)
                    if not pending:
                        mon.set_events(tool, ev.PY_START)
                    return None
                return disable if done(code) else None
            except BaseException:
                return None

        def on_unwind(code, offset, exc):
            try:
                frame = getframe(1)
                if frame in pending:
                    self.leave(frame, None, returned=False)
                    if not pending:
                        mon.set_events(tool, ev.PY_START)
            except BaseException:
                pass

        mon.register_callback(tool, ev.PY_START, on_start)
        mon.register_callback(tool, ev.LINE, on_line)
        mon.register_callback(tool, ev.PY_RETURN, on_return)
        mon.register_callback(tool, ev.PY_UNWIND, on_unwind)
        mon.set_events(tool, ev.PY_START)
        self.name = "sys.monitoring"
        self.streams = True

        def after_fork():  # events disabled in the parent fire again for the child's own record
            watched.clear()
            mon.restart_events()

        self.after_fork = after_fork
        return True

    def _start_coverage(self):
        import coverage

        cov = coverage.Coverage(
            data_file=None,
            include=[_PREFIX + "*"],
            branch=False,
            config_file=False,
            auto_data=False,
        )
        try:  # its warnings ("no data was collected") are not the program's output
            cov._warn = lambda *args, **kwargs: None
        except Exception:
            pass
        cov.start()
        self.coverage = cov
        self.name = "coverage " + coverage.__version__
        if _SETTINGS.get("calls", True):  # False: lines only (benchmarks)
            self._wrap_calls()
        return True

    def _wrap_calls(self):
        """Calls by wrapping (before 3.12, beside coverage's tracer): see _Wrapping."""
        _Wrapping(self).install()

    def store(self, record, result):
        """Add a finished call's record (``result`` encoded here) within the bytes cap."""
        try:
            record["result"] = _data(result)
            import json

            size = len(json.dumps(record))
            if self.call_bytes + size <= _MAX_CALL_BYTES:
                self.calls.append(record)
                if self.streams:
                    _channel.send({"call": record})
            self.call_bytes += size
        except BaseException:
            pass

    def _start_settrace(self):
        import threading

        lines, relpath = self.lines, _relpath
        returning = _return_opcodes()

        def tracer(frame, event, arg):
            if event != "call":
                return None
            code = frame.f_code
            rel = relpath(code.co_filename)
            if rel is None:
                return None
            hit = lines.setdefault(rel, set())
            if self.target(code, frame):
                self.enter(code, frame)

            def local(frame, event, arg):
                if event == "line":
                    hit.add(frame.f_lineno)
                elif event == "return" and frame in self.pending:
                    self.leave(frame, arg, _returned(frame, returning))
                return local

            return local

        _sys.settrace(tracer)
        threading.settrace(tracer)
        self.name = "settrace"
        return True

    # -- output ------------------------------------------------------------------------------------
    def reset_in_child(self):
        """After fork: the child sends its own record, on its own connection."""
        self.written = False
        self.calls, self.call_bytes = [], 0
        self.spawned, self.opened = [], {}
        self.seen.clear()
        self.pending.clear()
        for hit in self.lines.values():
            hit.clear()
        after = getattr(self, "after_fork", None)
        if after is not None:
            after()

    def collect_lines(self):
        out = {rel: sorted(n for n in hit if n > 0) for rel, hit in self.lines.items() if hit}
        if self.coverage is not None:
            self.coverage.stop()
            data = self.coverage.get_data()
            for path in data.measured_files():
                rel = _relpath(path)
                found = [n for n in data.lines(path) or () if n > 0]
                if rel is not None and found:
                    out[rel] = sorted(set(out.get(rel, ())) | set(found))
        return out

    def write(self, how="exit"):
        """Send the process's record and its end (``how``) on the channel, once."""
        if self.written or self.name is None:
            return
        self.written = self.sending = True
        try:
            lines, raised, tb = self.collect_lines(), [], getattr(_sys, "last_traceback", None)
            while tb is not None:  # the frames of an uncaught exception that ended the process
                rel = _relpath(tb.tb_frame.f_code.co_filename)
                raised += [[rel, tb.tb_lineno]] if rel else []
                tb = tb.tb_next
            record = {"how": how, "raised": raised, "lines": lines, "opened": sorted(self.opened)}
            if not self.streams:
                record["calls"] = self.calls
            _channel.send({"bye": record})
        finally:
            self.sending = False


class _Channel:
    """This process's connection to the trace channel: newline-delimited JSON, sent whole."""

    def __init__(self):
        self.sock = None
        self.lock = None
        self.names = {}  # relpath -> its JSON text

    def connect(self, recorder, streams=False):
        import _thread

        self.lock = _thread.RLock()  # after fork: a lock another thread held stays the parent's
        inherited, self.sock = self.sock, None  # after fork: the parent's connection stays its own
        if inherited is not None:
            try:
                inherited.close()
            except BaseException:
                pass
        if not _CHANNEL:
            return
        try:
            import socket

            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(_CHANNEL)
            self.sock = sock
            argv = [str(a) for a in getattr(_sys, "argv", [])[:64]]
            hello = {"pid": _os.getpid(), "ppid": _os.getppid(), "argv": argv}
            hello.update(recorder=recorder, python="%d.%d.%d" % _sys.version_info[:3])
            hello.update(streams=streams)
            self.send({"hello": hello})
        except BaseException:
            self.sock = None

    def send(self, message):
        if self.sock is None:
            return
        try:
            import json

            self.sendall(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")
        except BaseException:
            self.sock = None

    def line(self, rel, number):
        """A line that ran for the first time (sys.monitoring's), as it runs."""
        if self.sock is None:
            return
        try:
            name = self.names.get(rel)
            if name is None:
                import json

                name = self.names[rel] = json.dumps(rel).encode("utf-8")
            self.sendall(b'{"line":[%s,%d]}\n' % (name, number))
        except BaseException:
            self.sock = None

    def sendall(self, data):
        with self.lock:  # threads send whole messages, one at a time
            self.sock.sendall(data)


_channel = _Channel()


def _return_opcodes():
    import dis

    return {dis.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in dis.opmap}


def _returned(frame, opcodes):
    """Whether a frame leaves by a return (not an exception): its last instruction returns."""
    try:
        return frame.f_code.co_code[frame.f_lasti] in opcodes
    except Exception:
        return False


_recorder = None


def _flush(how="exit"):
    try:
        if _recorder is not None:
            _recorder.write(how)
            if _recorder.ending:
                _end_by_sigterm()
    except BaseException:
        pass


def _end_by_sigterm():
    """End as SIGTERM's default would have ended the process (its record already sent)."""
    import signal

    try:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except ValueError:  # not the main thread: the handler, run there again, ends the process
        pass
    _os.kill(_os.getpid(), signal.SIGTERM)


def _terminated(signum, frame):  # Pool.terminate, a time limit's first signal
    if _recorder is not None and _recorder.sending:  # ending already (exit, os._exit): the
        _recorder.ending = True  # record goes whole first, then the process ends (_flush)
        return
    _flush("SIGTERM")
    _end_by_sigterm()


_held = []  # the signal masks _hold_sigterm replaced, to restore


def _hold_sigterm():
    """Hold SIGTERM (block it) while the process says hello on its connection: from before a fork
    to the child's hello (and the parent's return), and at start. Killed there, a process would
    leave a connection that never said whose it is (Pool.terminate of workers just started); a
    SIGTERM held arrives as the mask is restored, the hello sent. (A Python handler for it would
    lose a signal that comes as a blocking call is entered: Pool.terminate waits forever.)"""
    try:
        import signal

        _held.append(signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM}))
    except BaseException:
        pass


def _release_sigterm():
    try:
        if _held:
            import signal

            signal.pthread_sigmask(signal.SIG_SETMASK, _held.pop())
    except BaseException:
        pass


def _is_python(program):
    name = _os.path.basename(str(program or ""))
    return (name.startswith("python") and name[6:].replace(".", "").isdigit()) or name == "python"


def _audit(event, args):
    """Files of the submission this process opens (a setting is evidence only where the run read
    its file), Python interpreters it starts (each must say hello on the channel: one started
    with -I, -S or a cleared environment does not, and the run is untraced), and an exec that
    replaces it (its record is sent first: the new program's atexit is not this one's)."""
    try:
        if event == "open":
            path = args[0]
            if isinstance(path, (str, bytes)) and _recorder is not None:
                rel = _opened_relpath(path)
                if rel and len(_recorder.opened) < _MAX_OPENED:
                    _recorder.opened[rel] = None
            return
        if event == "subprocess.Popen":
            program, argv = args[0], args[1]
            if isinstance(argv, (str, bytes)):
                return  # a shell command line: the shell is not traced
            argv = list(argv)
            program = program or (argv[0] if argv else "")
        elif event in ("os.posix_spawn", "os.exec"):
            program, argv = args[0], list(args[1])
        elif event == "os.spawn":
            program, argv = args[1], list(args[2])
        elif event == "os.kill" and _recorder is not None:
            # a process of the run ended by another (Pool.terminate): it sends no end of its own
            _channel.send({"killed": [int(args[0]), int(args[1])]})
            return
        else:
            return
        if isinstance(program, bytes):
            program = program.decode("utf-8", "replace")
        if _is_python(program) and _recorder is not None:
            kind = "exec" if event == "os.exec" else "spawn"
            entry = [kind, str(program), [str(a) for a in argv[:16]]]
            # subprocess.Popen may start its child with os.posix_spawn: one child, two events
            once = event != "os.posix_spawn" or _recorder.last_popen != entry
            _recorder.last_popen = entry if event == "subprocess.Popen" else None
            if once and len(_recorder.spawned) < _MAX_SPAWNS:
                _recorder.spawned.append(entry)
                _channel.send({"spawned": entry})
            if kind == "exec":
                _flush("exec")
    except BaseException:
        pass


def _install():
    global _recorder
    if _sys.version_info < (3, 8) or not _os.path.isdir(_ROOT):
        return
    recorder = _Recorder()
    recorder.start()
    if recorder.name is None:
        return
    _recorder = recorder
    _hold_sigterm()
    _channel.connect(recorder.name, recorder.streams)
    _release_sigterm()
    __import__("atexit").register(_flush)
    real_exit = _os._exit

    def _exit(status):  # multiprocessing's forked workers end with os._exit: write first
        _flush("os._exit")
        real_exit(status)

    _os._exit = _exit
    _sys.addaudithook(_audit)
    import signal

    # a recorder that streams needs no handler: a Python-level one can lose the signal (it comes
    # as a blocking call is entered: a Pool worker then never ends, and Pool.terminate waits);
    # the others' records come at the end, so they take that risk (before Python 3.12)
    if not recorder.streams and signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminated)

    def in_child():
        try:
            recorder.reset_in_child()
            _channel.connect(recorder.name, recorder.streams)
        except BaseException:
            pass
        _release_sigterm()

    if hasattr(_os, "register_at_fork"):
        _os.register_at_fork(
            before=_hold_sigterm, after_in_parent=_release_sigterm, after_in_child=in_child
        )


def _salted(seed):
    """The seed a re-seeded run uses instead of ``seed`` (None stays None: entropy either way)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        try:
            return [int(v) for v in seed] + [_RESEED]
        except Exception:
            return (hash(repr(seed)) ^ _RESEED) & 0xFFFFFFFF
    return (seed + _RESEED) & 0xFFFFFFFF


def _reseed_module(name, module):
    """Make the seeding entry points of ``random``, ``numpy.random`` and ``torch`` salt their
    seeds: every seeded draw of the run differs from its first execution's."""
    if name == "random":
        real = module.Random.seed

        def seed(self, a=None, version=2):
            return real(self, _salted(a), version)

        module.Random.seed = seed
        module.seed = module._inst.seed
    elif name == "numpy.random":
        real_rng, real_seed = module.default_rng, module.seed
        module.default_rng = lambda seed=None: real_rng(_salted(seed))
        module.seed = lambda seed=None: real_seed(_salted(seed))
        for cls in ("RandomState", "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"):
            base = getattr(module, cls, None)
            if base is not None:
                salted = type(cls, (base,), {"__init__": _salted_init(base)})
                salted.__module__ = base.__module__
                setattr(module, cls, salted)
    elif name == "torch" and hasattr(module, "manual_seed"):
        real_manual = module.manual_seed
        module.manual_seed = lambda seed: real_manual(_salted(seed) or 0)


def _salted_init(base):
    def __init__(self, seed=None, *args, **kwargs):
        base.__init__(self, _salted(seed), *args, **kwargs)

    return __init__


class _ReseedFinder:
    """On sys.meta_path in a re-seeded run: patches each seeding module once it has loaded."""

    names = ("random", "numpy.random", "torch")

    def __init__(self):
        self.busy = set()

    def find_spec(self, name, path=None, target=None):
        if name not in self.names or name in self.busy:
            return None
        self.busy.add(name)
        try:
            import importlib.util

            spec = importlib.util.find_spec(name)
        finally:
            self.busy.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        real = spec.loader.exec_module

        def exec_module(module):
            real(module)
            try:
                _reseed_module(name, module)
            except Exception:
                pass

        spec.loader.exec_module = exec_module
        return spec


def _arm_reseed():
    for name in _ReseedFinder.names:
        if name in _sys.modules:
            _reseed_module(name, _sys.modules[name])
    _sys.meta_path.insert(0, _ReseedFinder())


def _disguise(code):  # and the code it defines: see _STD_FILE (docs/checks.md, threat model)
    consts = tuple(_disguise(c) if type(c) is type(code) else c for c in code.co_consts)
    return code.replace(co_filename=_STD_FILE, co_consts=consts)


try:
    for _obj in list(globals().values()):
        for _fn in [_obj, *vars(_obj).values()] if isinstance(_obj, type) else [_obj]:
            if type(_fn) is _FunctionType and _fn.__module__ == __name__:
                _fn.__code__ = _disguise(_fn.__code__)
    _install()
    if _RESEED:
        _arm_reseed()
except BaseException:
    pass
_chain_sitecustomize()
