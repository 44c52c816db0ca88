"""The training loop and its helpers: seeding, thread control, determinism.

:func:`fit` takes a model that already exists (initialise it inside :func:`seeded` when its
weights must come from the seed) and two model-specific functions:

- ``batches(generator) -> iterable`` yields one epoch of batches. ``generator`` is a
  ``torch.Generator`` seeded with ``seed`` once per :func:`fit` call, for shuffling or
  sampling (``torch.randperm(n, generator=generator)``); a fixed stream may ignore it. An
  endless sampler is fine with ``max_steps``.
- ``loss_fn(model, batch) -> (loss, n)``: the scalar loss of one batch (a mean over its
  ``n`` items) and ``n``, which weights the batch in the epoch's mean loss.

Each step is ``zero_grad``, ``loss_fn``, ``backward``, optimiser step, scheduler step.

Example, one plain SGD step on ``y = w . x``::

    >>> import functools, torch
    >>> from analysis_utils.training import fit
    >>> model = torch.nn.Linear(2, 1, bias=False)
    >>> _ = torch.nn.init.zeros_(model.weight)
    >>> x, y = torch.tensor([[1.0, 2.0]]), torch.tensor([3.0])
    >>> log = fit(model, lambda gen: [0],
    ...           lambda m, _: (((m(x).squeeze(1) - y) ** 2).mean(), 1),
    ...           optimizer=functools.partial(torch.optim.SGD, lr=0.1))
    >>> model.weight.tolist(), log.steps, log.epoch_losses
    ([[0.6000000238418579, 1.2000000476837158]], 1, [9.0])
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

Batches = Callable[[torch.Generator], Iterable[Any]]
LossFn = Callable[[nn.Module, Any], tuple[torch.Tensor, int]]


@dataclass
class TrainLog:
    """What :func:`fit` did.

    ``steps``: optimiser steps; ``examples``: sum of the batches' ``n``; ``epoch_losses``:
    per epoch, mean loss weighted by ``n`` (NaN for an epoch without batches);
    ``step_losses``: loss of every step; ``evaluations``: ``{"epoch": e, **evaluate(model)}``
    after each epoch when an ``evaluate`` hook is given; ``epoch_seconds`` and ``seconds``:
    wall time per epoch and in all.
    """

    steps: int = 0
    examples: int = 0
    epoch_losses: list[float] = field(default_factory=list)
    step_losses: list[float] = field(default_factory=list)
    evaluations: list[dict] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)
    seconds: float = 0.0


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Seed torch (CPU and every CUDA device), numpy's and Python's global RNGs for the
    block, and give the caller's RNG states back afterwards, so what runs inside depends on
    ``seed`` alone and what runs after does not depend on it at all."""
    py_state, np_state = random.getstate(), np.random.get_state()
    with torch.random.fork_rng(devices=range(torch.cuda.device_count())):
        random.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)
        try:
            yield
        finally:
            random.setstate(py_state)
            np.random.set_state(np_state)


@contextlib.contextmanager
def torch_threads(num_threads: int | None) -> Iterator[None]:
    """Temporarily set torch's intra-op thread count (None: leave it). The models trained
    here are small, and one thread is several times faster than a pool (5-8x on a 2-core
    box); the thread count can also change float reductions, so it is part of a run's
    settings."""
    if num_threads is None:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def deterministic_algorithms(enabled: bool = True) -> Iterator[None]:
    """Within the block, ask torch for deterministic kernels (warning, not failing, where an
    op has none) and cuDNN for deterministic, non-benchmarked convolutions; restore the
    previous settings afterwards. On CUDA, cuBLAS is deterministic only when
    ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` is set before the first CUDA call."""
    if not enabled:
        yield
        return
    cudnn = torch.backends.cudnn
    before = (torch.are_deterministic_algorithms_enabled(),
              torch.is_deterministic_algorithms_warn_only_enabled(),
              cudnn.deterministic, cudnn.benchmark)
    torch.use_deterministic_algorithms(True, warn_only=True)
    cudnn.deterministic, cudnn.benchmark = True, False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        cudnn.deterministic, cudnn.benchmark = before[2], before[3]


def fit(
    model: nn.Module,
    batches: Batches,
    loss_fn: LossFn,
    *,
    optimizer: Callable[..., torch.optim.Optimizer] = torch.optim.Adam,
    epochs: int = 1,
    max_steps: int | None = None,
    seed: int = 0,
    scheduler: Callable[[torch.optim.Optimizer], Any] | None = None,
    evaluate: Callable[[nn.Module], Mapping[str, Any]] | None = None,
    num_threads: int | None = None,
    deterministic: bool = True,
) -> TrainLog:
    """Train ``model`` in place and return a :class:`TrainLog`; the model ends in eval mode.

    batches, loss_fn: the model-specific parts (see the module docstring).
    optimizer: called with the list of parameters that require grad, e.g.
        ``functools.partial(torch.optim.AdamW, lr=1e-3, weight_decay=0.01)``.
    epochs: passes over ``batches``; max_steps: stop after this many steps in all (None: no
        limit; needed when ``batches`` is endless).
    seed: seeds the global RNGs inside the loop (dropout and the like; the caller's states
        are restored afterwards, see :func:`seeded`) and the data-order generator given to
        ``batches``. It does not initialise the model.
    scheduler: called with the optimiser, e.g. ``lambda opt: LambdaLR(opt, f)``; stepped
        after every optimiser step.
    evaluate: called after each epoch (model in eval mode, no grad); its mapping is logged.
    num_threads: torch intra-op threads while training (:func:`torch_threads`).
    deterministic: deterministic kernels while training (:func:`deterministic_algorithms`).
    """
    log = TrainLog()
    start = time.perf_counter()
    with (torch_threads(num_threads), deterministic_algorithms(deterministic),
          seeded(seed)):
        generator = torch.Generator().manual_seed(seed)
        opt = optimizer([p for p in model.parameters() if p.requires_grad])
        sched = scheduler(opt) if scheduler is not None else None
        model.train()
        for epoch in range(epochs):
            left = None if max_steps is None else max_steps - log.steps
            if left is not None and left <= 0:
                break
            t0 = time.perf_counter()
            total, count = 0.0, 0
            for batch in itertools.islice(batches(generator), left):
                opt.zero_grad(set_to_none=True)
                loss, n = loss_fn(model, batch)
                loss.backward()
                opt.step()
                if sched is not None:
                    sched.step()
                value = float(loss.detach())
                log.step_losses.append(value)
                total += value * n
                count += n
                log.steps += 1
            log.examples += count
            log.epoch_losses.append(total / count if count else math.nan)
            if evaluate is not None:
                model.eval()
                with torch.no_grad():
                    log.evaluations.append({"epoch": epoch, **evaluate(model)})
                model.train()
            log.epoch_seconds.append(time.perf_counter() - t0)
        model.eval()
    log.seconds = time.perf_counter() - start
    return log
