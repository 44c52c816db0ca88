"""Evidence that lands (issue 53, item 3; :mod:`analysis_utils.publish.evidence`): the ledger
records the files each row's rule read, the book anchors every file a notebook wrote at the
output that shows it, and each claim page links those anchors. On the built book (one build,
shared with its other tests): tests/test_book.py checks that every anchor a claim page links
is on the notebook's page, above a table where it says table and an image where it says
figure; tests/test_book_browser.py that a click lands there."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from analysis_utils import paths
from analysis_utils.ledger import core
from analysis_utils.publish import claimpages, evidence, ledger_stage


def _code(source: str, outputs: list[dict]) -> dict:
    return {"cell_type": "code", "source": source, "outputs": outputs, "metadata": {}}


def _md(source: str) -> dict:
    return {"cell_type": "markdown", "source": source, "metadata": {}}


def _image() -> dict:
    return {"output_type": "display_data", "data": {"image/png": "iVBOR", "text/plain": "<F>"}}


def _table(cols, result: bool = False) -> dict:
    head = "".join(f"<th>{c}</th>" for c in cols)
    return {"output_type": "execute_result" if result else "display_data",
            "data": {"text/html": f"<div><table><thead><tr>{head}</tr></thead></table></div>",
                     "text/plain": "df"}}


def _stream(text: str) -> dict:
    return {"output_type": "stream", "name": "stdout", "text": text}


# ---------------------------------------------------------------- what a cell writes

def test_writes_reads_literal_and_f_string_names_in_order():
    src = ('for lbl in ("model", "control"):\n'
           '    run.table(per_head, f"per_head_{lbl}", key=["layer"])\n'
           '    run.arrays(f"by_segment_{lbl}", {"a": x})\n'
           '_ = run.figure(fig, "relative_position")\n'
           'png = run.figure(fig, name="other", show=False)\n'
           'other.table(df, "not_a_run")\n'
           '%matplotlib inline\n')
    ws = evidence.writes(src, "01")
    assert [w.method for w in ws] == ["table", "arrays", "figure", "figure"]
    assert ws[0].matches("01_per_head_model.csv") and ws[0].matches("01_per_head_control.csv")
    assert not ws[0].matches("01_per_head_model.md")
    assert ws[1].matches("01_by_segment_model.npz")
    assert ws[2].matches("01_relative_position.png") and ws[2].shown
    assert ws[3].matches("01_other.png") and not ws[3].shown
    assert ws[0].data == {"per_head"}
    assert evidence.writes('run.table(df, "01_already")', "01")[0].matches("01_already.csv")
    assert evidence.writes("this is not python (", "01") == []


def test_each_file_lands_above_the_output_that_shows_it(tmp_path):
    (tmp_path / "01_shares.csv").write_text("layer,cls,sep\n1,0.1,0.2\n")
    (tmp_path / "01_other.csv").write_text("x,y\n1,2\n")
    (tmp_path / "01_norms.csv").write_text("layer,target,share\n1,cls,0.1\n")
    (tmp_path / "01_per_head.csv").write_text("layer,head,target,share\n1,1,cls,0.1\n")
    nb = {"cells": [
        _md("## 3.2 Attention to [CLS] (Figure 2)"),
        _code('_ = run.figure(a, "first")\n_ = run.figure(b, "second")\n'
              'run.table(shares, "shares")\nrun.table(other, "other")\nshares',
              [_image(), _image(), _table(["x", "y"]), _table(["layer", "cls", "sep"], True)]),
        _code('run.arrays("by_word", d)\nprint("done")', [_stream("01_by_word.npz: 2 MB\n")]),
        _code('run.table(per_head, "per_head")\nrun.table(norm_layers, "norms")\n'
              'norm_layers.pivot(index="layer")',
              [_table(["layer", "target", "share", "head"], True)]),
        _code('run.table(x, "quiet")', []),
        _md("## 4.1 Something else"),
    ]}
    files = ["01_first.png", "01_second.png", "01_shares.csv", "01_shares.md", "01_other.csv",
             "01_by_word.npz", "01_per_head.csv", "01_norms.csv", "01_quiet.csv", "01_gone.csv"]
    a = evidence.notebook_anchors(nb, "01", files, tmp_path)
    where = {f: (x.cell, x.output, x.kind) for f, x in a.items()}
    assert where == {
        "01_first.png": (1, 0, "figure"), "01_second.png": (1, 1, "figure"),
        "01_shares.csv": (1, 3, "table"),  # the cell's result shows `shares`
        "01_other.csv": (1, 2, "table"),  # by its columns
        "01_by_word.npz": (2, 0, "output"),  # the output that names it
        "01_norms.csv": (3, 0, "table"),  # the result shows norm_layers, not per_head
        "01_per_head.csv": (3, 0, "output"),
        "01_quiet.csv": (4, 0, "output")}
    assert a["01_shares.csv"].id == "out-01_shares-csv"
    staged = json.loads(json.dumps(nb))
    evidence.insert(staged, a)
    outs = staged["cells"][1]["outputs"]
    assert len(outs) == 4 + 4  # one anchor output above each of the four
    assert 'id="out-01_first-png"' in outs[0]["data"]["text/html"] and "image/png" in outs[1]["data"]
    assert 'id="out-01_shares-csv"' in outs[6]["data"]["text/html"]
    assert outs[7]["output_type"] == "execute_result"
    assert len(nb["cells"][1]["outputs"]) == 4  # the notebook given is a copy's source
    assert 'id="out-01_quiet-csv"' in staged["cells"][4]["outputs"][0]["data"]["text/html"]


def test_a_rows_section_finds_the_notebooks_heading():
    nb = {"cells": [_md("# 06 · title (Sections 4.2-4.5)"),
                    _md("## Fine-tuning (Table 1)"), _code("", []),
                    _md("### Table 1 beside the paper"), _code("", []),
                    _md("## Attention drift with fine-tuning (Section 4.3, Figure 5)"),
                    _md("## Special tokens (Sections 4.4-4.5, Figures 6-7)"), _code("", []),
                    _md("## 3.1 Relative position"), _md("## 5. Coreference")]}
    secs = evidence.sections(nb)
    assert [(s.title[:12], s.start, s.end) for s in secs] == [
        ("Fine-tuning ", 1, 5), ("Table 1 besi", 3, 5), ("Attention dr", 5, 6),
        ("Special toke", 6, 8), ("3.1 Relative", 8, 9), ("5. Coreferen", 9, 10)]

    def titles(section):
        return [s.title[:12] for s in evidence.claim_sections(secs, section)]

    assert titles("4.3, Figure 5") == ["Attention dr"]
    assert titles("4.4, Figure 6") == ["Special toke"]  # inside a range of figures
    assert titles("4.5") == ["Special toke"]  # inside a range of sections
    assert titles("4.3, Table 1") == ["Table 1 besi"]  # the table first, the innermost
    assert titles("3.1") == ["3.1 Relative"]
    assert titles("5 (Discussion)") == [] and titles("Abstract") == []
    assert titles("4.6, Figure 8") == []
    # a section no heading names, which the notebook's title covers: its tables and figures
    title = evidence.notebook_title(nb)
    assert title == "06 · title (Sections 4.2-4.5)"
    assert evidence.claim_sections(secs, "1 (restating 4.2)", title) == []  # names none
    title = "02 · parsers (Clark et al. 2019, Sections 4.1-4.2, Table 1)"
    assert [s.title[:12] for s in evidence.claim_sections(secs, "1 (restating 4.2)", title)] \
        == ["Table 1 besi"]
    assert evidence.claim_sections(secs, "5", title) == []


def test_links_group_files_and_add_what_the_cell_draws_and_the_section_shows():
    A = evidence.Anchor
    pg = evidence.Page({
        "02_by_word_model.npz": A("02_by_word_model.npz", "out-m", "output", 3, 0),
        "02_by_word_control.npz": A("02_by_word_control.npz", "out-c", "output", 3, 1),
        "02_heat.png": A("02_heat.png", "out-h", "figure", 3, 2),
        "02_table1_model.csv": A("02_table1_model.csv", "out-t", "table", 6, 1),
        "02_table1_control.csv": A("02_table1_control.csv", "out-tc", "table", 6, 1),
        "02_late.png": A("02_late.png", "out-l", "figure", 9, 0)},
        [evidence.Section("Table 1 for this run", 2, 5, 8)])
    out = evidence.links(["02_by_word_control.npz", "02_by_word_model.npz", "02_missing.csv"],
                         "notebooks/02_x.html", pg, "4.2, Table 1")
    assert [(x.files, x.kind, x.why) for x in out] == [
        (("02_by_word_model.npz",), "output", "read"),  # the control's twin left out
        (("02_heat.png",), "figure", "drawn"),
        (("02_table1_control.csv", "02_table1_model.csv"), "table", "section")]
    assert out[0].href == "../notebooks/02_x.html#out-m"
    assert out[2].section == "Table 1 for this run"
    assert evidence.links(["x.csv"], "n.html", None) == []


# ---------------------------------------------------------------- what each rule read

def test_tables_record_the_files_a_rule_opens(tmp_path):
    (tmp_path / "01_provenance.json").write_text(json.dumps({"models": {"model": {
        "name": "m", "num_layers": 2, "num_heads": 2}}}))
    pd.DataFrame({"a": [1]}).to_csv(tmp_path / "01_t.csv", index=False)
    np.savez(tmp_path / "01_by_x_model.npz", a=np.ones(2))
    np.savez(tmp_path / "07_predictions_RTE.npz", a=np.ones(2))
    t = core.Tables(tmp_path)
    t.read("01_t.csv")  # outside a recording: nothing kept
    with t.recording() as files:
        assert t.has("01_t.csv") and not t.has("01_absent.csv")
        with t.recording() as inner:
            np.load(t.path / "01_by_x_model.npz")
        assert [p.name for p in t.path.glob("07_predictions_*.npz")] == ["07_predictions_RTE.npz"]
        _ = t.path / "01_absent.npz"  # named, not there: not evidence
    assert inner == {"01_by_x_model.npz"}
    assert files == {"01_t.csv", "01_by_x_model.npz", "07_predictions_RTE.npz"}
    assert core.Tables(t.path).model == "m"  # the recording path is a plain path to others
    assert str(t.path / "x") == str(tmp_path / "x")


def test_evaluate_keeps_each_rows_files_for_the_stage(tmp_path):
    (tmp_path / "01_provenance.json").write_text(json.dumps({"models": {"model": {
        "name": "m", "num_layers": 2, "num_heads": 2}}}))
    for which in ("model", "control"):
        pd.DataFrame({"x": [1.0]}).to_csv(tmp_path / f"01_v_{which}.csv", index=False)

    def rule(t, which):
        t.read(f"01_v_{which}.csv")
        return core.Outcome(value="1", untestable="not judged here")

    claim = core.Claim("01", "Clark et al. 2019", "3.1", "a claim", "-", "c", "r", "t", rule,
                       ("01_v_model.csv",), registry=())
    row = core.evaluate([claim], core.Tables(tmp_path), multiverse=False).iloc[0]
    assert row["evidence"] == "01_v_control.csv; 01_v_model.csv"
    claims = pd.DataFrame([{**row.to_dict(), "id": "01-a-claim"}])
    ev = ledger_stage.evidence_table(claims)
    assert list(ev.columns) == ledger_stage.EVIDENCE_COLUMNS == ["id", "model", "notebook", "file"]
    assert ev["file"].tolist() == ["01_v_control.csv", "01_v_model.csv"]
    assert ev["id"].unique().tolist() == ["01-a-claim"]
    assert ledger_stage.evidence_table(claims.drop(columns="evidence")).empty


def test_without_the_ledgers_record_a_claims_declared_tables_stand_in(tmp_path):
    (tmp_path / "results").mkdir()
    assert evidence.read_files(tmp_path) is None
    files = claimpages.evidence_files(tmp_path)
    assert files and all(k[0] == "*" for k in files)
    cid = next(k[1] for k in files if k[1].startswith("02-"))
    assert "02_by_word_model.npz" in files[("*", cid)]
    pd.DataFrame([{"id": "x", "model": "m", "notebook": "01", "file": "01_a.npz"},
                  {"id": "x", "model": "m", "notebook": "01", "file": "01_b.csv"}]).to_csv(
        tmp_path / "results" / evidence.EVIDENCE_TABLE, index=False)
    assert claimpages.evidence_files(tmp_path) == {("m", "x"): ["01_a.npz", "01_b.csv"]}


def test_a_file_of_another_notebook_is_linked_on_that_notebooks_page():
    """Notebook 04's probe claim reads notebook 02's per-word file: its claim page links it
    where notebook 02's page writes it, beside 04's own output."""
    from analysis_utils.publish.readme import runs

    df = claimpages.ledger()
    c = next(c for c in claimpages.claims(df) if c.notebook == "04"
             and c.claim.startswith("syntactic knowledge is distributed"))
    model, row = next(iter(c.rows.items()))
    run = runs(paths.REPO_ROOT / "results")[model]
    rels = [paths.REPO_ROOT / run.notebook_page(n, paths.REPO_ROOT) for n in ("02", "04")]
    pages = evidence.pages(paths.REPO_ROOT, [r.relative_to(paths.REPO_ROOT) for r in rels])
    files = {(model, c.id): ["02_by_word_model.npz", "04_dev_by_sentence.csv"]}
    line = claimpages.evidence_line(c, row, model, run, paths.REPO_ROOT, files, pages)
    hrefs = re.findall(r'class="evidence-link"[^>]*href="([^"]+)"', line)
    nb02 = run.notebook_page("02", paths.REPO_ROOT).replace(".ipynb", ".html")
    nb04 = run.notebook_page("04", paths.REPO_ROOT).replace(".ipynb", ".html")
    assert f"../{nb04}#out-04_dev_by_sentence-csv" in hrefs
    assert f"../{nb02}#out-02_by_word_model-npz" in hrefs
    assert "what the test read" in line and f"#claim-{c.id}" in line
    # without a record of what it read, only the line in the claims list
    bare = claimpages.evidence_line(c, {**row, "section": "Abstract"}, model, run,
                                    paths.REPO_ROOT, {}, pages)
    assert "evidence-link" not in bare and f"#claim-{c.id}" in bare
