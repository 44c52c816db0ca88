"""Coreference reader, windows, head scoring and baselines (Clark et al. Section 4.3).

The fixture ``fixtures/coref/tiny.conllu`` (word indices are doc-level)::

    s1  0 John(1)  1 saw  2 [his(1)  3 dog](2)  4 .
    s2  5 Yes(3)                                  one-word sentence
    s3  6 [The  7 dog](2)  8 barked  9 at  10 him(1)  11 .
    s4  12 [Mary(5)  13 left  14 .               chain 4 spans two sentences ...
    s5  15 Then  16 she(5)  17 returned]4  18 .   ... head word: 13 "left" (the root)
    s6  19 It(4)  20 surprised  21 Mary(5)  22 .

All right answers below were worked out by hand from this picture.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from analysis_utils.analyses import coref
from analysis_utils.data import ontogum
from analysis_utils.data.manifest import DataCorruptError, DataMissingError
from analysis_utils.data.ontogum import CorefFormatError
from analysis_utils.data.treebank import CorpusFormatError

FIX = Path(__file__).parent / "fixtures" / "coref"
ONE_PIECE = lambda words: [1] * len(words)  # noqa: E731


@pytest.fixture(scope="module")
def doc():
    docs = ontogum.read_ontogum(FIX / "tiny.conllu")
    assert len(docs) == 1
    return docs[0]


def _by_span(doc):
    return {(m.start, m.end): m for m in doc.mentions}


# --- reader ---------------------------------------------------------------------------------

def test_reader_mentions(doc):
    assert doc.doc_id == "tiny_doc"
    assert len(doc.sentences) == 6 and len(doc) == 23
    assert [s.start for s in doc.sentences] == [0, 5, 6, 12, 15, 19]
    spans = [(m.start, m.end, m.chain_id) for m in doc.mentions]
    # sorted by start, longer first
    assert spans == [(0, 0, "1"), (2, 3, "2"), (2, 2, "1"), (5, 5, "3"), (6, 7, "2"),
                     (10, 10, "1"), (12, 17, "4"), (12, 12, "5"), (16, 16, "5"),
                     (19, 19, "4"), (21, 21, "5")]
    assert {k: len(v) for k, v in doc.chains.items()} == {"1": 3, "2": 2, "3": 1, "4": 2,
                                                          "5": 3}


def test_reader_heads_types_and_attributes(doc):
    m = _by_span(doc)
    assert m[(2, 3)].head_word == 3 and m[(2, 3)].head_text == "dog"  # nested: "his dog"
    assert m[(6, 7)].head_word == 7
    span = m[(12, 17)]  # multi-sentence: Mary left . Then she returned
    assert (span.sent_idx, span.end_sent_idx) == (3, 4)
    assert span.head_word == 13 and span.type == "nominal"  # "left" (root) comes first
    assert span.words == ("Mary", "left", ".", "Then", "she", "returned")
    assert m[(0, 0)].type == "proper" and m[(5, 5)].type == "nominal"
    assert (m[(2, 2)].type, m[(2, 2)].number, m[(2, 2)].person, m[(2, 2)].gender) == (
        "pronoun", "Sing", "3", "Masc")
    # "him" and "It" have no FEATS: the lexicon fills them
    assert (m[(10, 10)].number, m[(10, 10)].person, m[(10, 10)].gender) == ("Sing", "3", "Masc")
    assert (m[(19, 19)].number, m[(19, 19)].gender) == ("Sing", "Neut")
    assert m[(16, 16)].gender == "Fem"
    assert (m[(0, 0)].person, m[(0, 0)].gender) == ("3", None)  # non-pronouns: 3rd person


def test_parse_entity():
    assert ontogum.parse_entity("(1(2)") == [("open", "1"), ("single", "2")]
    assert ontogum.parse_entity("3)4)(5)") == [("close", "3"), ("close", "4"), ("single", "5")]
    assert ontogum.parse_entity("(12") == [("open", "12")]
    assert ontogum.parse_entity("(e7-person-1-)") == [("single", "e7")]
    with pytest.raises(ValueError):
        ontogum.parse_entity("((1")


def _write(tmp_path, sentences, name="bad.conllu"):
    lines = ["# newdoc id = bad_doc"]
    for sid, rows in sentences:
        lines.append(f"# sent_id = {sid}")
        lines.extend(rows)
        lines.append("")
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def _row(i, form, head, deprel, misc="_", upos="NOUN"):
    return f"{i}\t{form}\t{form}\t{upos}\t_\t_\t{head}\t{deprel}\t_\t{misc}"


def test_unmatched_close_bracket(tmp_path):
    p = _write(tmp_path, [("a-1", [_row(1, "x", 0, "root", "Entity=(1)")]),
                          ("a-2", [_row(1, "y", 0, "root"), _row(2, "z", 1, "dep", "Entity=7)")])])
    with pytest.raises(CorefFormatError, match=r"bad\.conllu:7: document bad_doc, sentence a-2"):
        ontogum.read_ontogum(p)


def test_unclosed_bracket(tmp_path):
    p = _write(tmp_path, [("a-1", [_row(1, "x", 0, "root", "Entity=(3")])])
    with pytest.raises(CorefFormatError, match=r":3: document bad_doc, sentence a-1.*never closed"):
        ontogum.read_ontogum(p)


# the tree checks are the treebank reader's (one CoNLL-U path): same line, same words
@pytest.mark.parametrize("heads,line,msg", [((0, 0), 4, "more than one root"),
                                            ((2, 1), 3, "sentence has no root"),
                                            ((0, 5), 4, "HEAD 5 out of range")])
def test_bad_tree(tmp_path, heads, line, msg):
    rows = [_row(i + 1, "w", h, "dep") for i, h in enumerate(heads)]
    p = _write(tmp_path, [("a-1", rows)])
    with pytest.raises(CorefFormatError, match=rf"bad\.conllu:{line}: document bad_doc, "
                                               rf"sentence a-1: {msg}"):
        ontogum.read_ontogum(p)


def test_cycle(tmp_path):
    rows = [_row(1, "a", 0, "root"), _row(2, "b", 3, "dep"), _row(3, "c", 2, "dep")]
    with pytest.raises(CorefFormatError, match=r":4: document bad_doc, sentence a-1: cycle in "
                                               r"the dependency tree through words 2 -> 3 -> 2"):
        ontogum.read_ontogum(_write(tmp_path, [("a-1", rows)]))


def test_too_few_columns_is_a_format_error_not_a_key_error(tmp_path):
    # the reader used to hand this line to conllu, which raised KeyError: "'misc'"
    rows = [_row(1, "x", 0, "root"), "2\ty\ty\tNOUN\t_\t_\t1\tdep"]
    p = _write(tmp_path, [("a-1", rows)])
    with pytest.raises(CorefFormatError, match=r"bad\.conllu:4: document bad_doc, sentence a-1: "
                                               r"8 tab-separated columns, expected 10") as exc:
        ontogum.read_ontogum(p)
    assert isinstance(exc.value, CorpusFormatError)


def test_undecodable_bytes_name_file_and_line(tmp_path):
    p = _write(tmp_path, [("a-1", [_row(1, "x", 0, "root")]), ("a-2", [_row(1, "Z", 0, "root")])])
    p.write_bytes(p.read_bytes().replace(b"\tZ\t", b"\t\xff\t"))
    with pytest.raises(CorefFormatError, match=r"bad\.conllu:6: document bad_doc, sentence a-2: "
                                               r"not UTF-8 text: byte 0xff at column 3"):
        ontogum.read_ontogum(p)


@pytest.mark.parametrize("content", [b"", b"\n \n"])
def test_empty_file_is_refused(tmp_path, content):
    p = tmp_path / "empty.conllu"
    p.write_bytes(content)
    with pytest.raises(CorefFormatError, match=r"empty\.conllu:1: no sentences"):
        ontogum.read_ontogum(p)


def test_check_ontogum_collects_every_problem(tmp_path):
    p = _write(tmp_path, [
        ("a-1", [_row(1, "x", 0, "root", "Entity=(1"), _row(2, "y", 0, "dep")]),  # two roots
        ("a-2", [_row(1, "z", 0, "root", "Entity=1)"), _row(2, "w", 1, "dep", "Entity=5)")]),
        ("a-3", [_row(1, "v", 0, "root", "Entity=(2")]),
    ])
    check = ontogum.check_ontogum(p)
    got = [(q.line, q.message) for q in check.problems]
    assert [line for line, _ in got] == [4, 8, 11]
    assert "sentence a-1: more than one root" in got[0][1]
    # the bracket opened in the malformed sentence still matches its close in a-2
    assert "sentence a-2: closing bracket '5)'" in got[1][1]
    assert "sentence a-3: mention of entity 2 opened here is never closed" in got[2][1]
    assert (check.documents, check.sentences, check.mentions) == (1, 3, 1)


# --- the gold data go through the checksummed manifest ----------------------------------------

def test_split_reader_refuses_files_that_differ_from_the_manifest(tmp_path):
    with pytest.raises(DataMissingError, match=r"ontogum/splits/ontogum\.dev\.txt.*fetch-data "
                                               r"--dataset ontogum.*--mirror"):
        ontogum.read_ontogum_split(tmp_path, "dev")
    split_list = tmp_path / "ontogum" / "splits" / "ontogum.dev.txt"
    split_list.parent.mkdir(parents=True)
    split_list.write_text("tiny\n")
    with pytest.raises(DataCorruptError, match="ontogum.dev.txt.*corrupt"):
        ontogum.read_ontogum_split(tmp_path, "dev")
    with pytest.raises(ValueError, match="unknown OntoGUM split"):
        ontogum.read_ontogum_split(tmp_path, "validation")


@pytest.mark.gold_data
def test_split_reader_refuses_a_corrupt_or_missing_document(gold_data_dir, tmp_path):
    # a corrupted document used to be read (exit 0); a missing one gave a bare FileNotFoundError
    root = tmp_path / "ontogum"
    (root / "conllu").mkdir(parents=True)
    (root / "splits").mkdir()
    gold = gold_data_dir / "ontogum"
    (root / "splits" / "ontogum.dev.txt").symlink_to(gold / "splits" / "ontogum.dev.txt")
    names = (gold / "splits" / "ontogum.dev.txt").read_text().split()
    for name in names:
        (root / "conllu" / f"{name}.conllu").symlink_to(gold / "conllu" / f"{name}.conllu")
    victim = root / "conllu" / f"{names[3]}.conllu"
    data = victim.read_bytes()
    victim.unlink()
    victim.write_bytes(data.replace(b"\tthe\t", b"\tThe\t", 1))  # still valid CoNLL-U
    with pytest.raises(DataCorruptError, match=rf"{names[3]}\.conllu.*corrupt: sha256.*"
                                               r"fetch-data --dataset ontogum.*--mirror DIR"):
        ontogum.read_ontogum_split(tmp_path, "dev")
    victim.unlink()
    with pytest.raises(DataMissingError, match=rf"{names[3]}\.conllu.*not found.*"
                                               r"fetch-data --dataset ontogum"):
        ontogum.read_ontogum_split(tmp_path, "dev")


def test_multiword_tokens_skipped_and_docs_split(tmp_path):
    text = "\n".join([
        "# newdoc id = d1", "# sent_id = d1-1",
        "1-2\tdon't\t_\t_\t_\t_\t_\t_\t_\t_",
        _row(1, "do", 0, "root", upos="AUX"), _row(2, "n't", 1, "advmod", "Entity=(1)"), "",
        "# newdoc id = d2", "# sent_id = d2-1",
        _row(1, "I", 2, "nsubj", "Entity=(9)", upos="PRON"), _row(2, "ran", 0, "root"), "",
    ]) + "\n"
    p = tmp_path / "two.conllu"
    p.write_text(text)
    d1, d2 = ontogum.read_ontogum(p)
    assert d1.words == ("do", "n't") and d1.mentions[0].start == 1
    assert d2.doc_id == "d2" and d2.mentions[0].person == "1" and d2.mentions[0].number == "Sing"


# --- windows --------------------------------------------------------------------------------

def test_windows_whole_sentences(doc):
    # budget 10 - 2 = 8 pieces; sentence lengths 5, 1, 6, 3, 4, 4
    wins = coref.windows(doc, ONE_PIECE, max_pieces=10)
    assert [(w.word_start, w.word_end) for w in wins] == [(0, 6), (6, 12), (12, 19), (19, 23)]
    assert [(w.sent_start, w.sent_end) for w in wins] == [(0, 2), (2, 3), (3, 5), (5, 6)]
    assert [len(w.mentions) for w in wins] == [4, 2, 3, 2]
    assert all(w.dropped_mentions == 0 for w in wins)
    ev = [[(m.head_word, sorted(h)) for m, h in coref.evaluable_mentions(w)] for w in wins]
    # only "his" -> John and "she" -> Mary have an antecedent in their window
    assert ev == [[(2, [0])], [], [(16, [12])], []]


def test_windows_drop_mentions_crossing_an_edge(doc):
    wins = coref.windows(doc, ONE_PIECE, max_pieces=17)  # budget 15: s1..s4 | s5, s6
    assert [(w.word_start, w.word_end) for w in wins] == [(0, 15), (15, 23)]
    assert [w.dropped_mentions for w in wins] == [1, 0]  # chain 4's span 12..17
    summary = coref.windowing_summary([doc], wins)
    assert summary["mentions_dropped_at_edges"] == 1 and summary["mentions_kept"] == 10
    ev = {m.head_word: sorted(h) for w in wins for m, h in coref.evaluable_mentions(w)}
    # "It" (19) loses its antecedent (the dropped span); "she" (16) loses Mary (12)
    assert ev == {2: [0], 7: [3], 10: [0, 2], 21: [16]}


def test_windows_long_sentence_split_and_paper_truncation(doc):
    pieces = lambda ws: [3 if w == "barked" else 1 for w in ws]  # noqa: E731
    wins = coref.windows(doc, pieces, max_pieces=9)  # budget 7; s3 has 8 pieces
    s3 = [w for w in wins if w.split_sentence]
    # greedy by words: The dog barked at him = 1+1+3+1+1 = 7 pieces, then "."
    assert [(w.word_start, w.word_end) for w in s3] == [(6, 11), (11, 12)]
    assert all(w.n_pieces <= 7 for w in wins)
    first = coref.windows(doc, ONE_PIECE, max_pieces=10, whole_sentences=False,
                          first_only=True)
    assert len(first) == 1 and (first[0].word_start, first[0].word_end) == (0, 8)
    # words 0..7: John, his dog, his, Yes, The dog (6-7) all fit
    assert first[0].dropped_mentions == 0 and len(first[0].mentions) == 5
    with pytest.raises(ValueError, match="alone has"):
        coref.windows(doc, lambda ws: [9] * len(ws), max_pieces=10)


# --- baselines --------------------------------------------------------------------------------

def test_baseline_predictions(doc):
    (w,) = coref.windows(doc, ONE_PIECE, max_pieces=100)
    ev = coref.evaluable_mentions(w)
    assert [(m.head_word, sorted(h)) for m, h in ev] == [
        (2, [0]), (7, [3]), (10, [0, 2]), (16, [12]), (19, [13]), (21, [12, 16])]

    def pick(m):
        p = coref.baseline_predictions(w, m)
        return {k: (v.head_word if v is not None else None) for k, v in p.items()}

    got = {m.head_word: pick(m) for m, _ in ev}
    assert got[2] == {"nearest": 0, "head_match": None, "head_match_fallback": 0,
                      "rule_based": 0}
    assert got[7] == {"nearest": 5, "head_match": 3, "head_match_fallback": 3,
                      "rule_based": 3}  # sieve 2: head word "dog"
    assert got[10]["rule_based"] == 7  # "The dog" agrees with "him" (gender unknown)
    assert got[16] == {"nearest": 13, "head_match": None, "head_match_fallback": 13,
                       "rule_based": 13}
    # "It": nearest is "she" (Fem, disagrees); sieve 3 skips to the span headed by "left"
    assert got[19] == {"nearest": 16, "head_match": None, "head_match_fallback": 16,
                       "rule_based": 13}
    assert got[21] == {"nearest": 19, "head_match": 12, "head_match_fallback": 12,
                       "rule_based": 12}  # sieve 1: exact string "Mary"

    df = coref.baseline_accuracy([w])
    allrow = df[df.breakdown == "all"].set_index("system")
    assert allrow["correct"].to_dict() == {"nearest": 1, "head_match": 2,
                                           "head_match_fallback": 3, "rule_based": 4}
    assert set(allrow["total"]) == {6}
    pron = df[(df.breakdown == "type") & (df.group == "pronoun")].set_index("system")
    assert pron.loc["rule_based", ["correct", "total"]].tolist() == [2, 4]
    tp = df[(df.breakdown == "type_person") & (df.system == "nearest")]
    assert dict(zip(tp.group, tp.total, strict=True)) == {"pronoun-3": 4, "proper": 1,
                                                          "nominal": 1}


# --- head scoring -----------------------------------------------------------------------------

def test_antecedent_accuracy_by_hand(doc, blank_maps):
    (w,) = coref.windows(doc, ONE_PIECE, max_pieces=100)
    attn, sp, wp = blank_maps(len(w.words))
    a = attn[0, 0]  # head (0, 0); head (0, 1) stays uniform
    P = lambda i: i + 1  # noqa: E731  word -> map position

    a[P(2), P(0)] = 0.5  # his -> John                          correct
    a[P(7), 0] = a[P(7), P(7)] = 0.9  # The dog: [CLS] and itself ignored ...
    a[P(7), P(3)] = 0.3  # ... then "dog" (3)                     correct
    a[P(10), P(1)] = a[P(10), P(2)] = 0.4  # him: tie saw/his -> leftmost "saw": wrong
    a[P(16), P(21)] = 0.6  # she -> later Mary: wrong ...
    a[P(16), P(12)] = 0.3  # ... unless causal: then Mary (12)    correct
    a[P(19), P(13)] = 0.4  # It -> "left"                         correct
    a[P(21), -1] = 0.9  # Mary: [SEP] ignored ...
    a[P(21), P(16)] = 0.2  # ... then "she"                        correct

    df = coref.antecedent_accuracy([(w, attn, sp, wp)])
    allrows = df[df.breakdown == "all"].set_index("head")
    assert allrows.loc[0, ["correct", "total"]].tolist() == [4, 6]
    # uniform head: every tie goes to word 0 (John): right for "his" and "him" only
    assert allrows.loc[1, ["correct", "total"]].tolist() == [2, 6]
    causal = coref.antecedent_accuracy([(w, attn, sp, wp)], causal=True)
    assert causal[(causal.breakdown == "all") & (causal["head"] == 0)]["correct"].item() == 5
    t = df[(df.breakdown == "type") & (df["head"] == 0)].set_index("group")
    assert t[["correct", "total"]].to_dict("index") == {
        "pronoun": {"correct": 2, "total": 4}, "proper": {"correct": 1, "total": 1},
        "nominal": {"correct": 1, "total": 1}}
    # maps may also come as an object with attn / is_special / word_pos
    maps = {"attn": attn, "is_special": sp, "word_pos": wp}
    assert coref.antecedent_accuracy([(w, maps)]).equals(df)

    tab = coref.table2(df, coref.baseline_accuracy([w]))
    assert tab.loc["head 1-1", "All"] == pytest.approx(400 / 6)
    assert tab.loc["rule_based", "source"] == "this run"
    assert tab.loc["paper: head 5-4", "All"] == 65
    assert tab.attrs["too_small"] == {}

    # groups below min_group are listed, not given an accuracy ("All" always stays)
    base = coref.baseline_accuracy([w])
    assert coref.small_groups(base, 2) == {"proper": 1, "nominal": 1}
    small = coref.table2(df, base, min_group=2)
    mine = small[small["source"] == "this run"]
    assert mine["proper"].isna().all() and mine["nominal"].isna().all()
    assert mine["pronoun"].notna().all() and small.attrs["too_small"] == {"proper": 1,
                                                                           "nominal": 1}
    person = coref.table2(df, base, breakdown="type_person", with_paper=False, min_group=2)
    assert list(person.columns) == ["source", "All", "pronoun-3"]  # no column at all
    assert small.loc["paper: head 5-4", "pronoun"] == 64  # the paper's rows keep theirs
    assert "All" in coref.table2(df, base, min_group=100).columns

    # the paper's claims about its best head, margins only (the claims ledger judges them)
    cmp = coref.paper_comparison(tab).set_index("claim")
    assert not {"held", "held if"} & set(cmp.columns)
    hm = cmp.loc["best head vs. head-word match"]
    assert hm["paper"] == 13
    here = tab.loc["head 1-1", "All"] - tab.loc["head_match", "All"]
    assert hm["this run"] == pytest.approx(here)
    assert cmp.loc["best head vs. rule-based system", "paper"] == -4
    gone = coref.paper_comparison(small).set_index("claim")
    nominal = gone.loc["best head vs. head-word match, nominal mentions"]
    assert nominal["detail"] == "too few mentions"
    assert np.isnan(nominal["this run"]) and nominal["paper"] == 18


def test_word_pos_mismatch_raises(doc, blank_maps):
    (w,) = coref.windows(doc, ONE_PIECE, max_pieces=100)
    attn, sp, wp = blank_maps(len(w.words))
    with pytest.raises(ValueError, match="word_pos"):
        coref.antecedent_accuracy([(w, attn, sp, wp[:-1])])
    with pytest.raises(ValueError, match="special"):
        coref.antecedent_accuracy([(w, attn, sp, np.arange(len(w.words)))])


# --- real data ------------------------------------------------------------------------------

@pytest.mark.gold_data
def test_ontogum_dev_counts(gold_data_dir):
    t0 = time.perf_counter()
    docs = ontogum.read_ontogum_split(gold_data_dir, "dev")
    assert time.perf_counter() - t0 < 10
    # shared/data/README.md section 2
    assert len(docs) == 30
    assert sum(len(d.sentences) for d in docs) == 1575
    assert sum(len(d) for d in docs) == 28119
    assert sum(len(d.mentions) for d in docs) == 3818
    assert sum(len(d.chains) for d in docs) == 857
    ms = [m for d in docs for m in d.mentions]
    assert all(m.start <= m.head_word <= m.end for m in ms)
    assert {m.type for m in ms} == set(ontogum.MENTION_TYPES)
    wins = [w for d in docs for w in coref.windows(d, lambda ws: [1] * len(ws))]
    s = coref.windowing_summary(docs, wins)
    assert s["mentions_kept"] + s["mentions_dropped_at_edges"] == 3818
    assert s["evaluable_mentions"] > 1000


def test_per_mention_correctness_by_hand(doc, blank_maps):
    """return_correct: the per-mention arrays behind the counts, in evaluable-mention order
    (head words 2, 7, 10, 16, 19, 21), for tests that resample documents."""
    (w,) = coref.windows(doc, ONE_PIECE, max_pieces=100)
    attn, sp, wp = blank_maps(len(w.words))
    a = attn[0, 0]
    P = lambda i: i + 1  # noqa: E731
    a[P(2), P(0)] = 0.5  # his -> John: right
    a[P(7), P(3)] = 0.3  # The dog -> dog: right
    a[P(10), P(1)] = 0.4  # him -> saw: wrong
    a[P(16), P(21)] = 0.6  # she -> later Mary: wrong
    a[P(19), P(13)] = 0.4  # It -> left: right
    a[P(21), P(16)] = 0.2  # Mary -> she: right
    df, sm = coref.antecedent_accuracy([(w, attn, sp, wp)], return_correct=True)
    assert df.equals(coref.antecedent_accuracy([(w, attn, sp, wp)]))
    assert sm.correct.shape == (1, 2, 6) and sm.correct.dtype == bool
    assert sm.correct[0, 0].tolist() == [True, True, False, False, True, True]
    # the uniform head: ties go to John (word 0), an antecedent of "his" and "him" only
    assert sm.correct[0, 1].tolist() == [True, False, True, False, False, False]
    assert sm.document.tolist() == [doc.doc_id] * 6 and sm.window.tolist() == [0] * 6
    # each link's length, head word back to the nearest antecedent's: his 2 -> John 0,
    # dog 7 -> dog 3, him 10 -> his 2 (not John 0), she 16 -> Mary 12, It 19 -> left 13,
    # Mary 21 -> she 16 (not Mary 12)
    assert sm.antecedent_distance.tolist() == [2, 4, 8, 4, 6, 5]
    assert coref.antecedent_distances(w).tolist() == [2, 4, 8, 4, 6, 5]
    assert [g["type"] for g in sm.groups] == ["pronoun", "nominal", "pronoun", "pronoun",
                                              "pronoun", "proper"]
    # the frame's counts are the per-mention sums
    allrows = df[df.breakdown == "all"].set_index("head")["correct"]
    assert allrows.tolist() == sm.correct[0].sum(axis=-1).tolist()
    b, bc = coref.baseline_accuracy([w], return_correct=True)
    assert b.equals(coref.baseline_accuracy([w]))
    got = dict(zip(coref.SYSTEMS, bc.tolist(), strict=True))
    assert got == {"nearest": [True, False, False, False, False, False],
                   "head_match": [False, True, False, False, False, True],
                   "head_match_fallback": [True, True, False, False, False, True],
                   "rule_based": [True, True, False, False, True, True]}


def test_by_mention_arrays_round_trip(doc, blank_maps, tmp_path):
    (w,) = coref.windows(doc, ONE_PIECE, max_pieces=100)
    attn, sp, wp = blank_maps(len(w.words))
    attn[0, 0, 3, 1] = 0.5  # his -> John: head 1-1 right on the first mention
    _, sm = coref.antecedent_accuracy([(w, attn, sp, wp)], return_correct=True)
    _, bc = coref.baseline_accuracy([w], return_correct=True)
    arrays = coref.by_mention_arrays(sm, bc)
    np.savez_compressed(tmp_path / "x.npz", **arrays)
    z = np.load(tmp_path / "x.npz")  # no pickles: every array is numbers or unicode
    hc = np.unpackbits(z["head_correct"], axis=1, count=int(z["n_columns"])).astype(bool)
    assert hc.shape == (6, 2) and (hc.T == sm.correct.reshape(2, 6)).all()
    assert z["column_layer"].tolist() == [1, 1] and z["column_head"].tolist() == [1, 2]
    assert z["baseline_correct"].shape == (6, 4) and z["systems"].tolist() == list(coref.SYSTEMS)
    assert z["documents"][z["document"]].tolist() == [doc.doc_id] * 6
    assert z["types"][z["type"]].tolist() == [g["type"] for g in sm.groups]
    assert z["antecedent_distance"].tolist() == [2, 4, 8, 4, 6, 5]
    with pytest.raises(ValueError, match="antecedent_distance has 5"):
        coref.by_mention_arrays(sm._replace(antecedent_distance=sm.antecedent_distance[:5]), bc)
    with pytest.raises(ValueError, match="other mentions"):
        coref.by_mention_arrays(sm, bc[:, :5])
