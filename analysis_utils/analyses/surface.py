"""Surface-level attention statistics (Clark et al. 2019, Section 3; Figures 2 and 4),
streamed over a corpus so memory-mapped maps never have to fit in memory. Results have one row
per head, ``layer`` and ``head`` 1-based (head ``layer-head`` reads as in the paper), and
``df.attrs["uniform"]``: what a head attending uniformly over the real tokens scores. Inputs:
:func:`surface_statistics`; how statistics are averaged: notebook 01.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from ..heads import head_label
from ..papers import BERT_BASE_LAYERS, CLARK_SECTION3

WEIGHTINGS = ("example", "token")


# ---------------------------------------------------------------------------------------
# example handling and accumulation


def _unpack(example, need_ids: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """Return ``(attn as float64 (L, H, n, n), token_ids (n,) or None)``."""
    ids = None
    if isinstance(example, dict):
        attn, ids = example["attn"], example.get("token_ids")
    elif hasattr(example, "attn"):
        attn, ids = example.attn, getattr(example, "token_ids", None)
    elif isinstance(example, (tuple, list)) and len(example) == 2:
        attn, ids = example
    else:
        attn = example
    attn = np.asarray(attn, dtype=np.float64)
    if attn.ndim != 4 or attn.shape[-1] != attn.shape[-2]:
        raise ValueError(f"attention must be (layers, heads, n, n), got shape {attn.shape}")
    if ids is not None:
        ids = np.asarray(ids).astype(np.int64, copy=False)
        if ids.shape != (attn.shape[-1],):
            raise ValueError(f"token_ids shape {ids.shape} does not match attention length "
                             f"{attn.shape[-1]}")
    elif need_ids:
        raise ValueError("this statistic needs token ids: pass (attn, token_ids) pairs")
    return attn, ids


class _Mean:
    """Running mean of a per-head statistic under either weighting.

    ``add(total, count)``: ``total`` is the (L, H) sum of the statistic over the ``count``
    eligible attending tokens of one example (``count`` may be 0: the example is skipped).
    """

    def __init__(self, weighting: str):
        if weighting not in WEIGHTINGS:
            raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
        self.weighting = weighting
        self.total = None
        self.denom = 0.0

    def add(self, total, count: int) -> None:
        if count <= 0:
            return
        total = np.asarray(total, dtype=np.float64)
        if self.weighting == "example":
            total, count = total / count, 1
        self.total = total if self.total is None else self.total + total
        self.denom += count

    def value(self, shape=None):
        if self.total is None:
            return np.full(shape, np.nan) if shape is not None else np.nan
        return self.total / self.denom


def _frame(shape: tuple[int, int], columns: dict[str, np.ndarray], uniform: dict) -> pd.DataFrame:
    layers, heads = shape
    data = {
        "layer": np.repeat(np.arange(1, layers + 1), heads),
        "head": np.tile(np.arange(1, heads + 1), layers),
    }
    for name, values in columns.items():
        data[name] = np.asarray(values, dtype=np.float64).reshape(-1)
    df = pd.DataFrame(data)
    df.attrs["uniform"] = {k: float(v) for k, v in uniform.items()}
    return df


def _class_masks(ids: np.ndarray, cls_id: int | None, sep_id: int | None,
                 punct_ids: Sequence[int] | None) -> dict[str, np.ndarray]:
    """Boolean (n,) masks of the token classes; ``other`` is every remaining token."""
    cls = np.isin(ids, [cls_id]) if cls_id is not None else np.zeros(ids.shape, bool)
    sep = np.isin(ids, [sep_id]) if sep_id is not None else np.zeros(ids.shape, bool)
    punct = np.isin(ids, list(punct_ids)) if punct_ids else np.zeros(ids.shape, bool)
    punct &= ~(cls | sep)
    other = ~(cls | sep | punct)
    return {"cls": cls, "sep": sep, "punct": punct, "other": other}


def token_roles(token_ids, cls_id: int | None, sep_id: int | None,
                punct_ids: Sequence[int] | None = None) -> np.ndarray:
    """Role of each token as a string array: ``"cls"``, ``"sep"``, ``"punct"`` or ``"other"``."""
    masks = _class_masks(np.asarray(token_ids), cls_id, sep_id, punct_ids)
    roles = np.full(len(token_ids), "other", dtype=object)
    for name in ("punct", "sep", "cls"):
        roles[masks[name]] = name
    return roles


# ---------------------------------------------------------------------------------------
# streaming accumulators (one per statistic; surface_statistics runs several in one pass)


class _Stat:
    """Streaming accumulator of per-head statistics: ``add(attn, ids)`` per example, then
    ``frame()``. Subclasses fill ``self.acc`` / ``self.uni`` (name -> :class:`_Mean`)."""

    names: tuple[str, ...] = ()
    needs_ids = False

    def __init__(self, weighting: str = "example"):
        self.acc = {k: _Mean(weighting) for k in self.names}
        self.uni = {k: _Mean(weighting) for k in self.names}
        self.shape = None

    def add(self, attn: np.ndarray, ids: np.ndarray | None) -> None:
        self.shape = attn.shape[:2]
        self._add(attn, ids, attn.shape[-1])

    def _add(self, attn, ids, n):  # pragma: no cover - abstract
        raise NotImplementedError

    def frame(self) -> pd.DataFrame:
        if self.shape is None:
            raise ValueError("no examples")
        return _frame(self.shape, {k: a.value(self.shape) for k, a in self.acc.items()},
                      {k: u.value() for k, u in self.uni.items()})


class _RelativePosition(_Stat):
    names = ("current", "previous", "next")

    def _add(self, attn, ids, n):
        self.acc["current"].add(np.diagonal(attn, 0, -2, -1).sum(-1), n)
        self.uni["current"].add(1.0, n)
        if n > 1:
            self.acc["previous"].add(np.diagonal(attn, -1, -2, -1).sum(-1), n - 1)
            self.acc["next"].add(np.diagonal(attn, 1, -2, -1).sum(-1), n - 1)
            self.uni["previous"].add((n - 1) / n, n - 1)
            self.uni["next"].add((n - 1) / n, n - 1)


class _TokenClass(_Stat):
    names = ("cls", "sep", "punct", "other")
    needs_ids = True

    def __init__(self, cls_id, sep_id, punct_ids, weighting="example"):
        super().__init__(weighting)
        self.ids = (cls_id, sep_id, punct_ids)

    def _add(self, attn, ids, n):
        masks = _class_masks(ids, *self.ids)
        col_sums = attn.sum(-2)  # (L, H, n): total attention received by each token
        for k in self.names:
            self.acc[k].add(col_sums[..., masks[k]].sum(-1), n)
            self.uni[k].add(float(masks[k].sum()), n)  # n rows, each count/n


class _SepToSep(_Stat):
    names = ("sep_to_sep", "rest_to_sep")
    needs_ids = True

    def __init__(self, sep_id, weighting="example"):
        super().__init__(weighting)
        self.sep_id = sep_id

    def _add(self, attn, ids, n):
        sep = ids == self.sep_id
        n_sep = int(sep.sum())
        if n_sep == 0:
            return
        to_sep = attn[..., sep].sum(-1)  # (L, H, n): weight of each row on [SEP] tokens
        self.acc["sep_to_sep"].add(to_sep[..., sep].sum(-1), n_sep)
        self.acc["rest_to_sep"].add(to_sep[..., ~sep].sum(-1), n - n_sep)
        self.uni["sep_to_sep"].add(n_sep * n_sep / n, n_sep)
        self.uni["rest_to_sep"].add((n - n_sep) * n_sep / n, n - n_sep)

    def frame(self):
        if self.acc["sep_to_sep"].total is None:
            raise ValueError("no examples with [SEP]")
        return super().frame()


class _Entropy(_Stat):
    names = ("entropy", "entropy_cls", "max_weight", "max_weight_cls")

    def __init__(self, cls_id=None, weighting="example"):
        super().__init__(weighting)
        self.cls_id = cls_id
        self.needs_ids = cls_id is not None

    def _add(self, attn, ids, n):
        ent = _row_entropy(attn)  # (L, H, n)
        mx = attn.max(-1)
        self.acc["entropy"].add(ent.sum(-1), n)
        self.acc["max_weight"].add(mx.sum(-1), n)
        self.uni["entropy"].add(n * np.log(n), n)
        self.uni["max_weight"].add(1.0, n)
        rows = (ids == self.cls_id) if self.cls_id is not None else (np.arange(n) == 0)
        k = int(rows.sum())
        if k:
            self.acc["entropy_cls"].add(ent[..., rows].sum(-1), k)
            self.acc["max_weight_cls"].add(mx[..., rows].sum(-1), k)
            self.uni["entropy_cls"].add(k * np.log(n), k)
            self.uni["max_weight_cls"].add(k / n, k)


def _run(stats: dict[str, _Stat], examples: Iterable) -> dict[str, pd.DataFrame]:
    """One pass over ``examples`` feeding every accumulator."""
    need_ids = any(s.needs_ids for s in stats.values())
    for ex in examples:
        attn, ids = _unpack(ex, need_ids=need_ids)
        for s in stats.values():
            s.add(attn, ids)
    return {k: s.frame() for k, s in stats.items()}


# ---------------------------------------------------------------------------------------
# Section 3.1: relative position


def relative_position(examples: Iterable, weighting: str = "example") -> pd.DataFrame:
    """Average attention to the current, previous and next token, per head.

    Which attending tokens enter each average (all special tokens included):

    - ``current``: every token, weight ``A[i, i]``;
    - ``previous``: every token that has a previous token (positions 1..n-1, i.e. all but
      [CLS]), weight ``A[i, i-1]``;
    - ``next``: every token that has a next token (positions 0..n-2, all but the final
      [SEP]), weight ``A[i, i+1]``.

    The authors' notebook divided the previous/next sums by ``n`` (all tokens), which
    scales those two numbers by ``(n-1)/n`` (0.8% at n = 128); here the first/last token,
    which cannot attend to a previous/next token, is left out of the average.

    Returns columns ``layer, head, current, previous, next``; ``attrs["uniform"]`` holds
    the uniform-head values (``1/n`` each, averaged the same way).
    """
    return _run({"x": _RelativePosition(weighting)}, examples)["x"]


# ---------------------------------------------------------------------------------------
# Section 3.2: attention to special tokens and punctuation


def token_class_attention(examples: Iterable, cls_id: int | None, sep_id: int | None,
                          punct_ids: Sequence[int] | None,
                          weighting: str = "example") -> pd.DataFrame:
    """Average attention to [CLS], [SEP], punctuation and other tokens, per head (Figure 2 top).

    For each attending token (every row of the map, special tokens included, as in the
    authors' notebook) the weights it puts on all tokens of a class are summed; these sums
    are averaged over attending tokens. ``punct_ids`` are the ids of "." and "," (pass
    ``tokenizer.convert_tokens_to_ids([".", ","])``); the four columns ``cls``, ``sep``,
    ``punct``, ``other`` of each head sum to 1.

    ``attrs["uniform"]``: a uniform head puts ``count/n`` on a class with ``count`` tokens
    (``2/n`` on the two [SEP] of a ``[CLS] p1 [SEP] p2 [SEP]`` segment).
    """
    return _run({"x": _TokenClass(cls_id, sep_id, punct_ids, weighting)}, examples)["x"]


def sep_to_sep(examples: Iterable, sep_id: int, weighting: str = "example") -> pd.DataFrame:
    """Attention from [SEP] tokens to [SEP] tokens, per head (Figure 2 bottom).

    ``sep_to_sep``: averaged over attending tokens that are [SEP], the summed weight on all
    [SEP] tokens (the paper: "more than 90%" for some heads). ``rest_to_sep``: the same for
    attending tokens that are not [SEP]. Examples without [SEP] contribute nothing.
    """
    return _run({"x": _SepToSep(sep_id, weighting)}, examples)["x"]


# ---------------------------------------------------------------------------------------
# Section 3.3: entropy


def _row_entropy(p: np.ndarray) -> np.ndarray:
    """Entropy in nats along the last axis, with 0 log 0 = 0 (negative float noise clipped)."""
    p = np.clip(p, 0.0, None)
    with np.errstate(divide="ignore", invalid="ignore"):
        plogp = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return -plogp.sum(-1)


def uniform_entropy(lengths) -> np.ndarray:
    """Entropy (nats) of uniform attention over ``n`` tokens: ``log n``, per length."""
    return np.log(np.asarray(lengths, dtype=np.float64))


def entropy(examples: Iterable, cls_id: int | None = None,
            weighting: str = "example") -> pd.DataFrame:
    """Attention entropy per head (Figure 4) and entropy of attention from [CLS].

    Columns:

    - ``entropy``: mean over attending tokens (all rows) of the entropy, in nats, of the
      row's attention distribution;
    - ``entropy_cls``: the same over rows of [CLS] tokens only: positions whose id is
      ``cls_id``, or row 0 when ``cls_id`` is None (the paper's "last layer has entropy from
      [CLS] of 3.89 nats");
    - ``max_weight``: mean over rows of the largest weight in the row (the paper: broad
      heads "spend at most 10% of their attention mass on any single word");
    - ``max_weight_cls``: the same over [CLS] rows.

    Entropies are exact (``0 log 0 = 0``); the authors' notebook smoothed maps with
    ``0.9999 A + 0.0001/n`` first, which changes entropies by less than 0.01 nats.
    ``attrs["uniform"]``: ``log n`` for both entropies and ``1/n`` for the max weights,
    averaged the same way; :func:`uniform_entropy` gives ``log n`` per length.
    """
    return _run({"x": _Entropy(cls_id, weighting)}, examples)["x"]


def surface_statistics(examples: Iterable, cls_id: int | None, sep_id: int | None,
                       punct_ids: Sequence[int] | None,
                       weighting: str = "example") -> dict[str, pd.DataFrame]:
    """All Section 3 statistics in ONE pass over the corpus (each map is read once).

    Returns ``{"relative_position", "token_class", "sep_to_sep", "entropy"}`` -> the frames
    of :func:`relative_position`, :func:`token_class_attention`, :func:`sep_to_sep` and
    :func:`entropy` (with ``cls_id``); identical to calling them one by one.

    An *example* (here and in every function of this module) is a pair ``(attn, token_ids)``:
    ``attn`` a ``(layers, heads, n, n)`` float array whose rows sum to 1, cropped to the real
    length ``n``, ``token_ids`` the ``(n,)`` ids of the same segment (special tokens
    included); or a mapping with keys ``"attn"`` and ``"token_ids"``, or an object with those
    attributes. Functions that need no token ids (:func:`relative_position`,
    :func:`entropy` without ``cls_id``) also accept a bare ``attn`` array. Special tokens are
    identified by id, never by string: pass ``tokenizer.cls_token_id`` and
    ``tokenizer.sep_token_id`` (``<s>`` and ``</s>`` for RoBERTa-like models) and
    ``tokenizer.convert_tokens_to_ids([".", ","])`` for the punctuation classes.
    ``weighting``: ``"example"`` (default, the authors' notebook) or ``"token"``; see
    notebook 01. :func:`uniform_baselines` computes the ``attrs["uniform"]`` numbers from token
    ids alone.
    """
    stats: dict[str, _Stat] = {
        "relative_position": _RelativePosition(weighting),
        "token_class": _TokenClass(cls_id, sep_id, punct_ids, weighting),
        "entropy": _Entropy(cls_id, weighting),
    }
    if sep_id is not None:
        stats["sep_to_sep"] = _SepToSep(sep_id, weighting)
    return _run(stats, examples)


# ---------------------------------------------------------------------------------------
# baselines, summaries, selections


def uniform_baselines(token_ids_iter: Iterable, cls_id: int | None = None,
                      sep_id: int | None = None, punct_ids: Sequence[int] | None = None,
                      weighting: str = "example") -> dict[str, float]:
    """What a head attending uniformly over the ``n`` real tokens scores on each statistic.

    Computed from token ids alone (no attention maps), with the same averaging as the
    statistics, so ``uniform_baselines(ids)["sep"]`` equals
    ``token_class_attention(...).attrs["uniform"]["sep"]``. Keys: ``current``, ``previous``,
    ``next``, ``cls``, ``sep``, ``punct``, ``other``, ``sep_to_sep``, ``rest_to_sep``,
    ``entropy``, ``entropy_cls``, ``max_weight``, ``max_weight_cls``.
    """
    ids_list = [np.asarray(ids) for ids in token_ids_iter]
    if not ids_list:
        raise ValueError("no examples")
    has_sep = sep_id is not None and any((ids == sep_id).any() for ids in ids_list)
    maps = ((np.full((1, 1, len(ids), len(ids)), 1.0 / len(ids)), ids) for ids in ids_list)
    frames = surface_statistics(maps, cls_id, sep_id if has_sep else None, punct_ids,
                                weighting)
    out: dict[str, float] = {}
    for df in frames.values():
        out.update(df.attrs["uniform"])
    return out


def layer_means(df: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Per-layer mean over heads of each statistic (index: 1-based layer).

    Every head of a layer has the same attending tokens, so the mean over heads of e.g.
    the ``sep`` column is the share of all of the layer's attention that goes to [SEP].
    """
    if columns is None:
        columns = [c for c in df.columns if c not in ("layer", "head")]
    return df.groupby("layer")[list(columns)].mean()


def share_in_layers(df: pd.DataFrame, column: str, layers: Sequence[int]) -> float:
    """Mean of ``column`` over all heads of the given 1-based ``layers`` (e.g. the share of
    attention to [SEP] in layers 6-10)."""
    sel = df[df["layer"].isin(list(layers))]
    if sel.empty:
        raise ValueError(f"none of layers {list(layers)} in the frame")
    return float(sel[column].mean())


def heads_above(df: pd.DataFrame, column: str, threshold: float) -> list[str]:
    """Heads whose ``column`` is strictly above ``threshold``, as ``"layer-head"`` strings
    (1-based), in layer then head order."""
    sel = df[df[column] > threshold].sort_values(["layer", "head"])
    return [head_label(r.layer - 1, r.head - 1) for r in sel.itertuples()]  # frames: 1-based


def split_word_share(word_ids_list: Iterable[Sequence[int | None]]) -> float:
    """Share of words split into several word pieces, pooled over segments.

    ``word_ids_list`` holds one ``word_ids`` sequence per segment (as from a fast
    tokenizer's ``encoding.word_ids()``: ``None`` for special tokens). A word is a maximal
    run of consecutive pieces with the same word id, so two-segment inputs whose word ids
    restart at 0 after a [SEP] are counted correctly (the paper: about 8% of words).
    """
    words = split = 0
    for word_ids in word_ids_list:
        prev, run = None, 0
        for w in list(word_ids) + [None]:
            if w is not None and w == prev:
                run += 1
                continue
            if prev is not None:
                words += 1
                split += run > 1
            prev, run = w, 1
    if words == 0:
        raise ValueError("no words")
    return split / words


# ---------------------------------------------------------------------------------------
# Section 3 summary: the heads to show, and the paper-vs-run table
# (the paper's claims: analysis_utils.papers.CLARK_SECTION3)


def matching_layers(paper_layers: Sequence[int], num_layers: int,
                    paper_total: int = BERT_BASE_LAYERS) -> list[int]:
    """Layers of a ``num_layers`` model at the same relative depth as the paper's BERT-base
    layers (1-based): layer ``l`` of 12 maps to ``ceil(l * num_layers / 12)``.
    ``matching_layers(range(6, 11), 6) == [3, 4, 5]``; identity for a 12-layer model."""
    mapped = sorted({min(num_layers, max(1, int(np.ceil(lyr * num_layers / paper_total))))
                     for lyr in paper_layers})
    return list(range(mapped[0], mapped[-1] + 1))


def strongest_heads(stats: dict[str, pd.DataFrame]) -> dict[str, tuple[int, int]]:
    """The head (layer, head; 1-based) with the strongest score of each behaviour, from the
    frames of :func:`surface_statistics`: previous / next token, [CLS], [SEP], ./, and the
    broadest (highest entropy) head."""
    picks = {"previous token": ("relative_position", "previous"),
             "next token": ("relative_position", "next"),
             "[CLS]": ("token_class", "cls"), "[SEP]": ("token_class", "sep"),
             "punctuation": ("token_class", "punct"), "broad": ("entropy", "entropy")}
    out = {}
    for name, (frame, col) in picks.items():
        row = stats[frame].loc[stats[frame][col].idxmax()]
        out[name] = (int(row["layer"]), int(row["head"]))
    return out


def pick_example(lengths: Sequence[int], target_length: int = 40) -> int:
    """Index of the first example whose length is closest to ``target_length`` (short enough
    to read a whole map; chosen by length only, never by its attention)."""
    lengths = np.asarray(lengths)
    return int(np.argmin(np.abs(lengths - target_length)))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _heads(df: pd.DataFrame, col: str, thr: float) -> str:
    heads = heads_above(df, col, thr)
    return f"{len(heads)}" + (f" ({', '.join(heads)})" if heads else "")


def _argmax_layers(tc: pd.DataFrame) -> str:
    means = layer_means(tc, ["cls", "sep", "punct"])
    return ", ".join(f"{lbl} L{int(means[c].idxmax())}"
                     for c, lbl in [("cls", "[CLS]"), ("sep", "[SEP]"), ("punct", "./,")])


def _grad_ratio(grad: pd.DataFrame | None, target: str, layers: Sequence[int]) -> str:
    if grad is None or target not in set(grad["target"]):
        return "not computed"
    g = grad.pivot(index="layer", columns="target", values="mean_abs_grad")
    ratio = g[target] / g["other"]
    late = ratio.loc[[lyr for lyr in layers if lyr in ratio.index]]
    early = ratio.drop(index=late.index)
    parts = [f"x{late.mean():.2f} of other in L{late.index.min()}-{late.index.max()}"]
    if len(early):
        parts.append(f"x{early.mean():.2f} before")
    return ", ".join(parts)


def section3_comparison(stats: dict[str, dict[str, pd.DataFrame]], split_share: float,
                        num_layers: int, grad: pd.DataFrame | None = None) -> pd.DataFrame:
    """The "paper vs. this run" table of Section 3.

    stats: ``{"model": surface_statistics(...), "control": surface_statistics(...)}``;
    split_share: :func:`split_word_share` of the segments; grad: the frame of
    :func:`analysis_utils.analyses.gradients.attention_gradient_importance` for the model (None: not
    computed). Columns: claim, paper (BERT-base), model, control, uniform (what a head
    attending uniformly over the real tokens scores), layers (which layers of this model
    the row covers when the paper names layers).
    """
    mid = matching_layers(range(6, 11), num_layers)
    late = matching_layers(range(5, BERT_BASE_LAYERS + 1), num_layers)
    uni = stats["model"]["token_class"].attrs["uniform"]
    uni_ent = stats["model"]["entropy"].attrs["uniform"]
    rows = []

    def row(claim, key, fn, uniform="", layers=""):
        rows.append({"claim": claim, "paper (BERT-base)": CLARK_SECTION3.get(key, ""),
                     "model": fn(stats["model"]),
                     "control": fn(stats["control"]) if "control" in stats else "",
                     "uniform head": uniform, "layers of this model": layers})

    row("heads > 50% on previous token", "previous",
        lambda s: _heads(s["relative_position"], "previous", 0.5))
    row("heads > 50% on next token", "next",
        lambda s: _heads(s["relative_position"], "next", 0.5))
    row("attention to [SEP], paper layers 6-10", "sep_share",
        lambda s: _pct(share_in_layers(s["token_class"], "sep", mid)), _pct(uni["sep"]),
        f"{mid[0]}-{mid[-1]}")
    row("attention to [CLS], paper layers 6-10", "",
        lambda s: _pct(share_in_layers(s["token_class"], "cls", mid)), _pct(uni["cls"]),
        f"{mid[0]}-{mid[-1]}")
    row("heads > 90% from [SEP] to [SEP] (max)", "sep_to_sep",
        lambda s: f"{len(heads_above(s['sep_to_sep'], 'sep_to_sep', 0.9))} "
                  f"(max {_pct(s['sep_to_sep']['sep_to_sep'].max())})",
        _pct(stats["model"]["sep_to_sep"].attrs["uniform"]["sep_to_sep"]))
    row("layer with most attention to [CLS] / [SEP] / ./,", "layer_order",
        lambda s: _argmax_layers(s["token_class"]), "", f"1-{num_layers}")
    rows.append({"claim": "|grad| of MLM loss w.r.t. attention to [SEP], vs. other tokens",
                 "paper (BERT-base)": CLARK_SECTION3["sep_gradient"],
                 "model": _grad_ratio(grad, "[SEP]", late), "control": "not computed",
                 "uniform head": "", "layers of this model": f"{late[0]}-{late[-1]}"})
    if grad is not None and "[CLS]" in set(grad["target"]):
        rows.append({"claim": "|grad| of MLM loss w.r.t. attention to [CLS], vs. other tokens",
                     "paper (BERT-base)": "", "model": _grad_ratio(grad, "[CLS]", late),
                     "control": "not computed", "uniform head": "",
                     "layers of this model": f"{late[0]}-{late[-1]}"})
    row("layer-1 heads: mean max weight (broadest head)", "broad_layer1",
        lambda s: (lambda e: f"{_pct(e['max_weight'].min())} "
                   f"(head {head_label(0, e.loc[e['entropy'].idxmax(), 'head'] - 1)}, "
                   f"{e['entropy'].max():.2f} nats)")(s["entropy"][s["entropy"]["layer"] == 1]),
        f"{_pct(uni_ent['max_weight'])}, {uni_ent['entropy']:.2f} nats", "1")
    row("entropy from [CLS], last layer (nats)", "cls_entropy_last",
        lambda s: f"{layer_means(s['entropy'], ['entropy_cls'])['entropy_cls'].iloc[-1]:.2f}",
        f"{uni_ent['entropy_cls']:.2f}", str(num_layers))
    rows.append({"claim": "words split into several pieces", "paper (BERT-base)":
                 CLARK_SECTION3["split_words"], "model": _pct(split_share),
                 "control": "(same tokenizer)", "uniform head": "", "layers of this model": ""})
    return pd.DataFrame(rows)
