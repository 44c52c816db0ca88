"""GloVe 6B 50d lookup: known rows, lowercasing, OOV handling."""

from __future__ import annotations

import numpy as np
import pytest

from analysis_utils.data.glove import GloVe, load_glove


@pytest.fixture(scope="module")
def glove():
    return load_glove()


def test_known_words(glove):
    assert len(glove) == 400_000 and glove.dim == 50
    assert glove.row("the") == 0 and glove.row(",") == 1 and glove.row(".") == 2
    v = glove.vector("the")
    assert v.dtype == np.float32 and v.shape == (50,)
    np.testing.assert_allclose(v[:3], [0.418, 0.24968, -0.41242], rtol=1e-5)
    np.testing.assert_array_equal(glove.vector("The"), v)  # lowercased lookup
    assert "n't" in glove and "'s" in glove  # PTB/UD contraction pieces are in vocabulary


def test_matrix_and_oov(glove):
    words = ["The", "cat", "qwzxkqj-not-a-word", "sat"]
    m = glove.matrix(words)
    assert m.shape == (4, 50) and m.dtype == np.float32
    np.testing.assert_array_equal(m[0], glove.vector("the"))
    np.testing.assert_array_equal(m[2], np.zeros(50, dtype=np.float32))
    np.testing.assert_array_equal(glove.oov_mask(words), [False, False, True, False])
    assert glove.row("qwzxkqj-not-a-word") == -1
    assert glove.oov_rate(words) == pytest.approx(0.25)
    assert glove.oov_rate([]) == 0.0
    assert glove.matrix([]).shape == (0, 50)


def test_small_table():
    g = GloVe(["a", "b"], np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(g.matrix(["B", "zz", "a"]),
                                  [[3, 4, 5], [0, 0, 0], [0, 1, 2]])
    with pytest.raises(ValueError):
        GloVe(["a"], np.zeros((2, 3), dtype=np.float32))
