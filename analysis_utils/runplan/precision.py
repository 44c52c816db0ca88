"""The numeric precision a plan's units run at: ``float32`` (the default; what the committed
run used), ``tf32`` (CUDA matrix products and convolutions on TensorFloat-32 tensor cores,
weights and activations stay float32) or ``bf16`` (``torch.autocast`` to bfloat16 around the
unit's work; weights and optimiser state stay float32).

The precision is a parameter of notebooks 06 and 07 (``precision``), and so of the plan
(``-p precision=bf16``; ``plan run --precision bf16`` is the same thing spelled as an
option). It is one of the fine-tuning settings
(:attr:`~analysis_utils.training.trainer.FinetuneSettings.precision`), and the fine-tuning
cache key names it (and the device kind, ``cuda`` vs ``cpu``) whenever it differs from the
CPU float32 run, so a bf16- or GPU-trained model has a key of its own in the one cache, and
every CPU float32 key is the one it was before (issue 34).

- :func:`validate` ``(precision, device_kind)``: the name checked, with the valid ones in the
  error; ``tf32`` refused without CUDA (or on a GPU older than Ampere, where the flag does
  nothing), ``bf16`` refused on a GPU without bfloat16 support.
- :func:`applied` ``(precision, device)``: a context manager that sets it around a block and
  restores torch's previous state afterwards (a long-lived worker runs many units, each with
  its own precision, none leaking into the next).
- :func:`check_root` ``(cache)``: refuses a cache root that the earlier, separate-root code
  (``plan run --precision`` before the key named the precision) marked for another precision
  with ``PRECISION.json``: the entries there were keyed as float32 entries although they are
  not, so no plan may read them as its own.

These functions live beside the settings in :mod:`analysis_utils.training.trainer` (the
fine-tuning code that notebooks import applies them); this module re-exports them for the
run plan.

Why the separate root went: it existed only because the key did not name the precision. Now
that it does, a bf16 entry can never be taken for a float32 one, the notebooks render from
the one cache with ``-p precision=bf16`` (no ``BERTOLOGY_CACHE_DIR`` to repoint), and the
plan's keys are the notebooks' keys by construction. A marked root left by the old code is
refused rather than read (:func:`check_root`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..training.trainer import (
    DEFAULT_PRECISION as DEFAULT,
)
from ..training.trainer import (
    PRECISIONS,
    _cuda_capability,  # noqa: F401 - tests pretend a GPU through it
    device_kind,
)
from ..training.trainer import (
    precision_applied as applied,
)
from ..training.trainer import (
    validate_precision as validate,
)

__all__ = ["PRECISIONS", "DEFAULT", "validate", "applied", "check_root", "MARKER",
           "device_kind"]

#: The file with which the earlier code marked a cache root as holding another precision's
#: results (``<cache>/precision/<name>/PRECISION.json``).
MARKER = "PRECISION.json"


def check_root(cache: str | os.PathLike) -> Path:
    """``cache``, unless it is a root the earlier separate-root code marked for a precision
    (module docstring): then ``ValueError`` saying where the one cache is. Its entries were
    keyed without their precision, so they would be read as float32 ones."""
    cache = Path(cache)
    marked = _marked(cache)
    if marked is not None:
        raise ValueError(
            f"the cache {cache} holds {marked} results of the earlier separate-root plan "
            f"({cache / MARKER}), keyed as if they were float32 ones; the fine-tuning key now "
            f"names the precision, so every precision shares one cache. Point "
            f"BERTOLOGY_CACHE_DIR at the cache above {cache.parent.name}/ and run with "
            f"-p precision={marked} (the {marked} models are trained again under their own "
            f"keys); delete {cache} once nothing reads it")
    return cache


def _marked(cache: Path) -> str | None:
    try:
        return str(json.loads((cache / MARKER).read_text())["precision"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
