"""/submission's size-limited filesystem for one container run: mounted on the host (root only),
the workdir copied in before and back out after, links never followed; the host-side clean-ups
(sparse giants, ownership) the run needs either way."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os
import shutil
import stat
import subprocess
from pathlib import Path

from sabench.sandbox.common import which
from sabench.sandbox.staging import StageError, clear, ignore_special, mount_ext4, mount_tmpfs

#: A fresh, throwaway filesystem per run: no background zeroing of its inode tables.
_mount_fresh_ext4 = functools.partial(mount_ext4, noinit_itable=True)


class OutputStage:
    """/submission's size-limited filesystem, mounted on the host for one run (root only)."""

    def __init__(self, workdir: Path, control: Path, output_limit: int, order: tuple[str, ...]):
        from sabench.sandbox.bwrap import image_capacity

        self.workdir = workdir
        self.mountpoint = control / "stage"
        self.kind = "none"
        self.used, image_bytes, inodes = image_capacity(workdir, output_limit)
        self.fs_bytes = self.used + output_limit
        self.plan = {
            "tools": {
                "mount": which("mount"),
                "umount": which("umount"),
                "mkfs": which("mkfs.ext4"),
                "cp": which("cp"),
            },
            "image_dir": str(workdir.parent),
            "image_bytes": image_bytes,
            "inodes": inodes,
            "fs_bytes": self.fs_bytes,
        }
        self.order = order
        self.notes: list[str] = []
        #: Sparse files larger than the filesystem itself, removed before anything reads them.
        self.giants = 0

    def mount(self) -> Path | None:
        """Mount the first filesystem that works; the folder to bind (None: bind the workdir)."""
        self.mountpoint.mkdir()
        for kind in self.order:
            mounter = {"ext4": _mount_fresh_ext4, "tmpfs": mount_tmpfs}[kind]
            try:
                mounter(self.plan, str(self.mountpoint))
            except (StageError, OSError) as exc:
                self.notes.append(f"output fs {kind} unavailable: {exc}")
                self.unmount()
                continue
            self.kind = "ext4-loop" if kind == "ext4" else "tmpfs"
            data = self.mountpoint / "data"
            data.mkdir(mode=0o755)
            return data
        return None

    def copy_in(self, data: Path, uid: int, gid: int) -> None:
        """The workdir into the stage (links stay links; fifos and devices are skipped)."""
        shutil.copytree(
            self.workdir, data, symlinks=True, ignore=ignore_special, dirs_exist_ok=True
        )
        chown_tree(data, uid, gid)

    def full(self) -> tuple[bool, int, int]:
        vfs = os.statvfs(self.mountpoint)
        total, avail = vfs.f_blocks * vfs.f_frsize, vfs.f_bavail * vfs.f_frsize
        return avail < max(256 * 1024, total // 100) or vfs.f_favail == 0, total, avail

    def copy_out(self, data: Path) -> None:
        """Replace the workdir with what the run left (links kept as links, owned by us)."""
        self.giants += remove_giants(data, self.fs_bytes)
        clear(str(self.workdir))
        done = subprocess.run(
            [self.plan["tools"]["cp"] or "cp", "-a", "--no-preserve=ownership", "--",
             f"{data}/.", f"{self.workdir}/"],
            capture_output=True, text=True, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        if done.returncode:
            raise OSError(f"copy out of /submission failed: {done.stderr.strip()[-500:]}")

    def unmount(self) -> None:
        if os.path.ismount(self.mountpoint) and not _umount_detach(self.mountpoint):
            subprocess.run(
                [self.plan["tools"]["umount"] or "umount", "-l", str(self.mountpoint)],
                capture_output=True,
                stdin=subprocess.DEVNULL,
            )


def _umount_detach(path: Path) -> bool:
    """umount2(path, MNT_DETACH) without a subprocess; False when it failed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.umount2(os.fsencode(str(path)), 2) == 0
    except (OSError, AttributeError):
        return False


def remove_giants(root: Path, limit: int) -> int:
    """Remove regular files whose apparent size exceeds ``limit`` (sparse files claiming more
    than the whole output filesystem: hashing or judging them would read gigabytes of holes)."""
    removed = 0
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with contextlib.suppress(OSError):
                st = os.lstat(path)
                if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                    os.unlink(path)
                    removed += 1
    return removed


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """chown without following links (the tree is agent-written)."""
    os.chown(root, uid, gid)
    for dirpath, dirs, files in os.walk(root):
        for name in dirs + files:
            with contextlib.suppress(OSError):
                os.chown(os.path.join(dirpath, name), uid, gid, follow_symlinks=False)
