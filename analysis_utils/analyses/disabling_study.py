"""Everything notebook 07 measures on one fine-tuned model, cached by content.

:func:`study` runs, for one fine-tuned classifier (a :class:`~analysis_utils.training.finetune.
FineTuned`), the disabling sweep of each mode asked for (:func:`~.disabling.sweep`), Michel et
al.'s head importance (:func:`~.disabling.head_importance`) and, when asked, the pruning curves
(:func:`~.disabling.pruning_curves`). Each part is an entry of the on-disk cache
``<cache>/disabling/<key>/``, keyed by the fine-tuned model's own cache key, a digest of the
examples it is evaluated on and every setting that changes the numbers (:func:`part_key`), so

- notebook 07 holds one fine-tuned model at a time: load, study, drop (its memory stays that of
  one model, whatever the number of tasks and seeds);
- the run plan (:mod:`analysis_utils.runplan`) computes the same parts ahead of the notebook,
  as units of their own, and the notebook then only reads them;
- a killed run resumes: a part is written to ``<key>.tmp-<pid>/`` and renamed into place with
  a ``COMPLETE`` marker holding the sha256 of every file (the fine-tuning cache's
  :func:`~analysis_utils.training.finetune_cache.publish`); an entry that does not verify is
  computed again.

What is cached is what the model computes (predictions, logits, metric values, gradients);
the statistics over them (bootstrap, tests, corrections) stay in the notebook, where they
are cheap and their parameters are shown.

Example::

    >>> s = StudySettings(modes=("uniform",), metric_name="f1", curves=False)   # doctest: +SKIP
    >>> out = study(ft, "MRPC", s)                                              # doctest: +SKIP
    >>> out.sweeps["uniform"].table.head(2)                                     # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .. import paths
from ..data.glue_metrics import primary_metric
from ..engine.attention import uses_token_types
from ..training.finetune_cache import fresh_tmp, publish, read_complete, versions, write_json
from ..training.glue_data import examples_digest, read_task, subsample, task_dataset
from . import disabling, significance

__all__ = ["STUDY_VERSION", "SUBDIR", "StudySettings", "Study", "study", "part_keys",
           "notebook_settings", "parts_cached",
           "cached_parts", "metric_for"]

#: Bumped whenever a change to disabling.py or this module would change a cached part.
STUDY_VERSION = "2"
SUBDIR = "disabling"
_CURVE_DTYPES = {"order": str, "repeat": int, "n_removed": int, "fraction": float, "mode": str,
                 "metric": str, "value": float, "delta": float, "removed": str}


@dataclass(frozen=True)
class StudySettings:
    """What to measure on one fine-tuned model (notebook 07's parameters).

    modes: sweeps to run (``"uniform"``, ``"zero"``); metric_name: the task's primary metric
    (a function of :mod:`~.significance`); max_tokens: pieces per example (the fine-tuning
    length); max_dev: dev examples (0: all); importance_split / importance_examples /
    importance_seed: where Michel's importance is estimated (a seeded subset of that split;
    0: all of it); curves: also the pruning curves (``prune_mode``, ``prune_step``,
    ``n_random_orders`` random orders from ``curve_seed``)."""

    modes: tuple[str, ...] = ("uniform", "zero")
    metric_name: str = "accuracy"
    max_tokens: int = 128
    max_dev: int = 0
    importance_split: str = "train"
    importance_examples: int = 500
    importance_seed: int = 0
    curves: bool = True
    prune_mode: str = "zero"
    prune_step: float = 0.1
    n_random_orders: int = 3
    curve_seed: int = 0

    def __post_init__(self):
        bad = [m for m in self.modes if m not in ("uniform", "zero")]
        if bad or not self.modes:
            raise ValueError(f"modes must be 'uniform' and/or 'zero', got {self.modes!r}")
        if self.importance_split not in ("train", "dev"):
            raise ValueError(f"importance_split must be 'train' or 'dev', got "
                             f"{self.importance_split!r}")
        metric_for(self.metric_name)


@dataclass
class Study:
    """The parts :func:`study` returns: ``sweeps`` ``{mode: Sweep}``, ``importance`` (layers,
    heads), ``curves`` (None when not asked), the dev ``labels``, ``n_dev``, ``seconds`` of
    computing per part (as recorded when it was computed, for a part read from the cache) and
    ``from_cache`` per part."""

    sweeps: dict[str, disabling.Sweep]
    importance: np.ndarray
    curves: pd.DataFrame | None
    labels: np.ndarray
    n_dev: int
    seconds: dict[str, float] = field(default_factory=dict)
    from_cache: dict[str, bool] = field(default_factory=dict)


def metric_for(name: str) -> Callable:
    """The metric function of :mod:`~.significance` called ``name`` (``f1``, ``pearson``...)."""
    fn = getattr(significance, name, None)
    if not callable(fn):
        raise ValueError(f"no metric {name!r} in analysis_utils.analyses.significance")
    return fn


def _sha(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _examples(task: str, s: StudySettings, data_dir=None):
    """(dev examples, importance examples) as :func:`study` evaluates them."""
    dev = read_task(task, "dev", data_dir, max_examples=s.max_dev or None)
    if s.importance_split == "dev":
        return dev, dev
    imp = subsample(read_task(task, "train", data_dir), s.importance_examples or None,
                    s.importance_seed)[0]
    return dev, imp


def part_keys(finetuned_key: str, task: str, s: StudySettings, data_dir=None,
              examples=None) -> dict[str, tuple[str, dict]]:
    """``{part: (cache key, key inputs)}`` for the parts :func:`study` computes with ``s``:
    ``sweep-<mode>`` per mode, ``importance`` and, with ``s.curves``, ``curves``. Reads the
    GLUE files (or takes ``examples`` = (dev, importance) already read); loads no model."""
    dev, imp = examples if examples is not None else _examples(task, s, data_dir)
    common = {"finetuned": finetuned_key, "task": task, "max_tokens": s.max_tokens,
              "study_version": STUDY_VERSION, "versions": versions()}
    dev_part = {"n": len(dev), "sha256": examples_digest(dev)}
    out = {}
    for mode in s.modes:
        ki = {**common, "part": "sweep", "mode": mode, "metric": s.metric_name, "dev": dev_part}
        out[f"sweep-{mode}"] = (f"{finetuned_key}-sweep-{mode}-{_sha(ki)[:16]}", ki)
    ki_imp = {**common, "part": "importance", "split": s.importance_split,
              "examples": {"n": len(imp), "sha256": examples_digest(imp)}}
    out["importance"] = (f"{finetuned_key}-importance-{_sha(ki_imp)[:16]}", ki_imp)
    if s.curves:
        ki = {**common, "part": "curves", "metric": s.metric_name, "dev": dev_part,
              "importance": out["importance"][0], "prune_mode": s.prune_mode,
              "prune_step": s.prune_step, "n_random_orders": s.n_random_orders,
              "seed": s.curve_seed}
        out["curves"] = (f"{finetuned_key}-curves-{_sha(ki)[:16]}", ki)
    return out


def _root(cache_dir) -> Path:
    return paths.cache_dir(cache_dir) / SUBDIR


def cached_parts(finetuned_key: str, task: str, s: StudySettings, cache_dir=None,
                 data_dir=None) -> dict[str, bool]:
    """``{part: cached}`` (see :func:`part_keys`): what a run of :func:`study` would read."""
    return parts_cached({part: key for part, (key, _) in
                         part_keys(finetuned_key, task, s, data_dir).items()}, cache_dir)


def parts_cached(keys: dict[str, str], cache_dir=None) -> dict[str, bool]:
    """``{part: cached}`` for parts whose cache keys are already known (``{part: key}``)."""
    root = _root(cache_dir)
    return {part: read_complete(root / key, key) is not None for part, key in keys.items()}


def _write(root: Path, key: str, key_inputs: dict, arrays: dict[str, np.ndarray],
           frames: dict[str, pd.DataFrame], meta: dict) -> None:
    tmp = fresh_tmp(root, key)
    for name, arr in arrays.items():
        np.save(tmp / f"{name}.npy", arr, allow_pickle=False)
    for name, df in frames.items():
        df.to_csv(tmp / f"{name}.csv", index=False, float_format="%.17g")
    write_json(tmp / "result.json", {"key": key, "key_inputs": key_inputs, **meta})
    publish(tmp, root / key, key)


def _read(root: Path, key: str) -> tuple[Path, dict] | None:
    record = read_complete(root / key, key)
    return None if record is None else (root / key, record)


def read_curves(path: str | os.PathLike) -> pd.DataFrame:
    """A cached pruning-curve table as :func:`~.disabling.pruning_curves` returned it: an
    undefined metric (Pearson's r of constant predictions) stays NaN, the heads removed at 0%
    stay ``""``."""
    curves = pd.read_csv(path, dtype=_CURVE_DTYPES)
    curves["removed"] = curves["removed"].fillna("")
    return curves


def _sweep_changes(num_layers: int, num_heads: int, mode: str) -> list[disabling.Change]:
    return ([disabling.baseline_change()] + disabling.head_changes(num_layers, num_heads, mode)
            + disabling.layer_changes(num_layers, num_heads, mode))


def _load_sweep(folder: Path, record: dict) -> disabling.Sweep:
    st = record["settings"]
    changes = _sweep_changes(st["num_layers"], st["num_heads"], st["mode"])
    values = np.load(folder / "values.npy")
    return disabling.Sweep(table=disabling.sweep_table(changes, values, record["metric"]),
                           predictions=np.load(folder / "predictions.npy"),
                           labels=np.load(folder / "labels.npy"),
                           logits=np.load(folder / "logits.npy"), changes=changes,
                           seconds=float(record["seconds"]), settings=st)


def study(ft, task: str, s: StudySettings, *, cache_dir: str | os.PathLike | None = None,
          data_dir: str | os.PathLike | None = None, recompute: bool = False) -> Study:
    """The parts of ``s`` for the fine-tuned model ``ft`` (its ``key``, ``model`` and
    ``tokenizer``), each read from the cache or computed and cached (module docstring).
    ``recompute``: compute every part again (and replace its entry)."""
    if getattr(ft, "model", None) is None:
        raise ValueError(f"{task}: the fine-tuned model was released (model is None); load it "
                         "again with runplan.finetunes.fit_run before studying it")
    root = _root(cache_dir)
    dev_ex, imp_ex = _examples(task, s, data_dir)
    keys = part_keys(ft.key, task, s, data_dir, examples=(dev_ex, imp_ex))
    metric = metric_for(s.metric_name)
    types = uses_token_types(ft.model)
    dev = task_dataset(task, dev_ex, ft.tokenizer, s.max_tokens, types)
    seconds, from_cache, sweeps = {}, {}, {}
    for mode in s.modes:
        part = f"sweep-{mode}"
        key, ki = keys[part]
        hit = None if recompute else _read(root, key)
        if hit is not None:
            sweeps[mode], from_cache[part] = _load_sweep(*hit), True
            seconds[part] = sweeps[mode].seconds
            continue
        sw = disabling.sweep(ft.model, dev, dev.labels, metric, mode=mode,
                             metric_name=s.metric_name)
        _write(root, key, ki, {"values": sw.table["value"].to_numpy(float),
                               "predictions": sw.predictions, "labels": sw.labels,
                               "logits": sw.logits}, {},
               {"settings": sw.settings, "metric": s.metric_name, "seconds": sw.seconds})
        sweeps[mode], seconds[part], from_cache[part] = sw, sw.seconds, False
    key, ki = keys["importance"]
    hit = None if recompute else _read(root, key)
    if hit is not None:
        importance = np.load(hit[0] / "importance.npy")
        seconds["importance"], from_cache["importance"] = float(hit[1]["seconds"]), True
    else:
        imp_set = dev if s.importance_split == "dev" else task_dataset(
            task, imp_ex, ft.tokenizer, s.max_tokens, types)
        t0 = time.perf_counter()
        importance = disabling.head_importance(ft.model, imp_set, imp_set.labels)
        took = time.perf_counter() - t0
        _write(root, key, ki, {"importance": np.asarray(importance, dtype=float)}, {},
               {"seconds": took})
        seconds["importance"], from_cache["importance"] = took, False
    curves = None
    if s.curves:
        key, ki = keys["curves"]
        hit = None if recompute else _read(root, key)
        if hit is not None:
            curves = read_curves(hit[0] / "curves.csv")
            seconds["curves"], from_cache["curves"] = float(hit[1]["seconds"]), True
        else:
            t0 = time.perf_counter()
            curves = disabling.pruning_curves(
                ft.model, dev, dev.labels, metric, disabling.normalize_importance(importance),
                mode=s.prune_mode, step=s.prune_step, n_random=s.n_random_orders,
                seed=s.curve_seed, metric_name=s.metric_name)
            took = time.perf_counter() - t0
            _write(root, key, ki, {}, {"curves": curves}, {"seconds": took})
            seconds["curves"], from_cache["curves"] = took, False
    return Study(sweeps=sweeps, importance=np.asarray(importance, dtype=float), curves=curves,
                 labels=np.asarray(dev.labels), n_dev=len(dev), seconds=seconds,
                 from_cache=from_cache)


def notebook_settings(task: str, *, first_seed: bool, modes: str, extras_first_seed_only: bool,
                      max_tokens: int, max_dev: int, importance_split: str,
                      importance_examples: int, prune_mode: str, prune_step: float,
                      n_random_orders: int, seed: int) -> StudySettings:
    """Notebook 07's :class:`StudySettings` for one model of ``task``, from its parameters (the
    run plan calls the same function, so it computes the parts the notebook reads): every mode
    of ``modes`` and the pruning curves on the task's first fine-tuning seed; with
    ``extras_first_seed_only``, the first mode and no curves on the other seeds."""
    mode_list = tuple(m.strip() for m in str(modes).split(",") if m.strip())
    extras = first_seed or not extras_first_seed_only
    return StudySettings(modes=mode_list if extras else mode_list[:1],
                         metric_name=primary_metric(task), max_tokens=max_tokens,
                         max_dev=max_dev, importance_split=importance_split,
                         importance_examples=importance_examples, importance_seed=seed,
                         curves=extras, prune_mode=prune_mode, prune_step=prune_step,
                         n_random_orders=n_random_orders, curve_seed=seed)
