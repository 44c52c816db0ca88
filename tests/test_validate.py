"""``python -m analysis_utils validate``: one malformed file of every kind the readers refuse.

Each case is a small file that starts with a well-formed document line and sentence (lines
1-6), so line numbers are not trivially 1, followed by the fault. The same table checks three
things: validate prints the expected ``file:line: message`` lines and exits 1; both readers
(``read_conllu`` and ``read_ontogum``) refuse the file with the same line and message (one
CoNLL-U path); a clean file exits 0 with a one-line summary.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from analysis_utils.__main__ import main
from analysis_utils.data import ontogum
from analysis_utils.data.ontogum import CorefFormatError
from analysis_utils.data.treebank import CorpusFormatError, read_conllu


def row(i, form, head, misc="_", ncols=10):
    cols = [str(i), form, form, "X", "_", "_", str(head), "root" if head == 0 else "dep", "_",
            misc]
    return "\t".join(cols[:ncols])


def sentence(sid, rows):
    return "\n".join([f"# sent_id = {sid}", *rows]) + "\n\n"


HEAD = "# newdoc id = d1\n"  # line 1
OK = sentence("ok", [row(1, "a", 2), row(2, "b", 0), row(3, "c", 2)])  # lines 2-5, blank 6


# name -> (file content after OK, [(line, message start)] that validate must print)
CASES = {
    "cycle": (sentence("s", [row(1, "a", 0), row(2, "b", 3), row(3, "c", 2)]),
              [(9, "cycle in the dependency tree through words 2 -> 3 -> 2")]),
    "two_roots": (sentence("s", [row(1, "a", 0), row(2, "b", 0), row(3, "c", 2)]),
                  [(9, "more than one root (words 1, 2 have HEAD 0")]),
    "no_root": (sentence("s", [row(1, "a", 2), row(2, "b", 1)]),
                [(8, "sentence has no root"),
                 (8, "cycle in the dependency tree through words 1 -> 2 -> 1")]),
    "head_out_of_range": (sentence("s", [row(1, "a", 0), row(2, "b", 7)]),
                          [(9, "HEAD 7 out of range (expected 0..2")]),
    "head_not_integer": (sentence("s", [row(1, "a", 0), row(2, "b", "x")]),
                         [(9, "HEAD 'x' is not an integer")]),
    "bad_ids": (sentence("s", [row(1, "a", 0), row(3, "b", 1), row("x", "c", 1)]),
                [(9, "word ID 3, expected 2"), (10, "ID 'x' is not a word ID")]),
    "too_few_columns": (sentence("s", [row(1, "a", 0), row(2, "b", 1, ncols=8),
                                       row(3, "c", 1, ncols=9)]),
                        [(9, "8 tab-separated columns, expected 10"),
                         (10, "9 tab-separated columns, expected 10")]),
    "not_utf8": (sentence("s", [row(1, "caf\udce9", 0)]),
                 [(8, "not UTF-8 text: byte 0xe9 at column 6")]),
    "binary_garbage": (None, [(7, "binary data (a NUL byte at column 1)")]),
}


def write(tmp_path, name, text):
    path = tmp_path / f"{name}.conllu"
    if name == "binary_garbage":
        path.write_bytes((HEAD + OK).encode() + bytes(range(256)) * 4)
    else:
        path.write_bytes((HEAD + OK + text).encode("utf-8", "surrogateescape"))
    return path


def run_validate(capsys, *args):
    code = main(["validate", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


@pytest.mark.parametrize("name", sorted(CASES))
def test_validate_reports_every_problem(tmp_path, capsys, name):
    text, expected = CASES[name]
    path = write(tmp_path, name, text)
    code, lines, err = run_validate(capsys, path)
    assert code == 1
    assert len(lines) == len(expected), lines
    for got, (line, message) in zip(lines, expected, strict=True):
        assert got.startswith(f"{path}:{line}: {message}"), got
    assert f"{len(expected)} problem" in err and "1 of 1 file" in err


@pytest.mark.parametrize("name", sorted(CASES))
def test_both_readers_refuse_with_the_first_problem(tmp_path, capsys, name):
    """One CoNLL-U path: the treebank and OntoGUM readers raise the same line and message,
    and it is the first line validate prints (the OntoGUM reader adds document and sentence)."""
    path = write(tmp_path, name, CASES[name][0])
    _code, lines, _err = run_validate(capsys, path)
    line, message = lines[0][len(f"{path}:"):].split(": ", 1)
    with pytest.raises(CorpusFormatError) as tb:
        read_conllu(path)
    assert str(tb.value) == f"{path}:{line}: {message}"
    with pytest.raises(CorefFormatError) as og:
        ontogum.read_ontogum(path)
    assert str(og.value).startswith(f"{path}:{line}: document d1, sentence ")
    assert str(og.value).endswith(f": {message}")


def test_empty_file(tmp_path, capsys):
    for content in (b"", b"\n  \n"):
        path = tmp_path / "empty.conllu"
        path.write_bytes(content)
        code, lines, _ = run_validate(capsys, path)
        assert code == 1 and lines == [f"{path}:1: no sentences: the file is empty or has only "
                                       f"blank lines (expected CoNLL-U sentence blocks separated "
                                       f"by blank lines)"]
        for reader in (read_conllu, ontogum.read_ontogum):
            with pytest.raises(CorpusFormatError, match=r"empty\.conllu:1: no sentences"):
                reader(path)


def test_unclosed_mention_only_with_coref(tmp_path, capsys):
    path = tmp_path / "unclosed.conllu"
    path.write_text(HEAD + OK + sentence("s", [row(1, "a", 0, "Entity=(4"), row(2, "b", 1)]))
    code, lines, _ = run_validate(capsys, path)
    assert code == 0 and lines == ["ok: 1 file, 2 sentences, 5 words"]  # the CoNLL-U is fine
    code, lines, _ = run_validate(capsys, path, "--coref")
    assert code == 1
    assert lines == [f"{path}:8: document d1, sentence s: mention of entity 4 opened here is "
                     f"never closed"]
    with pytest.raises(CorefFormatError, match=lines[0].replace("(", r"\(")):
        ontogum.read_ontogum(path)


def test_all_problems_of_a_file_in_line_order(tmp_path, capsys):
    """Collect and continue: one file with a fault in several sentences and brackets."""
    path = tmp_path / "many.conllu"
    path.write_text(HEAD + OK
                    + sentence("s2", [row(1, "a", 0, "Entity=(1"), row(2, "b", 0)])     # 7-9
                    + sentence("s3", [row(1, "a", 0, "Entity=1)"), row(2, "b", 1, ncols=4),
                                      row(3, "c", 1, "Entity=2)")])                      # 11-14
                    + sentence("s4", [row(1, "a", 2), row(2, "b", 0, "Entity=(3)")])     # 16-18
                    + sentence("s5", [row(1, "a", 0, "Entity=(5")]))                     # 20-21
    code, lines, err = run_validate(capsys, path, "--coref")
    assert code == 1 and "4 problems in 1 of 1 file" in err
    where = [ln[len(str(path)) + 1:].split(": ", 2)[:2] for ln in lines]
    assert where == [["9", "document d1, sentence s2"], ["13", "document d1, sentence s3"],
                     ["14", "document d1, sentence s3"], ["21", "document d1, sentence s5"]]
    assert "more than one root" in lines[0] and "4 tab-separated columns" in lines[1]
    assert "closing bracket '2)'" in lines[2] and "entity 5 opened here is never" in lines[3]


def test_clean_files_exit_zero_with_one_summary_line(tmp_path, capsys):
    a = tmp_path / "a.conllu"
    a.write_text(HEAD + OK + sentence("s", [row(1, "x", 0, "Entity=(1"),
                                            row(2, "y", 1, "Entity=1)|SpaceAfter=No")]))
    folder = tmp_path / "more"
    folder.mkdir()
    (folder / "b.conllu").write_text("# newdoc id = d2\n" + OK)
    (folder / "c.conllu").write_text("# newdoc id = d3\n" + OK + OK)
    code, lines, err = run_validate(capsys, a, folder)
    assert (code, lines, err) == (0, ["ok: 3 files, 5 sentences, 14 words"], "")
    code, lines, _ = run_validate(capsys, a, folder, "--coref")
    assert lines == ["ok: 3 files, 5 sentences, 14 words, 3 documents, 1 mentions"] and code == 0


def test_unreadable_path_and_usage(tmp_path, capsys):
    missing = tmp_path / "nope.conllu"
    code, lines, err = run_validate(capsys, missing)
    assert code == 1 and lines == [f"{missing}: cannot read the file: No such file or directory"]
    with pytest.raises(SystemExit) as exc:
        main(["validate"])
    assert exc.value.code == 2


def test_command_line_entry_point(tmp_path):
    path = write(tmp_path, "two_roots", CASES["two_roots"][0])
    proc = subprocess.run([sys.executable, "-m", "analysis_utils", "validate", str(path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"{path}:9: more than one root")


@pytest.mark.gold_data
def test_gold_ontogum_dev_is_clean(gold_data_dir, capsys):
    code, lines, _ = run_validate(capsys, "--coref", *[
        gold_data_dir / f"ontogum/conllu/{name}.conllu"
        for name in (gold_data_dir / "ontogum/splits/ontogum.dev.txt").read_text().split()])
    # shared/data/README.md section 2
    assert (code, lines) == (0, ["ok: 30 files, 1575 sentences, 28119 words, 30 documents, "
                                 "3818 mentions"])
