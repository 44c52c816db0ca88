"""The committed rendered notebooks as readers see them on a git host: small enough to render,
and free of progress bars and warnings."""

from __future__ import annotations

import json

import pytest

from analysis_utils import paths

RENDERED = sorted(paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.ipynb"))
MAX_BYTES = 2_000_000
NOISE = ("TqdmWarning", "Loading weights", "it/s]", "s/it]", "Warning:", "WARNING")


def _streams(nb: dict):
    for k, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                yield k, out.get("name"), "".join(out.get("text", ""))


def test_every_notebook_source_has_a_rendering():
    sources = sorted(p.stem for p in paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.py"))
    assert sources == [p.stem for p in RENDERED]


@pytest.mark.parametrize("nb_path", RENDERED, ids=lambda p: p.name)
def test_rendered_notebook_is_under_2_mb(nb_path):
    size = nb_path.stat().st_size
    assert size < MAX_BYTES, (f"{nb_path.name} is {size / 1e6:.1f} MB: link large figures from "
                              "figures/ instead of embedding them")


@pytest.mark.parametrize("nb_path", RENDERED, ids=lambda p: p.name)
def test_rendered_notebook_carries_no_progress_or_warning_streams(nb_path):
    nb = json.loads(nb_path.read_text())
    noisy = [(k, name, text[:120]) for k, name, text in _streams(nb)
             if name == "stderr" or any(w in text for w in NOISE)]
    assert not noisy, f"{nb_path.name}: cells with progress bars or warnings: {noisy}"


@pytest.mark.parametrize("nb_path", RENDERED, ids=lambda p: p.name)
def test_rendered_notebook_holds_no_local_path(nb_path):
    text = nb_path.read_text()
    for local in (str(paths.REPO_ROOT), "/site-packages/", "/.cache/staging/"):
        assert local not in text, f"{nb_path.name} records a path of this machine: {local}"


def test_rendered_recap_of_notebook_07_says_what_its_tables_hold():
    """The recap of the committed 07 rendering, redone from the committed tables: a sentence
    whose number or direction the tables contradict fails here (issue 21)."""
    import pandas as pd

    from analysis_utils.analyses import disabling

    results = paths.REPO_ROOT / "results"
    names = ("summary", "seed_agreement", "framenet_heads_disabling", "pruning_summary")
    tables = {n: pd.read_csv(results / f"07_{n}.csv") for n in names
              if (results / f"07_{n}.csv").is_file()}
    if "summary" not in tables:
        pytest.skip("results/ holds no notebook 07 run")
    mode = json.loads((results / "07_provenance.json").read_text())["parameters"][
        "modes"].split(",")[0].strip()
    lines = disabling.recap(tables["summary"], tables.get("seed_agreement", pd.DataFrame()),
                            tables["framenet_heads_disabling"], tables["pruning_summary"], mode)
    nb = json.loads((paths.REPO_ROOT / "notebooks" / "07_head_disabling.ipynb").read_text())
    rendered = "".join("".join(o.get("data", {}).get("text/markdown", ""))
                       for c in nb["cells"] for o in c.get("outputs", []))
    for line in lines:
        assert line in rendered, f"the rendered recap of 07 does not say: {line}"


#: (rendered notebook, the results folder its run wrote): every notebook whose claims the
#: ledger judges, for the default run and the base run beside it.
_VERDICT_RENDERINGS = [(nb, paths.REPO_ROOT / "results")
                       for nb in RENDERED if nb.name[:2] in {f"0{k}" for k in range(1, 8)}] + [
    (nb, paths.REPO_ROOT / "results" / "base")
    for nb in sorted((paths.NOTEBOOKS_DIR / "base").glob("0[1-7]_*.ipynb"))]


@pytest.mark.parametrize("nb_path,results", _VERDICT_RENDERINGS,
                         ids=[f"{r.relative_to(paths.REPO_ROOT)}/{nb.stem}"
                              for nb, r in _VERDICT_RENDERINGS])
def test_rendered_notebooks_point_to_the_ledger_stage_and_judge_nothing(nb_path, results):
    """Notebooks measure; the ledger stage judges (issue 41). Each rendered notebook whose
    claims the ledger judges ends with a Verdicts section naming the stage's table for it,
    which is committed beside its results, and no code cell shows or computes a verdict."""
    prefix = nb_path.name[:2]
    if not (results / f"{prefix}_provenance.json").is_file():
        pytest.skip(f"{results} holds no {prefix} run")
    nb = json.loads(nb_path.read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    shown = [c for c in code if "verdicts.show(" in c or '["held"]' in c]
    assert not shown, (f"{nb_path.name} judges claims itself ({shown[0][:60]!r}): re-render it "
                       "(python -m analysis_utils stale names the command)")
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "## Verdicts" in text, f"{nb_path.name} has no Verdicts section"
    assert f"results/{prefix}_verdicts.md" in text, \
        f"{nb_path.name}'s Verdicts section does not name results/{prefix}_verdicts.md"
    assert (results / f"{prefix}_verdicts.md").is_file(), (
        f"{results.relative_to(paths.REPO_ROOT)}/{prefix}_verdicts.md is missing: run "
        "`python -m analysis_utils ledger` and commit")


TABLES = sorted((paths.REPO_ROOT / "results").rglob("*.csv"))


@pytest.mark.parametrize("csv", TABLES, ids=lambda p: str(p.relative_to(paths.REPO_ROOT)))
def test_no_committed_table_has_a_column_empty_throughout(csv):
    """A column with no value in any row tells a reader nothing (07_seed_agreement's
    jaccard_holm once was one): drop it, or fill it. A table keeps one set of columns across
    models (``results/`` and ``results/base/``, so that ``compare`` and notebook 08 read them
    alike), so a column counts as empty only when it is empty in every committed copy of the
    table: 05_behaviour_separation's statistics are blank for all-mpnet-base-v2, whose run
    and control are both untestable (the ``p`` column says why), and filled for MiniLM."""
    import pandas as pd

    def blank(path):
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        assert len(df) > 0, f"{path.name} has no rows"
        return df.apply(lambda col: col.str.strip().isin(["", "nan", "NaN", "None",
                                                          "<NA>"]).all())

    copies = [p for p in TABLES if p.name == csv.name]
    empty = blank(csv)
    for other in copies:
        if other != csv:
            b = blank(other)
            empty &= b.reindex(empty.index, fill_value=True)
    assert not empty.any(), (f"{csv.name}: columns empty throughout "
                             f"{[str(p.relative_to(paths.REPO_ROOT)) for p in copies]}: "
                             f"{list(empty[empty].index)}")
