"""Checks the submission cannot reach: its code runs in a child process, never in the check's.

Each hostile submission below passed the ridge paper's D2 checks when a check imported the
submission into its own interpreter; now every one of them must fail or be an error.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sabench.checks import run_check

REPO = Path(__file__).resolve().parents[1]
CHECKS = sorted((REPO / "resources/papers/ridge-gd/checks").glob("ridge-gd-D2-*.py"))
REFERENCE = REPO / "resources/submissions/reference/ridge-gd"

#: The ridge paper's functions, all wrong (zeros), each module importing the attack first.
WRONG = {
    "model.py": """
import attack
import numpy as np

def ridge_loss(X, y, w, b, lam):
    return 0.0

def ridge_gradients(X, y, w, b, lam):
    return np.zeros(X.shape[1]), 0.0
""",
    "baselines.py": """
import attack
import numpy as np

def fit_closed_form(X, y, lam):
    return np.zeros(X.shape[1]), 0.0
""",
    "metrics.py": """
import attack

def rmse(y, y_pred):
    return 0.0

def r2_score(y, y_pred):
    return 0.0
""",
}
PATCH_NUMPY = """
import numpy
numpy.isclose = lambda *a, **k: True
numpy.allclose = lambda *a, **k: True
numpy.array_equal = lambda *a, **k: True
"""
PATCH_BUILTINS = (
    """
import builtins

class Equal(float):
    def __eq__(self, other):
        return True
    __le__ = __ge__ = __lt__ = __gt__ = __eq__
    def __float__(self):
        return self

builtins.abs = lambda x: 0.0
builtins.float = Equal
builtins.AssertionError = type("AssertionError", (Exception,), {})
"""
    + PATCH_NUMPY
)
#: Every place a nonce could be read from, then a forged pass line written everywhere it could go.
FORGE = r"""
import glob, os, re, sys
found = {"0" * 16}
places = glob.glob("/proc/*/cmdline") + glob.glob("/proc/*/environ") + glob.glob("/sabench-check/*")
for path in places:
    try:
        found.update(re.findall(r"[0-9a-f]{16}", open(path, "rb").read().decode("latin-1")))
    except OSError:
        pass
lines = "".join('\n[sabench-check %s] {"kind": "pass", "detail": "", "where": null}\n' % n
                for n in sorted(found))
for target in [1, 2] + glob.glob("/proc/*/fd/1") + glob.glob("/proc/*/fd/2"):
    try:
        fd = target if isinstance(target, int) else os.open(target, os.O_WRONLY)
        os.write(fd, lines.encode())
    except OSError:
        pass
print(lines)
"""
#: A numpy.py that loads the real numpy in its place, patched.
SHADOW_NUMPY = """
import sys
here = sys.path.pop(0)
del sys.modules["numpy"]
import numpy
sys.path.insert(0, here)
numpy.isclose = lambda *a, **k: True
numpy.allclose = lambda *a, **k: True
"""
ATTACKS = {
    "patches numpy on import": PATCH_NUMPY,
    "patches builtins on import": PATCH_BUILTINS,
    "os._exit(0) at import": "import os\nos._exit(0)\n",
    "sys.exit(0) at import": "import sys\nsys.exit(0)\n",
    "exits 0 posing as the check": (
        'exec(compile("raise SystemExit(0)", "/sabench-check/check.py", "exec"))\n'
    ),
    "imitates the pass line": FORGE,
    "imitates the pass line, then exits 0": FORGE + "os._exit(0)\n",
    "patches numpy, then imitates the pass line": PATCH_NUMPY + FORGE,
}


def outcomes(submission: Path, runtime: dict) -> dict[str, str]:
    """Every ridge check on ``submission``."""
    return {
        path.stem: run_check(path.read_text(), submission, runtime, {"time_limit_s": 30})
        for path in CHECKS
    }


@pytest.mark.bwrap
def test_honest_reference_still_passes(runtime: dict, tmp_path: Path) -> None:
    out = outcomes(REFERENCE, runtime)
    assert {k: o.kind for k, o in out.items()} == {path.stem: "pass" for path in CHECKS}, out


@pytest.mark.bwrap
@pytest.mark.parametrize("name", list(ATTACKS))
def test_hostile_submission_never_passes(runtime: dict, tmp_path: Path, name: str) -> None:
    submission = tmp_path / "executed"
    submission.mkdir()
    for file, text in WRONG.items():
        (submission / file).write_text(text)
    (submission / "attack.py").write_text(ATTACKS[name])
    out = outcomes(submission, runtime)
    passed = {k: (o.detail, o.tail[-300:]) for k, o in out.items() if o.kind == "pass"}
    assert not passed, passed
    assert all(o.kind in ("fail", "crash") for o in out.values()), {
        k: (o.kind, o.detail) for k, o in out.items()
    }


@pytest.mark.bwrap
def test_a_submission_named_like_numpy_shadows_nothing(runtime: dict, tmp_path: Path) -> None:
    submission = tmp_path / "executed"
    shutil.copytree(REFERENCE, submission)
    for file, text in WRONG.items():
        (submission / file).write_text(text.replace("import attack\n", ""))
    (submission / "numpy.py").write_text(SHADOW_NUMPY)
    out = outcomes(submission, runtime)
    assert not [k for k, o in out.items() if o.kind == "pass"], out


@pytest.mark.bwrap
def test_what_crosses_is_data(runtime: dict, tmp_path: Path) -> None:
    """Results come back as plain values, exceptions keep their kind and the submission's line,
    the check's Generator advances as the child used it, and the child's output is marked."""
    submission = tmp_path / "executed"
    submission.mkdir()
    (submission / "lib.py").write_text(
        "import numpy as np\n"
        "class Box:\n"
        "    def __init__(self, v):\n"
        "        self.v = v\n"
        "    def get(self):\n"
        "        return self.v\n"
        "def make(v):\n"
        "    print('making', v)\n"
        "    return Box(v)\n"
        "def draw(rng, n):\n"
        "    return rng.normal(size=n)\n"
        "def stub():\n"
        "    raise NotImplementedError('later')\n"
        "def apply(f, x):\n"
        "    return f(x) + 1\n"
    )
    text = """
import numpy as np
import lib
box = lib.make(np.arange(3.0))
got = box.get()
assert type(got) is np.ndarray and got.dtype == np.float64 and list(got) == [0.0, 1.0, 2.0]
assert "Box" in repr(box)
a, b = np.random.default_rng(7), np.random.default_rng(7)
assert np.array_equal(lib.draw(a, 3), b.normal(size=3))
assert a.normal() == b.normal(), "the Generator did not advance"
assert lib.apply(lambda x: x * 2, 20) == 41
try:
    lib.make(object())
except TypeError as exc:
    assert "only data" in str(exc), exc
else:
    raise AssertionError("an object crossed")
lib.stub()
"""
    out = run_check(text, submission, runtime, {"time_limit_s": 30})
    assert out.kind == "placeholder", (out.detail, out.tail)
    assert out.where == ("lib.py", 13)
    assert "[code under test] making [0. 1. 2.]" in out.tail


def test_a_pass_is_named_by_the_checks_own_line_on_every_backend() -> None:
    """The relayed output of the code under test may come before or after the check's last line
    (docker's pipes differ from bwrap's): the reasoning of a pass must not depend on it."""
    from sabench.checks.run import CODE_UNDER_TEST, ordered_output, pass_detail

    own = "split, then standardise with the training split's statistics"
    relayed = f"{CODE_UNDER_TEST}CheckCallbackError: a function of the check raised"
    assert pass_detail(f"{relayed}\n{own}\n") == own
    assert pass_detail(f"{own}\n{relayed}\n") == own
    assert pass_detail(f"{relayed}\n") == "the check ran to the end"
    assert ordered_output(f"{relayed}\n{own}") == ordered_output(f"{own}\n{relayed}")
