"""Which fine-tuning runs notebooks 06 and 07 make, from their string parameters.

(The run plan, :mod:`analysis_utils.runplan.units`, builds its fine-tuning units from the
same functions, so ``plan run`` trains exactly the models the notebooks load.)

Notebook parameters are plain literals (papermill), so the plan is spelled as strings:
``tasks="MRPC,STS-B,SST-2,RTE,CoLA"``, ``seeds="42,43"`` (every seed on ``multi_seed_tasks``, the
first seed elsewhere), ``max_train="SST-2:8000,CoLA:4000"`` (a seeded train subset per task;
empty: full train sets). Notebook 07 rebuilds the same plan from the same strings, so it loads
exactly the models notebook 06 trained (the fine-tuning cache key includes all of it).

Example::

    >>> [(r.task, r.seed, r.max_train) for r in runs("MRPC,SST-2", "42,43", "MRPC", "SST-2:8000")]
    [('MRPC', 42, None), ('MRPC', 43, None), ('SST-2', 42, 8000)]
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..data.glue_metrics import TASKS
from ..training.finetune import FineTuned, FinetuneSettings, finetune, finetune_key

__all__ = ["Run", "parse_tasks", "parse_seeds", "parse_limits", "runs", "lr_check_runs",
           "settings", "fit_run",
           "run_key"]


@dataclass(frozen=True)
class Run:
    """One fine-tuning run: ``task``, ``seed``, ``init`` (``"pretrained"`` / ``"random"``),
    ``max_train`` (None: the full train set)."""

    task: str
    seed: int
    init: str = "pretrained"
    max_train: int | None = None


def _items(spec: str) -> list[str]:
    return [s.strip() for s in str(spec).split(",") if s.strip()]


def parse_tasks(spec: str) -> list[str]:
    """``"MRPC,RTE"`` -> ``["MRPC", "RTE"]``; unknown names are refused with the known ones."""
    tasks = _items(spec)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise ValueError(f"unknown GLUE task(s) {unknown}; known: {', '.join(TASKS)}")
    if len(set(tasks)) != len(tasks):
        raise ValueError(f"task listed twice in {spec!r}")
    return tasks


def parse_seeds(spec: str) -> list[int]:
    """``"42,43"`` -> ``[42, 43]`` (at least one, no repeats)."""
    try:
        seeds = [int(s) for s in _items(spec)]
    except ValueError:
        raise ValueError(f"seeds must be comma-separated integers, got {spec!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct and at least one, got {spec!r}")
    return seeds


def parse_limits(spec: str, tasks: list[str] | None = None) -> dict[str, int]:
    """``"SST-2:8000,CoLA:4000"`` -> ``{"SST-2": 8000, "CoLA": 4000}``; ``""`` -> ``{}``."""
    out: dict[str, int] = {}
    for item in _items(spec):
        task, sep, n = item.partition(":")
        if not sep or not n.strip().isdigit() or int(n) < 1:
            raise ValueError(f"max_train entries read TASK:N with N >= 1, got {item!r} "
                             f"(for example 'SST-2:8000,CoLA:4000')")
        parse_tasks(task)
        out[task.strip()] = int(n)
    return out


def runs(tasks: str, seeds: str, multi_seed_tasks: str = "", max_train: str = "",
         random_init: int = 0) -> list[Run]:
    """The pre-trained runs (every seed on ``multi_seed_tasks``, the first seed elsewhere),
    then ``random_init`` randomly initialised runs per task: the first ``random_init`` seeds
    (``True`` counts as 1, ``False`` as 0, as older runs' provenance records it).

    >>> [(r.task, r.init, r.seed) for r in runs("RTE", "42,43", "", "", random_init=2)]
    [('RTE', 'pretrained', 42), ('RTE', 'random', 42), ('RTE', 'random', 43)]
    """
    task_list, seed_list = parse_tasks(tasks), parse_seeds(seeds)
    multi = parse_tasks(multi_seed_tasks)
    extra = [t for t in multi if t not in task_list]
    if extra:
        raise ValueError(f"multi_seed_tasks {extra} are not among tasks {task_list}")
    n_random = int(random_init)
    if not 0 <= n_random <= len(seed_list):
        raise ValueError(f"random_init asks for {n_random} random-init runs per task, but seeds "
                         f"{seed_list} give {len(seed_list)}: add seeds or lower random_init "
                         f"(0: none)")
    limits = parse_limits(max_train)
    out = [Run(t, s, "pretrained", limits.get(t))
           for t in task_list for s in (seed_list if t in multi else seed_list[:1])]
    out += [Run(t, s, "random", limits.get(t)) for t in task_list for s in seed_list[:n_random]]
    return out


def lr_check_runs(planned: list[Run], rates: str, tasks: str) -> list[tuple[Run, float]]:
    """Notebook 06's learning-rate check: for each task of ``tasks`` (``"RTE,CoLA"``), its
    first pre-trained run of ``planned`` paired with each rate of ``rates`` (``"1e-4,2e-5"``;
    ``""``: no check). A task the plan does not fine-tune is refused by name.

    >>> planned = runs("RTE,CoLA", "42,43", "RTE", "CoLA:4000")
    >>> [(r.task, r.seed, lr) for r, lr in lr_check_runs(planned, "1e-4", "CoLA")]
    [('CoLA', 42, 0.0001)]
    """
    if not str(rates).strip():
        return []
    try:
        values = [float(x) for x in _items(rates)]
    except ValueError:
        raise ValueError(f"lr_check must be comma-separated rates, got {rates!r}") from None
    out = []
    for task in parse_tasks(tasks):
        first = next((r for r in planned if r.task == task and r.init == "pretrained"), None)
        if first is None:
            raise ValueError(f"lr_check_tasks names {task}, which the plan does not fine-tune "
                             f"(tasks: {sorted({r.task for r in planned})})")
        out += [(first, v) for v in values]
    return out


def settings(epochs: int = 3, batch_size: int = 32, learning_rate: float = 5e-5,
             max_length: int = 128, warmup_ratio: float = 0.1,
             num_threads: int = 0, precision: str = "float32") -> FinetuneSettings:
    """:class:`FinetuneSettings` from notebook parameters (``num_threads`` 0: torch's own;
    ``precision``: float32, tf32 or bf16, part of the key unless float32)."""
    return FinetuneSettings(epochs=epochs, batch_size=batch_size, learning_rate=learning_rate,
                            max_length=max_length, warmup_ratio=warmup_ratio,
                            num_threads=num_threads or None, precision=precision)


def fit_run(run: Run, model: str, settings: FinetuneSettings, *, subset_seed: int = 0,
            max_dev: int = 0, device: str = "", progress: bool | None = None,
            cache_dir: str | os.PathLike | None = None,
            data_dir: str | os.PathLike | None = None) -> FineTuned:
    """:func:`~analysis_utils.training.finetune.finetune` for one planned run (cached: a run
    notebook 06 or ``plan run`` made is loaded, not retrained). ``max_dev`` 0 / ``device`` "":
    all / auto; ``cache_dir`` / ``data_dir`` None: ``$BERTOLOGY_CACHE_DIR`` /
    ``$BERTOLOGY_DATA_DIR`` (:mod:`analysis_utils.paths`)."""
    return finetune(model, run.task, seed=run.seed, settings=settings, init=run.init,
                    max_train=run.max_train, subset_seed=subset_seed, max_dev=max_dev or None,
                    device=device or None, progress=progress, cache_dir=cache_dir,
                    data_dir=data_dir)


def run_key(run: Run, model: str, settings: FinetuneSettings, *, subset_seed: int = 0,
            max_dev: int = 0, data_dir: str | os.PathLike | None = None,
            device: str | None = "") -> tuple[str, dict]:
    """``(key, key_inputs)`` of the cache entry :func:`fit_run` with the same arguments reads
    or writes, without training (it loads the encoder to fingerprint its weights and reads the
    task's examples). ``device``: where the run trains ("" / None: CUDA when available, as
    :func:`fit_run`); its kind is part of the key unless it is the CPU."""
    return finetune_key(model, run.task, run.seed, settings, run.init, run.max_train,
                        subset_seed=subset_seed, max_dev=max_dev or None, data_dir=data_dir,
                        device=device or None)
