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
