"""How attention changes with fine-tuning, and where it goes (Kovaleva et al. 2019, Section 4.3,
Figure 5; Section 4.4, Figure 6; Section 4.5, Figure 7).

Pure functions over attention maps of any two models on the same inputs (a pre-trained and a
fine-tuned one, in any order); tidy DataFrames with 1-based ``layer`` and ``head``.

**Cosine similarity** (Figure 5, :func:`cosine_similarity`): "we calculate cosine similarity
between pre-trained and fine-tuned BERT's flattened arrays of attention weights. We average
the derived similarities over all the development set examples." Per input and head, the two
``(n, n)`` maps are flattened and compared, ``cos = <a, b> / (|a| |b|)``; the per-head value is
the mean over inputs (the paper: up to 1,000 dev examples per task). Compared block: the real
tokens only, ``n x n``, as the stores hold them. The released code compared whole padded
``(128, 128)`` maps; the ``128 - n`` padding rows (each a distribution over the real tokens,
made by each model from padding embeddings) then carry most of each flattened map for short
inputs, and their agreement, not the input's, drives the number (expected to inflate it:
padding rows of two related models look alike). :func:`cosine_similarity` over pairs from
:func:`analysis_utils.engine.padded.iter_padded_attention` gives that variant and
:func:`padded_cosine` both numbers from one pass over the padded maps. (Zeros appended to
both maps would change nothing.)

**Attention to [CLS], [SEP] and punctuation** (Figure 6, :func:`special_token_attention`):
the paper's Section 4.4 aggregation (attention each token receives, summed over rows and
divided by the length; the maximum over tokens of the class; averaged over inputs that have
one), on piece-level maps with classes taken from token ids: ``tokenizer.cls_token_id``,
``tokenizer.sep_token_id``, punctuation ids from
:func:`analysis_utils.analyses.features.punctuation_ids`. The maximum over tokens is what makes
the paper's remark hold that SST-2's single [SEP] scores higher than the two [SEP] of a pair
task. The class's total share (Clark et al.'s statistic) comes alongside as ``share``.

**[CLS] in the last layer** (Figure 7, :func:`cls_attention_by_type`): the weights of the
[CLS] row of the last layer on each token type. Linguistic types come from
:func:`analysis_utils.analyses.features.feature_statistics` (its ``cls_row`` frame).

An *example* for the one-store functions is ``(attn, token_ids)``: ``attn (layers, heads, n,
n)`` cropped to the real length (an AttentionStore entry), ``token_ids (n,)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd

from ..engine.attention import read_entry as _entry
from . import features as _features

__all__ = [
    "head_cosine", "store_pairs", "with_token_ids", "cosine_similarity", "cosine_table",
    "drift_by_example", "padded_cosine",
    "padding_effect",
    "drift_by_layer", "layers_changed_most", "as_grids", "stack", "special_token_attention",
    "cls_attention_by_type", "dev_inputs",
]


def dev_inputs(task: str, tokenizer, n_examples: int, max_tokens: int,
               data_dir: str | None = None):
    """``(examples, encoded)``: the dev examples notebook 06 compares maps on, the first
    ``n_examples`` of ``task``'s dev file (0: all), encoded as the model sees them (pairs as
    ``[CLS] A [SEP] B [SEP]``, at most ``max_tokens`` pieces). The run plan's maps units
    (:class:`analysis_utils.runplan.units.MapsUnit`) extract the fine-tuned models' maps on
    exactly these inputs ahead of the notebook, so it finds them cached."""
    from ..data import glue

    exs = glue.read_glue(task, max_examples=n_examples or None, data_dir=data_dir)
    return exs, glue.encode(exs, tokenizer, max_tokens=max_tokens)


# ---------------------------------------------------------------------------------------
# cosine similarity (Figure 5)


def head_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity per head of two maps of the same input.

    a, b: ``(layers, heads, n, n)`` (any float dtype; computed in float64). Returns
    ``(layers, heads)``. A head whose map is all zeros in either model gives NaN.
    """
    a = np.asarray(a)
    b = np.asarray(b)
    if a.shape != b.shape or a.ndim != 4:
        raise ValueError(f"maps must both be (layers, heads, n, n) of one shape, got {a.shape} "
                         f"and {b.shape}: were they extracted from the same inputs?")
    L, H = a.shape[:2]
    fa = a.reshape(L, H, -1).astype(np.float64)
    fb = b.reshape(L, H, -1).astype(np.float64)
    dot = np.einsum("lhk,lhk->lh", fa, fb)
    norm = np.sqrt(np.einsum("lhk,lhk->lh", fa, fa) * np.einsum("lhk,lhk->lh", fb, fb))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norm > 0, dot / np.where(norm > 0, norm, 1.0), np.nan)


def store_pairs(store_a, store_b, max_examples: int | None = 1000
                ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(store_a[i], store_b[i])`` for the first ``max_examples`` inputs, one at a time.

    The stores (AttentionStores or sequences of maps) must hold the same inputs in the same
    order; their lengths are checked up front when both expose ``lengths``.
    """
    if len(store_a) != len(store_b):
        raise ValueError(f"stores hold {len(store_a)} and {len(store_b)} inputs: extract both "
                         "models' maps from the same encoded examples")
    la, lb = getattr(store_a, "lengths", None), getattr(store_b, "lengths", None)
    if la is not None and lb is not None and not np.array_equal(la, lb):
        first = int(np.flatnonzero(np.asarray(la) != np.asarray(lb))[0])
        raise ValueError(f"stores differ in input lengths (first: #{first}): they were not "
                         "extracted from the same encoded examples")
    n = len(store_a) if max_examples is None else min(max_examples, len(store_a))
    for i in range(n):
        yield _entry(store_a, i), _entry(store_b, i)


def with_token_ids(store, token_ids: Sequence[Sequence[int]],
                   max_examples: int | None = 1000) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``(store[i], token_ids[i])`` examples for the one-store functions, first
    ``max_examples`` inputs. ``token_ids``: e.g. ``[x.input_ids for x in encoded]``."""
    if len(store) != len(token_ids):
        raise ValueError(f"store holds {len(store)} inputs, token_ids {len(token_ids)}")
    n = len(store) if max_examples is None else min(max_examples, len(store))
    for i in range(n):
        yield _entry(store, i), np.asarray(token_ids[i])


def cosine_similarity(pairs: Iterable[tuple[np.ndarray, np.ndarray]],
                      max_examples: int | None = None,
                      by_example: bool = False) -> pd.DataFrame | np.ndarray:
    """Per-head cosine similarity of two models' maps, averaged over inputs (Figure 5).

    pairs: ``(a, b)`` maps of one input, ``(layers, heads, n, n)`` each (:func:`store_pairs`
    for the real-token blocks; ``zip`` of two
    :func:`~analysis_utils.engine.padded.iter_padded_attention` streams for the padded
    variant). Streamed: one pair in memory at a time.

    Returns ``layer, head, cosine, sd, n_examples``: mean and standard deviation over inputs.
    ``by_example=True``: the per-input cosines it averages, ``(n_inputs, layers, heads)``
    (:func:`cosine_table` makes the table from them; :func:`drift_by_example` the per-input
    drift of each layer).
    """
    per = []
    for i, (a, b) in enumerate(pairs):
        if max_examples is not None and i >= max_examples:
            break
        per.append(head_cosine(a, b))
    if not per:
        raise ValueError("no input pairs")
    per = np.stack(per)
    return per if by_example else cosine_table(per)


def cosine_table(per_example: np.ndarray) -> pd.DataFrame:
    """:func:`cosine_similarity`'s table from its per-input cosines ``(n, layers, heads)``:
    ``layer, head, cosine, sd, n_examples`` (mean and standard deviation over inputs)."""
    per = np.asarray(per_example, dtype=np.float64)
    if per.ndim != 3 or not len(per):
        raise ValueError(f"per-input cosines must be (n, layers, heads), got {per.shape}")
    count = len(per)
    mean = per.sum(axis=0) / count
    sd = np.sqrt(np.maximum((per * per).sum(axis=0) / count - mean * mean, 0.0))
    L, H = mean.shape
    return pd.DataFrame({"layer": np.repeat(np.arange(1, L + 1), H),
                         "head": np.tile(np.arange(1, H + 1), L),
                         "cosine": mean.reshape(-1), "sd": sd.reshape(-1),
                         "n_examples": count})


def drift_by_example(per_example: np.ndarray) -> np.ndarray:
    """Per-input drift of each layer, ``1 - `` the mean cosine over the layer's heads:
    ``(n, layers, heads)`` cosines -> ``(n, layers)``. Its mean over inputs is
    :func:`drift_by_layer`'s ``drift`` (both average heads and inputs).

    >>> c = np.array([[[1.0, 0.5], [0.0, 0.0]]])   # 1 input, 2 layers, 2 heads
    >>> drift_by_example(c).tolist()
    [[0.25, 1.0]]
    """
    per = np.asarray(per_example, dtype=np.float64)
    if per.ndim != 3:
        raise ValueError(f"per-input cosines must be (n, layers, heads), got {per.shape}")
    return 1.0 - per.mean(axis=-1)


def padded_cosine(padded_pairs: Iterable[tuple[np.ndarray, np.ndarray]],
                  lengths: Sequence[int]) -> pd.DataFrame:
    """Real-token and padded cosine similarity from the same padded maps, in one pass.

    padded_pairs: ``(a, b)`` maps ``(layers, heads, P, P)`` of both models on input ``i``
    padded to ``P`` (``zip`` of two
    :func:`~analysis_utils.engine.padded.iter_padded_attention` streams); lengths: the real
    length ``n_i`` of each input (``[len(x) for x in inputs]``). The real block is the
    ``[:n, :n]`` crop of the same maps, so the two numbers differ by the padding alone (no
    float16 rounding of the store in between).

    Returns ``layer, head, cosine_real, cosine_padded, difference`` (padded minus real:
    positive where padding inflates the similarity) and ``n_examples``.
    """
    real, padded, count = None, None, 0
    for i, (a, b) in enumerate(padded_pairs):
        if i >= len(lengths):
            break
        n = int(lengths[i])
        if n > a.shape[-1]:
            raise ValueError(f"input {i}: length {n} exceeds the padded maps' {a.shape[-1]}")
        cr = head_cosine(a[..., :n, :n], b[..., :n, :n])
        cp = head_cosine(a, b)
        real = cr if real is None else real + cr
        padded = cp if padded is None else padded + cp
        count += 1
    if count == 0:
        raise ValueError("no input pairs")
    L, H = real.shape
    out = pd.DataFrame({"layer": np.repeat(np.arange(1, L + 1), H),
                        "head": np.tile(np.arange(1, H + 1), L),
                        "cosine_real": (real / count).reshape(-1),
                        "cosine_padded": (padded / count).reshape(-1)})
    out["difference"] = out["cosine_padded"] - out["cosine_real"]
    out["n_examples"] = count
    return out


def padding_effect(real: pd.DataFrame, padded: pd.DataFrame) -> pd.DataFrame:
    """Join a real-token and a padded :func:`cosine_similarity` table (same heads, any extra
    key columns such as ``task``): ``cosine_real``, ``cosine_padded`` and ``difference``
    (padded minus real). :func:`padded_cosine` gives both from one pass instead."""
    keys = [c for c in real.columns if c not in ("cosine", "sd", "n_examples")]
    out = real[keys + ["cosine"]].merge(padded[keys + ["cosine"]], on=keys,
                                        suffixes=("_real", "_padded"), validate="one_to_one")
    out["difference"] = out["cosine_padded"] - out["cosine_real"]
    return out


def _group_keys(df: pd.DataFrame, by: Sequence[str] | None) -> list[str]:
    if by is None:
        by = [c for c in df.columns
              if not pd.api.types.is_numeric_dtype(df[c]) and c not in ("layer", "head")]
    return [c for c in by if c in df.columns]


def drift_by_layer(df: pd.DataFrame, value: str = "cosine",
                   by: Sequence[str] | None = None) -> pd.DataFrame:
    """Summary of drift per layer: ``mean``, ``min`` and ``max`` of ``value`` over the layer's
    heads, ``drift = 1 - mean`` and ``rank`` (1 = the layer that changed most within its
    group). by: grouping columns (default: every text column, e.g. ``task``, ``model``)."""
    keys = _group_keys(df, by)
    g = df.groupby([*keys, "layer"], sort=True)[value]
    out = g.agg(["mean", "min", "max"]).reset_index()
    out["drift"] = 1.0 - out["mean"]
    rank_by = out.groupby(keys)["mean"] if keys else out["mean"]
    out["rank"] = rank_by.rank(method="min").astype(int)
    return out


def layers_changed_most(df: pd.DataFrame, k: int = 2, value: str = "cosine",
                        by: Sequence[str] | None = None) -> pd.DataFrame:
    """Per group, the ``k`` layers of lowest mean ``value`` and whether they are the last
    ``k`` layers (the paper: "for all the tasks except QQP, it is the last two layers that
    undergo the largest changes")."""
    keys = _group_keys(df, by)
    summary = drift_by_layer(df, value, keys)
    num_layers = int(df["layer"].max())
    rows = []
    groups = summary.groupby(keys, sort=False) if keys else [((), summary)]
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        top = part.nsmallest(k, "mean")["layer"].tolist()
        rows.append({**dict(zip(keys, key, strict=True)), "layers": sorted(top),
                     "last_k": sorted(top) == list(range(num_layers - k + 1, num_layers + 1))})
    return pd.DataFrame(rows)


def rises_with_depth(by_layer: pd.DataFrame, by: Sequence[str] = ("task", "compared"),
                     value: str = "drift") -> pd.Series:
    """Per group of :func:`drift_by_layer`'s table, whether ``value`` never falls from one
    layer to the next. A drift that only rises with depth puts the last two layers on top by
    itself, so "the last two layers change most" says little more where this is True.

    >>> t = pd.DataFrame({"task": "A", "compared": "s42", "layer": [1, 2, 3],
    ...                   "drift": [0.1, 0.2, 0.2]})
    >>> rises_with_depth(t).tolist()
    [True]
    """
    return by_layer.sort_values("layer").groupby(list(by), sort=False)[value].apply(
        lambda v: bool(np.all(np.diff(v.to_numpy()) >= 0)))


def as_grids(df: pd.DataFrame, value: str, by: str | Sequence[str] | None = None
             ) -> dict[str, np.ndarray]:
    """``{title: (layers, heads)}`` panels for ``plotting.grid.head_grids``, one per group
    (``by``: e.g. ``"task"`` or ``["task", "model"]``; titles join the group values)."""
    by = [by] if isinstance(by, str) else list(by or [])
    L, H = int(df["layer"].max()), int(df["head"].max())
    out = {}
    groups = df.groupby(by, sort=False) if by else [((value,), df)]
    for key, part in groups:
        key = key if isinstance(key, tuple) else (key,)
        grid = np.full((L, H), np.nan)
        grid[part["layer"].to_numpy() - 1, part["head"].to_numpy() - 1] = part[value]
        out[" / ".join(str(k) for k in key)] = grid
    return out


def stack(frames: Mapping, names: Sequence[str] = ("task",)) -> pd.DataFrame:
    """One tidy table from ``{key: frame}``: ``key`` (a value, or a tuple of values, one per
    name in ``names``, e.g. ``("MRPC", "fine-tuned")`` for ``("task", "model")``) becomes the
    leading columns. ``attrs`` of the parts are kept under ``attrs["parts"]``."""
    parts, attrs = [], {}
    for key, df in frames.items():
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != len(names):
            raise ValueError(f"key {key} does not match names {tuple(names)}")
        part = df.copy()
        for i, (name, v) in enumerate(zip(names, key, strict=True)):
            part.insert(i, name, v)
        parts.append(part)
        attrs[key if len(key) > 1 else key[0]] = dict(df.attrs)
    out = pd.concat(parts, ignore_index=True)
    out.attrs["parts"] = attrs
    return out


# ---------------------------------------------------------------------------------------
# special tokens and punctuation (Figures 6 and 7)


def _id_examples(examples: Iterable, cls_id, sep_id, punct_ids, max_examples):
    for i, ex in enumerate(examples):
        if max_examples is not None and i >= max_examples:
            break
        attn, ids = ex if not isinstance(ex, Mapping) else (ex["attn"], ex["token_ids"])
        attn = np.asarray(attn)
        ids = np.asarray(ids)
        if ids.shape != (attn.shape[-1],):
            raise ValueError(f"input {i}: {len(ids)} token ids for a map of "
                             f"{attn.shape[-1]} tokens")
        masks = _features.special_masks(ids, cls_id, sep_id, punct_ids)
        masks["other"] = ~(masks["cls"] | masks["sep"] | masks["punct"])
        yield np.asarray(attn, dtype=np.float32), masks


def special_token_attention(examples: Iterable, cls_id: int, sep_id: int,
                            punct_ids: Iterable[int] = (),
                            max_examples: int | None = 1000,
                            by_example: bool = False) -> pd.DataFrame | dict[str, np.ndarray]:
    """Attention to [CLS], [SEP] and punctuation per head, one model (Figure 6).

    examples: ``(attn, token_ids)`` (:func:`with_token_ids`). Classes by id: ``cls_id``,
    ``sep_id`` (the tokenizer's ``cls_token_id``/``sep_token_id``), ``punct_ids``
    (:func:`~analysis_utils.analyses.features.punctuation_ids`).

    Returns ``feature (cls | sep | punct), layer, head, score, share, n_examples``: ``score``
    the paper's aggregation (largest received attention ``sum_i A[i, j] / n`` over the class's
    tokens, mean over inputs containing one), ``share`` the class's total received attention
    (all its tokens); ``attrs["uniform"]``: a uniform head's score ``1/n``.

    ``by_example=True``: the per-input scores ``score`` averages, ``{"cls" | "sep" | "punct":
    (n_inputs, layers, heads)}``, NaN for an input without the class (``.mean(-1)``: the
    per-input, per-layer score over heads that the ledger resamples).
    """
    punct_ids = list(punct_ids)
    return _features.feature_attention(
        _id_examples(examples, cls_id, sep_id, punct_ids, max_examples),
        features=_features.SPECIAL_CLASSES, by_example=by_example)


def cls_attention_by_type(examples: Iterable, cls_id: int, sep_id: int,
                          punct_ids: Iterable[int] = (), layer: int = -1,
                          max_examples: int | None = 1000,
                          by_example: bool = False) -> pd.DataFrame | dict[str, np.ndarray]:
    """Where [CLS] attends in one layer (default the last), by token type (Figure 7).

    examples: ``(attn, token_ids)``. Types: ``cls`` (itself), ``sep``, ``punct``, ``other``.
    Returns ``target, layer, head, weight, share, n_examples`` (see
    :func:`analysis_utils.analyses.features.cls_row_attention`); for the linguistic types use
    the ``cls_row`` frame of :func:`analysis_utils.analyses.features.feature_statistics`.
    ``by_example=True``: the per-input weights ``{target: (n_inputs, heads)}`` that ``weight``
    averages, NaN for an input without the type.
    """
    punct_ids = list(punct_ids)
    return _features.cls_row_attention(
        _id_examples(examples, cls_id, sep_id, punct_ids, max_examples), layer=layer,
        targets=("cls", "sep", "punct", "other"), by_example=by_example)
