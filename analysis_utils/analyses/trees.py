"""Maximum spanning arborescence (Chu-Liu/Edmonds) for dependency decoding, pure numpy: the
single-root tree decoding of the Section 5 probes (Clark et al. 2019). Conventions and the
single-root constraint: :func:`chu_liu_edmonds`.
"""

from __future__ import annotations

import numpy as np


def _find_cycle(heads: np.ndarray) -> np.ndarray | None:
    """A cycle of the head graph (node 0 has head -1), as an array of nodes, or None."""
    n = heads.shape[0]
    state = np.zeros(n, dtype=np.int8)  # 0 new, 1 on current path, 2 done
    state[0] = 2
    for start in range(1, n):
        if state[start]:
            continue
        path = []
        v = start
        while state[v] == 0:
            state[v] = 1
            path.append(v)
            v = int(heads[v])
        if state[v] == 1:  # came back onto the current path: v starts a cycle
            cycle = path[path.index(v):]
            for u in path:
                state[u] = 2
            return np.asarray(cycle, dtype=np.int64)
        for u in path:
            state[u] = 2
    return None


def _cle(scores: np.ndarray) -> np.ndarray:
    """Unconstrained maximum arborescence rooted at 0; ``scores[dep, head]``, diagonal and row 0
    already -inf, every other entry finite. Returns (N,) heads with heads[0] = -1."""
    size = scores.shape[0]
    heads = scores.argmax(axis=1)
    heads[0] = -1
    cycle = _find_cycle(heads)
    if cycle is None:
        return heads

    in_cycle = np.zeros(size, dtype=bool)
    in_cycle[cycle] = True
    outside = np.flatnonzero(~in_cycle)  # starts with 0: ROOT is never on a cycle
    n_out = outside.shape[0]
    c = n_out  # index of the contracted node in the smaller graph
    small = np.full((n_out + 1, n_out + 1), -np.inf)
    small[:n_out, :n_out] = scores[np.ix_(outside, outside)]
    # Outside dependent <- cycle head: best cycle node as head.
    out_from_cycle = scores[np.ix_(outside, cycle)]
    best_head_in_cycle = out_from_cycle.argmax(axis=1)
    small[:n_out, c] = out_from_cycle.max(axis=1)
    # Cycle <- outside head: enter at the cycle node d that loses least by dropping its
    # cycle edge: score(d, h) - score(d, heads[d]).
    into_cycle = scores[np.ix_(cycle, outside)] - scores[cycle, heads[cycle]][:, None]
    best_entry = into_cycle.argmax(axis=0)
    small[c, :n_out] = into_cycle.max(axis=0)
    small[0, :] = -np.inf
    small[c, c] = -np.inf

    small_heads = _cle(small)

    result = heads.copy()
    for k in range(1, n_out):
        h = small_heads[k]
        result[outside[k]] = cycle[best_head_in_cycle[k]] if h == c else outside[h]
    h = small_heads[c]
    result[cycle[best_entry[h]]] = outside[h]
    return result


def chu_liu_edmonds(scores: np.ndarray, single_root: bool = True) -> np.ndarray:
    """Maximum spanning tree rooted at ROOT (node 0).

    ``scores``: (n + 1, n + 1), ``scores[dep, head]``: row = dependent, column = candidate
    head, node 0 = ROOT (the layout of a probe's ``(n, n + 1)`` output with a dummy row 0 on
    top; row 0 and the diagonal are ignored). Returns ``heads`` (n,) int64, 1-based with
    0 = ROOT, i.e. ``heads[i - 1]`` is the head of word ``i``.

    Single root: with ``single_root=True`` (default, the Universal Dependencies constraint)
    exactly one word is attached to ROOT. It is solved exactly by one call of the
    unconstrained algorithm on shifted scores: every ROOT edge is lowered by
    ``M > n * (max - min)`` of the finite scores. Every tree has at least one ROOT edge, so a
    tree with k ROOT edges loses ``k * M``; any single-root tree then beats every multi-root
    tree, and among single-root trees the ranking is unchanged. ``single_root=False`` gives
    the unconstrained optimum (several words may hang from ROOT).

    Non-finite scores (``-inf`` log-probabilities, ``nan``) are treated as forbidden-ish: they
    are replaced by a value below every finite score, so they are used only if no tree avoids
    them. Ties are broken towards the lower head index (``argmax``), so the result is
    deterministic.

    Not networkx's ``maximum_spanning_arborescence``: the same trees (tests/test_trees.py),
    about 100x faster, with the single-root constraint and non-finite scores handled.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] != scores.shape[1]:
        raise ValueError(f"scores must be (n + 1, n + 1), got {scores.shape}")
    size = scores.shape[0]
    n = size - 1
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    s = scores.copy()
    s[0, :] = 0.0
    np.fill_diagonal(s, 0.0)
    finite = np.isfinite(s)
    span = 1.0
    if not finite.all():
        lo = s[finite].min() if finite.any() else 0.0
        hi = s[finite].max() if finite.any() else 0.0
        span = hi - lo + 1.0
        s[~finite] = lo - size * span  # below every finite tree score
    if single_root and n > 1:
        body = s[1:, :]
        penalty = size * (body.max() - body.min() + 1.0)
        s[1:, 0] -= penalty
    s[0, :] = -np.inf
    np.fill_diagonal(s, -np.inf)
    heads = _cle(s)
    return heads[1:].astype(np.int64)


def is_tree(heads: np.ndarray, single_root: bool = False) -> bool:
    """True when ``heads`` (n,), 1-based with 0 = ROOT, is a tree: every word reaches ROOT
    without a cycle, no self-loop, indices in range; with ``single_root`` exactly one word
    hangs from ROOT."""
    heads = np.asarray(heads)
    n = heads.shape[0]
    if n == 0:
        return True
    if heads.min() < 0 or heads.max() > n:
        return False
    if np.any(heads == np.arange(1, n + 1)):
        return False
    if single_root and int((heads == 0).sum()) != 1:
        return False
    if int((heads == 0).sum()) == 0:
        return False
    full = np.concatenate([[-1], heads])
    return _find_cycle(full) is None


def tree_score(scores: np.ndarray, heads: np.ndarray) -> float:
    """Sum of ``scores[dep, head]`` over the tree's edges (same layout as above)."""
    heads = np.asarray(heads)
    deps = np.arange(1, heads.shape[0] + 1)
    return float(np.asarray(scores, dtype=np.float64)[deps, heads].sum())
