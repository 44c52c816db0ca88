"""The run plan of a profile: the fine-tunes notebooks 06 and 07 need, as content-keyed units.

:func:`build` ``(profile) -> [FinetuneUnit]`` reads the parameters of notebooks 06 and 07 the
way the notebook driver does (each notebook's ``parameters`` cell, then the profile's
overrides and any ``-p NAME=VALUE``, checked by :func:`analysis_utils.publish.pipeline.plan`) and
makes one unit per fine-tuning run the notebooks call ``plan.fit_run`` for (same model, task,
seed, init, train subset, dev rows and settings), 06's first, then those of 07 that 06 does
not make; a profile that does not run 06 or 07 (``base``) has an empty plan.

:func:`resolve` ``(units, cache_dir) -> [Entry]`` adds what is known here about each: its cache
key (the fine-tuning cache's own, :func:`~analysis_utils.runplan.finetunes.run_key`; the
encoder is loaded to fingerprint it; the key names the device kind the unit trains on when it
is not the CPU, and the precision when it is not float32), whether a complete entry with that
key is cached (a cut-off ``model.safetensors`` counts as missing) and an estimated training
time: the recorded one for a cached unit, else train examples x epochs x a rate in seconds per
example and epoch, taken from the cache's own entries of the same model and device kind, else
:data:`STATED_SECONDS_PER_EXAMPLE` scaled by the model's layers x hidden size squared.

Example::

    >>> [u.label for u in build("smoke")]                          # doctest: +SKIP
    ['MRPC/pretrained/seed42', 'MRPC/pretrained/seed43', 'STS-B/pretrained/seed42',
     'MRPC/random/seed42', 'STS-B/random/seed42']
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from .. import params, paths, profiles
from ..engine import atomic
from ..publish import pipeline
from ..training.finetune_cache import CACHE_SUBDIR, read_complete, weights_complete
from ..training.trainer import FinetuneSettings
from . import finetunes
from .execute import NotRetried

__all__ = ["PLAN_NOTEBOOKS", "STATED_SECONDS_PER_EXAMPLE", "FinetuneUnit", "Entry",
           "notebook_parameters", "build", "resolve", "cached_rates", "describe", "duration",
           "cache_folder", "StudyUnit", "StudyEntry", "build_studies", "resolve_studies",
           "describe_studies", "MAPS_SUBDIR", "MapsUnit", "MapsEntry", "build_maps",
           "resolve_maps", "describe_maps"]

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

    #: GPUs a unit asks for where the cluster has any and nothing was measured yet (two
    #: fine-tunes share one GPU); the plan's unit records of earlier runs override it
    #: (:func:`analysis_utils.runplan.gpu.measured_share`), ``--gpus-per-unit`` overrides both.
    gpu_share = 0.5
    #: What the plan's unit records call it.
    kind = "finetune"
    #: Modules a long-lived worker imports once, before its first unit.
    warm_imports = ("analysis_utils.training.finetune",)

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

    @property
    def precision(self) -> str:
        """The numeric precision it trains at (notebook parameter ``precision``; the executor
        applies it around the unit, :func:`~analysis_utils.runplan.execute.execute_unit`)."""
        return self.settings.precision

    def device_kind(self) -> str:
        """``cpu`` / ``cuda``: the kind of ``device`` when the unit names one, else this
        machine's (CUDA when torch sees it)."""
        return _device_kind(self)

    def key(self, device_kind: str | None = None) -> tuple[str, dict]:
        """``(cache key, key inputs)`` of the fine-tune; loads the encoder and reads the data.
        ``device_kind``: the kind of device the unit will train on (None:
        :meth:`device_kind`; a Ray run passes the cluster's, ``cuda`` when it has GPUs), which
        the key names unless it is ``cpu``, so the driver's key is the worker's."""
        return finetunes.run_key(self.run, self.model, self.settings,
                                 subset_seed=self.subset_seed, max_dev=self.max_dev,
                                 data_dir=self.data_dir,
                                 device=self.device or device_kind or self.device_kind())

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
    and checked as :func:`analysis_utils.publish.pipeline.plan` does for a notebook run). Notebooks
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
    (06 adds ``random_init``, the random-init runs per task; 07 has no such parameter and
    takes pre-trained runs only), ``plan.settings(...)`` and ``plan.fit_run(...)`` calls,
    argument for argument; then 06's
    learning-rate check (``plan.lr_check_runs``), the same runs at other rates."""
    runs = finetunes.runs(p["tasks"], p["seeds"], p["multi_seed_tasks"], p["train_subsets"],
                          p.get("random_init", 0))
    precision = p.get("precision", "float32")
    settings = finetunes.settings(p["epochs"], p["batch_size"], p["lr"], p["max_tokens"],
                                  p["warmup_ratio"], p["num_threads"], precision)
    out = [FinetuneUnit(p["model"], r, settings, subset_seed=p["subset_seed"],
                        max_dev=p["max_dev"], device=p["device"], data_dir=data_dir,
                        notebooks=(prefix,)) for r in runs]
    for r, rate in finetunes.lr_check_runs(runs, p.get("lr_check", ""),
                                           p.get("lr_check_tasks", "")):
        rated = finetunes.settings(p["epochs"], p["batch_size"], rate, p["max_tokens"],
                                   p["warmup_ratio"], p["num_threads"], precision)
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


def _device_kind(unit: FinetuneUnit, default: str | None = None) -> str:
    """The kind of the unit's ``device``, else ``default``, else this machine's."""
    if unit.device:
        return unit.device.split(":")[0]
    if default:
        return default
    from ..training.trainer import device_kind

    return device_kind()  # where finetune() puts it: $BERTOLOGY_DEVICE, else CUDA if here


def resolve(units: list[FinetuneUnit], cache_dir: str | os.PathLike | None = None,
            device_kind: str | None = None) -> list[Entry]:
    """One :class:`Entry` per unit: key, cache status, estimated cost (module docstring).
    Reads the cache only; a key that cannot be computed is an entry with ``error`` set.
    ``device_kind``: where units that name no device will train (None: this machine's kind;
    ``plan run`` on Ray passes the cluster's), for their keys and estimates."""
    root = paths.cache_dir(cache_dir) / CACHE_SUBDIR
    rates = cached_rates(cache_dir)
    entries, scales = [], {}
    for unit in units:
        entry = Entry(unit)
        try:
            entry.key, entry.key_inputs = unit.key(_device_kind(unit, device_kind))
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
            kind = _device_kind(unit, device_kind)
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


def _aligned(rows: list[tuple[str, ...]]) -> list[str]:
    """``rows`` as text columns padded to their widest cell (the last column, the key, as is)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=False)) + "  " + r[-1]
            for r in rows]


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
    lines = _aligned(rows)
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


# --- the second wave: units that measure a fine-tuned model, after the fine-tunes -----------


class _OnFinetuned:
    """What a second-wave unit takes from the fine-tune it measures (``self.finetune``): its
    device and thread count. It only evaluates (no backward pass), so four share a GPU
    unless measurements say otherwise."""

    gpu_share = 0.25
    warm_imports = ("analysis_utils.training.finetune", "analysis_utils.analyses.drift",
                    "analysis_utils.engine.attention", "analysis_utils.analyses.disabling_study")

    @property
    def model(self) -> str:
        return self.finetune.model

    @property
    def device(self) -> str:
        return self.finetune.device

    @property
    def num_cpus(self) -> int:
        return self.finetune.num_cpus

    #: The precision the unit's own work runs at: float32, whatever its model was trained
    #: at, since notebooks 06 and 07 measure the fine-tuned models at torch's defaults
    #: (only ``finetune`` applies the ``precision`` parameter); its key names the fine-tune,
    #: whose key names the precision.
    precision = "float32"


# notebook 07's per-model studies

@dataclass(frozen=True)
class StudyUnit(_OnFinetuned):
    """Notebook 07's measurements of one fine-tuned model (its disabling sweeps, head
    importance and pruning curves: :func:`analysis_utils.analyses.disabling_study.study`),
    computed ahead of the notebook. ``finetune``: the unit that trains the model (it runs in
    the first wave; here the model is loaded from the cache); ``settings``: what 07 measures
    on it (:func:`~analysis_utils.analyses.disabling_study.notebook_settings`)."""

    finetune: FinetuneUnit
    settings: object  # disabling_study.StudySettings (not imported here: analyses load torch)
    notebooks: tuple[str, ...] = field(default=("07",), compare=False)
    kind = "study"

    @property
    def label(self) -> str:
        parts = "+".join(self.settings.modes) + (" +curves" if self.settings.curves else "")
        return f"{self.finetune.label} study ({parts})"

    def key(self, finetuned_key: str | None = None) -> tuple[str, dict]:
        """``(key, {"finetuned": key, "parts": {part: key}})``: the key names every part's
        cache entry, so it changes when any of them would. ``finetuned_key``: the fine-tune's
        key when already known (else computed: the encoder is loaded to fingerprint it)."""
        from ..analyses import disabling_study

        ft_key = finetuned_key or self.finetune.key()[0]
        keyed = disabling_study.part_keys(ft_key, self.finetune.run.task, self.settings,
                                          self.finetune.data_dir)
        parts = {p: k for p, (k, _) in keyed.items()}
        digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
        return f"{ft_key}-study-{digest[:12]}", {
            "finetuned": ft_key, "parts": parts,
            "part_inputs": {p: ki for p, (_, ki) in keyed.items()}}

    def execute(self, key: str, cache_dir: str, device: str) -> dict:
        """Load the fine-tuned model from the cache (trained first if it is missing) and
        compute the parts that are not cached; returns seconds and cache hits per part."""
        from ..analyses import disabling_study

        f = self.finetune
        ft = _load_checked(self, key, cache_dir, device)
        st = disabling_study.study(ft, f.run.task, self.settings, cache_dir=cache_dir,
                                   data_dir=f.data_dir)
        return {"from_cache": all(st.from_cache.values()), "parts_from_cache": st.from_cache,
                "seconds_by_part": st.seconds, "device": str(ft.device)}


def _load_checked(unit, key: str, cache_dir: str, device: str):
    """The fine-tuned model a second-wave unit (study or maps) measures, loaded from the cache
    (trained first if it is missing), after checking that the unit's key computed here from
    the model just loaded (no second fingerprint) is the driver's ``key``."""
    f = unit.finetune
    ft = finetunes.fit_run(f.run, f.model, f.settings, subset_seed=f.subset_seed,
                           max_dev=f.max_dev, device=device, progress=False,
                           cache_dir=cache_dir, data_dir=f.data_dir)
    got = unit.key(ft.key)[0]
    if got != key:
        raise NotRetried(f"{unit.label}: this worker computed the key {got}, the driver "
                         f"{key}; install the same commit and data on every node.")
    return ft


def build_studies(profile: str = "default", extra: dict | None = None,
                  data_dir: str | os.PathLike | None = None) -> list[StudyUnit]:
    """Notebook 07's per-model studies under ``profile`` (empty when it does not run 07), one
    per fine-tuned model 07 loads, with the settings 07 gives
    :func:`~analysis_utils.analyses.disabling_study.study` for it."""
    from ..analyses import disabling_study

    p = notebook_parameters(profile, extra).get("07")
    if p is None:
        return []
    data = str(paths.data_dir(data_dir))
    fts = _units_of("07", p, data)
    out = []
    for u in fts:
        first = u.run.seed == next(x.run.seed for x in fts if x.run.task == u.run.task)
        out.append(StudyUnit(u, disabling_study.notebook_settings(
            u.run.task, first_seed=first, modes=p["modes"],
            extras_first_seed_only=p["extras_first_seed_only"], max_tokens=p["max_tokens"],
            max_dev=p["max_dev"], importance_split=p["importance_split"],
            importance_examples=p["importance_examples"], prune_mode=p["prune_mode"],
            prune_step=p["prune_step"], n_random_orders=p["n_random_orders"],
            seed=p["seed"])))
    return out


@dataclass
class StudyEntry:
    """A study unit with its ``key`` (None with ``error``), ``parts`` ``{part: cached}`` and
    ``estimate_s`` (seconds to compute what is left: its examples x the median recorded
    seconds per example of the same part, task and model in the cache; None: unknown)."""

    unit: StudyUnit
    key: str | None = None
    error: str | None = None
    parts: dict = field(default_factory=dict)
    estimate_s: float | None = None

    @property
    def cached(self) -> bool:
        return bool(self.parts) and all(self.parts.values())


def _part_size(ki: dict) -> int:
    """Examples a study part evaluates (dev rows; importance: its own examples)."""
    return int((ki.get("examples") if ki["part"] == "importance" else ki["dev"])["n"])


def _model_name(ki: dict) -> str:
    """The encoder's name, the head of the fine-tuned model's key (``NAME-TASK-init-...``),
    from a study part's or a maps unit's key inputs (``finetuned``, ``task``)."""
    return ki["finetuned"].split(f"-{ki['task']}-")[0]


def _recorded_part_rates(cache_dir) -> dict[tuple[str, str, str], float]:
    """``{(model, task, part kind): median seconds per example}`` over the cache's complete
    study entries (part kind: ``sweep-uniform``, ``importance``, ...)."""
    from ..analyses import disabling_study

    samples: dict[tuple[str, str, str], list[float]] = {}
    root = paths.cache_dir(cache_dir) / disabling_study.SUBDIR
    for result in sorted(root.glob("*/result.json")):
        try:
            rec = json.loads(result.read_text())
            ki = rec["key_inputs"]
            kind = ki["part"] + (f"-{ki['mode']}" if ki["part"] == "sweep" else "")
            samples.setdefault((_model_name(ki), ki["task"], kind), []).append(
                float(rec["seconds"]) / _part_size(ki))
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
            continue
    return {k: statistics.median(v) for k, v in samples.items()}


def resolve_studies(planned: list[StudyUnit], cache_dir: str | os.PathLike | None = None,
                    finetune_entries: list[Entry] | None = None) -> list[StudyEntry]:
    """One :class:`StudyEntry` per unit: key, which parts are cached, estimated cost.
    ``finetune_entries``: :func:`resolve`'s entries, whose keys are reused."""
    from ..analyses import disabling_study

    rates = _recorded_part_rates(cache_dir)
    known_keys = {e.unit: e.key for e in finetune_entries or () if e.key}
    entries = []
    for unit in planned:
        entry = StudyEntry(unit)
        try:
            entry.key, inputs = unit.key(known_keys.get(unit.finetune))
            entry.parts = disabling_study.parts_cached(inputs["parts"], cache_dir)
        except Exception as err:  # noqa: BLE001 - reported per unit
            entry.error = f"{type(err).__name__}: {err}"
            entries.append(entry)
            continue
        left = [p for p, done in entry.parts.items() if not done]
        known = []
        for p in left:
            ki = inputs["part_inputs"][p]
            rate = rates.get((_model_name(ki), unit.finetune.run.task, p))
            known.append(None if rate is None else rate * _part_size(ki))
        entry.estimate_s = (sum(known) if all(k is not None for k in known) else None) \
            if left else 0.0
        entries.append(entry)
    return entries


def describe_studies(entries: list[StudyEntry]) -> str:
    """The studies as a table (status, parts cached, estimated minutes, key), then totals."""
    rows = [("study unit", "status", "parts cached", "cost", "key")]
    for e in entries:
        status = "unknown" if e.error else "cached" if e.cached else "left"
        done = f"{sum(e.parts.values())}/{len(e.parts)}" if e.parts else "?"
        cost = "?" if e.estimate_s is None else duration(e.estimate_s)
        rows.append((e.unit.label, status, done, cost, e.key or "? (below)"))
    lines = _aligned(rows)
    left = [e for e in entries if not e.cached]
    known = [e.estimate_s for e in left if e.estimate_s is not None]
    total = (f"{len(entries)} study units: {len(entries) - len(left)} cached, {len(left)} left"
             + (f", about {duration(sum(known))} one at a time" if known else "")
             + (f" ({len(left) - len(known)} without an estimate: no recorded run of the "
                "same task yet)" if len(known) < len(left) else ""))
    notes = [f"no key for {e.unit.label}: {e.error}" for e in entries if e.error]
    return "\n".join(lines + [total] + notes)


# --- notebook 06's maps of each fine-tuned model: drift's input, in the same second wave -----

#: Where a maps unit records which attention store it filled (``<key>.json``).
MAPS_SUBDIR = Path("runplan") / "maps"


@dataclass(frozen=True)
class MapsUnit(_OnFinetuned):
    """Notebook 06's drift input for one fine-tuned model: its attention maps on the first
    ``n_examples`` dev examples of its task (:func:`analysis_utils.analyses.drift.dev_inputs`),
    extracted into the attention cache ahead of the notebook, which then reads them instead of
    running the model (Figure 5's cosines, the features of Figures 6-7 and the map types are
    computed from them). ``finetune``: the unit that trains the model (first wave)."""

    finetune: FinetuneUnit
    n_examples: int
    max_tokens: int
    notebooks: tuple[str, ...] = field(default=("06",), compare=False)
    kind = "maps"

    @property
    def label(self) -> str:
        n = self.n_examples or "all"
        return f"{self.finetune.label} maps ({n} dev)"

    def key(self, finetuned_key: str | None = None) -> tuple[str, dict]:
        """``(key, inputs)``: the fine-tune's key with what selects the inputs (task, dev
        rows, piece limit). ``finetuned_key``: the fine-tune's key when already known."""
        ft_key = finetuned_key or self.finetune.key()[0]
        inputs = {"finetuned": ft_key, "task": self.finetune.run.task,
                  "n_examples": int(self.n_examples), "max_tokens": int(self.max_tokens)}
        digest = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
        return f"{ft_key}-maps-{digest[:12]}", inputs

    def execute(self, key: str, cache_dir: str, device: str) -> dict:
        """Load the fine-tuned model from the cache (trained first if it is missing) and
        extract its maps on the notebook's inputs (resumed where a store is partial); record
        which store holds them."""
        import time

        from ..analyses import drift
        from ..engine import attention

        f = self.finetune
        ft = _load_checked(self, key, cache_dir, device)
        inputs = self.key(ft.key)[1]
        t0 = time.perf_counter()
        loaded = ft.loaded
        _, enc = drift.dev_inputs(f.run.task, loaded.tokenizer, self.n_examples,
                                  self.max_tokens, data_dir=f.data_dir)
        store = attention.extract_attention(loaded, enc.inputs, cache_dir=cache_dir,
                                            progress=False)
        seconds = time.perf_counter() - t0
        if not store.extracted_now and store.wall_time_s:  # cached: what extracting took
            seconds = float(store.wall_time_s)
        record = {"key_inputs": inputs, "store": store.directory.name,
                  "examples": len(enc.inputs), "seconds": seconds}
        marker = paths.cache_dir(cache_dir) / MAPS_SUBDIR / f"{key}.json"
        atomic.write_text(marker, json.dumps(record, indent=1))
        return {"from_cache": not store.extracted_now, "store": record["store"],
                "examples": record["examples"], "seconds": seconds, "device": str(ft.device)}


def build_maps(profile: str = "default", extra: dict | None = None,
               data_dir: str | os.PathLike | None = None) -> list[MapsUnit]:
    """Notebook 06's maps units under ``profile`` (empty when it does not run 06): one per
    pre-trained fine-tune 06 compares with the pre-trained model, with its ``n_examples`` and
    ``max_tokens``."""
    p = notebook_parameters(profile, extra).get("06")
    if p is None:
        return []
    fts = _units_of("06", p, str(paths.data_dir(data_dir)))
    main = [u for u in fts if u.run.init == "pretrained"
            and u.settings.learning_rate == float(p["lr"])]
    return [MapsUnit(u, int(p["n_examples"]), int(p["max_tokens"])) for u in main]


@dataclass
class MapsEntry:
    """A maps unit with its ``key`` (None with ``error``), whether its store is ``cached``
    and ``estimate_s`` (its examples x the median recorded seconds per example of the
    cache's maps records of the same model; None: none recorded)."""

    unit: MapsUnit
    key: str | None = None
    error: str | None = None
    cached: bool = False
    estimate_s: float | None = None


def _maps_record(cache_dir, key: str) -> dict | None:
    """The maps unit's record when its store is complete, else None (a record whose store
    was removed or left partial counts as missing)."""
    root = paths.cache_dir(cache_dir)
    try:
        rec = json.loads((root / MAPS_SUBDIR / f"{key}.json").read_text())
        complete = (root / "attention" / rec["store"] / "COMPLETE").exists()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return rec if complete else None


def resolve_maps(planned: list[MapsUnit], cache_dir: str | os.PathLike | None = None,
                 finetune_entries: list[Entry] | None = None) -> list[MapsEntry]:
    """One :class:`MapsEntry` per unit. ``finetune_entries``: :func:`resolve`'s entries, whose
    keys are reused."""
    known_keys = {e.unit: e.key for e in finetune_entries or () if e.key}
    rates: dict[str, list[float]] = {}
    for rec_path in sorted((paths.cache_dir(cache_dir) / MAPS_SUBDIR).glob("*.json")):
        try:
            rec = json.loads(rec_path.read_text())
            rate = float(rec["seconds"]) / int(rec["examples"])
            rates.setdefault(_model_name(rec["key_inputs"]), []).append(rate)
        except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
            continue
    entries = []
    for unit in planned:
        entry = MapsEntry(unit)
        try:
            entry.key, inputs = unit.key(known_keys.get(unit.finetune))
        except Exception as err:  # noqa: BLE001 - reported per unit
            entry.error = f"{type(err).__name__}: {err}"
            entries.append(entry)
            continue
        entry.cached = _maps_record(cache_dir, entry.key) is not None
        rate = rates.get(_model_name(inputs))
        if entry.cached:
            entry.estimate_s = 0.0
        elif rate and unit.n_examples:
            entry.estimate_s = statistics.median(rate) * unit.n_examples
        entries.append(entry)
    return entries


def describe_maps(entries: list[MapsEntry]) -> str:
    """The maps units as a table (status, estimated cost, key), then totals."""
    rows = [("maps unit", "status", "cost", "key")]
    for e in entries:
        status = "unknown" if e.error else "cached" if e.cached else "left"
        cost = "?" if e.estimate_s is None else duration(e.estimate_s)
        rows.append((e.unit.label, status, cost, e.key or "? (below)"))
    left = [e for e in entries if not e.cached]
    known = [e.estimate_s for e in left if e.estimate_s is not None]
    total = (f"{len(entries)} maps units: {len(entries) - len(left)} cached, {len(left)} left"
             + (f", about {duration(sum(known))} one at a time" if known else "")
             + (f" ({len(left) - len(known)} without an estimate)" if len(known) < len(left)
                else ""))
    notes = [f"no key for {e.unit.label}: {e.error}" for e in entries if e.error]
    return "\n".join(_aligned(rows) + [total] + notes)
