"""Whether a model server (an ``api_base``: vLLM, Ollama, any OpenAI-compatible endpoint) answers.

Checked once per server before the workflow's first job (``sabench.lifecycle``): a server that is
down would otherwise cost every run its retries (about 40 s each) before the fault says so.
"""

from __future__ import annotations

import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

#: Seconds a server has to answer the pre-flight request: a server that is up answers at once.
ANSWER_TIMEOUT_S = 3.0


def shown_base(api_base: str) -> str:
    """``api_base`` as it may be printed: without a user or password in it, or a query."""
    parts = urllib.parse.urlsplit(api_base)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


def server_silence(api_base: str, timeout_s: float = ANSWER_TIMEOUT_S) -> str | None:
    """Why ``api_base`` does not answer (``connection refused``, ``no answer within 3 s``), or
    None when it answers. Any HTTP reply is an answer, an error status included (a server that
    wants a key, or has no ``/models``, is up); only no reply at all is silence."""
    url = shown_base(api_base).rstrip("/") + "/models"  # no credentials: any reply will do
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        return "not an http(s) URL"
    try:
        with urllib.request.urlopen(url, timeout=timeout_s):
            return None
    except urllib.error.HTTPError:
        return None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            return f"no answer within {timeout_s:g} s"
        if isinstance(reason, ConnectionRefusedError):
            return "connection refused"
        if isinstance(reason, socket.gaierror):
            return "unknown host"
        return str(getattr(reason, "strerror", None) or reason)
    except TimeoutError:
        return f"no answer within {timeout_s:g} s"
    except (OSError, ValueError) as exc:
        return str(exc) or type(exc).__name__


def silent_servers(
    users: Iterable[tuple[str, str]], timeout_s: float = ANSWER_TIMEOUT_S
) -> list[str]:
    """One line per ``(owner, api_base)`` whose server does not answer, each server asked once
    and all at once (so ten servers cost one timeout, not ten)."""
    users = list(users)
    bases = sorted({base for _, base in users})
    if not bases:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(bases))) as pool:
        answers = pool.map(lambda base: server_silence(base, timeout_s), bases)
        silence = dict(zip(bases, answers, strict=True))
    return [
        f"{owner}: api_base {shown_base(base)} does not answer ({silence[base]}): "
        "start the model server, or correct api_base"
        for owner, base in users
        if silence[base]
    ]
