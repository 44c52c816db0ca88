"""Tolerances for trained numbers between a CPU run and a GPU run, from the seed spread.

A fine-tune repeated on another device with the same weights, data and seed does not give the
same model: the float arithmetic differs (other kernels, other summation orders, TF32 or
bf16 where asked for), and over three epochs of SGD those differences grow until the run is,
for its metrics, about as different from the CPU run as a run with another seed. So the seed
spread measured in the committed run is the yardstick: if the two runs of a seed are two
independent draws with the seed sd ``s``, their difference has sd ``sqrt(2) s``, and

    tolerance = max(k x sqrt(2) x s, floor),     k = 3 (default),

``floor`` being what ``floor_examples`` (default 2) dev examples change the metric by
(``100 x floor_examples / dev rows``, metrics x100 as the tables hold them): with three seeds
``s`` can come out near 0 (CoLA's random-init runs all score 0), and a single flipped
example must not count as a disagreement. ``s`` is the sample sd over the seeds of one task,
init and metric (3 seeds in the default profile, so it is itself uncertain: with 2 degrees of
freedom the 95% upper bound of a sd is 4.4 x the estimate; ``k = 3`` on a two-draw
difference is a deliberately wide, 3-sigma band, not a test at a stated level).

:func:`seed_spread` and :func:`propose` are pure; :func:`read_runs` reads
``results/06_finetune_runs.csv``; ``python benchmarks/cross_device_tolerances.py`` prints the
table (and the issue-34 GPU-vs-CPU differences against it).
"""

from __future__ import annotations

import csv
import math
import os
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["METRICS", "Spread", "Tolerance", "seed_spread", "propose", "read_runs", "check",
           "DEFAULT_K", "DEFAULT_FLOOR_EXAMPLES"]

#: The metric columns of 06's per-run table (x100).
METRICS = ("accuracy", "f1", "pearson", "spearman", "matthews")
DEFAULT_K = 3.0
DEFAULT_FLOOR_EXAMPLES = 2


@dataclass(frozen=True)
class Spread:
    """The seeds of one task, init and metric: ``n``, ``mean``, ``sd`` (sample, n - 1),
    ``lo`` / ``hi`` and ``dev`` (dev rows scored)."""

    task: str
    init: str
    metric: str
    n: int
    mean: float
    sd: float
    lo: float
    hi: float
    dev: int


@dataclass(frozen=True)
class Tolerance:
    """A proposed cross-device tolerance (metric points x100) and what it came from."""

    task: str
    init: str
    metric: str
    tolerance: float
    sd: float
    n: int
    floor: float
    from_floor: bool


def _number(cell) -> float | None:
    try:
        x = float(cell)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def seed_spread(rows: Iterable[dict], metrics: Sequence[str] = METRICS) -> list[Spread]:
    """One :class:`Spread` per (task, init, metric) with at least two seeds, in the rows'
    order. ``rows``: dicts with ``task``, ``init``, ``seed``, ``dev`` and metric columns
    (empty cells skipped).

    >>> rows = [{"task": "T", "init": "pretrained", "seed": s, "dev": 100, "accuracy": a}
    ...         for s, a in ((1, 1.0), (2, 2.0), (3, 3.0))]
    >>> seed_spread(rows)[0].sd
    1.0
    """
    groups: dict[tuple[str, str, str], list[tuple[float, int]]] = {}
    for row in rows:
        for m in metrics:
            x = _number(row.get(m))
            if x is not None:
                groups.setdefault((str(row["task"]), str(row["init"]), m), []).append(
                    (x, int(float(row["dev"]))))
    out = []
    for (task, init, m), values in groups.items():
        xs = [v for v, _ in values]
        if len(xs) < 2:
            continue
        out.append(Spread(task, init, m, len(xs), statistics.fmean(xs), statistics.stdev(xs),
                          min(xs), max(xs), min(d for _, d in values)))
    return out


def propose(spread: Iterable[Spread], k: float = DEFAULT_K,
            floor_examples: int = DEFAULT_FLOOR_EXAMPLES) -> list[Tolerance]:
    """The module docstring's tolerance per spread.

    >>> [t.tolerance for t in propose([Spread("T", "p", "f1", 3, 5, 1.0, 4, 6, 100)])]
    [4.242641]
    >>> [t.tolerance for t in propose([Spread("T", "p", "f1", 3, 0, 0.0, 0, 0, 1000)])]
    [0.2]
    """
    if k <= 0 or floor_examples < 0:
        raise ValueError(f"k must be positive and floor_examples 0 or more, got {k}, "
                         f"{floor_examples}")
    out = []
    for s in spread:
        floor = 100.0 * floor_examples / s.dev if s.dev else 0.0
        band = k * math.sqrt(2.0) * s.sd
        out.append(Tolerance(s.task, s.init, s.metric, round(max(band, floor), 6), s.sd, s.n,
                             round(floor, 6), floor > band))
    return out


def read_runs(path: str | os.PathLike) -> list[dict]:
    """The rows of a per-run table (``results/06_finetune_runs.csv``) as dicts."""
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def check(tolerances: Iterable[Tolerance], differences: dict[tuple[str, str, str], list[float]]
          ) -> list[tuple[str, str, str, float, float, bool]]:
    """``(task, init, metric, difference, tolerance, inside)`` for every difference given as
    ``{(task, init, metric): [new - committed, ...]}``; a difference with no tolerance raises
    ``KeyError`` naming it."""
    table = {(t.task, t.init, t.metric): t.tolerance for t in tolerances}
    out = []
    for key, diffs in differences.items():
        if key not in table:
            raise KeyError(f"no tolerance for {key}: the committed table has no seed spread "
                           "for it (fewer than two seeds)")
        out += [(*key, d, table[key], abs(d) <= table[key]) for d in diffs]
    return out
