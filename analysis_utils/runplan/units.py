"""The run plan of a profile: the fine-tunes notebooks 06 and 07 need, as content-keyed units.

:func:`build` ``(profile) -> [FinetuneUnit]`` reads the parameters of notebooks 06 and 07 the
way the notebook driver does (each notebook's ``parameters`` cell, then the profile's
overrides and any ``-p NAME=VALUE``, checked by :func:`analysis_utils.pipeline.plan`) and
makes one unit per fine-tuning run the notebooks call ``plan.fit_run`` for (same model, task,
seed, init, train subset, dev rows and settings), 06's first, then those of 07 that 06 does
not make; a profile that does not run 06 or 07 (``base``) has an empty plan.

:func:`resolve` ``(units, cache_dir) -> [Entry]`` adds what is known here about each: its cache
key (the fine-tuning cache's own, :func:`~analysis_utils.runplan.finetunes.run_key`; the encoder
is loaded to fingerprint it), whether a complete entry with that key is cached (a cut-off
``model.safetensors`` counts as missing) and an estimated training time: the recorded one
for a cached unit, else train examples x epochs x a rate in seconds per example and epoch,
taken from the cache's own entries of the same model and device kind, else
:data:`STATED_SECONDS_PER_EXAMPLE` scaled by the model's layers x hidden size squared.

Example::

    >>> [u.label for u in build("smoke")]                          # doctest: +SKIP
    ['MRPC/pretrained/seed42', 'MRPC/pretrained/seed43', 'STS-B/pretrained/seed42',
     'MRPC/random/seed42', 'STS-B/random/seed42']
"""

from __future__ import annotations

import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from .. import params, paths, pipeline, profiles
from ..training.finetune_cache import CACHE_SUBDIR, read_complete, weights_complete
from ..training.trainer import FinetuneSettings
from . import finetunes
from .execute import NotRetried

__all__ = ["PLAN_NOTEBOOKS", "STATED_SECONDS_PER_EXAMPLE", "FinetuneUnit", "Entry",
           "notebook_parameters", "build", "resolve", "cached_rates", "describe", "duration",
           "cache_folder"]

#: The notebooks whose work the plan computes ahead of them.
PLAN_NOTEBOOKS = ("06", "07")
#: Seconds of training per train example and epoch for all-MiniLM-L6-v2 (6 layers, hidden 384)
#: on one thread of this 2-core CPU, used when the cache holds no run of the model to learn it
#: from: recorded here at 0.079 (MRPC, 3,668 pairs x 3 epochs in 864 s) and 0.021-0.031 (SST-2,
#: 8,000 sentences); pairs of long sentences cost more per example. A rough guide, not a promise.
STATED_SECONDS_PER_EXAMPLE = 0.05
_REFERENCE_SIZE = 6 * 384 ** 2  # layers x hidden^2 of the model the stated rate was measured on


@dataclass(frozen=True)
class FinetuneUnit:
    """One fine-tuning run of the plan: :func:`~analysis_utils.runplan.finetunes.fit_run`'s
    arguments (``model`` name, ``run``: task, seed, init, train subset size; ``settings``;
    ``subset_seed``; ``max_dev`` 0: whole dev set; ``device`` "": where the executor puts it),
    the gold data folder it reads (``data_dir``) and the notebooks that load it
    (``notebooks``, not part of the unit's identity)."""

    model: str
    run: finetunes.Run
    settings: FinetuneSettings
    subset_seed: int = 0
    max_dev: int = 0
    device: str = ""
    data_dir: str | None = None
    notebooks: tuple[str, ...] = field(default=(), compare=False)

    #: GPUs a unit asks for where the cluster has any: two fine-tunes share one GPU.
    gpu_share = 0.5

    @property
    def label(self) -> str:
        """``TASK/init/seedN``, as notebook 06 prints its runs (``@lr`` added for a rate other
        than the paper's (``finetunes.settings()``'s default): notebook 06's learning-rate check)."""
        lr = self.settings.learning_rate
        return (f"{self.run.task}/{self.run.init}/seed{self.run.seed}"
                + ("" if lr == finetunes.settings().learning_rate else f"@lr{lr:g}"))

    @property
    def num_cpus(self) -> int:
        """CPU cores the unit asks for: the torch threads it trains with (notebook parameter
        ``num_threads``; 0 / None: one)."""
        return self.settings.num_threads or 1

    def key(self) -> tuple[str, dict]:
        """``(cache key, key inputs)`` of the fine-tune; loads the encoder and reads the data."""
        return finetunes.run_key(self.run, self.model, self.settings,
                                 subset_seed=self.subset_seed, max_dev=self.max_dev,
                                 data_dir=self.data_dir)

    def execute(self, key: str, cache_dir: str, device: str) -> dict:
        """Fine-tune (or load the cached result) into ``cache_dir`` on ``device`` ("" : CUDA
        when available); returns a JSON-able summary. Raises ``NotRetried`` when the key
        computed here differs from ``key`` (the driver's): the nodes then differ in package
        version or data, and their models would not be the ones the notebooks load
        (:class:`~analysis_utils.runplan.execute.NotRetried`)."""
        ft = finetunes.fit_run(self.run, self.model, self.settings,
                               subset_seed=self.subset_seed, max_dev=self.max_dev,
                               device=device, progress=False, cache_dir=cache_dir,
                               data_dir=self.data_dir)
        if ft.key != key:
            raise NotRetried(
                f"{self.label}: this worker computed the cache key {ft.key}, the driver {key}; "
                "the driver and the workers differ in package version, model or data. "
                "Install the same commit of the package and the same data on every node.")
        return {"from_cache": ft.from_cache, "train_seconds": ft.train_seconds,
                "metrics": ft.metrics, "device": str(ft.device),
                "weights_fingerprint": ft.record.get("weights_fingerprint")}


@dataclass
class Entry:
    """A unit with what is known about it here: ``key`` and ``key_inputs`` (None with
    ``error`` when they cannot be computed here, e.g. the model is not available), ``record``
    (the cached entry's ``result.json``; None: left to compute), ``damaged`` (a complete
    entry whose weights are cut off: computed again), ``estimate_s`` (seconds of training,
    None: unknown) and ``estimate_from`` (how it was estimated)."""

    unit: FinetuneUnit
    key: str | None = None
    key_inputs: dict | None = None
    error: str | None = None
    record: dict | None = None
    damaged: bool = False
    estimate_s: float | None = None
    estimate_from: str = ""

    @property
    def cached(self) -> bool:
        return self.record is not None

    @property
    def work(self) -> int | None:
        """Train examples x epochs (None without key inputs)."""
        if self.key_inputs is None:
            return None
        return self.key_inputs["train"]["n"] * self.unit.settings.epochs


def notebook_parameters(profile: str, extra: dict | None = None) -> dict[str, dict]:
    """``{"06": {name: value}, "07": ...}``: each plan notebook's parameters under ``profile``
    (its parameters cell, the profile's overrides, then ``extra`` as ``-p`` gives them, typed
    and checked as :func:`analysis_utils.pipeline.plan` does for a notebook run). Notebooks
    the profile does not run are left out; raises ``ParameterError`` / ``ValueError`` as the
    driver would."""
    allowed = profiles.notebooks(profile, None)
    wanted = [p for p in PLAN_NOTEBOOKS if allowed is None or p in allowed]
    profiles.overrides(profile, "00")  # an unknown profile fails here, even with no notebook
    if not wanted:
        return {}
    return {job.source.name[:2]: {**params.read_parameters(job.source), **job.parameters}
            for job in pipeline.plan(profile, wanted, extra)}


def _units_of(prefix: str, p: dict, data_dir: str) -> list[FinetuneUnit]:
    """The fine-tunes notebook ``prefix`` makes with parameters ``p``: its ``plan.runs(...)``
    (06 adds ``random_init``; 07 has no such parameter and takes pre-trained runs only),
    ``plan.settings(...)`` and ``plan.fit_run(...)`` calls, argument for argument; then 06's
    learning-rate check (``plan.lr_check_runs``), the same runs at other rates."""
    runs = finetunes.runs(p["tasks"], p["seeds"], p["multi_seed_tasks"], p["train_subsets"],
                          p.get("random_init", False))
    settings = finetunes.settings(p["epochs"], p["batch_size"], p["lr"], p["max_tokens"],
                                  p["warmup_ratio"], p["num_threads"])
    out = [FinetuneUnit(p["model"], r, settings, subset_seed=p["subset_seed"],
                        max_dev=p["max_dev"], device=p["device"], data_dir=data_dir,
                        notebooks=(prefix,)) for r in runs]
    for r, rate in finetunes.lr_check_runs(runs, p.get("lr_check", ""),
                                           p.get("lr_check_tasks", "")):
        rated = finetunes.settings(p["epochs"], p["batch_size"], rate, p["max_tokens"],
                                   p["warmup_ratio"], p["num_threads"])
        out.append(FinetuneUnit(p["model"], r, rated, subset_seed=p["subset_seed"],
                                max_dev=p["max_dev"], device=p["device"], data_dir=data_dir,
                                notebooks=(prefix,)))
    return out


def build(profile: str = "default", extra: dict | None = None,
          data_dir: str | os.PathLike | None = None) -> list[FinetuneUnit]:
    """The plan's units for ``profile`` (see the module docstring), in the order notebook 06
    makes them, then 07's own; a unit both need is listed once, with both notebooks. Cheap:
    nothing is loaded. ``data_dir``: the gold data (default ``$BERTOLOGY_DATA_DIR``), passed
    to every unit so workers read the same folder."""
    data = str(paths.data_dir(data_dir))
    units: dict[FinetuneUnit, tuple[str, ...]] = {}
    for prefix, p in notebook_parameters(profile, extra).items():
        for unit in _units_of(prefix, p, data):
            units[unit] = units.get(unit, ()) + (prefix,)
    return [FinetuneUnit(**{**_fields(u), "notebooks": notebooks})
            for u, notebooks in units.items()]


def _fields(unit: FinetuneUnit) -> dict:
    return {name: getattr(unit, name) for name in unit.__dataclass_fields__}


def cached_rates(cache_dir: str | os.PathLike | None = None) -> dict[tuple[str, str], float]:
    """``{(model name, device kind): median seconds per train example and epoch}`` over the
    complete fine-tuning entries in the cache (``device kind``: ``cpu`` / ``cuda``)."""
    samples: dict[tuple[str, str], list[float]] = {}
    for result in sorted((paths.cache_dir(cache_dir) / CACHE_SUBDIR).glob("*/result.json")):
        try:
            rec = json.loads(result.read_text())
            ki = rec["key_inputs"]
            work = ki["train"]["n"] * ki["settings"]["epochs"]
            kind = str(rec["device"]).split(":")[0]
            samples.setdefault((ki["model"]["name"], kind), []).append(
                rec["train_seconds"] / work)
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
            continue  # a damaged or foreign entry says nothing about rates
    return {k: statistics.median(v) for k, v in samples.items()}


def _size_scale(model: str) -> float | None:
    """The model's layers x hidden^2 relative to all-MiniLM-L6-v2's (None: config unreadable)."""
    try:
        from transformers import AutoConfig

        from ..engine.models import resolve_source

        cfg = AutoConfig.from_pretrained(resolve_source(model)[1])
        return cfg.num_hidden_layers * cfg.hidden_size ** 2 / _REFERENCE_SIZE
    except Exception:  # noqa: BLE001 - any failure only means "no estimate"
        return None


def _device_kind(unit: FinetuneUnit) -> str:
    if unit.device:
        return unit.device.split(":")[0]
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def resolve(units: list[FinetuneUnit], cache_dir: str | os.PathLike | None = None,
            ) -> list[Entry]:
    """One :class:`Entry` per unit: key, cache status, estimated cost (module docstring).
    Reads the cache only; a key that cannot be computed is an entry with ``error`` set."""
    root = paths.cache_dir(cache_dir) / CACHE_SUBDIR
    rates = cached_rates(cache_dir)
    entries, scales = [], {}
    for unit in units:
        entry = Entry(unit)
        try:
            entry.key, entry.key_inputs = unit.key()
        except Exception as err:  # noqa: BLE001 - reported per unit, e.g. a model not here
            entry.error = f"{type(err).__name__}: {err}"
            entries.append(entry)
            continue
        folder = root / entry.key
        record = read_complete(folder, entry.key)
        if record is not None and not weights_complete(folder):
            entry.damaged, record = True, None
        entry.record = record
        if record is not None:
            entry.estimate_s, entry.estimate_from = record["train_seconds"], "recorded"
        else:
            name = entry.key_inputs["model"]["name"]
            kind = _device_kind(unit)
            if (name, kind) in rates:
                entry.estimate_s = rates[(name, kind)] * entry.work
                entry.estimate_from = f"rate of cached {name} runs on {kind}"
            elif kind == "cpu":
                if name not in scales:
                    scales[name] = _size_scale(unit.model)
                if scales[name] is not None:
                    entry.estimate_s = STATED_SECONDS_PER_EXAMPLE * scales[name] * entry.work
                    entry.estimate_from = "stated CPU rate"
        entries.append(entry)
    return entries


def duration(seconds: float) -> str:
    """``12 s``, ``9.2 min``, ``1.3 h``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


def describe(entries: list[Entry]) -> str:
    """The plan as a table, one line per unit (status, train examples x epochs, estimated
    minutes and how, the notebooks that load it, the key), then the totals."""
    rows = [("unit", "status", "train x epochs", "cost", "estimate", "needed by", "key")]
    for e in entries:
        status = ("unknown" if e.error else "cached" if e.cached
                  else "damaged" if e.damaged else "left")
        work = "" if e.key_inputs is None else \
            f"{e.key_inputs['train']['n']} x {e.unit.settings.epochs}"
        cost = "?" if e.estimate_s is None else duration(e.estimate_s)
        rows.append((e.unit.label, status, work, cost, e.estimate_from or "-",
                     ",".join(e.unit.notebooks), e.key or "? (below)"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)) + "  " + r[-1]
             for r in rows]
    left = [e for e in entries if not e.cached]
    known = [e.estimate_s for e in left if e.estimate_s is not None]
    total = (f"{len(entries)} units: {len(entries) - len(left)} cached, {len(left)} left"
             + (f", about {duration(sum(known))} of training one at a time"
                if known else "")
             + (f" ({len(left) - len(known)} without an estimate)" if len(known) < len(left)
                else ""))
    damaged = [e for e in entries if e.damaged]
    if damaged:
        total += (f"; {len(damaged)} damaged (weights cut off): `plan run` trains them again")
    errors: dict[str, list[str]] = {}
    for e in entries:
        if e.error:
            errors.setdefault(e.error, []).append(e.unit.label)
    notes = [f"no key for {', '.join(labels)}: {error}" for error, labels in errors.items()]
    return "\n".join(lines + [total] + notes)


def cache_folder(entry: Entry, cache_dir: str | os.PathLike | None = None) -> Path:
    """Where ``entry``'s fine-tuned model is (or will be) cached."""
    return paths.cache_dir(cache_dir) / CACHE_SUBDIR / str(entry.key)
