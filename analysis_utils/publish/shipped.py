"""Saved evidence whose bulk arrays are already among the run's outputs: stored once, by digest.

Notebook 01's surface step computes, in one pass over the maps, both the per-head tables and
every segment's own value of each statistic; the notebook writes the latter with
``run.arrays`` as ``01_by_segment_{model,control}.npz``, the claims ledger's input. Saving them
in ``01_evidence_surface.npz`` too stored the same numbers twice (8 MB in ``results/``,
16 MB in ``results/base/``, both over the 5 MB a committed evidence file may take).

:func:`step` is :func:`~analysis_utils.publish.saved.step` for such a value: ``compute()``
returns a dict, and each entry named in ``arrays`` is a dict of arrays that the notebook then
writes with ``run.arrays(entry, ...)``, as it would anyway. The evidence file keeps, for such an
entry, only a reference: the arrays file's name, its array names and a sha256 over their names,
dtypes, shapes and bytes (:func:`digest`). Replayed, the entry is read back from the arrays
file of that name whose arrays have that digest, found where saved evidence is found (this
run's results folder, the driver's published one, the repository's ``results/`` and its
profile subfolders): content decides, so a default run's file never stands in for the base
profile's. Where none matches (deleted or re-made by another run), the step computes
everything again and says why. Compute and replay give equal values: a test holds it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from . import saved

#: The marker of an entry stored by reference in the evidence file.
REF = "shipped_arrays"


def digest(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 over each array's name, dtype, shape and bytes, in name order.

    >>> a = {"x": np.arange(3, dtype=np.int32)}
    >>> digest(a) == digest({"x": np.arange(3, dtype=np.int32)})
    True
    >>> digest(a) == digest({"x": np.arange(3, dtype=np.int64)})
    False
    """
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def reference(file: str, arrays: Mapping[str, np.ndarray]) -> dict:
    """What the evidence file keeps of ``arrays``, written to ``file`` by the notebook."""
    for k, v in arrays.items():
        if not isinstance(v, np.ndarray):
            raise saved.EvidenceError(f"{file}: entry {k!r} is not an array ({type(v).__name__})")
    return {REF: file, "names": sorted(arrays), "sha256": digest(arrays)}


def is_reference(value) -> bool:
    return isinstance(value, dict) and REF in value


def lookup(ref: Mapping, folders: Sequence[Path]) -> dict[str, np.ndarray] | None:
    """The arrays ``ref`` (:func:`reference`) names, from the first file called ``ref[REF]`` in
    ``folders`` (:func:`saved.candidates`) that holds them with its digest; None if none does."""
    names = list(ref["names"])
    for path in saved.candidates(ref[REF], folders):
        try:
            with np.load(path, allow_pickle=False) as z:
                if not set(names) <= set(z.files):
                    continue
                arrays = {k: z[k] for k in names}
        except (OSError, ValueError):
            continue
        if digest(arrays) == ref["sha256"]:
            return arrays
    return None


def resolve(value: Mapping, folders: Sequence[Path]) -> tuple[dict, list[str]]:
    """``value`` with each reference replaced by its arrays; the files not found, by name."""
    out, missing = {}, []
    for k, v in value.items():
        if is_reference(v):
            arrays = lookup(v, folders)
            if arrays is None:
                missing.append(v[REF])
            out[k] = arrays
        else:
            out[k] = v
    return out, missing


def step(run, name: str, compute: Callable[[], Mapping], what: str, arrays: Sequence[str]):
    """:func:`saved.step` for a ``compute()`` that returns a dict whose entries ``arrays``
    (names the notebook passes to ``run.arrays``) are dicts of arrays: the evidence file keeps
    only a reference to each (module docstring). Returns the full value either way."""
    from .. import paths
    from .report import output_dirs

    arrays = list(arrays)
    full: dict = {}

    def slim():
        value = compute()
        if not isinstance(value, Mapping) or not set(arrays) <= set(value):
            raise saved.EvidenceError(f"step {name!r}: compute() must return a dict with the "
                                      f"entries {arrays}")
        full.update(value)
        return {k: (reference(f"{run.prefix}_{k}.npz", v) if k in arrays else v)
                for k, v in value.items()}

    value = saved.step(run, name, slim, what)
    if full:  # computed here
        return dict(full)
    out_dir, _ = output_dirs()
    folders = [out_dir, *[Path(p) for p in (os.environ.get(saved.PUBLISHED_ENV),) if p],
               paths.RESULTS_DIR]
    out, missing = resolve(value, folders)
    if not missing:
        files = sorted(v[REF] for v in value.values() if is_reference(v))
        print(f"{what}: its arrays read from {', '.join(files)} (matched by checksum)")
        return out
    # the evidence matched but its arrays are gone or were re-made by another run: compute
    # everything and save the evidence again, so that it refers to what this run writes
    print(f"{what}: {', '.join(missing)} with the saved checksum not found; computing here")
    saved.resolve(run.prefix, name, slim, what=what, recompute=True, params=run.params,
                  models=run.models, data=run.data, out_dir=out_dir, search=[],
                  commit=run.commit, device=_device())
    return dict(full)


def _device() -> str:
    """Where this process computes, as :func:`saved.step` records it."""
    import torch

    return (torch.cuda.get_device_name(0) if torch.cuda.is_available()
            else f"cpu ({os.cpu_count()} cores)")
