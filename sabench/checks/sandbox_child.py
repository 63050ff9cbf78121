
import builtins, importlib, threading, traceback

REQ, REP, SUBMISSION = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
sys.argv = json.loads(sys.argv[4]) or sys.argv  # the run's own command line, as its code saw it
sys.path.insert(0, SUBMISSION)
REFS = []
RNGS = {}  # the check's numpy Generators, by slot: their states go back with the next reply
TOUCHED = []


def keep(x):
    REFS.append(x)
    return {"__ref__": len(REFS) - 1, "type": type(x).__name__, "callable": callable(x)}


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


#: one callback on the channel at a time: threads of the code under test (a thread pool calling a
#: check's spy) take turns, so their messages never interleave on the pipe
CALLBACK_TURN = threading.RLock()


def stub(cid):
    def from_the_check(*args, **kwargs):
        with CALLBACK_TURN:
            send(REP, with_states({"op": "callback", "id": cid, "args": encode(list(args), keep),
                                   "kwargs": encode(kwargs, keep)}))
            reply = serve()
        if "ok" in reply:
            return decode(reply["ok"], resolve)
        raise CheckCallbackError("a function of the check raised (see the check's traceback)")
    return from_the_check


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


def rebind(owner, name, value):
    """Set ``owner.name`` and every binding of the same function in the submission's modules
    (``from data import f`` in another module): a check's spy is called where the code calls."""
    old = getattr(owner, name, None)
    for mod in submission_modules():
        if mod is owner or (old is not None and getattr(mod, name, None) is old):
            setattr(mod, name, value)
    setattr(owner, name, value)


def handle(m):
    try:
        op = m["op"]
        if op == "import":
            value = importlib.import_module(m["name"])
        elif op == "module_of":
            value = module_of(m["path"], m["name"])
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
                value = setattr(target, m["name"], decode(m["value"], resolve))
            elif op == "rebind":
                value = rebind(target, m["name"], decode(m["value"], resolve))
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
        reply = {"ok": encode(value, keep)}
    except BaseException as exc:
        if m.get("op") in ("import", "call"):
            traceback.print_exc()
        reply = {"err": describe(exc)}
    flush()
    send(REP, {"reply": with_states(reply)})


def flush():
    """Its output so far, into the relay: the child runs as the real run does (buffered output,
    no -u), and it ends with os._exit, which flushes nothing."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def serve():
    while True:
        m = recv(REQ)
        if m is None:
            flush()
            os._exit(0)
        if "reply" in m:
            return m["reply"]
        handle(m)


while True:
    serve()
