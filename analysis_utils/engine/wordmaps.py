"""Pre-tokenised text -> model inputs -> word-level attention maps (Clark et al. Section 4).

The gold corpora come already split into (syntactic) words. Each word list is encoded with
the model's own tokenizer as ``tokenizer(words, is_split_into_words=True, truncation=False)``,
so the model's own special tokens ([CLS]/[SEP] for BERT, <s>/</s> for MPNet) are placed by
the tokenizer, and
``word_ids()`` tells which word every piece belongs to. Maps are extracted at the piece level
(:func:`analysis_utils.engine.attention.extract_attention`) and converted to word level on the fly
(the operation of :func:`analysis_utils.engine.attention.word_level`, computed by
:func:`word_level_contiguous`: attention TO a split word is summed over its pieces, FROM it
averaged, so rows still sum to 1). Special tokens stay in the word-level map
as words of their own.

Word-level map layout (what ``syntax.score_heads`` and ``coref.antecedent_accuracy`` take):
``attn: (layers, heads, m, m)`` with ``m = n_words + n_special``; ``is_special: (m,)`` marks
the special-token positions; ``word_pos: (n_words,)`` gives the map position of each input
word, in order (for BERT: ``word_pos = [1, ..., n_words]``).

Handling of awkward inputs (every case is counted by :func:`encode_corpus`, never silent):

- **Too long.** An input of more pieces than ``max_length`` (default: the smaller of the
  tokenizer's ``model_max_length`` and the model's position embeddings) is *dropped*, as in
  the authors' released code: truncating a sentence would cut its tree. The count and the
  dropped indices are in the report.
- **Words with no piece.** BERT's tokenizer deletes some characters (control and format
  characters, e.g. a lone zero-width space), which would leave a word with no piece and no
  place in the map. Such words are replaced by the tokenizer's unknown token and counted.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from . import attention
from .attention import ModelInput, token_to_word_index


@dataclass(frozen=True)
class WordMaps:
    """Word-level maps of one sentence: ``attn (layers, heads, m, m)``, ``is_special (m,)``,
    ``word_pos (n_words,)``."""

    attn: np.ndarray
    is_special: np.ndarray
    word_pos: np.ndarray


def unpack_word_maps(item, what: str = "item") -> tuple[object, np.ndarray, np.ndarray, np.ndarray]:
    """``(what, attn, is_special, word_pos)`` from ``(what, attn, is_special, word_pos)`` or
    ``(what, maps)`` with ``maps`` a :class:`WordMaps` or a dict with those keys; ``what`` is
    the sentence or window the maps belong to (its name is used in the error message)."""
    if len(item) == 4:
        w, a, sp, wp = item
    elif len(item) == 2:
        w, maps = item
        get = maps.get if isinstance(maps, dict) else lambda k: getattr(maps, k)
        a, sp, wp = get("attn"), get("is_special"), get("word_pos")
    else:
        raise ValueError(f"each item must be ({what}, attn, is_special, word_pos) or "
                         f"({what}, maps)")
    return w, np.asarray(a), np.asarray(sp, dtype=bool), np.asarray(wp, dtype=np.int64)


@dataclass(frozen=True)
class EncodedWords:
    """One pre-tokenised input encoded by the model's tokenizer.

    ``input_ids``/``token_type_ids``: ``(n_tokens,)`` including special tokens.
    ``word_ids``: per token, the input word it belongs to, ``None`` for special tokens.
    ``tok2word``: ``(n_tokens,)`` map position of every token (special tokens own one each).
    ``word_pos``: ``(n_words,)`` map position of every input word. ``is_special``: ``(m,)``.
    ``unk_words``: indices of words replaced by the unknown token (they had no piece).
    """

    input_ids: tuple[int, ...]
    token_type_ids: tuple[int, ...] | None
    word_ids: tuple[int | None, ...]
    tok2word: np.ndarray
    word_pos: np.ndarray
    is_special: np.ndarray
    unk_words: tuple[int, ...] = ()

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def n_words(self) -> int:
        return len(self.word_pos)

    @property
    def n_positions(self) -> int:
        """m, the size of the word-level map."""
        return len(self.is_special)

    def as_input(self) -> ModelInput:
        return ModelInput(self.input_ids, self.token_type_ids)


def max_input_length(tokenizer, model=None) -> int:
    """The longest input the model takes: ``tokenizer.model_max_length`` capped by the
    positions the model can embed when a model is given
    (:func:`~analysis_utils.engine.attention.max_positions`)."""
    limit = int(getattr(tokenizer, "model_max_length", 512) or 512)
    if limit > 100_000:  # transformers' "no limit" sentinel
        limit = 512
    pos = attention.max_positions(model) if model is not None else None
    return min(limit, int(pos)) if pos else limit


def _encode(tokenizer, words: Sequence[str]):
    enc = tokenizer(list(words), is_split_into_words=True, truncation=False,
                    add_special_tokens=True)
    return enc, enc.word_ids()


def encode_words(tokenizer, words: Sequence[str]) -> EncodedWords:
    """Encode one list of words; see the module docstring for the output layout.

    >>> enc = encode_words(tok, ["The", "unbelievable", "cat"])  # doctest: +SKIP
    >>> enc.word_pos, enc.is_special                              # doctest: +SKIP
    (array([1, 2, 3]), array([ True, False, False, False,  True]))
    """
    words = list(words)
    if not words:
        raise ValueError("encode_words got an empty word list")
    enc, wids = _encode(tokenizer, words)
    missing = sorted(set(range(len(words))) - {w for w in wids if w is not None})
    if missing:
        unk = tokenizer.unk_token
        if unk is None:
            raise ValueError(f"words {missing} produce no word piece and the tokenizer has "
                             "no unknown token to stand in for them")
        words = [unk if i in missing else w for i, w in enumerate(words)]
        enc, wids = _encode(tokenizer, words)
        still = sorted(set(range(len(words))) - {w for w in wids if w is not None})
        if still:
            raise ValueError(f"words {still} produce no word piece even as {unk!r}")
    tok2word = token_to_word_index(wids)
    m = int(tok2word.max()) + 1
    is_special = np.zeros(m, dtype=bool)
    word_pos = np.full(len(words), -1, dtype=np.int64)
    for t, w in enumerate(wids):
        if w is None:
            is_special[tok2word[t]] = True
        elif word_pos[w] < 0:
            word_pos[w] = tok2word[t]
    tt = enc.get("token_type_ids")
    return EncodedWords(
        input_ids=tuple(int(i) for i in enc["input_ids"]),
        token_type_ids=None if tt is None else tuple(int(t) for t in tt),
        word_ids=tuple(wids), tok2word=tok2word, word_pos=word_pos, is_special=is_special,
        unk_words=tuple(missing))


def piece_counts(tokenizer, words: Sequence[str], chunk: int = 256) -> list[int]:
    """Number of word pieces of each word (for windowing). Pre-split words are tokenised
    independently of each other, so long documents are encoded in chunks of ``chunk``
    words (no over-length warning). A word with no piece counts 1 (it will be replaced by
    the unknown token)."""
    words = list(words)
    counts = np.zeros(len(words), dtype=np.int64)
    for start in range(0, len(words), chunk):
        _, wids = _encode(tokenizer, words[start:start + chunk])
        for w in wids:
            if w is not None:
                counts[start + w] += 1
    return [int(c) if c else 1 for c in counts]


def n_special_tokens(tokenizer) -> int:
    """How many special tokens the tokenizer adds to a single input ([CLS] + [SEP] = 2 for
    BERT, <s> + </s> = 2 for MPNet; a pair gets 3 and 4)."""
    return int(tokenizer.num_special_tokens_to_add(pair=False))


def segment_ids(input_ids: Sequence[int], sep_id: int) -> np.ndarray:
    """Segment of every token of an encoded input, from where the tokenizer put its
    separators (``sep_id``: ``tokenizer.sep_token_id``), for models whose tokenizer gives no
    token-type ids (MPNet, RoBERTa: all 0 even for a pair).

    A separator closes its segment; one right after another opens the next, so
    ``<s> A </s></s> B </s>`` -> ``0 0.. 0 1 1.. 1`` and ``[CLS] A [SEP] B [SEP]`` ->
    ``0 0.. 0 1.. 1``, BERT's own token types. Returns ``(n_tokens,)`` int64.

    >>> segment_ids([0, 7, 2, 2, 8, 2], sep_id=2).tolist()
    [0, 0, 0, 1, 1, 1]
    """
    ids = np.asarray(input_ids).ravel()
    is_sep = ids == sep_id
    closes = is_sep & ~np.r_[False, is_sep[:-1]]
    return np.r_[0, np.cumsum(closes)[:-1]].astype(np.int64)


@dataclass
class EncodedCorpus:
    """Encoded inputs that fit the model, and what was left out.

    ``kept``: indices (into the given word lists) of the encoded inputs, in order;
    ``encoded[k]`` belongs to ``kept[k]``. ``dropped``: indices of inputs longer than
    ``max_length`` pieces. ``report``: counts for the notebook."""

    encoded: list[EncodedWords]
    kept: list[int]
    dropped: list[int]
    max_length: int
    report: dict

    def __len__(self) -> int:
        return len(self.encoded)

    def inputs(self) -> list[ModelInput]:
        return [e.as_input() for e in self.encoded]


def encode_corpus(tokenizer, word_lists: Iterable[Sequence[str]],
                  max_length: int | None = None) -> EncodedCorpus:
    """Encode every word list; drop (and count) those longer than ``max_length`` pieces.

    Returns an :class:`EncodedCorpus` whose ``report`` holds ``inputs``, ``kept``,
    ``dropped_too_long``, ``longest_pieces``, ``max_length``, ``words``,
    ``words_split`` (words of several pieces) and ``words_replaced_by_unk``."""
    max_length = int(max_length or max_input_length(tokenizer))
    encoded, kept, dropped = [], [], []
    n_words = n_split = n_unk = longest = 0
    for i, words in enumerate(word_lists):
        e = encode_words(tokenizer, words)
        longest = max(longest, len(e))
        if len(e) > max_length:
            dropped.append(i)
            continue
        encoded.append(e)
        kept.append(i)
        n_words += e.n_words
        n_split += int((np.bincount(e.tok2word, minlength=e.n_positions)[e.word_pos] > 1).sum())
        n_unk += len(e.unk_words)
    report = {"inputs": len(kept) + len(dropped), "kept": len(kept),
              "dropped_too_long": len(dropped), "max_length": max_length,
              "longest_pieces": longest, "words": n_words, "words_split": n_split,
              "words_replaced_by_unk": n_unk}
    return EncodedCorpus(encoded, kept, dropped, max_length, report)


def word_level_contiguous(attn: np.ndarray, tok2word: np.ndarray) -> np.ndarray:
    """Token maps -> word maps; see :func:`analysis_utils.engine.attention.word_level`."""
    return attention.word_level(attn, tok2word)


def word_maps(token_attn: np.ndarray, enc: EncodedWords) -> WordMaps:
    """Token-level maps ``(layers, heads, n_tokens, n_tokens)`` of one input -> its
    :class:`WordMaps` (float32 ``(layers, heads, m, m)``)."""
    token_attn = np.asarray(token_attn)
    if token_attn.shape[-1] != len(enc):
        raise ValueError(f"maps have {token_attn.shape[-1]} tokens, the encoding "
                         f"{len(enc)}: store and encoding do not belong together")
    return WordMaps(attn=word_level_contiguous(token_attn, enc.tok2word), is_special=enc.is_special,
                    word_pos=enc.word_pos)


def iter_word_maps(store, encoded: Sequence[EncodedWords]) -> Iterator[WordMaps]:
    """Stream word-level maps, one input at a time, from an AttentionStore (or any sequence
    of token-level maps) extracted from ``[e.as_input() for e in encoded]``. Only one
    input's maps are in memory at once."""
    if len(store) != len(encoded):
        raise ValueError(f"store has {len(store)} inputs, encoding {len(encoded)}")
    for attn, enc in zip(store, encoded, strict=True):  # a store iterates by positioned reads
        yield word_maps(attn, enc)


def with_items(items: Sequence, store, encoded: Sequence[EncodedWords]) -> Iterator[tuple]:
    """``(item, WordMaps)`` pairs, the input format of ``syntax.score_heads`` and
    ``coref.antecedent_accuracy`` (``item``: a Sentence or a CorefWindow)."""
    if len(items) != len(encoded):
        raise ValueError(f"{len(items)} items for {len(encoded)} encoded inputs")
    return zip(items, iter_word_maps(store, encoded), strict=True)
