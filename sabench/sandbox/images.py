"""Sandbox images: defined in ``images/``, built locally, tagged by content hash, recorded by digest.

Two recipes: ``python`` (``images/python/Dockerfile``: a Python base plus the pinned packages of
``envs/sandbox.txt``) and ``cuda`` (``images/cuda/Dockerfile``: the same on a CUDA + PyTorch base);
and one per agent preset with pinned requirements (``recipe:mini-swe-agent``: ``python`` with
them beside the sandbox's, :func:`recipe_named`).
An image is tagged ``<repository>:<content hash>``, the hash covering the Dockerfile, the
requirements, the base and the build arguments, so it is rebuilt exactly when one of them changes;
a present tag costs one ``inspect``.

Builds never need the network inside: ``--network none``, with the wheels downloaded on the host
(``pip download``, cached per requirements hash) and put into the build context. The base comes
from a registry when one answers (``python:3.11-slim-bookworm``), else it is made here: a Debian
bookworm rootfs from ``debootstrap`` (the Debian mirror is a package registry), ``docker import``-ed
as ``sabench/base-bookworm:<hash>``; its tarball is kept in the cache so a wiped engine (or a second
engine, podman) re-imports it in seconds.

Everything cached lives under :func:`cache_dir` (``$SABENCH_IMAGE_CACHE``, default
``/var/cache/sabench-images`` as root, ``~/.cache/sabench-images`` otherwise), never in the repo.

CLI: ``python -m sabench.sandbox.images {build,argv,digest,tag} [python|cuda|<preset>]``.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sabench.io import output_mode

log = logging.getLogger("sabench.sandbox.images")

REPO = Path(__file__).resolve().parents[2]
IMAGES_DIR = REPO / "images"
SANDBOX_REQUIREMENTS = REPO / "envs" / "sandbox.txt"
#: Bump to rebuild every image (a change in how images are built that the files do not show).
RECIPE_VERSION = "1"
LABEL_HASH = "org.sabench.content-hash"
LABEL_RECIPE = "org.sabench.recipe"
DEBIAN_SUITE = "bookworm"
DEBOOTSTRAP_INCLUDE = ("python3", "python3-venv")
DEBOOTSTRAP = f"debootstrap:{DEBIAN_SUITE}"
DEFAULT_MIRROR = "http://deb.debian.org/debian"


class ImageError(RuntimeError):
    """An image could not be found, pulled or built; the message says which and why."""


@dataclass(frozen=True)
class Recipe:
    """How one sandbox image is built (everything that goes into its content hash)."""

    name: str
    repository: str
    dockerfile: Path
    requirements: tuple[Path, ...]
    #: The BASE build argument; "auto" = ``registry_base`` when it can be had, else debootstrap.
    base: str
    registry_base: str
    python: str
    python_version: str
    venv_args: str = ""
    extra: dict[str, str] = field(default_factory=dict)

    def build_args(self, base_ref: str) -> dict[str, str]:
        return {"BASE": base_ref, "PYTHON": self.python, "VENV_ARGS": self.venv_args, **self.extra}


RECIPES: dict[str, Recipe] = {
    "python": Recipe(
        name="python",
        repository="sabench/python",
        dockerfile=IMAGES_DIR / "python" / "Dockerfile",
        requirements=(SANDBOX_REQUIREMENTS,),
        base="auto",
        registry_base="python:3.11-slim-bookworm",
        python="python3",
        python_version="3.11",
    ),
    "cuda": Recipe(
        name="cuda",
        repository="sabench/python-cuda",
        dockerfile=IMAGES_DIR / "cuda" / "Dockerfile",
        requirements=(SANDBOX_REQUIREMENTS,),
        base="pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        registry_base="pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
        python="/opt/conda/bin/python",
        python_version="3.11",
        venv_args="--system-site-packages",
    ),
}


def recipe_named(name: str) -> Recipe:
    """One of :data:`RECIPES`, or an agent preset's (``recipe:mini-swe-agent``): the ``python``
    recipe with the preset's pinned requirements beside the sandbox's."""
    if name in RECIPES:
        return RECIPES[name]
    from dataclasses import replace

    from sabench.agents.presets import load_presets

    preset = load_presets()["presets"].get(name) or {}
    if not preset.get("requirements"):
        known = sorted(RECIPES) + sorted(
            n for n, p in load_presets()["presets"].items() if p.get("requirements")
        )
        raise ImageError(f"unknown image recipe {name!r}; choose one of {known}")
    return replace(
        RECIPES["python"],
        name=name,
        repository=f"sabench/agent-{name}",
        requirements=(SANDBOX_REQUIREMENTS, *(REPO / r for r in preset["requirements"])),
    )


@dataclass(frozen=True)
class ImageInfo:
    """An image as the execution record names it."""

    ref: str
    id: str
    #: The registry digest where the image came from one, else the image id (its config's digest).
    digest: str
    built: bool = False

    @property
    def pinned(self) -> str:
        """``ref@digest``: what the execution record stores."""
        return f"{self.ref}@{self.digest}"


def cache_dir(configured: str | os.PathLike[str] | None = None) -> Path:
    """Where wheels, rootfs tarballs, SIFs and build locks live (created on demand)."""
    chosen = configured or os.environ.get("SABENCH_IMAGE_CACHE")
    if chosen:
        return Path(chosen).expanduser()
    if os.geteuid() == 0:
        return Path("/var/cache/sabench-images")
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "sabench-images"


def _machine() -> str:
    m = platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(m, m)


def _sha256_bytes(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()


def requirements_text(recipe: Recipe) -> str:
    return "".join(p.read_text(encoding="utf-8").rstrip("\n") + "\n" for p in recipe.requirements)


def content_hash(recipe: Recipe, base: str | None = None) -> str:
    """The hash in the image's tag: Dockerfile, requirements, base, build arguments, platform."""
    base = base or recipe.base
    args = sorted(recipe.build_args(base).items())
    return _sha256_bytes(
        RECIPE_VERSION.encode(),
        recipe.dockerfile.read_bytes(),
        requirements_text(recipe).encode(),
        repr(args).encode(),
        f"{recipe.python_version} {_machine()}".encode(),
    )


def image_tag(recipe: Recipe, base: str | None = None) -> str:
    return f"{recipe.repository}:{content_hash(recipe, base)[:16]}"


def build_argv(
    recipe: Recipe,
    context: Path | str,
    *,
    base_ref: str | None = None,
    engine: str = "docker",
    base: str | None = None,
) -> list[str]:
    """The build as a command line (what the SDK call does; printed for users and tested).

    ``base`` is the recipe's base setting (in the hash), ``base_ref`` the image it resolved to.
    """
    base = base or recipe.base
    ref = base_ref or (recipe.registry_base if base == "auto" else base)
    argv = [
        engine, "build",
        "--network", "none",
        "--pull=false",
        "--file", str(Path(context) / "Dockerfile"),
        "--tag", image_tag(recipe, base),
        "--label", f"{LABEL_HASH}={content_hash(recipe, base)}",
        "--label", f"{LABEL_RECIPE}={recipe.name}",
    ]  # fmt: skip
    for key, value in recipe.build_args(ref).items():
        argv += ["--build-arg", f"{key}={value}"]
    argv.append(str(context))
    return argv


def pip_download_argv(recipe: Recipe, dest: Path, requirements: Path) -> list[str]:
    """Wheels for the image's Python and platform, downloaded on the host (binary only)."""
    m = _machine()
    short = recipe.python_version.replace(".", "")
    argv = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--only-binary=:all:", "--implementation", "cp",
        "--python-version", recipe.python_version, "--abi", f"cp{short}",
    ]  # fmt: skip
    for plat in (f"manylinux_2_28_{m}", f"manylinux_2_17_{m}", f"manylinux2014_{m}"):
        argv += ["--platform", plat]
    argv += ["--platform", "any", "--dest", str(dest), "-r", str(requirements)]
    return argv


def debootstrap_argv(target: Path, mirror: str | None = None) -> list[str]:
    return [
        shutil.which("debootstrap") or "/usr/sbin/debootstrap",
        "--variant=minbase",
        f"--include={','.join(DEBOOTSTRAP_INCLUDE)}",
        DEBIAN_SUITE,
        str(target),
        mirror or os.environ.get("SABENCH_DEBIAN_MIRROR") or DEFAULT_MIRROR,
    ]


@contextlib.contextmanager
def _locked(cache: Path, name: str) -> Iterator[None]:
    """One builder per cache at a time (parallel jobs wait, then find the image built)."""
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f".{name}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(argv: list[str], what: str, timeout: float, **kw: Any) -> None:
    t0 = time.monotonic()
    try:
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, **kw
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise ImageError(f"{what}: {exc}") from exc
    if done.returncode:
        tail = (done.stderr or done.stdout).strip()[-1500:]
        raise ImageError(f"{what} failed (exit {done.returncode}): {tail}")
    log.info("%s done in %.1f s", what, time.monotonic() - t0)


def ensure_wheels(recipe: Recipe, cache: Path) -> Path:
    """The recipe's wheels in ``<cache>/wheels/<hash>`` (downloaded once, then reused)."""
    text = requirements_text(recipe)
    key = _sha256_bytes(text.encode(), f"{recipe.python_version} {_machine()}".encode())[:16]
    dest = cache / "wheels" / key
    if (dest / ".complete").is_file():
        return dest
    with _locked(cache, "wheels"):
        if (dest / ".complete").is_file():
            return dest
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=dest.parent))
        try:
            os.chmod(tmp, output_mode(directory=True))  # a cache every node (and user) reads
            req = tmp / "requirements.txt"
            req.write_text(text, encoding="utf-8")
            _run(pip_download_argv(recipe, tmp, req), "pip download (sandbox wheels)", 1800)
            req.unlink()
            (tmp / ".complete").write_text(text, encoding="utf-8")
            if dest.exists():
                shutil.rmtree(dest)
            tmp.rename(dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


# --- talking to an engine (docker SDK; podman's service speaks the same API) --------------------


def _inspect(client: Any, ref: str) -> Any | None:
    import docker.errors

    try:
        return client.images.get(ref)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.APIError as exc:
        if getattr(exc, "status_code", None) == 404:
            return None
        raise


def image_info(client: Any, ref: str, *, built: bool = False) -> ImageInfo | None:
    """The local image ``ref`` with its digest, or None when the engine does not have it."""
    image = _inspect(client, ref)
    if image is None:
        return None
    return _info(image, ref, built=built)


def _info(image: Any, ref: str, *, built: bool = False) -> ImageInfo:
    attrs = image.attrs or {}
    repo = ref.split("@", 1)[0].rsplit(":", 1)[0] if "/" in ref or ":" in ref else ref
    digest = next(
        (
            d.split("@", 1)[1]
            for d in attrs.get("RepoDigests") or []
            if "@" in d and (d.split("@", 1)[0] == repo or d.split("@", 1)[0].endswith("/" + repo))
        ),
        None,
    )
    image_id = attrs.get("Id") or image.id
    if not str(image_id).startswith("sha256:"):
        image_id = f"sha256:{image_id}"
    return ImageInfo(ref=ref, id=image_id, digest=digest or image_id, built=built)


def pull(client: Any, ref: str, timeout_note: str = "") -> ImageInfo:
    """Pull ``ref``; an :class:`ImageError` with the engine's message when it cannot."""
    import docker.errors

    try:
        client.images.pull(ref)
    except (docker.errors.APIError, docker.errors.DockerException) as exc:
        raise ImageError(f"cannot pull {ref}: {_explain(exc)}{timeout_note}") from exc
    info = image_info(client, ref)
    if info is None:
        raise ImageError(f"pulled {ref} but the engine does not list it")
    return info


def _explain(exc: BaseException) -> str:
    text = getattr(exc, "explanation", None) or str(exc)
    return str(text).strip().splitlines()[0][:500] if str(text).strip() else type(exc).__name__


def rootfs_tarball(cache: Path, mirror: str | None = None) -> Path:
    """A Debian bookworm rootfs with python3 (debootstrap, ~100 s once; then cached)."""
    key = _sha256_bytes(
        RECIPE_VERSION.encode(), DEBIAN_SUITE.encode(), ",".join(DEBOOTSTRAP_INCLUDE).encode()
    )[:16]
    tarball = cache / "rootfs" / f"{DEBIAN_SUITE}-{key}.tar"
    if tarball.is_file():
        return tarball
    with _locked(cache, "rootfs"):
        if tarball.is_file():
            return tarball
        if os.geteuid() != 0:
            raise ImageError(
                "no base image: the registry is unreachable and debootstrap needs root; pull "
                "python:3.11-slim-bookworm on a machine with a registry, or set runtime.image"
            )
        if not shutil.which("debootstrap") and not Path("/usr/sbin/debootstrap").exists():
            raise ImageError(
                "no base image: the registry is unreachable and debootstrap is not installed "
                "(apt-get install debootstrap)"
            )
        tarball.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".rootfs-", dir=tarball.parent))
        try:
            root = work / "root"
            _run(debootstrap_argv(root, mirror), "debootstrap (Debian base rootfs)", 1800)
            for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for item in (root / junk).glob("*"):
                    if item.is_file():
                        item.unlink()
            partial = work / "rootfs.tar"
            _run(
                ["tar", "--numeric-owner", "-C", str(root), "-cf", str(partial), "."],
                "tar rootfs",
                600,
            )
            partial.rename(tarball)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return tarball


def ensure_debootstrap_base(client: Any, cache: Path) -> ImageInfo:
    """``sabench/base-bookworm:<hash>``, imported from the cached rootfs tarball when missing."""
    tarball = rootfs_tarball(cache)
    tag = f"sabench/base-{DEBIAN_SUITE}:{tarball.stem.rsplit('-', 1)[-1]}"
    info = image_info(client, tag)
    if info is not None:
        return info
    repository, _, version = tag.rpartition(":")
    with _locked(cache, "import"):
        info = image_info(client, tag)
        if info is not None:
            return info
        t0 = time.monotonic()
        try:
            answer = client.api.import_image_from_file(
                str(tarball), repository=repository, tag=version
            )
            if image_info(client, tag) is None:  # podman's compat API ignores the tag
                found = re.findall(r"sha256:[0-9a-f]{64}|\b[0-9a-f]{64}\b", str(answer))
                image = _inspect(client, found[-1]) if found else None
                image = image or _inspect(client, f"{repository}:latest")
                if image is None:
                    raise ImageError(f"imported {tarball} but cannot find the image: {answer}")
                image.tag(repository, version)
        except ImageError:
            raise
        except Exception as exc:
            raise ImageError(f"cannot import {tarball} as {tag}: {_explain(exc)}") from exc
        log.info("imported %s in %.1f s", tag, time.monotonic() - t0)
    info = image_info(client, tag)
    if info is None:
        raise ImageError(f"imported {tarball} but the engine does not list {tag}")
    return info


def resolve_base(client: Any, recipe: Recipe, cache: Path, base: str | None = None) -> str:
    """The image to build FROM: the registry base (local or pulled), else a debootstrap import."""
    base = base or recipe.base
    if base == DEBOOTSTRAP:
        return ensure_debootstrap_base(client, cache).ref
    if base != "auto":
        if image_info(client, base) is None:
            pull(client, base)
        return base
    if image_info(client, recipe.registry_base) is not None:
        return recipe.registry_base
    try:
        return pull(client, recipe.registry_base).ref
    except ImageError as exc:
        log.info("%s; building the base with debootstrap instead", exc)
    return ensure_debootstrap_base(client, cache).ref


def build_context(recipe: Recipe, wheels: Path, into: Path) -> Path:
    """Dockerfile, requirements.txt and wheels/ (hard links where possible) in ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(recipe.dockerfile, into / "Dockerfile")
    (into / "requirements.txt").write_text(requirements_text(recipe), encoding="utf-8")
    (into / "wheels").mkdir()
    for wheel in sorted(wheels.glob("*.whl")):
        try:
            os.link(wheel, into / "wheels" / wheel.name)
        except OSError:
            shutil.copyfile(wheel, into / "wheels" / wheel.name)
    return into


def ensure_image(
    client: Any,
    recipe: str | Recipe = "python",
    *,
    cache: Path | str | None = None,
    base: str | None = None,
) -> ImageInfo:
    """The recipe's image, built when its content-hash tag is missing (one inspect when present)."""
    recipe = recipe_named(recipe) if isinstance(recipe, str) else recipe
    tag = image_tag(recipe, base)
    info = image_info(client, tag)
    if info is not None:
        return info
    cache_path = cache_dir(cache)
    with _locked(cache_path, "build"):
        info = image_info(client, tag)
        if info is not None:
            return info
        t0 = time.monotonic()
        base_ref = resolve_base(client, recipe, cache_path, base)
        wheels = ensure_wheels(recipe, cache_path)
        with tempfile.TemporaryDirectory(prefix=".context-", dir=cache_path) as tmp:
            context = build_context(recipe, wheels, Path(tmp) / "context")
            argv = build_argv(recipe, context, base_ref=base_ref, base=base)
            log.info("building %s: %s", tag, " ".join(argv))
            _build(client, recipe, context, tag, base_ref, base)
        log.info("built %s in %.1f s", tag, time.monotonic() - t0)
    info = image_info(client, tag, built=True)
    if info is None:
        raise ImageError(f"built {tag} but the engine does not list it")
    return info


def _build(
    client: Any, recipe: Recipe, context: Path, tag: str, base_ref: str, base: str | None
) -> None:
    import docker.errors

    try:
        client.images.build(
            path=str(context),
            dockerfile="Dockerfile",
            tag=tag,
            buildargs=recipe.build_args(base_ref),
            labels={LABEL_HASH: content_hash(recipe, base), LABEL_RECIPE: recipe.name},
            network_mode="none",
            pull=False,
            rm=True,
            forcerm=True,
        )
    except docker.errors.BuildError as exc:
        lines = [
            str(chunk.get("stream") or chunk.get("error") or "").rstrip()
            for chunk in exc.build_log
            if isinstance(chunk, dict)
        ]
        tail = "\n".join(line for line in lines if line)[-1500:]
        raise ImageError(f"docker build of {tag} failed: {exc.msg}\n{tail}") from exc
    except docker.errors.APIError as exc:
        raise ImageError(f"docker build of {tag} failed: {_explain(exc)}") from exc


def resolve_image(
    client: Any, ref: str | None, *, cache: Path | str | None = None, pull_missing: bool = True
) -> ImageInfo:
    """``runtime.image``: None or ``recipe:<name>`` = one of ours (built if missing), else a ref
    the engine has or can pull."""
    if ref is None or ref.startswith("recipe:"):
        name = "python" if ref is None else ref.split(":", 1)[1]
        return ensure_image(client, recipe_named(name), cache=cache)
    info = image_info(client, ref)
    if info is not None:
        return info
    if not pull_missing:
        raise ImageError(f"image {ref} is not present on the engine")
    return pull(client, ref)


def main(argv: list[str] | None = None) -> int:
    from sabench.steps import ArgumentParser

    parser = ArgumentParser(prog="python -m sabench.sandbox.images", description=__doc__)
    parser.add_argument("action", choices=["build", "argv", "digest", "tag"])
    parser.add_argument(
        "recipe", nargs="?", default="python", help="python, cuda or an agent preset's name"
    )
    parser.add_argument(
        "--cache", help="default: $SABENCH_IMAGE_CACHE or /var/cache/sabench-images"
    )
    parser.add_argument("--engine", default="docker", help="for argv: docker or podman")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        recipe = recipe_named(args.recipe)
    except ImageError as exc:
        parser.error(str(exc))
    if args.action == "tag":
        print(image_tag(recipe))
        return 0
    if args.action == "argv":
        print(" ".join(build_argv(recipe, "<context>", engine=args.engine)))
        return 0
    import docker

    client = docker.from_env()
    if args.action == "build":
        info = ensure_image(client, recipe, cache=args.cache)
    else:
        found = image_info(client, image_tag(recipe))
        if found is None:
            print(f"{image_tag(recipe)} is not built", file=sys.stderr)
            return 1
        info = found
    print(info.pinned)
    return 0


if __name__ == "__main__":
    sys.exit(main())
