"""The submission index: file kinds, Python facts, configs, shell commands, terms."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sabench.index import (
    CODE,
    CONFIG,
    DOCS,
    TESTS,
    build_index,
    classify,
    identifier_terms,
    squash,
    text_terms,
)
from sabench.index.python_facts import parse_recovering

TRAIN = '''\
"""Training script."""
import argparse

LR = 0.01
BATCH_SIZE: int = 64
low, high = -10.0, 10.0
DATASETS = {"blobs-3": {"n_samples": 450, "cluster_std": 1.0}}


class Trainer:
    def __init__(self, lr=3e-4, *, epochs=100):
        self.lr = lr
        self.momentum = 0.9

    def step(self):
        pass

    def evaluate(self):
        """Not there yet."""
        raise NotImplementedError

    def todo(self):
        # TODO: implement the metric
        return 0.0


def load():
    return [1, 2]


def fit(model, data):
    opt = make_optimizer(model, lr=1e-3, weight_decay=5e-4)
    for batch in data:
        loss = model(batch)
        loss.backward()
        opt.step()
    return opt


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("-b", "--batch-size", type=int, default=32)
    args = parser.parse_args()
    data = load()
    model = build(args)
    fit(model, data)


if __name__ == "__main__":
    main()
'''


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "config.yaml").write_text(
        "optimizer:\n  name: adam\n  lr: 1e-4\n  betas: [0.9, 0.999]\ntrain:\n  epochs: 20\n"
    )
    (tmp_path / "params.json").write_text('{\n  "seed": 42,\n  "model": {"hidden_dim": 256}\n}\n')
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\nset -e\npython train.py --lr 0.1 \\\n  --epochs 5 && python eval.py\n"
    )
    (tmp_path / "README.md").write_text("# Repro\nWe use a learning rate of 0.05.\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_train.py").write_text("def test_lr():\n    assert 0.05\n")
    (tmp_path / "broken.py").write_text("def broken(:\n    lr = 0.5\n")
    (tmp_path / "weights.pt").write_bytes(b"\x00\x01binary")
    (tmp_path / "big.py").write_text("x = 1\n" * 200_000)  # over 1 MB
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("lr = 99\n")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "train.cpython-311.pyc").write_bytes(b"\x00")
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    return tmp_path


def line_of(text: str) -> int:
    """1-based line of the first line of TRAIN that contains ``text``."""
    return next(i for i, line in enumerate(TRAIN.splitlines(), 1) if text in line)


def facts(index, **where):
    return [f for f in index.facts if all(getattr(f, k) == v for k, v in where.items())]


def test_files_are_classified_and_skipped(repo: Path) -> None:
    index = build_index(repo)
    kinds = {f.path: f.kind for f in index.files}
    assert kinds == {
        "README.md": DOCS,
        "broken.py": CODE,
        "config.yaml": CONFIG,
        "params.json": CONFIG,
        "run.sh": CODE,
        "tests/test_train.py": TESTS,
        "train.py": CODE,
    }
    assert index.skipped >= 2  # the binary and the file over 1 MB
    assert classify("docs/guide.py")[0] == DOCS
    assert classify("requirements.txt")[0] == CONFIG
    assert classify("src/model_test.py")[0] == TESTS


def test_python_assignments(repo: Path) -> None:
    index = build_index(repo)
    (lr,) = facts(index, name="LR")
    assert (lr.kind, lr.numbers, lr.line) == ("assign", (0.01,), line_of("LR = "))
    assert lr.terms == ("learn", "rate")
    assert facts(index, name="BATCH_SIZE")[0].numbers == (64.0,)  # annotated
    assert facts(index, name="low")[0].numbers == (-10.0,)  # tuple unpacking
    assert facts(index, name="high")[0].numbers == (10.0,)
    momentum = facts(index, name="self.momentum")[0]
    assert momentum.numbers == (0.9,) and momentum.line == line_of("self.momentum")
    assert facts(index, name="self.lr")[0].numbers == ()  # an expression, not a literal


def test_kwargs_defaults_argparse_and_dict_keys(repo: Path) -> None:
    index = build_index(repo)
    wd = facts(index, kind="kwarg", name="weight_decay")[0]
    assert wd.numbers == (5e-4,) and wd.context[-1] == "make_optimizer"
    assert wd.line == line_of("weight_decay=")
    assert facts(index, kind="default", name="lr")[0].numbers == (3e-4,)
    assert facts(index, kind="default", name="epochs")[0].numbers == (100.0,)  # keyword-only
    assert facts(index, kind="argparse", name="--lr")[0].numbers == (0.05,)
    bs = facts(index, kind="argparse", name="--batch-size")[0]
    assert bs.numbers == (32.0,) and bs.terms == ("batch", "size")
    n = facts(index, kind="key", name="n_samples")[0]
    assert n.numbers == (450.0,) and n.context == ("blobs-3",)


def test_functions_stubs_and_call_order(repo: Path) -> None:
    index = build_index(repo)
    fns = {f.qualname: f for f in index.functions}
    assert fns["Trainer.step"].stub
    assert fns["Trainer.evaluate"].stub  # docstring + raise NotImplementedError
    assert fns["Trainer.todo"].stub  # TODO comment + trivial return
    assert not fns["load"].stub
    assert not fns["fit"].stub
    fit = fns["fit"]
    assert (fit.start, fit.end) == (line_of("def fit"), line_of("    return opt"))
    assert fit.body_start == fit.start + 1
    assert [c for c, _ in fns["main"].calls] == [
        "ArgumentParser",
        "add_argument",
        "add_argument",
        "parse_args",
        "load",
        "build",
        "fit",
    ]
    assert [c for c, _ in fns["fit"].calls] == ["make_optimizer", "model", "backward", "step"]
    guard = line_of("__main__")
    assert index.main_blocks["train.py"] == (guard, guard + 1)
    assert ("main", guard + 1) in index.module_calls["train.py"]


def test_config_keys_with_lines(repo: Path) -> None:
    index = build_index(repo)
    lr = facts(index, name="optimizer.lr")[0]
    assert (lr.kind, lr.numbers, lr.line) == ("config", (1e-4,), 3)  # "1e-4" is a string in YAML
    assert facts(index, name="optimizer.betas")[0].numbers == (0.9, 0.999)
    assert facts(index, name="train.epochs")[0].line == 6
    seed = facts(index, name="seed")[0]
    assert (seed.file, seed.numbers, seed.line) == ("params.json", (42.0,), 2)
    assert facts(index, name="model.hidden_dim")[0].terms == identifier_terms("hidden dimension")


def test_shell_commands_and_flags(repo: Path) -> None:
    index = build_index(repo)
    cmds = [c for c, _ in index.commands["run.sh"]]
    assert cmds == ["set -e", "python train.py --lr 0.1 --epochs 5", "python eval.py"]
    assert facts(index, kind="cli", name="--lr")[0].numbers == (0.1,)


def test_broken_python_falls_back_to_text(repo: Path) -> None:
    index = build_index(repo)
    fid = index.file_id("broken.py")
    assert fid is not None
    assert not facts(index, file="broken.py")
    assert (fid, 2) in index.term_sites("learn")  # still searchable as text


#: a model's answer saved as the file: prose and a fence around the code
FENCED = """## Code: model.py

```python
def attention(q, k):
    \"\"\"Scaled by sqrt(d) as in Eq. 3.\"\"\"
    return LR * q @ k / 8

LR = 0.001
```

This file implements scaled dot-product attention.
"""
#: a file cut short inside a string: Python runs none of it, the judge reads what parses
CUT_SHORT = 'def train(lr):\n    """Adam with lr 1e-3."""\n    return lr\n\n\ndef evaluate(x):\n    print("\n'


def test_a_file_saved_with_its_markdown_or_cut_short_is_read_as_far_as_it_parses(
    tmp_path: Path,
) -> None:
    """A Python file that does not parse as saved is not all code: the prose and fences of a
    model's answer are text, so is the tail of a file cut short; the code before is indexed (its
    functions, settings and docstrings), with its lines where they are."""
    (tmp_path / "model.py").write_text(FENCED)
    (tmp_path / "train.py").write_text(CUT_SHORT)
    index = build_index(tmp_path)
    model, train = index.file_id("model.py"), index.file_id("train.py")
    assert {(f.file, f.name, f.start) for f in index.functions} == {
        ("model.py", "attention", 4),
        ("train.py", "train", 1),
    }
    assert [f.numbers for f in facts(index, file="model.py", name="LR")] == [(0.001,)]
    assert [ln for ln in range(1, 12) if index.is_text(model, ln)] == [1, 2, 3, 5, 9, 10, 11]
    assert [ln for ln in range(1, 8) if index.is_text(train, ln)] == [2, 6, 7]
    assert (train, 6) in index.chunk_sites["evaluate"]  # still searchable as text
    assert parse_recovering("def broken(:\n    pass\n") is None
    # a fence in a docstring's example is not the answer's: the file is cut where it breaks
    shown = (
        '"""Usage:\n```python\nrun(3)\n```\n"""\n\n\ndef run(n):\n    return n\n\n\ndef broken(:\n'
    )
    tree, text = parse_recovering(shown)
    assert [f.name for f in tree.body if isinstance(f, ast.FunctionDef)] == ["run"]
    assert text == [11]  # 0-based: line 12, `def broken(:`


def test_terms_keys_comments_and_literals(repo: Path) -> None:
    index = build_index(repo)
    train = index.file_id("train.py")
    assert index.is_comment(train, 1)  # module docstring
    assert index.is_comment(train, line_of("# TODO"))
    assert not index.is_comment(train, line_of("LR = "))
    assert (train, line_of("blobs-3")) in index.key_sites("blobs3")
    assert (train, line_of("LR = ")) in index.literal_sites(0.01)
    assert index.literal_sites(1e-4)  # from the YAML
    assert index.functions_named("fit")[0].file == "train.py"


def test_tokenisation_and_synonyms() -> None:
    assert identifier_terms("learningRate") == identifier_terms("lr") == ("learn", "rate")
    assert identifier_terms("num_epochs") == identifier_terms("n_epochs") == ("epoch",)
    assert identifier_terms("bs") == identifier_terms("batch_size")
    assert identifier_terms("wd") == ("weight", "decay")
    assert identifier_terms("lam") == identifier_terms("lmbda") == ("lambda",)
    assert identifier_terms("hidden_dim") == identifier_terms("hidden_dimension")
    assert identifier_terms("HTTPServer") == ("http", "serv")
    assert text_terms("standardise") == text_terms("standardization")
    assert text_terms("the converged run") == ["converg", "run"]
    assert squash("blobs-3") == squash("blobs_3") == squash("Blobs3") == "blobs3"


def test_empty_and_missing_roots(tmp_path: Path) -> None:
    assert build_index(tmp_path).empty
    assert build_index(tmp_path / "nope").empty


def test_postings_do_not_depend_on_the_hash_seed() -> None:
    """Retrieval (and so an LLM prompt and its cache key) walks these lists in order."""
    import os
    import subprocess
    import sys

    code = (
        "import hashlib, json\n"
        "from sabench.index import build_index\n"
        "i = build_index('resources/submissions/drifted/logreg-earlystop')\n"
        "tables = [i.chunk_sites, i.term_chunks, i.key_chunks]\n"
        "print(hashlib.sha256(json.dumps([list(t.items()) for t in tables]).encode()).hexdigest())\n"
    )
    repo = Path(__file__).resolve().parents[1]
    digests = {
        subprocess.run(
            [sys.executable, "-c", code],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(digests) == 1


def _dead(root: Path, files: dict[str, str]) -> dict[str, bool]:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    idx = build_index(root)
    return {d.name: (d.fid, d.start) in idx.unread for d in idx.definitions}


def test_definitions_that_nothing_runs_are_unread(tmp_path: Path) -> None:
    """A definition runs when running code reads its name; the rest is declared, not run."""
    run = """\
import functools
from registry import register
from steps import prepare as prep


class Base:
    pass


class Net(Base):
    def forward(self, x):
        return self._block(x)

    def _block(self, x):
        return x

    def _never(self, x):
        return -x


def orphan():
    return helper_of_orphan()


def helper_of_orphan():
    return 1


@functools.lru_cache
def cached():
    return 2


@register("net")
def build():
    return Net()


def main():
    return Net().forward(prep())


if __name__ == "__main__":
    main()
"""
    steps = "def prepare():\n    return 0\n\n\ndef from_config():\n    return 1\n"
    files = {
        "run.py": run,
        "steps.py": steps,
        "registry.py": "def register(name):\n    return lambda f: f\n",
        "config.yaml": "factory: steps.from_config\n",
    }
    dead = _dead(tmp_path, files)
    assert dead == {
        "Base": False,  # a base class of a live class
        "Net": False,
        "_block": False,  # a private method its class calls
        "_never": True,  # ... and one nothing calls
        "orphan": True,
        "helper_of_orphan": True,  # called only by dead code
        "cached": True,  # a decorator that registers nothing
        "build": False,  # registered: a framework runs it
        "main": False,
        "prepare": False,  # imported under another name
        "from_config": False,  # named by a config
        "register": False,
    }


def test_code_where_nothing_runs_a_definition_keeps_them_all(tmp_path: Path) -> None:
    """A library without an entry point is judged by what it defines; once something runs, what
    it does not reach is dead."""
    lib = "def a():\n    return b()\n\n\ndef b():\n    return 1\n\n\ndef c():\n    return 2\n"
    assert _dead(tmp_path, {"lib.py": lib}) == {"a": False, "b": False, "c": False}
    assert _dead(tmp_path, {"lib.py": lib + "\n\na()\n"}) == {"a": False, "b": False, "c": True}


def test_a_module_nothing_runs_or_imports_is_dead(tmp_path: Path) -> None:
    """Modules run from the entry points (a shell command's script, a ``__main__`` block) through
    imports; a module outside them is dead, module-level lines included."""
    files = {
        "run.sh": "python -m pkg.train\n",
        "pkg/__init__.py": "",
        "pkg/train.py": "from .losses import mse\n\n\ndef main():\n    return mse()\n\n\nmain()\n",
        "pkg/losses.py": "def mse():\n    return 0.0\n",
        "pkg/old.py": 'REGISTRY = {"mse": lambda: 1}\n\n\ndef legacy():\n    return 1\n',
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    idx = build_index(tmp_path)
    assert {idx.files[fid].path for fid, _ in idx.dead} == {"pkg/old.py"}
    # a module imported by a computed name: every module may run
    (tmp_path / "pkg/train.py").write_text(
        "import importlib\n\n\ndef main():\n    return importlib.import_module('pkg.old')\n\n\n"
        "main()\n"
    )
    idx = build_index(tmp_path)
    old = next(i for i, f in enumerate(idx.files) if f.path == "pkg/old.py")
    assert (old, 1) not in idx.dead  # its module-level code may run
    assert (old, 4) in idx.dead  # a function nothing calls is still dead


def test_a_module_loaded_from_its_file_runs_where_its_loader_is_called(tmp_path: Path) -> None:
    """A helper around ``spec_from_file_location`` whose path is built from ``__file__`` loads
    the module its literal argument names: that module runs (a formula in it is the pipeline's),
    and a module no call names stays dead; a loader with no literal name may load any module."""
    loader = (
        "import importlib.util\nfrom pathlib import Path\n\n\n"
        "def load_module(name):\n"
        "    path = Path(__file__).resolve().parent.joinpath(*name.split('.'))"
        ".with_suffix('.py')\n"
        "    spec = importlib.util.spec_from_file_location(name, path)\n"
        "    module = importlib.util.module_from_spec(spec)\n"
        "    spec.loader.exec_module(module)\n"
        "    return module\n\n\n"
    )
    files = {
        "main.py": loader + "losses = load_module('pkg.losses')\n\n\n"
        "if __name__ == '__main__':\n    print(losses.mse())\n",
        "pkg/__init__.py": "",
        "pkg/losses.py": "def mse():\n    return 0.0\n",
        "old.py": "def legacy():\n    return 1\n",
    }
    assert _dead(tmp_path, files) == {"load_module": False, "mse": False, "legacy": True}
    computed = (
        loader + "if __name__ == '__main__':\n    for name in ['pkg.losses']:\n"
        "        print(load_module(name).mse())\n"
    )
    assert _dead(tmp_path, {**files, "main.py": computed})["mse"] is False


def test_imports_of_the_submission_as_a_package_reach_its_files(tmp_path: Path) -> None:
    """A submission written as the package ``luno`` imports its own ``config.py`` as
    ``luno.config``."""
    files = {
        "main.py": "from luno.config import get\n\nif __name__ == '__main__':\n    get()\n",
        "config.py": "def get():\n    return 1\n",
        "unused.py": "def other():\n    return 2\n",
    }
    dead = _dead(tmp_path, files)
    assert dead == {"get": False, "other": True}


def test_a_name_a_module_lacks_is_the_one_other_definition_of_it(tmp_path: Path) -> None:
    """What a check takes as ``main.gen`` is main's ``gen``; where main has none, the one other
    file's that defines it; where several do, none (the harness cannot tell which)."""
    files = {
        "main.py": "import data\n\n\ndef run():\n    return data.gen()\n",
        "data.py": "def gen():\n    return 1\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    found = build_index(tmp_path).module_definitions("main", "gen")
    assert [(d.name, d.start) for d in found] == [("gen", 1)]
    assert build_index(tmp_path).module_definitions("main", "run")[0].start == 4
    (tmp_path / "old.py").write_text("def gen():\n    return 2\n")
    assert build_index(tmp_path).module_definitions("main", "gen") == []
