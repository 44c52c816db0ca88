"""GLUE reader and encoder: hand-made files in a temporary data dir, the tiny tokenizer, and
the real dev files when the gold data are present."""

from __future__ import annotations

import pytest

from analysis_utils import paths
from analysis_utils.data import glue
from analysis_utils.data.manifest import DataCorruptError, DataMissingError
from analysis_utils.data.treebank import CorpusFormatError


def _write(root, task, text):
    d = root / "glue" / task
    d.mkdir(parents=True, exist_ok=True)
    (d / "dev.tsv").write_text(text, encoding="utf-8")


@pytest.fixture
def glue_dir(tmp_path):
    _write(tmp_path, "CoLA", "gj04\t1\t\tthe cat sat .\ngj04\t0\t*\tsat the cat .\n")
    _write(tmp_path, "MRPC", "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                             '1\t1\t2\tthe cat sat .\t" the dog ran .\n')
    _write(tmp_path, "STS-B", "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"
                              "sentence1\tsentence2\tscore\n"
                              "0\tg\tf\ty\t0\tn\tn\ta cat sat .\ta dog sat .\t4.750\n")
    return tmp_path


def _file(root, task, split="dev"):
    return root / "glue" / task / f"{split}.tsv"


def test_read_single_pair_and_score(glue_dir):
    cola = glue.read_glue_file(_file(glue_dir, "CoLA"), "CoLA")
    assert cola == [glue.GlueExample("the cat sat .", None, 1),
                    glue.GlueExample("sat the cat .", None, 0)]
    mrpc = glue.read_glue_file(_file(glue_dir, "MRPC"), "MRPC")  # BOM header skipped, bare quote
    assert mrpc == [glue.GlueExample("the cat sat .", '" the dog ran .', 1)]
    stsb = glue.read_glue_file(_file(glue_dir, "STS-B"), "STS-B")
    assert stsb[0].label == pytest.approx(4.75) and stsb[0].text_b == "a dog sat ."
    assert glue.read_glue_file(_file(glue_dir, "CoLA"), "CoLA", max_examples=1) == cola[:1]


def test_errors_name_file_and_line(glue_dir):
    path = _file(glue_dir, "SST-2")
    _write(glue_dir, "SST-2", "sentence\tlabel\ngood .\t1\nbad row\n")
    with pytest.raises(glue.GlueFormatError, match=r"SST-2/dev.tsv:3: expected 2"):
        glue.read_glue_file(path, "SST-2")
    _write(glue_dir, "SST-2", "sentence\tlabel\ngood .\tpositive\n")
    with pytest.raises(glue.GlueFormatError, match=r":2: bad label"):
        glue.read_glue_file(path, "SST-2")
    path.write_bytes(b"sentence\tlabel\ngood .\t1\ncaf\xe9 .\t1\n")
    with pytest.raises(glue.GlueFormatError, match=r"SST-2/dev.tsv:3: not UTF-8 text: byte 0xe9"):
        glue.read_glue_file(path, "SST-2")
    _write(glue_dir, "SST-2", "sentence\tlabel\n\n")
    with pytest.raises(glue.GlueFormatError, match=r"SST-2/dev.tsv:1: no data rows"):
        glue.read_glue_file(path, "SST-2")
    assert issubclass(glue.GlueFormatError, CorpusFormatError)
    with pytest.raises(ValueError, match="unknown GLUE task"):
        glue.read_glue("MNLI", data_dir=glue_dir)
    with pytest.raises(ValueError, match="unknown GLUE task"):
        glue.read_glue_file(path, "MNLI")


def test_read_glue_checks_the_manifest(glue_dir):
    # the gold files go through manifest.require: a file whose bytes differ is refused and a
    # missing one names the fetch command (it used to be read, or raise a bare error)
    with pytest.raises(DataCorruptError, match=r"glue/CoLA/dev\.tsv .*corrupt.*"
                                               r"fetch-data --dataset glue.*--mirror DIR"):
        glue.read_glue("CoLA", data_dir=glue_dir)
    with pytest.raises(DataMissingError, match=r"glue/RTE/dev\.tsv .*not found.*"
                                               r"fetch-data --dataset glue"):
        glue.read_glue("RTE", data_dir=glue_dir)


def test_available_tasks_lists_manifest_files_even_when_missing(tmp_path):
    # a missing manifest file must fail in read_glue, not drop out of the results silently
    assert glue.available_tasks(data_dir=tmp_path) == list(glue.TASKS)
    train = ["CoLA", "SST-2", "MRPC", "RTE", "STS-B"]
    assert glue.available_tasks("train", data_dir=tmp_path) == train
    _file(tmp_path, "QNLI", "train").parent.mkdir(parents=True)
    _file(tmp_path, "QNLI", "train").write_text("index\tquestion\tsentence\tlabel\n")
    assert glue.available_tasks("train", data_dir=tmp_path) == train + ["QNLI"]


@pytest.mark.gold_data
def test_read_glue_refuses_a_corrupted_copy(gold_data_dir, tmp_path):
    data = _file(gold_data_dir, "RTE").read_bytes()
    _file(tmp_path, "RTE").parent.mkdir(parents=True)
    _file(tmp_path, "RTE").write_bytes(data.replace(b"entailment", b"Entailment", 1))
    assert len(glue.read_glue_file(_file(tmp_path, "RTE"), "RTE")) == 277  # well-formed ...
    with pytest.raises(DataCorruptError, match="corrupt: sha256"):  # ... but not the gold file
        glue.read_glue("RTE", data_dir=tmp_path)


def test_encode_single_and_pair_with_truncation(tiny_loaded):
    tok = tiny_loaded.tokenizer
    cls, sep = tok.cls_token_id, tok.sep_token_id
    exs = [glue.GlueExample("the cat sat", None, 1),
           glue.GlueExample("the cat sat on the mat", "a dog ran", 0)]
    enc = glue.encode(exs, tok, max_tokens=8)
    single, pair = enc[0], enc[1]
    assert single.input_ids[0] == cls and single.input_ids[-1] == sep
    assert single.token_type_ids == (0,) * 5 and not single.truncated
    # pair: 6 + 3 words + 3 specials = 12 > 8, so longest-first truncation to exactly 8
    assert len(pair) == 8 and pair.truncated
    assert pair.input_ids.count(sep) == 2 and set(pair.token_type_ids) == {0, 1}
    assert pair.tokens[0] == "[CLS]"
    assert enc.report == {"n": 2, "pairs": 1, "truncated": 1, "mean_length": 6.5,
                          "max_length": 8, "max_tokens": 8}


def test_real_dev_files_row_counts():
    d = paths.data_dir()
    if not (d / "glue").is_dir():
        pytest.skip(f"GLUE data not found in {d}: set {paths.DATA_ENV} or run "
                    "`python -m analysis_utils fetch-data --dataset glue`")
    counts = {"CoLA": 1043, "SST-2": 872, "MRPC": 408, "RTE": 277, "STS-B": 1500,
              "QNLI": 5463}
    for task in glue.available_tasks(data_dir=d):
        rows = glue.read_glue(task, data_dir=d)
        assert len(rows) == counts[task], task
        assert (rows[0].text_b is None) == (task in ("CoLA", "SST-2"))


def test_committed_labels_are_the_seeded_stratified_sample():
    """The labelled maps were chosen by the seeded sample (not by a classifier): the committed
    file's (source, example, layer, head) rows are exactly what sample_label_set draws from
    the Wikipedia segments and the GLUE dev sets' sizes."""
    from analysis_utils.data import labels as sheets

    labels = sheets.load_labels()
    pools = {"wiki": sheets.WIKI_SEGMENTS["n"], "CoLA": 1043, "SST-2": 872, "MRPC": 408,
             "RTE": 277, "STS-B": 1500, "QNLI": 5463}
    sample = sheets.sample_label_set(pools, num_layers=6, num_heads=12, per_stratum=5, seed=0)
    cols = ["id", "source", "example", "layer", "head"]
    assert labels[cols].equals(sample[cols])
    assert len(labels) >= 200
    balance = sheets.class_balance(labels["label"])
    assert balance["count"].sum() == len(labels)
