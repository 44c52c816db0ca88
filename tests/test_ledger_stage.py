"""The ledger stage (``python -m analysis_utils ledger``): judgement after the notebooks.

No notebook imports the ledger, the stage rebuilds the committed ledger exactly from the
committed results, its per-notebook tables are its rows of the whole ledger, a change to the
ledger's code makes only the stage stale, and a re-rendered notebook makes the stage stale."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from analysis_utils import ledger, paths
from analysis_utils.publish import imports, ledger_stage, stale

ROOT = paths.REPO_ROOT


def _committed_folders() -> list[str]:
    return [f for f in ledger_stage.DEFAULT_FOLDERS
            if any((ROOT / f).glob("[0-9][0-9]_provenance.json"))]


def test_claim_id_is_notebook_then_the_claims_words():
    assert ledger_stage.claim_id("07", "Disabling [CLS] heads: not detrimental (RTE, +3.2)") == \
        "07-disabling-cls-heads-not-detrimental-rte-3-2"
    long = ledger_stage.claim_id("01", "word " * 40)
    assert long.startswith("01-word-word") and len(long) <= 83 and not long.endswith("-")


@pytest.mark.parametrize("source", sorted((ROOT / "notebooks").glob("0[1-8]_*.py")),
                         ids=lambda p: p.name[:2])
def test_no_notebook_imports_the_ledger(source):
    graph = imports.import_graph(ROOT)
    inputs = stale.notebook_inputs(source, ROOT, graph)
    ledger = [p for p in inputs if p.startswith("analysis_utils/ledger/")
              or p == "analysis_utils/publish/ledger_stage.py"]
    assert not ledger, f"{source.name} imports the ledger through {ledger}: notebooks measure, " \
                       "the ledger stage judges"


# Both tests below read the one memo of the committed ledger (tests/conftest.py): they sit in
# one file so that `make test`'s workers (one per file) build it once.


def test_committed_ledger_is_what_the_code_makes_from_the_committed_tables(committed_ledger):
    committed = paths.REPO_ROOT / "results" / "08_claims.csv"
    assert committed.is_file(), "results/08_claims.csv is missing: run notebook 08"
    made = committed_ledger.build(_committed_folders())
    saved = pd.read_csv(committed, dtype=str, keep_default_na=False)
    assert saved["verdict"].tolist() == made["verdict"].tolist()
    assert saved["claim"].tolist() == made["claim"].tolist()
    assert saved["control_verdict"].tolist() == made["control_verdict"].tolist()
    assert set(saved["verdict"]) <= set(ledger.VERDICTS)


def test_the_stage_rebuilds_the_committed_ledger_exactly(committed_ledger):
    folders = _committed_folders()
    if not folders or not (ROOT / ledger_stage.PROVENANCE).is_file():
        pytest.fail("no committed ledger stage output: run `python -m analysis_utils ledger`")
    # the stability rebuild (another bootstrap seed) is left to `make test-all`'s budget: the
    # memo holds the usual draws only; the committed stability table's draws are folded into
    # robust as the stage folds its own
    stab = pd.read_csv(ROOT / folders[0] / ledger_stage.STABILITY_TABLE, dtype=str,
                       keep_default_na=False)
    tables = ledger_stage.judge(folders, ROOT, build=committed_ledger.build, stability=False,
                                folded_by=stab)
    prov = json.loads((ROOT / ledger_stage.PROVENANCE).read_text())
    stability = {f"{folders[0]}/{ledger_stage.STABILITY_TABLE}",
                 f"{folders[0]}/{ledger_stage.STABILITY_SHARES}"}
    assert sorted(prov["tables"]) == sorted(set(tables) | stability)
    assert ledger_stage.STABILITY_FIGURE in prov["outputs"]
    for rel, df in tables.items():
        assert (ROOT / rel).read_text() == ledger_stage.csv_text(df), \
            f"{rel} differs from a rebuild: run `python -m analysis_utils ledger` and commit"
    whole = tables[f"{folders[0]}/{ledger_stage.CLAIMS_TABLE}"]
    for rel, df in tables.items():
        if rel.endswith("_verdicts.csv"):
            nb = Path(rel).name[:2]
            mine = whole[whole["notebook"] == nb]
            assert set(df["id"]) <= set(mine["id"])
            assert df["model"].nunique() == 1 if "model" in df else True
    # every row has an anchor, unique per model
    assert not whole.duplicated(["model", "id"]).any()


def test_a_folder_without_runs_is_refused_with_the_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="make reproduce"):
        ledger_stage.judge(["results"], tmp_path)


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout


def _fake_repo(tmp_path: Path) -> Path:
    """A git clone-alike: the package, one notebook source and its provenance, and the
    ledger stage's provenance naming the same commit."""
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "analysis_utils", repo / "analysis_utils",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (repo / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "02_syntax_heads.py", repo / "notebooks")
    (repo / "results").mkdir()
    _git(tmp_path, "init", "-q", str(repo))
    _git(repo, "config", "user.email", "t@t")
    _git(repo, "config", "user.name", "t")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "code")
    commit = _git(repo, "rev-parse", "HEAD").strip()
    from analysis_utils import params, profiles

    defaults = params.read_parameters(repo / "notebooks" / "02_syntax_heads.py")
    # as the driver records them: the profile's overrides of the notebook's own parameters
    prov = {"notebook": "02", "profile": "default", "git_commit": commit,
            "parameters": {**defaults, **profiles.overrides("default", "02", set(defaults))}}
    (repo / "results" / "02_provenance.json").write_text(json.dumps(prov))
    digest = ledger_stage.inputs(repo, ["results"])
    (repo / ledger_stage.PROVENANCE).write_text(json.dumps(
        {"stage": "ledger", "git_commit": commit, "folders": ["results"], "inputs": digest}))
    return repo


def _by_label(statuses):
    return {s.notebook: s for s in statuses}


def test_a_ledger_change_makes_only_the_stage_stale(tmp_path):
    repo = _fake_repo(tmp_path)
    st = _by_label(stale.check(repo))
    assert not any(s.stale for s in st.values()), [s.line() for s in st.values()]
    core = repo / "analysis_utils" / "ledger" / "core.py"
    core.write_text(core.read_text().replace("ALPHA = 0.05", "ALPHA = 0.01"))
    st = _by_label(stale.check(repo))
    assert st[stale.STAGE_LABEL].stale
    assert "analysis_utils/ledger/core.py" in st[stale.STAGE_LABEL].changed
    assert not st["notebooks/02_syntax_heads.ipynb"].stale


def test_a_re_rendered_notebook_makes_the_stage_stale(tmp_path):
    repo = _fake_repo(tmp_path)
    prov = repo / "results" / "02_provenance.json"
    prov.write_text(json.dumps({**json.loads(prov.read_text()), "wall_time_s": 1}))
    st = _by_label(stale.check(repo))
    assert st[stale.STAGE_LABEL].stale
    assert st[stale.STAGE_LABEL].changed == ["results/02_provenance.json (re-rendered since)"]


def test_the_stage_tables_are_compared_with_their_declared_tolerance(tmp_path):
    from analysis_utils.publish import compare

    decl = ledger_stage._tables_record(["results/08_claims.csv", "results/02_verdicts.csv"])
    assert decl["results/08_claims.csv"]["key"] == ["model", "notebook", "claim"]
    assert decl["results/02_verdicts.csv"]["key"] == ["id"]
    old = pd.DataFrame({"id": ["02-a"], "claim": ["c"], "verdict": ["yes"], "interval": ["[1, 2]"]})
    new = old.assign(interval="[1.1, 2.1]")
    ok = compare.compare_tables(old.to_csv(index=False), new.to_csv(index=False),
                                "02_verdicts.csv", decl["results/02_verdicts.csv"]["tolerance"],
                                ["id"])
    assert ok == []
    flipped = new.assign(verdict="no")
    bad = compare.compare_tables(old.to_csv(index=False), flipped.to_csv(index=False),
                                 "02_verdicts.csv", decl["results/02_verdicts.csv"]["tolerance"],
                                 ["id"])
    assert bad and "verdict" in str(bad[0])


def test_stability_by_hand():
    from analysis_utils.ledger import stability as stab

    led = pd.DataFrame({"model": ["a", "a", "a", "b", "b"], "notebook": ["01"] * 5,
                        "claim": ["x", "y", "z", "x", "y"],
                        "verdict": ["yes", "no", "untestable", "yes", "inconclusive"]})
    again = led.assign(verdict=["yes", "inconclusive", "untestable", "yes", "inconclusive"])
    t = stab.table(led, again)
    assert t["claim"].tolist() == ["x", "y", "x", "y"]  # untestable rows are not asked
    a = t[t["model"] == "a"].set_index("claim")
    assert a.loc["x", "bootstrap seed"] == "holds" and a.loc["x", "other model"] == "holds"
    assert a.loc["y", "bootstrap seed"] == "changes to inconclusive"
    assert a.loc["y", "other model"] == "changes to inconclusive"
    assert a["holds under all"].tolist() == ["yes", "no"]
    s = stab.shares(t).set_index(["model", "question"])
    assert s.loc[("a", "holds under all"), "share"] == 0.5
    assert s.loc[("a", "fine-tuning seed left out"), "rows"] == 0
    assert s.loc[("b", "bootstrap seed"), "share"] == 1.0


def test_seed_left_out_by_hand():
    from analysis_utils.ledger import stability as stab

    led = pd.DataFrame({"model": ["a"] * 3, "notebook": ["06", "07", "01"],
                        "claim": ["x", "y", "z"], "verdict": ["yes", "mixed", "yes"]})
    without = {"a": {42: led.iloc[:2].assign(verdict=["yes", "mixed"]),
                     43: led.iloc[:2].assign(verdict=["yes", "no"]),
                     44: led.iloc[:2].assign(verdict=["yes", "inconclusive"])}}
    t = stab.table(led, led, without).set_index("claim")
    assert t.loc["x", "fine-tuning seed left out"] == "holds"
    assert t.loc["y", "fine-tuning seed left out"] == ("changes without seed 43 (to no); "
                                                       "without seed 44 (to inconclusive)")
    assert t.loc["z", "fine-tuning seed left out"] == "n/a"  # not a row of 06-07
    assert t["holds under all"].tolist() == ["yes", "no", "yes"]
    s = stab.shares(t.reset_index()).set_index("question")
    assert s.loc["fine-tuning seed left out", "rows"] == 2
    assert s.loc["fine-tuning seed left out", "share"] == 0.5


def test_a_verdict_that_a_draw_turns_is_not_robust_and_names_the_draw():
    """fold: robust needs every specification, another bootstrap seed and each fine-tuning
    seed left out to agree (another model may differ); turns_on names what moved it."""
    from analysis_utils.ledger import stability as stab

    led = pd.DataFrame({"model": ["a"] * 4 + ["b"], "notebook": ["04", "06", "01", "02", "04"],
                        "claim": ["boot", "seed", "fine", "spec", "boot"],
                        "verdict": ["no", "yes", "yes", "yes", "yes"],
                        "robust": ["yes", "yes", "yes", "no", "yes"],
                        "turns_on": ["", "", "", "margin (none: no)", ""]})
    again = led.assign(verdict=["inconclusive", "yes", "yes", "yes", "yes"])
    without = {"a": {43: led.iloc[[1]].assign(verdict="inconclusive"),
                     44: led.iloc[[1]]}}
    folded = stab.fold(led, stab.table(led, again, without)).set_index(["model", "claim"])
    assert folded.loc[("a", "boot"), "robust"] == "no"
    assert folded.loc[("a", "boot"), "turns_on"] == \
        "the bootstrap seed (inconclusive under another stream)"
    assert folded.loc[("a", "seed"), "turns_on"] == \
        "the fine-tuning seeds (inconclusive with seed 43 left out)"
    # model b's "yes" differs from a's "no": a finding, not fragility
    assert folded.loc[("b", "boot"), "robust"] == "yes"
    assert folded.loc[("a", "fine"), ["robust", "turns_on"]].tolist() == ["yes", ""]
    assert folded.loc[("a", "spec"), ["robust", "turns_on"]].tolist() == \
        ["no", "margin (none: no)"]
    # two other streams: a verdict must hold under both; the one that moves it is counted
    two = stab.table(led, {1: led, 2: again}, without)
    assert two.set_index("claim").loc["fine", "bootstrap seed"] == "holds"
    folded = stab.fold(led, two).set_index(["model", "claim"])
    assert folded.loc[("a", "boot"), "turns_on"] == \
        "the bootstrap seed (inconclusive under 1 of 2 other streams)"
    assert folded.loc[("b", "boot"), "robust"] == "yes"
    # the headline then counts the two draws as fragile, not as robust verdicts
    hc = ledger.headline_counts(folded.reset_index().assign(about="attention",
                                                            control_verdict="no"))
    a = hc[(hc["model"] == "a") & (hc["group"] == ledger.GROUPS[0])].iloc[0]
    assert (a["robust yes"], a["robust no"], a["fragile"]) == (1, 0, 3)


def test_left_out_builds_in_worker_processes_keep_their_order():
    """The stage's pool returns each job's result in the jobs' order (and runs in this
    process for a single job)."""
    assert ledger_stage._in_processes(pow, [(2, 3), (3, 2), (5, 1)]) == [8, 9, 5]
    assert ledger_stage._in_processes(pow, [(2, 5)]) == [32]


def test_whole_builds_and_left_out_builds_in_parallel_give_the_sequential_tables(
        tmp_path, monkeypatch):
    """Without a custom builder the ledger, its other-seed rebuild and the left-out builds
    run as jobs on worker processes; the tables are those of the same builds in order."""
    from analysis_utils import ledger
    from analysis_utils.ledger import resample, seeds_left_out

    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "06_provenance.json").write_text("{}")
    view = {c: "-" for c in ledger.VIEW_COLUMNS if c not in ("claim", "verdict")}

    def fake_build(folders, root, multiverse=True):  # "no" only under the second other stream
        assert root == tmp_path and folders == ["results"]
        other = resample.seed_offset() == ledger_stage.BOOTSTRAP_STREAMS[1]
        return pd.DataFrame({"model": ["m", "m"], "notebook": ["06", "01"],
                             "claim": ["x", "y"], "verdict": ["no" if other else "yes", "yes"],
                             **view})

    def fake_without(folder, seed):
        assert folder == tmp_path / "results"
        return pd.DataFrame({"model": ["m"], "notebook": ["06"], "claim": ["x"],
                             "verdict": ["yes" if seed == 42 else "inconclusive"]})

    class FakeTables:
        def __init__(self, folder):
            pass

        def label(self):
            return "m"

    monkeypatch.setattr(ledger, "build", fake_build)
    monkeypatch.setattr(ledger, "Tables", FakeTables)
    monkeypatch.setattr(seeds_left_out, "finetune_seeds", lambda folder: [42, 43])
    monkeypatch.setattr(seeds_left_out, "verdicts_without", fake_without)
    parallel = ledger_stage.judge(["results"], tmp_path)
    sequential = ledger_stage.judge(["results"], tmp_path,
                                    build=lambda fs: fake_build(fs, tmp_path),
                                    without=fake_without)
    assert sorted(parallel) == sorted(sequential)
    for name in parallel:
        pd.testing.assert_frame_equal(parallel[name], sequential[name])
    stab = parallel[f"results/{ledger_stage.STABILITY_TABLE}"].set_index("claim")
    assert stab.loc["x", "bootstrap seed"] == "changes to no (under 1 of 2 other streams)"
    assert stab.loc["x", "fine-tuning seed left out"] == "changes without seed 43 (to inconclusive)"
    # and the ledger's robust says so: x turns on both draws
    claims = parallel[f"results/{ledger_stage.CLAIMS_TABLE}"].set_index("claim")
    assert claims.loc["x", "robust"] == "no" and claims.loc["y", "robust"] != "no"
    assert claims.loc["x", "turns_on"].startswith("the bootstrap seed (no under 1 of 2 other streams)")


def test_another_bootstrap_seed_draws_another_stream_and_the_default_is_untouched():
    import numpy as np

    from analysis_utils.ledger import resample as rs

    x = np.arange(40, dtype=float)
    ids = np.arange(40)
    usual = rs.cluster_bootstrap(x, ids, n_resamples=200).interval_at(0.05)
    with rs.another_seed(1):
        other = rs.cluster_bootstrap(x, ids, n_resamples=200).interval_at(0.05)
    assert rs.cluster_bootstrap(x, ids, n_resamples=200).interval_at(0.05) == usual
    assert other != usual


def test_re_rendering_08_keeps_the_stage_outputs_that_share_its_prefix(tmp_path):
    from analysis_utils.publish import pipeline

    (tmp_path / "results" / "base").mkdir(parents=True)
    (tmp_path / "figures").mkdir()
    (tmp_path / ledger_stage.PROVENANCE).write_text(json.dumps({"outputs": [
        "results/08_claims.csv", "results/base/02_verdicts.csv",
        "figures/08_verdict_stability.png"]}))
    owned = {"08_claims.csv", "02_verdicts.csv", "08_verdict_stability.png"}
    for target in ("results", "results/base", "figures"):
        assert pipeline._stage_owned(tmp_path / target) == owned
    (tmp_path / "a" / "b" / "results").mkdir(parents=True)
    assert pipeline._stage_owned(tmp_path / "a" / "b" / "results") == set()
