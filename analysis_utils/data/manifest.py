"""The gold data: a checksummed manifest, checks, and a downloader that never leaves partial files.

``data_manifest.json`` (next to this module) lists every data file the analyses read, grouped into
named datasets (``ud-english-ewt``, ``ontogum``, ``glue``, ``wikitext-2``, ``framenet-1.7``). Each
entry has its path relative to the data directory, its sha256 and size (from the shared bundle's
``SHA256SUMS``) and where it comes from:

- ``src``: a file at a pinned commit of a public repository (URL = the dataset's ``base_url`` +
  ``src``), optionally with a ``transform`` applied to the downloaded bytes before the checksum is
  verified (``crlf_to_lf`` for WikiText-2, whose host repository has CRLF line endings);
- ``derive``: no public file has these bytes, but a function here rebuilds them byte-for-byte from
  other manifest files (``glue_mrpc_train``: GLUE's own MRPC train procedure; ``ontogum_split``:
  the OntoGUM document lists from GUM's ``splits.md``);
- neither (``src`` null, ``how`` says what the file is): the file exists only in the data bundle
  (the filtered FrameNet ``lu.tar.xz`` and the bundle's own notes). ``fetch_data`` cannot download
  it and says so; copy it from a bundle, e.g. ``fetch-data --mirror /path/to/shared/data``.

Hash caching (``require``): every call checks that the file exists and has the manifest size; the
sha256 is computed once per process per (path, size, mtime) and remembered in memory. No sidecar
files are written, so a read-only data directory (the shared bundle) works. A file modified in
place changes its mtime and is re-hashed. ``check_data`` always re-hashes (it is the explicit check).

Command line (wired in ``__main__``): ``python -m analysis_utils fetch-data [--dataset NAME ...]
[--data-dir DIR] [--mirror URL_OR_DIR]`` and ``python -m analysis_utils check-data [...]``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from .. import paths
from ..engine import atomic

MANIFEST_PATH = Path(__file__).resolve().parent / "data_manifest.json"
FETCH_COMMAND = "python -m analysis_utils fetch-data --dataset {name}"
_CHUNK = 1 << 20


class DataMissingError(FileNotFoundError):
    """A gold data file is absent (or corrupt, see ``DataCorruptError``); the message says how to fetch it."""


class DataCorruptError(DataMissingError):
    """A gold data file is present but its size or sha256 differs from the manifest."""


class ChecksumError(ValueError):
    """Downloaded bytes do not match the manifest's sha256 (the download was discarded)."""


class FetchError(RuntimeError):
    """One or more files could not be fetched; ``failures`` maps path -> reason."""

    def __init__(self, failures: dict[str, str]):
        self.failures = dict(failures)
        lines = [f"{len(failures)} file(s) could not be fetched:"]
        items = list(self.failures.items())
        lines += [f"  {p}: {why}" for p, why in items[:20]]
        if len(items) > 20:
            lines.append(f"  ... and {len(items) - 20} more (see the .failures attribute)")
        super().__init__("\n".join(lines))


# --------------------------------------------------------------------------- manifest


@dataclass(frozen=True)
class FileEntry:
    """One manifest file. ``url`` is None when no direct download reproduces it."""

    path: str
    dataset: str
    sha256: str
    size: int
    url: str | None
    transform: str | None = None
    derive: dict | None = None
    how: str | None = None


@lru_cache(maxsize=8)
def _load_manifest_cached(path: str) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def load_manifest(manifest: str | os.PathLike | dict | None = None) -> dict:
    """The manifest as a dict (the packaged one by default; a path or an already-loaded dict also work)."""
    if isinstance(manifest, dict):
        return manifest
    return _load_manifest_cached(str(manifest or MANIFEST_PATH))


def dataset_names(manifest=None) -> list[str]:
    return list(load_manifest(manifest)["datasets"])


def manifest_entries(datasets: Iterable[str] | str | None = None, manifest=None) -> list[FileEntry]:
    """The manifest's files, for the named datasets (all when None), in manifest order."""
    man = load_manifest(manifest)
    names = dataset_names(man) if datasets is None else ([datasets] if isinstance(datasets, str) else list(datasets))
    unknown = [n for n in names if n not in man["datasets"]]
    if unknown:
        raise KeyError(f"unknown dataset(s) {unknown}; known: {dataset_names(man)}")
    out = []
    for name in names:
        ds = man["datasets"][name]
        base = ds.get("base_url") or ""
        for f in ds["files"]:
            src = f.get("src")
            url = None if src is None else (src if re.match(r"^[a-z]+://", src) else base + src)
            out.append(FileEntry(path=f["path"], dataset=name, sha256=f["sha256"], size=int(f["size"]),
                                 url=url, transform=f.get("transform"), derive=f.get("derive"),
                                 how=f.get("how")))
    return out


@lru_cache(maxsize=8)
def _entry_index_cached(path: str) -> dict[str, FileEntry]:
    return {e.path: e for e in manifest_entries(None, path)}


def _entry_index(manifest=None) -> dict[str, FileEntry]:
    if isinstance(manifest, dict):
        return {e.path: e for e in manifest_entries(None, manifest)}
    return _entry_index_cached(str(manifest or MANIFEST_PATH))


def dataset_of(relpath: str, manifest=None) -> str | None:
    """The dataset a manifest path belongs to (None when it is not in the manifest)."""
    e = _entry_index(manifest).get(_norm(relpath))
    return e.dataset if e else None


def _norm(relpath: str | os.PathLike) -> str:
    return Path(relpath).as_posix()


# --------------------------------------------------------------------------- hashing


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


# (resolved path) -> (size, mtime_ns, sha256): hashes computed in this process.
_HASH_CACHE: dict[str, tuple[int, int, str]] = {}


def _cached_sha256(path: Path) -> str:
    st = path.stat()
    key = str(path.resolve())
    hit = _HASH_CACHE.get(key)
    if hit and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
        return hit[2]
    digest = sha256_file(path)
    _HASH_CACHE[key] = (st.st_size, st.st_mtime_ns, digest)
    return digest


def _file_problem(path: Path, entry: FileEntry, verify_hash: bool, use_cache: bool) -> str | None:
    """None when ``path`` matches ``entry``; else 'missing' or a reason it is corrupt."""
    if not path.is_file():
        return "missing"
    size = path.stat().st_size
    if size != entry.size:
        return f"size {size} bytes, expected {entry.size}"
    if verify_hash:
        digest = _cached_sha256(path) if use_cache else sha256_file(path)
        if not use_cache:
            st = path.stat()
            _HASH_CACHE[str(path.resolve())] = (st.st_size, st.st_mtime_ns, digest)
        if digest != entry.sha256:
            return f"sha256 {digest[:12]}..., expected {entry.sha256[:12]}..."
    return None


# --------------------------------------------------------------------------- check


@dataclass
class DataReport:
    """Which manifest files are present (and intact), missing, or corrupt (path -> reason)."""

    data_dir: Path
    datasets: list[str]
    present: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    corrupt: dict[str, str] = field(default_factory=dict)
    hashes_verified: bool = True
    path_dataset: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return not self.missing and not self.corrupt

    def by_dataset(self) -> dict[str, dict[str, int]]:
        """Counts per dataset: {name: {"present": n, "missing": n, "corrupt": n}}."""
        out = {n: {"present": 0, "missing": 0, "corrupt": 0} for n in self.datasets}
        for key, items in (("present", self.present), ("missing", self.missing), ("corrupt", self.corrupt)):
            for p in items:
                out[self.path_dataset[p]][key] += 1
        return out

    def summary(self) -> str:
        lines = [f"data directory: {self.data_dir}"
                 + ("" if self.hashes_verified else " (sizes only, sha256 not verified)")]
        for name, c in self.by_dataset().items():
            state = "ok" if not c["missing"] and not c["corrupt"] else "INCOMPLETE"
            lines.append(f"  {name:16s} {state:10s} present {c['present']}, missing {c['missing']}, "
                         f"corrupt {c['corrupt']}")
        for p in self.missing[:10]:
            lines.append(f"  missing: {p}")
        if len(self.missing) > 10:
            lines.append(f"  ... and {len(self.missing) - 10} more missing")
        for p, why in self.corrupt.items():
            lines.append(f"  corrupt: {p} ({why})")
        if not self.ok:
            bad = sorted({self.path_dataset[p] for p in [*self.missing, *self.corrupt]})
            command = " ".join(["python -m analysis_utils fetch-data"]
                               + [f"--dataset {n}" for n in bad])
            lines.append(f"fix with: {command}  (downloads: needs network access)")
            lines.append(f"  or, without network, from {OFFLINE_SOURCE}: {command} --mirror DIR")
        return "\n".join(lines)


def check_data(data_dir=None, datasets=None, verify_hashes: bool = True, manifest=None) -> DataReport:
    """Check the manifest files of ``datasets`` (all when None) under ``data_dir`` (see ``paths.data_dir``)."""
    root = paths.data_dir(data_dir)
    entries = manifest_entries(datasets, manifest)
    report = DataReport(data_dir=root, datasets=sorted({e.dataset for e in entries}, key=[e.dataset for e in entries].index),
                        hashes_verified=verify_hashes, path_dataset={e.path: e.dataset for e in entries})
    for e in entries:
        problem = _file_problem(root / e.path, e, verify_hashes, use_cache=False)
        if problem is None:
            report.present.append(e.path)
        elif problem == "missing":
            report.missing.append(e.path)
        else:
            report.corrupt[e.path] = problem
    return report


# --------------------------------------------------------------------------- require


def fetch_hint(dataset: str | None) -> str:
    if dataset is None:
        return "python -m analysis_utils fetch-data"
    return FETCH_COMMAND.format(name=dataset)


# fetch-data downloads from the public sources; a machine without network needs --mirror.
OFFLINE_SOURCE = "a local copy of the data bundle, sha256-checked"


def fix_hint(dataset: str | None) -> str:
    """The command that restores a dataset's files, online and offline (``--mirror DIR``)."""
    command = fetch_hint(dataset)
    return (f"{command} (it downloads, so it needs network access; without network, copy from "
            f"{OFFLINE_SOURCE}: {command} --mirror DIR)")


def require(relpath: str | os.PathLike, data_dir=None, verify: bool = True, manifest=None) -> Path:
    """The absolute path of data file ``relpath`` (relative to the data dir), checked against the manifest.

    Raises ``DataMissingError`` (or its subclass ``DataCorruptError``) naming the file, the data
    directory, the ``BERTOLOGY_DATA_DIR`` variable and the command that fetches it. Size is checked
    on every call; the sha256 once per process per (path, size, mtime) when ``verify``. Paths not in
    the manifest (e.g. files extracted from ``lu.tar.xz``) are only checked for existence.
    """
    root = paths.data_dir(data_dir)
    rel = _norm(relpath)
    path = root / rel
    entry = _entry_index(manifest).get(rel)
    dataset = entry.dataset if entry else None
    where = (f"data directory {root} (set {paths.DATA_ENV} or pass data_dir to use another one)")
    if entry is None:
        if path.exists():
            return path
        raise DataMissingError(f"{rel} not found in the {where}. It is not in the data manifest; "
                               f"fetch the gold data with: {fix_hint(None)}")
    problem = _file_problem(path, entry, verify, use_cache=True)
    if problem is None:
        return path
    if problem == "missing":
        raise DataMissingError(f"{rel} (dataset {dataset!r}) not found in the {where}. "
                               f"Fetch it with: {fix_hint(dataset)}")
    raise DataCorruptError(f"{rel} (dataset {dataset!r}) in the {where} is corrupt: {problem}. "
                           f"Re-fetch it (the bad copy is replaced) with: {fix_hint(dataset)}")


# --------------------------------------------------------------------------- transforms / derivations


def _crlf_to_lf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n")


TRANSFORMS: dict[str, Callable[[bytes], bytes]] = {"crlf_to_lf": _crlf_to_lf}


def _derive_glue_mrpc_train(inputs: list[Path], spec: dict) -> bytes:
    """GLUE's download_glue_data.py: msr_paraphrase_train rows whose id pair is not in dev_ids."""
    src, dev_ids_path = inputs
    dev_ids = {tuple(line.strip().split("\t")) for line in dev_ids_path.read_text(encoding="utf-8").splitlines()
               if line.strip()}
    out = []
    with open(src, encoding="utf-8") as fh:
        out.append(fh.readline())
        for row in fh:
            label, id1, id2, s1, s2 = row.strip().split("\t")
            if (id1, id2) not in dev_ids:
                out.append(f"{label}\t{id1}\t{id2}\t{s1}\t{s2}\n")
    return "".join(out).encode("utf-8")


def _derive_ontogum_split(inputs: list[Path], spec: dict) -> bytes:
    """The ``## <split>`` list of GUM's splits.md, GUM_* documents only, reddit removed."""
    section, docs = None, []
    for line in inputs[0].read_text(encoding="utf-8").splitlines():
        m = re.match(r"^##\s+(\S+)", line)
        if m:
            section = m.group(1)
            continue
        m = re.match(r"^\s*\*\s+(\S+)", line)
        if m and section == spec["split"]:
            doc = m.group(1)
            if doc.startswith("GUM_") and not doc.startswith("GUM_reddit_"):
                docs.append(doc)
    return "".join(d + "\n" for d in docs).encode("utf-8")


DERIVATIONS: dict[str, Callable[[list[Path], dict], bytes]] = {
    "glue_mrpc_train": _derive_glue_mrpc_train,
    "ontogum_split": _derive_ontogum_split,
}


# --------------------------------------------------------------------------- fetch


def _mirror_base(base: str) -> str:
    """A mirror given as a URL or a local folder -> URL prefix ending in '/'."""
    if not re.match(r"^[a-z]+://", base):
        base = Path(base).expanduser().resolve().as_uri()
    return base if base.endswith("/") else base + "/"


def _write_atomic(target: Path, chunks: Iterable[bytes], expected_sha256: str) -> None:
    """Write ``chunks`` to a temp file beside ``target``, verify sha256, then os.replace it in."""
    h = hashlib.sha256()
    with atomic.replacing(target) as tmp, open(tmp, "wb") as fh:
        for chunk in chunks:
            h.update(chunk)
            fh.write(chunk)
        fh.flush()
        digest = h.hexdigest()
        if digest != expected_sha256:
            raise ChecksumError(f"{target.name}: sha256 of the fetched bytes is {digest}, the manifest "
                                f"expects {expected_sha256}; the download was discarded")


def _stream(url: str, timeout: float) -> Iterable[bytes]:
    req = urllib.request.Request(url, headers={"User-Agent": "analysis_utils-fetch-data"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        while True:
            chunk = resp.read(_CHUNK)
            if not chunk:
                break
            yield chunk


def fetch_data(data_dir=None, datasets=None, base_url_override: str | None = None, manifest=None,
               timeout: float = 60.0, progress: Callable[[str], None] | None = None) -> DataReport:
    """Download every missing or corrupt manifest file of ``datasets`` (all when None) into ``data_dir``.

    Files are verified against the manifest sha256 and written atomically (temp file in the same
    folder, then ``os.replace``): a failed or mismatching download leaves no file behind. Files
    already present and intact are skipped, so an interrupted fetch resumes. ``base_url_override``
    is a mirror laid out like the data bundle (an http(s)/file URL or a local folder): every file is
    then fetched as ``mirror/<path>`` with no transform, which also covers the bundle-only files.
    Derived files are rebuilt from their inputs after the downloads. Raises ``FetchError`` listing
    every file that could not be fetched and why; returns the final ``check_data`` report otherwise.
    """
    say = progress or (lambda msg: None)
    root = paths.data_dir(data_dir)
    entries = manifest_entries(datasets, manifest)
    index = _entry_index(manifest)
    mirror = _mirror_base(base_url_override) if base_url_override else None
    failures: dict[str, str] = {}

    todo = []
    for e in entries:
        problem = _file_problem(root / e.path, e, verify_hash=True, use_cache=True)
        if problem is None:
            say(f"ok       {e.path}")
        else:
            todo.append(e)
            if problem != "missing":
                say(f"corrupt  {e.path} ({problem}); fetching a fresh copy")
    # a derived file needs its inputs, even from a dataset that was not asked for
    needed = {p for e in todo if e.derive and not mirror for p in e.derive.get("inputs", [])}
    extra = [index[p] for p in needed if p not in {e.path for e in entries}
             and _file_problem(root / p, index[p], True, True) is not None]
    todo = extra + [e for e in todo if not e.derive] + [e for e in todo if e.derive]

    for e in todo:
        target = root / e.path
        try:
            if mirror:
                url = mirror + urllib.parse.quote(e.path)
                say(f"fetch    {e.path} <- {url}")
                _write_atomic(target, _stream(url, timeout), e.sha256)
            elif e.url:
                say(f"fetch    {e.path} <- {e.url}" + (f" [{e.transform}]" if e.transform else ""))
                if e.transform:
                    if e.transform not in TRANSFORMS:
                        raise ValueError(f"unknown transform {e.transform!r}")
                    data = TRANSFORMS[e.transform](b"".join(_stream(e.url, timeout)))
                    _write_atomic(target, [data], e.sha256)
                else:
                    _write_atomic(target, _stream(e.url, timeout), e.sha256)
            elif e.derive:
                inputs = e.derive.get("inputs", [])
                bad = [p for p in inputs if p in failures or not (root / p).is_file()]
                if bad:
                    raise FileNotFoundError(f"cannot derive it: input(s) {bad} missing")
                say(f"derive   {e.path} ({e.derive['name']})")
                data = DERIVATIONS[e.derive["name"]]([root / p for p in inputs], e.derive)
                _write_atomic(target, [data], e.sha256)
            else:
                raise FileNotFoundError(
                    f"no public download reproduces this file ({e.how}). Copy it from a copy of the "
                    f"data bundle: python -m analysis_utils fetch-data --dataset {e.dataset} "
                    f"--mirror /path/to/shared/data")
        except Exception as exc:  # noqa: BLE001 - reported per file, then raised together
            reason = f"{type(exc).__name__}: {exc}"
            failures[e.path] = reason
            say(f"FAILED   {e.path}: {reason}")
    if failures:
        raise FetchError(failures)
    return check_data(root, [d for d in dataset_names(manifest) if d in {e.dataset for e in entries}],
                      verify_hashes=True, manifest=manifest)


def main_fetch(datasets=None, data_dir=None, base_url_override: str | None = None, manifest=None) -> int:
    """Fetch with progress on stdout; returns a process exit code (0 when everything is in place)."""
    root = paths.data_dir(data_dir)
    print(f"fetching into {root}")
    try:
        report = fetch_data(root, datasets, base_url_override, manifest=manifest,
                            progress=lambda m: print(m, flush=True))
    except FetchError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    print(report.summary())
    return 0 if report.ok else 1


def main_check(datasets=None, data_dir=None, verify_hashes: bool = True, manifest=None) -> int:
    report = check_data(data_dir, datasets, verify_hashes, manifest=manifest)
    print(report.summary())
    return 0 if report.ok else 1


def cli(command: str, argv: list[str] | None = None) -> int:
    """Entry point for ``python -m analysis_utils {fetch-data,check-data} [options]``."""
    parser = argparse.ArgumentParser(
        prog=f"python -m analysis_utils {command}",
        description=("download missing gold data files, sha256-checked" if command == "fetch-data"
                     else "report which gold data files are present, missing or corrupt"))
    parser.add_argument("--dataset", action="append", choices=dataset_names(), metavar="NAME",
                        help=f"dataset to process (repeatable; default all): {', '.join(dataset_names())}")
    parser.add_argument("--data-dir", default=None,
                        help=f"data directory (default ${paths.DATA_ENV}, else <repo>/data)")
    if command == "fetch-data":
        parser.add_argument("--mirror", default=None,
                            help="a copy of the data bundle (folder or URL) to fetch from instead of "
                                 "the public sources: for machines without network, and for "
                                 "bundle-only files such as framenet-1.7/lu.tar.xz. Files are "
                                 "checked against the manifest sha256 and written atomically")
    else:
        parser.add_argument("--no-hash", action="store_true", help="check sizes only (fast)")
    args = parser.parse_args(argv or [])
    if command == "fetch-data":
        return main_fetch(args.dataset, args.data_dir, args.mirror)
    if command == "check-data":
        return main_check(args.dataset, args.data_dir, verify_hashes=not args.no_hash)
    raise ValueError(f"unknown command {command!r}")
