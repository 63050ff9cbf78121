"""Extract one folder of a tar archive (``.tar``, ``.tar.gz``, ...) into a submission, safely.

A replayed archive is data written by an agent, so nothing in it may land outside the destination:
members with an absolute path or a ``..`` component, links that point outside the extracted folder,
hard links to members outside it, devices and FIFOs are refused (counted and named, never extracted).
Regular files get plain permissions (0644, or 0755 when executable); owners and times are not kept.
VCS data and caches (``.git``, ``__pycache__``, ``*.pyc``) are skipped like a folder replay skips them.
"""

from __future__ import annotations

import fnmatch
import io
import os
import posixpath
import shutil
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

#: Names never extracted (the same as a folder replay ignores).
IGNORED_NAMES = (".git", "__pycache__", "*.pyc", ".ipynb_checkpoints")
#: Extraction stops (the rest is refused) past this many bytes: an archive bomb is a refusal.
MAX_TOTAL_BYTES = 4 * 1024**3
#: A gzip archive that inflates to at most this many bytes is inflated in memory before its members
#: are read: reading tar headers from a gzip stream costs more than inflating it whole, and a
#: paper's replay reads each agent's archive (SA-Bench's hold every paper). Larger ones stream.
IN_MEMORY_BYTES = 256 * 1024**2


@dataclass
class Extracted:
    """What one extraction did."""

    n_files: int = 0
    n_bytes: int = 0
    found: bool = False  # whether the archive holds the member folder at all
    refused: list[tuple[str, str]] = field(default_factory=list)  # (member name, why)


def clean_member(member: str) -> str:
    """A member folder as a clean relative POSIX path ('' = the whole archive).

    Raises ValueError for an absolute path or one with a ``..`` component.
    """
    text = member.replace("\\", "/").strip()
    if text.startswith("/"):
        raise ValueError(f"archive member {member!r} is an absolute path")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ValueError(f"archive member {member!r} has a '..' component")
    return "/".join(parts)


def _ignored(parts: list[str]) -> bool:
    return any(fnmatch.fnmatch(p, pat) for p in parts for pat in IGNORED_NAMES)


def _relative(name: str, prefix: str) -> str | None:
    """``name`` relative to the member folder ``prefix``, or None when outside it."""
    name = name.replace("\\", "/")
    while name.startswith("./"):
        name = name[2:]
    name = name.rstrip("/")
    if not prefix:
        return name
    if name == prefix:
        return ""
    if name.startswith(prefix + "/"):
        return name[len(prefix) + 1 :]
    return None


def _unsafe(rel: str) -> str | None:
    if rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        return "absolute path"
    if "\x00" in rel:
        return "NUL in name"
    if ".." in rel.split("/"):
        return "'..' in path"
    return None


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def _open(archive: Path | str) -> tarfile.TarFile:
    """The archive as a tar file: a small single-stream gzip inflated in memory, else read as
    ``tarfile`` streams it (any compression)."""
    path = Path(archive)
    if path.stat().st_size <= IN_MEMORY_BYTES:
        with open(path, "rb") as fh:
            data = fh.read()
        if data[:2] == b"\x1f\x8b":
            inflate = zlib.decompressobj(wbits=31)
            try:
                raw = inflate.decompress(data, IN_MEMORY_BYTES)
            except zlib.error:
                raw = None  # tarfile names what is wrong with it
            if raw is not None and inflate.eof and not inflate.unused_data:
                return tarfile.open(fileobj=io.BytesIO(raw), mode="r:")
    return tarfile.open(path, "r:*")


def extract_member(
    archive: Path | str, member: str, dest: Path | str, *, max_bytes: int = MAX_TOTAL_BYTES
) -> Extracted:
    """Extract the folder ``member`` of ``archive`` into the existing folder ``dest``.

    ``member`` ``''`` extracts the whole archive. Paths are taken relative to ``member``
    (``paper/src/a.py`` -> ``dest/src/a.py``). Returns counts and the refused members.
    """
    prefix = clean_member(member)
    dest = Path(dest)
    root = os.path.realpath(dest)
    out = Extracted()
    with _open(archive) as tar:
        for info in tar:
            rel = _relative(info.name, prefix)
            if rel is None:
                continue
            out.found = True
            if rel == "":
                continue
            why = _unsafe(rel)
            if why:
                out.refused.append((info.name, why))
                continue
            parts = rel.split("/")
            if _ignored(parts):
                continue
            target = os.path.join(root, *parts)
            parent = os.path.dirname(target)
            if info.isdir():
                os.makedirs(target, exist_ok=True)
                if not _inside(root, os.path.realpath(target)):
                    out.refused.append((info.name, "folder resolves outside the submission"))
                continue
            if info.isreg():
                if out.n_bytes + info.size > max_bytes:
                    out.refused.append((info.name, f"over the {max_bytes} byte limit"))
                    continue
                os.makedirs(parent, exist_ok=True)
                if not _inside(root, os.path.realpath(parent)):
                    out.refused.append((info.name, "parent folder resolves outside the submission"))
                    continue
                if os.path.lexists(target) and (
                    os.path.islink(target) or not os.path.isfile(target)
                ):
                    out.refused.append((info.name, "would overwrite a link or folder"))
                    continue
                src = tar.extractfile(info)
                if src is None:
                    continue
                with src, open(target, "wb") as fh:
                    shutil.copyfileobj(src, fh)
                os.chmod(target, 0o755 if info.mode & 0o111 else 0o644)
                # the archive's times: a re-extracted submission looks unchanged to the judges'
                # cache (sabench.judges.batch) and to anyone comparing the two
                os.utime(target, (info.mtime, info.mtime))
                out.n_files += 1
                out.n_bytes += info.size
            elif info.issym():
                link_target = info.linkname.replace("\\", "/")
                if link_target.startswith("/"):
                    out.refused.append((info.name, "link to an absolute path"))
                    continue
                resolved = posixpath.normpath(posixpath.join(posixpath.dirname(rel), link_target))
                if resolved == ".." or resolved.startswith("../"):
                    out.refused.append((info.name, "link pointing outside the submission"))
                    continue
                os.makedirs(parent, exist_ok=True)
                real_parent = os.path.realpath(parent)
                physical = os.path.normpath(os.path.join(real_parent, link_target))
                if not _inside(root, real_parent) or not _inside(root, physical):
                    out.refused.append((info.name, "link pointing outside the submission"))
                    continue
                if os.path.lexists(target):
                    out.refused.append((info.name, "link would replace a path"))
                    continue
                os.symlink(link_target, target)
            elif info.islnk():
                source_rel = _relative(info.linkname, prefix)
                source = os.path.join(root, *source_rel.split("/")) if source_rel else None
                if (
                    not source_rel
                    or _unsafe(source_rel)
                    or not os.path.isfile(source or "")
                    or os.path.islink(source or "")
                    or not _inside(root, os.path.realpath(source or ""))
                ):
                    out.refused.append((info.name, "hard link to a member outside the folder"))
                    continue
                os.makedirs(parent, exist_ok=True)
                if not _inside(root, os.path.realpath(parent)) or os.path.lexists(target):
                    out.refused.append((info.name, "hard link would replace or escape a path"))
                    continue
                shutil.copyfile(source, target)
                out.n_files += 1
            else:
                out.refused.append((info.name, "not a file, folder or link"))
    return out
