"""Attention heads as antecedent selectors (Clark et al. 2019, Section 4.3, Table 2): cutting
documents into model-sized windows, scoring every head and the paper's baselines, Table 2.
Pure functions: no model is run here. Mention head words, antecedents, predictions and the
decisions the paper leaves open: notebook 03, "Accuracy of every head, and the baselines".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..data.ontogum import CorefDocument, Mention
from ..engine.wordmaps import unpack_word_maps
from ..heads import head_label
from ..papers import CLARK_TABLE2

SYSTEMS = ("nearest", "head_match", "head_match_fallback", "rule_based")

# --- windows --------------------------------------------------------------------------------

@dataclass(frozen=True)
class CorefWindow:
    """A model input cut from a document: words ``word_start..word_end-1`` (doc-level).

    ``mentions`` are those lying fully inside (doc-level indices; ``local(i)`` converts).
    ``dropped_mentions``: mentions starting in this window but ending after it.
    ``split_sentence``: the window is a piece of a sentence too long for one window."""

    doc_id: str
    index: int
    sent_start: int
    sent_end: int  # exclusive; sentences touched are sent_start..sent_end-1
    word_start: int
    word_end: int  # exclusive
    words: tuple[str, ...]
    pieces: tuple[int, ...]
    mentions: tuple[Mention, ...]
    dropped_mentions: int = 0
    split_sentence: bool = False

    def local(self, i: int) -> int:
        return i - self.word_start

    @property
    def n_pieces(self) -> int:
        return int(sum(self.pieces))


def windows(doc: CorefDocument, tokenizer_len_fn: Callable[[Sequence[str]], Sequence[int]],
            max_pieces: int = 128, n_special: int = 2, whole_sentences: bool = True,
            first_only: bool = False) -> list[CorefWindow]:
    """Cut ``doc`` into consecutive windows of at most ``max_pieces`` word pieces, counting
    ``n_special`` special tokens ([CLS], [SEP]).

    ``tokenizer_len_fn(words) -> piece count per word``. With ``whole_sentences`` windows
    hold whole sentences, greedily packed; a sentence longer than the budget on its own is
    cut at word boundaries into consecutive windows (``split_sentence=True``). Without it,
    words are packed greedily regardless of sentences. ``first_only`` keeps only the first
    window (the paper's truncation: ``first_only=True, whole_sentences=False``). Mentions
    crossing a window edge are dropped and counted on the window where they start; a single
    word longer than the budget raises ValueError."""
    budget = max_pieces - n_special
    if budget <= 0:
        raise ValueError("max_pieces must exceed n_special")
    pieces = [int(p) for p in tokenizer_len_fn(list(doc.words))]
    if len(pieces) != len(doc.words):
        raise ValueError(f"tokenizer_len_fn returned {len(pieces)} counts for "
                         f"{len(doc.words)} words")
    if any(p < 0 for p in pieces):
        raise ValueError("negative piece count")
    for i, p in enumerate(pieces):
        if p > budget:
            raise ValueError(f"document {doc.doc_id}: word {i} ({doc.words[i]!r}) alone has "
                             f"{p} pieces, more than the budget {budget}")
    sent_of = np.concatenate([np.full(len(s), k) for k, s in enumerate(doc.sentences)])
    spans: list[tuple[int, int, bool]] = []  # (start, end excl, split_sentence)

    def pack(units: list[tuple[int, int]], split: bool):
        cur_s = cur_e = None
        cur_p = 0
        for s, e in units:
            p = sum(pieces[s:e])
            if cur_s is not None and cur_p + p > budget:
                spans.append((cur_s, cur_e, split))
                cur_s = None
            if cur_s is None:
                cur_s, cur_p = s, 0
            cur_e, cur_p = e, cur_p + p
        if cur_s is not None:
            spans.append((cur_s, cur_e, split))

    if whole_sentences:
        pending: list[tuple[int, int]] = []
        for s in doc.sentences:
            if sum(pieces[s.start:s.start + len(s)]) > budget:
                pack(pending, False)
                pending = []
                pack([(i, i + 1) for i in range(s.start, s.start + len(s))], True)
            else:
                pending.append((s.start, s.start + len(s)))
        pack(pending, False)
    else:
        pack([(i, i + 1) for i in range(len(doc.words))], False)
    if first_only:
        spans = spans[:1]
    out = []
    for k, (s, e, split) in enumerate(spans):
        inside = tuple(m for m in doc.mentions if s <= m.start and m.end < e)
        dropped = sum(1 for m in doc.mentions if s <= m.start < e <= m.end)
        out.append(CorefWindow(
            doc_id=doc.doc_id, index=k, sent_start=int(sent_of[s]),
            sent_end=int(sent_of[e - 1]) + 1, word_start=s, word_end=e,
            words=doc.words[s:e], pieces=tuple(pieces[s:e]), mentions=inside,
            dropped_mentions=dropped, split_sentence=split))
    return out


def windowing_summary(docs: Sequence[CorefDocument],
                      wins: Sequence[CorefWindow]) -> dict[str, int]:
    """Counts to report: documents, windows, mentions kept / dropped at edges / left out
    (outside every window, e.g. with ``first_only``), evaluable mentions."""
    n_mentions = sum(len(d.mentions) for d in docs)
    kept = sum(len(w.mentions) for w in wins)
    dropped = sum(w.dropped_mentions for w in wins)
    return {"documents": len(docs), "windows": len(wins), "mentions": n_mentions,
            "mentions_kept": kept, "mentions_dropped_at_edges": dropped,
            "mentions_outside_windows": n_mentions - kept - dropped,
            "split_sentence_windows": sum(w.split_sentence for w in wins),
            "evaluable_mentions": sum(len(evaluable_mentions(w)) for w in wins)}


# --- scoring --------------------------------------------------------------------------------

def antecedents(window: CorefWindow, mention: Mention) -> list[Mention]:
    """Same-chain mentions of the window whose head word precedes ``mention``'s."""
    return [a for a in window.mentions
            if a.chain_id == mention.chain_id and a.head_word < mention.head_word]


def evaluable_mentions(window: CorefWindow) -> list[tuple[Mention, frozenset[int]]]:
    """(mention, doc-level head words of its antecedents) for every mention of the window
    that has an antecedent in it."""
    out = []
    for m in window.mentions:
        heads = frozenset(a.head_word for a in antecedents(window, m))
        if heads:
            out.append((m, heads))
    return out


def antecedent_distances(window: CorefWindow) -> np.ndarray:
    """(M,) int32, for each evaluable mention of ``window`` (:func:`evaluable_mentions`'
    order): how many words its head word lies after the head word of its nearest antecedent,
    the coreference link's length in words. The window is contiguous and holds the mention,
    so the nearest antecedent in the window is the nearest in the document; a mention whose
    antecedents all lie before the window is not evaluable and has no entry."""
    return np.array([m.head_word - max(heads) for m, heads in evaluable_mentions(window)],
                    dtype=np.int32)


def _agree(a: str | None, b: str | None) -> bool:
    return a is None or b is None or a == b


def baseline_predictions(window: CorefWindow, mention: Mention) -> dict[str, Mention | None]:
    """The mention each baseline picks for ``mention`` (None = no prediction, a miss).

    Candidates: window mentions whose head word precedes ``mention``'s, nearest first.
    ``rule_based``: sieves (1) exact string match (case-insensitive), (2) head-word match
    (case-insensitive), (3) number, person and gender agree (unknown agrees), (4) any
    mention; the nearest mention of the earliest sieve that fires."""
    cands = sorted((c for c in window.mentions if c.head_word < mention.head_word),
                   key=lambda c: (-c.head_word, -c.start))
    text, head = mention.text.lower(), mention.head_text.lower()
    nearest = cands[0] if cands else None
    head_match = next((c for c in cands if c.head_text.lower() == head), None)
    sieves = (
        lambda c: c.text.lower() == text,
        lambda c: c.head_text.lower() == head,
        lambda c: (_agree(c.number, mention.number) and _agree(c.person, mention.person)
                   and _agree(c.gender, mention.gender)),
        lambda c: True,
    )
    rule = None
    for sieve in sieves:
        rule = next((c for c in cands if sieve(c)), None)
        if rule is not None:
            break
    return {"nearest": nearest, "head_match": head_match,
            "head_match_fallback": head_match or nearest, "rule_based": rule}


def _groups(m: Mention) -> dict[str, str]:
    person = m.person or "-"
    tp = f"pronoun-{person}" if m.type == "pronoun" else m.type
    return {"all": "All", "type": m.type, "person": person, "type_person": tp}


BREAKDOWNS = ("all", "type", "person", "type_person")


def _tally(correct: np.ndarray, groups: list[dict[str, str]]):
    """correct: (..., K) bool -> {(breakdown, group): (correct (...), total)}."""
    out = {}
    for b in BREAKDOWNS:
        labels = np.asarray([g[b] for g in groups], dtype=object).astype(str)
        for g in dict.fromkeys(labels):
            sel = labels == g
            out[(b, g)] = (correct[..., sel].sum(axis=-1), int(sel.sum()))
    return out


def _sort_key(b: str, g: str):
    order = {"All": 0, "pronoun": 1, "proper": 2, "nominal": 3}
    return (BREAKDOWNS.index(b), order.get(g, 9), g)


def head_antecedent_predictions(attn: np.ndarray, is_special: np.ndarray,
                                word_pos: np.ndarray, rows: Sequence[int],
                                causal: bool = False) -> np.ndarray:
    """For window-local word indices ``rows``, the window-local word each head predicts:
    ``(layers, heads, len(rows))``, -1 when there is no candidate. Candidates: the window's
    words except the word itself (and, with ``causal``, except later words); special and
    non-word positions never."""
    attn = np.asarray(attn)
    word_pos = np.asarray(word_pos, dtype=np.int64)
    if np.asarray(is_special, dtype=bool)[word_pos].any():
        raise ValueError("word_pos points at a special-token position")
    rows = np.asarray(rows, dtype=np.int64)
    n = len(word_pos)
    a = attn[:, :, word_pos[rows]][..., word_pos].astype(np.float32)  # (L, H, k, n)
    bad = np.zeros((len(rows), n), dtype=bool)
    bad[np.arange(len(rows)), rows] = True
    if causal:
        bad |= np.arange(n)[None, :] >= rows[:, None]
    a[..., bad] = -np.inf
    pred = a.argmax(axis=-1)
    pred[np.isneginf(a.max(axis=-1))] = -1
    return pred


class ScoredMentions(NamedTuple):
    """Per evaluable mention (in window order, then the order of :func:`evaluable_mentions`)
    what :func:`antecedent_accuracy` built: ``correct`` (L, H, M) bool (layer ``l``, head
    ``h``, 0-based, picks an antecedent's head word); ``document`` (M,) the
    ``CorefDocument.doc_id`` of the mention's window; ``window`` (M,) the window's index in
    its document; ``groups`` the mention's group per breakdown (``{"all", "type", "person",
    "type_person"}`` -> group label); ``antecedent_distance`` (M,) the words from the
    mention's head word back to its nearest antecedent's (:func:`antecedent_distances`)."""

    correct: np.ndarray
    document: np.ndarray
    window: np.ndarray
    groups: list
    antecedent_distance: np.ndarray | None = None


def antecedent_accuracy(windows_with_maps: Iterable, causal: bool = False,
                        return_correct: bool = False):
    """Antecedent-selection accuracy of every head.

    Items: ``(window, attn, is_special, word_pos)`` or ``(window, maps)``, with ``attn``
    ``(layers, heads, m, m)`` word-level and ``word_pos`` the map position of each window
    word. Returns ``layer, head`` (0-based), ``breakdown`` (all / type / person /
    type_person), ``group``, ``correct``, ``total``, ``accuracy`` (fraction).

    ``return_correct``: return ``(frame, ScoredMentions)``, the per-mention correctness
    behind the counts with each mention's document, window and groups, for tests that
    resample documents (:class:`ScoredMentions`)."""
    chunks, groups, shape = [], [], None
    docs, win_idx, dist = [], [], []
    for item in windows_with_maps:
        w, attn, is_special, word_pos = unpack_word_maps(item, "window")
        if len(word_pos) != len(w.words):
            raise ValueError(f"window {w.doc_id}#{w.index}: word_pos has {len(word_pos)} "
                             f"entries for {len(w.words)} words")
        if shape is None:
            shape = attn.shape[:2]
        elif attn.shape[:2] != shape:
            raise ValueError("inconsistent (layers, heads) across windows")
        ev = evaluable_mentions(w)
        if not ev:
            continue
        rows = [w.local(m.head_word) for m, _ in ev]
        pred = head_antecedent_predictions(attn, is_special, word_pos, rows, causal)
        target = np.zeros((len(ev), len(w.words) + 1), dtype=bool)  # last column: -1
        for k, (_, heads) in enumerate(ev):
            target[k, [w.local(h) for h in heads]] = True
        chunks.append(np.take_along_axis(target[None, None], pred[..., None],
                                         axis=-1)[..., 0])
        groups.extend(_groups(m) for m, _ in ev)
        dist.append(antecedent_distances(w))
        docs.extend([w.doc_id] * len(ev))
        win_idx.extend([w.index] * len(ev))
    if shape is None:
        raise ValueError("no windows given")
    L, H = shape
    correct = (np.concatenate(chunks, axis=-1) if chunks
               else np.zeros((L, H, 0), dtype=bool))
    rows = []
    for (b, g), (c, total) in sorted(_tally(correct, groups).items(),
                                     key=lambda kv: _sort_key(*kv[0])):
        for layer in range(L):
            for head in range(H):
                rows.append((layer, head, b, g, int(c[layer, head]), total))
    df = pd.DataFrame(rows, columns=["layer", "head", "breakdown", "group", "correct",
                                     "total"])
    df["accuracy"] = df["correct"] / df["total"]
    if not return_correct:
        return df
    return df, ScoredMentions(correct, np.asarray(docs, dtype=object).astype(str),
                              np.asarray(win_idx, dtype=np.int32), groups,
                              np.concatenate(dist) if dist else np.zeros(0, dtype=np.int32))


def baseline_accuracy(wins: Iterable[CorefWindow], return_correct: bool = False):
    """Accuracy of the baselines on the same evaluable mentions: ``system, breakdown, group,
    correct, total, accuracy``. Items may be windows or the tuples of
    :func:`antecedent_accuracy`. ``return_correct``: return ``(frame, correct)`` with
    ``correct`` (S, M) bool, one row per system of :data:`SYSTEMS`, the mentions in the order
    of :func:`antecedent_accuracy`'s ``ScoredMentions``."""
    per_system: dict[str, list[bool]] = {s: [] for s in SYSTEMS}
    groups = []
    for item in wins:
        w = item[0] if isinstance(item, tuple) else item
        for m, heads in evaluable_mentions(w):
            preds = baseline_predictions(w, m)
            for s in SYSTEMS:
                per_system[s].append(preds[s] is not None and preds[s].head_word in heads)
            groups.append(_groups(m))
    correct = np.array([per_system[s] for s in SYSTEMS], dtype=bool).reshape(len(SYSTEMS), -1)
    rows = []
    for (b, g), (c, total) in sorted(_tally(correct, groups).items(),
                                     key=lambda kv: _sort_key(*kv[0])):
        for i, s in enumerate(SYSTEMS):
            rows.append((s, b, g, int(c[i]), total))
    df = pd.DataFrame(rows, columns=["system", "breakdown", "group", "correct", "total"])
    df["accuracy"] = df["correct"] / df["total"]
    return (df, correct) if return_correct else df


def best_head(head_scores: pd.DataFrame) -> tuple[int, int]:
    """0-based (layer, head) with the best overall accuracy (ties: lowest layer, head)."""
    a = head_scores[head_scores["breakdown"] == "all"].sort_values(
        ["accuracy", "layer", "head"], ascending=[False, True, True])
    return int(a.iloc[0]["layer"]), int(a.iloc[0]["head"])


def small_groups(scores: pd.DataFrame, min_group: int) -> dict[str, int]:
    """Groups (any breakdown) with fewer than ``min_group`` evaluated mentions -> their count,
    from the ``group``/``total`` columns of :func:`baseline_accuracy` or
    :func:`antecedent_accuracy`: too few for an accuracy to mean anything (one mention reads
    as 0% or 100%)."""
    totals = scores.drop_duplicates(["breakdown", "group"]).set_index("group")["total"]
    return {str(g): int(n) for g, n in totals.items() if n < min_group}


def table2(head_scores: pd.DataFrame, baseline_scores: pd.DataFrame,
           breakdown: str = "type", head: tuple[int, int] | None = None,
           with_paper: bool = True, min_group: int = 0) -> pd.DataFrame:
    """Table 2: accuracy (%) of the baselines and of one head (default: the best overall),
    columns ``All`` plus the groups of ``breakdown``; the row ``head L-H`` is 1-based. With
    ``with_paper`` (and ``breakdown="type"``) the paper's rows follow, indexed
    ``"paper: <system>"`` (source ``paper``). Groups with fewer than ``min_group`` mentions
    get no column (:func:`small_groups`); ``attrs["too_small"]`` names them with their
    counts."""
    layer, h = head if head is not None else best_head(head_scores)
    too_small = {g: n for g, n in small_groups(baseline_scores, min_group).items()
                 if g != "All"}

    def keep(df: pd.DataFrame) -> pd.DataFrame:
        return df[df["breakdown"].isin(["all", breakdown]) & ~df["group"].isin(too_small)]

    b = keep(baseline_scores).pivot_table(index="system", columns="group",
                                          values="accuracy", sort=False)
    hs = keep(head_scores)
    hs = hs[(hs["layer"] == layer) & (hs["head"] == h)]
    row = hs.set_index("group")["accuracy"].rename(f"head {head_label(layer, h)}")
    out = pd.concat([b.reindex(list(SYSTEMS)), row.to_frame().T]) * 100.0
    out.insert(0, "source", "this run")
    cols = ["source", "All"] + [c for c in out.columns if c not in ("source", "All")]
    out = out[cols]
    if with_paper and breakdown == "type":
        paper = pd.DataFrame(
            [("paper", *v) for v in CLARK_TABLE2.values()],
            index=[f"paper: {k}" for k in CLARK_TABLE2],
            columns=["source", "All", "pronoun", "proper", "nominal"])
        out = pd.concat([out, paper])
    listed = set(baseline_scores.loc[baseline_scores["breakdown"] == breakdown, "group"])
    out.attrs["too_small"] = {g: n for g, n in too_small.items() if g in listed}
    return out


def paper_comparison(table: pd.DataFrame) -> pd.DataFrame:
    """The "paper vs. this run" table of Section 4.3, from a :func:`table2` table with the
    paper's rows: the paper's claims about its best head, each with the paper's margin
    (BERT-base, CoNLL-2012) and this run's, in points of accuracy.

    Claims (Clark et al. Section 4.3): the best head beats the head-word-match baseline; it
    comes close to the rule-based system; it is particularly good with nominal mentions; and,
    implied by Table 2, it beats the nearest-mention baseline. Columns: ``claim``, ``paper``,
    ``this run`` (the margin in points; NaN where the group has too few mentions here to have
    a column; the accuracies are in ``paper detail`` / ``detail``). Whether each claim held is
    the claims ledger's to judge (:mod:`analysis_utils.ledger.clark`: the best head against
    the system on the same mentions, documents resampled and the head chosen in every
    resample, beside the random-weights control)."""
    mine = table[table["source"] == "this run"]
    head_row = [i for i in mine.index if str(i).startswith("head ")][0]
    paper_head = [i for i in table.index if str(i).startswith("paper: head ")][0]
    rows = []
    for claim, group, system in (
            ("best head vs. head-word match", "All", "head_match"),
            ("best head vs. rule-based system", "All", "rule_based"),
            ("best head vs. head-word match, nominal mentions", "nominal", "head_match"),
            ("best head vs. nearest mention", "All", "nearest")):
        p_head, p_base = table.loc[paper_head, group], table.loc[f"paper: {system}", group]
        row = {"claim": claim, "paper": p_head - p_base, "this run": np.nan,
               "paper detail": f"{paper_head.removeprefix('paper: ')} {p_head:.0f}% vs. "
                               f"{p_base:.0f}%",
               "detail": "too few mentions"}
        r_head = mine[group].get(head_row, np.nan) if group in mine else np.nan
        r_base = mine[group].get(system, np.nan) if group in mine else np.nan
        if not (pd.isna(r_head) or pd.isna(r_base)):  # a group below min_group has no column
            row.update({"this run": r_head - r_base,
                        "detail": f"{head_row} {r_head:.1f}% vs. {r_base:.1f}%"})
        rows.append(row)
    return pd.DataFrame(rows)


# --- per-mention data for the claims ledger -------------------------------------------------

#: How ``head_correct`` of :func:`by_mention_arrays` is laid out.
BY_MENTION_LAYOUT = ("head_correct is np.packbits(axis=1) of a (M, L*H) bool matrix: column "
                     "(layer-1)*H + (head-1), layer and head 1-based as in column_layer / "
                     "column_head; unpack with np.unpackbits(x, axis=1, count=L*H)"
                     ".astype(bool). baseline_correct (M, S): column s is systems[s]. Rows: "
                     "the evaluable mentions in window order")


def by_mention_arrays(scored: ScoredMentions, baseline_correct: np.ndarray
                      ) -> dict[str, np.ndarray]:
    """The arrays notebook 03 saves per evaluable mention (``03_by_mention_<model>.npz``)
    from :func:`antecedent_accuracy`'s :class:`ScoredMentions` and
    :func:`baseline_accuracy`'s ``(S, M)`` correctness on the same windows.

    Keys: ``document`` (M,) int16 codes into ``documents`` (``CorefDocument.doc_id``);
    ``window`` (M,) int16; ``type`` / ``person`` (M,) int8 codes into ``types`` /
    ``persons``; ``head_correct`` packbits (see :data:`BY_MENTION_LAYOUT`) with
    ``column_layer`` / ``column_head`` (1-based); ``baseline_correct`` (M, S) bool with
    ``systems``; ``antecedent_distance`` (M,) int16, words from each mention's head word
    back to its nearest antecedent's (when ``scored`` has it)."""
    L, H, M = scored.correct.shape
    if baseline_correct.shape != (len(SYSTEMS), M):
        raise ValueError(f"baseline_correct is {baseline_correct.shape}, expected "
                         f"({len(SYSTEMS)}, {M}): heads and baselines scored other mentions")
    doc_names, doc_codes = np.unique(scored.document.astype(str), return_inverse=True)
    out = {"document": doc_codes.astype(np.int16), "documents": doc_names,
           "window": scored.window.astype(np.int16)}
    for key, names in (("type", "types"), ("person", "persons")):
        labels = np.array([g[key] for g in scored.groups], dtype=object).astype(str)
        if M == 0:
            labels = np.array([], dtype=str)
        out[names], codes = np.unique(labels, return_inverse=True)
        out[key] = codes.astype(np.int8)
    ly, hd = np.meshgrid(np.arange(L), np.arange(H), indexing="ij")
    out.update(
        head_correct=np.packbits(np.ascontiguousarray(scored.correct.reshape(L * H, M).T),
                                 axis=1),
        n_columns=np.int32(L * H), column_layer=(ly.ravel() + 1).astype(np.int16),
        column_head=(hd.ravel() + 1).astype(np.int16),
        baseline_correct=np.ascontiguousarray(baseline_correct.T),
        systems=np.asarray(SYSTEMS), layout=np.asarray(BY_MENTION_LAYOUT))
    if scored.antecedent_distance is not None:
        if len(scored.antecedent_distance) != M:
            raise ValueError(f"antecedent_distance has {len(scored.antecedent_distance)} "
                             f"entries for {M} mentions")
        out["antecedent_distance"] = scored.antecedent_distance.astype(np.int16)
    return out
