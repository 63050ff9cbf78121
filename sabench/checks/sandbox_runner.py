
import ast, builtins, ctypes, errno, importlib.machinery, importlib.util, linecache, socket, subprocess
import threading, time, traceback, types, urllib.error

# Everything the runner needs comes in one file beside the submission, read and deleted (with the
# runner's own file) before the code under test starts: it finds no check, nonce or SAU anywhere.
SUBMISSION = sys.argv[1]
PARAMS_FILE = os.path.join(SUBMISSION, ".sabench-check.json")
try:
    with open(PARAMS_FILE, encoding="utf-8") as fh:
        PARAMS = json.load(fh)
except (OSError, ValueError):
    PARAMS = {}
for _own in (PARAMS_FILE, os.path.abspath(__file__)):
    try:
        os.remove(_own)
    except OSError:
        pass
NONCE = str(PARAMS.get("nonce") or "")
CHECK = "/sabench-check/check.py"  # the name the check's frames carry; no such file exists
CHECK_TEXT = PARAMS.get("check")
TIME_LIMIT = float(PARAMS.get("time_limit_s") or 0)
REPLAY = PARAMS.get("replay") or []
RUN_ARGV = [str(a) for a in PARAMS.get("argv") or []]
WORKERS = str(PARAMS.get("workers") or "")  # the abstract socket the code's workers call back on
try:
    ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
except Exception:
    pass
RUNNER_FILE = os.path.abspath(__file__)
CHILD_SOURCE = "@CHILD@"
WORKER_SOURCE = "@WORKER@"
PREFIX = b"[code under test] "
NET_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ECONNREFUSED, errno.ENETDOWN,
              errno.EADDRNOTAVAIL}
STATE = {"proc": None, "main": None, "gone": None, "relay": None, "callback_exc": None,
         "waiting": 0, "phase": "check", "unconfirmed": []}
CALLBACKS = []
#: [module, name, value as sent] the check set on modules of the code under test: a worker that
#: imports them anew gets them too
PATCHES = []
LOCAL = threading.local()  # .peer: the caller a thread of the runner serves (None: the child)
RNGS = {}  # id -> (slot, a numpy Generator of the check), kept in step with the child's copy


REPORTING = threading.Lock()


def report(kind, detail="", where=None, code=1, lines=None):
    if not REPORTING.acquire(blocking=False):  # the other thread is reporting: it ends us
        while True:
            time.sleep(1)
    stop_child()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    said = {"kind": kind, "detail": str(detail)[:2000], "where": where}
    if lines is not None:
        said["lines"] = lines
    line = json.dumps(said)
    os.write(2, ("\n[sabench-check %s] %s\n" % (NONCE, line)).encode("utf-8", "replace"))
    os._exit(code)


# --- the child and the calls that cross to it ---------------------------------------------------


class ChildGone(BaseException):
    """The code under test ended its own process: nothing it said can count."""


"@PEERS@"


RELAYED = []  # the child's output lines; written out whole when it stops (never mid-line)
RELAY_KEEP = 1 << 18  # bytes of it kept, the last ones


def relay(fd):
    """Collect the child's output; written to the log by stop_child, after the child ended, so
    it never lands inside a line the check is printing."""
    buf = b""
    kept = 0
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            break
        buf += chunk
        *lines, buf = buf.split(b"\n")
        for line in lines:
            RELAYED.append(PREFIX + line + b"\n")
            kept += len(line) + len(PREFIX) + 1
            while kept > RELAY_KEEP and len(RELAYED) > 1:
                kept -= len(RELAYED.pop(0))
    if buf:
        RELAYED.append(PREFIX + buf + b"\n")


def start_child():
    # the canary: from here on the code under test runs; a report missing after it is its doing
    # (it killed the runner, or everything), a report missing before it the harness's or check's
    os.write(2, ("\n[sabench-check %s] %s\n" % (NONCE, json.dumps({"kind": "started"}))).encode())
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()
    log_r, log_w = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD_SOURCE, str(to_child), str(from_child), SUBMISSION,
         json.dumps(RUN_ARGV), WORKERS],
        stdin=subprocess.DEVNULL, stdout=log_w, stderr=log_w, pass_fds=(to_child, from_child),
        cwd=SUBMISSION, env={k: v for k, v in os.environ.items() if k != "SABENCH_TRACE_PTH"},
        close_fds=True)  # the runner's own variable (sandbox/pyenv.py) is not the run's
    for fd in (to_child, from_child, log_w):
        os.close(fd)
    thread = threading.Thread(target=relay, args=(log_r,), daemon=True)
    thread.start()
    STATE.update(proc=proc, w=from_parent, r=to_parent, relay=thread,
                 main=Peer(to_parent, from_parent, proc.pid, main=True))
    serve_workers()


def stop_child():
    proc = STATE["proc"]
    if proc is None:
        return
    for fd in ("w", "r"):
        try:
            os.close(STATE[fd])
        except OSError:
            pass
    try:
        proc.wait(timeout=1)
    except Exception:
        proc.kill()
    STATE["relay"].join(timeout=2)
    STATE["proc"] = None
    for sys_stream in (sys.stdout, sys.stderr):
        try:
            sys_stream.flush()
        except Exception:
            pass
    os.write(1, b"\n" + b"".join(RELAYED))
    RELAYED.clear()


def gone(what):
    proc = STATE["proc"]
    try:
        status = proc.wait(timeout=5)
    except Exception:
        status = None
    STATE["gone"] = ("the code under test ended its process (exit status %s) during %s, before "
                     "the check finished" % (status, what))
    raise ChildGone(STATE["gone"])


def to_wire(x):
    def other(obj):
        if isinstance(obj, Remote):
            return {"__ref__": obj._sabench_ref_here()}
        if isinstance(obj, ProxyModule):
            return {"__ref__": module_ref(obj)}
        np = sys.modules.get("numpy")
        if np is not None and isinstance(obj, np.random.Generator):
            slot = RNGS.setdefault(id(obj), (len(RNGS), obj))[0]
            return {"__rng__": slot, "state": encode(obj.bit_generator.state, other)}
        if callable(obj):
            CALLBACKS.append(obj)
            return {"__cb__": len(CALLBACKS) - 1}
        raise TypeError("cannot pass a %s to the code under test: only data (numbers, strings, "
                        "numpy arrays, lists, tuples, dicts), its own objects and functions cross"
                        % type(obj).__name__)
    return encode(x, other)


def from_wire(x, peer=None):
    pid = (peer or current_peer()).pid

    def resolve(d):
        if "__ref__" in d:
            return Remote(int(d["__ref__"]), str(d.get("type")), bool(d.get("callable")), pid)
        raise TypeError("the code under test sent something that is not data")
    return decode(x, resolve)


def rpc(msg, what):
    """Send a request to the calling thread's peer (the child, unless the thread serves a worker's
    call back into the check) and serve that peer's calls back until the reply comes."""
    peer = getattr(LOCAL, "peer", None)
    if peer is None:
        if STATE["gone"]:
            raise ChildGone(STATE["gone"])
        if STATE["proc"] is None:
            start_child()
        peer = STATE["main"]
    try:
        send(peer.w, msg)
    except OSError:
        lost(peer, what)
    while True:
        STATE["waiting"] += peer.main
        try:
            m = recv(peer.r)
        finally:
            STATE["waiting"] -= peer.main
        if m is None:
            lost(peer, what)
        sync_rngs(m.get("rng") or (m.get("reply") or {}).get("rng") or [])
        if "reply" in m:
            reply = m["reply"]
            if "ok" in reply:
                return from_wire(reply["ok"], peer)
            if peer.main:  # a function of the check raised, whichever caller called it
                pending, STATE["callback_exc"] = STATE["callback_exc"], None
            else:
                pending, LOCAL.callback_exc = getattr(LOCAL, "callback_exc", None), None
            if pending is not None:
                raise pending
            raise rebuild(reply["err"])
        serve_callback(m, peer)


def sync_rngs(states):
    """Advance the check's Generators as the child's copies advanced."""
    by_slot = {slot: rng for slot, rng in RNGS.values()}
    for slot, state in states:
        by_slot[int(slot)].bit_generator.state = from_wire(state)


def serve_callback(m, peer):
    if not peer.main:  # what an earlier call of this caller raised is not this call's
        LOCAL.callback_exc = None
    try:
        fn = CALLBACKS[int(m["id"])]
        reply = {"ok": to_wire(fn(*from_wire(m["args"], peer), **from_wire(m["kwargs"], peer)))}
    except BaseException as exc:
        if not peer.main:
            LOCAL.callback_exc = exc
        if not isinstance(exc, WorkerGone):
            STATE["callback_exc"] = exc
        reply = {"err": []}
    send(peer.w, {"reply": reply})


def rebuild(chain):
    """The child's exception as one of the same builtin kind, carrying the child's stack."""
    first = prev = None
    for d in chain or [{"type": "Exception", "base": "Exception", "message": "?"}]:
        exc = rebuild_one(d)
        if prev is None:
            first = exc
        else:
            prev.__cause__ = exc
        prev = exc
    return first


def rebuild_one(d):
    name, module = str(d.get("type")), str(d.get("module"))
    message = str(d.get("message", ""))
    base = getattr(builtins, str(d.get("base")), None)
    if (module, name) == ("socket", "gaierror"):
        base = socket.gaierror
    if not (isinstance(base, type) and issubclass(base, BaseException)):
        base = Exception
    try:
        cls = base if base.__name__ == name else type(name, (base,), {"__module__": module})
        if issubclass(base, ImportError):
            exc = cls(message, name=d.get("name"), path=d.get("path"))
        elif issubclass(base, OSError) and isinstance(d.get("errno"), int):
            more = [d["filename"]] if d.get("filename") else []
            exc = cls(d["errno"], os.strerror(d["errno"]), *more)
        elif issubclass(base, SystemExit):
            exc = cls(d.get("code"))
        else:
            exc = cls(message)
    except Exception:
        exc = type(name, (Exception,), {"__module__": module})(message)
    # the child names its frames: one naming the check or the runner must not pass for theirs
    exc._sabench_remote = [
        ("<code under test>" if str(f) in (CHECK, RUNNER_FILE) else str(f), int(n))
        for f, n in d.get("stack") or []
    ]
    return exc


class Remote:
    """An object of the code under test: it stays in the child; what it gives back is data."""

    __slots__ = ("_ref", "_type", "_callable", "_pid", "_path")

    def __init__(self, ref, kind, is_callable, pid, path=None):
        object.__setattr__(self, "_ref", ref)
        object.__setattr__(self, "_type", kind)
        object.__setattr__(self, "_callable", is_callable)
        object.__setattr__(self, "_pid", pid)
        object.__setattr__(self, "_path", path)

    def _sabench_ref_here(self):
        get = object.__getattribute__
        return ref_in(get(self, "_pid"), get(self, "_ref"), get(self, "_path"), repr(self))

    def _ask(self, op, **fields):
        return rpc({"op": op, "ref": self._sabench_ref_here(), **fields}, "a call to %r" % self)

    def _special(self, name, *args):
        return self._ask("special", name=name, args=to_wire(list(args)))

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return with_path(self._ask("getattr", name=name), object.__getattribute__(self, "_path"),
                         name)

    def __setattr__(self, name, value):
        self._ask("setattr", name=name, value=to_wire(value))

    def __call__(self, *args, **kwargs):
        return self._ask("call", args=to_wire(list(args)), kwargs=to_wire(kwargs))

    def __repr__(self):
        return "<%s of the code under test>" % object.__getattribute__(self, "_type")

    def __len__(self):
        return self._special("len")

    def __iter__(self):
        return iter(self._special("iter"))

    def __getitem__(self, key):
        return self._special("getitem", key)

    def __contains__(self, key):
        return self._special("contains", key)

    def __float__(self):
        return self._special("float")

    def __int__(self):
        return self._special("int")

    def __bool__(self):
        return self._special("bool")

    def __str__(self):
        return self._special("str")

    @property
    def __signature__(self):
        import inspect

        return inspect.Signature([
            inspect.Parameter(name, inspect._ParameterKind(kind),
                              default=default if has else inspect.Parameter.empty)
            for name, kind, has, default in self._special("signature")])


def with_path(value, path, name):
    """A handle reached as ``path.name``: by that path it crosses to another process."""
    if isinstance(value, Remote) and path:
        object.__setattr__(value, "_path", [*path, name])
    return value


def module_ref(module):
    """The proxy's module as the calling thread's peer names it."""
    d = module.__dict__
    return ref_in(d["_sabench_pid"], d["_sabench_ref"], [module.__name__])


"@TARGETS@"


class ProxyModule(types.ModuleType):
    """A module of the submission as the check sees it: each attribute is fetched from the child.
    A name the module lacks is the submission's definition of it elsewhere (:func:`elsewhere`);
    a check that sets that name sets it where the code under test calls it from."""

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__") or name.startswith("_sabench"):
            raise AttributeError(name)
        owner = self.__dict__.get("_sabench_moved", {}).get(name)
        if owner is not None:
            return getattr(owner, name)
        ref = self.__dict__.get("_sabench_ref")
        if ref is not None:
            try:
                return with_path(rpc({"op": "getattr", "ref": module_ref(self), "name": name},
                                     "a look-up of %s.%s" % (self.__name__, name)),
                                 [self.__name__], name)
            except AttributeError:
                owner = elsewhere(self.__name__, name)
                if owner is None:
                    raise
        else:
            owner = elsewhere(self.__name__, name)
            if owner is None:
                raise Absent("the submission has no module %r and defines no %r"
                             % (self.__name__, name), name=self.__name__)
        self.__dict__.setdefault("_sabench_moved", {})[name] = owner
        return getattr(owner, name)

    def __setattr__(self, name, value):
        if kept_here(name, value):
            return types.ModuleType.__setattr__(self, name, value)
        ref = self.__dict__.get("_sabench_ref")
        try:
            getattr(self, name)  # where the name lives: this module, or the one defining it
        except (AttributeError, Absent):
            pass
        owner = self.__dict__.get("_sabench_moved", {}).get(name)
        sent = to_wire(value)
        if owner is not None:
            patched(rpc({"op": "rebind", "ref": owner._sabench_ref_here(), "name": name,
                         "value": sent}, "setting %s.%s" % (self.__name__, name)), name, sent)
        if ref is None:
            return types.ModuleType.__setattr__(self, name, value)
        patched(rpc({"op": "setattr", "ref": module_ref(self), "name": name, "value": sent},
                    "setting %s.%s" % (self.__name__, name)), name, sent)


class SubmissionLoader:
    @staticmethod
    def create_module(spec):
        return ProxyModule(spec.name)

    @staticmethod
    def exec_module(module):
        ref = rpc({"op": "import", "name": module.__name__}, "the import of " + module.__name__)
        module.__dict__["_sabench_ref"] = object.__getattribute__(ref, "_ref")
        module.__dict__["_sabench_pid"] = object.__getattribute__(ref, "_pid")


def defined_elsewhere(module):
    """Whether the check takes from ``module`` (or a module under it) a name the submission
    defines: only then does a module the submission lacks stand in (``import optimizer`` alone,
    or for names defined nowhere, stays an omission)."""
    try:
        targets = check_targets(ast.parse(CHECK_TEXT))
    except (SyntaxError, ValueError, TypeError):
        return False
    return any(n in DEFINED for m, n in targets if m == module or m.startswith(module + "."))


class StandInLoader:
    """A module the check names that neither the submission nor the sandbox's Python has (one
    flattened script, a package by another name): a module of no file whose names are the
    submission's definitions of them (:class:`ProxyModule`)."""

    @staticmethod
    def create_module(spec):
        module = ProxyModule(spec.name)
        module.__dict__["__path__"] = []
        return module

    @staticmethod
    def exec_module(module):
        pass


def under_submission(path):
    return isinstance(path, str) and (path == SUBMISSION or path.startswith(SUBMISSION + "/"))


class SubmissionFinder:
    """A name the sandbox's own Python provides imports that; a submission module a proxy."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        finder = importlib.machinery.PathFinder
        if "." not in name:
            own = finder.find_spec(name, [p for p in sys.path if not under_submission(p)])
            if own is not None and own.origin not in (None, "namespace"):
                return own
            spec = finder.find_spec(name, [SUBMISSION])
            stand_in = own is None
        else:
            parent = sys.modules.get(name.rpartition(".")[0])
            if not isinstance(parent, ProxyModule):
                return None
            spec = finder.find_spec(name, list(parent.__dict__.get("__path__") or []))
            stand_in = "_sabench_ref" not in parent.__dict__
        if spec is None:
            if stand_in and defined_elsewhere(name):
                return importlib.util.spec_from_loader(name, StandInLoader, is_package=True)
            return None
        places = [spec.origin, *(spec.submodule_search_locations or [])]
        if not any(under_submission(p) for p in places):
            return None
        out = importlib.util.spec_from_loader(
            name, SubmissionLoader, origin=spec.origin,
            is_package=spec.submodule_search_locations is not None)
        if spec.submodule_search_locations is not None:
            out.submodule_search_locations = list(spec.submodule_search_locations)
        out.has_location = spec.has_location
        return out


# --- how the check ended --------------------------------------------------------------------


def frames(tb):
    return [(f.filename, f.lineno) for f in traceback.extract_tb(tb)]


def full_stack(exc):
    """The check's frames, then (for what the child raised) the child's."""
    remote = getattr(exc, "_sabench_remote", None)
    if remote is None:
        return frames(exc.__traceback__)
    return [f for f in frames(exc.__traceback__) if f[0] != RUNNER_FILE] + remote


def in_submission(filename):
    return filename.startswith(SUBMISSION + "/")


def where(stack):
    """The innermost frame in a file of the submission (never this runner, which sits beside it)."""
    for filename, line in reversed(stack):
        if in_submission(filename) and filename != RUNNER_FILE:
            return [os.path.relpath(filename, SUBMISSION), line]
    return None


def chain(exc):
    seen = []
    while exc is not None and exc not in seen and len(seen) < 8:
        seen.append(exc)
        exc = getattr(exc, "reason", None) if isinstance(exc, urllib.error.URLError) else (
            exc.__cause__ or exc.__context__)
    return seen


def is_network(exc):
    return any(isinstance(e, socket.gaierror) or (isinstance(e, OSError) and e.errno in NET_ERRNOS)
               for e in chain(exc) if isinstance(e, BaseException))


def outside(exc):
    """A read-only file system, or an absolute path outside the working folder and /tmp."""
    for e in chain(exc):
        if not isinstance(e, OSError):
            continue
        if e.errno == errno.EROFS:
            return True
        name = e.filename if isinstance(e.filename, str) else ""
        if e.errno in (errno.EACCES, errno.EPERM, errno.ENOENT) and name.startswith("/") and not (
                name == SUBMISSION or name.startswith((SUBMISSION + "/", "/tmp/"))):
            return True
    return False


def submission_has(module):
    top = module.split(".")[0]
    return bool(top) and (os.path.isdir(os.path.join(SUBMISSION, top))
                          or os.path.isfile(os.path.join(SUBMISSION, top + ".py")))


def classify(exc, stack):
    last = stack[-1][0] if stack else ""
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    if isinstance(exc, NotImplementedError):
        return "placeholder", "the code under test is a stub: " + text
    if isinstance(exc, Absent):
        return "missing", str(exc)
    if isinstance(exc, Undecidable):
        return "error", str(exc)
    if isinstance(exc, ModuleNotFoundError):
        name = exc.name or ""
        if submission_has(name) or last == CHECK:
            return "missing", "the submission has no module %r (%s)" % (name, text)
        return "error", "the code under test imports %r, which the sandbox env lacks" % name
    if isinstance(exc, ImportError):
        if exc.path and in_submission(str(exc.path)):
            return "missing", "the submission lacks what the check imports: " + text
        return "error", "an import outside the submission failed: " + text
    if isinstance(exc, NameError) and last == CHECK:
        return "error", "a bug in the check: " + text
    if is_network(exc):
        return "error", "tried the network, which checks do not have: " + text
    if outside(exc):
        return "error", "reached outside its working folder (read-only or absent): " + text
    if isinstance(exc, MemoryError):
        return "error", "ran out of memory: " + text
    return "fail", text


# --- replay: the code under check against its own run ---------------------------------------


def same(a, b):
    """Equal as results: numbers to 1e-6 relative, arrays by shape and value, containers by item."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    np = sys.modules.get("numpy")
    if np is not None and isinstance(a, (np.ndarray, np.generic)) or (
            np is not None and isinstance(b, (np.ndarray, np.generic))):
        try:
            x, y = np.asarray(a), np.asarray(b)
            if x.shape != y.shape:
                return False
            if x.dtype.kind in "biufc" and y.dtype.kind in "biufc":
                return bool(np.allclose(x, y, rtol=1e-6, atol=1e-9, equal_nan=True))
            return bool((x == y).all())
        except Exception:
            return False
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool):
        a, b = float(a), float(b)
        return (a != a and b != b) or abs(a - b) <= max(1e-9, 1e-6 * max(abs(a), abs(b)))
    return type(a) is type(b) and a == b


def not_data(d):
    """A recorded value: data, or a numpy Generator as the state it held when the run called
    (built here in that state: it crosses to the child as the check's own Generators do)."""
    if "__generator__" in d:
        import numpy as np
        state = decode(d["__generator__"], not_data)
        rng = np.random.Generator(getattr(np.random, state["bit_generator"])())
        rng.bit_generator.state = state
        return rng
    raise TypeError("not data")


def check_targets(tree):
    """(module, name) of what the check takes from modules it imports: ``from m import f``,
    ``import m`` then ``m.f``."""
    out, modules = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out += [(node.module, a.name) for a in node.names]
        elif isinstance(node, ast.Import):
            modules.update({a.asname or a.name: a.name for a in node.names})
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id in modules:
                out.append((modules[node.value.id], node.attr))
    return set(out)


def replay(targets):
    """Before the check, call each function it uses on the inputs of the submission's own run
    and compare with what it returned there: code that behaves one way under a check and another
    in its run is not what the run ran. Done first, on the modules as imported (no state the
    check sets). A call that gives two different answers is not deterministic and proves
    nothing; one that raises or exits, or a module that does not import, is left to the check."""
    STATE["phase"] = "replay"
    budget = time.monotonic() + max(1.0, TIME_LIMIT * 0.4)
    targets = set(targets) | {(moved_to(m, n), n) for m, n in targets}
    for call in REPLAY:
        module = str(call.get("module"))
        names = [str(n) for n in [call.get("function"), *(call.get("aliases") or [])]]
        used = [n for n in names if (module, n) in targets]
        if not used or time.monotonic() > budget:
            continue
        try:
            STATE["phase"] = "import"  # a module that hangs as it imports: the check's import too
            fn = getattr(importlib.import_module(module), used[0])
            STATE["phase"] = "replay"
            recorded = decode(call["result"], not_data)
            answers = []
            for _ in range(2):  # each call from the recorded state: arguments, global generators
                args, kwargs = bind(fn, call)
                if isinstance(call.get("rng"), dict):  # {module: its encoded state}
                    state = {"__dict__": [[k, v] for k, v in call["rng"].items()]}
                    rpc({"op": "global_rng", "state": state}, "setting the random state")
                answers.append(fn(*args, **kwargs))
            first, second = answers
        except ChildGone:
            raise
        except (Exception, SystemExit):  # exiting (argparse on the check's argv) proves nothing
            continue
        if isinstance(first, Remote) or same(first, recorded):
            continue
        if not same(first, second):  # proves nothing either way: no credit from this check
            STATE["unconfirmed"].append("%s.%s" % (module, used[0]))
            continue
        report("inconsistent", "%s.%s returns %s on the inputs of the submission's own run, where "
               "it returned %s: the code under the check is not the code the run ran" % (
                   module, used[0], brief(first), brief(recorded)))
    STATE["phase"] = "check"


def bind(fn, call):
    """The recorded call (parameters by name, ``*args`` as a list under its name, the rest of
    ``**kwargs`` by key) as positional and keyword arguments for ``fn``'s signature."""
    named = {str(k): decode(v, not_data) for k, v in (call.get("args") or {}).items()}
    extra = {str(k): decode(v, not_data) for k, v in (call.get("kwargs") or {}).items()}
    named.update(extra)
    args, kwargs, gap = [], {}, False
    for name, kind, _has_default, _default in fn._special("signature"):
        if kind == 4:  # **kwargs: whatever no other parameter took
            kwargs.update(named)
            break
        if name not in named:
            gap = True
            continue
        value = named.pop(name)
        if kind == 2:  # *args
            args.extend(value)
        elif kind in (0, 1) and not gap:
            args.append(value)
        elif kind == 0:
            raise TypeError("a positional-only parameter after a missing one")
        else:
            kwargs[name] = value
    return args, kwargs


def brief(x):
    text = repr(x)
    return text if len(text) <= 120 else text[:117] + "..."


def watchdog():
    """Near the time limit, while the runner waits on the code under test, that code hangs: the
    submission's doing (the check's own computing is left to the sandbox's limit, an error)."""
    deadline = time.monotonic() + TIME_LIMIT - max(2.0, 0.1 * TIME_LIMIT)
    while time.monotonic() < deadline:
        time.sleep(0.2)
    if STATE["waiting"] and STATE["phase"] == "replay":  # a recorded call may be slow, honestly
        report("error", "replaying the run's calls took the check's whole time limit")
    if STATE["waiting"]:
        report("crash", "the code under test did not return within %g s: it hangs (or is too "
               "slow for judge_settings.exec.time_limit_s)" % TIME_LIMIT)


def passed():
    """The check passed: report it with the lines of the submission the child ran (the judge
    compares them with the run's own: code that ran only under the check is not the run's)."""
    lines = None
    if STATE["proc"] is not None and not STATE["gone"]:
        try:
            lines = rpc({"op": "lines"}, "the end of the check")
        except ChildGone as exc:
            crash(str(exc), full_stack(exc))
        except Exception:
            lines = None
    if STATE["unconfirmed"]:
        report("unconfirmed", "the check passed, but %s gave two different answers on the inputs "
               "of the submission's own run (its random state restored): replay cannot confirm that "
               "the code under the check is the code the run ran (at most partial)"
               % ", ".join(STATE["unconfirmed"]), code=0,
               lines=lines if isinstance(lines, dict) else None)
    report("pass", code=0, lines=lines if isinstance(lines, dict) else None)


def crash(detail, stack=None):
    report("crash", detail, where(stack or []))




try:
    code = compile(CHECK_TEXT, CHECK, "exec")
except (SyntaxError, ValueError, TypeError) as exc:
    report("error", "the check does not parse: %s" % exc)
linecache.cache[CHECK] = (len(CHECK_TEXT), None, CHECK_TEXT.splitlines(True), CHECK)
sys.meta_path.insert(sys.meta_path.index(importlib.machinery.PathFinder), SubmissionFinder)
sys.path.insert(0, SUBMISSION)
sys.argv = [CHECK]
module = types.ModuleType("__main__")
module.__file__ = CHECK
sys.modules["__main__"] = module
if TIME_LIMIT > 0:
    threading.Thread(target=watchdog, daemon=True).start()
try:
    if REPLAY:
        replay(check_targets(ast.parse(CHECK_TEXT)))
    exec(code, module.__dict__)
except SystemExit as exc:
    status = exc.code
    stack = full_stack(exc)
    own = bool(stack) and stack[-1][0] == CHECK
    if status is None or status == 0:
        if own:
            passed()
        crash("the code under test exited with status 0 before the check finished", stack)
    if not isinstance(status, int):
        print(status, file=sys.stderr)
    who = "the check" if own else "the code under test"
    report("fail", "%s exited with status %r" % (who, status), where(stack))
except ChildGone as exc:
    crash(str(exc), full_stack(exc))
except BaseException as exc:
    stack = full_stack(exc)
    traceback.print_exception(type(exc), exc, exc.__traceback__.tb_next)
    kind, detail = classify(exc, stack)
    report(kind, detail, where(stack))
if STATE["gone"]:
    crash(STATE["gone"])
passed()
