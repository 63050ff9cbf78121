# Where a check's target lives (docs/checks.md): part of the runner (sandbox_runner.py), sent in
# its place; it uses the runner's rpc, SUBMISSION, CHECK_TEXT and check_targets.

class Undecidable(Exception):
    """What the check takes from a module the submission defines in several other places: the
    check cannot tell which is the paper's, so it decides nothing (an error, never drift)."""


class Absent(ModuleNotFoundError):
    """The module the check names is not the submission's, nor does the submission define the
    name it wants anywhere: an omission."""


def definitions_by_name():
    """Name -> the submission's Python files (relative) defining it at module level (a function
    or class), and the (file, name) pairs its files bind by ``from m import name``: read before
    any code under test runs, so what that code writes later is not in them."""
    found, imported = {}, set()
    for folder, dirs, names in os.walk(SUBMISSION):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        for file in sorted(n for n in names if n.endswith(".py")):
            path = os.path.join(folder, file)
            try:
                if os.path.getsize(path) > (1 << 20):
                    continue
                with open(path, "rb") as fh:
                    tree = ast.parse(fh.read())
            except (OSError, SyntaxError, ValueError):
                continue
            rel = os.path.relpath(path, SUBMISSION)
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    found.setdefault(node.name, []).append(rel)
                elif isinstance(node, ast.ImportFrom):
                    imported.update((rel, a.asname or a.name) for a in node.names)
    return {name: list(dict.fromkeys(files)) for name, files in found.items()}, imported


DEFINED, IMPORTED = definitions_by_name()


def module_name(rel):
    """The dotted name a file of the submission imports as (``esl/model.py``: ``esl.model``)."""
    parts = rel[:-len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def elsewhere(module, name):
    """The module of the code under test that defines ``name`` when ``module`` (the one the
    check names) does not have it: the claim is about the paper's function wherever the
    submission puts it (another module, one flattened script). None when no file defines it;
    Undecidable when several do."""
    files = [f for f in DEFINED.get(name, ()) if module_name(f) != module]
    if not files:
        return None
    if len(files) > 1:
        raise Undecidable("%s.%s is not there, and the submission defines %s in %s: the check "
                          "cannot tell which is the paper's" % (module, name, name,
                                                                ", ".join(files)))
    found = rpc({"op": "module_of", "path": files[0], "name": module_name(files[0])},
                "the import of " + files[0])
    object.__setattr__(found, "_path", [module_name(files[0])])
    return found


def moved_to(module, name):
    """The module :func:`elsewhere` resolves ``module.name`` to when ``module``'s file does not
    define it (read from the files; replay matches the run's calls by it), else ``module``."""
    files = DEFINED.get(name, ())
    if any(module_name(f) == module for f in files) or any(
            module_name(f) == module for f, n in IMPORTED if n == name):
        return module
    return module_name(files[0]) if len(files) == 1 else module


def kept_here(name, value):
    """Whether setting ``name`` on a module of the submission stays in the check's own copy: the
    module's dunder and sabench names, and a module standing in for one the submission lacks
    (the import system binds ``esl.model`` on ``esl``: there is nothing in the child to set)."""
    if name.startswith("__") and name.endswith("__") or name.startswith("_sabench"):
        return True
    return isinstance(value, types.ModuleType) and "_sabench_ref" not in value.__dict__
