"""Clustering attention heads (Clark et al. 2019, Section 6, Figure 6): Jensen-Shannon
distances between heads, their 2-D MDS, behaviour labels and permutation tests of whether
heads of a layer (or of a behaviour) sit together. The distance, its smoothing and what MDS
embeds: notebook 05.
Head index ``k = layer * num_heads + head`` (0-based), i.e. ``attn.reshape(L*H, n, n)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
import pandas as pd
import torch

__all__ = [
    "js_distance_matrix",
    "mds_embedding",
    "kruskal_stress",
    "behaviour_labels",
    "DEFAULT_THRESHOLDS",
    "layer_separation",
    "behaviour_separation",
    "head_index",
    "stream",
    "format_p",
]


def head_index(num_layers: int, num_heads: int) -> pd.DataFrame:
    """``layer, head`` (0-based) of every row/column ``k`` of the distance matrix."""
    k = np.arange(num_layers * num_heads)
    return pd.DataFrame({"layer": k // num_heads, "head": k % num_heads})


def stream(store) -> Iterator[np.ndarray]:
    """Every entry of ``store``, in order, read so that resident memory stays at one entry.

    An :class:`~analysis_utils.engine.attention.AttentionStore` is read entry by entry with
    ``store.read(i)`` (a positioned read into a fresh array, checksum-checked). Iterating the
    store itself yields memory-mapped views, and every page they touch stays resident in this
    process: one pass over the 1,000 default segments leaves 1.9 GB per model behind, the cause
    of notebook 05's 5.9 GB peak. Anything without a ``read`` method is iterated as it is.

    >>> [a.shape for a in stream([np.ones((1, 1, 2, 2))])]
    [(1, 1, 2, 2)]
    """
    read = getattr(store, "read", None)
    if read is None:
        yield from store
        return
    for i in range(len(store)):
        yield read(i)


def _as_attn(item) -> np.ndarray:
    """An example is an attention array, or a mapping / object with an ``attn`` field."""
    if isinstance(item, Mapping):
        item = item["attn"]
    elif not isinstance(item, np.ndarray | torch.Tensor) and hasattr(item, "attn"):
        item = item.attn
    return item


def js_distance_matrix(
    examples: Iterable,
    smoothing: float = 1e-3,
    *,
    kind: str = "divergence",
    reduction: str = "sum",
    max_examples: int | None = None,
    chunk_elems: int = 1 << 22,
    dtype: torch.dtype = torch.float32,
    progress: bool = False,
    return_info: bool = False,
    threads: int | None = None,
):
    """Jensen-Shannon head-distance matrix ``(K, K)``, ``K = layers * heads`` (float64).

    examples: iterable of ``attn (layers, heads, n, n)`` arrays (rows sum to 1, cropped to the
        real length; memory-mapped views are read one at a time, never all at once), or of
        mappings/objects with an ``attn`` entry.
    smoothing: added to every attention weight before renormalising (released code: 0.001).
    kind: ``"divergence"`` (summed JS divergence, the paper) or ``"distance"`` (its square
        root, a metric; notebook 05 says why).
    reduction: ``"sum"`` over all tokens (paper formula) or ``"mean"`` per token (rescales
        only).
    chunk_elems: largest pairwise block (elements) held in memory at once.
    dtype: elementwise precision (``torch.float64`` for reference-quality numbers, ~2x slower).
    return_info: also return ``{"n_examples", "n_tokens", "seconds"}``.
    threads: torch intra-op threads for the call (restored afterwards). On an otherwise idle
        2-core machine the default (2) is fastest (~0.06 s per 72-head, 128-token example);
        on a busy one ``threads=1`` avoids oversubscription (2 threads can be 3-8x slower).

    The diagonal is exactly 0; tiny negative values from float rounding are clipped to 0.

    Computation: per example, the smoothed maps are flattened to ``P (K, n*n)`` and, with
    ``A_i = sum p log p`` and ``X_ij = sum (p_i + p_j) log(p_i + p_j)``, the summed divergence
    is ``n log 2 - (X_ij - A_i - A_j) / 2`` (the identity ``JS = H(m) - (H(p) + H(q)) / 2``
    with ``m = (p + q) / 2``). Only ``X`` is pairwise: one broadcast add and one ``xlogy`` per
    pair chunk, in torch (float32 elementwise, float64 accumulation across examples), upper
    triangle only, with chunks of at most ``chunk_elems`` elements to bound memory.
    """
    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _js_matrix(examples, smoothing, kind, reduction, max_examples, chunk_elems,
                          dtype, progress, return_info)
    finally:
        torch.set_num_threads(old_threads)


def _js_matrix(examples, smoothing, kind, reduction, max_examples, chunk_elems, dtype,
               progress, return_info):
    if kind not in ("divergence", "distance"):
        raise ValueError(f"kind must be 'divergence' or 'distance', got {kind!r}")
    if reduction not in ("sum", "mean"):
        raise ValueError(f"reduction must be 'sum' or 'mean', got {reduction!r}")
    if smoothing < 0:
        raise ValueError("smoothing must be >= 0")
    t0 = time.perf_counter()
    total: np.ndarray | None = None
    shape = None
    n_tokens = 0
    n_examples = 0
    it = examples
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(examples, desc="JS distances")
    log2 = math.log(2.0)
    for item in it:
        if max_examples is not None and n_examples >= max_examples:
            break
        attn = _as_attn(item)
        if isinstance(attn, torch.Tensor):
            a = attn.detach().cpu()
        else:  # one copy per example (also makes read-only memmaps safe for torch)
            a = torch.from_numpy(np.array(attn, dtype=np.float64 if dtype == torch.float64
                                          else np.float32))
        if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
            raise ValueError(f"attn must be (layers, heads, n, n), got {tuple(a.shape)}")
        if shape is None:
            shape = tuple(a.shape[:2])
            K = shape[0] * shape[1]
            total = np.zeros((K, K), dtype=np.float64)
        elif tuple(a.shape[:2]) != shape:
            raise ValueError(f"inconsistent (layers, heads): {tuple(a.shape[:2])} vs {shape}")
        n = a.shape[-1]
        P = a.reshape(K, n, n).to(dtype)
        if smoothing:
            P = P + smoothing
        P = P / P.sum(-1, keepdim=True)
        P = P.reshape(K, n * n)
        # Not scipy.spatial.distance.jensenshannon, which gives the same numbers (squared;
        # tests/test_clustering.py) one head pair at a time, ~8x slower for 72 heads.
        A = torch.special.xlogy(P, P).sum(1).to(torch.float64)  # (K,)
        X = torch.zeros((K, K), dtype=torch.float64)
        step = max(1, chunk_elems // (n * n))
        for i in range(K - 1):
            pi = P[i]
            for j0 in range(i + 1, K, step):
                j1 = min(K, j0 + step)
                M = P[j0:j1] + pi
                X[i, j0:j1] = torch.special.xlogy(M, M).sum(1).to(torch.float64)
        js = n * log2 - 0.5 * (X - A[:, None] - A[None, :])
        js = torch.triu(js, diagonal=1)
        total += (js + js.T).numpy()
        n_tokens += n
        n_examples += 1
    if total is None:
        raise ValueError("no examples given")
    np.fill_diagonal(total, 0.0)
    np.clip(total, 0.0, None, out=total)
    if reduction == "mean":
        total /= n_tokens
    if kind == "distance":
        total = np.sqrt(total)
    if return_info:
        return total, {"n_examples": n_examples, "n_tokens": n_tokens,
                       "seconds": time.perf_counter() - t0}
    return total


def kruskal_stress(dist: np.ndarray, coords: np.ndarray) -> float:
    """Kruskal's stress-1: ``sqrt(sum (d_ij - ||x_i - x_j||)^2 / sum d_ij^2)`` over ``i < j``.
    Scale-free; about 0.05 good, 0.1 fair, 0.2 poor."""
    dist = np.asarray(dist, dtype=np.float64)
    iu = np.triu_indices(len(dist), 1)
    emb = np.sqrt(((coords[:, None, :] - coords[None, :, :]) ** 2).sum(-1))
    d = dist[iu]
    return float(np.sqrt(((d - emb[iu]) ** 2).sum() / (d ** 2).sum()))


def mds_embedding(dist: np.ndarray, seed: int = 0, *, n_components: int = 2, n_init: int = 4,
                  max_iter: int = 1000, init: str = "random") -> tuple[np.ndarray, float]:
    """Metric MDS (SMACOF) of a precomputed dissimilarity matrix.

    Returns ``(coords (K, n_components), stress)`` where ``stress`` is Kruskal's stress-1
    (:func:`kruskal_stress`, computed here so it does not depend on the scikit-learn
    version's ``normalized_stress`` conventions). ``n_init`` random starts are run with
    ``random_state=seed`` and the lowest-stress one is kept, so results are deterministic.
    The matrix is divided by its mean off-diagonal value before fitting and the coordinates
    are scaled back, so they are in the units of ``dist``.
    """
    from sklearn.manifold import MDS

    dist = np.asarray(dist, dtype=np.float64)
    if dist.ndim != 2 or dist.shape[0] != dist.shape[1]:
        raise ValueError(f"dist must be square, got {dist.shape}")
    if not np.allclose(dist, dist.T):
        raise ValueError("dist must be symmetric")
    K = len(dist)
    off = dist[~np.eye(K, dtype=bool)]
    scale = float(off.mean()) if K > 1 and off.mean() > 0 else 1.0
    d = dist / scale
    import inspect

    params = inspect.signature(MDS).parameters
    kw = dict(n_components=n_components, n_init=n_init, max_iter=max_iter,
              random_state=seed)
    if "metric_mds" in params:  # scikit-learn >= 1.8
        kw.update(metric_mds=True, metric="precomputed")
        if "init" in params:
            kw["init"] = init
    else:  # older API
        kw.update(metric=True, dissimilarity="precomputed")
    if "normalized_stress" in params:
        kw["normalized_stress"] = False
    coords = MDS(**kw).fit_transform(d) * scale
    return coords, kruskal_stress(dist, coords)


# --- behaviour labels ---------------------------------------------------------------------

#: Thresholds from the notes on Clark et al.'s Figure 6: entropy in nats, the others are the
#: head's average attention share.
DEFAULT_THRESHOLDS: dict[str, float] = {
    "entropy": 3.8, "prev": 0.5, "next": 0.5, "cls": 0.6, "sep": 0.6, "punct": 0.6,
}

_LABEL_NAMES = {
    "entropy": "broad", "prev": "previous token", "next": "next token", "cls": "[CLS]",
    "sep": "[SEP]", "punct": ". and ,",
}


def behaviour_labels(stats_df: pd.DataFrame, thresholds: Mapping[str, float] | None = None,
                     extra: Mapping | pd.Series | None = None, *, other: str = "other",
                     names: Mapping[str, str] | None = None) -> pd.Series:
    """One behaviour label per head from its summary statistics.

    stats_df: one row per head with columns ``layer, head`` and any of ``entropy`` (nats),
        ``prev, next, cls, sep, punct`` (average attention share). If an ``entropy_nats``
        column exists (as in ``maptypes.statistics_table``, whose ``entropy`` is normalised
        by ``log n``) the entropy rule reads it instead. Per-example statistics should be
        averaged per head first
        (``df.groupby(["layer", "head"], as_index=False).mean(numeric_only=True)``).
    thresholds: ``{column: threshold}``; a head gets the label of a column whose value is
        strictly above its threshold (defaults :data:`DEFAULT_THRESHOLDS`; pass a subset to
        use fewer rules). When several fire, the one with the largest ``value / threshold``
        wins.
    extra: labels from other analyses (syntax, coreference heads) that take precedence,
        either a mapping ``{(layer, head): label}`` or a Series indexed like ``stats_df``.
    names: display names per column (defaults: broad, previous token, next token, [CLS],
        [SEP], ". and ,"). Heads matching nothing get ``other``.

    Returns a Series (index of ``stats_df``, name ``"behaviour"``).
    """
    thr = dict(DEFAULT_THRESHOLDS if thresholds is None else thresholds)
    nm = {**_LABEL_NAMES, **(names or {})}
    cols = [c for c in thr if c in stats_df.columns]
    missing = [c for c in thr if c not in stats_df.columns]
    if thresholds is not None and missing:
        raise ValueError(f"stats_df lacks columns {missing}")
    ratio = np.full((len(stats_df), len(cols)), -np.inf)
    for j, c in enumerate(cols):
        src = "entropy_nats" if c == "entropy" and "entropy_nats" in stats_df.columns else c
        v = stats_df[src].to_numpy(dtype=float)
        ratio[:, j] = np.where(v > thr[c], v / thr[c] if thr[c] > 0 else np.inf, -np.inf)
    labels = np.full(len(stats_df), other, dtype=object)
    if cols:
        best = ratio.argmax(1)
        fired = ratio.max(1) > -np.inf
        labels[fired] = np.asarray([nm.get(c, c) for c in cols], dtype=object)[best[fired]]
    out = pd.Series(labels, index=stats_df.index, name="behaviour")
    if extra is not None:
        if isinstance(extra, pd.Series):
            ex = extra.reindex(stats_df.index)
            mask = ex.notna()
            out[mask] = ex[mask]
        else:
            keys = list(zip(stats_df["layer"].astype(int), stats_df["head"].astype(int),
                            strict=True))
            for idx, key in zip(stats_df.index, keys, strict=True):
                if key in extra:
                    out[idx] = extra[key]
    return out


# --- layer separation ---------------------------------------------------------------------

def _within_between(dist: np.ndarray, codes: np.ndarray, iu) -> tuple[float, float]:
    same = (codes[:, None] == codes[None, :])[iu]
    d = dist[iu]
    return float(d[same].mean()), float(d[~same].mean())


def format_p(p: float, n_perm: int) -> str:
    """A permutation p-value as text, with the number of permutations.

    At its floor ``1 / (n_perm + 1)`` (no permutation reached the observed statistic) the
    p-value is only bounded: ``p < 0.001`` for 1,000 permutations (the floor 0.000999
    rounded up to one significant digit), never ``p = 0.000999``. Otherwise two significant
    digits.

    >>> format_p(1 / 1001, 1000)
    'p < 0.001 (1000 permutations)'
    >>> format_p(0.2128, 1000)
    'p = 0.21 (1000 permutations)'
    """
    floor = 1.0 / (n_perm + 1)
    if p <= floor * (1 + 1e-9):
        digits = -math.floor(math.log10(floor))
        bound = math.ceil(floor * 10 ** digits) / 10 ** digits
        return f"p < {bound:g} ({n_perm} permutations)"
    return f"p = {p:.2g} ({n_perm} permutations)"


def layer_separation(dist: np.ndarray, layers: Sequence, n_perm: int = 1000,
                     seed: int = 0, *, return_null: bool = False) -> dict:
    """Are heads of the same layer closer to each other than to heads of other layers?

    Statistic: ``between - within``, the mean distance over pairs ``i < j`` in different
    layers minus the mean over pairs in the same layer (and the ratio ``within / between``,
    the ledger's statistic). Null: layer labels permuted across heads (group sizes kept),
    ``n_perm`` times with ``numpy.random.default_rng(seed)``. One-sided p-value ``(1 +
    #{null >= observed}) / (1 + n_perm)``. ``layers`` may be any labels (see
    :func:`behaviour_separation`).

    Returns ``within, between, ratio (within / between), diff, p_value, n_perm, null_mean,
    null_std`` (of the null ``diff``), ``null_ratio_mean, null_ratio_sd`` (of the null ratio:
    its sd is the test's standard error, for the minimum detectable effect) and, with
    ``return_null``, ``null_ratio``: the ``n_perm`` null ratios themselves.
    """
    dist = np.asarray(dist, dtype=np.float64)
    codes = np.unique(np.asarray(layers), return_inverse=True)[1].ravel()
    if len(codes) != len(dist):
        raise ValueError(f"{len(codes)} layer labels for a {dist.shape} matrix")
    iu = np.triu_indices(len(dist), 1)
    within, between = _within_between(dist, codes, iu)
    diff = between - within
    rng = np.random.default_rng(seed)
    null = np.empty(n_perm)
    ratio = np.empty(n_perm)
    for b in range(n_perm):
        w, bt = _within_between(dist, rng.permutation(codes), iu)
        null[b] = bt - w
        ratio[b] = w / bt
    p = (1 + int((null >= diff).sum())) / (1 + n_perm)
    out = {"within": within, "between": between, "ratio": within / between, "diff": diff,
           "p_value": p, "n_perm": n_perm,
           "null_mean": float(null.mean()) if n_perm else float("nan"),
           "null_std": float(null.std()) if n_perm else float("nan"),
           "null_ratio_mean": float(ratio.mean()) if n_perm else float("nan"),
           "null_ratio_sd": float(ratio.std()) if n_perm else float("nan")}
    if return_null:
        out["null_ratio"] = ratio
    return out


def behaviour_separation(dist: np.ndarray, labels: Sequence[str], n_perm: int = 1000,
                         seed: int = 0, *, other: str = "other", min_heads: int = 2,
                         return_null: bool = False) -> dict:
    """Do heads with the same behaviour sit together (Clark et al.'s "clusters of heads that
    behave similarly, often corresponding to behaviors we have already discussed")?

    :func:`layer_separation` with behaviour labels in place of layers, over the heads that
    have a behaviour (label not ``other``): the mean distance between heads of the same
    behaviour over that between heads of different behaviours, labels permuted across those
    heads. "Several clusters" needs at least two behaviours with ``min_heads`` heads or more;
    with fewer, the statistics are NaN and ``testable`` is False.

    Returns :func:`layer_separation`'s keys (over the labelled heads) and ``heads`` (how many
    heads have a behaviour), ``groups`` (behaviours with ``min_heads`` heads or more),
    ``labels`` (each behaviour and its head count, most heads first, as text) and
    ``testable``.

    >>> d = np.array([[0, 1, 5, 5, 9], [1, 0, 5, 5, 9], [5, 5, 0, 1, 9], [5, 5, 1, 0, 9],
    ...               [9, 9, 9, 9, 0]], dtype=float)
    >>> r = behaviour_separation(d, ["a", "a", "b", "b", "other"], n_perm=10)
    >>> r["heads"], r["groups"], r["labels"], round(r["ratio"], 3)
    (4, 2, 'a 2, b 2', 0.2)
    """
    lab = np.asarray(labels, dtype=object)
    dist = np.asarray(dist, dtype=np.float64)
    if len(lab) != len(dist):
        raise ValueError(f"{len(lab)} behaviour labels for a {dist.shape} matrix")
    keep = lab != other
    counts = pd.Series(lab[keep]).value_counts(sort=False)
    counts = counts.sort_values(ascending=False, kind="stable")
    groups = int((counts >= min_heads).sum())
    info = {"heads": int(keep.sum()), "groups": groups,
            "labels": ", ".join(f"{k} {v}" for k, v in counts.items()),
            "testable": groups >= 2}
    if groups < 2:
        nan = float("nan")
        res = {k: nan for k in ("within", "between", "ratio", "diff", "p_value", "null_mean",
                                "null_std", "null_ratio_mean", "null_ratio_sd")}
        res["n_perm"] = n_perm
        if return_null:
            res["null_ratio"] = np.full(n_perm, nan)
        return {**res, **info}
    idx = np.flatnonzero(keep)
    res = layer_separation(dist[np.ix_(idx, idx)], lab[idx].astype(str), n_perm=n_perm,
                           seed=seed, return_null=return_null)
    return {**res, **info}
