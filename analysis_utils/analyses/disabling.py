"""Disabling heads and layers of a fine-tuned classifier (Kovaleva et al. 2019, Section 4.6,
Figures 8-9), with significance tests, and Michel et al. (2019) gate importance and pruning
curves. Method, caveats and the paper's numbers: notebook 07.

Works on any ``AutoModelForSequenceClassification`` of the BERT family running eager
attention, an encoded dev set (``data.glue.encode`` output, or anything
``engine.attention.as_inputs`` accepts) and a metric ``metric(y_true, y_pred) -> float``
(``significance.accuracy``, ``f1``, ``matthews``, ``pearson``, ``spearman``). Every change of
attention goes through ``engine.interventions.intervene``:

- ``"uniform"``: each row of the head's map becomes 1/L over the L real tokens (Kovaleva's
  "disabling"); ``"zero"``: the head's output is 0 (Michel et al.'s masking).

What is here:

- :func:`evaluate_changes`: logits of the dev set under many :class:`Change` s (one head, a
  layer, a set of pruned heads). ``fast=True`` runs each batch once plainly, caches what
  enters every layer, then runs each change only from its lowest changed layer upward (the
  layers below cannot see it); at that layer the linear maps fed by the layer's input (query,
  key, value) are reused too. The outputs are bit-identical to ``fast=False``, one full dev
  evaluation per change (same batches, same kernels), which the tests and
  ``benchmarks/bench_disabling.py`` check.
- :func:`sweep`: baseline, every head, every layer (Figures 8-9) -> :class:`Sweep`;
  :func:`compare_to_baseline`: bootstrap interval for every change, McNemar (accuracy) or
  bootstrap p, Holm and Benjamini-Hochberg over the heads; :func:`summarize`: the paper's
  statements (mean change over heads, share that helps, best gain, best layer) as one row;
  :func:`seed_agreement`: do the same heads help across fine-tuning seeds?
- :func:`head_importance`, :func:`normalize_importance`, :func:`pruning_curves`: Michel et al.
  I_h = sum over examples of |dL/d xi_h|, normalised per layer (L2) then min-max over the
  model; the metric as heads are removed from least to most important, beside random orders.

Example::

    res = sweep(model, encoded_dev, labels, accuracy)            # Figures 8-9
    table = compare_to_baseline(res, accuracy)                    # + CI, McNemar, Holm, BH
    grid = head_grid(table, "delta")                              # (layers, heads) for plotting
    imp = normalize_importance(head_importance(model, encoded_dev, labels))
    curves = pruning_curves(model, encoded_dev, labels, accuracy, imp)
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..engine import attention as engine_attention
from ..engine.first_token import first_token_last_layer
from ..engine.interventions import intervene, layer_list, unwrap_model
from ..heads import head_label
from . import significance

MODES = ("uniform", "zero")
KINDS = ("baseline", "head", "layer", "pruned")

__all__ = ["MODES", "Change", "baseline_change", "head_changes", "layer_changes",
           "evaluate_changes", "predictions_from_logits", "Sweep", "sweep", "sweep_table",
           "compare_to_baseline", "summarize", "seed_agreement", "head_grid",
           "head_importance", "normalize_importance", "importance_order", "importance_table",
           "pruning_steps", "pruning_curves", "recap"]

Metric = Callable[[np.ndarray, np.ndarray], float]


# --- changes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """Heads changed together in one evaluation.

    heads: 0-based ``(layer, head)`` pairs (empty: the unchanged model); mode: ``"uniform"``
    (Kovaleva's disabling) or ``"zero"`` (Michel's masking); kind / layer / head / name:
    how tables show it (``kind`` one of ``baseline``, ``head``, ``layer``, ``pruned``).
    """

    heads: tuple[tuple[int, int], ...] = ()
    mode: str = "uniform"
    kind: str = "baseline"
    layer: int | None = None
    head: int | None = None
    name: str = "baseline"

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {self.kind!r}")
        object.__setattr__(self, "heads",
                           tuple(sorted({(int(la), int(h)) for la, h in self.heads})))

    @property
    def lowest_layer(self) -> int | None:
        """The first layer whose output the change can alter (None: unchanged model)."""
        return min(la for la, _ in self.heads) if self.heads else None

    def intervene_kwargs(self) -> dict:
        return {self.mode: list(self.heads)} if self.heads else {}


def baseline_change() -> Change:
    return Change()


def head_changes(num_layers: int, num_heads: int, mode: str = "uniform") -> list[Change]:
    """One change per head, layer-major (Figure 8)."""
    return [Change(((la, h),), mode, "head", la, h, head_label(la, h))
            for la in range(num_layers) for h in range(num_heads)]


def layer_changes(num_layers: int, num_heads: int, mode: str = "uniform") -> list[Change]:
    """One change per layer, all its heads at once (Figure 9)."""
    return [Change(tuple((la, h) for h in range(num_heads)), mode, "layer", la, None,
                   f"layer {la + 1}") for la in range(num_layers)]


# --- running the model from a given layer ---------------------------------------------------


def _layer_list(model: nn.Module) -> nn.ModuleList:
    """The model's layer list: the first ``nn.ModuleList`` of ``num_hidden_layers`` entries
    (the rule ``engine.interventions`` uses to number layers)."""
    n = int(model.config.num_hidden_layers)
    for m in model.modules():
        if isinstance(m, nn.ModuleList) and len(m) == n:
            return m
    raise ValueError(f"{type(model).__name__}: no nn.ModuleList of {n} layers; the fast sweep "
                     "needs a BERT-family encoder (run evaluate_changes with fast=False)")


def _first_tensor(args, kwargs):
    for x in list(args) + list(kwargs.values()):
        if isinstance(x, torch.Tensor):
            return x
    return None


class _LayerCache:
    """Per batch: what enters and leaves every layer, and at every layer the outputs of the
    linear maps applied directly to the layer's input (BERT's query, key, value).

    :meth:`capture` records them during a plain pass; :meth:`start_at` then makes the model's
    own forward skip everything below a layer: the embeddings and the layers below return
    their cached outputs, and at the layer itself the input-fed linear maps return theirs.
    The model's code path from that layer up is untouched, so its outputs are bit-identical
    to a full pass (an intervention at layer l changes nothing below it, nor those linear
    maps, which act before the attention function).
    """

    def __init__(self, model: nn.Module):
        self.layers = list(_layer_list(model))
        base = getattr(model, "base_model", model)
        self.embeddings = getattr(base, "embeddings", None)
        self.clear()

    def clear(self) -> None:
        self.embedding_out = None
        self.inputs: list = [None] * len(self.layers)
        self.outputs: list = [None] * len(self.layers)
        self.fed: list[dict] = [{} for _ in self.layers]
        self._calls: list[dict] = [{} for _ in self.layers]

    @contextlib.contextmanager
    def capture(self) -> Iterator[None]:
        self.clear()
        handles = []

        def pre(i):
            def hook(_module, args, kwargs):
                self.inputs[i] = _first_tensor(args, kwargs)
            return hook

        def post(i):
            def hook(_module, _args, output):
                self.outputs[i] = output
            return hook

        def linear(i):
            def hook(module, args, output):
                calls = self._calls[i]
                calls[module] = calls.get(module, 0) + 1
                if args and args[0] is self.inputs[i]:
                    self.fed[i][module] = output
            return hook

        try:
            if self.embeddings is not None:
                handles.append(self.embeddings.register_forward_hook(
                    lambda _m, _a, out: setattr(self, "embedding_out", out)))
            for i, layer in enumerate(self.layers):
                handles.append(layer.register_forward_pre_hook(pre(i), with_kwargs=True))
                handles.append(layer.register_forward_hook(post(i)))
                for sub in layer.modules():
                    if isinstance(sub, nn.Linear):
                        handles.append(sub.register_forward_hook(linear(i)))
            yield
        finally:
            for h in handles:
                h.remove()
        for i, calls in enumerate(self._calls):  # a map called twice per pass is not reused
            for module, count in calls.items():
                if count != 1:
                    self.fed[i].pop(module, None)

    @contextlib.contextmanager
    def start_at(self, layer: int) -> Iterator[None]:
        if self.outputs[0] is None:
            raise RuntimeError("start_at() needs a captured pass of the same batch first")
        replaced: list[tuple[nn.Module, object]] = []

        def replace(module: nn.Module, value) -> None:
            replaced.append((module, module.__dict__.get("forward")))
            module.forward = lambda *_a, **_k: value

        expected = self.inputs[layer]

        def check(_module, args, kwargs):
            x = _first_tensor(args, kwargs)
            if x is not expected and not torch.equal(x, expected):
                raise RuntimeError(f"layer {layer} received another input than in the cached "
                                   "pass: this model does not pass hidden states from layer "
                                   "to layer directly; use fast=False")

        try:
            if self.embeddings is not None and self.embedding_out is not None:
                replace(self.embeddings, self.embedding_out)
            for i in range(layer):
                replace(self.layers[i], self.outputs[i])
            for module, out in self.fed[layer].items():
                replace(module, out)
            handle = self.layers[layer].register_forward_pre_hook(check, with_kwargs=True)
            try:
                yield
            finally:
                handle.remove()
        finally:
            for module, previous in reversed(replaced):
                if previous is None:
                    del module.forward
                else:
                    module.forward = previous


def _device(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def _prepare_batches(model: nn.Module, inputs, max_tokens: int, max_batch: int, pad_id: int):
    items = engine_attention.as_inputs(inputs)
    if not items:
        raise ValueError("no inputs to evaluate")
    lengths = np.array([len(x) for x in items])
    device = _device(model)
    out = []
    for idx in engine_attention.length_batches(lengths, np.arange(len(items)), max_tokens, max_batch):
        out.append((np.array(idx), engine_attention.collate(
            [items[i] for i in idx], pad_id, device, engine_attention.uses_token_types(model))))
    return out, len(items)


def _pad_id(model: nn.Module, pad_id: int | None) -> int:
    if pad_id is not None:
        return int(pad_id)
    value = getattr(model.config, "pad_token_id", None)
    return 0 if value is None else int(value)


@contextlib.contextmanager
def _eval_mode(model: nn.Module):
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


Inspect = Callable[[Change, np.ndarray, dict, object], None]


def evaluate_changes(model, inputs, changes: Sequence[Change], *, fast: bool = True,
                     max_tokens: int = 4096, max_batch: int = 64, pad_id: int | None = None,
                     inspect: Inspect | None = None, first_token: bool = True) -> np.ndarray:
    """Logits of every input under every change: ``(len(changes), n_inputs, num_labels)``
    float32, in input order.

    model: a sequence-classification model (eager attention), or an object holding one in
    ``.model``; it runs in eval mode under ``torch.inference_mode`` (its mode is restored).
    inputs: encoded examples (``glue.encode(...)``, ``EncodedInput``s, dicts with
    ``input_ids`` and optional ``token_type_ids``), batched by length: at most ``max_tokens``
    padded tokens and ``max_batch`` examples per batch. fast: per batch, one plain pass caches
    what enters each layer, then each change runs from its lowest layer upward (bit-identical
    to ``fast=False``, one full evaluation per change over the same batches). On a GPU a
    larger ``max_tokens`` (16k-32k) keeps it busy; that is also why the batch is not
    replicated per head: K copies with one head each cost what a K times larger batch does.
    inspect: ``inspect(change, example_indices, batch, intervention)`` after each changed
    pass, with the maps recorded from the change's lowest layer upward
    (``intervention.attentions``, layer order), e.g. to check that a disabled head is uniform.
    first_token: run the last layer's feed-forward step on the first token only, the one
    position the classifier reads (:func:`~analysis_utils.engine.first_token.
    first_token_last_layer`; checked on the first batch, else off): the logits agree with the
    full computation to float rounding and a sweep takes about a fifth less time
    (``benchmarks/bench_disabling.py``). Attention maps are computed in full either way.
    """
    model = unwrap_model(model)
    changes = list(changes)
    batches, n = _prepare_batches(model, inputs, max_tokens, max_batch,
                                  _pad_id(model, pad_id))
    num_layers = int(model.config.num_hidden_layers)
    if fast and layer_list(model, num_layers) is None:
        # one layer module shared by every layer (ALBERT): no layer to start a pass from, so
        # every change is a full pass (the same numbers, fast=False's)
        fast = False
    out: np.ndarray | None = None

    def store(k: int, idx: np.ndarray, logits: torch.Tensor) -> None:
        nonlocal out
        values = logits.detach().float().cpu().numpy()
        if out is None:
            out = np.zeros((len(changes), n, values.shape[-1]), dtype=np.float32)
        out[k, idx] = values

    def kwargs_for(change: Change) -> dict:
        kw = change.intervene_kwargs()
        if inspect is not None and change.heads:
            kw["record"] = range(change.lowest_layer, num_layers)
        return kw

    with _eval_mode(model), torch.inference_mode(), (
            first_token_last_layer(model, check=batches[0][1]) if first_token
            else contextlib.nullcontext(False)):
        if fast:
            cache = _LayerCache(model)
            for idx, batch in batches:
                with intervene(model), cache.capture():
                    plain = model(**batch).logits
                for k, change in enumerate(changes):
                    if not change.heads:
                        store(k, idx, plain)
                        continue
                    with intervene(model, **kwargs_for(change)) as iv, \
                            cache.start_at(change.lowest_layer):
                        store(k, idx, model(**batch).logits)
                        if inspect is not None:
                            inspect(change, idx, batch, iv)
                cache.clear()
        else:
            for k, change in enumerate(changes):
                with intervene(model, **kwargs_for(change)) as iv:
                    for idx, batch in batches:
                        store(k, idx, model(**batch).logits)
                        if inspect is not None and change.heads:
                            inspect(change, idx, batch, iv)
    if out is None:
        return np.zeros((0, n, 0), dtype=np.float32)
    return out


def predictions_from_logits(logits: np.ndarray) -> np.ndarray:
    """Predicted classes (argmax over the last axis), or the score itself when there is one
    output (regression, STS-B)."""
    logits = np.asarray(logits)
    return logits[..., 0] if logits.shape[-1] == 1 else logits.argmax(-1)


# --- the sweep ------------------------------------------------------------------------------


@dataclass
class Sweep:
    """What :func:`sweep` measured.

    table: one row per change (first row the baseline): ``kind, layer, head, label, mode,
    n_heads, metric, value, delta`` (``delta = value - baseline``; ``layer``/``head``
    1-based, as the papers and ``label`` number them; a :class:`Change` holds the 0-based
    indices the model is addressed by). predictions: ``(len(changes), n)`` predicted classes
    or scores, rows aligned with ``table``; labels: ``(n,)``; logits: ``(len(changes), n, C)``.
    """

    table: pd.DataFrame
    predictions: np.ndarray
    labels: np.ndarray
    logits: np.ndarray
    changes: list[Change]
    seconds: float = 0.0
    settings: dict = field(default_factory=dict)


def _metric_name(metric: Metric, name: str | None) -> str:
    return name or getattr(metric, "__name__", "metric")


def sweep_table(changes: Sequence[Change], values: np.ndarray,
                metric_name: str) -> pd.DataFrame:
    """The table of a sweep (see :class:`Sweep`) from its changes and metric values, baseline
    first; ``layer``/``head`` 1-based (issue 33: every saved table numbers them from 1)."""
    base = float(values[0])
    rows = []
    for change, value in zip(changes, values, strict=True):
        rows.append({"kind": change.kind,
                     "layer": None if change.layer is None else change.layer + 1,
                     "head": None if change.head is None else change.head + 1,
                     "label": change.name,
                     "mode": change.mode if change.heads else "none",
                     "n_heads": len(change.heads), "metric": metric_name,
                     "value": float(value), "delta": float(value) - base})
    table = pd.DataFrame(rows)
    return table.astype({"layer": "Int64", "head": "Int64"})


def sweep(model, inputs, labels, metric: Metric, *, mode: str = "uniform", heads: bool = True,
          layers: bool = True, extra: Sequence[Change] = (), fast: bool = True,
          metric_name: str | None = None, max_tokens: int = 4096,
          max_batch: int = 64) -> Sweep:
    """Kovaleva et al. Figures 8-9: the dev metric of the unchanged model, with every single
    head changed in turn (``heads``) and with every layer changed at once (``layers``), plus
    any ``extra`` changes.

    labels: (n,) gold labels in input order (ints for classification, floats for STS-B);
    metric: ``metric(y_true, y_pred) -> float`` on predicted classes (or scores when the
    model has one output); mode: ``"uniform"`` (the paper) or ``"zero"``.
    """
    model = unwrap_model(model)
    num_layers = int(model.config.num_hidden_layers)
    num_heads = int(model.config.num_attention_heads)
    changes = [baseline_change()]
    if heads:
        changes += head_changes(num_layers, num_heads, mode)
    if layers:
        changes += layer_changes(num_layers, num_heads, mode)
    changes += list(extra)
    labels = np.asarray(labels)
    t0 = time.perf_counter()
    logits = evaluate_changes(model, inputs, changes, fast=fast, max_tokens=max_tokens,
                              max_batch=max_batch)
    seconds = time.perf_counter() - t0
    if logits.shape[1] != len(labels):
        raise ValueError(f"{logits.shape[1]} inputs but {len(labels)} labels")
    preds = predictions_from_logits(logits)
    values = np.array([metric(labels, p) for p in preds], dtype=float)
    name = _metric_name(metric, metric_name)
    return Sweep(table=sweep_table(changes, values, name), predictions=preds, labels=labels,
                 logits=logits, changes=changes, seconds=seconds,
                 settings={"mode": mode, "fast": fast, "max_tokens": max_tokens,
                           "max_batch": max_batch, "n": len(labels),
                           "num_layers": num_layers, "num_heads": num_heads})


def compare_to_baseline(result: Sweep, metric: Metric, *, test: str = "auto",
                        n_boot: int = 10_000, ci: float = 0.95, seed: int = 0,
                        alpha: float = 0.05, families: Iterable[str] = ("head", "layer"),
                        block: int = 500) -> pd.DataFrame:
    """``result.table`` plus, for every change, the paired bootstrap interval of its delta
    (``ci_lo``, ``ci_hi``), a two-sided p-value (``test``: ``"mcnemar"``, exact, on
    correct/incorrect per example; ``"bootstrap"``; ``"auto"``: McNemar when ``metric`` is
    ``significance.accuracy``, else bootstrap) and adjusted p-values within each family of
    ``families`` (all single heads; all layers): ``p_holm``, ``p_bh``, with ``holm`` /
    ``bh`` True where the adjusted p is below ``alpha``.

    One extra row, ``kind == "mean over heads"``, is the paper's "disabling a random head":
    the mean delta over single heads, with its bootstrap interval (same resamples).
    """
    if test == "auto":
        test = "mcnemar" if metric is significance.accuracy else "bootstrap"
    if test not in ("mcnemar", "bootstrap"):
        raise ValueError(f"test must be 'auto', 'mcnemar' or 'bootstrap', got {test!r}")
    table = result.table.copy()
    y, preds = result.labels, result.predictions
    boot = significance.bootstrap_many(y, preds[0], preds, metric, n_boot=n_boot, ci=ci,
                                       seed=seed, block=block, return_diffs=True)
    table["ci_lo"], table["ci_hi"] = boot["lo"], boot["hi"]
    if test == "mcnemar":
        correct = preds == y[None]
        p = [significance.mcnemar(correct[0], c).p_value for c in correct]
    else:
        p = boot["p_value"]
    table["test"] = test
    table["p_value"] = np.asarray(p, dtype=float)
    table.loc[table["kind"] == "baseline", ["p_value", "ci_lo", "ci_hi"]] = np.nan
    table["p_holm"] = np.nan
    table["p_bh"] = np.nan
    for kind in families:
        rows = (table["kind"] == kind).to_numpy()
        if rows.any():
            table.loc[rows, "p_holm"] = significance.holm(table.loc[rows, "p_value"])
            table.loc[rows, "p_bh"] = significance.benjamini_hochberg(table.loc[rows, "p_value"])
    table["holm"] = table["p_holm"] < alpha
    table["bh"] = table["p_bh"] < alpha
    heads = (table["kind"] == "head").to_numpy()
    if heads.any():
        mean_diffs = boot["diffs"][heads].mean(0)
        lo, hi = np.quantile(mean_diffs, [(1 - ci) / 2, 1 - (1 - ci) / 2])
        row = {"kind": "mean over heads", "label": "mean over heads",
               "mode": table.loc[heads, "mode"].iloc[0], "n_heads": 1,
               "metric": table["metric"].iloc[0],
               "value": float(table.loc[heads, "value"].mean()),
               "delta": float(table.loc[heads, "delta"].mean()), "ci_lo": lo, "ci_hi": hi,
               "test": "bootstrap", "p_value": float(significance._bootstrap_p(mean_diffs)),
               "holm": False, "bh": False}
        table = pd.concat([table, pd.DataFrame([row])], ignore_index=True)
        table = table.astype({"layer": "Int64", "head": "Int64"})
    table.attrs = {"n_boot": n_boot, "ci": ci, "seed": seed, "alpha": alpha}
    return table


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """One row with the paper's Section 4.6 statements, from :func:`compare_to_baseline`'s
    table (or :attr:`Sweep.table`, then without intervals and tests): ``baseline``;
    ``mean_head_delta`` (disabling a random head, on average); ``share_helping`` /
    ``share_hurting`` / ``share_unchanged`` over single heads; ``n_helping_holm`` /
    ``n_helping_bh`` (gains that survive the correction); the best head (``best_head``,
    ``best_head_delta``, its interval and p-values), the best and worst layer."""
    heads = table[table["kind"] == "head"]
    layers = table[table["kind"] == "layer"]
    base = table.loc[table["kind"] == "baseline", "value"]
    row: dict = {"metric": table["metric"].iloc[0],
                 "baseline": float(base.iloc[0]) if len(base) else np.nan,
                 "n_heads": len(heads)}
    has_tests = "p_value" in table.columns

    def extra(prefix: str, r) -> dict:
        if not has_tests:
            return {}
        return {f"{prefix}_ci_lo": r["ci_lo"], f"{prefix}_ci_hi": r["ci_hi"],
                f"{prefix}_p": r["p_value"], f"{prefix}_p_holm": r["p_holm"],
                f"{prefix}_p_bh": r["p_bh"]}

    if len(heads):
        d = heads["delta"].to_numpy()
        row.update(mean_head_delta=float(d.mean()), share_helping=float(np.mean(d > 0)),
                   share_hurting=float(np.mean(d < 0)), share_unchanged=float(np.mean(d == 0)))
        if has_tests:
            mean_row = table[table["kind"] == "mean over heads"]
            if len(mean_row):
                row.update(mean_head_ci_lo=float(mean_row["ci_lo"].iloc[0]),
                           mean_head_ci_hi=float(mean_row["ci_hi"].iloc[0]))
            helping = heads["delta"] > 0
            row.update(n_helping_holm=int((helping & heads["holm"]).sum()),
                       n_helping_bh=int((helping & heads["bh"]).sum()),
                       n_hurting_holm=int((~helping & heads["holm"]).sum()))
        best = heads.loc[heads["delta"].idxmax()]
        row.update(best_head=best["label"], best_head_delta=float(best["delta"]),
                   **extra("best_head", best))
    if len(layers):
        best = layers.loc[layers["delta"].idxmax()]
        worst = layers.loc[layers["delta"].idxmin()]
        row.update(best_layer=best["label"], best_layer_delta=float(best["delta"]),
                   **extra("best_layer", best),
                   worst_layer=worst["label"], worst_layer_delta=float(worst["delta"]))
    return pd.DataFrame([row])


def head_grid(table: pd.DataFrame, column: str = "delta") -> np.ndarray:
    """``(layers, heads)`` array of ``column`` over the single-head rows (1-based ``layer``
    / ``head`` in the table, row ``layer - 1`` of the grid), for
    ``plotting.grid.draw_head_grid``."""
    heads = table[table["kind"] == "head"]
    if heads.empty:
        raise ValueError("the table has no single-head rows (kind == 'head')")
    layer, head = heads["layer"].to_numpy(int) - 1, heads["head"].to_numpy(int) - 1
    if layer.min() < 0 or head.min() < 0:
        raise ValueError("layer/head must be 1-based (a table of sweep_table or "
                         "compare_to_baseline); got a 0")
    grid = np.full((int(layer.max()) + 1, int(head.max()) + 1), np.nan)
    grid[layer, head] = heads[column].to_numpy(float)
    return grid


def _overlap_p(k: int, a: int, b: int, n: int) -> float:
    """P(two random sets of ``a`` and ``b`` of ``n`` items share at least ``k``)."""
    from scipy.stats import hypergeom

    return float(hypergeom.sf(k - 1, n, a, b)) if n else float("nan")


def seed_agreement(tables: Mapping[object, pd.DataFrame],
                   significant: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Do the same heads help across fine-tuning seeds?

    tables: seed -> a table of :func:`sweep` / :func:`compare_to_baseline` (same model
    shape). significant: None, or ``"holm"`` / ``"bh"`` to count only gains that survive.
    Returns ``(per_head, pairs)``: per head, its delta under each seed (``delta_<seed>``),
    ``n_helping`` (seeds where it helps) and ``helps_in_all``; per pair of seeds, the Spearman
    correlation of the head deltas and the Jaccard overlap of the helping sets (NaN when both
    are empty).
    """
    seeds = list(tables)
    if len(seeds) < 2:
        raise ValueError("seed_agreement needs tables from at least two seeds")
    per_head = None
    helping = {}
    for s in seeds:
        heads = tables[s][tables[s]["kind"] == "head"].set_index("label")
        helps = heads["delta"] > 0
        if significant is not None:
            helps &= heads[significant].astype(bool)
        helping[s] = set(heads.index[helps])
        col = heads[["layer", "head", "delta"]].rename(columns={"delta": f"delta_{s}"})
        per_head = col if per_head is None else per_head.join(col[[f"delta_{s}"]],
                                                                how="outer")
    per_head["n_helping"] = [sum(label in helping[s] for s in seeds) for label in per_head.index]
    per_head["helps_in_all"] = per_head["n_helping"] == len(seeds)
    pairs = []
    for i, a in enumerate(seeds):
        for b in seeds[i + 1:]:
            union = helping[a] | helping[b]
            pairs.append({"seed_a": a, "seed_b": b,
                          "spearman": float(significance.spearman(
                              per_head[f"delta_{a}"].to_numpy(float),
                              per_head[f"delta_{b}"].to_numpy(float))),
                          "n_helping_a": len(helping[a]), "n_helping_b": len(helping[b]),
                          "n_both": len(helping[a] & helping[b]),
                          "n_both_chance": len(helping[a]) * len(helping[b]) / len(per_head),
                          "p_overlap": _overlap_p(len(helping[a] & helping[b]),
                                                  len(helping[a]), len(helping[b]),
                                                  len(per_head)),
                          "jaccard": (len(helping[a] & helping[b]) / len(union)
                                      if union else np.nan)})
    return per_head.reset_index(), pd.DataFrame(pairs)


# --- head importance (Michel et al. 2019) ---------------------------------------------------


def _example_losses(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """(b,) loss of each example: cross-entropy, or squared error for one output."""
    if logits.shape[-1] == 1:
        return (logits[:, 0] - labels.to(logits.dtype)) ** 2
    return nn.functional.cross_entropy(logits, labels.long(), reduction="none")


def head_importance(model, inputs, labels, *, max_tokens: int = 2048, max_batch: int = 32,
                    pad_id: int | None = None, return_signed: bool = False):
    """Michel et al. (2019) head importance ``I_h = sum over examples x of |dL(x)/d xi_h|``:
    ``xi`` a gate of ones multiplying every head's output (``intervene(gate=...)``), ``L`` the
    example's loss on its gold label (cross-entropy; squared error for one output).

    The per-example derivative comes from one batched backward pass: with the gate at 1,
    ``dL(x)/d xi_h = sum_ij dL/dA_h[x, i, j] * A_h[x, i, j]`` over the head's recorded
    probabilities ``A``. The model's parameters get no gradient (``torch.autograd.grad``).
    Returns ``(layers, heads)`` float64; with ``return_signed`` also ``sum_x dL(x)/d xi_h``
    (``= d (sum of losses) / d xi``, the plain gate gradient).

    Computed and evaluated on the same dev set the ranking is optimistic; pass held-out or
    training examples when the pruning curve must be an honest estimate.
    """
    model = unwrap_model(model)
    num_layers = int(model.config.num_hidden_layers)
    num_heads = int(model.config.num_attention_heads)
    labels = np.asarray(labels)
    batches, n = _prepare_batches(model, inputs, max_tokens, max_batch, _pad_id(model, pad_id))
    if n != len(labels):
        raise ValueError(f"{n} inputs but {len(labels)} labels")
    device = _device(model)
    absolute = torch.zeros(num_layers, num_heads, dtype=torch.float64)
    signed = torch.zeros(num_layers, num_heads, dtype=torch.float64)
    param_dtype = next(model.parameters()).dtype
    with _eval_mode(model), torch.enable_grad():
        for idx, batch in batches:
            gate = torch.ones(num_layers, num_heads, dtype=param_dtype, device=device,
                              requires_grad=True)
            with intervene(model, gate=gate, record=True) as iv:
                logits = model(**batch).logits
                y = torch.as_tensor(labels[idx], device=device)
                loss = _example_losses(logits, y).sum()
                grads = torch.autograd.grad(loss, [gate, *iv.attentions])
            # (layers, b, heads): dL(x)/d xi_h = sum_ij dL/dA[x, h, i, j] * A[x, h, i, j]
            per_example = torch.stack([
                (grad * probs.detach()).sum((-1, -2))
                for probs, grad in zip(iv.attentions, grads[1:], strict=True)]).double().cpu()
            _check_split(per_example.sum(1), grads[0].double().cpu())
            absolute += per_example.abs().sum(1)
            signed += per_example.sum(1)
    if return_signed:
        return absolute.numpy(), signed.numpy()
    return absolute.numpy()


def _check_split(summed: torch.Tensor, gate_grad: torch.Tensor) -> None:
    """The per-example derivatives must add up to the gate's own gradient (they would not if
    the recorded maps were taken before the gate, or under dropout)."""
    scale = float(gate_grad.abs().max()) or 1.0
    if not torch.allclose(summed, gate_grad, rtol=1e-3, atol=1e-4 * scale):
        raise RuntimeError("per-example head importances do not add up to the gate gradient "
                           f"(largest gap {float((summed - gate_grad).abs().max()):.3g}); "
                           "is the model in eval mode with eager attention?")


def normalize_importance(importance: np.ndarray) -> np.ndarray:
    """Michel et al.'s normalisation: divide each layer's scores by their L2 norm, then
    min-max scale over the whole model to [0, 1] (as transformers' bertology example).
    importance: (layers, heads)."""
    imp = np.asarray(importance, dtype=float)
    norm = np.sqrt((imp ** 2).sum(-1, keepdims=True))
    imp = imp / (norm + 1e-20)
    span = imp.max() - imp.min()
    return (imp - imp.min()) / span if span > 0 else np.zeros_like(imp)


def importance_order(importance: np.ndarray) -> list[tuple[int, int]]:
    """Heads from least to most important (ties in layer-major order)."""
    imp = np.asarray(importance, dtype=float)
    flat = np.argsort(imp.reshape(-1), kind="stable")
    return [(int(k // imp.shape[1]), int(k % imp.shape[1])) for k in flat]


def importance_table(importance: np.ndarray, normalized: np.ndarray | None = None
                     ) -> pd.DataFrame:
    """Tidy table: ``layer, head, label, importance, normalized, rank`` (``layer``/``head``
    1-based, as ``label``; rank 1 = least important, the first pruned)."""
    imp = np.asarray(importance, dtype=float)
    norm = normalize_importance(imp) if normalized is None else np.asarray(normalized)
    order = importance_order(norm)
    rank = {lh: r + 1 for r, lh in enumerate(order)}
    rows = [{"layer": la + 1, "head": h + 1, "label": head_label(la, h), "importance": imp[la, h],
             "normalized": norm[la, h], "rank": rank[(la, h)]}
            for la in range(imp.shape[0]) for h in range(imp.shape[1])]
    return pd.DataFrame(rows)


# --- pruning curves -------------------------------------------------------------------------


def pruning_steps(n_heads: int, step: float = 0.1) -> list[int]:
    """How many heads are removed at each point of the curve: ``round(k * step * n_heads)``
    for k = 0 .. 1/step (0, 10%, ..., 100% of the heads)."""
    k = int(round(1 / step))
    if not np.isclose(k * step, 1.0):
        raise ValueError(f"step must divide 1 (e.g. 0.1, 0.05), got {step}")
    return sorted({int(round(i * step * n_heads)) for i in range(k + 1)})


def pruning_curves(model, inputs, labels, metric: Metric, importance: np.ndarray | None, *,
                   mode: str = "zero", step: float = 0.1, n_random: int = 5, seed: int = 0,
                   metric_name: str | None = None, fast: bool = True,
                   max_tokens: int = 4096, max_batch: int = 64) -> pd.DataFrame:
    """The metric as heads are removed cumulatively (``mode``, default ``"zero"``: Michel's
    masking), in steps of ``step`` of all heads: from least to most important by
    ``importance`` (order ``"importance"``; skipped when None) and in ``n_random`` random
    orders (order ``"random"``, ``repeat`` 0.., permutations from ``seed``), the reference.

    Returns a tidy table: ``order, repeat, n_removed, fraction, metric, value, delta`` (delta
    against the unchanged model) and ``removed`` (labels of the heads removed at that point).
    """
    model = unwrap_model(model)
    num_layers = int(model.config.num_hidden_layers)
    num_heads = int(model.config.num_attention_heads)
    all_heads = [(la, h) for la in range(num_layers) for h in range(num_heads)]
    orders: list[tuple[str, int, list[tuple[int, int]]]] = []
    if importance is not None:
        imp = np.asarray(importance)
        if imp.shape != (num_layers, num_heads):
            raise ValueError(f"importance must be (layers, heads) = ({num_layers}, "
                             f"{num_heads}), got {imp.shape}")
        orders.append(("importance", 0, importance_order(imp)))
    rng = np.random.default_rng(seed)
    for r in range(n_random):
        perm = rng.permutation(len(all_heads))
        orders.append(("random", r, [all_heads[i] for i in perm]))
    steps = pruning_steps(len(all_heads), step)
    changes, meta = [baseline_change()], []
    for order_name, repeat, order in orders:
        for k in steps:
            heads = tuple(order[:k])
            meta.append((order_name, repeat, k, heads))
            if k:
                changes.append(Change(heads, mode, "pruned", None, None,
                                      f"{order_name} {repeat}: {k} removed"))
    # identical head sets (every order at 0% and 100%) are evaluated once
    unique: dict[tuple, int] = {(): 0}
    for i, change in enumerate(changes[1:], start=1):
        unique.setdefault(change.heads, i)
    kept = sorted(set(unique.values()))
    logits = evaluate_changes(model, inputs, [changes[i] for i in kept], fast=fast,
                              max_tokens=max_tokens, max_batch=max_batch)
    labels = np.asarray(labels)
    values = {changes[i].heads: float(metric(labels, p))
              for i, p in zip(kept, predictions_from_logits(logits), strict=True)}
    base = values[()]
    name = _metric_name(metric, metric_name)
    rows = []
    for order_name, repeat, k, heads in meta:
        value = values[tuple(sorted(heads))]
        rows.append({"order": order_name, "repeat": repeat, "n_removed": k,
                     "fraction": k / len(all_heads), "mode": mode, "metric": name,
                     "value": value, "delta": value - base,
                     "removed": " ".join(head_label(la, h) for la, h in heads)})
    return pd.DataFrame(rows)


# --- the recap of notebook 07 -----------------------------------------------------------------


def recap(summary: pd.DataFrame, agreement: pd.DataFrame, framenet: pd.DataFrame,
          pruning: pd.DataFrame, mode: str = "uniform") -> list[str]:
    """Notebook 07's recap sentences, made from its saved tables (``07_summary``,
    ``07_seed_agreement``, ``07_framenet_heads_disabling``, ``07_pruning_summary``, in points
    as saved) for the disabling ``mode``: so a test can check that the rendered recap says
    what the committed tables hold. Descriptive: the verdicts are the claims ledger's."""
    s0 = summary[summary["mode"] == mode].reset_index(drop=True)
    name = [f"{t} seed {s}" for t, s in zip(s0["task"], s0["seed"], strict=True)]
    n_models, n_heads = len(s0), int(s0["n_heads"].max())
    best = s0["best_head_delta"]
    lo_i, hi_i = int(best.idxmin()), int(best.idxmax())
    hi_l, lo_l = int(s0["best_layer_delta"].idxmax()), int(s0["worst_layer_delta"].idxmin())
    helps = [f"{n} {d:+.2f} [{a:+.2f}, {b:+.2f}]" for n, d, a, b in
             zip(name, s0["mean_head_delta"], s0["mean_head_ci_lo"], s0["mean_head_ci_hi"],
                 strict=True)]
    pairs = agreement[agreement["mode"] == mode] if len(agreement) else agreement
    fn_u = framenet[framenet["mode"] == mode]
    fn_drops = fn_u[fn_u["holm"].astype(bool) & (fn_u["delta"] < 0)]
    watch = list(dict.fromkeys(fn_u["head"]))
    above = pruning.groupby(["task", "seed"], sort=False)["above_all_random"].mean()
    lines = [
        f"Disabling one head raises the dev metric for at least one head in "
        f"{int((best > 0).sum())} of {n_models} models; the best single-head gain ranges from "
        f"{best[lo_i]:+.2f} ({name[lo_i]}) to {best[hi_i]:+.2f} points ({name[hi_i]}) (the "
        f"paper: +0.1 to +1.2). Gains that survive Holm's correction over {n_heads} heads: "
        f"{int(s0['n_helping_holm'].sum())} in all ({int(s0['n_helping_bh'].sum())} with BH).",
        "Disabling a random head, mean change over heads with its 95% interval (points): "
        + "; ".join(helps) + ".",
        f"Disabling a whole layer raises the metric (best layer's change > 0) in "
        f"{int((s0['best_layer_delta'] > 0).sum())} of {n_models} models; largest: "
        f"{s0['best_layer_delta'][hi_l]:+.2f} points ({name[hi_l]}, {s0['best_layer'][hi_l]});"
        f" largest drop: {s0['worst_layer_delta'][lo_l]:+.2f} ({name[lo_l]}, "
        f"{s0['worst_layer'][lo_l]}).",
        ("Across fine-tuning seeds, the head deltas correlate with Spearman "
         + ", ".join(f"{r.task} s{r.seed_a}/s{r.seed_b} "
                     + (f"{r.spearman:+.2f}" if pd.notna(r.spearman) else
                        "undefined (one seed's deltas are constant)")
                     for r in pairs.itertuples())
         + "; heads whose removal helps under both seeds, beside the overlap two random sets "
           "of the same sizes have on average: "
         + ", ".join(f"{r.task} s{r.seed_a}/s{r.seed_b} {r.n_both} of {r.n_helping_a} / "
                     f"{r.n_helping_b} (chance {r.n_both_chance:.1f})"
                     for r in pairs.itertuples()) + ".")
        if len(pairs) else "No task was trained with several seeds.",
        f"FrameNet heads {', '.join(watch)}: largest drop when disabled "
        f"{fn_u['delta'].min():+.2f} points ({fn_u.loc[fn_u['delta'].idxmin(), 'task']}); "
        f"drops that survive Holm: {len(fn_drops)}; best importance rank "
        f"{int(fn_u['importance_rank'].min())} of {n_heads}.",
        "Pruning in importance order beats every random order at "
        + ", ".join(f"{t} seed {s} {v:.0%}" for (t, s), v in above.items())
        + " of the intermediate steps.",
    ]
    return lines
