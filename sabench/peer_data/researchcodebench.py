"""ResearchCodeBench (RCB) as sabench data: papers, one SAU per annotated snippet, the authors' unit
tests as checks, the authors' code as the reference submission, and RCB's leaderboard reproduced.

RCB (github.com/PatrickHua/ResearchCodeBench) ships ``pset/<paper>/``: the paper (a ``.tex``, one
``.md``), the authors' code with nested ``# <paper2code name="...">`` ... ``# </paper2code
name="...">`` snippet markers, ``paper2code_test.py`` (unit tests by RCB's authors), and
``pset/papers.yaml`` (which files are annotated, which are context). A model fills in one masked
snippet at a time and passes when the tests pass; ``outputs/*/overall_stats.json`` holds every
model's per-snippet results and the published scores. ``--data`` is the fetched git directory
(read with ``git``, no work tree needed) or a checkout::

    python -m sabench.peer_data.researchcodebench --data <snapshot> --out data/rcb
    snakemake --cores 2 --configfile data/rcb/config.yaml --config results=results-rcb

The first writes ``papers/<paper>/paper.md``, ``saus/<paper>.json`` (our curated SAU format: each
SAU keeps its ``origin``, ``researchcodebench``, its file as ``category`` and its enclosing
snippet's SAU as ``parent``), ``saus/checks/<paper>.py`` (the paper's check, which its SAUs name
with ``check_file``: one copy of the embedded files per paper, not one per SAU),
``reference/<paper>/`` (the authors' code), ``agents.yaml`` (that code as the replay agent
``rcb_reference``), ``config.yaml`` (the workflow's settings for all this) and
``leaderboard.json``; the second runs the workflow on them.

Time: a check gives the tests ``--test-timeout`` seconds (:data:`TEST_TIMEOUT_S`, 50; RCB's
``main.py`` gives 60) and says they fail when they take longer, as RCB does; ``config.yaml`` sets
``judge_settings.exec.time_limit_s`` (the exec judge's limit per check, 60 by default) to that plus
:data:`CHECK_START_S`. For a slow paper, export again with a larger ``--test-timeout`` (raising
``time_limit_s`` alone changes nothing: the check stops the tests first). A check killed at the
judge's limit instead would be ``error``, which is never cached, so it would run again for every
SAU of the paper; a paper's SAUs share one check, run once per submission thanks to the judge's
cache. ``judge_settings.exec.total_time_s`` (900) bounds the checks of one run together.

Decisions: a snippet's check runs the paper's whole suite, as RCB scores a snippet (it has no
per-snippet tests); its weight is the snippet's line count, RCB's weight in the scaled line rate.
The check carries the benchmark's other files (the tests, the ``*_ref.py`` references they compare
with, context code, data) and writes them over the check's copy of the submission: it runs on any
agent's code, and only the annotated files are the agent's to write. The reference submission has
the markers stripped: a real submission has none, and their names (the paper's words) would be
evidence for the static judge that no code gives.
"""

from __future__ import annotations

import ast
import base64
import json
import math
import re
import subprocess
import sys
import textwrap
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from sabench.errors import UserError
from sabench.peer_data.rcb_latex import latex_to_markdown
from sabench.steps import ArgumentParser, command
from sabench.values import words

PSET = "pset"
PAPER_FILES = ("paper2code_paper.tex", "paper2code_paper.md")
DEFAULT_ENTRY = "paper2code_test.py"
#: RCB's pass rule (``check_complete_success``): exit 0 and none of these in the output.
FAIL_WORDS = ("Error:", "Exception:", "Traceback", "failed")
#: Seconds the tests may take inside a check by default (``--test-timeout``; RCB's ``main.py``
#: gives 60): with :data:`CHECK_START_S` it fits the exec judge's default 60 s per check.
TEST_TIMEOUT_S = 50
#: Seconds of a check around the tests (it starts, writes the scaffold, reads the output): the
#: exported config gives a check ``--test-timeout`` plus this.
CHECK_START_S = 10
NO_PASSAGE = "(no passage of the paper matched this snippet)"
_START = re.compile(r'^\s*#\s*<\s*paper2code\s+name\s*=\s*"([^"]+)"\s*>\s*$')
_END = re.compile(r'^\s*#\s*<\s*/\s*paper2code\s+name\s*=\s*"([^"]+)"\s*>\s*$')
_LOOSE = re.compile(r"^\s*#.*<\s*/?\s*paper2code\b")
#: Files the check and the reference leave out: the paper, RCB's own settings, docs and images.
_NOT_SCAFFOLD = re.compile(
    r"(^|/)(paper2code_paper\.(tex|md)|paper2code\.yaml|README[^/]*|LICENSE[^/]*|\.gitignore)$"
    r"|\.(png|jpe?g|gif|svg|pdf)$|__pycache__",
    re.IGNORECASE,
)


class Snapshot:
    """RCB's files from a git directory (at HEAD) or a checkout; paths are posix and relative."""

    def __init__(self, root: Path, git: bool) -> None:
        self.root, self.git = root, git
        self._names: list[str] | None = None

    def _git(self, *args: str, data: bytes | None = None) -> bytes:
        proc = subprocess.run(
            ["git", f"--git-dir={self.root}", *args], input=data, capture_output=True, check=False
        )
        if proc.returncode != 0:
            said = proc.stderr.decode(errors="replace").strip().splitlines() or ["?"]
            raise UserError(self.root, None, f"git {args[0]} failed: {said[-1]}")
        return proc.stdout

    def list(self, prefix: str = "") -> list[str]:
        """The files under the folder ``prefix`` (every file for "")."""
        if self._names is None:
            if self.git:
                out = self._git("ls-tree", "-r", "-z", "--name-only", "HEAD").decode()
                self._names = sorted(n for n in out.split("\0") if n)
            else:
                files = (p.relative_to(self.root) for p in self.root.rglob("*") if p.is_file())
                self._names = sorted(p.as_posix() for p in files if ".git" not in p.parts)
        folder = prefix.rstrip("/") + "/" if prefix else ""
        return [n for n in self._names if n.startswith(folder)]

    def read_many(self, paths: list[str]) -> dict[str, bytes]:
        """Several files at once (one ``git cat-file --batch`` for a git directory)."""
        if not self.git:
            for p in paths:
                if not (self.root / p).is_file():
                    raise UserError(self.root / p, None, "not in the snapshot")
            return {p: (self.root / p).read_bytes() for p in paths}
        out = self._git("cat-file", "--batch", data="".join(f"HEAD:{p}\n" for p in paths).encode())
        found, pos = {}, 0
        for path in paths:
            end = out.index(b"\n", pos)
            header = out[pos:end].split()
            if header[-1] == b"missing":
                raise UserError(self.root, path, "not in the snapshot")
            found[path] = out[end + 1 : end + 1 + int(header[2])]
            pos = end + 2 + int(header[2])
        return found

    def read_bytes(self, path: str) -> bytes:
        return self.read_many([path])[path]

    def read(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")


def open_snapshot(data: Path) -> Snapshot:
    """RCB's fetched git directory (``HEAD`` and ``objects/``) or a checkout (``pset/``)."""
    data = Path(data).expanduser().resolve()
    if (data / PSET).is_dir():
        return Snapshot(data, git=False)
    if (data / "HEAD").is_file() and (data / "objects").is_dir():
        return Snapshot(data, git=True)
    raise UserError(data, None, "not a ResearchCodeBench git directory or checkout (with pset/)")


# --- snippets -------------------------------------------------------------------------------


@dataclass
class Snippet:
    """One annotated snippet; lines are 1-based and inclusive, the markers excluded."""

    name: str
    path: str  # the file, relative to the paper folder
    start_line: int
    end_line: int
    code: str  # the lines between the markers, inner markers removed
    parent: str | None
    depth: int
    n_lines: int  # code lines as RCB counts them (its weight in the scaled line rate)


def is_marker(line: str) -> bool:
    return bool(_START.match(line) or _END.match(line))


def rcb_line_count(code: str) -> int:
    """RCB's ``Code.get_code_lines``: neither blank nor comment-only lines."""
    return sum(1 for line in code.splitlines() if line.split("#", 1)[0].strip())


def parse_snippets(path: str, text: str) -> list[Snippet]:
    """The snippets of one annotated file, outer before inner, each closed by its own name."""
    lines = text.split("\n")
    open_: list[tuple[str, int]] = []  # (name, line of its start marker), innermost last
    found: list[Snippet] = []
    for number, line in enumerate(lines, start=1):
        start, end = _START.match(line), _END.match(line)
        if start:
            open_.append((start.group(1), number))
        elif end:
            name = end.group(1)
            if not open_:
                raise UserError(path, f"line {number}", f"snippet {name!r} closed but never opened")
            top, opened = open_.pop()
            if top != name:
                message = f"closes {name!r} but {top!r} (line {opened}) is open"
                raise UserError(path, f"line {number}", message)
            body = [b.rstrip("\r") for b in lines[opened : number - 1] if not is_marker(b)]
            code = "\n".join(body)
            parent, n = (open_[-1][0] if open_ else None), rcb_line_count(code)
            found.append(Snippet(name, path, opened + 1, number - 1, code, parent, len(open_), n))
        elif _LOOSE.match(line):
            raise UserError(path, f"line {number}", f"malformed snippet marker: {line.strip()!r}")
    if open_:
        name, opened = open_[-1]
        raise UserError(path, f"line {opened}", f"snippet {name!r} is never closed")
    return sorted(found, key=lambda s: (s.start_line, -s.end_line))


def strip_markers(text: str) -> str:
    """The file without its snippet markers (what a submission would hold)."""
    return "\n".join(line for line in text.split("\n") if not is_marker(line))


# --- papers ---------------------------------------------------------------------------------


@dataclass
class RCBPaper:
    """One RCB problem: its paper, files, annotated snippets and test entry point."""

    paper: str
    title: str
    tex: str
    text: str  # the paper as markdown-ish text, normalised as sabench's ingest does
    files: dict[str, str]  # every text file of the paper folder, as is
    annotated: list[str]
    context: list[str]
    test_entry_point: str
    snippets: list[Snippet]
    binary: dict[str, bytes] = field(default_factory=dict)  # the files that are not UTF-8 text


def _paths(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else [str(v) for v in value or []]


def load_papers(snapshot: Snapshot, papers: list[str] | None = None) -> list[RCBPaper]:
    """Every problem of ``pset/papers.yaml`` the snapshot has, in its order (or those named)."""
    from sabench.ingest import normalise_text

    where = f"{PSET}/papers.yaml"
    try:
        index = yaml.safe_load(snapshot.read(where))
    except yaml.YAMLError as exc:
        raise UserError(where, None, f"cannot parse: {exc}") from None
    if not isinstance(index, list):
        raise UserError(where, None, "expected a list of papers")
    out = []
    for meta in index:
        paper = str(meta.get("id", "")) if isinstance(meta, dict) else ""
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", paper):
            raise UserError(where, f"id {paper!r}", "not a paper id (letters, digits, '.-_')")
        folder = f"{PSET}/{paper}"
        names = snapshot.list(folder)
        if not names or (papers and paper not in papers):
            continue
        files, binary = {}, {}
        for name, data in snapshot.read_many(names).items():
            try:
                files[name[len(folder) + 1 :]] = data.decode("utf-8")
            except UnicodeDecodeError:
                binary[name[len(folder) + 1 :]] = data
        tex_name = next((n for n in PAPER_FILES if n in files), None)
        if tex_name is None:
            raise UserError(folder, None, f"no paper ({' or '.join(PAPER_FILES)})")
        try:
            settings = yaml.safe_load(files.get("paper2code.yaml", "")) or {}
        except yaml.YAMLError as exc:
            raise UserError(f"{folder}/paper2code.yaml", None, f"cannot parse: {exc}") from None
        settings = settings if isinstance(settings, dict) else {}
        annotated = _paths(meta.get("annotated_file_paths") or settings.get("mask_file_path"))
        entry = str(settings.get("test_entry_point") or DEFAULT_ENTRY)
        entry = entry if entry in files else DEFAULT_ENTRY  # RCB itself always runs this one
        snippets = []
        for rel in annotated:
            if rel not in files:
                raise UserError(f"{folder}/{rel}", None, f"annotated in {where} but missing")
            snippets += parse_snippets(f"{folder}/{rel}", files[rel])
        for s in snippets:
            s.path = s.path[len(folder) + 1 :]
        title = str(meta.get("title") or paper)
        tex = files[tex_name]
        text = normalise_text(tex if tex_name.endswith(".md") else latex_to_markdown(tex, title))
        context = _paths(meta.get("context_file_paths"))
        out.append(
            RCBPaper(paper, title, tex, text, files, annotated, context, entry, snippets, binary)
        )
    absent = sorted(set(papers or []) - {p.paper for p in out})
    if absent or not out:
        raise UserError(where, None, f"not in the snapshot: {', '.join(absent) or 'any paper'}")
    return out


# --- the passage a snippet implements -------------------------------------------------------

_STOP = words(
    """self cls def return if else elif for while in not and or is none true false import from as
    with lambda pass break continue try except raise assert yield class del torch nn np numpy jnp
    jax tf functional math the of to an be by on at it its this that these those we our are was
    were which where when then than can has have use used using into over per via also each all
    shape dim dims size len range int float list dict tuple str print item view reshape unsqueeze
    squeeze permute transpose contiguous clone detach cpu cuda device dtype type get set new args
    kwargs config cfg out output outputs input inputs result results value values tmp temp todo
    mathrm mathbf mathcal mathbb boldsymbol bm text left right frac cdot begin end
    code snippet implement implementation compute calculate"""
)
_K1, _B = 1.2, 0.75  # BM25's usual constants
#: A passage grounds a snippet from this score on, with a word of its name or 3 words of its code.
MIN_PASSAGE_SCORE = 6.0
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\[$\\])")


def words_of(text: str) -> list[str]:
    """Lower-case word stems, identifiers split (``alpha_init``, ``channelsLast``), stop words out."""
    found = re.findall(r"[a-z]{2,}", re.sub(r"(?<=[a-z])(?=[A-Z])", " ", text).lower())
    stem = lambda w: w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w  # noqa: E731
    return [stem(w) for w in found if w not in _STOP]


def passages(text: str) -> list[str]:
    """Candidate quotes, each a verbatim slice of ``text``: the sentences of its paragraphs (a
    display equation stays with its sentence), long ones cut at line ends into pieces of about
    400 characters, short ones joined to the next."""
    spans: list[tuple[int, int]] = []
    for block in re.finditer(r"(?:[^\n]+(?:\n|$))+", text):
        if block.group().startswith("#"):
            continue
        cuts = [
            block.start(),
            *(block.start() + m.start() for m in _SENTENCE.finditer(block.group())),
        ]
        pieces: list[tuple[int, int]] = []
        for start, end in zip(cuts, [*cuts[1:], block.end()], strict=True):
            while end - start > 600 and (at := text.find("\n", start + 400, end)) > 0:
                pieces.append((start, at))
                start = at + 1
            pieces.append((start, end))
        merged: tuple[int, int] | None = None
        for start, end in pieces:
            merged = (merged[0], end) if merged else (start, end)
            if len(text[merged[0] : merged[1]].strip()) >= 40:
                spans.append(merged)
                merged = None
        spans += [merged] if merged else []
    return [q for q in (text[a:b].strip() for a, b in spans) if len(q) >= 20]


class PassageIndex:
    """A paper's candidate passages and their words (BM25), built once per paper."""

    def __init__(self, text: str) -> None:
        self.quotes = passages(text)
        self.bags = [Counter(words_of(q)) for q in self.quotes]
        df = Counter(w for bag in self.bags for w in bag)
        n = max(len(self.quotes), 1)
        self.idf = {w: math.log((n - k + 0.5) / (k + 0.5) + 1.0) for w, k in df.items()}
        self.avg_len = sum(sum(b.values()) for b in self.bags) / n or 1.0

    def best(self, snippet: Snippet) -> tuple[str | None, float]:
        """The passage that best matches a snippet's name (weight 3) and the words of its code
        and comments (weight 1), and its score; None below the thresholds."""
        name = set(words_of(snippet.name))
        query = {w: 1.0 for w in words_of(snippet.code)} | dict.fromkeys(name, 3.0)
        best, best_score = None, 0.0
        for quote, bag in zip(self.quotes, self.bags, strict=True):
            matched = [w for w in query if w in bag]
            norm = _K1 * (1 - _B + _B * sum(bag.values()) / self.avg_len)
            score = sum(
                query[w] * self.idf[w] * bag[w] * (_K1 + 1) / (bag[w] + norm) for w in matched
            )
            if score > best_score and (name & set(matched) or len(matched) >= 3):
                best, best_score = quote, score
        return (best if best_score >= MIN_PASSAGE_SCORE else None), best_score


# --- what a snippet is: its dimension -------------------------------------------------------

#: Calls that build a value rather than compute one (a parameter, a constant tensor, an option);
#: a class (a capitalised name: ``nn.BatchNorm2d(c, eps=1e-4)``) builds one too.
_INIT_CALLS = words(
    """Parameter ones zeros full empty tensor as_tensor zeros_like ones_like full_like eye array
    asarray float int bool add_argument register_buffer setattr"""
)
#: Words of a snippet's name, or calls it makes, that make it data or evaluation protocol.
_PROTOCOL_WORDS = words(
    """data dataset dataloader loader loading preprocessing augmentation metric metrics accuracy
    benchmark validation bootstrap confidence read_csv read_parquet load_dataset train_test_split
    random_split"""
)
DIMENSION_RULE = (
    "D1 when every statement assigns (or registers) a value built from literals and names "
    "(Parameter, ones, zeros, tensor, a layer with its settings, add_argument ...) that holds a "
    "number or a built tensor, with arithmetic only inside those calls; else D4 when it holds two or "
    "more snippets; else D3 when a word of its name or a call it makes is about data or evaluation "
    "(data, loading, metric, accuracy, validation, bootstrap, read_csv ...); else D2."
)


def _call_name(node: ast.AST) -> str:
    func = getattr(node, "func", None)
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _builds(node: ast.AST) -> bool:
    name = _call_name(node)
    return isinstance(node, ast.Call) and (name in _INIT_CALLS or name[:1].isupper())


def _built(node: ast.AST, in_call: bool = False) -> bool:
    """A value written down or built, not computed: literals, names, init calls of those; the
    arithmetic of a shape or a scale only inside such a call (``torch.ones(1) * alpha`` too)."""
    if isinstance(node, ast.Constant | ast.Name | ast.Attribute):
        return True
    if isinstance(node, ast.UnaryOp):
        return _built(node.operand, in_call)
    if isinstance(node, ast.Tuple | ast.List):
        return all(_built(e, in_call) for e in node.elts)
    if isinstance(node, ast.Call):
        args = [*node.args, *(k.value for k in node.keywords)]
        return _builds(node) and all(_built(a, True) for a in args)
    if isinstance(node, ast.BinOp):
        sides = (node.left, node.right)
        return (in_call or any(map(_builds, sides))) and all(_built(s, in_call) for s in sides)
    return False


def _is_setting(code: str) -> bool:
    """Whether the code only sets values (the D1 rule); False when it does not parse alone."""
    try:
        statements = ast.parse(textwrap.dedent(code)).body
    except SyntaxError:
        return False
    for st in statements:
        value = st.value if isinstance(st, ast.Assign | ast.AnnAssign | ast.Expr) else None
        holds = value is not None and any(
            (isinstance(n, ast.Constant) and type(n.value) in (int, float))
            or (isinstance(n, ast.Call) and _call_name(n) in _INIT_CALLS)
            for n in ast.walk(value)
        )  # a number or a built tensor: ``a = b`` sets nothing
        registers = not isinstance(st, ast.Expr) or _call_name(value) in _INIT_CALLS
        if value is None or not (holds and registers and _built(value)):
            return False
    return bool(statements)


def snippet_dimension(snippet: Snippet, children: int) -> str:
    """:data:`DIMENSION_RULE` on the snippet's code, its name and how many snippets it holds."""
    if _is_setting(snippet.code):
        return "D1"
    if children >= 2:
        return "D4"
    calls = {c.lower() for c in re.findall(r"([A-Za-z_]\w*)\s*\(", snippet.code)}
    name_words = set(re.findall(r"[a-z]+", snippet.name.lower()))
    return "D3" if (name_words | calls) & _PROTOCOL_WORDS else "D2"


# --- SAUs, their check and the reference submission ------------------------------------------


def scaffold(paper: RCBPaper) -> dict[str, bytes]:
    """The benchmark's files besides the annotated ones (tests, references, context code, data),
    without the paper, RCB's settings, docs and images."""
    every = {p: t.encode("utf-8") for p, t in paper.files.items()} | paper.binary
    return {
        p: data
        for p, data in sorted(every.items())
        if p not in paper.annotated and not _NOT_SCAFFOLD.search(p)
    }


_CHECK = '''"""{paper}: the authors' unit tests ({entry}, ResearchCodeBench) pass on this submission."""
import base64, json, os, re, subprocess, sys, zlib

for path, module in {annotated}.items():
    if not os.path.isfile(path):
        raise ModuleNotFoundError("the submission has no " + path, name=module)
# the benchmark's other files (its tests, the authors' references they compare with, context
# code, data), written over the submission's: only the annotated files are the agent's
FILES = json.loads(zlib.decompress(base64.b64decode("{blob}")))
for path, data in FILES.items():
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(data.encode("latin-1"))
try:
    proc = subprocess.run([sys.executable, "{entry}"], capture_output=True, text=True,
                          errors="replace", timeout={timeout})
except subprocess.TimeoutExpired:
    raise AssertionError("the authors' tests did not finish in {timeout} s") from None
out = proc.stdout + proc.stderr
said = [w for w in {fail_words} if w in out]
if proc.returncode != 0 or said:
    for name in re.findall(r"ModuleNotFoundError: No module named '([\\w.]+)'", out):
        top = name.split(".")[0]
        if not (os.path.isfile(top + ".py") or os.path.isdir(top)):  # the env's, not the code's
            raise ImportError("the sandbox env lacks %r, which the tests need" % name, name=name)
    if "NotImplementedError" in out:
        raise NotImplementedError("the authors' tests hit a stub: " + out[-1500:])
    raise AssertionError("the authors' tests fail (exit %d%s): %s" % (
        proc.returncode, ", output says " + ", ".join(said) if said else "", out[-1500:]))
print("the authors' tests pass ({entry})")
'''


def authors_check(paper: RCBPaper, timeout_s: float = TEST_TIMEOUT_S) -> str:
    """The check of every SAU of a paper: write the scaffold, run the authors' tests as RCB does
    (``python <entry>`` in the folder, ``timeout_s`` at most) and pass on RCB's rule
    (:data:`FAIL_WORDS`)."""
    files = {p: data.decode("latin-1") for p, data in scaffold(paper).items()}
    packed = zlib.compress(json.dumps(files, sort_keys=True).encode(), 9)
    modules = {p: str(PurePosixPath(p).with_suffix("")).replace("/", ".") for p in paper.annotated}
    return _CHECK.format(
        paper=paper.paper,
        entry=paper.test_entry_point,
        annotated=json.dumps(modules),
        blob=base64.b64encode(packed).decode(),
        timeout=f"{timeout_s:g}",
        fail_words=json.dumps(list(FAIL_WORDS)),
    )


def snippet_saus(paper: RCBPaper, timeout_s: float = TEST_TIMEOUT_S) -> list[dict[str, Any]]:
    """One SAU per annotated snippet (``contracts.SAU_COLUMNS``), grounded as the workflow will;
    ``parent`` is the id of the snippet's enclosing snippet, and every SAU's check the paper's
    :func:`authors_check`."""
    from sabench.contracts import SAU_COLUMNS
    from sabench.grounding import PaperText, ground

    index, text = PassageIndex(paper.text), PaperText(paper.text)
    check = authors_check(paper, timeout_s)
    ids: dict[tuple[str, str], str] = {}
    used: Counter[str] = Counter()
    rows = []
    for s in paper.snippets:
        base = f"{paper.paper}-{re.sub(r'[^a-z0-9]+', '-', s.name.lower()).strip('-') or 'snippet'}"
        used[base] += 1
        sau_id = ids[(s.path, s.name)] = base if used[base] == 1 else f"{base}-{used[base]}"
        children = sum(1 for t in paper.snippets if t.parent == s.name and t.path == s.path)
        quote = index.best(s)[0]
        # the passage first, the snippet named without backticks (backticks name code to find)
        claim = f'{quote or "The method of the paper"} (snippet "{s.name}" of {s.path})'
        row = dict.fromkeys(SAU_COLUMNS)
        row.update(
            paper=paper.paper,
            sau_id=sau_id,
            dimension=snippet_dimension(s, children),
            claim=claim,
            source=quote or NO_PASSAGE,
            weight=float(max(s.n_lines, 1)),
            origin="researchcodebench",
            category=s.path,
            parent=ids.get((s.path, s.parent)) if s.parent else None,
            grounded=ground(claim, quote or NO_PASSAGE, text).grounded,
            check=check,
        )
        rows.append(row)
    return rows


def reference_submission(paper: RCBPaper, dest: Path) -> Path:
    """The authors' code as a submission: the annotated files without markers, and the scaffold
    (tests, references, context code, data); the authors' tests pass on it."""
    dest = Path(dest)
    files = {p: strip_markers(paper.files[p]).encode("utf-8") for p in paper.annotated}
    for rel, data in (files | scaffold(paper)).items():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
    return dest


# --- the leaderboard ------------------------------------------------------------------------


def stats_path(snapshot: Snapshot) -> str:
    """The newest ``outputs/<run>/<date>/overall_stats.json`` (RCB's 20llms_greedy run first)."""
    found = sorted(n for n in snapshot.list("outputs") if n.endswith("/overall_stats.json"))
    greedy = [n for n in found if "/20llms_greedy/" in n]
    if not found:
        raise UserError(snapshot.root, "outputs", "no overall_stats.json (per-snippet results)")
    return (greedy or found)[-1]


def leaderboard(snapshot: Snapshot, stats: str | None = None) -> list[dict[str, Any]]:
    """Per model, RCB's scaled line rate and success rate (percent) recomputed from the
    per-snippet results as RCB's ``PSet._show_overall_success_rates`` does, beside the published
    ones (``overall_scores``) and their differences; ``paper_max_diff`` compares the per-paper
    rates of ``summarize_results`` (completion i of each snippet) with ``problem_scores``."""
    data = json.loads(snapshot.read(stats or stats_path(snapshot)))
    acc: dict[str, dict[int, list[int]]] = {}  # model -> completion -> lines ok, lines, ok, n
    paper_diffs: dict[str, list[float]] = {}
    for problem in data["results"].values():
        for model, results in problem["results"].items():
            per_paper: dict[int, list[int]] = {}
            for entries in results["results"].values():
                for i, e in enumerate(entries):
                    lines, ok = e["snippet_code_line_count"], int(bool(e["passed"]))
                    a = acc.setdefault(model, {}).setdefault(e["completion_idx"], [0] * 4)
                    a[0], a[1], a[2], a[3] = a[0] + lines * ok, a[1] + lines, a[2] + ok, a[3] + 1
                    p = per_paper.setdefault(i, [0, 0])
                    p[0], p[1] = p[0] + lines * ok, p[1] + lines
            rates = [100 * ok / n if n > 0 else 0 for ok, n in per_paper.values()] or [0.0]
            published = problem.get("problem_scores", {}).get(model, {}).get("mean")
            if published is not None:
                paper_diffs.setdefault(model, []).append(abs(sum(rates) / len(rates) - published))
    rows = []
    for model, completions in acc.items():
        line = [100 * a[0] / a[1] for a in completions.values() if a[1] > 0]
        task = [100 * a[2] / a[3] for a in completions.values() if a[3] > 0]
        published = data.get("overall_scores", {}).get(model, {})
        row: dict[str, Any] = {
            "model": model,
            "name": published.get("llm_cfg", {}).get("pretty_name", model),
            "n_snippets": sum(a[3] for a in completions.values()),
            "n_lines": sum(a[1] for a in completions.values()),
            "scaled_line_rate": sum(line) / len(line) if line else None,
            "success_rate": sum(task) / len(task) if task else None,
            "published_line_rate": published.get("line_rates", {}).get("mean"),
            "published_success_rate": published.get("task_rates", {}).get("mean"),
        }
        for key, ours, theirs in (
            ("line_rate_diff", "scaled_line_rate", "published_line_rate"),
            ("success_rate_diff", "success_rate", "published_success_rate"),
        ):
            both = row[ours] is not None and row[theirs] is not None
            row[key] = abs(row[ours] - row[theirs]) if both else None
        row["paper_max_diff"] = max(paper_diffs.get(model, []), default=None)
        rows.append(row)
    return sorted(rows, key=lambda r: -(r["scaled_line_rate"] or 0.0))


# --- the command ----------------------------------------------------------------------------


def workflow_config(out: Path, test_timeout_s: float) -> str:
    """The workflow's settings for the export (``snakemake --configfile``): its folders, the static
    and exec judges, and the exec judge's time per check (``judge_settings.exec.time_limit_s``)
    above the tests' own limit, so that slow tests end as the check says (a failure, as in RCB),
    not as a check killed at its limit (``error``, and run again for every SAU of the paper)."""
    limit = test_timeout_s + CHECK_START_S
    config = {
        "papers_dir": f"{out}/papers",
        "saus_path": f"{out}/saus/{{paper}}.json",
        "agents_file": f"{out}/agents.yaml",
        "judges": ["static", "exec"],
        "judge_settings": {"exec": {"time_limit_s": int(limit) if limit == int(limit) else limit}},
    }
    head = (
        "# ResearchCodeBench as exported by sabench.peer_data.researchcodebench, merged over\n"
        "# config/config.yaml by:  snakemake --cores 2 --configfile <this file>\n"
        f"# A check gives the authors' tests {test_timeout_s:g} s (--test-timeout), the exec judge\n"
        f"# each check {CHECK_START_S} s more (time_limit_s). For slow papers export again with a\n"
        "# larger --test-timeout: raising time_limit_s alone changes nothing.\n"
    )
    return head + yaml.safe_dump(config, sort_keys=False)


#: The SAU file's fields (``schemas/saus.schema.yaml``) and the row columns they come from.
SAU_FILE_FIELDS = {"id": "sau_id"} | {
    k: k for k in ("dimension", "claim", "source", "weight", "origin", "category", "parent")
}


def sau_file(paper: str, rows: list[dict[str, Any]], check_file: str) -> dict[str, Any]:
    """A paper's SAU file (the curated format): its rows, their check named by ``check_file``
    (one file for the paper, not a copy of its embedded files in every SAU)."""
    saus = [
        {k: r[v] for k, v in SAU_FILE_FIELDS.items() if r[v] is not None}
        | {"check_file": check_file}
        for r in rows
    ]
    return {"paper": paper, "saus": saus}


def export(
    data: Path, out: Path, papers: list[str] | None = None, test_timeout_s: float = TEST_TIMEOUT_S
) -> dict[str, Any]:
    """Everything the module docstring lists, under ``out``; a summary of what was written."""
    from sabench.io import write_json, write_text

    if not (math.isfinite(test_timeout_s) and test_timeout_s > 0):
        raise UserError(None, "--test-timeout", f"must be a positive number, not {test_timeout_s}")
    snapshot, out = open_snapshot(data), Path(out).resolve()
    loaded = load_papers(snapshot, papers)
    every = []
    for paper in loaded:
        rows = snippet_saus(paper, test_timeout_s)
        check_file = f"checks/{paper.paper}.py"  # relative to saus/, where the workflow looks
        check = rows[0]["check"] if rows else authors_check(paper, test_timeout_s)
        write_text(out / "saus" / check_file, check)
        write_json(out / "saus" / f"{paper.paper}.json", sau_file(paper.paper, rows, check_file))
        write_text(out / "papers" / paper.paper / "paper.md", paper.text)
        reference_submission(paper, out / "reference" / paper.paper)
        every += rows
    agent = {"kind": "replay", "path": f"{out}/reference/{{paper}}"}
    agent["description"] = "ResearchCodeBench: the authors' code (markers stripped)"
    write_text(out / "agents.yaml", yaml.safe_dump({"rcb_reference": agent}, sort_keys=False))
    write_text(out / "config.yaml", workflow_config(out, test_timeout_s))
    has_results = any(n.endswith("/overall_stats.json") for n in snapshot.list("outputs"))
    board = leaderboard(snapshot) if has_results else []
    write_json(out / "leaderboard.json", board)
    diffs = [r[k] for r in board for k in ("line_rate_diff", "success_rate_diff")]
    return {
        "papers": len(loaded),
        "snippets": len(every),
        "grounded": sum(bool(r["grounded"]) for r in every),
        "dimensions": dict(sorted(Counter(r["dimension"] for r in every).items())),
        "models": len(board),
        "published_max_diff": max((d for d in diffs if d is not None), default=float("nan")),
    }


@command
def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="RCB's git directory or checkout")
    parser.add_argument("--out", type=Path, required=True, help="the folder to write")
    parser.add_argument("--papers", help="comma-separated paper ids (default: all)")
    parser.add_argument(
        "--test-timeout",
        type=float,
        default=TEST_TIMEOUT_S,
        help=f"seconds the authors' tests may take in a check (default {TEST_TIMEOUT_S}); "
        f"config.yaml gives each check {CHECK_START_S} s more",
    )
    args = parser.parse_args(argv)
    papers = [p for p in (args.papers or "").split(",") if p] or None
    summary = export(args.data, args.out, papers, args.test_timeout)
    dims = ",".join(f"{k}:{v}" for k, v in summary["dimensions"].items())
    print(
        f"researchcodebench: papers={summary['papers']} snippets={summary['snippets']} "
        f"grounded={summary['grounded']} dimensions={dims} models={summary['models']} "
        f"published_max_diff={summary['published_max_diff']:.2g}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
