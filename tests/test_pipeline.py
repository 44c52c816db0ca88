import json

import pandas as pd
import pytest

from analysis_utils import pipeline, profiles, report


def test_profiles_filter_to_notebook_parameters():
    got = profiles.overrides("smoke", "01", {"model", "n_segments"})
    assert got == {"model": "minilm", "n_segments": profiles.PROFILES["smoke"]["01"]["n_segments"]}
    assert profiles.overrides("default", "01") == {}
    with pytest.raises(ValueError, match="unknown profile"):
        profiles.overrides("fast", "01")


def test_parse_overrides_reads_literals():
    assert pipeline.parse_overrides(["n=5", "model=bert-base-uncased", "x=0.5", "f=True"]) == \
        {"n": 5, "model": "bert-base-uncased", "x": 0.5, "f": True}
    with pytest.raises(ValueError, match="name=value"):
        pipeline.parse_overrides(["n"])


def test_unknown_prefix_is_an_error():
    with pytest.raises(ValueError, match="no notebook with prefix"):
        pipeline.notebook_sources(["99"])


def test_failing_notebook_names_notebook_and_cell(tmp_path, monkeypatch):
    src = tmp_path / "77_broken.py"
    src.write_text(
        "# %% tags=[\"parameters\"]\nx = 1\n\n# %%\ny = x + 1\n\n# %%\nraise ValueError('boom')\n"
    )
    monkeypatch.setattr(pipeline.paths, "GOLDEN_DIR", tmp_path / "golden")
    with pytest.raises(pipeline.NotebookFailed, match=r"77_broken.py failed in cell 3 .*boom"):
        pipeline.run_notebook(src, "smoke")


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


def test_the_kernel_refuses_another_checkouts_package(tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    import analysis_utils

    root = Path(analysis_utils.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root),
           analysis_utils.PACKAGE_ROOT_ENV: str(tmp_path / "other-clone")}
    res = subprocess.run([sys.executable, "-c", "import analysis_utils"], env=env,
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode != 0
    assert "ImportError" in res.stderr
    assert str(root) in res.stderr and str(tmp_path / "other-clone") in res.stderr
    env[analysis_utils.PACKAGE_ROOT_ENV] = str(root)
    subprocess.run([sys.executable, "-c", "import analysis_utils"], env=env, check=True,
                   cwd=tmp_path)
