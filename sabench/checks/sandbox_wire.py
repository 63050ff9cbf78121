
import base64, json, math, os, struct, sys

MAX_MESSAGE = 512 << 20
NUMERIC = "biufc"


def send(fd, msg):
    data = json.dumps(msg).encode("utf-8")
    data = struct.pack(">I", len(data)) + data
    while data:
        data = data[os.write(fd, data):]


def readn(fd, n):
    buf = b""
    while len(buf) < n:
        chunk = os.read(fd, min(n - len(buf), 1 << 20))
        if not chunk:
            return None
        buf += chunk
    return buf


def recv(fd):
    head = readn(fd, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    if size > MAX_MESSAGE:
        raise ValueError("a message of %d bytes from the other process" % size)
    body = readn(fd, size)
    return None if body is None else json.loads(body)


def encode(x, other, depth=0):
    if depth > 64:
        raise TypeError("a value nested deeper than 64 levels")
    if x is None or isinstance(x, bool):
        return None if x is None else bool(x)
    if isinstance(x, int):
        return int(x)
    if isinstance(x, float):
        x = float(x)
        return x if math.isfinite(x) else {"__float__": repr(x)}
    if isinstance(x, str):
        return str(x)
    if isinstance(x, (bytes, bytearray)):
        return {"__bytes__": base64.b64encode(bytes(x)).decode("ascii")}
    np = sys.modules.get("numpy")
    if np is not None and isinstance(x, (np.ndarray, np.generic)) and x.dtype.kind in NUMERIC:
        a = np.ascontiguousarray(x)
        tag = "__nd__" if isinstance(x, np.ndarray) else "__npscalar__"
        return {tag: [a.dtype.str, list(a.shape), base64.b64encode(a.tobytes()).decode("ascii")]}
    if isinstance(x, list):
        return [encode(v, other, depth + 1) for v in x]
    if isinstance(x, tuple):
        return {"__tuple__": [encode(v, other, depth + 1) for v in x]}
    if isinstance(x, dict):
        return {"__dict__": [[encode(k, other, depth + 1), encode(v, other, depth + 1)]
                             for k, v in x.items()]}
    return other(x)


def decode(x, resolve, depth=0):
    if depth > 64:
        raise TypeError("a value nested deeper than 64 levels")
    if isinstance(x, list):
        return [decode(v, resolve, depth + 1) for v in x]
    if not isinstance(x, dict):
        return x
    if "__tuple__" in x:
        return tuple(decode(v, resolve, depth + 1) for v in x["__tuple__"])
    if "__dict__" in x:
        return {freeze(decode(k, resolve, depth + 1)): decode(v, resolve, depth + 1)
                for k, v in x["__dict__"]}
    if "__float__" in x:
        return float(str(x["__float__"]))
    if "__bytes__" in x:
        return base64.b64decode(x["__bytes__"])
    if "__nd__" in x or "__npscalar__" in x:
        import numpy as np
        dtype, shape, data = x.get("__nd__") or x["__npscalar__"]
        dtype = np.dtype(str(dtype))
        if dtype.kind not in NUMERIC:
            raise TypeError("an array of dtype %s is not data" % dtype)
        a = np.frombuffer(base64.b64decode(data), dtype=dtype).reshape([int(n) for n in shape])
        return a.copy() if "__nd__" in x else a[()] if a.ndim == 0 else a.reshape(-1)[0]
    return resolve(x)


def freeze(key):
    return tuple(freeze(k) for k in key) if isinstance(key, list) else key
