"""Claims of Kovaleva et al. 2019 Sections 4.2-4.6 (notebooks 06-07), with criteria fixed
here. Every claim that rests on fine-tuned models needs :data:`~.core.MIN_SEEDS` fine-tuning
seeds per task; with fewer, the row shows each seed's outcome under the rule and the verdict
is ``untestable``. Disabling effects are read in the paper's mode (``uniform``)."""

from __future__ import annotations

import dataclasses
import functools
import warnings

import numpy as np
import pandas as pd

from ..analyses.features import FEATURES
from ..data.glue_metrics import TASKS
from ..papers import (
    KOVALEVA_CLS_TARGET,
    KOVALEVA_DRIFT_EXCEPTION,
    KOVALEVA_FEATURE_INCREASE,
    KOVALEVA_FINETUNE_GAIN_MEAN,
    KOVALEVA_RANDOM_BELOW_PRETRAINED,
    KOVALEVA_SECTION41,
    KOVALEVA_SECTION46,
    KOVALEVA_SECTIONS42_45,
    KOVALEVA_SINGLE_SEP_TASK,
    KOVALEVA_TABLE1,
    KOVALEVA_TASKS,
)
from . import resample as rs
from . import stats
from .core import (
    ALPHA,
    MIN_SEEDS,
    Check,
    Claim,
    Outcome,
    Tables,
    fmt_p,
    heterogeneous_band,
    pct,
)
from .depth import share_note

KOVALEVA = "Kovaleva et al. 2019"
MODE = "uniform"
#: FrameNet heads are "unimportant" when no disabling lowers the metric by more than this
#: (points): the lower end of every 95% interval stays above -EQUIVALENCE_MARGIN.
EQUIVALENCE_MARGIN = 1.0
#: "The heads a task relies on": the K heads whose disabling costs most.
K_COSTLIEST = 5


def _seed_gate(seeds_by_task: dict[str, int]) -> str:
    short = {t: n for t, n in seeds_by_task.items() if n < MIN_SEEDS}
    if not short:
        return ""
    return ("fewer than " f"{MIN_SEEDS} fine-tuning seeds ("
            + ", ".join(f"{t}: {n}" for t, n in short.items())
            + "): each seed's outcome is shown, no verdict is drawn; raise `seeds` and "
              "`multi_seed_tasks` (random-init runs: `random_init`) in the profile and re-run "
              "06-07")


def _seeds_text(seeds_by_task: dict[str, int]) -> str:
    return ", ".join(f"{t}: {n}" for t, n in seeds_by_task.items())


def _outcome(parts: list[str], per_seed: list[bool], seeds: dict[str, int],
             note: str = "", heads: str = "") -> Outcome:
    gate = _seed_gate(seeds)
    if gate and per_seed:
        gate += f"; {sum(per_seed)} of {len(per_seed)} fine-tuned models pass"
    return Outcome(value="; ".join(parts), effect=True, passes=bool(per_seed) and all(per_seed),
                   per_seed=[] if gate else per_seed, seeds=_seeds_text(seeds), note=note,
                   heads=heads, untestable=gate)


# --- 06 ----------------------------------------------------------------------------------
# Fine-tuned models are tested on fine-tuning seeds x dev examples together (issue 33):
# per-example predictions and attention statistics saved by notebook 06 are resampled with
# :func:`~.resample.hierarchical_bootstrap` (seeds and dev examples drawn with replacement, the
# same example draw for every seed), and claims about tasks are judged per task
# (:func:`~.resample.judge_tasks`, ``scope`` as the paper words them).

PREDICTIONS = "06_dev_predictions.npz"
BY_EXAMPLE = "06_by_example.npz"
FRAMENET = "06_framenet_by_sentence.npz"
N_RESAMPLES = 10_000
#: GLUE metric names (:mod:`~analysis_utils.data.glue_metrics`) -> resampled metrics.
_METRIC = {"matthews": "mcc"}
#: "negligible compared to [CLS] and [SEP]" (Section 4.4), fixed before reading any number: the
#: best linguistic-feature head scores below a fifth of the best [CLS]/[SEP] head.
NEGLIGIBLE = 0.2
#: "increased attention" to a feature (Section 4.4) has no size in the paper; a rise of a head's
#: score by less than this (a hundredth of the attention the input receives, where a uniform
#: head scores 1/m, about 0.03-0.1 here) is called negligible.
FEATURE_MARGIN = 0.01
#: "the striped attention maps generally come from BERT pre-training" (Section 4.4): the
#: fine-tuned models' [CLS] + [SEP] score within this relative change of the pre-trained one's.
STRIPE_MARGIN = 0.2
#: A "diagonally structured" map (Sections 4.1, 4.5): more than half of the head's attention on
#: the previous and next word.
DIAGONAL_SHARE = 0.5


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> dict:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def _npz(t: Tables, name: str) -> dict:
    p = t.path / name
    if not p.is_file():
        raise FileNotFoundError(f"{p} is missing: run notebook 06")
    return _load(str(p), p.stat().st_mtime)


def _primary(task: str) -> str:
    return TASKS[task].primary


def _metric(task: str) -> str:
    return _METRIC.get(_primary(task), _primary(task))


def _pred_tasks(z: dict) -> list[str]:
    return [k[len("labels_"):] for k in z if k.startswith("labels_")]


def _runs(z: dict, task: str, init: str) -> tuple[np.ndarray, list[int]]:
    """(S, n) predictions of ``init`` ("pretrained", "random") per seed, seeds ascending."""
    pre = f"pred_{task}_{init}_"
    seeds = sorted(int(k[len(pre):]) for k in z if k.startswith(pre))
    n = len(z[f"labels_{task}"])
    if not seeds:
        return np.empty((0, n)), []
    return np.stack([z[f"{pre}{s}"] for s in seeds]), seeds


def _labels(z: dict, task: str) -> np.ndarray:
    y = z[f"labels_{task}"]
    return y.astype(float) if y.dtype.kind == "f" else y.astype(int)


def _short(n_seeds: int, what: str = "fine-tuning seed") -> str:
    return (f"{n_seeds} {what}{'s' * (n_seeds != 1)} (at least {MIN_SEEDS} needed: raise `seeds`, "
            "`multi_seed_tasks` or `random_init` in the profile and re-run 06)"
            if n_seeds < MIN_SEEDS else "")


def _seeds_of(by_task: dict[str, int]) -> str:
    return ", ".join(f"{t}: {n}" for t, n in by_task.items())


def _units(by_task: dict[str, tuple[int, int]]) -> str:
    return "; ".join(f"{t}: {s} seed{'s' * (s != 1)} x {n:,} dev examples"
                     for t, (s, n) in by_task.items())


def _paper_tasks(tasks) -> tuple[list[str], list[str]]:
    keep = [t for t in tasks if t in KOVALEVA_TASKS]
    return keep, [t for t in tasks if t not in KOVALEVA_TASKS]


def _not_run(wanted, tasks) -> str:
    miss = [t for t in wanted if t not in tasks]
    return (f"not tested on {', '.join(miss)}: not fine-tuned here (no train data in the "
            "bundle, or not selected)") if miss else ""


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def _table1_effect(task: str, a: str, b: str) -> float | None:
    """Table 1's column ``a`` minus column ``b`` on the task's primary metric, as a fraction
    (the resampled metric's scale); None where the paper has no such number."""
    row = KOVALEVA_TABLE1.get(task, {})
    m = _primary(task)
    va, vb = row.get(a, {}).get(m), row.get(b, {}).get(m)
    return None if va is None or vb is None else (va - vb) / 100


def _compare(t: Tables, init_a: str, init_b: str, tasks_wanted=None, direction: int = 1,
             paper=("finetuned", "random_finetuned")) -> tuple:
    """Per task, the hierarchical bootstrap of ``mean metric(init_a) - mean metric(init_b)``
    over separately fine-tuned seeds (``paired_seeds=False``) and the dev examples both are
    scored on. ``init_b`` may be a baseline (``"untrained"``, ``"frozen"``: one row)."""
    z = _npz(t, PREDICTIONS)
    tasks, extra = _paper_tasks(_pred_tasks(z))
    if tasks_wanted is not None:
        tasks = [x for x in tasks if x in tasks_wanted]
    per_task, parts, seeds, units = {}, [], {}, {}
    for task in tasks:
        y = _labels(z, task)
        a, sa = _runs(z, task, init_a)
        b, sb = _runs(z, task, init_b)
        if not len(a) or not len(b):
            per_task[task] = [Check(untestable=f"no {init_a if not len(a) else init_b} runs "
                                               f"of {task} in this run")]
            continue
        r = rs.hierarchical_bootstrap(y, a, _metric(task), preds_b=b, paired_seeds=False,
                                      n_resamples=N_RESAMPLES, seed=0)
        fine = [n for n, init in ((len(a), init_a), (len(b), init_b))
                if init in ("pretrained", "random")]
        gate = _short(min(fine)) if fine else ""
        per_task[task] = [Check(result=r, null=0.0, direction=direction,
                                paper_effect=_table1_effect(task, *paper), untestable=gate)]
        seeds[task] = min(fine) if fine else 1
        units[task] = (max(len(a), len(b)), len(y))
        pe = _table1_effect(task, *paper)
        parts.append(f"{task} {100 * r.estimate:+.1f} {_primary(task)} ({len(a)} vs. {len(b)} "
                     f"model{'s' * (len(b) != 1)}; paper "
                     + (f"{100 * pe:+.1f})" if pe is not None else "none)"))
    return z, per_task, parts, seeds, units, extra


def _beats_random(t: Tables, which: str) -> Outcome:
    z, per_task, parts, seeds, units, extra = _compare(t, "pretrained", "random")
    if not per_task:
        return Outcome(value="\u2013", untestable="no paper task was fine-tuned here")
    return Outcome(value="; ".join(parts), per_task=per_task, scope="every", unit=_units(units),
                   seeds=_seeds_of(seeds), scale=100, suffix=" points",
                   note=_join(_not_run(KOVALEVA_TASKS, list(per_task)),
                              f"{', '.join(extra)} (not in the paper) not judged" if extra
                              else ""))


def _baseline_text(z: dict, task: str, init: str) -> str:
    """The frozen-features reading of Table 1's no-fine-tuning column, as a point estimate."""
    a, _ = _runs(z, task, init)
    fr, _ = _runs(z, task, "frozen")
    if not len(a) or not len(fr):
        return ""
    y = _labels(z, task)
    m = rs.METRICS[_metric(task)]

    def score(p):
        return float(m.finish(m.features(y, p).sum(axis=0)))

    return (f"{task}: {100 * (np.mean([score(p) for p in a]) - score(fr[0])):+.1f} against the "
            "frozen-features head")


def _finetuned_beats_pretrained(t: Tables, which: str) -> Outcome:
    z, per_task, parts, seeds, units, extra = _compare(
        t, "pretrained", "untrained", paper=("finetuned", "pretrained"))
    if not per_task:
        return Outcome(value="\u2013", untestable="no paper task was fine-tuned here")
    frozen = [x for x in (_baseline_text(z, task, "pretrained") for task in per_task) if x]
    return Outcome(value="; ".join(parts), per_task=per_task, scope="every", unit=_units(units),
                   seeds=_seeds_of(seeds), scale=100, suffix=" points",
                   note=_join("Table 1's 'pre-trained, no fine-tuning' column is undefined in "
                              "the paper; read as an untrained task head (one random head), "
                              f"the paper's mean gain {KOVALEVA_FINETUNE_GAIN_MEAN} points",
                              "the other reading, " + "; ".join(frozen) if frozen else "",
                              _not_run(KOVALEVA_TASKS, list(per_task))))


def _random_below_pretrained(t: Tables, which: str) -> Outcome:
    z, per_task, parts, seeds, units, _ = _compare(
        t, "random", "untrained", tasks_wanted=KOVALEVA_RANDOM_BELOW_PRETRAINED, direction=-1,
        paper=("random_finetuned", "pretrained"))
    miss = _not_run(KOVALEVA_RANDOM_BELOW_PRETRAINED, list(per_task))
    if not per_task:
        return Outcome(value="\u2013", untestable=miss or "no such task here")
    frozen = [x for x in (_baseline_text(z, task, "random") for task in per_task) if x]
    return Outcome(value="; ".join(parts), per_task=per_task, scope="every", unit=_units(units),
                   seeds=_seeds_of(seeds), scale=100, suffix=" points",
                   note=_join("Table 1's 'pre-trained, no fine-tuning' column is undefined in "
                              "the paper (its STS-B 33.1 fits neither reading); read as an "
                              "untrained task head",
                              "the other reading (a head on frozen features), "
                              + "; ".join(frozen) if frozen else "", miss))


# --- 06: per-example attention statistics ---------------------------------------------------

def _mean_metric(k: int, finish) -> rs.SumMetric:
    """A :class:`~.resample.SumMetric` of per-example vectors ``(k,)`` given as ``(2k,)``: the
    values (0 where the example lacks the entry) and 1/0 for having it (:func:`_boot` makes
    them from NaN): ``finish`` maps the per-entry means ``(..., k)`` over the drawn examples
    that have them (NaN where none has) to the statistic."""

    def features(y, p):
        return np.asarray(p, dtype=float).reshape(len(p), 2 * k)

    def done(s):
        s = np.asarray(s, dtype=float)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = np.where(s[..., k:] > 0, s[..., :k] / np.where(s[..., k:] > 0,
                                                                   s[..., k:], 1), np.nan)
        return finish(means)

    return rs.SumMetric("means", features, done)


def _per_example(t: Tables, task: str, key: str, fine_tuned: bool = True) -> np.ndarray:
    z = _npz(t, BY_EXAMPLE)
    v = np.asarray(z[f"{key}_{task}"], dtype=float)
    if key == "drift" or not fine_tuned:
        return v
    models = [str(m) for m in z[f"models_{task}"]]
    return v[[i for i, m in enumerate(models) if m.startswith("fine-tuned")]]


def _example_tasks(t: Tables) -> list[str]:
    z = _npz(t, BY_EXAMPLE)
    return [k[len("models_"):] for k in z if k.startswith("models_")]


def _boot(values: np.ndarray, k: int, finish, seed: int = 0) -> rs.Resampled:
    """hierarchical_bootstrap of a statistic of per-entry means, ``values (S, n, k)``."""
    v = np.asarray(values, dtype=float).reshape(*np.shape(values)[:2], k)
    have = np.isfinite(v)
    both = np.concatenate([np.where(have, v, 0.0), have.astype(float)], axis=-1)
    return rs.hierarchical_bootstrap(np.zeros(v.shape[1]), both, _mean_metric(k, finish),
                                     n_resamples=N_RESAMPLES, seed=seed)


def _slope(means: np.ndarray) -> np.ndarray:
    """Least-squares slope over layers 1..L of ``means (..., L)``."""
    x = np.arange(1, means.shape[-1] + 1, dtype=float)
    x = x - x.mean()
    return (means * x).sum(-1) / (x * x).sum()


def _drift_last_two(t: Tables, which: str) -> Outcome:
    tasks, extra = _paper_tasks(_example_tasks(t))
    tasks = [x for x in tasks if x not in KOVALEVA_DRIFT_EXCEPTION]
    per_task, parts, seeds, units, rising = {}, [], {}, {}, 0
    L = None
    for task in tasks:
        d = _per_example(t, task, "drift")  # (S, n, L)
        L = d.shape[-1]

        def gap(m):
            return m[..., -2:].min(-1) - m[..., :-2].max(-1)

        r = _boot(d, L, gap)
        per_task[task] = [Check(result=r, null=0.0, direction=1, untestable=_short(len(d)))]
        seeds[task], units[task] = len(d), (len(d), d.shape[1])
        layer_means = d.mean(axis=(0, 1))
        rising += bool(np.all(np.diff(layer_means) >= 0))
        parts.append(f"{task}: min of layers {L - 1}-{L} minus max of the others "
                     f"{r.estimate:+.3f} (drift by layer " + ", ".join(
                         f"{x:.2f}" for x in layer_means) + ")")
    if not per_task:
        return Outcome(value="\u2013", untestable="no paper task was fine-tuned here")
    return Outcome(value="; ".join(parts), per_task=per_task, scope="every", unit=_units(units),
                   seeds=_seeds_of(seeds), digits=3,
                   note=_join(share_note(2, L, "the last two layers"),
                              f"in {rising} of {len(per_task)} tasks the mean drift rises "
                              "monotonically with depth, which alone puts the last two layers "
                              "on top", "QQP, the paper's exception, is not fine-tuned here",
                              _not_run([x for x in KOVALEVA_TASKS
                                        if x not in KOVALEVA_DRIFT_EXCEPTION], tasks)))


_CLS_NAMES = {"cls": "[CLS]", "sep": "[SEP]", "punct": "punctuation"}


def _cls_last_layer(t: Tables, which: str) -> Outcome:
    z = _npz(t, BY_EXAMPLE)
    targets = [str(x) for x in z["clslast_targets"]]
    tasks, extra = _paper_tasks(_example_tasks(t))
    per_task, parts, seeds, units = {}, [], {}, {}
    for task in tasks:
        v = _per_example(t, task, "clslast")  # (S, n, T)
        want = targets.index(KOVALEVA_CLS_TARGET.get(task, "sep"))
        others = [i for i in range(len(targets)) if i != want]

        def margin(m, want=want, others=others):
            rest = np.where(np.isfinite(m[..., others]), m[..., others], -np.inf)
            return m[..., want] - rest.max(-1)

        r = _boot(v, len(targets), margin)
        per_task[task] = [Check(result=r, null=0.0, direction=1, untestable=_short(len(v)))]
        seeds[task], units[task] = len(v), (len(v), v.shape[1])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            means = np.nanmean(v, axis=(0, 1))
        top = targets[int(np.nanargmax(means))]
        parts.append(f"{task}: {_CLS_NAMES.get(targets[want], targets[want])} "
                     f"{pct(means[want])} minus the next type {pct(r.estimate)} (top "
                     f"{_CLS_NAMES.get(top, top)})")
    if not per_task:
        return Outcome(value="\u2013", untestable="no paper task was fine-tuned here")
    return Outcome(value="; ".join(parts), per_task=per_task, scope="every", unit=_units(units),
                   seeds=_seeds_of(seeds), scale=100, suffix=" points",
                   note=_join("weight: the [CLS] row's largest weight on a token of the type, "
                              "mean over the last layer's heads and the inputs that have the "
                              "type (the paper's Section 4.4 aggregation)",
                              _not_run(KOVALEVA_TASKS, tasks)))


def _cls_early_sep_late(t: Tables, which: str) -> Outcome:
    tasks, extra = _paper_tasks(_example_tasks(t))
    per_task, parts, seeds, units = {}, [], {}, {}
    for task in tasks:
        cls, sep = _per_example(t, task, "cls"), _per_example(t, task, "sep")  # (S, n, L)
        L = cls.shape[-1]
        both = np.concatenate([cls, sep], axis=-1)
        rc = _boot(both, 2 * L, lambda m, L=L: _slope(m[..., :L]))
        rsep = _boot(both, 2 * L, lambda m, L=L: _slope(m[..., L:]))
        gate = _short(len(cls))
        per_task[f"{task} [CLS]"] = [Check(result=rc, null=0.0, direction=-1, untestable=gate)]
        per_task[f"{task} [SEP]"] = [Check(result=rsep, null=0.0, direction=1, untestable=gate)]
        seeds[task], units[task] = len(cls), (len(cls), cls.shape[1])
        parts.append(f"{task}: slope over layers [CLS] {rc.estimate:+.4f}, [SEP] "
                     f"{rsep.estimate:+.4f} per layer")
    if not per_task:
        return Outcome(value="\u2013", untestable="no paper task was fine-tuned here")
    return Outcome(value="; ".join(parts), per_task=per_task, scope="every", unit=_units(units),
                   seeds=_seeds_of(seeds), digits=4,
                   note=_join("statistic: the least-squares slope over layers of the mean "
                              "Section 4.4 score (over heads and inputs) of [CLS] (claimed < 0) "
                              "and of [SEP] (claimed > 0), each fine-tuned model",
                              "model note: MiniLM's attention sink is [CLS], not [SEP]"
                              if "minilm" in str(t.model).lower() else "", _not_run(KOVALEVA_TASKS, tasks)))


def _mean_over_layers(m: np.ndarray) -> np.ndarray:
    return m.mean(-1)


def _sst2_sep(t: Tables, which: str) -> Outcome:
    tasks = _example_tasks(t)
    one = KOVALEVA_SINGLE_SEP_TASK
    if one not in tasks:
        return Outcome(value="\u2013", untestable=f"{one} was not fine-tuned in this run")
    others = [x for x in tasks if x in KOVALEVA_TASKS and x != one]
    if not others:
        return Outcome(value="\u2013", untestable=f"no paper task beside {one} was fine-tuned")
    sep1 = _per_example(t, one, "sep")
    L = sep1.shape[-1]
    r1 = _boot(sep1, L, _mean_over_layers, seed=0)
    per_task, parts = {}, [f"{one} {r1.estimate:.3f}"]
    seeds, units = {one: len(sep1)}, {one: (len(sep1), sep1.shape[1])}
    for i, task in enumerate(others):
        s = _per_example(t, task, "sep")
        r2 = _boot(s, L, _mean_over_layers, seed=i + 1)  # other examples: an independent draw
        r = rs.from_draws(r1.draws - r2.draws, r1.estimate - r2.estimate,
                          n_clusters=r1.n_clusters + r2.n_clusters)
        per_task[f"{one} vs. {task}"] = [Check(result=r, null=0.0, direction=1,
                                               untestable=_short(min(len(sep1), len(s))))]
        seeds[task], units[task] = len(s), (len(s), s.shape[1])
        parts.append(f"{task} {r2.estimate:.3f}")
    return Outcome(value="[SEP] score, mean over layers and heads: " + ", ".join(parts),
                   per_task=per_task, scope="every", unit=_units(units), seeds=_seeds_of(seeds),
                   digits=3,
                   note=_join("each task's dev examples drawn on their own (different examples)",
                              "CoLA, single-sentence too, is not in the paper and not compared"
                              if "CoLA" in tasks else ""))


def _stripes_from_pretraining(t: Tables, which: str) -> Outcome:
    tasks, _ = _paper_tasks(_example_tasks(t))
    per_task, parts, seeds, units = {}, [], {}, {}
    for task in tasks:
        special = (_per_example(t, task, "cls", fine_tuned=False)
                   + _per_example(t, task, "sep", fine_tuned=False)).mean(-1)  # (M, n)
        ft, pre = special[1:], special[0]
        if not len(ft):
            continue
        both = np.stack([ft, np.broadcast_to(pre, ft.shape)], axis=-1)  # (S, n, 2)
        r = _boot(both, 2, lambda m: m[..., 0] / m[..., 1] - 1.0)
        per_task[task] = [Check(result=r, kind="no effect", null=0.0, margin=STRIPE_MARGIN,
                                untestable=_short(len(ft)))]
        seeds[task], units[task] = len(ft), (len(ft), ft.shape[1])
        parts.append(f"{task} {pct(r.estimate)}")
    if not per_task:
        return Outcome(value="\u2013", untestable="no paper task was fine-tuned here")
    return Outcome(value="[CLS] + [SEP] score, fine-tuned over pre-trained, change: "
                   + ", ".join(parts), per_task=per_task, scope="every", unit=_units(units),
                   seeds=_seeds_of(seeds), scale=100, suffix="%",
                   note=f"claimed: a relative change within \u00b1{STRIPE_MARGIN:.0%} (the "
                        "stripes were there before fine-tuning)")


def _top(t: Tables, task: str) -> tuple[np.ndarray, list[str]]:
    z = _npz(t, BY_EXAMPLE)
    groups = [str(g) for g in z["top_groups"]]
    return _per_example(t, task, "top"), groups  # (S, n, G, k)


def _best_by_group(m: np.ndarray, G: int) -> np.ndarray:
    m = m.reshape(*m.shape[:-1], G, -1)
    return np.where(np.isfinite(m), m, -np.inf).max(-1)  # (..., G)


def _feature_vs_special(t: Tables, which: str, ratio: bool) -> Outcome:
    tasks, _ = _paper_tasks(_example_tasks(t))
    per_task, parts, seeds, units = {}, [], {}, {}
    for task in tasks:
        v, groups = _top(t, task)
        S, n, G, k = v.shape
        feats = [i for i, g in enumerate(groups) if g in FEATURES]
        spec = [i for i, g in enumerate(groups) if g in ("cls", "sep")]

        def stat(m, G=G, feats=feats, spec=spec):
            best = _best_by_group(m, G)
            f, s = best[..., feats].max(-1), best[..., spec].max(-1)
            return f / s if ratio else s - f

        r = _boot(v.reshape(S, n, G * k), G * k, stat)
        gate = _short(S)
        per_task[task] = [Check(result=r, null=NEGLIGIBLE, direction=-1, untestable=gate)
                          if ratio else Check(result=r, null=0.0, direction=1, untestable=gate)]
        seeds[task], units[task] = S, (S, n)
        parts.append(f"{task} {pct(r.estimate) if ratio else f'{r.estimate:+.3f}'}")
    if not per_task:
        return Outcome(value="\u2013", untestable="no paper task was fine-tuned here")
    what = ("best linguistic-feature head's score over the best [CLS]/[SEP] head's"
            if ratio else "best [CLS]/[SEP] head's score minus the best linguistic-feature "
                          "head's")
    return Outcome(value=f"{what}: " + ", ".join(parts), per_task=per_task, scope="every",
                   unit=_units(units), seeds=_seeds_of(seeds),
                   scale=100 if ratio else 1, suffix="%" if ratio else "",
                   digits=1 if ratio else 3,
                   note=_join("the features are silver (spaCy); each type's best head chosen "
                              "inside every resample among its 5 best heads on the data",
                              f"'negligible' read as below {NEGLIGIBLE:.0%}" if ratio else "",
                              _not_run(KOVALEVA_TASKS, tasks)))


def _vertical_is_special(t: Tables, which: str) -> Outcome:
    return _feature_vs_special(t, which, ratio=False)


def _features_negligible(t: Tables, which: str) -> Outcome:
    return _feature_vs_special(t, which, ratio=True)


def _feature_heads_increase(t: Tables, which: str) -> Outcome:
    z = _npz(t, BY_EXAMPLE)
    tasks = _example_tasks(t)
    wanted = {(task, f) for f, on in KOVALEVA_FEATURE_INCREASE.items() for task in on}
    per_task, parts, seeds, units = {}, [], {}, {}
    H = t.num_heads
    for task, feat in sorted(wanted):
        key = f"increase_{task}_{feat}"
        if task not in tasks or key not in z:
            continue
        d = np.asarray(z[key], dtype=float)  # (S, n, K)
        keep = np.isfinite(d).all(axis=(0, 2))
        checks, best = [], []
        run_seeds = list(z.get(f"seeds_{task}", range(len(d))))
        for seed, s in zip(run_seeds, d[:, keep], strict=True):
            r = rs.max_over_heads(rs.cluster_sums(s, np.arange(len(s))),
                                  n_resamples=N_RESAMPLES, seed=0)
            checks.append(Check(result=r, null=0.0, direction=1, margin=FEATURE_MARGIN))
            best.append(f"s{seed} {_head(r.best, H)} {r.estimate:+.3f}")
        gate = _short(len(checks))
        if gate:
            checks = [dataclasses.replace(c, untestable=gate) for c in checks]
        per_task[f"{task} {feat}"] = checks
        seeds[task], units[task] = len(checks), (len(checks), int(keep.sum()))
        parts.append(f"{task} {feat}: " + ", ".join(best))
    if not per_task:
        return Outcome(value="\u2013", untestable="none of MRPC, RTE, QQP (nouns, objects) or "
                                                  "QNLI (negation) was fine-tuned here")
    return Outcome(value="largest rise of a head's score over the pre-trained model, per "
                         "seed: " + "; ".join(parts), per_task=per_task, scope="every",
                   unit=_units(units) + " with the feature", seeds=_seeds_of(seeds), digits=3,
                   note=_join("per fine-tuning seed, the best of all heads tested with its "
                              "selection (max-T over heads, dev examples resampled)",
                              "the features are silver (spaCy)",
                              _not_run(sorted({x for x, _ in wanted}),
                                       {x for x, f in wanted if f"{x} {f}" in per_task})))


def _head(k: int, H: int | None) -> str:
    return f"{k // H + 1}-{k % H + 1}" if H else f"#{k + 1}"


def _relation_diagonal(t: Tables, which: str) -> Outcome:
    z = _npz(t, BY_EXAMPLE)
    rels = [str(r) for r in z["relations"]]
    tasks, _ = _paper_tasks(_example_tasks(t))
    per_task, parts, seeds, units = {}, [], {}, {}
    for task in tasks:
        rel = _per_example(t, task, "rel")  # (S, n, R, k)
        adj = _per_example(t, task, "reladj")
        S, n, R, k = rel.shape
        for j, name in enumerate(rels):
            both = np.concatenate([rel[:, :, j], adj[:, :, j]], axis=-1)  # (S, n, 2k)

            def stat(m, k=k):
                score = np.where(np.isfinite(m[..., :k]), m[..., :k], -np.inf)
                pick = np.argmax(score, axis=-1)[..., None]
                return np.take_along_axis(m[..., k:], pick, axis=-1)[..., 0]

            r = _boot(both, 2 * k, stat)
            per_task[f"{task} {name}"] = [Check(result=r, null=DIAGONAL_SHARE, direction=1,
                                                untestable=_short(S))]
            parts.append(f"{task} {name} {pct(r.estimate)}")
        seeds[task], units[task] = S, (S, n)
    if not per_task:
        return Outcome(value="\u2013", untestable="no paper task was fine-tuned here")
    return Outcome(value="attention to the adjacent words of the best relation head: "
                   + ", ".join(parts), per_task=per_task, scope="every", unit=_units(units),
                   seeds=_seeds_of(seeds), scale=100, suffix="%",
                   note=_join(f"'diagonal' read as more than {DIAGONAL_SHARE:.0%} of the "
                              "head's attention on the previous and next word; the best head "
                              "chosen inside every resample among its 5 best on the data",
                              "the relations are silver (spaCy)"))


def _framenet_standout(t: Tables, which: str) -> Outcome:
    z = _npz(t, FRAMENET)
    link = np.asarray(z["model" if which == "model" else "control"], dtype=float)
    null = np.asarray(z["unlinked" if which == "model" else "control_unlinked"], dtype=float)
    n, L, H = link.shape
    keep = np.isfinite(null).all(axis=(1, 2))
    margins = (link - null)[keep].reshape(int(keep.sum()), L * H)
    r = rs.max_over_heads(rs.cluster_sums(margins, np.arange(len(margins))),
                          n_resamples=N_RESAMPLES, seed=0)
    lo = np.array([r.head_interval(k)[0] for k in range(L * H)])
    above = np.flatnonzero(lo > 0)
    ranked = above[np.argsort(-r.margins[above])]
    shown = ", ".join(f"{_head(k, H)} {r.margins[k]:+.2f}" for k in ranked[:6])
    beside = ""
    if which == "model" and "control" in z:  # the other null, shown: the control's same head
        vs = rs.max_over_heads(rs.cluster_sums((link - np.asarray(z["control"], dtype=float))
                                               .reshape(n, L * H), np.arange(n)),
                               n_resamples=N_RESAMPLES, seed=0)
        k_ctrl = int(sum(vs.head_interval(k)[0] > 0 for k in range(L * H)))
        beside = (f"against the random-weights control's same head instead: {k_ctrl} of "
                  f"{L * H} heads above it, best {_head(vs.best, H)} {vs.estimate:+.3f}")
    return Outcome(value=f"{len(above)} of {L * H} heads attend more along the links than to "
                         f"unlinked words (simultaneous 95%)" + (f": {shown}" if shown else "")
                         + f"; best {_head(r.best, H)} {r.estimate:+.3f}",
                   check=Check(result=r, null=0.0, direction=1),
                   heads=", ".join(_head(k, H) for k in ranked),
                   unit=f"{len(margins)} FrameNet sentences", digits=3,
                   note=_join(beside, "per head: the largest weight between target and linked core "
                              "elements minus that between target and the unlinked words as "
                              "far away (punctuation aside), per sentence; the best head tested "
                              "with its selection (max-T)",
                              f"{n - len(margins)} sentences with no such word left out"
                              if n > len(margins) else ""))


def _framenet_sentences(t: Tables, which: str) -> Outcome:
    d = t.read("06_framenet_funnel.csv")
    count = int(d["exact"].iloc[-1])
    want = KOVALEVA_SECTIONS42_45["framenet_sentences"]
    r = rs.from_draws(np.array([count, count], dtype=float), float(count), null=want)
    return Outcome(value=f"{count} sentences", check=Check(result=r, kind="no effect",
                                                           null=want, margin=0.5),
                   unit="the FrameNet 1.7 exemplars (no sampling: an exact count)", digits=0,
                   note="a check of the data pipeline (the authors' filter), not of a model")


def _ft_seeds(d: pd.DataFrame, column: str = "compared") -> dict[str, int]:
    ft = d[d[column].astype(str).str.startswith("fine-tuned")]
    return {task: int(g[column].nunique()) for task, g in ft.groupby("task", sort=False)}


def _fine_tuned_models(d: pd.DataFrame) -> pd.DataFrame:
    """The fine-tuned rows of a 06 features or map-types table. Runs since 2026-11-26 label
    each fine-tuning seed (``fine-tuned s42``); older ones have one ``fine-tuned`` model per
    task (the first seed), which counts as one seed."""
    return d[d["model"].astype(str).str.startswith("fine-tuned")]


def _heterogeneous_finetuned(t: Tables, which: str) -> Outcome:
    d = _fine_tuned_models(t.read("06_type_proportions_by_seed.csv"))
    d = d[d["task"].isin(KOVALEVA_TASKS)]
    parts, per_seed = [], []
    # the k-th fine-tuning seed of every task together: one draw of the fine-tuned models
    rank = d.groupby("task", sort=False)["model"].transform(
        lambda m: pd.Series(pd.factorize(m)[0], index=m.index))
    for _draw, g in d.assign(draw=rank).groupby("draw", sort=True):
        label = "/".join(dict.fromkeys(g["model"].str.replace("fine-tuned", "").str.strip()))
        p, ok = heterogeneous_band(g, f"fine-tuning {label or 'seed'}, CNN seed")
        parts += p
        per_seed += ok
    out = _outcome(parts, per_seed, _ft_seeds(d, "model"),
                   note="map types from notebook 05's CNN trained on pre-trained maps; its "
                        "transfer to fine-tuned maps is not measured")
    # As for the pre-trained maps (clark._heterogeneous_pretrained): a share inside a published
    # range is a description with no null to beat (the control's maps are not classified, and a
    # 5-way share has no chance level), so no verdict is drawn; each seed's range is shown.
    why = (f"a range match with no reference to beat (the random-weights control's maps are "
           f"not classified); {sum(per_seed)} of {len(per_seed)} (fine-tuning, CNN) seed pairs "
           f"fall inside the band")
    return dataclasses.replace(out, untestable=out.untestable or why, per_seed=[])


# --- 07 ----------------------------------------------------------------------------------

def _disabling(t: Tables) -> pd.DataFrame:
    d = t.read("07_disabling.csv")
    return d[d["mode"] == MODE]


def _model_seeds(d: pd.DataFrame) -> dict[str, int]:
    return {task: int(g["seed"].nunique()) for task, g in d.groupby("task", sort=False)}


def _some_head_improves(t: Tables, which: str) -> Outcome:
    d = _disabling(t)
    h = d[d["kind"] == "head"]
    parts, per_model = [], []
    for (task, seed), g in h.groupby(["task", "seed"], sort=False):
        gains = g[(g["delta"] > 0) & (g["p_holm"] < ALPHA)]
        best = g.loc[g["delta"].idxmax()]
        per_model.append(len(gains) > 0)
        parts.append(f"{task} s{seed}: {len(gains)} of {len(g)} gains survive Holm (best "
                     f"{best['label']} {best['delta']:+.2f}, p_holm {fmt_p(best['p_holm'])}, "
                     f"{best['test']})")
    tests = h.groupby("task")["test"].first()
    note = ("gains and drops get the same two-sided test and Holm over the task's heads; the "
            "tests differ by metric (" + ", ".join(f"{k}: {v}" for k, v in tests.items())
            + "): a bootstrap of Pearson on 1,500 STS-B pairs has more power than McNemar on "
              "277-872 accuracy items")
    return _outcome(parts, per_model, _model_seeds(h), note=note)


def _random_head_helps(t: Tables, which: str) -> Outcome:
    s = t.read("07_summary.csv")
    s = s[(s["mode"] == MODE) & s["task"].isin(KOVALEVA_SECTION46["random_head_helps"])]
    parts, per_model = [], []
    for r in s.itertuples():
        per_model.append(bool(r.mean_head_ci_lo > 0))
        parts.append(f"{r.task} s{r.seed}: {r.mean_head_delta:+.2f} "
                     f"[{r.mean_head_ci_lo:+.2f}, {r.mean_head_ci_hi:+.2f}]")
    return _outcome(parts, per_model, _model_seeds(s))


def _layer_improves(t: Tables, which: str) -> Outcome:
    s = t.read("07_summary.csv")
    s = s[s["mode"] == MODE]
    parts, per_seed = [], []
    for _seed, g in s.groupby("seed", sort=True):
        # within one fine-tuning seed the best layer of every task is searched: Bonferroni
        # over those tasks on top of Holm over each model's layers
        p = np.minimum(1.0, g["best_layer_p_holm"].to_numpy(float) * len(g))
        per_seed.append(bool(((g["best_layer_delta"].to_numpy(float) > 0) & (p < ALPHA)).any()))
        parts += [f"{r.task} s{r.seed}: {r.best_layer} {r.best_layer_delta:+.2f} "
                  f"[{r.best_layer_ci_lo:+.2f}, {r.best_layer_ci_hi:+.2f}], p_holm "
                  f"{fmt_p(r.best_layer_p_holm)}" for r in g.itertuples()]
    return _outcome(parts, per_seed, _model_seeds(s),
                    note="per fine-tuning seed: does some task's best layer gain survive Holm "
                         "over its layers and Bonferroni over the tasks searched; the claim "
                         "holds when it does in every seed")


def _rte_layer1(t: Tables, which: str) -> Outcome:
    d = _disabling(t)
    d = d[(d["task"] == "RTE") & (d["kind"] == "layer") & (d["label"] == "layer 1")]
    if d.empty:
        return Outcome(value="\u2013", untestable="RTE was not fine-tuned in this run")
    parts = [f"s{r.seed}: {r.delta:+.2f} [{r.ci_lo:+.2f}, {r.ci_hi:+.2f}]" for r in d.itertuples()]
    return _outcome(parts, [bool(r.ci_lo > 0) for r in d.itertuples()], _model_seeds(d))


def _same_heads(t: Tables, which: str) -> Outcome:
    d = _disabling(t)
    h = d[(d["kind"] == "head") & d["task"].isin(["STS-B", "RTE"])]
    costly = {key: set(g.nsmallest(K_COSTLIEST, "delta")["label"])
              for key, g in h.groupby(["task", "seed"], sort=False)}
    n_heads = int(h.groupby(["task", "seed"]).size().max()) if len(h) else 0
    sts = [k for k in costly if k[0] == "STS-B"]
    rte = [k for k in costly if k[0] == "RTE"]
    if not sts or not rte:
        return Outcome(value="\u2013", untestable="STS-B and RTE were not both fine-tuned")
    parts, per_pair = [], []
    for a in sts:
        for b in rte:
            k = len(costly[a] & costly[b])
            p = stats.overlap_greater(k, K_COSTLIEST, K_COSTLIEST, n_heads)
            per_pair.append(p < ALPHA)
            parts.append(f"STS-B s{a[1]} / RTE s{b[1]}: {k} shared (p {fmt_p(p)})")
    exp = stats.expected_overlap(K_COSTLIEST, K_COSTLIEST, n_heads)
    return _outcome(parts, per_pair, _model_seeds(h),
                    note=f"chance overlap of two random sets of {K_COSTLIEST} of {n_heads} "
                         f"heads: {exp:.2f}")


def _framenet_unimportant(t: Tables, which: str) -> Outcome:
    d = t.read("07_framenet_heads_disabling.csv")
    d = d[d["mode"] == MODE]
    parts, per_model = [], []
    for (task, seed), g in d.groupby(["task", "seed"], sort=False):
        lo = g["ci_lo"].min()
        per_model.append(bool(lo > -EQUIVALENCE_MARGIN))
        worst = g.loc[g["delta"].idxmin()]
        parts.append(f"{task} s{seed}: worst {worst['head']} {worst['delta']:+.2f}, lowest "
                     f"interval end {lo:+.2f}")
    return _outcome(parts, per_model, _model_seeds(d), heads=", ".join(d["head"].unique()))


# --- the claims ---------------------------------------------------------------------------

def claims06() -> list[Claim]:
    """Notebook 06's claims (Kovaleva et al. Sections 4.1-4.5, Table 1)."""
    s45 = KOVALEVA_SECTIONS42_45
    hb = ("hierarchical bootstrap: fine-tuning seeds and dev examples drawn with replacement "
          f"({N_RESAMPLES:,} resamples), per task; judged per task")
    seeds = f"at least {MIN_SEEDS} fine-tuning seeds per task"
    pred, ex = (PREDICTIONS,), (BY_EXAMPLE,)
    return [
        Claim("06", KOVALEVA, "4.2", "the authors' FrameNet filter leaves 473 sentences",
              f"{s45['framenet_sentences']} sentences", "the count of the exact reading of the "
              "filter equals the paper's", "the paper's count", "exact count (no sampling)",
              _framenet_sentences, ("06_framenet_funnel.csv",), control=False,
              registry=("kovaleva-4.2-framenet-sentences",)),
        Claim("06", KOVALEVA, "4.2, Figure 3", "a few heads stand out on FrameNet frame links", s45["framenet_standout"], "some head puts "
              "more attention between the target and its linked core elements than between the "
              "target and unlinked words as far away (its own per-head null), the best of all "
              "heads tested with its selection", "each head on unlinked words of the same "
              "sentences; the random-weights control under the same rule",
              "max-T over heads (studentised), FrameNet sentences resampled", _framenet_standout,
              (FRAMENET,), registry=("kovaleva-4.2-two-heads",)),
        Claim("06", KOVALEVA, "Table 1", "pre-trained + fine-tuning beats random init + "
              "fine-tuning", "every task (Table 1)", "per task, the mean dev "
              "metric over pre-trained fine-tunes above that over random-init fine-tunes "
              f"(primary metric); every task; {seeds}", "random init + fine-tuning (the "
              "paper's own control); Table 1's difference as the paper's effect",
              hb + ", pre-trained and random-init seeds drawn separately", _beats_random, pred,
              control=False, registry=("kovaleva-4.3-random-init-lower",)),
        Claim("06", KOVALEVA, "4.3, Table 1", "fine-tuned BERT beats pre-trained BERT without "
              "fine-tuning on every task", f"every task, {KOVALEVA_FINETUNE_GAIN_MEAN} points "
              "on average", "per task, the fine-tuned models' dev metric above that of the "
              "pre-trained encoder with an untrained task head (Table 1's first column as "
              f"notebook 06 reads it); every task; {seeds}", "the untrained-head baseline; the "
              "frozen-features head in the note", hb, _finetuned_beats_pretrained, pred,
              control=False, registry=("kovaleva-4.3-finetuned-beats-pretrained",)),
        Claim("06", KOVALEVA, "4.3, Table 1", "on STS-B and QNLI, random init + fine-tuning "
              "scores below the pre-trained model without fine-tuning", "STS-B 2.9 vs. 33.1, "
              "QNLI 49.5 vs. 52.8", "per task (STS-B, QNLI), the random-init fine-tunes' dev "
              "metric below the untrained-head baseline's; " + seeds, "the untrained-head "
              "baseline; the frozen-features head in the note", hb, _random_below_pretrained,
              pred, control=False, registry=("kovaleva-4.3-random-init-below-pretrained",)),
        Claim("06", KOVALEVA, "4.3, Figure 5", "the last two layers change most with "
              "fine-tuning", s45["drift_layers"], "per task, the smaller "
              "mean drift (1 - cosine to the pre-trained maps, mean over heads) of the last two "
              "layers above the largest of the other layers; every task but QQP; " + seeds,
              "0: the last two layers tie with another", hb + "; the statistic min(last two) - "
              "max(others) recomputed on every resample", _drift_last_two, ex, control=False,
              registry=("kovaleva-4.3-last-two-layers",)),
        Claim("06", KOVALEVA, "4.5, Figure 7", "last-layer [CLS] attends most to [SEP] "
              "(punctuation on STS-B, RTE, QNLI)", s45["last_layer_cls"], "per task, the "
              "last layer's [CLS] weight on the paper's type above that on every other type; "
              "every task; " + seeds, "the next type", hb + "; the statistic (the paper's "
              "type minus the largest other) recomputed on every resample", _cls_last_layer,
              ex, control=False,
              registry=("kovaleva-4.5-cls-attends-sep", "kovaleva-4.5-punctuation")),
        Claim("06", KOVALEVA, "4.4, Figure 6", "earlier layers attend to [CLS], later layers "
              "to [SEP], on every task", s45["cls_sep_stripes"], "per task, the slope over "
              "layers of the [CLS] score below 0 and that of the [SEP] score above 0; every "
              "task; " + seeds, "a slope of 0 (no trend with depth)", hb,
              _cls_early_sep_late, ex, control=False,
              registry=("kovaleva-4.4-cls-early-sep-late",)),
        Claim("06", KOVALEVA, "4.4, Figure 6", "[SEP] weights are larger on SST-2 (one [SEP]) "
              "than on the other tasks", "SST-2 above the pair tasks", "the mean [SEP] score "
              "(over layers, heads and inputs) of SST-2's fine-tuned models above each other "
              "paper task's; " + seeds, "each other task's score", hb + ", each task's "
              "examples drawn on their own", _sst2_sep, ex, control=False,
              registry=("kovaleva-4.4-sst2-sep",)),
        Claim("06", KOVALEVA, "4.4, Figure 6", "vertical stripes come from attention to [CLS] "
              "and [SEP], not to linguistic features", "predominantly [CLS]/[SEP]", "per task, "
              "the best [CLS]/[SEP] head's score above the best linguistic-feature head's; "
              "every task; " + seeds, "the best linguistic-feature head", hb + "; each type's "
              "best head chosen inside every resample", _vertical_is_special, ex,
              control=False, registry=("kovaleva-4.4-vertical-is-special-tokens",)),
        Claim("06", KOVALEVA, "4.4", "attention to linguistic features is negligible next to "
              "[CLS] and [SEP]", "negligible", f"per task, the best linguistic-feature head "
              f"scores below {NEGLIGIBLE:.0%} of the best [CLS]/[SEP] head; every task; "
              + seeds, f"{NEGLIGIBLE:.0%} of the best [CLS]/[SEP] head", hb + "; each "
              "type's best head chosen inside every resample", _features_negligible, ex,
              control=False, registry=("kovaleva-4.4-features-negligible",)),
        Claim("06", KOVALEVA, "4.4", "fine-tuning raises some heads' attention to nouns and "
              "objects (MRPC, RTE, QQP) and to negation (QNLI)", "some heads, per task",
              "per task and feature, some head's score higher in the fine-tuned model than in "
              f"the pre-trained one; every task and feature named, in every seed; {seeds}; "
              f"a rise below {FEATURE_MARGIN} is negligible", "the same head of the pre-trained "
              "model", "per fine-tuning seed, max-T over heads (studentised), dev examples "
              "resampled", _feature_heads_increase, ex, control=False,
              registry=("kovaleva-4.4-feature-heads-increase",)),
        Claim("06", KOVALEVA, "4.4", "the [CLS]/[SEP] stripes come from pre-training, not "
              "fine-tuning", "the stripes are there before fine-tuning", "per task, the "
              "fine-tuned models' [CLS] + [SEP] score (mean over layers, heads and inputs) "
              f"within ±{STRIPE_MARGIN:.0%} of the pre-trained model's (equivalence); "
              "every task; " + seeds, "the pre-trained model on the same inputs",
              hb + "; equivalence (90% interval inside the margin)", _stripes_from_pretraining,
              ex, control=False, registry=("kovaleva-4.4-stripes-from-pretraining",)),
        Claim("06", KOVALEVA, "4.5", "the best verb-subject and noun-pronoun heads are "
              "diagonal heads", "diagonal heads", "per task and relation, the best relation "
              f"head puts more than {DIAGONAL_SHARE:.0%} of its attention on the previous and "
              "next word; every task and relation; " + seeds, f"{DIAGONAL_SHARE:.0%} on "
              "adjacent words", hb + "; the best head chosen inside every resample",
              _relation_diagonal, ex, control=False,
              registry=("kovaleva-4.5-relation-heads-diagonal",)),
        Claim("06", KOVALEVA, "4.1, Figure 2", "Heterogeneous maps of fine-tuned models make "
              "up 32-61%", KOVALEVA_SECTION41["heterogeneous_share"], "every paper task's share "
              f"within 27-66% in every CNN seed; {seeds}, and the rule holds in every one",
              "none: the map types of the random-weights control are not classified",
              "none (descriptive)", _heterogeneous_finetuned,
              ("06_type_proportions_by_seed.csv",), control=False,
              registry=("kovaleva-4.1-heterogeneous-range",)),
    ]


def claims() -> list[Claim]:
    """Every claim of notebooks 06-07 that the ledger judges."""
    s46 = KOVALEVA_SECTION46
    gate = f"at least {MIN_SEEDS} fine-tuning seeds per task, and the rule holds in every one"
    return [
        *claims06(),
        Claim("07", KOVALEVA, "4.6, Figure 8", "disabling some single head improves every task",
              "every task, best +0.1 to +1.2 points", "a head whose disabling raises the dev "
              f"metric with Holm-adjusted p < {ALPHA} over the model's heads (not the raw "
              "maximum of the deltas), in every model; " + gate, "the best of the heads under "
              "the null: Holm over all heads", "paired bootstrap or McNemar per head, Holm",
              _some_head_improves, ("07_disabling.csv",), control=False),
        Claim("07", KOVALEVA, "4.6, Figure 8", "disabling a random head helps on average "
              "(MRPC, RTE)", "MRPC and RTE", "the 95% interval of the mean change over heads "
              "lies above 0; " + gate, "0 change", "bootstrap interval of the mean over heads",
              _random_head_helps, ("07_summary.csv",), control=False),
        Claim("07", KOVALEVA, "4.6, Figure 9", "disabling a whole layer can improve the task",
              "yes (RTE layer 1 +3.2)", f"in every fine-tuning seed, some task's best layer "
              f"gain survives Holm over its layers and Bonferroni over the tasks (p < {ALPHA}); "
              + gate, "the best of the layers under the null: Holm",
              "paired bootstrap or McNemar per layer, Holm", _layer_improves,
              ("07_summary.csv",), control=False),
        Claim("07", KOVALEVA, "4.6, Figure 9", "disabling layer 1 improves RTE",
              f"+{s46['layer1_rte_gain']} points", "the 95% interval of the change lies above "
              "0; " + gate, "0 change", "paired bootstrap / McNemar interval", _rte_layer1,
              ("07_disabling.csv",), control=False),
        Claim("07", KOVALEVA, "4.6", "STS-B and RTE rely on the same heads", "the same 2 heads "
              "(4-1, 2-12)", f"the {K_COSTLIEST} costliest heads to disable overlap more than "
              "chance (hypergeometric p < 0.05) in every seed pair; " + gate,
              f"chance overlap of two random sets of {K_COSTLIEST}",
              "one-sided hypergeometric test", _same_heads, ("07_disabling.csv",),
              control=False),
        Claim("07", KOVALEVA, "4.2, 4.6", "the FrameNet heads are not important for the tasks",
              "2 heads, no drop", f"equivalence: disabling either head never lowers the metric "
              f"by more than {EQUIVALENCE_MARGIN:g} point (every 95% interval's lower end above "
              f"-{EQUIVALENCE_MARGIN:g}), in every model; " + gate, "0 change, within the "
              "margin", "paired bootstrap / McNemar intervals", _framenet_unimportant,
              ("07_framenet_heads_disabling.csv",), control=False),
    ]
