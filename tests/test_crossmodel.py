"""Notebook 08's readers of saved tables, on small hand-made run folders: two models of
different depth, one folder that lacks a table, one that does not exist."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis_utils import ledger, papers
from analysis_utils.analyses import crossmodel as cm


def _provenance(folder, prefix, name, layers, heads, model_type="bert", sha="a", **params):
    ident = {"name": name, "num_layers": layers, "num_heads": heads, "model_type": model_type,
             "weights_sha256": sha}
    (folder / f"{prefix}_provenance.json").write_text(json.dumps(
        {"notebook": prefix, "parameters": params, "models": {"model": ident}}))


def _per_head(layers, heads, prev=(), nxt=(), entropy=2.0):
    rows = []
    for layer in range(1, layers + 1):
        for head in range(1, heads + 1):
            rows.append({"layer": layer, "head": head,
                         "previous": 0.9 if (layer, head) in prev else 0.1,
                         "next": 0.6 if (layer, head) in nxt else 0.1,
                         "entropy": entropy * layer, "entropy_cls": 1.0,
                         "max_weight": 0.5})
    return pd.DataFrame(rows)


def _write(folder, name, rows):
    pd.DataFrame(rows).to_csv(folder / name, index=False)


def _norms_rows(shares):
    """Rows of ``01_norms_by_layer.csv`` from ``{(model_kind, layer): {target: (weight share,
    norm share)}}``; ``other`` takes the rest of both shares."""
    rows = []
    for (kind, layer), by_target in shares.items():
        w_rest = 1 - sum(w for w, _ in by_target.values())
        n_rest = 1 - sum(n for _, n in by_target.values())
        for target, (w, n) in {**by_target, "other": (w_rest, n_rest)}.items():
            rows.append({"model_kind": kind, "layer": layer, "target": target,
                         "weight_share": w, "norm_share": n, "norm_ratio": n / w,
                         "norm_over_weight": n / w})
    return rows


@pytest.fixture
def root(tmp_path):
    """``results`` (a 2 x 2 BERT-like model, every table) and ``results/base`` (a 4 x 2
    MPNet-like model without notebook 02's tables); ``results/ghost`` does not exist."""
    a = tmp_path / "results"
    b = a / "base"
    b.mkdir(parents=True)
    for p in ("01", "02", "03", "04", "05"):
        _provenance(a, p, "tiny-a", 2, 2, wide_margin=10.0, n_segments=100)
    for p in ("01", "03", "04", "05"):
        _provenance(b, p, "tiny-b", 4, 2, model_type="mpnet", n_segments=100)
    # 01: layer shares (layer 1: punctuation the largest of the three classes; layer 2: cls)
    _write(a, "01_layer_token_class_shares.csv", [
        {"layer": 1, "model cls": 0.05, "model sep": 0.02, "model punct": 0.10,
         "model other": 0.83, "control cls": 0.05, "control sep": 0.05, "control punct": 0.05,
         "control other": 0.85},
        {"layer": 2, "model cls": 0.60, "model sep": 0.10, "model punct": 0.05,
         "model other": 0.25, "control cls": 0.04, "control sep": 0.05, "control punct": 0.06,
         "control other": 0.85}])
    _write(b, "01_layer_token_class_shares.csv", [
        {"layer": k, "model cls": 0.1, "model sep": 0.5 if k == 3 else 0.2,
         "model punct": 0.1, "model other": 0.0, "control cls": 0.1, "control sep": 0.1,
         "control punct": 0.1, "control other": 0.7} for k in (1, 2, 3, 4)])
    _per_head(2, 2, prev={(1, 2)}, nxt={(2, 1)}).to_csv(a / "01_per_head_model.csv", index=False)
    _per_head(2, 2, entropy=4.0).to_csv(a / "01_per_head_control.csv", index=False)
    _per_head(4, 2, prev={(2, 1), (4, 2)}).to_csv(b / "01_per_head_model.csv", index=False)
    _per_head(4, 2, entropy=4.0).to_csv(b / "01_per_head_control.csv", index=False)
    for folder in (a, b):
        _write(folder, "01_paper_vs_run.csv", [
            {"claim": "heads > 90% from [SEP] to [SEP]" if folder == a
             else "heads > 90% from </s> to </s>",
             "paper (BERT-base)": "> 90% for some heads", "model": 0.0 if folder == a else 2.0,
             "unit": "heads", "which": "", "layers of this model": ""}])
    # 01's attention norms (only results/, as a run before they existed): layer 2's first
    # token is weighted 60% but carries 6% of the norms; layer 1's separators 30% vs 20%
    _write(a, "01_norms_by_layer.csv", _norms_rows({
        ("model", 1): {"cls": (0.05, 0.02), "sep": (0.30, 0.20), "punct": (0.05, 0.05)},
        ("model", 2): {"cls": (0.60, 0.06), "sep": (0.05, 0.05), "punct": (0.05, 0.10)},
        **{("control", k): {"cls": (0.02, 0.02), "sep": (0.04, 0.04), "punct": (0.10, 0.10)}
           for k in (1, 2)}}))
    # 02 (only results/): Table 1 with two paper relations and one UD-only relation
    _write(a, "02_table1_model.csv", [
        {"relation": "All", "head": "2-1", "accuracy": 40.0, "baseline": 30.0, "sd_relation": "All"},
        {"relation": "obj", "head": "1-2", "accuracy": 70.0, "baseline": 35.0,
         "sd_relation": "dobj"},
        {"relation": "flat", "head": "1-1", "accuracy": 50.0, "baseline": 45.0,
         "sd_relation": None}])
    _write(a, "02_table1_control.csv", [
        {"relation": "All", "head": "1-1", "accuracy": 10.0, "baseline": 30.0, "sd_relation": "All"},
        {"relation": "obj", "head": "2-2", "accuracy": 12.0, "baseline": 35.0,
         "sd_relation": "dobj"}])
    _write(a, "02_paper_vs_run.csv", [
        {"paper relation": "All", "relation here": "All", "head": "2-1", "accuracy": 40.0,
         "baseline": 30.0, "margin": 10.0},
        {"paper relation": "prep", "relation here": "\u2013", "head": "\u2013",
         "accuracy": None, "baseline": None, "margin": None}])
    # 03
    for folder, head, best, ctrl in ((a, "head 2-2", 60.0, 3.0), (b, "head 3-1", 70.0, 4.0)):
        _write(folder, "03_table2.csv", [
            {"system": "nearest", "source": "this run", "All": 30.0, "pronoun": 31.0,
             "proper": 29.0, "nominal": 20.0},
            {"system": "head_match", "source": "this run", "All": 50.0, "pronoun": 45.0,
             "proper": 65.0, "nominal": 40.0},
            {"system": "rule_based", "source": "this run", "All": 70.0, "pronoun": 70.0,
             "proper": 77.0, "nominal": 60.0},
            {"system": head, "source": "this run", "All": best, "pronoun": best,
             "proper": best, "nominal": best},
            {"system": "control head 1-1", "source": "this run", "All": ctrl, "pronoun": ctrl,
             "proper": ctrl, "nominal": ctrl},
            {"system": "paper: head 5-4", "source": "paper", "All": 65.0, "pronoun": 64.0,
             "proper": 73.0, "nominal": 58.0}])
        _write(folder, "03_paper_vs_run.csv", [
            {"claim": "best head vs. nearest mention", "paper": 38.0, "this run": best - 30.0,
             "paper detail": "head 5-4 65% vs. 27%", "detail": f"{head} vs. 30%"}])
    # 04: attention-only 60 +- 1 vs right-branching 30; att+GloVe 61 +- 1 vs dist 60 +- 1
    for folder in (a, b):
        _write(folder, "04_table3.csv", [
            {"probe": "Right-branching", "n seeds": None, "dev argmax mean": 30.0,
             "dev argmax sd": None},
            {"probe": "Distances + GloVe", "n seeds": 2, "dev argmax mean": 60.0,
             "dev argmax sd": 1.0},
            {"probe": "Random-init attention + GloVe", "n seeds": 2, "dev argmax mean": 20.0,
             "dev argmax sd": 1.0},
            {"probe": "Attention only", "n seeds": 2, "dev argmax mean": 60.0,
             "dev argmax sd": 1.0},
            {"probe": "Attention + GloVe", "n seeds": 2, "dev argmax mean": 61.0,
             "dev argmax sd": 1.0}])
    # 05
    for folder, ratio, p in ((a, 0.8, 0.001), (b, 0.95, 0.2)):
        _write(folder, "05_layer_separation.csv", [
            {"model": "model", "ratio": ratio, "p_value": p, "n_perm": 1000, "p": f"p = {p}",
             "stress": 0.3},
            {"model": "control", "ratio": 1.0, "p_value": 0.5, "n_perm": 1000, "p": "p = 0.5",
             "stress": 0.4}])
        _write(folder, "05_type_proportions.csv", [
            {"task": t, "type": typ, "share_mean": s}
            for t, het in (("MRPC", 0.40), ("RTE", 0.50), ("CoLA", 0.10))
            for typ, s in (("Heterogeneous", het), ("Vertical", 1 - het))])
    return tmp_path


@pytest.fixture
def three_runs(root):
    """The three folders of ``root``, in order: results, results/base, results/ghost."""
    return cm.load_runs("results,results/base,results/ghost", root=root)


def _base_lacks_and_ghost(table, only):
    """What :func:`cm.gaps` says of ``three_runs`` for a question whose ``table`` (written by
    notebook ``only``) results/base lacks: that, then that results/ghost does not exist."""
    return [f"not run: results/base has no {table}; produce it with "
            f"`python -m analysis_utils run --profile base --only {only}`",
            "not run: results/ghost does not exist; produce it with "
            "`python -m analysis_utils run --profile ghost`"]


def test_relative_depth_and_the_papers_layers():
    assert cm.relative_depth(3, 6) == 0.5
    assert cm.relative_depth(12, 12) == 1.0
    np.testing.assert_allclose(cm.relative_depth([1, 6], 6), [1 / 6, 1.0])
    assert cm.paper_layers(papers.CLARK_SECTION3["previous"]) == [2, 4, 7, 8]
    assert cm.paper_layers(papers.CLARK_SECTION3["next"]) == [1, 2, 2, 3, 6]
    assert cm.paper_layers("> 50% in layers 6-10") == [6, 7, 8, 9, 10]
    share, lo, hi = cm.paper_sep_band()
    assert (share, lo, hi) == (0.5, 6 / 12, 10 / 12)
    assert cm.paper_sink_notes() == {"first token": "[CLS] in early layers",
                                     "punctuation": "./, in deep layers",
                                     "separator": "> 50% in layers 6-10"}
    assert cm.paper_sink_row()["layers there"] == "6-10 of 12"


def test_load_runs_reads_model_and_shape_from_provenance(root):
    runs = cm.load_runs("results, results/base,results/ghost,results", root=root)
    assert [r.folder for r in runs] == ["results", "results/base", "results/ghost"]
    a, b, ghost = runs
    assert (a.model, a.num_layers, a.num_heads, a.label) == ("tiny-a", 2, 2, "tiny-a (2 x 2)")
    assert b.tokens()["cls"] == "<s>" and a.tokens()["sep"] == "[SEP]"
    assert cm.role_names(runs)["separator"] == "separator ([SEP], </s>)"
    assert not ghost.exists and ghost.label == "results/ghost" and not ghost.present
    assert a.parameters["02"]["wide_margin"] == 10.0


def test_missing_folder_and_missing_table_are_named_with_the_command(three_runs):
    runs = three_runs
    assert cm.gaps(runs, "syntax") == _base_lacks_and_ghost("02_table1_model.csv", "02")
    assert cm.gaps(runs, "coref") == [cm.gaps(runs, "syntax")[1]]
    assert cm.profile_for("results") == "default"
    table = cm.availability(runs).set_index("folder")
    assert table.loc["results", "02"] == "yes"
    assert table.loc["results/base", "02"].startswith("missing or unreadable: 02_")
    assert table.loc["results/ghost", "01"] == "folder missing"
    # the questions still answer for the runs that can
    syn = cm.syntax_best_heads(runs)
    assert set(syn["model"]) == {"tiny-a (2 x 2)", cm.PAPER}


def test_two_folders_of_one_model_keep_apart(root, tmp_path):
    import shutil

    shutil.copytree(root / "results" / "base", tmp_path / "again")
    runs = cm.load_runs(["results/base", str(tmp_path / "again")], root=root)
    assert runs[0].label == "tiny-b (4 x 2) [results/base]"
    assert len(set(cm.sink_by_layer(runs)["model"])) == 2


def test_a_provenance_naming_another_model_is_a_problem(root):
    _provenance(root / "results", "03", "other", 2, 2, sha="b")
    (run,) = cm.load_runs("results", root=root)
    assert run.problems == ["03_provenance.json names another model (other) than the rest "
                            "(tiny-a)"]


def test_sink_by_layer_is_the_largest_of_the_three_token_classes(root):
    sink = cm.sink_by_layer(cm.load_runs("results,results/base", root=root))
    a = sink[(sink["model"] == "tiny-a (2 x 2)") & (sink["weights"] == "pre-trained")]
    assert list(a["sink"]) == ["punctuation", "first token"]
    assert list(a["sink token"]) == [". ,", "[CLS]"]
    assert a["x control"].tolist() == pytest.approx([0.10 / 0.05, 0.60 / 0.04])
    assert a["relative depth"].tolist() == [0.5, 1.0]
    b = sink[(sink["model"] == "tiny-b (4 x 2)") & (sink["weights"] == "pre-trained")]
    assert list(b["sink token"]) == ["</s>"] * 4
    summary = cm.sink_summary(sink).set_index("model")
    # the paper's layers 6-10 are relative depths 0.5-0.83: layer 1 of 2; layers 2-3 of 4
    assert summary.loc["tiny-a (2 x 2)", "layers there"] == "1"
    assert summary.loc["tiny-b (4 x 2)", "separator share, paper's layers 6-10 (%)"] == \
        pytest.approx(100 * (0.2 + 0.5) / 2)


def test_positional_heads_with_the_papers_layers(root):
    runs = cm.load_runs("results,results/base", root=root)
    heads = cm.positional_heads(runs)
    a = heads[heads["model"] == "tiny-a (2 x 2)"]
    assert a[["direction", "head", "relative depth"]].values.tolist() == [
        ["previous", "1-2", 0.5], ["next", "2-1", 1.0]]
    paper = heads[(heads["model"] == cm.PAPER) & (heads["direction"] == "previous")]
    assert paper["layer"].tolist() == [2, 4, 7, 8]
    summary = cm.positional_summary(heads, runs).set_index(["model", "weights", "direction"])
    assert summary.loc[("tiny-b (4 x 2)", "pre-trained", "previous"), "heads"] == 2
    assert summary.loc[("tiny-b (4 x 2)", "pre-trained", "previous"),
                       "of all heads (%)"] == 25.0
    assert summary.loc[("tiny-b (4 x 2)", "pre-trained", "previous"),
                       "which (relative depth)"] == "2-1 (0.50), 4-2 (1.00)"
    assert summary.loc[("tiny-a (2 x 2)", "control", "next"), "heads"] == 0
    assert summary.loc[(cm.PAPER, "pre-trained", "next"), "heads"] == 5


def test_entropy_by_layer_against_the_control(root):
    ent = cm.entropy_by_layer(cm.load_runs("results", root=root))
    assert ent["entropy"].tolist() == [2.0, 4.0]
    assert ent["entropy / control"].tolist() == [0.5, 0.5]  # control: 4 nats x layer
    claims = cm.entropy_claims(cm.load_runs("results", root=root)).set_index(
        ["model", "weights"])
    row = claims.loc[("tiny-a (2 x 2)", "pre-trained")]
    assert row["layer 1: lowest mean max weight (%)"] == 50.0
    assert row["last layer: entropy from first token (nats)"] == 1.0
    assert claims.loc[(cm.PAPER, "pre-trained"), "last layer: entropy from first token "
                      "(nats)"] == papers.CLARK_SECTION3["cls_entropy_last"]


def test_syntax_best_heads_beside_the_paper(root):
    syn = cm.syntax_best_heads(cm.load_runs("results", root=root))
    obj = syn[(syn["paper relation"] == "dobj") & (syn["model"] == "tiny-a (2 x 2)")].iloc[0]
    assert (obj["relation here"], obj["head"], obj["relative depth"]) == ("obj", "1-2", 0.5)
    assert obj["margin"] == 35.0 and obj["control accuracy"] == 12.0
    paper = syn[(syn["paper relation"] == "dobj") & (syn["model"] == cm.PAPER)].iloc[0]
    assert paper["head"] == "8-10" and paper["relative depth"] == 8 / 12
    assert "flat" not in set(syn["relation here"])  # no paper counterpart
    assert list(syn["paper relation"].unique()) == ["All", *[r for r in papers.CLARK_TABLE1
                                                            if r != "All"]]


def test_syntax_without_the_control_table(root):
    (root / "results" / "02_table1_control.csv").unlink()
    runs = cm.load_runs("results", root=root)
    assert cm.gaps(runs, "syntax") == []
    syn = cm.syntax_best_heads(runs)
    assert syn.loc[syn["model"] == "tiny-a (2 x 2)", "control accuracy"].isna().all()


def test_coref_best_head_and_margins(root):
    co = cm.coref_best_heads(cm.load_runs("results,results/base", root=root)).set_index("model")
    assert co.loc[cm.PAPER, "best head"] == "5-4"
    assert co.loc[cm.PAPER, "best head - head-word match"] == 13.0
    b = co.loc["tiny-b (4 x 2)"]
    assert (b["best head"], b["relative depth"], b["control head"]) == ("3-1", 0.75, "1-1")
    assert b["best head - rule-based sieve"] == 0.0 and b["best head - nearest mention"] == 40.0


def test_probe_clustering_and_map_types(root):
    runs = cm.load_runs("results,results/base", root=root)
    uas = cm.probe_uas(runs)
    a = uas[uas["model"] == "tiny-a (2 x 2)"].set_index("probe")
    assert a.loc["Attention only", "uas"] == 60.0 and np.isnan(a.loc["Right-branching", "sd"])
    assert uas[uas["model"] == cm.PAPER].set_index("probe").loc["Attention + GloVe", "uas"] == 77
    cl = cm.clustering_ratio(runs)
    assert cl["model"].iloc[0] == cm.PAPER and cl["p"].iloc[0].startswith("yes")
    assert cl[["weights", "ratio"]].values.tolist()[1:3] == [["pre-trained", 0.8],
                                                              ["control", 1.0]]
    mt = cm.map_type_proportions(runs)
    het = mt[(mt["model"] == "tiny-a (2 x 2)") & (mt["type"] == "Heterogeneous")].iloc[0]
    # CoLA is not a task of the paper: only MRPC and RTE count
    assert het["share"] == pytest.approx(0.45)
    assert (het["lowest task"], het["highest task"]) == ("MRPC", "RTE")
    view = cm.map_type_view(mt)
    assert view.loc["Heterogeneous", "tiny-a (2 x 2)"] == "45% (40% MRPC - 50% RTE)"
    assert view.loc["Heterogeneous", cm.PAPER] == "\u2013 (32% MRPC - 61% QQP)"
    assert view.loc["Vertical", cm.PAPER] == "\u2013"
    paper = mt[mt["model"] == cm.PAPER].iloc[0]
    assert (paper["type"], paper["lowest"], paper["highest"]) == ("Heterogeneous", 0.32, 0.61)


def test_nothing_to_compare_gives_empty_frames_not_errors(tmp_path):
    runs = cm.load_runs("results,results/base", root=tmp_path)
    assert all(len(cm.gaps(runs, q)) == 2 for q in cm.NEEDS)
    for frame in (cm.sink_by_layer(runs), cm.entropy_by_layer(runs),
                  ledger.wide(ledger.build([]))):
        assert frame.empty
    # the paper's rows stay
    for frame in (cm.positional_heads(runs), cm.coref_best_heads(runs),
                  cm.clustering_ratio(runs), cm.map_type_proportions(runs),
                  cm.entropy_claims(runs), cm.probe_uas(runs)):
        assert set(frame["model"]) <= {cm.PAPER, "BERT-base (EWT reproduction)"}


def test_setup_tables_opens_a_run_without_loading_a_model():
    from analysis_utils.publish import notebook

    run = notebook.setup_tables("08", {"runs": "results", "thr_prev": 0.5},
                                models={"results": {"name": "tiny-a"}},
                                names=["runs", "thr_prev"])
    assert run.prefix == "08" and run.params == {"runs": "results", "thr_prev": 0.5}
    assert run.models == {"results": {"name": "tiny-a"}}


def test_a_table_without_the_columns_read_is_reported_not_read(root):
    _write(root / "results" / "base", "01_layer_token_class_shares.csv",
           [{"layer": 1, "model first token": 0.5}])
    runs = cm.load_runs("results,results/base", root=root)
    assert cm.gaps(runs, "sink") == [
        "not read: results/base/01_layer_token_class_shares.csv lacks the column(s) model cls, "
        "model sep, model punct, model other, control cls, control sep, control punct, control "
        "other (written by another version of notebook 01); produce it again with "
        "`python -m analysis_utils run --profile base --only 01`"]
    assert set(cm.sink_by_layer(runs)["model"]) == {"tiny-a (2 x 2)"}
    assert cm.availability(runs).set_index("folder").loc["results/base", "01"].startswith(
        "missing or unreadable: 01_layer_token_class_shares.csv")


def test_notebook_08_runs_on_two_depths_and_a_missing_folder(root, tmp_path, monkeypatch):
    """The notebook end to end on the hand-made folders (absolute paths), through the driver;
    its staging (and, on failure, its kept notebook) in a temporary cache."""
    import json as _json

    from analysis_utils import paths
    from analysis_utils.publish import pipeline

    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "cache"))

    runs = ",".join(str(root / f) for f in ("results", "results/base", "results/ghost"))
    (rendered,) = pipeline.run("smoke", only=["08"], extra={"runs": runs},
                               output_dir=tmp_path / "out")
    text = rendered.read_text()
    assert "tiny-a (2 x 2)" in text and "tiny-b (4 x 2)" in text
    assert "results/ghost does not exist" in text
    assert "results/base has no 02_table1_model.csv" in text
    assert "results/base has no 01_norms_by_layer.csv" in text
    assert "the first token (`[CLS]`) gets much more weight than norm share in layer 2" in text
    assert '"output_type": "error"' not in text
    results = tmp_path / "out" / "results"
    # notebook 08 measures; the ledger stage, not the notebook, writes 08_claims.csv
    assert not (results / "08_claims.csv").exists()
    prov = _json.loads((results / "08_provenance.json").read_text())
    assert {m["name"] for m in prov["models"].values()} == {"tiny-a", "tiny-b"}
    assert (tmp_path / "out" / "figures" / "08_head_depths.png").is_file()
    assert (tmp_path / "out" / "figures" / "08_norm_profiles.png").is_file()
    norms = pd.read_csv(results / "08_norms_by_layer.csv")
    assert set(norms["model"]) == {"tiny-a (2 x 2)"}


def test_an_empty_table_file_is_reported_not_raised(root):
    (root / "results" / "base" / "04_table3.csv").write_text("")
    runs = cm.load_runs("results/base", root=root)
    assert cm.gaps(runs, "probes") == [
        "not read: results/base/04_table3.csv is unreadable (EmptyDataError); produce it again "
        "with `python -m analysis_utils run --profile base --only 04`"]
    assert set(cm.probe_uas(runs)["model"]) == {cm.PAPER, "BERT-base (EWT reproduction)"}


def test_differences_between_runs_from_their_provenance(three_runs):
    runs = three_runs
    diff = cm.differences(runs)
    # results/ records wide_margin for every notebook, results/base for none; 02 is not in base
    assert set(diff["notebook"]) == {"01", "02", "03", "04", "05"}
    row = diff[(diff["notebook"] == "01") & (diff["name"] == "wide_margin")].iloc[0]
    assert (row["tiny-a (2 x 2)"], row["tiny-b (4 x 2)"]) == ("10.0", "\u2013")
    assert list(diff.columns) == ["notebook", "kind", "name", "tiny-a (2 x 2)", "tiny-b (4 x 2)"]
    assert cm.differences(runs[:1]).empty


def test_norms_by_layer_read_from_notebook_01_and_a_run_without_them(three_runs):
    runs = three_runs
    assert cm.gaps(runs, "norms") == _base_lacks_and_ghost("01_norms_by_layer.csv", "01")
    assert cm.availability(runs).set_index("folder").loc["results/base", "01"] == \
        "missing or unreadable: 01_norms_by_layer.csv"
    norms = cm.norms_by_layer(runs)
    assert set(norms["model"]) == {"tiny-a (2 x 2)"}  # results/base: not run, not dropped silently
    assert len(norms) == 2 * 2 * 4  # weights x layers x classes
    assert list(norms["weights"].unique()) == ["pre-trained", "control"]
    assert list(norms["target"].iloc[:4]) == ["first token", "separator", "punctuation",
                                             "other tokens"]
    row = norms[(norms["weights"] == "pre-trained") & (norms["layer"] == 2)
                & (norms["target"] == "first token")].iloc[0]
    assert (row["token"], row["relative depth"]) == ("[CLS]", 1.0)
    assert (row["weight share"], row["norm share"]) == (0.60, 0.06)
    assert row["norm / weight"] == pytest.approx(0.1)
    hits = cm.discounted_layers(norms)
    assert hits[["weights", "layer", "target"]].values.tolist() == [
        ["pre-trained", 2, "first token"]]


def test_norm_findings_name_the_layers_and_contrast_the_control(root):
    norms = cm.norms_by_layer(cm.load_runs("results", root=root))
    (line,) = cm.norm_findings(norms)
    assert line == (
        "**tiny-a (2 x 2)**: the first token (`[CLS]`) gets much more weight than norm share in "
        "layer 2 of 2 (relative depth 1.00): weight share 60%, norm share 6%, norm / weight "
        "0.10; the separators (`[SEP]`) get much more weight than norm share in no layer (where "
        "their weight share is above 10%, in layer 1, norm / weight is at least 0.67). In its "
        "random-init control neither class does in any layer (weight share at most 4.0%, "
        "norm / weight 1.00).")
    # a stricter rule finds nothing; a looser one also takes layer 1's separators
    assert "in no layer (where its weight share" in cm.norm_findings(norms, ratio_max=0.05)[0]
    assert "separators (`[SEP]`) get much more weight than norm share in layer 1 of 2" in \
        cm.norm_findings(norms, ratio_max=0.7)[0]


def test_norm_findings_of_a_control_that_also_discounts_a_token():
    rows = [{"model": "m (4 x 1)", "weights": w, "layer": k, "layers": 4,
             "relative depth": k / 4, "target": t, "token": tok, "weight share": ws,
             "norm share": ws * r, "norm / weight": r}
            for w, r in (("pre-trained", 0.2), ("control", 0.4))
            for k in (1, 2, 4) for t, tok, ws in (("first token", "<s>", 0.3),
                                                 ("separator", "</s>", 0.01))]
    (line,) = cm.norm_findings(pd.DataFrame(rows))
    assert "first token (`<s>`) gets much more weight than norm share in layers 1-2, 4 of 4 " \
        "(relative depth 0.25-0.50, 1.00): weight share 30%, norm share 6%, norm / weight " \
        "0.20" in line
    assert "separators (`</s>`) get much more weight than norm share in no layer (their " \
        "weight share is at most 1.0%)" in line
    assert line.endswith("In its random-init control the first token (`<s>`) gets much more "
                         "weight than norm share in layers 1-2, 4 of 4 (relative depth "
                         "0.25-0.50, 1.00): weight share 30%, norm share 12%, norm / weight "
                         "0.40; the separators (`</s>`) get much more weight than norm share in "
                         "no layer (their weight share is at most 1.0%).")
    assert cm.norm_findings(pd.DataFrame(rows).iloc[:0]) == []


def test_recap_writes_tokens_as_code_so_markdown_keeps_mpnets_s(root):
    runs = cm.load_runs("results,results/base", root=root)
    sink = cm.sink_by_layer(runs)
    lines = cm.recap(sink, cm.positional_heads(runs), cm.syntax_best_heads(runs))
    (b,) = [line for line in lines if line.startswith("**tiny-b (4 x 2)**")]
    # unquoted, "</s> in layers 1-4" would close, and a later "<s>" open, HTML strikethrough
    assert b.startswith("**tiny-b (4 x 2)**: attention sink `</s>` in layers 1-4 (of 4)")
    assert "<s>" not in b.replace("`</s>`", "")


def test_probe_training_note_names_different_training_sizes(tmp_path):
    from analysis_utils.analyses.crossmodel import NEEDS, RunFolder, probe_training_note

    def folder(name, used):
        return RunFolder(folder=name, path=tmp_path, model=name, num_layers=6,
                         num_heads=12, present=frozenset(NEEDS["probes"]),
                         data={"04": {"encoding: train: sentences used": used}})

    a, b = folder("small", 2000), folder("large", 12544)
    note = probe_training_note([a, b])
    assert "small (6 x 12): 2,000" in note and "large (6 x 12): 12,544" in note
    assert probe_training_note([a, folder("same", 2000)]) == ""
    assert probe_training_note([a]) == ""


def test_training_card_quotes_the_packaged_model_card(tmp_path):
    from analysis_utils.engine.modelcard import training_card

    card = training_card("minilm")
    assert card["base model"] == "nreimers/MiniLM-L6-H384-uncased"
    assert card["objective"].startswith("We use a contrastive learning objective")
    assert {"snli", "multi_nli", "embedding-data/QQP"} <= set(card["datasets"])
    # a folder with no card, and one with a hand-made card
    assert training_card(str(tmp_path)) is None
    (tmp_path / "README.md").write_text(
        "---\ndatasets:\n- a\n- b\n---\nWe used the pretrained [`x/y`](u) model. We use a "
        "contrastive learning objective: pairs. The total number of sentence pairs is 3.\n")
    card = training_card(str(tmp_path))
    assert (card["base model"], card["datasets"]) == ("x/y", ["a", "b"])
    assert card["pairs"] == "The total number of sentence pairs is 3."


def test_map_type_note_names_the_label_model_and_the_seed_spread(root):
    runs = cm.load_runs("results,results/base", root=root)
    for folder, shares in ((root / "results", (0.40, 0.50, 0.45)),
                           (root / "results" / "base", (0.10, 0.40, 0.25))):
        pd.DataFrame({"task": "MRPC", "seed": [0, 1, 2], "Heterogeneous": shares}).to_csv(
            folder / "05_type_proportions_by_seed.csv", index=False)
    from analysis_utils.data.labels import LABELLED_WEIGHTS_SHA256

    for r in runs:
        # the labelled model is told by its recorded weights, not by its name (issue 44): a
        # run named "minilm" with other weights trained on transferred labels
        r.parameters["05"] = {"model": "minilm"}
        r.identity = {"weights_sha256": LABELLED_WEIGHTS_SHA256 if r.folder == "results"
                      else "0" * 64, "init": "pretrained"}
    a, b = cm.map_type_note(runs).splitlines()
    assert "own labelled maps" in a and "moves by 10-10 points" in a
    assert "a transfer that is not measured" in b and "moves by 30-30 points" in b


def test_recap_counts_every_verdict_and_a_control_that_ran():
    g = pd.DataFrame({"verdict": ["yes", "yes", "no", "inconclusive", "inconclusive", "mixed",
                                  "untestable"],
                      "control_verdict": ["no", "inconclusive", "mixed", "yes", "", "untestable",
                                          "\u2013"]})
    line = ledger.verdict_counts(g)
    assert line.startswith("2 of 7 claims of the ledger came out yes (")
    for v in ledger.VERDICTS[1:]:  # every verdict but yes is listed with its count
        assert f" {v}" in line
    assert "(1 no, 2 inconclusive, 1 mixed, 1 untestable)" in line
    # inconclusive and mixed control verdicts mean the control was run; untestable and blanks
    # mean it was not
    assert line.endswith("its random-weights control, run under the same rules on 4 of them, "
                         "came out yes on 1")
    assert set(ledger._CONTROL_RAN) == set(ledger.VERDICTS) - {"untestable"}
