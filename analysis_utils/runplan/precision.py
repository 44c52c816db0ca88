"""The numeric precision a plan's units run at: ``float32`` (the default; what the committed
run used), ``tf32`` (CUDA matrix products and convolutions on TensorFloat-32 tensor cores,
weights and activations stay float32) or ``bf16`` (``torch.autocast`` to bfloat16 around the
unit's work; weights and optimiser state stay float32).

- :func:`validate` ``(precision, device_kind)``: the name checked, with the valid ones in the
  error; ``tf32`` refused without CUDA (or on a GPU older than Ampere, where the flag does
  nothing), ``bf16`` refused on a GPU without bfloat16 support.
- :func:`applied` ``(precision, device)``: a context manager that sets it around one unit's
  work in the worker, and restores torch's previous state afterwards (a long-lived worker
  runs many units, each with the plan's precision, none leaking into the next).
- :func:`cache_root` ``(cache, precision)``: where a plan run at ``precision`` keeps its
  results. float32: the cache itself. Anything else: ``<cache>/precision/<name>/``, a cache
  of its own, marked by ``PRECISION.json``.

Why a separate root: the fine-tuning cache key (frozen code, ``training.finetune_key``) does
not name the precision or the device, so a bf16-trained model would have the same key as the
float32 one and notebooks 06/07 would load it as if it were the committed run's. Keeping
non-float32 results under their own root means the default cache only ever holds float32
entries; to render notebooks from a bf16 plan, point them there explicitly::

    python -m analysis_utils plan run --precision bf16
    BERTOLOGY_CACHE_DIR=$BERTOLOGY_CACHE_DIR/precision/bf16 python -m analysis_utils run ...

A float32 plan run into a root marked for another precision is refused (it would take the
other precision's entries for float32 ones), as is a run of another precision into it.
(Once the fine-tuning key names precision and device kind, a change to frozen code that
lands with the next full re-render, the separate root is no longer needed.)
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["PRECISIONS", "DEFAULT", "validate", "applied", "cache_root", "MARKER",
           "device_kind"]

#: The precisions a plan can run at, the default first.
PRECISIONS = ("float32", "tf32", "bf16")
DEFAULT = "float32"
#: The file that marks a cache root as holding another precision's results.
MARKER = "PRECISION.json"
SUBDIR = "precision"


def device_kind(device: str = "") -> str:
    """``"cuda"`` / ``"cpu"`` / ... of ``device`` ("" : CUDA when torch sees it, else CPU)."""
    if device:
        return str(device).split(":")[0]
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _cuda_capability() -> tuple[int, int] | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return torch.cuda.get_device_capability()


def validate(precision: str, kind: str | None = None, *, capability=_cuda_capability) -> str:
    """``precision`` if the plan can run at it on device kind ``kind`` (``"cpu"`` /
    ``"cuda"``; None: only the name is checked), else ``ValueError`` saying why and what to use
    instead. ``capability``: returns the CUDA compute capability, or None without CUDA (for
    tests)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of {', '.join(PRECISIONS)} "
                         f"(default {DEFAULT}, the committed run's)")
    if kind is None or precision == DEFAULT:
        return precision
    if kind != "cuda":
        if precision == "tf32":
            raise ValueError(
                f"precision tf32 applies to CUDA matrix products only, and the units run on "
                f"{kind}: use --precision float32 (or bf16), or run on a CUDA machine")
        return precision  # bf16: torch.autocast on the CPU
    cap = capability()
    if cap is None:
        raise ValueError(f"precision {precision} asks for CUDA, which torch does not see here: "
                         "use --precision float32")
    if cap < (8, 0):
        raise ValueError(
            f"precision {precision} needs a GPU of compute capability 8.0 or later (Ampere: "
            f"A100, H100), this one is {cap[0]}.{cap[1]}: use --precision float32")
    return precision


@contextlib.contextmanager
def applied(precision: str, device: str = "") -> Iterator[dict]:
    """Run the block at ``precision`` on ``device`` ("" : CUDA when available); yields what was
    set (``{"precision", "device_kind", "autocast"}``, for the unit's record). Torch's flags
    are restored on exit."""
    import torch

    kind = device_kind(device)
    validate(precision, kind)
    state = {"precision": precision, "device_kind": kind, "autocast": None}
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
             torch.get_float32_matmul_precision())
    try:
        if precision == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
            torch.backends.cudnn.allow_tf32 = True
            torch.set_float32_matmul_precision("high")
        elif precision == "float32":
            torch.backends.cuda.matmul.allow_tf32 = False
            torch.backends.cudnn.allow_tf32 = False
            torch.set_float32_matmul_precision("highest")
        if precision == "bf16":
            state["autocast"] = f"{kind}:bfloat16"
            with torch.autocast(device_type=kind, dtype=torch.bfloat16):
                yield state
        else:
            yield state
    finally:
        torch.backends.cuda.matmul.allow_tf32 = saved[0]
        torch.backends.cudnn.allow_tf32 = saved[1]
        torch.set_float32_matmul_precision(saved[2])


def cache_root(cache: str | os.PathLike, precision: str) -> Path:
    """The cache root a plan at ``precision`` reads and writes (module docstring): ``cache``
    for float32, else ``<cache>/precision/<name>`` (created, with its marker); ``cache``
    itself when it already is that root. Raises ``ValueError`` when ``cache`` is marked for
    another precision."""
    validate(precision)
    cache = Path(cache)
    marked = _marked(cache)
    if marked is not None:
        if marked == precision:
            return cache
        raise ValueError(
            f"the cache {cache} holds {marked} results ({cache / MARKER}); a {precision} plan "
            f"would take them for its own. Point BERTOLOGY_CACHE_DIR at the float32 cache "
            f"(the folder above {cache.parent.name}/) or run with --precision {marked}")
    if precision == DEFAULT:
        return cache
    root = cache / SUBDIR / precision
    root.mkdir(parents=True, exist_ok=True)
    marker = root / MARKER
    if not marker.exists():
        from ..engine import atomic

        atomic.write_text(marker, json.dumps(
            {"precision": precision, "note": "results of a plan run at this precision; not "
             "comparable bit for bit with the float32 cache above, and not to be mixed with it"},
            indent=1))
    return root


def _marked(cache: Path) -> str | None:
    try:
        return str(json.loads((cache / MARKER).read_text())["precision"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
