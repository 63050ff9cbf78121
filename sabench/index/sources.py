"""What no computation looks like: decoders of literal blobs (run here, bounded, never unpickling),
the calls and methods that only reshape a value, and JSON text's numbers. The tables of
:mod:`sabench.index.provenance`."""

from __future__ import annotations

import ast
import base64
import binascii
import bz2
import codecs
import json
import lzma
import re
import struct
import zlib
from typing import Any

NONE: Any = object()  # no known concrete value
MAX_BLOB = 1 << 20  # decoded or read at most this many bytes
DOC_EXT = (".md", ".markdown", ".rst", ".tex", ".html", ".htm", ".pdf", ".adoc")


def is_num(v: Any) -> bool:
    return type(v) in (int, float)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


def number_items(data: Any, prefix: str) -> list[tuple[str, float]]:
    """The numbers of a (nested) dict, keys dotted."""
    out: list[tuple[str, float]] = []
    for k, x in data.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(x, dict):
            out += number_items(x, key)
        elif is_num(x):
            out.append((key, float(x)))
    return out


# --- static decoding of literal blobs (bounded; never unpickles) ---------------------------------


def _bytes(v: Any) -> bytes | None:
    if isinstance(v, bytes | bytearray):
        return bytes(v[:MAX_BLOB])
    if isinstance(v, str) and len(v) <= MAX_BLOB:
        return v.encode("latin-1", "ignore")
    return None


def _inflate(data: bytes, kind: str) -> bytes | None:
    try:
        if kind == "zlib":
            return zlib.decompressobj().decompress(data, MAX_BLOB)
        if kind == "gzip":
            return zlib.decompressobj(wbits=31).decompress(data, MAX_BLOB)
        if kind == "bz2":
            return bz2.BZ2Decompressor().decompress(data, MAX_BLOB)
        return lzma.LZMADecompressor().decompress(data, MAX_BLOB)
    except (zlib.error, OSError, ValueError, EOFError, lzma.LZMAError):
        return None


B64 = {
    "b64decode": base64.b64decode,
    "standard_b64decode": base64.standard_b64decode,
    "urlsafe_b64decode": base64.urlsafe_b64decode,
    "decodebytes": base64.decodebytes,
    "b32decode": base64.b32decode,
    "b16decode": base64.b16decode,
    "b85decode": base64.b85decode,
    "a85decode": base64.a85decode,
    "a2b_base64": binascii.a2b_base64,
    "unhexlify": binascii.unhexlify,
    "a2b_hex": binascii.a2b_hex,
    "fromhex": bytes.fromhex,
}
#: decoder name -> the name of its encoding in ``how``
DECODERS = {
    "b32decode": "base32",
    "b16decode": "hex",
    "b85decode": "base85",
    "a85decode": "ascii85",
    "unhexlify": "hex",
    "a2b_hex": "hex",
    "fromhex": "hex",
    "zlib.decompress": "zlib",
    "gzip.decompress": "gzip",
    "bz2.decompress": "bz2",
    "lzma.decompress": "lzma",
    "pickle.loads": "pickle",
    "marshal.loads": "marshal",
    "dill.loads": "pickle",
    "cloudpickle.loads": "pickle",
    "joblib.loads": "pickle",
    "struct.unpack": "struct",
    "struct.unpack_from": "struct",
    "numpy.frombuffer": "binary",
    "codecs.decode": "codecs",
}
CODEC_MODULES = ("base64", "binascii", "bytes", "bytearray")
PARSERS = ("json.loads", "ast.literal_eval", "eval", "orjson.loads", "ujson.loads")
_TEXT_CODECS = ("rot13", "rot_13", "hex", "hex_codec", "base64", "base64_codec", "zlib")


def decode(kind: str, attr: str, arg: Any, extra: list[Any]) -> Any:
    """The concrete result of a decoder applied to a literal, or NONE."""
    try:
        if attr in B64 and kind not in ("codecs.decode",):
            if attr == "fromhex":
                return bytes.fromhex(arg) if isinstance(arg, str) else NONE
            raw = _bytes(arg)
            return NONE if raw is None else B64[attr](raw)
        if kind in ("zlib.decompress", "gzip.decompress", "bz2.decompress", "lzma.decompress"):
            raw = _bytes(arg)
            return NONE if raw is None else _inflate(raw, kind.split(".")[0]) or NONE
        if kind == "codecs.decode":
            enc = str(extra[0]).lower() if extra and isinstance(extra[0], str) else ""
            if enc.replace("-", "_") in _TEXT_CODECS:
                out = codecs.decode(arg, enc)
                return out if len(out) <= MAX_BLOB else NONE
        if kind in ("struct.unpack", "struct.unpack_from") and isinstance(arg, str):
            raw = _bytes(extra[0]) if extra else None
            return NONE if raw is None else struct.unpack_from(arg, raw)
    except (ValueError, TypeError, struct.error, binascii.Error, LookupError):
        pass
    return NONE


def parse_text(kind: str, text: Any) -> Any:
    """``json.loads``/``literal_eval``/``eval`` of a literal text, or NONE."""
    if isinstance(text, bytes | bytearray):
        text = bytes(text).decode("utf-8", "ignore")
    if not isinstance(text, str) or len(text) > MAX_BLOB:
        return NONE
    try:
        if kind.endswith("json.loads") or kind.endswith(".loads"):
            return json.loads(text)
        return ast.literal_eval(text.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        pass
    return NONE


# --- JSON text ---------------------------------------------------------------------------------

_PAIR_RE = re.compile(
    r'\\?"([A-Za-z_][\w.\-/:]*)\\?"\s*:\s*(-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?=\s*[,}\n]|\s*$)'
)


def json_numbers(text: str) -> list[tuple[str, float]]:
    """The numeric values of a JSON object written as text (nested keys dotted); a text that is no
    object gives its ``"key": number`` pairs (a template with ``$VAR`` values gives only the
    literal ones)."""
    if "{" not in text:
        return []
    span = text[text.find("{") : text.rfind("}") + 1]
    for candidate in (text.strip(), span, span.replace('\\"', '"')):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        return number_items(data, "") if isinstance(data, dict) else []
    return [(k, float(v)) for k, v in _PAIR_RE.findall(text)]


# --- paths ---------------------------------------------------------------------------------------


def basename(text: str | None) -> str | None:
    """The last component of a resolved path text, unless part of it is unknown."""
    if not text:
        return None
    name = text.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return None if "*" in name or not name else name


#: calls whose result is their arguments' value reshaped: no computation of their own
KEEP = _words(
    "float int str round abs complex bytes bytearray list tuple iter next reversed "
    "enumerate zip Decimal decimal.Decimal Fraction fractions.Fraction numpy.float64 "
    "numpy.float32 numpy.double numpy.float16 json.dumps copy.copy copy.deepcopy re.search "
    "re.match re.fullmatch re.findall re.finditer re.split re.sub re.compile "
)
NUMERIC = {"float", "int", "round", "abs", "Decimal", "decimal.Decimal", "Fraction"}
NUMERIC |= {"fractions.Fraction", "numpy.float64", "numpy.float32", "numpy.double"}
#: methods that reshape their object (text, a match, a dict): no computation of their own
KEEP_METHODS = _words(
    "split rsplit splitlines strip lstrip rstrip replace lower upper group groups groupdict "
    "findall finditer search match fullmatch partition rpartition removeprefix removesuffix "
    "read readline readlines decode encode get item tolist copy format join keys values "
    "items pop "
)
ROOTS = {"bytes", "bytearray", "str", "int", "float", "dict", "sys", "os"}
LOADERS = {"json.load", "yaml.safe_load", "yaml.load", "yaml.full_load", "tomllib.load"}
LOADERS |= {"toml.load", "tomli.load"}


def inflate_any(data: bytes) -> bytes:
    """``data`` decompressed when it starts with a gzip, zlib, bz2 or xz header, else itself."""
    for magic, kind in ((b"\x1f\x8b", "gzip"), (b"BZh", "bz2"), (b"\xfd7zXZ", "lzma")):
        if data.startswith(magic):
            return _inflate(data, kind) or data
    if len(data) > 1 and data[0] == 0x78 and (data[0] * 256 + data[1]) % 31 == 0:
        return _inflate(data, "zlib") or data
    return data


# --- paths ---------------------------------------------------------------------------------------


def write_mode(call: ast.Call, at: int) -> bool:
    mode = call.args[at] if len(call.args) > at else None
    mode = next((k.value for k in call.keywords if k.arg == "mode"), mode)
    if mode is None:
        return False
    if isinstance(mode, ast.Constant) and isinstance(mode.value, str):
        return any(c in mode.value for c in "wax+")
    return True  # an unknown mode: may write


def path_text(node: ast.AST | None, scope: Any = None, depth: int = 0) -> str | None:
    """The path an expression names, ``*`` for the parts that are not constant (a name bound
    once in ``scope``, a provenance scope, is followed)."""
    if node is None or depth > 8:
        return None
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "*"
            for v in node.values
        )
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div | ast.Add):
        a, b = path_text(node.left, scope, depth + 1), path_text(node.right, scope, depth + 1)
        sep = "/" if isinstance(node.op, ast.Div) else ""
        return f"{a or '*'}{sep}{b or '*'}"
    if isinstance(node, ast.Call):
        func = node.func
        fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if fname in ("Path", "PurePath", "PosixPath", "join", "joinpath", "expanduser", "resolve"):
            parts = [path_text(a, scope, depth + 1) or "*" for a in node.args]
            if isinstance(func, ast.Attribute) and fname in ("joinpath", "expanduser", "resolve"):
                parts.insert(0, path_text(func.value, scope, depth + 1) or "*")
            return "/".join(parts) if parts else "*"
        if fname in ("open",) and node.args:
            return path_text(node.args[0], scope, depth + 1)
        if isinstance(func, ast.Attribute) and fname == "open":
            return path_text(func.value, scope, depth + 1)
        return "*"
    if isinstance(node, ast.Name) and scope is not None:
        owner = scope.lookup(node.id)
        binds = owner.binds.get(node.id, []) if owner else []
        if len(binds) == 1 and binds[0][0] == "value":
            return path_text(binds[0][1], binds[0][2], depth + 1)
        return "*"
    return "*"
