"""The package's module rules (docs/architecture.md, "Module rules"), checked on the source itself:
no private name imported across modules, no import cycle, no upward import, no oversized module."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "sabench"
MAX_LINES = 800

#: Layers from the bottom: a module may import its own layer and the layers below, never above
#: (lazy imports inside functions count too). A name is a module or package under ``sabench``; the
#: longest one that contains a module gives its layer.
LAYERS = (
    ("errors", "io", "contracts", "values", "faults", "stats", "steps", "grounding", "wording"),
    # what the Snakefile reads at parse time: the configuration, the judge registry, data layouts
    ("grid", "twins", "judges.registry", "peer_data.layouts", "gateway.settings", "agents.presets"),
    ("sandbox", "llm", "cluster", "gateway"),
    (
        "index",
        "checks",
        "saus",
        "ingest",
        "extract",
        "execute",
        "runtrace",
        "reseed",
        "agents",
        "canary",
        "locks",
        "peer_data.archive",
    ),
    ("judges", "peer_data", "drift", "scoring"),
    ("aggregate", "report", "report_site", "lifecycle"),
)


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(path: Path, *, top_level_only: bool) -> list[tuple[str, list[str], int]]:
    """(module imported, names imported from it, line) of every sabench import in a file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] == "sabench":
                found.append((node.module, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("sabench")]
    return found


def _owner(name: str) -> str:
    """The package or module that owns ``sabench.x.y``: the longest known module prefix."""
    parts = name.split(".")
    while parts and ".".join(parts) not in MODULES:
        parts.pop()
    return ".".join(parts)


def _same_family(a: str, b: str) -> bool:
    """Inside one package (``sabench.sandbox.docker`` and ``sabench.sandbox.podman``)."""
    pa, pb = a.split("."), b.split(".")
    return len(pa) > 2 and len(pb) > 2 and pa[:2] == pb[:2]


def test_no_private_name_crosses_a_module_boundary() -> None:
    offences = []
    for name, path in MODULES.items():
        for module, names, line in _imports(path, top_level_only=False):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            # ``from sabench.pkg import _module`` imports a private module, not a private name
            hidden_modules = [n for n in private if f"{module}.{n}" in MODULES]
            private = [n for n in private if n not in hidden_modules]
            module = ".".join([module, *hidden_modules[:1]])
            # a private module (Inspect AI's ``_sandbox`` style) serves its own package only
            hidden = [p for p in module.split(".") if p.startswith("_") and p != "__main__"]
            if (private and _owner(module) != name) or (hidden and not _same_family(module, name)):
                offences.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} {private}")
    assert not offences, "\n".join(offences)


def test_no_import_cycle_at_module_level() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in MODULES.items():
        for module, names, _ in _imports(path, top_level_only=True):
            targets = {_owner(module)} | {_owner(f"{module}.{n}") for n in names}
            graph[name] |= {t for t in targets if t and t != name and t in MODULES}
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            # a package importing its own submodules (re-exports) is not a cycle of design
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == 1:
                if not node.startswith(nxt + "."):
                    cycles.append(" -> ".join([*stack[stack.index(nxt) :], nxt]))
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for node in sorted(MODULES):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(cycles)


def _layer(module: str) -> int | None:
    parts = module.split(".")[1:]
    while parts:
        for i, names in enumerate(LAYERS):
            if ".".join(parts) in names:
                return i
        parts.pop()
    return None


def test_no_upward_import() -> None:
    offences = []
    for name, path in MODULES.items():
        own = _layer(name)
        if own is None:
            continue
        for module, _, line in _imports(path, top_level_only=False):
            theirs = _layer(module)
            if theirs is not None and theirs > own:
                offences.append(f"{path.relative_to(PACKAGE.parent)}:{line}: imports {module}")
    assert not offences, "\n".join(offences)


def test_every_module_has_a_layer() -> None:
    unplaced = sorted(n for n in MODULES if n.count(".") and _layer(n) is None)
    assert not unplaced, f"place these in LAYERS: {unplaced}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_over_the_limit(name: str) -> None:
    lines = MODULES[name].read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_LINES, f"{name}: {lines} lines (split it along its seams)"
