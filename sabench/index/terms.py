"""Terms: identifiers and words, split and normalised so that code and prose meet
(``lr`` and ``learningRate`` give the same terms as "learning rate" in prose)."""

from __future__ import annotations

import re
from functools import lru_cache

from sabench.values import words

GREEK = dict(
    zip(
        "αβγδεϵζηθικλμνξπρστφϕχψωΣΔΩΛΘΦΨΓ",
        [
            "alpha",
            "beta",
            "gamma",
            "delta",
            "epsilon",
            "epsilon",
            "zeta",
            "eta",
            "theta",
            "iota",
            "kappa",
            "lambda",
            "mu",
            "nu",
            "xi",
            "pi",
            "rho",
            "sigma",
            "tau",
            "phi",
            "phi",
            "chi",
            "psi",
            "omega",
            "sigma",
            "delta",
            "omega",
            "lambda",
            "theta",
            "phi",
            "psi",
            "gamma",
        ],
        strict=True,
    )
)
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_SUBSCRIPTS = str.maketrans("₀₁₂₃₄₅₆₇₈₉ₜₖₙᵢⱼ⁰¹²³⁴⁵⁶⁷⁸⁹", "0123456789tknij0123456789")

#: General ML abbreviations and spellings -> canonical term(s), one "word: terms" per line.
#: An empty right side drops the word ("num_epochs" is "epoch"). No paper-specific names here.
_SYNONYM_TABLE = """
lr lrs learningrate: learning rate
l1: l1
l2: l2
bs bsz batchsize: batch size
wd weightdecay: weight decay
lam lmbda lmda lamda: lambda
reg regularisation regularizer regulariser regularize regularise: regularization
nepoch nepochs ep epoch: epoch
dim dims dimensionality: dimension
hid: hidden
hdim: hidden dimension
iter iters itr niter iteration: iteration
steps nsteps: step
timesteps: timestep
eps: epsilon
temp: temperature
opt optim optimiser: optimizer
ckpt: checkpoint
conf configuration: config
img imgs: image
centre centres center centers: center
seq: sequence
len: length
init initialisation initialize initialise initial: initialization
emb embed embd: embedding
attn: attention
ffn ff: feedforward
conv: convolution
enc: encoder
dec: decoder
gen: generator
disc: discriminator
val valid: validation
eval evaluate: evaluation
acc: accuracy
prob probs: probability
grad grads: gradient
norm normalisation normalize normalise: normalization
avg average: mean
std stdev: deviation
ce xent crossentropy: cross entropy
kld: kl
nll: negative likelihood
warm: warmup
nlayer depth: layer
nhead heads: head
tok toks: token
param params: parameter
coef coeff: coefficient
thresh thr: threshold
res: resolution
sched schedule: scheduler
drop: dropout
fn func: function
src: source
tgt trg: target
pred preds predict: prediction
gt: ground truth
obs: observation
rew: reward
env envs: environment
freq: frequency
num n number nb no total:
"""
SYNONYMS: dict[str, tuple[str, ...]] = {}
#: Words too common in prose or code to carry evidence.
STOP = words(
    "a an the of to in on at by for with from as is are be been being was were it its this "
    "that these those and or not no nor but if then else than so such via per each every all "
    "any both into onto over under between across through within without using use used uses "
    "we our they their which who whom whose what when where how while also only just can "
    "could may might must shall should will would do does did done has have had having there "
    "here i e g eg ie etc vs self cls def return import class none true false pass elif "
    "lambda_ yield try except finally raise assert del global nonlocal async await print args "
    "kwargs super np torch nn tf jax numpy os sys math get set new make made out up down one "
    "two three four five six seven eight nine ten first second third using based following "
    "follow follows given see e.g."
)


def _latin(name: str) -> str:
    name = name.translate(_SUBSCRIPTS)
    for g, latin in GREEK.items():
        if g in name:
            name = name.replace(g, f"_{latin}_")
    return name


@lru_cache(maxsize=200_000)
def split_identifier(name: str) -> tuple[str, ...]:
    """``learningRate`` / ``learning_rate`` / ``LearningRate`` -> ``("learning", "rate")``."""
    parts: list[str] = []
    for chunk in re.split(r"[^0-9A-Za-z]+", _latin(name)):
        if chunk:
            parts.extend(p.lower() for p in _CAMEL_RE.findall(chunk))
    return tuple(parts)


_SUFFIXES = (
    ("izations", "iz"),
    ("isations", "iz"),
    ("ization", "iz"),
    ("isation", "iz"),
    ("ings", ""),
    ("ing", ""),
    ("ions", ""),
    ("ion", ""),
    ("ences", ""),
    ("ence", ""),
    ("ments", ""),
    ("ment", ""),
    ("ers", ""),
    ("er", ""),
    ("ed", ""),
    ("es", ""),
    ("s", ""),
)


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """A light stemmer so that prose and code meet: ``converged``/``convergence`` -> ``converg``,
    ``standardise``/``standardization`` -> ``standardiz``, ``epochs`` -> ``epoch``."""
    w = word
    if len(w) <= 4 or not w.isalpha():
        return w
    if w.endswith(("ss", "us", "is")) and not w.endswith(("ises", "izes")):
        return w
    for suffix, repl in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 4:
            w = w[: len(w) - len(suffix)] + repl
            doubled = len(w) > 4 and w[-1] == w[-2] and w[-1] not in "lsz"
            if suffix in ("ing", "ings", "ed", "er", "ers") and doubled:
                w = w[:-1]  # "splitting" -> "split"
            break
    if w.endswith("ise"):
        w = w[:-3] + "iz"
    elif w.endswith("is") and len(w) > 5 and not word.endswith(("is", "sis")):
        w = w[:-2] + "iz"
    elif w.endswith("e") and len(w) > 4:
        w = w[:-1]
    return w


for _line in _SYNONYM_TABLE.strip().splitlines():
    _left, _right = _line.split(":", 1)
    for _word in _left.split():
        SYNONYMS[_word] = tuple(stem(t) for t in _right.split())


@lru_cache(maxsize=200_000)
def normalize_word(word: str) -> tuple[str, ...]:
    """One word -> canonical terms (lowercase, synonyms expanded, stemmed)."""
    w = word.lower()
    if w in SYNONYMS:
        return SYNONYMS[w]
    st = stem(w)
    if st in SYNONYMS:
        return SYNONYMS[st]
    return (st,)


@lru_cache(maxsize=200_000)
def identifier_terms(name: str) -> tuple[str, ...]:
    """Normalised terms of an identifier, stop words kept (a name is short and precise)."""
    out: list[str] = []
    for chunk in re.split(r"[^0-9A-Za-z]+", _latin(name)):
        if not chunk:
            continue
        low = chunk.lower()
        if low in SYNONYMS:
            out.extend(SYNONYMS[low])
            continue
        for part in _CAMEL_RE.findall(chunk):
            out.extend(normalize_word(part))
    return tuple(out)


CHUNK_RE = re.compile(r"[^\W_][\w\-]*|_[\w\-]+")


@lru_cache(maxsize=500_000)
def chunk_info(chunk: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(terms, name keys) of one word-like chunk such as ``MSR-VTT`` or ``num_epochs``."""
    terms: list[str] = []
    for part in chunk.split("-"):
        if part:
            terms.extend(
                t
                for t in identifier_terms(part)
                if len(t) > 1 and t not in STOP and not t.isdigit()
            )
    keys: dict[str, None] = {}  # ordered: postings built from it must not depend on the hash seed
    if not chunk[0].isdigit():
        raw = [p.lower() for p in re.split(r"[_\-]+", chunk) if p]
        camel = [c.lower() for p in re.split(r"[_\-]+", chunk) if p for c in _CAMEL_RE.findall(p)]
        for seq in (raw, camel):
            n = len(seq)
            for i in range(n):
                acc = ""
                for j in range(i, min(n, i + 4)):
                    acc += seq[j]
                    if len(acc) > 1:
                        keys[acc] = None
    return tuple(dict.fromkeys(terms)), tuple(keys)


def text_terms(text: str) -> list[str]:
    """Normalised content terms of a line of code or prose (stop words and 1-letter words dropped)."""
    out: list[str] = []
    for chunk in CHUNK_RE.findall(text):
        out.extend(chunk_info(chunk)[0])
    return out


def squash(name: str) -> str:
    """``blobs-3``, ``blobs_3``, ``Blobs3`` -> ``blobs3``: the key for names of datasets etc."""
    return re.sub(r"[^0-9a-z]", "", name.lower())


def line_keys(text: str) -> set[str]:
    """Squashed names in a line: each chunk and every run of up to 4 of its parts."""
    keys: set[str] = set()
    for chunk in CHUNK_RE.findall(text):
        keys.update(chunk_info(chunk)[1])
    return keys


def leaf_terms(name: str) -> tuple[str, ...]:
    """Terms of the last part of a dotted name or CLI flag (``self.opt.lr`` -> the terms of ``lr``)."""
    leaf = name.rsplit(".", 1)[-1].lstrip("-")
    return tuple(t for t in identifier_terms(leaf) if t != "self")
