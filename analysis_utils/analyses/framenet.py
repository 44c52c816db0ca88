"""Heads that attend along FrameNet links (Kovaleva et al. 2019, Section 4.2, Figures 3-4).

For every kept sentence (:func:`analysis_utils.data.framenet.select_sentences`) the score of a
head is the largest attention weight between the target (the frame-evoking word) and the tokens
of its linked core frame elements; the figure averages it over sentences, per head.

Direction. The paper takes "the maximum absolute attention weight among those token pairs that
correspond to the annotated semantic link", with no direction: pairs are unordered, so the
default ``direction="both"`` takes the larger of ``attn[target, element]`` and
``attn[element, target]``. Its Figure 4 example reads one way ("high attention weight for *he*
while processing *agitated*", i.e. from the target to the element): ``"target_to_element"``
scores only the target's row, ``"element_to_target"`` only the elements' rows.

Maps. Rows are "from", columns "to". Word-level maps (``level="word"``, the package's
convention: :mod:`analysis_utils.engine.wordmaps`, attention TO a split word summed over its
pieces, FROM it averaged) or the model's word-piece maps (``level="piece"``: every piece of the
target against every piece of the elements, as BERT's own token pairs). :func:`link_positions`
aligns the NLTK tokens (the words fed to the tokenizer with ``is_split_into_words=True``) to
map positions through the fast tokenizer's ``word_ids``.

Everything but :func:`iter_links` is a pure function over arrays; ``layer``/``head`` columns
are 0-based and ``head_label`` is the papers' 1-based ``"layer-head"``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ..engine.attention import read_entry as _entry
from ..engine.wordmaps import EncodedWords, word_maps
from ..heads import head_label

DIRECTIONS = ("both", "target_to_element", "element_to_target")
LEVELS = ("word", "piece")
#: What the paper's text describes (unordered token pairs).
PAPER_DIRECTION = "both"


def _as_positions(x, name: str) -> np.ndarray:
    pos = np.atleast_1d(np.asarray(x, dtype=np.int64))
    if pos.ndim != 1 or pos.size == 0:
        raise ValueError(f"{name} must be a non-empty list of map positions, got {x!r}")
    return pos


def link_score(attn: np.ndarray, target_pos, element_pos, direction: str = "both") -> np.ndarray:
    """The score of every head for one sentence: ``(layers, heads)``.

    attn: ``(layers, heads, m, m)`` maps of the sentence (rows = from). target_pos,
    element_pos: map positions of the target and of the linked element tokens (ints or
    lists). The score is the largest ``attn[..., t, e]`` (``"target_to_element"``),
    ``attn[..., e, t]`` (``"element_to_target"``) or either (``"both"``) over ``t`` in
    ``target_pos`` and ``e`` in ``element_pos``.

    >>> a = np.zeros((1, 1, 3, 3)); a[0, 0, 2, 0] = 0.7; a[0, 0, 0, 2] = 0.2
    >>> link_score(a, 2, [0], "target_to_element"), link_score(a, 2, [0], "both")
    (array([[0.7]]), array([[0.7]]))
    >>> link_score(a, 2, [0], "element_to_target")
    array([[0.2]])
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    a = np.asarray(attn)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attn must be (layers, heads, m, m), got {a.shape}")
    t = _as_positions(target_pos, "target_pos")
    e = _as_positions(element_pos, "element_pos")
    m = a.shape[-1]
    if t.min() < 0 or e.min() < 0 or t.max() >= m or e.max() >= m:
        raise ValueError(f"positions {t.tolist()} / {e.tolist()} fall outside maps of size {m}")
    if np.intersect1d(t, e).size:
        raise ValueError(f"target and element positions overlap: {np.intersect1d(t, e).tolist()}")
    parts = []
    if direction in ("both", "target_to_element"):
        parts.append(a[:, :, t][:, :, :, e].reshape(*a.shape[:2], -1))
    if direction in ("both", "element_to_target"):
        parts.append(a[:, :, e][:, :, :, t].reshape(*a.shape[:2], -1))
    return np.concatenate(parts, axis=-1).max(axis=-1).astype(np.float64)


def sentence_scores(links: Iterable, direction: str = "both") -> np.ndarray:
    """Scores of every head for every sentence: ``(n_sentences, layers, heads)``.

    links: ``(attn, target_pos, element_pos)`` per sentence (what :func:`iter_links` yields).
    A sentence with no element position (``iter_links(..., unlinked=True)`` where no other
    word qualifies) scores NaN in every head.
    """
    out = [link_score(a, t, e, direction) if len(e) else np.full(np.shape(a)[:2], np.nan)
           for a, t, e in links]
    if not out:
        raise ValueError("no sentences to score")
    return np.stack(out)


def head_scores(per_sentence: np.ndarray) -> np.ndarray:
    """The Figure 3 heatmap: the mean score of each head over sentences, ``(layers, heads)``
    from ``(n_sentences, layers, heads)``."""
    s = np.asarray(per_sentence, dtype=np.float64)
    if s.ndim != 3 or not len(s):
        raise ValueError(f"per_sentence must be (n_sentences, layers, heads), got {s.shape}")
    return s.mean(axis=0)


def head_table(per_sentence: np.ndarray, n_sd: float = 2.0) -> pd.DataFrame:
    """One row per head, best first: ``layer``, ``head`` (0-based), ``head_label``, ``score``
    (mean over sentences), ``sd`` and ``sem`` over sentences, ``n_sentences``, ``rank``
    (1 = highest), ``z`` (the score in standard deviations of the head scores from their
    mean) and ``standout`` (``z > n_sd``)."""
    s = np.asarray(per_sentence, dtype=np.float64)
    mean = head_scores(s)
    n = s.shape[0]
    sd = s.std(axis=0, ddof=1) if n > 1 else np.full(mean.shape, np.nan)
    z = _z(mean)
    layers, heads = np.indices(mean.shape)
    df = pd.DataFrame({
        "layer": layers.ravel(), "head": heads.ravel(),
        "head_label": [head_label(la, h) for la, h in zip(layers.ravel(), heads.ravel(),
                                                          strict=True)],
        "score": mean.ravel(), "sd": sd.ravel(), "sem": sd.ravel() / np.sqrt(n),
        "n_sentences": n, "z": z.ravel()})
    df["standout"] = df["z"] > n_sd
    df = df.sort_values(["score", "layer", "head"], ascending=[False, True, True],
                        kind="stable").reset_index(drop=True)
    df.insert(3, "rank", np.arange(1, len(df) + 1))
    return df


def _z(scores: np.ndarray) -> np.ndarray:
    sd = scores.std(ddof=0)
    return (scores - scores.mean()) / sd if sd > 0 else np.zeros_like(scores)


def standout_heads(scores: np.ndarray, n_sd: float = 2.0, k: int | None = None) -> pd.DataFrame:
    """The heads that stand out in a ``(layers, heads)`` heatmap, best first.

    Without ``k``: the heads whose score exceeds the mean of all heads by more than ``n_sd``
    standard deviations (of the head scores; the paper saw 2 of 144 heads stand out). With
    ``k``: the ``k`` best heads, whatever their score. Columns: ``layer``, ``head``,
    ``head_label``, ``score``, ``z``.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 2:
        raise ValueError(f"scores must be (layers, heads), got {s.shape}")
    z = _z(s)
    layers, heads = np.indices(s.shape)
    df = pd.DataFrame({"layer": layers.ravel(), "head": heads.ravel(),
                       "head_label": [head_label(la, h) for la, h in
                                      zip(layers.ravel(), heads.ravel(), strict=True)],
                       "score": s.ravel(), "z": z.ravel()})
    df = df.sort_values(["score", "layer", "head"], ascending=[False, True, True],
                        kind="stable").reset_index(drop=True)
    return df.head(k) if k is not None else df[df["z"] > n_sd].reset_index(drop=True)


def compare_readings(scores: Mapping[str, np.ndarray], n_sd: float = 2.0) -> pd.DataFrame:
    """Heatmaps of several readings (e.g. ``{"exact": ..., "broad": ...}``) side by side: one
    row per head with each reading's ``score_<name>`` and ``standout_<name>``, and a
    ``spearman`` attribute (``df.attrs``) with the rank correlation of each pair of readings."""
    if not scores:
        raise ValueError("no readings to compare")
    first = next(iter(scores.values()))
    layers, heads = np.indices(np.asarray(first).shape)
    df = pd.DataFrame({"layer": layers.ravel(), "head": heads.ravel(),
                       "head_label": [head_label(la, h) for la, h in
                                      zip(layers.ravel(), heads.ravel(), strict=True)]})
    for name, s in scores.items():
        s = np.asarray(s, dtype=np.float64)
        if s.shape != layers.shape:
            raise ValueError(f"reading {name!r} has shape {s.shape}, expected {layers.shape}")
        df[f"score_{name}"] = s.ravel()
        df[f"standout_{name}"] = _z(s).ravel() > n_sd
    names = list(scores)
    df.attrs["spearman"] = {
        (a, b): float(df[f"score_{a}"].rank().corr(df[f"score_{b}"].rank()))
        for i, a in enumerate(names) for b in names[i + 1:]}
    return df


# --------------------------------------------------------------------------- alignment


def link_positions(sentence, enc: EncodedWords, level: str = "word") -> tuple[list[int], list[int]]:
    """Map positions of a :class:`~analysis_utils.data.framenet.LinkedSentence`'s target and
    linked element tokens, in the maps of its encoding ``enc`` (``encode_words(tokenizer,
    sentence.words)``).

    ``level="word"``: positions in the word-level map (``enc.word_pos``), one per NLTK token.
    ``level="piece"``: every word piece of those tokens (``enc.word_ids``), for piece maps.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    if enc.n_words != len(sentence.words):
        raise ValueError(f"the encoding has {enc.n_words} words, the sentence "
                         f"{len(sentence.words)}: they do not belong together")
    target, elements = [sentence.target], list(sentence.linked_tokens)
    if level == "word":
        return [int(enc.word_pos[i]) for i in target], [int(enc.word_pos[i]) for i in elements]
    pieces = {}
    for t, w in enumerate(enc.word_ids):
        if w is not None:
            pieces.setdefault(w, []).append(t)
    return ([p for i in target for p in pieces[i]], [p for i in elements for p in pieces[i]])


def unlinked_tokens(sentence, min_gap: int | None = None) -> list[int]:
    """The words of a sentence that its target is *not* linked to, as far from the target as
    the links must be: not the target, not a linked element's token, more than ``min_gap``
    words away (the filter's rule for the links, :data:`analysis_utils.data.framenet.MIN_GAP`),
    and not punctuation (a sink many heads attend to whatever the frame). The per-head null
    of the ledger's FrameNet test: a head that follows frame links attends more between the
    target and its elements than between the target and these words.

    >>> from types import SimpleNamespace as NS
    >>> s = NS(words=("He", "was", "becoming", "very", "agitated", "today", "."), target=4,
    ...        linked_tokens=(0,))
    >>> unlinked_tokens(s)
    [1]
    """
    if min_gap is None:
        from ..data.framenet import MIN_GAP as min_gap
    linked = set(sentence.linked_tokens)
    return [i for i, w in enumerate(sentence.words)
            if i != sentence.target and i not in linked and abs(i - sentence.target) > min_gap
            and not all(unicodedata.category(c).startswith("P") for c in w)]


def _positions(enc: EncodedWords, tokens: Sequence[int], level: str) -> list[int]:
    if level == "word":
        return [int(enc.word_pos[i]) for i in tokens]
    want = set(tokens)
    return [t for t, w in enumerate(enc.word_ids) if w is not None and w in want]


def iter_links(sentences: Sequence, store, encoded: Sequence[EncodedWords], level: str = "word",
               unlinked: bool = False):
    """``(attn, target_pos, element_pos)`` per sentence, the input of :func:`sentence_scores`,
    read one sentence at a time from an AttentionStore (or any sequence of piece-level maps)
    extracted from ``[e.as_input() for e in encoded]``; ``encoded[i]`` belongs to
    ``sentences[i]``. ``unlinked=True``: the positions of :func:`unlinked_tokens` in place of
    the linked elements' (possibly none), for the per-head null."""
    if not len(sentences) == len(encoded) == len(store):
        raise ValueError(f"{len(sentences)} sentences, {len(encoded)} encodings and "
                         f"{len(store)} stored maps: they must match one to one")
    for i, (s, enc) in enumerate(zip(sentences, encoded, strict=True)):
        attn = _entry(store, i)
        if level == "word":
            attn = word_maps(attn, enc).attn
        target, elements = link_positions(s, enc, level)
        if unlinked:
            elements = _positions(enc, unlinked_tokens(s), level)
        yield attn, target, elements


def map_labels(enc: EncodedWords, words: Sequence[str], tokenizer=None) -> list[str]:
    """A label for every position of a word-level map: the word, or for a special position
    its token (``[CLS]``, ``[SEP]``; ``[SPECIAL]`` without a tokenizer)."""
    labels = ["[SPECIAL]"] * enc.n_positions
    for t, w in enumerate(enc.word_ids):
        pos = int(enc.tok2word[t])
        if w is None:
            if tokenizer is not None:
                labels[pos] = tokenizer.convert_ids_to_tokens(enc.input_ids[t])
        else:
            labels[pos] = words[w]
    return labels


def example_map(attn: np.ndarray, labels: Sequence[str], layer: int, head: int) -> pd.DataFrame:
    """One head's ``(m, m)`` map of one sentence as a DataFrame (rows attend to columns),
    labelled with ``labels`` (:func:`map_labels`): the data of a Figure 4 panel.
    ``layer``/``head`` are 0-based."""
    a = np.asarray(attn)[layer, head]
    if len(labels) != a.shape[-1]:
        raise ValueError(f"{len(labels)} labels for a map of size {a.shape[-1]}")
    return pd.DataFrame(a, index=list(labels), columns=list(labels))
