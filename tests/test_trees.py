"""Chu-Liu/Edmonds decoder: valid trees on random scores, exact optimum against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from analysis_utils.analyses.trees import chu_liu_edmonds, is_tree, tree_score


def _all_trees(n: int, single_root: bool):
    choices = [[h for h in range(n + 1) if h != i] for i in range(1, n + 1)]
    for heads in itertools.product(*choices):
        heads = np.asarray(heads)
        if is_tree(heads, single_root=single_root):
            yield heads


def test_is_tree_hand_cases():
    assert is_tree(np.array([2, 0, 2]), single_root=True)
    assert not is_tree(np.array([2, 1, 0]))  # 1 <-> 2 cycle
    assert not is_tree(np.array([1, 0]))  # self-loop
    assert not is_tree(np.array([0, 0]), single_root=True)
    assert is_tree(np.array([0, 0]), single_root=False)
    assert not is_tree(np.array([2, 3, 1]))  # no root at all
    assert not is_tree(np.array([4, 0, 1]))  # out of range


@pytest.mark.parametrize("single_root", [True, False])
def test_exact_optimum_against_brute_force(single_root):
    rng = np.random.default_rng(0)
    trees = {n: np.stack(list(_all_trees(n, single_root))) for n in range(1, 6)}
    assert len(trees[4]) == (125 if not single_root else 64)  # (n+1)^(n-1); n^(n-1) single-root
    for trial in range(150):
        n = 1 + trial % 5
        scores = rng.normal(size=(n + 1, n + 1))
        if trial % 3 == 0:  # integer scores make ties likely: check the optimal VALUE
            scores = rng.integers(-3, 4, size=(n + 1, n + 1)).astype(float)
        heads = chu_liu_edmonds(scores, single_root=single_root)
        assert is_tree(heads, single_root=single_root)
        deps = np.arange(1, n + 1)
        best = scores[deps, trees[n]].sum(axis=1).max()
        assert tree_score(scores, heads) == pytest.approx(best, abs=1e-9)


def test_random_scores_give_valid_single_root_trees():
    rng = np.random.default_rng(1)
    for trial in range(300):
        n = int(rng.integers(1, 60))
        scores = rng.normal(size=(n + 1, n + 1)) * (1 + trial % 7)
        if trial % 4 == 0:  # log-probability-like input with -inf entries
            scores[rng.random(scores.shape) < 0.3] = -np.inf
        if trial % 5 == 0:  # ROOT strongly preferred by every word
            scores[:, 0] += 50
        heads = chu_liu_edmonds(scores)
        assert heads.shape == (n,)
        assert is_tree(heads, single_root=True), (trial, heads)


def test_follows_clear_tree_and_avoids_forbidden_edges():
    n = 6
    gold = np.array([2, 0, 2, 5, 3, 5])
    scores = np.full((n + 1, n + 1), -np.inf)
    scores[np.arange(1, n + 1), gold] = 0.0
    scores[1:, 1:] = np.where(np.isfinite(scores[1:, 1:]), scores[1:, 1:], -5.0)
    np.testing.assert_array_equal(chu_liu_edmonds(scores), gold)
    # A tempting 2-cycle (1 <-> 2) must be broken.
    s = np.zeros((4, 4))
    s[1, 2] = s[2, 1] = 10
    s[3, 0] = 1
    heads = chu_liu_edmonds(s)
    assert is_tree(heads, single_root=True)


def test_empty_and_single_word():
    assert chu_liu_edmonds(np.zeros((1, 1))).shape == (0,)
    np.testing.assert_array_equal(chu_liu_edmonds(np.zeros((2, 2))), [0])


def _networkx_heads(scores, single_root):
    """Reference decoder: networkx's maximum spanning arborescence (edges head -> dependent;
    ROOT has no incoming edge, so it is the root). Single root: the best over every choice of
    the one ROOT edge."""
    import networkx as nx

    n = len(scores) - 1
    best, best_score = None, -np.inf
    for only in range(1, n + 1) if single_root else [None]:
        graph = nx.DiGraph()
        graph.add_weighted_edges_from(
            (h, d, scores[d, h]) for d in range(1, n + 1) for h in range(n + 1)
            if h != d and (only is None or h != 0 or d == only))
        heads = np.zeros(n, dtype=np.int64)
        for h, d in nx.maximum_spanning_arborescence(graph).edges:
            heads[d - 1] = h
        if tree_score(scores, heads) > best_score:
            best, best_score = heads, tree_score(scores, heads)
    return best


@pytest.mark.parametrize("single_root", [True, False])
def test_same_trees_as_networkx_on_larger_graphs(single_root):
    """Beyond brute force (n <= 5): networkx on n up to 20 (continuous scores, so the optimum
    is unique and the trees themselves must agree)."""
    rng = np.random.default_rng(2)
    for _ in range(30):
        n = int(rng.integers(6, 21))
        scores = rng.normal(size=(n + 1, n + 1))
        np.testing.assert_array_equal(chu_liu_edmonds(scores, single_root=single_root),
                                      _networkx_heads(scores, single_root))
