"""Surface-level attention statistics (Clark et al. 2019, Section 3; Figures 2 and 4),
streamed over a corpus so memory-mapped maps never have to fit in memory. Results have one row
per head, ``layer`` and ``head`` 1-based (head ``layer-head`` reads as in the paper), and
``df.attrs["uniform"]``: what a head attending uniformly over the real tokens scores. Inputs:
:func:`surface_statistics`; how statistics are averaged: notebook 01.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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
        # per example (by_example only): (the example's mean, its eligible tokens), or
        # (None, 0) for an example with none; ``begin`` opens each example's slot
        self.examples: list[tuple[np.ndarray | float | None, int]] | None = None

    def begin(self) -> None:
        if self.examples is not None:
            self.examples.append((None, 0))

    def add(self, total, count: int) -> None:
        if count <= 0:
            return
        total = np.asarray(total, dtype=np.float64)
        if self.examples is not None:
            self.examples[-1] = (total / count, int(count))
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

    def keep_examples(self) -> None:
        """Also keep each example's own mean (for :class:`ByExample`)."""
        for m in (*self.acc.values(), *self.uni.values()):
            m.examples = []

    def add(self, attn: np.ndarray, ids: np.ndarray | None) -> None:
        self.shape = attn.shape[:2]
        for m in (*self.acc.values(), *self.uni.values()):
            m.begin()
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


@dataclass(frozen=True)
class ByExample:
    """Each example's own value of every statistic, before the average over examples (what a
    test needs to resample the units the examples were drawn from, e.g. Wikipedia articles).

    ``values[name]``: ``(examples, layers, heads)``, the example's mean of the statistic over
    its eligible attending tokens (NaN where it has none, e.g. ``sep_to_sep`` in an example
    without [SEP]); ``counts[name]``: ``(examples,)`` those tokens; ``uniform[name]``:
    ``(examples,)`` what a head attending uniformly over the example's tokens scores.
    :meth:`pooled` averages them as the frames of :func:`surface_statistics` do.
    """

    values: dict[str, np.ndarray]
    counts: dict[str, np.ndarray]
    uniform: dict[str, np.ndarray]

    @property
    def n_examples(self) -> int:
        return len(next(iter(self.counts.values())))

    def pooled(self, name: str, weighting: str = "example") -> np.ndarray:
        """``(layers, heads)``: the frames' column ``name`` from the per-example values:
        the mean over the examples that have eligible tokens (``"example"``), or their
        token-weighted mean (``"token"``)."""
        return pool(self.values[name], self.counts[name], weighting)


def pool(values, counts, weighting: str = "example") -> np.ndarray:
    """Per-example means ``values`` ``(examples, ...)`` with their eligible-token ``counts``
    ``(examples,)`` averaged as the surface frames average them: over the examples with a
    count (``"example"``), or weighted by the counts (``"token"``). Rows of a count-0 example
    (NaN) are left out either way.

    >>> v, c = [[0.2], [0.6], [np.nan]], [1, 3, 0]
    >>> pool(v, c).round(3).tolist(), pool(v, c, "token").round(3).tolist()
    ([0.4], [0.5])
    """
    if weighting not in WEIGHTINGS:
        raise ValueError(f"weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    v = np.asarray(values, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    if c.shape != v.shape[:1]:
        raise ValueError(f"counts must be ({len(v)},), one per example, got {c.shape}")
    w = (c > 0).astype(np.float64) if weighting == "example" else c
    if not w.any():
        raise ValueError("no example has an eligible token")
    v = np.where((c > 0).reshape((-1,) + (1,) * (v.ndim - 1)), v, 0.0)
    return np.tensordot(w, v, axes=1) / w.sum()


def _by_example(stats: dict[str, _Stat]) -> ByExample:
    values, counts, uniform = {}, {}, {}
    for s in stats.values():
        shape = s.shape if s.shape is not None else (0, 0)
        for name in s.names:
            rows = s.acc[name].examples
            values[name] = np.stack([np.full(shape, np.nan) if v is None else
                                     np.broadcast_to(v, shape) for v, _ in rows]) \
                if rows else np.empty((0, *shape))
            counts[name] = np.array([c for _, c in rows], dtype=np.int64)
            uniform[name] = np.array([np.nan if v is None else float(v)
                                      for v, _ in s.uni[name].examples])
    return ByExample(values, counts, uniform)


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
                       punct_ids: Sequence[int] | None, weighting: str = "example",
                       by_example: bool = False):
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

    ``by_example=True`` returns ``(frames, ByExample)``: beside the frames, each example's own
    value of every statistic (:class:`ByExample`, whose :meth:`~ByExample.pooled` gives the
    frames' columns back), from the same single pass.
    """
    stats: dict[str, _Stat] = {
        "relative_position": _RelativePosition(weighting),
        "token_class": _TokenClass(cls_id, sep_id, punct_ids, weighting),
        "entropy": _Entropy(cls_id, weighting),
    }
    if sep_id is not None:
        stats["sep_to_sep"] = _SepToSep(sep_id, weighting)
    if not by_example:
        return _run(stats, examples)
    for st in stats.values():
        st.keep_examples()
    frames = _run(stats, examples)
    return frames, _by_example(stats)


#: The per-segment statistics notebook 01 saves for the claims ledger (``01_by_segment_*.npz``).
SEGMENT_STATISTICS = ("current", "previous", "next", "cls", "sep", "punct", "sep_to_sep",
                      "rest_to_sep", "entropy", "entropy_cls", "max_weight")


def segment_arrays(bx: ByExample, articles: Sequence[str],
                   names: Sequence[str] = SEGMENT_STATISTICS) -> dict[str, np.ndarray]:
    """The arrays of ``01_by_segment_*.npz`` from :class:`ByExample` and each example's
    article (``Segment.article``): ``segment`` (n,) the example's index, ``article`` (n,) its
    article's code into ``article_names`` (sorted), and per statistic ``name`` the
    ``(n, layers, heads)`` float32 values (layer and head ``l - 1``, ``h - 1``: numbered from
    1 as everywhere else), ``count_<name>`` (n,) the eligible attending tokens behind each
    (what :func:`pool` needs to pool them as the per-head table does) and
    ``uniform_<name>`` (n,) a uniform head's value."""
    arts = np.asarray(list(articles), dtype=str)
    if arts.shape != (bx.n_examples,):
        raise ValueError(f"one article per example needed: {bx.n_examples} examples, "
                         f"{arts.shape} articles")
    names_, codes = np.unique(arts, return_inverse=True)
    out = {"segment": np.arange(bx.n_examples, dtype=np.int32),
           "article": codes.astype(np.int32), "article_names": names_}
    for name in names:
        out[name] = bx.values[name].astype(np.float32)
        out[f"count_{name}"] = bx.counts[name].astype(np.int32)
        out[f"uniform_{name}"] = bx.uniform[name].astype(np.float32)
    return out


def piece_counts(token_ids: Iterable[Sequence[int]], exclude: Sequence[int] = (),
                 top: int = 20, include: Sequence[int] = ()) -> tuple[np.ndarray, np.ndarray]:
    """How often each of the ``top`` most frequent word pieces occurs in each example (Clark
    et al.: "periods and commas are the most common tokens in the data excluding 'the'").

    token_ids: one id sequence per example; ``exclude``: ids not counted (the special
    tokens); ``include``: ids counted even when they are not among the ``top`` (appended, in
    the order given). Returns ``(ids, counts (examples, len(ids)))``, the ``top`` ids in
    order of their total count (ties by id), so a test can resample the examples' units.

    >>> piece_counts([[1, 5, 5, 7], [5, 7, 7, 2]], exclude=[1, 2], top=2)
    (array([5, 7]), array([[2, 1],
           [1, 2]]))
    """
    seqs = [np.asarray(ids, dtype=np.int64) for ids in token_ids]
    if not seqs:
        raise ValueError("no examples")
    flat = np.concatenate(seqs)
    row = np.repeat(np.arange(len(seqs)), [len(x) for x in seqs])
    keep = ~np.isin(flat, np.asarray(list(exclude), dtype=np.int64))
    flat, row = flat[keep], row[keep]
    vocab, code = np.unique(flat, return_inverse=True)
    total = np.bincount(code, minlength=len(vocab))
    order = np.lexsort((vocab, -total))[:top]
    extra = [int(np.searchsorted(vocab, i)) for i in include
             if i in set(vocab.tolist()) and int(np.searchsorted(vocab, i)) not in set(order)]
    order = np.concatenate([order, np.asarray(extra, dtype=order.dtype)])
    rank = np.full(len(vocab), -1)
    rank[order] = np.arange(len(order))
    r = rank[code]
    table = np.zeros((len(seqs), len(order)), dtype=np.int64)
    np.add.at(table, (row[r >= 0], r[r >= 0]), 1)
    return vocab[order], table


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
    out = {}
    for name, (frame, col) in PATTERNS.items():
        row = stats[frame].loc[stats[frame][col].idxmax()]
        out[name] = (int(row["layer"]), int(row["head"]))
    return out


#: Tokens that only occur where WikiText replaced something by a placeholder: ``<formula>``
#: is encoded as ``<``, ``formula``, ``>``; ``[UNK]`` stands for ``<unk>``-like gaps.
PLACEHOLDER_TOKENS = frozenset({"<", ">", "[UNK]", "@"})
SENTENCE_END = frozenset({".", "!", "?"})
#: The behaviours of :func:`strongest_heads`, each as (statistic frame, column).
PATTERNS = {"previous token": ("relative_position", "previous"),
            "next token": ("relative_position", "next"),
            "[CLS]": ("token_class", "cls"), "[SEP]": ("token_class", "sep"),
            "punctuation": ("token_class", "punct"), "broad": ("entropy", "entropy")}


def example_candidates(segments: Sequence, max_length: int = 40,
                       min_paragraph: int = 5) -> tuple[list[int], str]:
    """Segments fit to be drawn as an example map, and which rule found them.

    segments: objects with ``tokens`` (word pieces, special tokens included) and
    ``truncated``. Tried in order, the first rule that finds any wins:

    1. ``"prose"``: at most ``max_length`` pieces, not truncated, no placeholder token
       (:data:`PLACEHOLDER_TOKENS`: WikiText's ``<formula>``, ``[UNK]``), both paragraphs at
       least ``min_paragraph`` pieces and ending with ``.``, ``!`` or ``?``;
    2. ``"no placeholder"``: at most ``max_length`` pieces, no placeholder token;
    3. ``"shortest"``: the shortest segment without a placeholder (else the shortest).
    """
    def clean(s) -> bool:
        return not PLACEHOLDER_TOKENS.intersection(s.tokens)

    def prose(s) -> bool:
        seps = [i for i, t in enumerate(s.tokens) if t == s.tokens[-1]]
        if len(seps) < 2 or getattr(s, "truncated", False):
            return False
        first, second = seps[0], seps[-1]
        return (first - 1 >= min_paragraph and second - first - 1 >= min_paragraph
                and s.tokens[first - 1] in SENTENCE_END and s.tokens[second - 1] in SENTENCE_END)

    short = [i for i, s in enumerate(segments) if len(s.tokens) <= max_length and clean(s)]
    found = [i for i in short if prose(segments[i])]
    if found:
        return found, "prose"
    if short:
        return short, "no placeholder"
    pool = [i for i, s in enumerate(segments) if clean(s)] or list(range(len(segments)))
    return [min(pool, key=lambda i: len(segments[i].tokens))], "shortest"


def pattern_strength(attn: np.ndarray, token_ids, pattern: str, cls_id: int | None,
                     sep_id: int | None, punct_ids: Sequence[int] | None) -> float:
    """How strongly one head shows ``pattern`` (a key of :data:`PATTERNS`) on one segment.

    attn: ``(n, n)`` map of one head (rows sum to 1); token_ids: ``(n,)``. Returns the mean
    over attending tokens of the weight on the previous / next token or on the token class
    (``[CLS]``, ``[SEP]``, punctuation); for ``"broad"``, the mean row entropy as a share of
    ``log n`` (1 = uniform)."""
    a = np.asarray(attn, dtype=np.float64)
    n = a.shape[-1]
    if pattern == "previous token":
        return float(np.diagonal(a, -1).mean()) if n > 1 else 0.0
    if pattern == "next token":
        return float(np.diagonal(a, 1).mean()) if n > 1 else 0.0
    if pattern == "broad":
        return float(_row_entropy(a).mean() / np.log(n)) if n > 1 else 0.0
    masks = _class_masks(np.asarray(token_ids), cls_id, sep_id, punct_ids)
    key = {"[CLS]": "cls", "[SEP]": "sep", "punctuation": "punct"}.get(pattern)
    if key is None:
        raise ValueError(f"unknown pattern {pattern!r}; one of {list(PATTERNS)}")
    return float(a[:, masks[key]].sum(-1).mean())


def pick_pattern_examples(store, segments: Sequence, heads: dict[str, tuple[int, int]],
                          cls_id: int | None, sep_id: int | None,
                          punct_ids: Sequence[int] | None, max_length: int = 40) -> pd.DataFrame:
    """For each behaviour, the segment among :func:`example_candidates` on which its head
    shows it most: an illustration chosen to show the pattern, not evidence for it (the
    averages over all segments are).

    store: the maps, ``store[i]`` ``(layers, heads, n, n)``; segments: with ``input_ids``,
    ``tokens``, ``truncated``; heads: behaviour -> 1-based ``(layer, head)``, as
    :func:`strongest_heads` returns. Returns one row per behaviour: ``pattern``, ``layer``,
    ``head`` (0-based, for indexing ``store``), ``segment``, ``here`` (its
    :func:`pattern_strength` on that segment), ``rule`` (how the candidates were found;
    ``"shortest"`` for a pattern none of them can show, e.g. punctuation in a segment without
    any: then the shortest segment holding such tokens)."""
    cands, rule = example_candidates(segments, max_length)
    needs = {"[CLS]": [cls_id], "[SEP]": [sep_id], "punctuation": list(punct_ids or [])}
    rows = []
    for pattern, (layer, head) in heads.items():
        ids = [x for x in needs.get(pattern, []) if x is not None]
        pool, how = cands, rule
        if ids and not any(np.isin(segments[i].input_ids, ids).any() for i in pool):
            # no candidate has the tokens the pattern is about: the shortest segment that has
            with_ids = [i for i, s in enumerate(segments) if np.isin(s.input_ids, ids).any()]
            if with_ids:
                pool, how = [min(with_ids, key=lambda i: len(segments[i].input_ids))], "shortest"
        scores = [pattern_strength(store[i][layer - 1, head - 1], segments[i].input_ids,
                                   pattern, cls_id, sep_id, punct_ids) for i in pool]
        best = int(np.argmax(scores))
        rows.append({"pattern": pattern, "layer": layer - 1, "head": head - 1,
                     "segment": pool[best], "here": scores[best], "rule": how})
    return pd.DataFrame(rows)


def pattern_caption(pattern: str, value: float) -> str:
    """``value`` of :func:`pattern_strength` in words, e.g. ``"62% on the previous token"``."""
    if pattern == "broad":
        return f"entropy {100 * value:.0f}% of uniform"
    where = {"previous token": "the previous token", "next token": "the next token",
             "punctuation": ". and ,"}.get(pattern, pattern)
    return f"{100 * value:.0f}% on {where}"


def _argmax_layer(tc: pd.DataFrame, column: str) -> int:
    return int(layer_means(tc, [column])[column].idxmax())


def _grad_ratio(grad: pd.DataFrame | None, target: str, layers: Sequence[int]) -> float:
    """Mean over ``layers`` of the gradient importance of attention to ``target`` divided by
    that of attention to other tokens (NaN when not computed)."""
    if grad is None or target not in set(grad["target"]):
        return np.nan
    g = grad.pivot(index="layer", columns="target", values="mean_abs_grad")
    ratio = g[target] / g["other"]
    return float(ratio.loc[[lyr for lyr in layers if lyr in ratio.index]].mean())


#: Columns of :func:`section3_comparison` that hold numbers (``unit`` says in what).
COMPARISON_VALUES = ("model", "control", "uniform head")


def section3_comparison(stats: dict[str, dict[str, pd.DataFrame]], split_share: float,
                        num_layers: int, grad: pd.DataFrame | None = None,
                        head_source: str = "fitted masked-LM head") -> pd.DataFrame:
    """The "paper vs. this run" table of Section 3: one row per claim of the paper.

    stats: ``{"model": surface_statistics(...), "control": surface_statistics(...)}``;
    split_share: :func:`split_word_share` of the segments; grad: the frame of
    :func:`analysis_utils.analyses.gradients.attention_gradient_importance` for the model (None:
    not computed).

    Columns: ``claim``; ``paper (BERT-base)`` (as the paper words it); ``model``,
    ``control``, ``uniform head`` (numbers in ``unit``: heads, %, layer, nats or the ratio
    "x other"; ``uniform head`` is what a head attending uniformly over the real tokens
    scores); ``which`` (the model's heads, or a maximum, where that helps); ``layers of this
    model`` (the layers at the paper's relative depth, :func:`matching_layers`); ``from``
    (``attention maps``, ``tokenizer`` or, for the gradient rows, ``head_source``: where the
    masked-LM head came from, :func:`analysis_utils.analyses.gradients.head_source`; rows from
    a fitted head vary slightly between machines). Whether each claim held is not decided here: the claims
    ledger (:mod:`analysis_utils.ledger.clark`) judges it against the random-weights control
    and chance under a criterion fixed in code, and the notebook shows its rows.
    """
    mid = matching_layers(range(6, 11), num_layers)
    late = matching_layers(range(5, BERT_BASE_LAYERS + 1), num_layers)
    uni = stats["model"]["token_class"].attrs["uniform"]
    uni_ent = stats["model"]["entropy"].attrs["uniform"]
    has_control = "control" in stats
    rows = []

    def span(layers: Sequence[int]) -> str:
        return f"{layers[0]}-{layers[-1]}" if len(layers) > 1 else str(layers[0])

    def add(claim, paper, value, unit, uniform=np.nan, which="", layers="",
            source="attention maps", control=None):
        ctrl = np.nan
        if has_control and source == "attention maps":
            ctrl = value(stats["control"]) if control is None else control
        rows.append({"claim": claim, "paper (BERT-base)": paper,
                     "model": value(stats["model"]) if callable(value) else value,
                     "control": ctrl, "uniform head": uniform, "unit": unit, "which": which,
                     "layers of this model": layers, "from": source})

    rp = stats["model"]["relative_position"]
    for key, col in (("previous", "previous"), ("next", "next")):
        heads = heads_above(rp, col, 0.5)
        add(f"heads > 50% on the {col} token", CLARK_SECTION3[key],
            lambda s, c=col: len(heads_above(s["relative_position"], c, 0.5)), "heads",
            which=", ".join(heads))

    def sep_share(s) -> float:
        return 100 * share_in_layers(s["token_class"], "sep", mid)

    add("attention to [SEP] in the paper's layers 6-10", CLARK_SECTION3["sep_share"],
        sep_share, "%", uniform=100 * uni["sep"], layers=span(mid))
    add("attention to [CLS] in the paper's layers 6-10", "\u2013",
        lambda s: 100 * share_in_layers(s["token_class"], "cls", mid), "%",
        uniform=100 * uni["cls"], layers=span(mid))
    ss = stats["model"]["sep_to_sep"]
    add("heads > 90% from [SEP] to [SEP]", CLARK_SECTION3["sep_to_sep"],
        lambda s: len(heads_above(s["sep_to_sep"], "sep_to_sep", 0.9)), "heads",
        which=f"max {100 * ss['sep_to_sep'].max():.1f}%")
    for col, label, where in (("cls", "[CLS]", "early"), ("sep", "[SEP]", "middle"),
                              ("punct", "./,", "deep")):
        add(f"layer with the most attention to {label}", f"{where} layers (Figure 2)",
            lambda s, c=col: _argmax_layer(s["token_class"], c), "layer",
            layers=f"1-{num_layers}")
    for target, paper in (("[SEP]", CLARK_SECTION3["sep_gradient"]), ("[CLS]", "\u2013")):
        if grad is None or target not in set(grad["target"]):
            continue
        add(f"|grad| of the MLM loss w.r.t. attention to {target}, vs. other tokens", paper,
            _grad_ratio(grad, target, late), "x other", layers=span(late),
            source=head_source)
    ent = stats["model"]["entropy"]
    first = ent[ent["layer"] == 1]
    low = first.loc[first["max_weight"].idxmin()]

    def lowest(s) -> float:
        return 100 * s["entropy"].loc[s["entropy"]["layer"] == 1, "max_weight"].min()

    add("layer 1: lowest mean max weight of a head", CLARK_SECTION3["broad_layer1"], lowest,
        "%", uniform=100 * uni_ent["max_weight"],
        which=f"head {head_label(0, int(low['head']) - 1)}", layers="1")

    def cls_last(s) -> float:
        return float(layer_means(s["entropy"], ["entropy_cls"])["entropy_cls"].iloc[-1])

    add("entropy from [CLS], last layer", CLARK_SECTION3["cls_entropy_last"], cls_last,
        "nats", uniform=uni_ent["entropy_cls"], layers=str(num_layers))
    add("words split into several pieces", CLARK_SECTION3["split_words"], 100 * split_share,
        "%", source="tokenizer")
    return pd.DataFrame(rows)


def comparison_view(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`section3_comparison` as a reader sees it: each number with its unit ("2.8%",
    "3.80 nats", "L5", "x0.88", "1: 1-3"), blanks as "\u2013", the claim as the row label."""
    def fmt(v, unit: str, which: str = "") -> str:
        if pd.isna(v):
            return "\u2013"
        text = {"heads": f"{int(v)}", "%": f"{v:.1f}%", "layer": f"L{int(v)}",
                "nats": f"{v:.2f} nats", "x other": f"x{v:.2f}"}.get(unit, f"{v:g}")
        return f"{text} ({which})" if which else text

    view = pd.DataFrame({
        "claim": table["claim"], "paper (BERT-base)": table["paper (BERT-base)"],
        "this run": [fmt(r["model"], r["unit"], r["which"]) for _, r in table.iterrows()],
        "control": [fmt(r["control"], r["unit"]) for _, r in table.iterrows()],
        "uniform head": [fmt(r["uniform head"], r["unit"]) for _, r in table.iterrows()],
        "layers here": table["layers of this model"].replace("", "\u2013")})
    return view.set_index("claim")
