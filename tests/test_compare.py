"""`python -m analysis_utils compare`: a rerun's tables against their committed versions.

Every test builds its own throwaway git repository in tmp_path (git init, commit a results/
folder), so nothing depends on this repository's history.
"""

from __future__ import annotations

import json
import subprocess

import pandas as pd
import pytest

from analysis_utils.__main__ import main
from analysis_utils.publish import compare, report

TABLE3 = """probe,paper,dev uas,dev uas sd,trees %
Right-branching,26,32.058717,,100.0
Attention only,61,57.094962,0.4,23.988006
Attention + GloVe,77,61.120001,0.3,30.5
"""
COUNTS = """relation,layer,head,correct,total,accuracy
nsubj,3,9,2277,3908,58.265097
obj,3,9,1200,2000,60.0
"""
MATRIX = """1-1,1-2
0.0,104.48379
104.48379,0.0
"""
PROVENANCE = {"notebook": "04", "tables": {
    "04_table3.csv": {"tolerance": {"dev uas": {"sd": "dev uas sd", "k": 2.0},
                                    "trees %": compare.IGNORE}, "key": ["probe"]}}}


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c",
                           "user.email=t@example.org", "-c", "commit.gpgsign=false", *args],
                          check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path):
    """A git repository whose HEAD commits results/ with three tables and a provenance."""
    root = tmp_path / "repo"
    res = root / "results"
    res.mkdir(parents=True)
    (res / "04_table3.csv").write_text(TABLE3)
    (res / "02_head_scores.csv").write_text(COUNTS)
    (res / "05_js_distance.csv").write_text(MATRIX)
    (res / "04_provenance.json").write_text(json.dumps(PROVENANCE))
    _git(root, "init", "-q")
    _git(root, "add", "results")
    _git(root, "commit", "-q", "-m", "results")
    return root


def _edit(repo, name, old, new):
    path = repo / "results" / name
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


def _compare(repo, capsys, *extra):
    rc = main(["compare", "--repo", str(repo), "--results", str(repo / "results"), *extra])
    return rc, capsys.readouterr().out


def test_unchanged_tables_exit_0(repo, capsys):
    rc, out = _compare(repo, capsys)
    assert rc == 0, out
    assert out.strip().splitlines() == [
        f"compare: 3 tables match HEAD ({_git(repo, 'rev-parse', '--short', 'HEAD').strip()}) "
        "within tolerance"]


def test_value_beyond_default_tolerance_names_table_row_and_column(repo, capsys):
    _edit(repo, "02_head_scores.csv", "58.265097", "58.3")
    rc, out = _compare(repo, capsys)
    assert rc == 1
    lines = out.strip().splitlines()
    assert lines[0] == ("02_head_scores.csv [relation=nsubj] accuracy: committed 58.265097, "
                        f"new 58.3 (|diff| 0.034903 > tol {compare.DEFAULT_FLOAT_ABS:g})")
    assert lines[-1].startswith("compare: 1 of 3 tables differ") and "values outside tolerance: 1" in lines[-1]


def test_value_within_default_tolerance_passes(repo, capsys):
    _edit(repo, "02_head_scores.csv", "58.265097", f"{58.265097 + compare.DEFAULT_FLOAT_ABS / 2}")
    rc, out = _compare(repo, capsys)
    assert rc == 0, out


def test_integers_are_exact_and_text_is_compared(repo, capsys):
    _edit(repo, "02_head_scores.csv", "2277", "2278")
    _edit(repo, "04_table3.csv", "Right-branching,26", "Right-branching,27")
    rc, out = _compare(repo, capsys)
    assert rc == 1
    assert "02_head_scores.csv [relation=nsubj] correct: committed 2277, new 2278 " \
           "(|diff| 1, must be exact)" in out
    assert "04_table3.csv [probe=Right-branching] paper: committed 26, new 27" in out


def test_tolerance_from_the_stated_sd(repo, capsys):
    # dev uas sd = 0.4 and k = 2 in the declaration: 0.79 passes, 0.81 fails.
    _edit(repo, "04_table3.csv", "57.094962", f"{57.094962 + 0.79:.6f}")
    rc, out = _compare(repo, capsys)
    assert rc == 0, out
    _edit(repo, "04_table3.csv", f"{57.094962 + 0.79:.6f}", f"{57.094962 + 0.81:.6f}")
    rc, out = _compare(repo, capsys)
    assert rc == 1
    assert "04_table3.csv [probe=Attention only] dev uas: committed 57.094962, new 57.904962" \
        " (|diff| 0.81 > tol 2 x dev uas sd = 0.8)" in out


def test_ignored_column_and_row_without_sd(repo, capsys):
    _edit(repo, "04_table3.csv", "23.988006", "99.0")  # "trees %": IGNORE
    rc, out = _compare(repo, capsys)
    assert rc == 0, out
    # no sd on this row: the rule has no floor, so any change is outside tolerance
    _edit(repo, "04_table3.csv", "32.058717", "32.058718")
    rc, out = _compare(repo, capsys)
    assert rc == 1 and "[probe=Right-branching] dev uas" in out and "> tol 0 (dev uas sd empty)" in out


def test_nan_equals_nan_but_not_a_number():
    old = "k,x,y\na,,1.0\nb,nan,2.0\n"
    assert compare.compare_tables(old, "k,x,y\na,nan,1.0\nb,,2.0\n") == []
    issues = compare.compare_tables(old, "k,x,y\na,0.5,1.0\nb,nan,2.0\n", "t.csv")
    assert [(i.row, i.column, i.message) for i in issues] == [("k=a", "x", "one side is NaN")]


def test_rows_columns_shape_and_tables_on_one_side(repo, capsys):
    _edit(repo, "04_table3.csv", "Attention + GloVe,77,61.120001,0.3,30.5\n", "")
    _edit(repo, "02_head_scores.csv", "relation,layer,head,correct,total,accuracy",
          "relation,layer,head,correct,n,accuracy")
    (repo / "results" / "05_js_distance.csv").unlink()
    (repo / "results" / "06_new.csv").write_text("a\n1\n")
    rc, out = _compare(repo, capsys)
    assert rc == 1
    assert "04_table3.csv: shape changed: committed 3 rows x 5 columns, new 2 x 5" in out
    assert "04_table3.csv [probe=Attention + GloVe]: row missing in the new table" in out
    assert "02_head_scores.csv: column 'total' missing in the new table" in out
    assert "02_head_scores.csv: column 'n' is new (not in the committed)" in out
    assert "05_js_distance.csv: only in HEAD" in out
    assert "06_new.csv: only in the new results" in out
    assert "4 of 4 tables differ" in out.strip().splitlines()[-1]


def test_all_float_table_is_matched_by_position(repo, capsys):
    _edit(repo, "05_js_distance.csv", "104.48379,0.0", "104.48379,0.5")
    rc, out = _compare(repo, capsys)
    assert rc == 1
    assert "05_js_distance.csv [row 2] 1-2: committed 0.0, new 0.5" in out


def test_against_an_older_revision_and_only(repo, capsys):
    first = _git(repo, "rev-parse", "HEAD").strip()
    _edit(repo, "02_head_scores.csv", "58.265097", "59.0")
    _git(repo, "commit", "-q", "-am", "change")
    rc, _ = _compare(repo, capsys)
    assert rc == 0
    rc, out = _compare(repo, capsys, "--against", first)
    assert rc == 1 and "02_head_scores.csv [relation=nsubj] accuracy" in out
    rc, out = _compare(repo, capsys, "--against", first, "--only", "4,5")
    assert rc == 0, out
    assert main(["compare", "--repo", str(repo), "--against", "no-such-rev"]) == 2


def test_tolerance_declared_through_run_table(repo, capsys, monkeypatch):
    """End to end: run.table records the tolerance and key; compare reads them from the rerun's
    provenance."""
    monkeypatch.setenv(report.OUTPUT_ENV, str(repo))
    df = pd.DataFrame({"relation": ["nsubj", "obj"], "layer": [3, 3], "head": [9, 9],
                       "correct": [2277, 1200], "total": [3908, 2000],
                       "accuracy": [58.265097, 60.0]})
    run = report.start_run("02", {})
    run.table(df.assign(accuracy=df.accuracy + 0.4), "head_scores", tolerance={"accuracy": 0.5},
              key=["relation", "layer", "head"])
    prov = json.loads(run.finish().read_text())
    assert prov["tables"]["02_head_scores.csv"] == {
        "tolerance": {"accuracy": {"abs": 0.5}}, "key": ["relation", "layer", "head"]}
    rc, out = _compare(repo, capsys)
    assert rc == 0, out
    run = report.start_run("02", {})
    run.table(df.assign(accuracy=df.accuracy + 0.6), "head_scores", tolerance={"accuracy": 0.5},
              key=["relation", "layer", "head"])
    run.finish()
    rc, out = _compare(repo, capsys)
    assert rc == 1
    assert "02_head_scores.csv [relation=nsubj, layer=3, head=9] accuracy: committed " \
           "58.265097, new 58.865097 (|diff| 0.6 > tol 0.5)" in out


@pytest.mark.parametrize("spec, match", [
    ({"acc": 0.1}, "does not have"),
    ({"accuracy": compare.from_sd("accuracy_sd")}, "sd column 'accuracy_sd'"),
    ({"accuracy": -1}, "must not be negative"),
    ({"accuracy": {"atol": 1}}, "unknown keys"),
    ("0.1", "must be a number"),
])
def test_bad_tolerance_spec_is_refused_where_declared(spec, match):
    with pytest.raises(ValueError, match=match):
        compare.normalise_tolerance(spec, ["relation", "accuracy"], "02_x.csv")


def test_spec_forms_normalise_to_one_json_shape():
    assert compare.normalise_tolerance(None) is None
    assert compare.normalise_tolerance(0.5) == {"*": {"abs": 0.5}}
    assert compare.normalise_tolerance({"uas *": compare.within(rel=0.01), "n": compare.EXACT},
                                       ["uas dev", "n"]) == {"uas *": {"rel": 0.01},
                                                             "n": {"abs": 0.0}}
    assert compare.normalise_tolerance({"acc": compare.from_sd("acc_sd", k=3)},
                                       ["acc", "acc_sd"]) == {"acc": {"sd": "acc_sd", "k": 3.0,
                                                                      "abs": 0.0}}


# ------------------------------------------------------------- cross-device (issue 34)
# notebook 06's per-seed fine-tunes (MRPC and STS-B pre-trained, three seeds each, as the
# committed CPU run made them), its declared tolerance (3 points) and row key
RUNS = """task,init,seed,train,dev,f1,accuracy,train minutes,from cache,pearson,spearman,matthews
MRPC,pretrained,42,3668,408,84.124386,76.22549,8.955006,True,,,
MRPC,pretrained,43,3668,408,84.74026,76.960784,8.963079,True,,,
MRPC,pretrained,44,3668,408,84.437086,76.960784,12.860902,True,,,
STS-B,pretrained,42,5749,1500,,,11.464355,True,80.865175,83.199168,
STS-B,pretrained,43,5749,1500,,,11.056112,True,82.868204,84.220704,
STS-B,pretrained,44,5749,1500,,,10.447515,True,80.645681,83.403724,
"""
RUNS_DECL = {"tolerance": {**{m: {"abs": 3.0} for m in ("accuracy", "f1", "pearson",
                                                          "spearman", "matthews")},
                           "train": {"abs": 0.0}, "dev": {"abs": 0.0},
                           "train minutes": {"ignore": True}, "from cache": {"ignore": True}},
             "key": ["task", "init", "seed"]}


def _provenance(device, kind=None):
    return {"notebook": "06", "device": device, **({"device_kind": kind} if kind else {}),
            "tables": {"06_finetune_runs.csv": RUNS_DECL}}


@pytest.fixture
def runs_repo(tmp_path):
    """A repository whose HEAD commits 06's fine-tune table as the CPU run made it."""
    root = tmp_path / "runs"
    res = root / "results"
    res.mkdir(parents=True)
    (res / "06_finetune_runs.csv").write_text(RUNS)
    (res / "06_provenance.json").write_text(json.dumps(_provenance("cpu (2 cores)")))
    _git(root, "init", "-q")
    _git(root, "add", "results")
    _git(root, "commit", "-q", "-m", "results")
    # the rerun: MRPC seed 42's F1 +2.0, STS-B seed 43's Pearson -2.11
    _edit(root, "06_finetune_runs.csv", "84.124386", "86.124386")
    _edit(root, "06_finetune_runs.csv", "82.868204", "80.758204")
    return root


@pytest.mark.parametrize("device,kind", [("NVIDIA H100 80GB HBM3", None),
                                         ("NVIDIA H100 80GB HBM3", "cuda")])
def test_a_gpu_rerun_is_held_to_the_cross_device_tolerance(runs_repo, capsys, device, kind):
    """Against the committed CPU run, a GPU rerun's per-seed metrics are compared under
    max(3 x sqrt(2) x seed sd, 2 dev examples) per task and init: MRPC F1's +2.0 exceeds its
    1.31, STS-B Pearson's -2.11 lies inside its 5.20."""
    (runs_repo / "results" / "06_provenance.json").write_text(
        json.dumps(_provenance(device, kind)))
    rc, out = _compare(runs_repo, capsys)
    assert rc == 1, out
    head = _git(runs_repo, "rev-parse", "--short", "HEAD").strip()
    assert (f"compare: 06: committed (HEAD ({head})) made on cpu (2 cores), new on cuda "
            f"(NVIDIA H100 80GB HBM3); cross-device tolerances apply") in out
    rep = compare.compare_results(runs_repo / "results", repo=runs_repo)
    [issue] = rep.issues
    assert (issue.table, issue.row, issue.column) == (
        "06_finetune_runs.csv", "task=MRPC, init=pretrained, seed=42", "f1")
    assert issue.tolerance == "1.30652 cross-device" and issue.message == "|diff| 2"
    assert "(|diff| 2 > tol 1.30652 cross-device)" in out
    tol = compare.cross_device_tolerances(RUNS)["tolerances"]
    assert round(tol[("MRPC", "pretrained", "f1")], 2) == 1.31
    assert round(tol[("STS-B", "pretrained", "pearson")], 2) == 5.20


def test_a_rerun_on_the_same_kind_of_device_keeps_the_declared_tolerance(runs_repo, capsys):
    (runs_repo / "results" / "06_provenance.json").write_text(
        json.dumps(_provenance("cpu (16 cores)", "cpu")))
    rc, out = _compare(runs_repo, capsys)
    assert rc == 0, out  # +2.0 and -2.11 are both within the declared 3 points
    assert "made on cpu (2 cores), new on cpu (16 cores)" in out
    assert "cross-device" not in out


def test_device_kind_is_read_off_the_provenance_device():
    assert [compare.device_kind(d) for d in ("cpu (2 cores)", "cuda:1", "NVIDIA H100 80GB HBM3",
                                             "mps", None)] == ["cpu", "cuda", "cuda", "mps", None]
