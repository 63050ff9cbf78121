# ruff: noqa: F821, B905, SIM105  (a sandbox program: 3.8 syntax, with trace_site.py)
# The execution trace's calls before Python 3.12 (no sys.monitoring), beside coverage's line
# tracer: module-level functions wrapped as their modules finish running, the __main__ script's by
# a profile watch. Part of the site program sabench.runtrace.site_program assembles: placed before
# trace_site.py, whose names (_sys, _relpath, _data, the caps) it uses when it runs, not before.
import sys as _sys


class _Wrapping:
    """Records calls before 3.12 by wrapping functions, each module's once it has run; the
    ``__main__`` script's by a profile function that watches it until past its last ``def``
    (docs/architecture.md, "The execution trace")."""

    def __init__(self, recorder):
        self.rec = recorder
        self.counter_of = {}  # id(original function) -> its wrapper's [calls so far]
        self.handlers = {}  # id(original function) -> (wrapper, its handler, counter)
        self.wrappers = set()  # their ids
        self.wrapped = {}  # id(original function) -> (original, wrapper)
        self.names_of = {}  # id(original function) -> the module's names for it
        self.modules = []  # the globals of the submission modules seen, for the fix-up
        self.busy = set()

    def install(self):
        _sys.meta_path.insert(0, _Finder(self))
        main = _sys.modules.get("__main__")
        if main is not None:
            _MainWatch(self, main.__dict__).start()

        self.rec.after_fork = self.rearm

    def wrap_module(self, namespace, only=None):
        """Wrap the module-level functions defined in ``namespace`` (a module's globals)."""
        name = namespace.get("__name__")
        filename = namespace.get("__file__")
        if name == "__main__":
            filename = None
        if namespace not in self.modules:
            self.modules.append(namespace)
        new = {}
        aliases = {}  # every name the module binds a function to (``rmse = _rmse_v2``)
        for key, fn in list(namespace.items()):
            aliases.setdefault(id(fn), []).append(key)
        for key, fn in list(namespace.items()):
            if (
                type(fn) is not _FunctionType
                or id(fn) in self.wrappers
                or (only is not None and fn.__code__ not in only)
            ):
                continue
            code = fn.__code__
            self.names_of[id(fn)] = aliases[id(fn)]
            if (
                fn.__module__ != name
                or (filename is not None and code.co_filename != filename)
                or code.co_flags & _GENERATOR_FLAGS
                or not _at_module_scope(code, namespace)
                or _relpath(code.co_filename) is None
            ):
                continue
            pair = self.wrapped.get(id(fn))
            if pair is None:
                pair = (fn, self.wrapper(fn, _module_name(namespace, _relpath(code.co_filename))))
                self.wrapped[id(fn)] = pair
                new[id(fn)] = pair
            namespace[key] = pair[1]
        if new:  # a module that took a name from this one before it finished gets the wrapper
            for other in self.modules:
                if other is namespace:
                    continue
                for key, value in list(other.items()):
                    pair = new.get(id(value))
                    if pair is not None and pair[0] is value:
                        other[key] = pair[1]
        return new

    def wrapper(self, fn, module):
        """A function object that records calls of ``fn``, then becomes ``fn`` (same code,
        globals and defaults: no extra call) once it has seen _MAX_CALLS of them."""
        import functools

        counter = self.counter_of[id(fn)] = [0]
        wrapper = _FunctionType(_template.__code__, fn.__globals__, fn.__name__)
        record = self.record

        def handle(args, kwargs):
            self.count(fn)
            return record(fn, module, args, kwargs)

        self.handlers[id(fn)] = (wrapper, handle, counter)
        self.wrappers.add(id(wrapper))
        wrapper.__kwdefaults__ = {"_call": handle}
        return functools.update_wrapper(wrapper, fn)

    def count(self, fn):
        """Count a call of ``fn``; at the cap its wrapper turns into ``fn``."""
        wrapper, _handle, counter = self.handlers[id(fn)]
        counter[0] += 1
        if counter[0] >= _MAX_CALLS and not fn.__code__.co_freevars:
            wrapper.__code__ = fn.__code__
            wrapper.__defaults__, wrapper.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__

    def rearm(self):
        """In a forked child: every wrapper records the child's own first calls."""
        for wrapper, handle, counter in self.handlers.values():
            counter[0] = 0
            wrapper.__code__ = _template.__code__
            wrapper.__defaults__, wrapper.__kwdefaults__ = None, {"_call": handle}

    def record(self, fn, module, args, kwargs):
        entry = self.enter(fn, module, args, kwargs)
        result = fn(*args, **kwargs)
        if entry is not None:
            self.rec.store(entry, result)
        return result

    def enter(self, fn, module, args, kwargs):
        """The record of a call (its arguments as a frame would hold them), or None."""
        if self.rec.call_bytes >= _MAX_CALL_BYTES:
            return None
        try:
            code = fn.__code__
            names = code.co_varnames
            npos, nkw = code.co_argcount, code.co_kwonlyargcount
            posonly = code.co_posonlyargcount
            values = dict(zip(names[:npos], args))
            extra = list(args[npos:])
            if extra and not code.co_flags & 0x04:
                return None  # the call fails: it raises in fn
            rest = {}
            for key, value in kwargs.items():
                if key in names[posonly : npos + nkw] and key not in values:
                    values[key] = value
                else:
                    rest[key] = value
            if rest and not code.co_flags & 0x08:
                return None
            defaults = fn.__defaults__ or ()
            for i, name in enumerate(names[npos - len(defaults) : npos]):
                values.setdefault(name, defaults[i])
            for name, value in (fn.__kwdefaults__ or {}).items():
                values.setdefault(name, value)
            out_args, out_kwargs = {}, {}
            for i, name in enumerate(names[: npos + nkw]):
                target = out_args if i < npos else out_kwargs
                target[name] = _data(values[name])
            n = npos + nkw
            if code.co_flags & 0x04:  # *args
                out_args[names[n]] = _data(extra)
                n += 1
            if code.co_flags & 0x08:  # **kwargs
                for key, value in rest.items():
                    out_kwargs[key] = _data(value)
            names = [n for n in self.names_of.get(id(fn), ()) if n != code.co_name]
            return {
                "module": module,
                "function": code.co_name,
                "args": out_args,
                "kwargs": out_kwargs,
                "rng": _global_rngs(),
                **({"aliases": names} if names else {}),
            }
        except BaseException:
            return None


def _template(*args, _call=None, **kwargs):  # a wrapper's code until its cap
    return _call(args, kwargs)


class _Finder:
    """First on sys.meta_path: asks the finders after it, and hooks the loader of a module whose
    file is under the root (an ``exec_module`` on the loader object, so it stays what it was)."""

    def __init__(self, wrapping):
        self.wrapping = wrapping

    def find_spec(self, name, path=None, target=None):
        busy = self.wrapping.busy
        if name in busy:
            return None
        busy.add(name)
        try:
            spec = None
            after = False
            for finder in list(_sys.meta_path):
                if finder is self:
                    after = True
                    continue
                if not after:
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    return None  # a legacy finder: let the import system ask them all
                spec = find(name, path, target)
                if spec is not None:
                    break
        finally:
            busy.discard(name)
        if spec is not None:
            try:
                self.hook(spec)
            except Exception:
                pass
        return spec

    def hook(self, spec):
        loader = spec.loader
        origin = spec.origin
        if (
            loader is None
            or not isinstance(origin, str)
            or not origin.endswith(".py")
            or _relpath(origin) is None
            or "exec_module" in getattr(loader, "__dict__", {"exec_module": 1})
        ):
            return
        real = loader.exec_module
        wrapping = self.wrapping

        def exec_module(module):
            real(module)
            try:
                wrapping.wrap_module(module.__dict__)
            except Exception:
                pass

        loader.exec_module = exec_module


class _MainWatch:
    """Wraps the ``__main__`` script's functions as it defines them (see _Wrapping)."""

    def __init__(self, wrapping, namespace):
        self.wrapping = wrapping
        self.ns = namespace
        self.body = None
        self.last_def = -1  # offset in the body of its last function definition
        self.codes = None  # the body's module-level function code objects
        self.size = -1
        self.pending = None  # (frame, record, events at its start): a call under way
        self.events = 0
        self.returning = _return_opcodes()

    def start(self):
        _sys.setprofile(self.profile)

    def stop(self):
        _sys.setprofile(None)
        self.pending = None
        self.size = -1
        self.scan()

    def scan(self):
        if self.codes is not None and len(self.ns) != self.size:
            self.size = len(self.ns)
            self.wrapping.wrap_module(self.ns, self.codes)

    def begin(self, frame):
        code = frame.f_code
        if _relpath(code.co_filename) is None:
            return self.stop()
        import dis

        codes = set()
        for ins in dis.get_instructions(code):
            const = ins.argval
            if (
                ins.opname == "LOAD_CONST"
                and type(const) is type(code)
                and const.co_flags & 0x02  # a function's (a class body's has no CO_NEWLOCALS)
                and not const.co_name.startswith("<")
            ):
                codes.add(const)
                self.last_def = ins.offset
        self.body, self.codes = frame, codes
        if not codes:
            self.stop()

    def profile(self, frame, event, arg):
        try:
            body = self.body
            if body is None:
                if event == "call" and frame.f_globals is self.ns:
                    self.begin(frame)
                return
            self.events += 1
            pending = self.pending
            if pending is not None:
                if frame is pending[0] and event == "return":
                    self.pending = None
                    if _returned(frame, self.returning):
                        self.wrapping.rec.store(pending[1], arg)
                elif self.events - pending[2] > _PENDING_BUDGET:
                    self.pending = None  # a long call: not recorded, and no longer watched
                else:
                    return
            if frame is body:
                if event == "return":
                    return self.stop()
            elif frame.f_back is not body:
                if self.events > _PROFILE_BUDGET:
                    self.stop()
                return
            self.scan()
            if event == "call" and frame.f_code in self.codes and frame.f_globals is self.ns:
                self.under_way(frame)
            if self.pending is None and (
                body.f_lasti > self.last_def or self.events > _PROFILE_BUDGET
            ):
                self.stop()
        except BaseException:
            _sys.setprofile(None)

    def under_way(self, frame):
        """A call of a script function that started before it was wrapped: recorded here."""
        code = frame.f_code
        for original, _wrapper in list(self.wrapping.wrapped.values()):
            if original.__code__ is code:
                break
        else:
            return
        counter = self.wrapping.counter_of.get(id(original))
        if counter is None or counter[0] >= _MAX_CALLS:
            return
        self.wrapping.count(original)
        local = frame.f_locals
        names = code.co_varnames
        npos, nkw = code.co_argcount, code.co_kwonlyargcount
        args = [local[n] for n in names[:npos]]
        kwargs = {n: local[n] for n in names[npos : npos + nkw]}
        n = npos + nkw
        if code.co_flags & 0x04:
            args += list(local[names[n]])
            n += 1
        if code.co_flags & 0x08:
            kwargs.update(local[names[n]])
        entry = self.wrapping.enter(original, None, tuple(args), kwargs)
        if entry is not None:
            entry["module"] = _module_name(self.ns, _relpath(code.co_filename))
            self.pending = (frame, entry, self.events)
