"""What a unit uses of its GPU, and the GPU share a unit asks for by default.

- :class:`Monitor`: around one unit's work, the peak GPU memory torch allocated
  (``torch.cuda.max_memory_allocated``, reset at the start) and, where NVML is at hand
  (``pynvml``, else ``nvidia-smi``), the GPU's utilisation and memory in use, sampled every
  ``interval`` seconds. NVML's figures are the whole GPU's: with units packed onto one GPU
  they say how busy the GPU was while the unit ran, not the unit's own part. On a CPU, or
  without NVML, the fields are None (printed ``n/a``).
- :func:`choose_share`: the GPU share of a unit from what units of its kind were measured to
  use (peak memory against the GPU's, and utilisation: a unit that keeps the GPU 25% busy
  gets a quarter), :func:`measured_share` reads the measurements from the plan's unit records
  (:func:`analysis_utils.runplan.execute.record_path`); without one, :func:`prior_share`
  from the figures measured on an H100 for issue 34 (:data:`MEASURED_H100`).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["Monitor", "summarise", "choose_share", "measured_share", "unit_kind", "unit_model",
           "fmt_stats", "nvml_reader", "read_records", "prior_share", "MEASURED_H100", "MAX_PER_GPU", "MEMORY_HEADROOM", "BUSY_TARGET"]

#: Most units one GPU is shared between (each still takes CPU cores and host memory).
MAX_PER_GPU = 4
#: Factor on a measured peak memory before packing by it (allocator fragmentation, CUDA
#: context: about 0.5 GB per process that ``max_memory_allocated`` does not count).
MEMORY_HEADROOM = 1.25
#: Utilisation (percent) the packed units together aim at.
BUSY_TARGET = 100.0
#: What units were measured to use on one H100 (issue 34, at 0dec0e2; the highest busy share
#: seen), used where the cache holds no record of units of the same kind and model yet:
#: ``{(kind, model): {"gpu_util_mean": %}}``. MiniLM fine-tunes 14-27% busy; BERT-base-shaped
#: ones 55-79%. Maps and study units: no utilisation measured (their stated shares apply).
MEASURED_H100 = {("finetune", "minilm"): {"gpu_util_mean": 27.0},
                 ("finetune", "bert-base-uncased"): {"gpu_util_mean": 79.0}}


def unit_kind(unit) -> str:
    """``finetune`` / ``maps`` / ``study`` (or the unit's class name)."""
    return str(getattr(unit, "kind", type(unit).__name__))


def unit_model(unit) -> str:
    """The model name a unit trains or measures ("" when it has none)."""
    model = getattr(unit, "model", None)
    if model is None and getattr(unit, "finetune", None) is not None:
        model = getattr(unit.finetune, "model", None)
    return str(model or "")


# ------------------------------------------------------------------------- sampling NVML

def _physical_index(local: int) -> int:
    """NVML's index of torch's CUDA device ``local`` (``CUDA_VISIBLE_DEVICES`` maps them: Ray
    sets it per worker)."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
               if v.strip()]
    if local < len(visible) and visible[local].isdigit():
        return int(visible[local])
    return local


def nvml_reader(index: int) -> Callable[[], tuple[float, float]] | None:
    """A function returning ``(utilisation %, memory used MiB)`` of GPU ``index`` (NVML's
    numbering), from ``pynvml`` when installed, else ``nvidia-smi``; None when neither is
    there."""
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)

        def read() -> tuple[float, float]:
            util = pynvml.nvmlDeviceGetUtilizationRates(handle)
            mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
            return float(util.gpu), mem.used / 2 ** 20

        read()
        return read
    except Exception:  # noqa: BLE001 - no pynvml, no driver: try nvidia-smi
        pass
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None

    def read_smi() -> tuple[float, float]:
        out = subprocess.run([smi, "--query-gpu=utilization.gpu,memory.used",
                              "--format=csv,noheader,nounits", "-i", str(index)],
                             capture_output=True, text=True, timeout=10, check=True).stdout
        util, mem = (float(x) for x in out.strip().splitlines()[0].split(","))
        return util, mem

    try:
        read_smi()
    except Exception:  # noqa: BLE001
        return None
    return read_smi


def summarise(samples: Sequence[tuple[float, float]]) -> dict:
    """``{"gpu_util_mean", "gpu_util_max", "gpu_mem_used_max_mb", "gpu_samples"}`` of
    ``(utilisation %, memory MiB)`` samples (None each without samples).

    >>> summarise([(10, 100), (30, 300)])["gpu_util_mean"]
    20.0
    """
    if not samples:
        return {"gpu_util_mean": None, "gpu_util_max": None, "gpu_mem_used_max_mb": None,
                "gpu_samples": 0}
    utils = [s[0] for s in samples]
    return {"gpu_util_mean": round(statistics.fmean(utils), 1), "gpu_util_max": max(utils),
            "gpu_mem_used_max_mb": round(max(s[1] for s in samples), 1),
            "gpu_samples": len(samples)}


class Monitor:
    """Context manager around one unit on ``device`` (module docstring); ``stats`` after the
    block: ``gpu_peak_allocated_mb`` (torch), ``gpu_total_mb``, ``gpu_name`` and
    :func:`summarise`'s fields. ``reader``: a ``() -> (util %, MiB)`` sampler (tests; default:
    :func:`nvml_reader` of the unit's GPU)."""

    def __init__(self, device: str = "", interval: float = 0.5,
                 reader: Callable[[], tuple[float, float]] | None = None):
        self.device, self.interval, self.reader = device, interval, reader
        self.stats: dict = {}
        self._samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cuda = False

    def __enter__(self) -> Monitor:
        import torch

        kind = (self.device or ("cuda" if torch.cuda.is_available() else "cpu")).split(":")[0]
        self._cuda = kind == "cuda" and torch.cuda.is_available()
        if self._cuda:
            dev = torch.device(self.device or "cuda")
            self._index = dev.index if dev.index is not None else torch.cuda.current_device()
            torch.cuda.reset_peak_memory_stats(self._index)
            if self.reader is None:
                self.reader = nvml_reader(_physical_index(self._index))
        if self.reader is not None:
            self._thread = threading.Thread(target=self._sample, daemon=True,
                                            name="gpu-monitor")
            self._thread.start()
        return self

    def _sample(self) -> None:
        while True:
            try:
                self._samples.append(self.reader())
            except Exception:  # noqa: BLE001 - a failed read is a missing sample
                pass
            if self._stop.wait(self.interval):
                return

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=15)
        self.stats = {"gpu_peak_allocated_mb": None, "gpu_total_mb": None, "gpu_name": None,
                      **summarise(self._samples)}
        if self._cuda:
            import torch

            props = torch.cuda.get_device_properties(self._index)
            self.stats.update(
                gpu_peak_allocated_mb=round(torch.cuda.max_memory_allocated(self._index)
                                            / 2 ** 20, 1),
                gpu_total_mb=round(props.total_memory / 2 ** 20, 1), gpu_name=props.name)


def fmt_stats(stats: dict) -> str:
    """``GPU 23% busy (max 41%), peak 1,234 MiB allocated`` or ``GPU n/a``."""
    util, peak = stats.get("gpu_util_mean"), stats.get("gpu_peak_allocated_mb")
    if util is None and peak is None:
        return "GPU n/a"
    busy = "busy n/a" if util is None else f"{util:.0f}% busy (max {stats['gpu_util_max']:.0f}%)"
    mem = "peak n/a" if peak is None else f"peak {peak:,.0f} MiB allocated"
    return f"GPU {busy}, {mem}"


# ------------------------------------------------------------------------ choosing shares

def choose_share(peak_mb: float | None, total_mb: float | None, util: float | None, *,
                 max_per_gpu: int = MAX_PER_GPU, headroom: float = MEMORY_HEADROOM,
                 busy_target: float = BUSY_TARGET) -> float | None:
    """The GPU share ``1/k`` of a unit measured to use ``peak_mb`` of a ``total_mb`` GPU and
    keep it ``util`` % busy: ``k`` the most units that fit in memory (``peak x headroom``
    each) and together stay near ``busy_target`` (``ceil(target / util)``), between 1 and
    ``max_per_gpu``. None when nothing was measured.

    >>> choose_share(1500, 81559, 27)      # a MiniLM fine-tune on an H100: 4 to a GPU
    0.25
    >>> choose_share(9000, 81559, 79)      # a BERT-base one, 79% busy: 2 to a GPU
    0.5
    >>> choose_share(50000, 81559, 20)     # memory-bound: one to a GPU
    1.0
    """
    limits = [max_per_gpu]
    if peak_mb is not None and total_mb:
        limits.append(math.floor(total_mb / (max(peak_mb, 1.0) * headroom)))
    if util is not None:
        limits.append(math.ceil(busy_target / max(util, 1.0)))
    if len(limits) == 1:
        return None
    return 1.0 / max(1, min(limits))


def prior_share(unit) -> float | None:
    """:func:`choose_share` from :data:`MEASURED_H100` (None: nothing measured for the unit's
    kind and model)."""
    m = MEASURED_H100.get((unit_kind(unit), unit_model(unit)))
    return None if m is None else choose_share(None, None, m["gpu_util_mean"])


def measured_share(unit, records: Sequence[dict], device_kind: str = "cuda") -> float | None:
    """:func:`choose_share` from the median measurements in ``records`` (the plan's unit
    records, :func:`read_records`) of units of the same kind and model on ``device_kind``
    (None: no such record with GPU figures)."""
    kind, model = unit_kind(unit), unit_model(unit)
    same = [r for r in records if r.get("kind") == kind and r.get("model") == model
            and r.get("device_kind") == device_kind
            and (r.get("gpu") or {}).get("gpu_peak_allocated_mb") is not None]
    if not same:
        return None

    def median(field: str) -> float | None:
        values = [r["gpu"][field] for r in same if r["gpu"].get(field) is not None]
        return statistics.median(values) if values else None

    return choose_share(median("gpu_peak_allocated_mb"), median("gpu_total_mb"),
                        median("gpu_util_mean"))


def read_records(folder: str | os.PathLike) -> list[dict]:
    """Every unit record (``*.json``) in ``folder``; unreadable ones are skipped."""
    out = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            out.append(json.loads(path.read_text()))
        except (OSError, ValueError):
            continue
    return out

