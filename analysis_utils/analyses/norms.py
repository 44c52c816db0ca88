"""Norm-based analysis of attention (Kobayashi et al. 2020, "Attention is not only a weight").

A head's output at token i is ``sum_j a_ij f(x_j)`` with ``f(x) = (x W_V + b_V) W_O``, the value
projection and the head's slice of the output projection (its bias, shared by every head and
token, left out as in the paper). A weight ``a_ij`` on a token whose transformed vector
``f(x_j)`` is tiny moves the output very little: Kobayashi et al. found that BERT's large
weights on ``[SEP]`` and punctuation go with small ``||f(x_j)||``, so that ``||a_ij f(x_j)|| =
a_ij ||f(x_j)||`` gives those tokens a far smaller share than the weights do. This is the
direct measurement of what Clark et al. argue with gradients in their Figure 3 (attention to
``[SEP]`` as a "no-op").

Pure functions over arrays (:func:`weighted_norms`, :func:`class_shares`) carry the maths;
:func:`transformed_norms` reads the projections of one layer of a BERT-family or MPNet encoder;
:func:`norm_statistics` streams a corpus through the model, one length-sorted batch at a
time, and keeps only per-head sums.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from ..engine.attention import as_inputs, collate, length_batches, uses_token_types
from ..engine.interventions import layer_list, unwrap_model
from ..engine.memory import release
from .surface import _class_masks

TARGETS = ("cls", "sep", "punct", "other")
# (value projection, output projection) inside one encoder layer, per architecture family
_PROJECTIONS = (
    ("attention.self.value", "attention.output.dense"),  # BERT, RoBERTa, ELECTRA, ...
    ("attention.attn.v", "attention.attn.o"),  # MPNet
    ("attention.v_lin", "attention.out_lin"),  # DistilBERT
    ("attention.value", "attention.dense"),  # ALBERT (one shared layer, see layer_projections)
)


def weighted_norms(attn: np.ndarray, fnorm: np.ndarray) -> np.ndarray:
    """``||a_ij f(x_j)||`` from attention ``attn`` (..., n, n) and ``fnorm`` = ``||f(x_j)||``
    (..., n): since ``a_ij >= 0`` it is ``a_ij * ||f(x_j)||``."""
    attn, fnorm = np.asarray(attn, dtype=np.float64), np.asarray(fnorm, dtype=np.float64)
    if attn.shape[:-2] != fnorm.shape[:-1] or attn.shape[-1] != fnorm.shape[-1]:
        raise ValueError(f"attention {attn.shape} and norms {fnorm.shape} do not match: "
                         "expected (..., n, n) and (..., n)")
    return attn * fnorm[..., None, :]


def row_normalise(x: np.ndarray) -> np.ndarray:
    """Each row divided by its sum (a norm-based map on the scale of attention weights)."""
    x = np.asarray(x, dtype=np.float64)
    s = x.sum(-1, keepdims=True)
    return np.divide(x, s, out=np.zeros_like(x), where=s > 0)


def class_shares(attn: np.ndarray, fnorm: np.ndarray, masks: dict[str, np.ndarray]) -> dict:
    """Per head, the share of attention weight and of weighted-vector norm that goes to each
    token class, averaged over the attending tokens (every real token attends).

    ``attn``: (..., n, n), ``fnorm``: (..., n), ``masks``: class -> boolean (n,). Returns
    ``{class: (weight_share, norm_share, norm_ratio)}`` of arrays (...), where ``norm_ratio``
    is the class's mean ``||f(x_j)||`` over the mean of all tokens (NaN when the class is
    absent)."""
    attn = np.asarray(attn, dtype=np.float64)
    fnorm = np.asarray(fnorm, dtype=np.float64)
    shares = row_normalise(weighted_norms(attn, fnorm))
    mean_all = fnorm.mean(-1)
    out = {}
    for name, m in masks.items():
        m = np.asarray(m, dtype=bool)
        w = attn[..., m].sum(-1).mean(-1)
        s = shares[..., m].sum(-1).mean(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = (fnorm[..., m].mean(-1) / mean_all if m.any()
                 else np.full(mean_all.shape, np.nan))
        out[name] = (w, s, r)
    return out


def projections(block: nn.Module) -> tuple[nn.Linear, nn.Linear]:
    """The value and output projections (``nn.Linear``) of one encoder layer."""
    for v_name, o_name in _PROJECTIONS:
        try:
            v, o = block.get_submodule(v_name), block.get_submodule(o_name)
        except AttributeError:
            continue
        if isinstance(v, nn.Linear) and isinstance(o, nn.Linear):
            return v, o
    raise ValueError(
        f"{type(block).__name__}: no value/output projection found (looked for "
        + ", ".join(f"{v} + {o}" for v, o in _PROJECTIONS)
        + "); attention norms support BERT, RoBERTa, ELECTRA, DistilBERT, ALBERT and MPNet "
        "encoders")


def transformed_norms(value: nn.Linear, output: nn.Linear, hidden: torch.Tensor,
                      num_heads: int) -> torch.Tensor:
    """``||f_h(x_j)||`` for every head h and token j: ``hidden`` (B, n, d), the input of the
    layer; returns (B, H, n). ``f_h(x) = (x W_V + b_V)[h's slice] W_O[h's slice]``."""
    v = value(hidden)  # (B, n, H*dh)
    b, n, hd = v.shape
    dh = hd // num_heads
    v = v.view(b, n, num_heads, dh)
    w_o = output.weight.view(output.weight.shape[0], num_heads, dh)  # (d, H, dh): y = x W^T
    f = torch.einsum("bnhk,dhk->bhnd", v, w_o)
    return torch.linalg.vector_norm(f, dim=-1)


def layer_projections(loaded) -> list[tuple[nn.Linear, nn.Linear]]:
    """(value, output) projections of every encoder layer of ``loaded``, in order."""
    model = unwrap_model(loaded)
    n = int(model.config.num_hidden_layers)
    layers = layer_list(model, n)
    if layers is not None:
        return [projections(block) for block in layers]
    # no layer list: one layer module reused by every layer (ALBERT), so one set of
    # projections, found as the one module holding them, serves all n layers
    found = []
    for block in model.modules():
        try:
            found.append(projections(block))
        except ValueError:
            continue
    if len(found) != 1:
        raise ValueError(f"{type(model).__name__}: no list of {n} encoder layers and "
                         f"{len(found)} modules with value/output projections (one shared "
                         "layer expected); attention norms cannot number its layers")
    return found * n


def _forward(loaded, batch_inputs, projs):
    """Attention probabilities and ``||f(x_j)||`` per layer for one batch: (B, H, n, n) and
    (B, H, n) each; ``projs``: :func:`layer_projections`."""
    model = unwrap_model(loaded)
    enc = collate(batch_inputs, loaded.special_ids["pad"] or 0, loaded.device,
                  uses_token_types(model))
    out = model(**enc, output_attentions=True, output_hidden_states=True)
    if not out.attentions or out.attentions[0] is None:
        raise ValueError(f"{type(model).__name__} returned no attention probabilities; load it "
                         "with attn_implementation='eager' (analysis_utils.load_model does)")
    fn = [transformed_norms(v, o, out.hidden_states[li], out.attentions[li].shape[1])
          for li, (v, o) in enumerate(projs)]
    return out.attentions, fn


def norm_statistics(loaded, items: Sequence, cls_id: int | None, sep_id: int | None,
                    punct_ids: Sequence[int] | None, *, max_tokens: int = 1024,
                    max_batch: int = 32) -> pd.DataFrame:
    """Weight share vs norm share per head and token class over ``items`` (model inputs).

    Each statistic is averaged over the attending tokens of one input, then over inputs (as
    ``surface`` does with ``weighting="example"``). Columns: ``layer, head`` (1-based, as the
    surface tables), ``target`` (``cls`` = the first token, ``sep``, ``punct``, ``other``),
    ``weight_share``, ``norm_share``, ``norm_ratio`` (mean over the inputs where the class
    occurs).

    max_tokens: padded tokens per batch. Each batch holds every layer's attention maps and,
    per layer, every head's transformed vectors at once, so its size sets the peak memory:
    4,096 (32 segments of 128 pieces) took notebook 01's kernel 1.35 GB above where it started
    on all-MiniLM-L6-v2; 1,024 keeps notebook 01 within Binder's 2 GB. The statistics are per
    input, so the batch size changes them only by float rounding."""
    inputs = as_inputs(items)
    if not inputs:
        raise ValueError("no inputs")
    lengths = np.array([len(x) for x in inputs])
    sums: dict[str, list[np.ndarray]] = {}
    ratio_n = {}
    n_ex = 0
    model = unwrap_model(loaded)
    projs = layer_projections(loaded)
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            for batch in length_batches(lengths, np.arange(len(inputs)), max_tokens, max_batch):
                attns, fns = _forward(loaded, [inputs[i] for i in batch], projs)
                for b, i in enumerate(batch):
                    n = int(lengths[i])
                    a = torch.stack([x[b, :, :n, :n] for x in attns]).double().cpu().numpy()
                    f = torch.stack([x[b, :, :n] for x in fns]).double().cpu().numpy()
                    masks = _class_masks(np.asarray(inputs[i].input_ids), cls_id, sep_id,
                                         punct_ids)
                    for name, (w, s, r) in class_shares(a, f, masks).items():
                        acc = sums.setdefault(name, [np.zeros_like(w), np.zeros_like(w),
                                                     np.zeros_like(w)])
                        acc[0] += w
                        acc[1] += s
                        if masks[name].any():
                            acc[2] += r
                            ratio_n[name] = ratio_n.get(name, 0) + 1
                    n_ex += 1
    finally:
        model.train(was_training)
        release()  # the batches' freed attention and norm buffers (engine.memory)
    num_layers, num_heads = next(iter(sums.values()))[0].shape
    layer, head = np.meshgrid(np.arange(1, num_layers + 1), np.arange(1, num_heads + 1),
                              indexing="ij")
    frames = []
    for name in TARGETS:
        w, s, r = sums[name]
        k = ratio_n.get(name, 0)
        frames.append(pd.DataFrame({
            "layer": layer.ravel(), "head": head.ravel(), "target": name,
            "weight_share": (w / n_ex).ravel(), "norm_share": (s / n_ex).ravel(),
            "norm_ratio": (r / k).ravel() if k else np.full(w.size, np.nan)}))
    df = pd.concat(frames, ignore_index=True)
    df.attrs["n_inputs"] = n_ex
    return df


def layer_summary(df: pd.DataFrame) -> pd.DataFrame:
    """Per layer and target, the mean over heads of ``weight_share``, ``norm_share`` and
    ``norm_ratio``, and ``norm_share / weight_share`` (below 1: the norms shrink the share)."""
    out = (df.groupby(["layer", "target"], sort=False)[["weight_share", "norm_share",
                                                         "norm_ratio"]]
           .mean().reset_index())
    with np.errstate(invalid="ignore", divide="ignore"):
        out["norm_over_weight"] = out["norm_share"] / out["weight_share"]
    order = {t: k for k, t in enumerate(TARGETS)}
    return out.sort_values(["layer", "target"], key=lambda c: c.map(order) if c.name == "target"
                           else c).reset_index(drop=True)


def norm_maps(loaded, item, heads: Sequence[tuple[int, int]]) -> dict:
    """For one input, ``{(layer, head): (attention, norm_based)}`` (0-based heads), both
    (n, n); the norm-based map is ``a_ij ||f(x_j)||`` divided by its row sum, on the scale of
    the attention weights."""
    (x,) = as_inputs([item])
    model = unwrap_model(loaded)
    was_training = model.training
    model.eval()
    try:
        with torch.inference_mode():
            attns, fns = _forward(loaded, [x], layer_projections(loaded))
    finally:
        model.train(was_training)
    out = {}
    for layer, head in heads:
        a = attns[layer][0, head].double().cpu().numpy()
        f = fns[layer][0, head].double().cpu().numpy()
        out[(layer, head)] = (a, row_normalise(weighted_norms(a, f)))
    return out
