"""What the index holds (files, facts, functions, postings) and how the files are found:
walked, classified as code / config / docs / tests, read as text."""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from sabench.values import words

CODE, CONFIG, DOCS, TESTS = "code", "config", "docs", "tests"
#: a shell command running a Python script or module
_PYTHON_RUN_RE = re.compile(r"python[\d.]*\s+(?:-u\s+)?(-m\s+)?([\w./-]+)")
_PATH_SEPARATORS = re.compile(r"[.\[\]'\"]+")
MAX_BYTES = 1_000_000

SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".env",
        "env",
        "site-packages",
        "node_modules",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        ".idea",
        ".vscode",
        ".eggs",
    }
)
BINARY_EXT = words(
    ".png .jpg .jpeg .gif .bmp .tif .tiff .ico .svg .pdf .pt .pth .ckpt .bin .safetensors "
    ".npy .npz .pkl .pickle .joblib .h5 .hdf5 .onnx .tflite .zip .gz .tgz .bz2 .xz .tar .7z "
    ".so .o .a .dll .dylib .pyc .pyo .whl .parquet .feather .arrow .db .sqlite .mp3 .mp4 .wav "
    ".avi .mov .ttf .woff .woff2 .eot .jar .class .exe .lock"
)
DOC_EXT = frozenset({".md", ".rst", ".txt", ".markdown", ".adoc", ".tex"})
CONFIG_EXT = frozenset({".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".conf", ".jsonl"})
SHELL_EXT = frozenset({".sh", ".bash", ".zsh"})

# --------------------------------------------------------------------------------------------
# Data structures
# --------------------------------------------------------------------------------------------


@dataclass(slots=True)
class SourceFile:
    """One text file of the submission; ``comment[i]`` marks comment/docstring lines (0-based)."""

    path: str
    kind: str
    language: str
    lines: list[str]
    comment: bytearray = field(default_factory=bytearray)


@dataclass(slots=True, frozen=True)
class Fact:
    """A named value: ``lr = 0.01``, ``Adam(lr=0.01)``, ``def f(lr=0.01)``, ``lr: 0.01`` in YAML."""

    kind: str  # assign | kwarg | default | argparse | key | config | cli
    name: str
    value: str
    numbers: tuple[float, ...]
    file: str
    line: int
    terms: tuple[str, ...]
    context: tuple[str, ...] = ()  # enclosing class/function, call, dict key or config section

    @property
    def setting(self) -> str:
        """The setting it names, without its path: ``cfg.train.lr``, ``--lr`` and ``cfg["lr"]``
        are ``lr``."""
        return _PATH_SEPARATORS.split(self.name.lstrip("-").strip(".[]'\""))[-1]


@dataclass(slots=True)
class Function:
    """A Python function: where it is, whether it is a stub, and the calls in its body, in order."""

    name: str
    qualname: str
    file: str
    start: int
    end: int
    stub: bool
    calls: list[tuple[str, int]] = field(default_factory=list)
    docstring: str = ""
    #: first line of the body after the signature and docstring
    body_start: int = 0


@dataclass(slots=True)
class Definition:
    """A function or class of the code that runs only when live code reads its name."""

    fid: int
    start: int
    end: int
    name: str
    #: the enclosing definition (index in ``CodeIndex.definitions``): dead with it
    parent: int | None
    #: a decorator registers it (a CLI command, a route, a registry entry): the framework runs it
    registered: bool
    #: the names its own code reads (a public method's reads count for its class)
    reads: set[str] = field(default_factory=set)
    #: those of them read as bare names (``train(...)``): this module's ``train`` if it has one
    bare: set[str] = field(default_factory=set)
    #: the modules its code imports
    imports: set[str] = field(default_factory=set)
    #: its calls whose first argument is a literal module name or ``.py`` path, as (called name,
    #: that string): ``load_module("data")`` imports ``data`` when ``load_module`` loads modules
    loads: set[tuple[str, str]] = field(default_factory=set)


#: calls that load the module their first argument names (or whose file it names)
MODULE_LOADERS = frozenset(
    {"import_module", "__import__", "spec_from_file_location", "SourceFileLoader", "load_source"}
)
#: those that load a module from a file path, which may be computed (``Path(__file__).parent``)
FILE_LOADERS = frozenset({"spec_from_file_location", "SourceFileLoader", "load_source"})


def _module_name(arg: str) -> str:
    """The dotted module name a loader's literal argument names (``pkg/data.py`` is ``pkg.data``)."""
    if arg.endswith(".py"):
        return arg.removeprefix("./")[: -len(".py")].replace("/", ".")
    return arg


@dataclass
class CodeIndex:
    """Everything the static judge asks of a submission, built once by :func:`build_index`."""

    root: Path
    files: list[SourceFile] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    #: calls at module level (including the ``__main__`` block), per file, in order
    module_calls: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: ``if __name__ == "__main__"`` block (start, end) per file
    main_blocks: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: shell commands per file, in order: (command, line)
    commands: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    #: numeric literals in code and config: value key -> [(file id, line)]
    literals: dict[float, list[tuple[int, int]]] = field(default_factory=dict)
    #: word-like chunk -> [(file id, line)] (lines 1-based); terms and keys map to chunks
    chunk_sites: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    term_chunks: dict[str, list[str]] = field(default_factory=dict)
    key_chunks: dict[str, list[str]] = field(default_factory=dict)
    #: lines whose text addresses the judge (:mod:`.directed`): (file id, line), never evidence
    directed: set[tuple[int, int]] = field(default_factory=set)
    skipped: int = 0
    #: classes' docstrings: (file, qualified name) -> docstring (its first 300 characters)
    class_docs: dict[tuple[str, str], str] = field(default_factory=dict)
    #: classes whose ``__init__`` raises ``NotImplementedError``: (file, qualified name)
    unconstructible: list[tuple[str, str]] = field(default_factory=list)
    #: the names classes of the code derive from (a subclass may construct them another way)
    subclassed: set[str] = field(default_factory=set)
    #: names the code reads (loaded names and attributes, string keys it subscripts or ``get``s):
    #: module-level code while indexing; every live definition's too after :meth:`mark_unread`
    reads: set[str] = field(default_factory=set)
    #: functions, classes and private methods of the code, each with the names it reads
    definitions: list[Definition] = field(default_factory=list)
    #: each Python code file's module-level reads, those that are bare names, the modules it
    #: imports and its calls with a literal module name: (file id, reads, bare, imports, loads)
    module_reads: list[tuple[int, set[str], set[str], set[str], set[tuple[str, str]]]] = field(
        default_factory=list
    )
    #: literal assignments and bare strings: (file id, first line, last line, names they bind)
    declarations: list[tuple[int, int, int, tuple[str, ...]]] = field(default_factory=list)

    #: lines of those declarations nothing reads (set by :meth:`mark_unread`): (file id, line)
    unread: set[tuple[int, int]] = field(default_factory=set)
    #: of them, the lines of definitions nothing runs
    dead: set[tuple[int, int]] = field(default_factory=set)
    #: lines of statements whose results reach nothing (:mod:`.liveness`): dead stores, discarded
    #: computations, operands multiplied by a literal zero, branches under a constant false test
    inert: set[tuple[int, int]] = field(default_factory=set)
    #: each Python code file's module (path -> tree), parsed once for every analysis of the code
    trees: dict[str, ast.Module] = field(default_factory=dict)
    #: per path of ``trees``, the statements (their ids) whose results reach nothing in the whole
    #: submission (:func:`~sabench.index.liveness.inert_in_submission`), and the parts of
    #: expressions whose values reach nothing (``x`` in ``x * 0.0``)
    inert_ids: dict[str, set[int]] = field(default_factory=dict)
    dropped: dict[str, list[ast.AST]] = field(default_factory=dict)
    #: whether what runs was traced from entry points (a script a shell command runs, a
    #: ``__main__`` block); False when every module is taken to run (no entry point, a library)
    entry_traced: bool = False

    def mark_unconstructible(self) -> None:
        """The methods of a class that cannot be constructed (its ``__init__`` raises
        ``NotImplementedError``, and no class of the code derives from it) are stubs: none of
        them can run."""
        for path, qual in self.unconstructible:
            if qual.rsplit(".", 1)[-1] in self.subclassed:
                continue
            for fn in self.functions:
                if fn.file == path and fn.qualname.startswith(qual + "."):
                    fn.stub = True

    def mark_unread(self) -> None:
        """Collect the lines of literal assignments whose names no code reads, of bare strings, and
        of the code nothing runs: a value, formula string or step list that nothing uses, or a
        function or module that no running code calls or imports, declares the method, it does not
        implement it (the static judge reads those lines as comments)."""
        self.reads = self._live_reads()
        self.unread |= self.inert
        for fid, start, end, names in self.declarations:
            if not any(n in self.reads for n in names):
                self.unread.update((fid, ln) for ln in range(start, end + 1))

    def _live_reads(self) -> set[str]:
        """What running code reads. A module runs when it is an entry point (a script a shell
        command runs, one with a ``__main__`` block or calling its own functions at module level)
        or when running code imports it; a definition runs when running code reads its name (a
        call, a callback, ``getattr(mod, "name")``; a bare name is the module's own definition
        when it has one), when code in another language names it, or when a decorator registers
        it. The lines of the others are marked dead (and unread). Without entry points, or with
        imports by computed names (``importlib.import_module``), every module runs; code where
        nothing runs any definition (a library) keeps them all."""
        defs = self.definitions
        if not defs:
            return self.reads
        by_name: dict[str, list[int]] = {}
        own: dict[tuple[str, int], list[int]] = {}  # the module-level definitions of each file
        children: dict[int | None, list[int]] = {}
        top: dict[int, list[int]] = {}
        for i, d in enumerate(defs):
            by_name.setdefault(d.name, []).append(i)
            children.setdefault(d.parent, []).append(i)
            if d.parent is None:
                own.setdefault((d.name, d.fid), []).append(i)
                top.setdefault(d.fid, []).append(i)
        modules = {fid: (r, b, i, lo) for fid, r, b, i, lo in self.module_reads}
        by_module = self.module_files()
        loaders = self._module_loaders()
        entries = self._entry_fids(own, loaders)
        names: set[str] = set()
        todo: list[tuple[str, int | None]] = [(n, None) for n in self._named_outside_python()]
        seen: set[tuple[str, int | None]] = set()
        live: set[int] = set()
        loaded: set[int] = set()
        imported: list[int] = sorted(modules) if entries is None else sorted(entries)

        def read(
            fid: int,
            reads: set[str],
            bare: set[str],
            imports: set[str],
            loads: set[tuple[str, str]],
        ) -> None:
            names.update(reads)
            todo.extend((n, fid if n in bare else None) for n in reads)
            loaded_by_name = {_module_name(arg) for callee, arg in loads if callee in loaders}
            for name in imports | loaded_by_name:
                parts = name.split(".")
                for k in range(1, len(parts) + 1):  # `import a.b.c` runs a, a.b and a.b.c
                    # the submission may be the package (`luno.config` is its config.py)
                    for j in range(k):
                        found = by_module.get(".".join(parts[j:k]))
                        if found:
                            imported.extend(found)
                            break

        def run(i: int) -> None:
            d = defs[i]
            if i in live or (d.parent is not None and d.parent not in live):
                return
            if d.parent is None and d.fid not in loaded:
                return
            if not (d.registered or (d.name, None) in seen or (d.name, d.fid) in seen):
                return
            live.add(i)
            read(d.fid, d.reads, d.bare, d.imports, d.loads)
            for child in children.get(i, ()):
                run(child)

        while todo or imported:
            if imported:
                fid = imported.pop()
                if fid not in loaded:
                    loaded.add(fid)
                    if fid in modules:
                        read(fid, *modules[fid])
                    for i in top.get(fid, ()):
                        run(i)
                continue
            name, fid = todo.pop()
            if fid is not None and (name, fid) not in own:
                fid = None  # a bare name the module imports: any definition of it
            if (name, fid) in seen:
                continue
            seen.add((name, fid))
            for i in own[(name, fid)] if fid is not None else by_name.get(name, ()):
                run(i)
        if not live:  # nothing runs any of them: a library, judged by what it defines
            return self.reads | {n for d in defs for n in d.reads}
        self.entry_traced = entries is not None
        for i, d in enumerate(defs):
            if i not in live:
                self.dead.update((d.fid, ln) for ln in range(d.start, d.end + 1))
        for fid in modules.keys() - loaded:  # a module nothing runs or imports: all of it
            self.dead.update((fid, ln) for ln in range(1, len(self.files[fid].lines) + 1))
        self.unread |= self.dead
        return names

    def module_files(self) -> dict[str, list[int]]:
        """Python code files by the dotted names an import may give them (``src/pkg/data.py``
        is ``src.pkg.data``, ``pkg.data`` and ``data``: the search path may start anywhere)."""
        out: dict[str, list[int]] = {}
        for fid, *_ in self.module_reads:
            parts = os.path.splitext(self.files[fid].path)[0].split("/")
            if parts[-1] == "__init__":
                parts = parts[:-1]
            for k in range(len(parts)):
                out.setdefault(".".join(parts[k:]), []).append(fid)
        return out

    def module_definitions(self, module: str, name: str) -> list[Definition]:
        """The module-level definitions ``name`` of ``module`` (as an import names it); where that
        module has none, those of the one other file that defines it (the check harness's rule,
        docs/checks.md "Where a check's target lives"): a claim is about the paper's function
        wherever the submission puts it. Empty when several other files define it."""
        fids = set(self.module_files().get(module, ()))
        named = [d for d in self.definitions if d.parent is None and d.name == name]
        own = [d for d in named if d.fid in fids]
        if own or len({d.fid for d in named}) != 1:
            return own
        return named

    def dead_definition(self, module: str, name: str) -> Definition | None:
        """The module-level definition ``name`` of ``module`` (as an import names it) when
        nothing runs it: what a test of that function exercises, and the pipeline never does."""
        found = self.module_definitions(module, name)
        if found and all((d.fid, d.start) in self.dead for d in found):
            return found[0]
        return None

    def _module_loaders(self) -> set[str]:
        """The names of calls that load a module named by their first argument: importlib's, and
        the code's own functions that call one (``load_module(name)`` around
        ``spec_from_file_location``), so ``load_module("data")`` runs ``data.py``."""
        loaders = set(MODULE_LOADERS)
        while True:
            more = {d.name for d in self.definitions if d.reads & loaders} - loaders
            if not more:
                return loaders
            loaders |= more

    def _entry_fids(
        self, own: dict[tuple[str, int], list[int]], loaders: set[str]
    ) -> set[int] | None:
        """The modules that run first: scripts a shell command runs, those with a ``__main__``
        block, those that call their own functions at module level. None (every module runs)
        when there are none, or when the code imports modules by computed names: through
        ``importlib.import_module``, or from files with no literal name that loads one of them."""
        reads = [r for _, r, *_ in self.module_reads] + [d.reads for d in self.definitions]
        if any("import_module" in r or "__import__" in r for r in reads):
            return None
        if any(r & FILE_LOADERS for r in reads):
            loads = [lo for *_, lo in self.module_reads] + [d.loads for d in self.definitions]
            by_module = self.module_files()
            if not any(
                callee in loaders and _module_name(arg) in by_module
                for lo in loads
                for callee, arg in lo
            ):
                return None
        fid_of = {sf.path: i for i, sf in enumerate(self.files)}
        entries = {fid_of[p] for p in self.script_files() if p in fid_of}
        entries.update(fid_of[p] for p in self.main_blocks if p in fid_of)
        for fid, *_ in self.module_reads:
            calls = self.module_calls.get(self.files[fid].path, ())
            if any((name, fid) in own for name, _ in calls):
                entries.add(fid)
        return entries or None

    def script_files(self) -> list[str]:
        """The Python files that shell commands run (``python train.py``, ``python -m pkg.run``)."""
        paths = {f.path for f in self.files}
        found: list[str] = []
        for cmds in self.commands.values():
            for cmd, _ in cmds:
                for m in _PYTHON_RUN_RE.finditer(cmd):
                    target = m.group(2)
                    rel = target.replace(".", "/") + ".py" if m.group(1) else target.lstrip("./")
                    for cand in (rel, rel + "/__main__.py"):
                        if cand in paths:
                            found.append(cand)
        return found

    def _named_outside_python(self) -> set[str]:
        """The definitions' names that code in other languages or a config mentions (``python -c
        "from train import run; run()"``, ``_target_: models.Net``): they run a definition without
        a Python read."""
        other = {
            i
            for i, sf in enumerate(self.files)
            if sf.kind == CONFIG or (sf.kind == CODE and sf.language != "python")
        }
        return {
            d.name
            for d in self.definitions
            if any(fid in other for fid, _ in self.chunk_sites.get(d.name, ()))
        }

    def is_text(self, fid: int, line: int) -> bool:
        """A comment, a docstring, or a declaration nothing reads: words, not code."""
        return self.is_comment(fid, line) or (fid, line) in self.unread

    def term_sites(self, term: str) -> list[tuple[int, int]]:
        """Lines that contain the normalised ``term`` (``learning`` is in ``lr = 0.1``)."""
        chunks = self.term_chunks.get(term, ())
        if len(chunks) == 1:
            return self.chunk_sites[chunks[0]]
        out: list[tuple[int, int]] = []
        for c in chunks:
            out.extend(self.chunk_sites[c])
        return out

    def key_sites(self, key: str) -> list[tuple[int, int]]:
        """Lines that name ``key`` (squashed: ``msrvtt`` is in ``MSR-VTT`` and ``msr_vtt``)."""
        out: list[tuple[int, int]] = []
        for c in self.key_chunks.get(key, ()):
            out.extend(self.chunk_sites[c])
        return out

    def doc_freq(self, term: str) -> int:
        return len(self.term_sites(term))

    def file_id(self, path: str) -> int | None:
        for i, f in enumerate(self.files):
            if f.path == path:
                return i
        return None

    @property
    def empty(self) -> bool:
        return not self.files

    def functions_named(self, name: str) -> list[Function]:
        return [f for f in self.functions if f.name == name]

    def facts_with_value(self, value: float) -> list[Fact]:
        return [f for f in self.facts if any(_close(value, v) for v in f.numbers)]

    def literal_sites(self, value: float) -> list[tuple[int, int]]:
        return self.literals.get(value_key(value), [])

    def kind_of(self, fid: int) -> str:
        return self.files[fid].kind

    def is_comment(self, fid: int, line: int) -> bool:
        c = self.files[fid].comment
        return 0 < line <= len(c) and bool(c[line - 1])


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def value_key(value: float) -> float:
    """Round to 9 significant digits so that 3e-4 and 0.0003 share a dictionary key."""
    return float(f"{value:.9g}")


# --------------------------------------------------------------------------------------------
# Walking and classifying
# --------------------------------------------------------------------------------------------


def classify(rel: str) -> tuple[str, str]:
    """(kind, language) of a file from its relative path."""
    p = rel.lower()
    name = p.rsplit("/", 1)[-1]
    ext = os.path.splitext(name)[1]
    parts = p.split("/")[:-1]
    if ext == ".py":
        lang = "python"
    elif ext in SHELL_EXT:
        lang = "shell"
    elif ext in (".yaml", ".yml"):
        lang = "yaml"
    elif ext in (".json", ".jsonl"):
        lang = "json"
    elif ext == ".toml":
        lang = "toml"
    elif ext in (".cfg", ".ini", ".conf"):
        lang = "ini"
    elif ext in DOC_EXT:
        lang = "text"
    else:
        lang = "other"
    if (
        any(d in ("tests", "test", "testing") for d in parts)
        or (ext == ".py" and (name.startswith("test_") or name.endswith("_test.py")))
        or name == "conftest.py"
    ):
        return TESTS, lang
    if name.startswith(("requirements", "constraints")) and ext in (".txt", ".in"):
        return CONFIG, "text"
    if (
        name.startswith(("readme", "license", "licence", "changelog", "notice", "authors"))
        or ext in DOC_EXT
        or any(d in ("docs", "doc") for d in parts)
    ):
        return DOCS, lang
    if ext in CONFIG_EXT:
        return CONFIG, lang
    return CODE, lang


def iter_files(root: Path) -> list[tuple[Path, str]]:
    out: list[tuple[Path, str]] = []
    root_s = str(root)
    for dirpath, dirnames, filenames in os.walk(root_s):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")
        )
        if os.path.exists(os.path.join(dirpath, "pyvenv.cfg")):
            dirnames[:] = []
            continue
        for fn in sorted(filenames):
            full = os.path.join(dirpath, fn)
            rel = os.path.relpath(full, root_s).replace(os.sep, "/")
            out.append((Path(full), rel))
    return out


def read_text(path: Path) -> str | None:
    try:
        if path.is_symlink() or not path.is_file():
            return None
        if path.stat().st_size > MAX_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")
