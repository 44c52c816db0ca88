"""The shared training loop: hand-computed updates, determinism, what the log records, and
that the caller's RNGs, threads and determinism flags are left as they were."""

from __future__ import annotations

import functools
import math
import random

import numpy as np
import pytest
import torch
from torch import nn

from analysis_utils.training import TrainLog, fit, seeded


def mse_loss(model, batch):
    x, y = batch
    return ((model(x).squeeze(-1) - y) ** 2).mean(), len(y)


def test_one_sgd_step_is_the_hand_computed_update():
    # y_hat = w . x + b on two examples, loss = mean (y_hat - y)^2, start w = (1, -1), b = 0.5
    model = nn.Linear(2, 1)
    with torch.no_grad():
        model.weight.copy_(torch.tensor([[1.0, -1.0]]))
        model.bias.fill_(0.5)
    x = torch.tensor([[1.0, 2.0], [3.0, 0.0]])
    y = torch.tensor([0.0, 1.0])
    log = fit(model, lambda gen: [(x, y)], mse_loss,
              optimizer=functools.partial(torch.optim.SGD, lr=0.1))
    # y_hat = (-0.5, 3.5), residuals r = (-0.5, 2.5), loss = (0.25 + 6.25) / 2 = 3.25
    # dL/dw = mean(2 r x) = (-0.5 * 1 + 2.5 * 3, -0.5 * 2 + 2.5 * 0) = (7, -1); dL/db = 2
    torch.testing.assert_close(model.weight.detach(), torch.tensor([[1 - 0.7, -1 + 0.1]]))
    torch.testing.assert_close(model.bias.detach(), torch.tensor([0.5 - 0.2]))
    assert log.step_losses == [3.25] and log.epoch_losses == [3.25]
    assert (log.steps, log.examples) == (1, 2)


def test_first_adam_step_moves_each_weight_by_lr():
    # Adam's first update is lr * g / (|g| + eps): every weight with a gradient moves by ~lr.
    model = nn.Linear(3, 1, bias=False)
    nn.init.zeros_(model.weight)
    x, y = torch.tensor([[1.0, -2.0, 0.0]]), torch.tensor([5.0])
    fit(model, lambda gen: [(x, y)], mse_loss,
        optimizer=functools.partial(torch.optim.Adam, lr=0.01))
    torch.testing.assert_close(model.weight.detach(), torch.tensor([[0.01, -0.01, 0.0]]))


class Dropped(nn.Module):
    """Linear model with dropout, so training consumes the global torch RNG."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 1)
        self.drop = nn.Dropout(0.3)

    def forward(self, x):
        return self.lin(self.drop(x))


def _data(n=40):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 4, generator=g)
    return x, x @ torch.tensor([1.0, -2.0, 0.5, 0.0]) + 0.1 * torch.randn(n, generator=g)


def _shuffled(x, y, batch_size=8):
    def batches(gen):
        perm = torch.randperm(len(x), generator=gen)
        return ((x[perm[i:i + batch_size]], y[perm[i:i + batch_size]])
                for i in range(0, len(x), batch_size))
    return batches


def _run(seed, init_seed=0):
    x, y = _data()
    with seeded(init_seed):
        model = Dropped()
    log = fit(model, _shuffled(x, y), mse_loss, epochs=3, seed=seed,
              optimizer=functools.partial(torch.optim.Adam, lr=0.05))
    return model, log


def test_two_runs_are_identical_and_the_seed_matters():
    torch.manual_seed(123)  # the caller's RNG state must not matter
    a, log_a = _run(seed=4)
    np.random.seed(7)
    random.seed(7)
    b, log_b = _run(seed=4)
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)
    assert log_a.step_losses == log_b.step_losses
    c, log_c = _run(seed=5)  # another data order and other dropout masks
    assert not torch.equal(a.lin.weight, c.lin.weight)
    assert log_a.step_losses != log_c.step_losses


def test_callers_rngs_threads_and_flags_are_restored():
    model = Dropped()
    torch.manual_seed(1)
    np.random.seed(1)
    random.seed(1)
    states = (torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate())
    threads = torch.get_num_threads()
    flags = (torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.benchmark)
    x, y = _data()
    seen = {}

    def loss_fn(model, batch):
        seen["threads"] = torch.get_num_threads()
        seen["deterministic"] = torch.are_deterministic_algorithms_enabled()
        return mse_loss(model, batch)

    fit(model, _shuffled(x, y), loss_fn, epochs=2, num_threads=1, deterministic=True)
    assert seen == {"threads": 1, "deterministic": True}
    assert torch.equal(torch.get_rng_state(), states[0])
    assert np.array_equal(np.random.get_state()[1], states[1])
    assert random.getstate() == states[2]
    assert torch.get_num_threads() == threads
    assert (torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.benchmark) == flags


def test_log_records_losses_counts_evaluations_and_time():
    x, y = _data(20)
    evaluated_in_eval_mode = []

    def evaluate(model):
        evaluated_in_eval_mode.append(not model.training and not torch.is_grad_enabled())
        return {"mse": float(((model(x).squeeze(-1) - y) ** 2).mean())}

    model = Dropped()
    log = fit(model, _shuffled(x, y, batch_size=8), mse_loss, epochs=2, evaluate=evaluate)
    assert isinstance(log, TrainLog)
    assert log.steps == 6 and log.examples == 40  # batches of 8, 8, 4 per epoch
    assert len(log.step_losses) == 6 and len(log.epoch_losses) == 2
    for e in range(2):  # epoch loss = mean over examples = batch losses weighted by size
        first = log.step_losses[3 * e: 3 * e + 3]
        assert log.epoch_losses[e] == pytest.approx((8 * first[0] + 8 * first[1] + 4 * first[2])
                                                    / 20)
    assert [ev["epoch"] for ev in log.evaluations] == [0, 1] and all(evaluated_in_eval_mode)
    assert len(log.epoch_seconds) == 2 and log.seconds >= sum(log.epoch_seconds) > 0
    assert not model.training  # the model ends in eval mode


def test_max_steps_with_an_endless_sampler_and_a_scheduler():
    x, y = _data(16)
    drawn = []

    def sampler(gen):
        while True:
            idx = torch.randint(0, len(x), (4,), generator=gen)
            drawn.append(idx)
            yield x[idx], y[idx]

    scheds = []

    def scheduler(opt):
        scheds.append(torch.optim.lr_scheduler.LambdaLR(opt, lambda t: 1.0 / (t + 1)))
        return scheds[-1]

    log = fit(nn.Linear(4, 1), sampler, mse_loss, epochs=5, max_steps=7, scheduler=scheduler)
    assert log.steps == 7 and len(drawn) == 7  # no batch is drawn beyond the last step
    assert len(log.epoch_losses) == 1  # the first (endless) epoch used all the steps
    assert scheds[0].last_epoch == 7  # stepped once per optimiser step


def test_max_steps_across_epochs_and_empty_epochs():
    x, y = _data(16)
    log = fit(nn.Linear(4, 1), _shuffled(x, y, batch_size=4), mse_loss, epochs=3,
              max_steps=6)
    assert log.steps == 6 and len(log.epoch_losses) == 2 and log.examples == 24
    empty = fit(nn.Linear(4, 1), lambda gen: [], mse_loss, epochs=2)
    assert empty.steps == 0 and all(math.isnan(v) for v in empty.epoch_losses)


def test_only_parameters_that_require_grad_are_optimised():
    model = nn.Linear(4, 1)
    model.bias.requires_grad_(False)
    given = []

    def optimizer(params):
        given.extend(params)
        return torch.optim.SGD(given, lr=0.1)

    x, y = _data(8)
    fit(model, lambda gen: [(x, y)], mse_loss, optimizer=optimizer)
    assert len(given) == 1 and given[0] is model.weight


def test_module_example_runs():
    import doctest

    from analysis_utils.training import loop

    assert doctest.testmod(loop).failed == 0
