"""The notebook driver, on tiny throwaway notebooks in tmp_path (never the real ones)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import analysis_utils
from analysis_utils import profiles
from analysis_utils.publish import pipeline, report

DRIVER_ROOT = Path(analysis_utils.__file__).resolve().parent.parent
PARAMS_02 = ('max_sentences = 0\nmin_count = 100\nwide_margin = 10.0\nmin_offset = -3\n'
             'max_offset = 3\nseed = 0\n')


def demo(prefix: str, fail: bool = False) -> str:
    """A notebook that writes NN_a.csv and where it imported analysis_utils from, then raises
    in its last cell when ``fail``."""
    return ('# %% tags=["parameters"]\nx = 1\nrate = 0.5\nfail = FAIL\n\n'
            '# %%\nimport os, pathlib\nimport analysis_utils\n'
            'out = pathlib.Path(os.environ["BERTOLOGY_OUTPUT_DIR"]) / "results"\n'
            'out.mkdir(parents=True, exist_ok=True)\n'
            '(out / "NN_a.csv").write_text(f"x,rate\\n{x},{rate}\\n")\n'
            '(out / "NN_where.txt").write_text(analysis_utils.__file__)\n\n'
            '# %%\nif fail:\n    raise ValueError("boom")\n'
            ).replace("NN", prefix).replace("FAIL", str(fail))


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """Notebook sources, committed-output folders, golden folder and cache, all in tmp_path."""
    for name in ("notebooks", "results", "figures", "golden", "cache"):
        (tmp_path / name).mkdir()
    monkeypatch.setattr(pipeline.paths, "RESULTS_DIR", tmp_path / "results")
    monkeypatch.setattr(pipeline.paths, "FIGURES_DIR", tmp_path / "figures")
    monkeypatch.setattr(pipeline.paths, "GOLDEN_DIR", tmp_path / "golden")
    monkeypatch.setenv("BERTOLOGY_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def snapshot(*folders: Path) -> dict:
    return {str(p): p.read_bytes() for f in folders for p in sorted(f.rglob("*")) if p.is_file()}


def test_profiles_filter_to_notebook_parameters():
    got = profiles.overrides("smoke", "01", {"model", "n_segments"})
    assert got == {"model": "minilm", "n_segments": profiles.PROFILES["smoke"]["01"]["n_segments"]}
    # the default profile only makes a rendered run compute what it shows (saved evidence)
    assert profiles.overrides("default", "01") == {"recompute": True}
    assert profiles.overrides("default", "01", {"model", "seed"}) == {}
    with pytest.raises(ValueError, match="unknown profile"):
        profiles.overrides("fast", "01")


def test_parse_overrides_keeps_text_for_each_notebook_to_type():
    assert pipeline.parse_overrides(["n=5", "model=bert-base-uncased", "x = 0.5", "d="]) == \
        {"n": "5", "model": "bert-base-uncased", "x": "0.5", "d": ""}
    with pytest.raises(ValueError, match="name=value"):
        pipeline.parse_overrides(["n"])


def test_unknown_prefix_is_an_error():
    with pytest.raises(ValueError, match="no notebook with prefix"):
        pipeline.notebook_sources(["99"])


@pytest.mark.parametrize("pairs, message", [
    (["nosuchkey=5"], r"no selected notebook has a parameter 'nosuchkey'"),
    (["min_cont=5"], r"did you mean 'min_count'"),
    (["max_sentences=abc"], r"max_sentences='abc': expected an integer"),
    (["min_count=-5"], r"min_count=-5: expected an integer >= 0"),
    (["min_offset=4"], r"min_offset=4 is above max_offset=3"),
])
def test_a_bad_override_fails_before_any_output_is_touched(sandbox, capsys, pairs, message):
    # The user's report: `run --profile default --only 02 -p nosuchkey=5` deleted the committed
    # results/02_* and figures/02_* before the parameter was refused.
    src = sandbox / "notebooks" / "02_syntax_heads.py"
    src.write_text(f'# %% tags=["parameters"]\n{PARAMS_02}\n# %%\nraise SystemExit("ran")\n')
    (sandbox / "results" / "02_table1_model.csv").write_text("committed\n")
    (sandbox / "figures" / "02_examples.png").write_bytes(b"png")
    (sandbox / "notebooks" / "02_syntax_heads.ipynb").write_text("{}")
    before = snapshot(sandbox)
    args = ["--profile", "default", "--only", "02", "--notebooks-dir", str(src.parent)]
    for pair in pairs:
        args += ["-p", pair]
    assert pipeline.main(args) == 1
    err = capsys.readouterr().err
    assert "nothing was run or written" in err
    assert re.search(message, err), err
    assert snapshot(sandbox) == before


def test_every_selected_notebook_is_checked_before_the_first_runs(sandbox):
    (sandbox / "notebooks" / "01_first.py").write_text(demo("01"))
    (sandbox / "notebooks" / "02_second.py").write_text(
        f'# %% tags=["parameters"]\n{PARAMS_02}\n')
    with pytest.raises(pipeline.ParameterError, match=r"min_count=-5.*\[02_second.py\]"):
        pipeline.run("default", extra={"min_count": "-5"}, notebooks_dir=sandbox / "notebooks")
    # -p applies to the notebooks that have the parameter; types come from each one's cell
    jobs = pipeline.plan("default", extra={"rate": "1", "seed": "3"},
                         notebooks_dir=sandbox / "notebooks")
    assert [j.parameters for j in jobs] == [{"rate": 1.0}, {"seed": 3}]


def test_a_profile_typo_is_refused(sandbox, monkeypatch):
    (sandbox / "notebooks" / "77_demo.py").write_text(demo("77"))
    monkeypatch.setitem(profiles.PROFILES, "smoke", {"*": {"seed": 0}, "77": {"rat": 0.1}})
    with pytest.raises(pipeline.ParameterError, match=r"'rat'.*did you mean 'rate'"):
        pipeline.plan("smoke", notebooks_dir=sandbox / "notebooks")
    monkeypatch.setitem(profiles.PROFILES, "smoke", {"77": {"rate": "0.1"}})
    with pytest.raises(pipeline.ParameterError, match=r"rate='0.1': expected a number"):
        pipeline.plan("smoke", notebooks_dir=sandbox / "notebooks")


def test_success_replaces_outputs_and_drops_stale_ones(sandbox, monkeypatch):
    # A decoy analysis_utils first on PYTHONPATH stands for another checkout's install: the
    # kernel must still import the driver's package (the user's outputs went to the other one).
    decoy = sandbox / "decoy" / "analysis_utils"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(decoy.parent)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    nb = sandbox / "notebooks"
    (nb / "77_demo.py").write_text(demo("77"))
    (sandbox / "results" / "77_a.csv").write_text("old\n")
    (sandbox / "results" / "77_gone.csv").write_text("stale\n")  # not written any more
    (sandbox / "figures" / "77_gone.png").write_bytes(b"stale")
    (sandbox / "results" / "78_other.csv").write_text("another notebook's\n")

    out = pipeline.run("default", extra={"x": "5"}, notebooks_dir=nb)

    assert out == [nb / "77_demo.ipynb"]
    rendered = json.loads(out[0].read_text())
    assert any("x = 5" in "".join(c["source"]) for c in rendered["cells"])
    assert (sandbox / "results" / "77_a.csv").read_text() == "x,rate\n5,0.5\n"
    assert Path((sandbox / "results" / "77_where.txt").read_text()) == \
        DRIVER_ROOT / "analysis_utils" / "__init__.py"
    assert not (sandbox / "results" / "77_gone.csv").exists()
    assert not (sandbox / "figures" / "77_gone.png").exists()
    assert (sandbox / "results" / "78_other.csv").read_text() == "another notebook's\n"
    assert list((sandbox / "cache" / "staging").iterdir()) == []
    assert list((sandbox / "golden").iterdir()) == []
    assert report.OUTPUT_ENV not in os.environ or \
        "staging" not in os.environ[report.OUTPUT_ENV]  # the driver's environment is restored


def test_a_failing_cell_keeps_the_last_good_outputs(sandbox, capsys):
    nb = sandbox / "notebooks"
    (nb / "77_demo.py").write_text(demo("77", fail=True))
    (sandbox / "results" / "77_a.csv").write_text("last good\n")
    (sandbox / "results" / "77_gone.csv").write_text("last good too\n")
    (sandbox / "figures" / "77_plot.png").write_bytes(b"png")
    (nb / "77_demo.ipynb").write_text('{"last": "good"}')
    before = snapshot(sandbox / "results", sandbox / "figures", nb, sandbox / "golden")

    assert pipeline.main(["--notebooks-dir", str(nb)]) == 1

    err = capsys.readouterr().err
    assert "77_demo.py failed in cell [3] `if fail:` (ValueError: boom)" in err
    kept = sandbox / "cache" / "failed" / "77_demo" / "77_demo.ipynb"
    assert str(kept) in err
    assert "boom" in kept.read_text()
    # the run wrote 77_a.csv before failing; none of it reached results/
    assert (kept.parent / "results" / "77_a.csv").exists()
    assert snapshot(sandbox / "results", sandbox / "figures", nb, sandbox / "golden") == before


def test_smoke_writes_the_cache_and_golden_only_from_a_fully_successful_run(sandbox):
    nb = sandbox / "notebooks"
    (nb / "76_ok.py").write_text(demo("76"))
    (nb / "77_broken.py").write_text(demo("77", fail=True))
    (nb / "78_later.py").write_text(demo("78"))
    for stem in ("76_ok", "77_broken", "78_later"):
        (sandbox / "golden" / f"{stem}.ipynb").write_text("committed golden")
    before = snapshot(sandbox / "golden", sandbox / "results", nb)
    smoke = sandbox / "cache" / "smoke_outputs"

    with pytest.raises(pipeline.NotebookFailed, match="77_broken.py failed in cell"):
        pipeline.run("smoke", golden=True, notebooks_dir=nb)
    assert (smoke / "notebooks" / "76_ok.ipynb").exists()  # 76 succeeded, 78 never ran
    assert (smoke / "results" / "76_a.csv").exists()
    assert not (smoke / "notebooks" / "78_later.ipynb").exists()
    assert snapshot(sandbox / "golden", sandbox / "results", nb) == before

    out = pipeline.run("smoke", only=["76"], golden=True, notebooks_dir=nb)
    assert out == [smoke / "notebooks" / "76_ok.ipynb"]
    assert (sandbox / "golden" / "76_ok.ipynb").read_bytes() == out[0].read_bytes()
    assert (sandbox / "golden" / "77_broken.ipynb").read_text() == "committed golden"


def test_golden_only_with_the_smoke_profile():
    with pytest.raises(ValueError, match="--golden"):
        pipeline.run("default", golden=True)
    with pytest.raises(ValueError, match="--golden"):
        pipeline.run("smoke", golden=True, output_dir="/tmp/elsewhere")


def test_destinations(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTOLOGY_CACHE_DIR", str(tmp_path / "cache"))
    src = Path("/x/notebooks/01_a.py")
    default = pipeline.destination("default")
    assert (default.results, default.figures) == (pipeline.paths.RESULTS_DIR,
                                                  pipeline.paths.FIGURES_DIR)
    assert default.rendered(src) == Path("/x/notebooks/01_a.ipynb")
    smoke = pipeline.destination("smoke")
    assert smoke.rendered(src) == tmp_path / "cache" / "smoke_outputs" / "notebooks" / "01_a.ipynb"
    assert smoke.results == tmp_path / "cache" / "smoke_outputs" / "results"
    other = pipeline.destination("paper", tmp_path / "out")
    assert (other.results, other.rendered(src)) == (tmp_path / "out" / "results",
                                                    tmp_path / "out" / "notebooks" / "01_a.ipynb")


def test_base_profile_runs_01_to_05_into_its_own_folders():
    base = pipeline.destination("base")
    root = pipeline.paths.REPO_ROOT
    assert (base.results, base.figures) == (root / "results" / "base", root / "figures" / "base")
    assert base.rendered(Path("/x/notebooks/02_b.py")) == root / "notebooks" / "base" / "02_b.ipynb"
    assert [j.source.name[:2] for j in pipeline.plan("base")] == ["01", "02", "03", "04", "05"]
    assert all(j.parameters["model"] == "mpnet" for j in pipeline.plan("base"))
    assert [j.source.name[:2] for j in pipeline.plan("base", ["2", "04"])] == ["02", "04"]
    with pytest.raises(ValueError, match="runs notebooks 01, 02, 03, 04, 05 only .*drop 08"):
        pipeline.plan("base", ["01", "08"])
    # 06-07 (fine-tuning MPNet, disabling its heads through the engine's hook) only by name
    assert [j.source.name[:2] for j in pipeline.plan("base", ["06", "07"])] == ["06", "07"]
    # committed outputs of the base profile are guarded like the default ones
    assert pipeline._inside(base.results, root)


def test_published_path_is_recorded_relative_to_the_repository(tmp_path):
    nb = tmp_path / "x.ipynb"
    nb.write_text(json.dumps({"cells": [], "metadata": {"papermill": {
        "input_path": "/tmp/stage/in.ipynb", "output_path": "/tmp/stage/x.ipynb"}}}))
    root = pipeline.paths.REPO_ROOT
    pipeline.scrub_local_paths(nb, Path("01_a.py"), root / "notebooks" / "base" / "01_a.ipynb")
    meta = json.loads(nb.read_text())["metadata"]["papermill"]
    assert meta == {"input_path": "notebooks/01_a.py", "output_path": "notebooks/base/01_a.ipynb"}
    pipeline.scrub_local_paths(nb, Path("01_a.py"), tmp_path / "elsewhere.ipynb")
    assert json.loads(nb.read_text())["metadata"]["papermill"]["output_path"] == \
        "notebooks/01_a.ipynb"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
                   cwd=repo, check=True, capture_output=True)


@pytest.fixture
def fake_repo(tmp_path, monkeypatch):
    """A committed git tree shaped like the compendium, set as the repository root."""
    repo = tmp_path / "repo"
    for rel, text in {"analysis_utils/x.py": "A = 1\n", "notebooks/77_demo.py": demo("77"),
                      "pyproject.toml": "[project]\n", "results/77_a.csv": "committed\n",
                      "README.md": "readme\n"}.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    (repo / "figures").mkdir()
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "init")
    monkeypatch.setattr(pipeline.paths, "REPO_ROOT", repo)
    monkeypatch.setattr(pipeline.paths, "RESULTS_DIR", repo / "results")
    monkeypatch.setattr(pipeline.paths, "FIGURES_DIR", repo / "figures")
    monkeypatch.setenv("BERTOLOGY_CACHE_DIR", str(tmp_path / "cache"))
    return repo


def test_uncommitted_sources_are_tracked_changes_only(fake_repo, tmp_path):
    assert pipeline.uncommitted_sources(fake_repo) == []
    (fake_repo / "README.md").write_text("edited\n")  # not a source of the results
    (fake_repo / "analysis_utils" / "new.py").write_text("")  # untracked
    assert pipeline.uncommitted_sources(fake_repo) == []
    (fake_repo / "analysis_utils" / "x.py").write_text("A = 2\n")
    (fake_repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    git(fake_repo, "add", "pyproject.toml")  # staged counts too
    assert sorted(pipeline.uncommitted_sources(fake_repo)) == ["analysis_utils/x.py",
                                                               "pyproject.toml"]
    (tmp_path / "plain").mkdir()
    assert pipeline.uncommitted_sources(tmp_path / "plain") is None


def test_a_dirty_tree_does_not_overwrite_committed_outputs(fake_repo, tmp_path, capsys):
    (fake_repo / "notebooks" / "77_demo.py").write_text(demo("77").replace("x = 1", "x = 2"))
    before = snapshot(fake_repo / "results", fake_repo / "notebooks")
    nb = ["--notebooks-dir", str(fake_repo / "notebooks")]

    assert pipeline.main(nb) == 1
    err = capsys.readouterr().err
    assert "notebooks/77_demo.py" in err and "one clean commit" in err
    assert "--allow-dirty" in err and "--output-dir" in err
    assert snapshot(fake_repo / "results", fake_repo / "notebooks") == before
    with pytest.raises(pipeline.DirtyTree):
        pipeline.check_provenance("paper", pipeline.destination("paper", fake_repo))

    # not refused: elsewhere, smoke, or when asked
    pipeline.check_provenance("default", pipeline.destination("default", tmp_path / "out"))
    pipeline.check_provenance("smoke", pipeline.destination("smoke"))
    pipeline.check_provenance("default", pipeline.destination("default"), allow_dirty=True)


def test_the_kernel_refuses_another_checkouts_package(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(DRIVER_ROOT),
           analysis_utils.PACKAGE_ROOT_ENV: str(tmp_path / "other-clone")}
    res = subprocess.run([sys.executable, "-c", "import analysis_utils"], env=env,
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode != 0
    assert "ImportError" in res.stderr
    assert str(DRIVER_ROOT) in res.stderr and str(tmp_path / "other-clone") in res.stderr
    env[analysis_utils.PACKAGE_ROOT_ENV] = str(DRIVER_ROOT)
    subprocess.run([sys.executable, "-c", "import analysis_utils"], env=env, check=True,
                   cwd=tmp_path)


def test_report_writes_tables_figures_and_provenance(tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv(report.OUTPUT_ENV, str(tmp_path))
    run = report.start_run("42", {"n": 3}, models={"m": {"name": "x"}})
    run.table(pd.DataFrame({"a": [1.23456789, 2.0]}), "numbers", caption="cap")
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    run.figure(fig, "line")
    prov = json.loads(run.finish().read_text())
    assert (tmp_path / "results" / "42_numbers.csv").read_text() == "a\n1.234568\n2.0\n"
    assert (tmp_path / "results" / "42_numbers.md").read_text().startswith("cap\n")
    assert (tmp_path / "figures" / "42_line.png").stat().st_size > 0
    assert prov["parameters"] == {"n": 3}
    assert prov["outputs"] == ["42_line.png", "42_numbers.csv", "42_numbers.md"]
    assert {"torch", "transformers", "python"} <= set(prov["versions"])


def test_report_arrays_writes_npz_aside_and_lists_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(report.OUTPUT_ENV, str(tmp_path))
    run = report.start_run("42", {})
    path = run.arrays("by_word", {"a": np.arange(3, dtype=np.int8)})
    assert path == tmp_path / "results" / "42_by_word.npz"
    assert "42_by_word.npz:" in capsys.readouterr().out
    with np.load(path) as z:
        assert z["a"].tolist() == [0, 1, 2]
    with pytest.raises(TypeError):  # a failed write leaves the previous file and no part file
        run.arrays("by_word", None, quiet=True)
    with np.load(path) as z:
        assert z["a"].tolist() == [0, 1, 2]
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["42_by_word.npz"]
    assert run.written == ["42_by_word.npz"]
