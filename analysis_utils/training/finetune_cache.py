"""The on-disk cache of fine-tuned models and baselines: keys, complete entries, checkpoints.

An entry lives in ``<cache>/finetune/<key>/`` (:data:`CACHE_SUBDIR`; baselines under
:data:`BASELINE_SUBDIR`), the key from :func:`cache_key`. It is assembled in
``<key>.tmp-<pid>/`` (:func:`fresh_tmp`), marked ``COMPLETE`` last (the key and the sha256 of
every file but the weights, which are checked against their recorded fingerprint when
loaded), then renamed into place (:func:`publish`): a folder named ``<key>`` is complete or
absent, and :func:`read_complete` says which. Training checkpoints live in ``<key>.work/``;
:func:`last_checkpoint` finds the last one written completely.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from ..data.glue import GlueExample
from ..engine.models import LoadedModel
from .glue_data import examples_digest

__all__ = ["FINETUNE_VERSION", "CACHE_SUBDIR", "BASELINE_SUBDIR", "cache_key", "model_key",
           "data_key", "versions", "write_json", "read_complete", "publish", "fresh_tmp",
           "last_checkpoint", "weights_complete"]

#: Bumped whenever a change to fine-tuning (finetune, trainer, classifier, glue_data,
#: baselines, this module) would change what a cached entry holds.
FINETUNE_VERSION = "1"
CACHE_SUBDIR = "finetune"
BASELINE_SUBDIR = "finetune_baselines"


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "-" for c in text).strip("-")


def cache_key(key_inputs: dict) -> str:
    """Folder name of a cache entry: readable prefix (model, task, init, seed) + 20 hex digits
    of the sha256 of ``key_inputs`` (see :func:`finetune`)."""
    m = key_inputs["model"]
    prefix = f"{_slug(m['name'])}-{key_inputs['task']}-{m['init']}"
    if key_inputs.get("seed") is not None:
        prefix += f"-seed{key_inputs['seed']}"
    return f"{prefix}-{_sha(key_inputs)[:20]}"


def model_key(lm: LoadedModel, fingerprint: str) -> dict:
    """The part of a cache key that names the encoder: its identity and weights fingerprint."""
    ident = lm.identity
    return {"name": ident["name"], "source": ident["source"], "revision": ident.get("revision"),
            "init": ident["init"], "init_seed": ident.get("seed"),
            "weights_fingerprint": fingerprint}


def data_key(examples: Sequence[GlueExample], indices: np.ndarray | None,
             max_n: int | None, subset_seed: int | None, n_available: int) -> dict:
    """The part of a cache key that names a list of examples: count, digest, subset rule."""
    return {"n": len(examples), "sha256": examples_digest(examples), "max_n": max_n,
            "subset_seed": subset_seed if indices is not None else None,
            "n_available": n_available}


def versions() -> dict:
    """torch, transformers and Python versions, recorded in every entry."""
    import transformers

    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version()}


def write_json(path: Path, obj) -> None:
    """``obj`` as JSON at ``path`` (numpy values and paths converted), flushed to disk."""
    with open(path, "w") as fh:
        json.dump(obj, fh, indent=1, sort_keys=True, default=_json_default)
        fh.flush()
        os.fsync(fh.fileno())


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _file_sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_complete(folder: Path, key: str) -> dict | None:
    """``result.json`` of a complete entry: its ``COMPLETE`` marker names ``key`` and every
    file it lists still has its recorded sha256 (weights are checked by fingerprint when
    loaded instead). None for anything else."""
    marker = folder / "COMPLETE"
    if not marker.is_file():
        return None
    try:
        done = json.loads(marker.read_text())
        files = done.get("sha256", {})
        if done.get("key") != key or "result.json" not in files:
            return None
        if any(_file_sha(folder / name) != sha for name, sha in files.items()):
            return None
        return json.loads((folder / "result.json").read_text())
    except (OSError, ValueError):
        return None


def weights_complete(folder: Path) -> bool:
    """Whether ``folder/model.safetensors`` is whole: its header parses and the file is as long
    as the header says (a cut-off copy is not). Reads the header only, not the tensors; a
    same-size corruption is caught later, by the weights fingerprint when the entry is loaded."""
    path = folder / "model.safetensors"
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            n = int.from_bytes(fh.read(8), "little")
            if size < 8 + n:
                return False
            header = json.loads(fh.read(n))
        end = max((t["data_offsets"][1] for name, t in header.items()
                   if name != "__metadata__"), default=0)
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        return False
    return size == 8 + n + end


def publish(tmp: Path, final: Path, key: str) -> None:
    """Mark ``tmp`` complete (the marker, written last, holds the key and the sha256 of every
    file but the weights) and rename it to ``final``."""
    files = {p.name: _file_sha(p) for p in sorted(tmp.iterdir())
             if p.is_file() and p.suffix != ".safetensors"}
    write_json(tmp / "COMPLETE", {"key": key, "sha256": files,
                                  "finetune_version": FINETUNE_VERSION})
    if final.exists():  # an incomplete leftover (a complete one was returned before we trained)
        if read_complete(final, key) is not None:
            shutil.rmtree(tmp)  # another process finished the same key first: keep theirs
            return
        shutil.rmtree(final)
    os.replace(tmp, final)


def fresh_tmp(root: Path, key: str) -> Path:
    """A new ``<key>.tmp-<pid>`` folder under ``root``, leftovers of killed writers removed."""
    for old in root.glob(f"{key}.tmp-*"):  # left by a process killed while writing
        shutil.rmtree(old, ignore_errors=True)
    tmp = root / f"{key}.tmp-{os.getpid()}"
    tmp.mkdir(parents=True)
    return tmp


def last_checkpoint(work: Path) -> Path | None:
    """The newest checkpoint in ``work`` that was written completely (the Trainer writes
    ``trainer_state.json`` after weights, optimiser, scheduler and RNG states); newer ones
    that were cut off while being written are removed."""
    def step(p: Path) -> int:
        tail = p.name.rsplit("-", 1)[-1]
        return int(tail) if tail.isdigit() else -1

    def complete(ckpt: Path) -> bool:
        needed = ("trainer_state.json", "model.safetensors", "optimizer.pt", "scheduler.pt")
        if step(ckpt) < 0 or not all((ckpt / f).is_file() for f in needed):
            return False
        try:  # written last, and not atomically
            json.loads((ckpt / "trainer_state.json").read_text())
        except (OSError, ValueError):
            return False
        return True

    for ckpt in sorted(work.glob("checkpoint-*"), key=step, reverse=True):
        if complete(ckpt):
            return ckpt
        shutil.rmtree(ckpt, ignore_errors=True)
    return None
