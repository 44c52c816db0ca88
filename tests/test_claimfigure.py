"""The claim pages' figure of the rule (:mod:`analysis_utils.publish.claimfigure`, issue 53
item 2) and the top of each model's section (:mod:`analysis_utils.publish.claimpages`, item
1): hand-made multiverse records first, then every tested row of the committed ledger.
Fast: no book build."""

from __future__ import annotations

import re

import pytest

from analysis_utils import paths
from analysis_utils.publish import claimfigure as cf
from analysis_utils.publish import claimpages


def record(**kw) -> dict:
    base = {"model": "m", "id": "01-x", "main": "True", "route": "intervals", "task": "",
            "entry": "", "verdict": "yes", "kind": "effect", "direction": "1.0",
            "estimate": "0.03", "lo": "0.02", "hi": "0.04", "level": "99.7%",
            "inner_lo": "", "inner_hi": "", "inner_level": "", "null": "0.0", "margin": "",
            "margin_source": "", "paper_effect": "", "sized": "False", "scale": "100.0",
            "suffix": " points", "digits": "1"}
    return {**base, **{k: str(v) for k, v in kw.items()}}


def axis_holds(svg: str, *values: float) -> bool:
    lo = float(re.search(r'data-axis-lo="([^"]+)"', svg).group(1))
    hi = float(re.search(r'data-axis-hi="([^"]+)"', svg).group(1))
    return all(lo <= v <= hi for v in values)


def test_an_effect_with_a_margin_draws_null_edge_and_paper_on_one_axis():
    r = cf.rule([record(lo=0.30, hi=0.32, estimate=0.31, margin=0.02, paper_effect=0.05,
                        margin_source="convention: 2 points")],
                family="notebook 01 claims (Holm, m = 15)")
    svg = cf.svg(r, "x")
    # the bar sits far from the null, the margin edge and the paper's value: the axis
    # still holds all of them
    assert axis_holds(svg, 0.0, 0.02, 0.05, 0.30, 0.32)
    assert 'class="null" data-value="0.0"' in svg and ">null 0<" in svg
    assert 'class="edge" data-value="0.02"' in svg and "margin +2" in svg
    assert 'class="paper" data-value="0.05"' in svg and "paper 5" in svg
    text = cf.caption(r)
    assert "99.7% interval, Bonferroni within the family (notebook 01 claims, m = 15)" in text
    assert "convention: 2 points" in text and "not decisive" in text
    assert "decisive here" in cf.caption(cf.rule([record(paper_effect=0.05, sized=True)]))


def test_a_claim_of_no_effect_draws_its_band_and_the_null_0():
    r = cf.rule([record(kind="no effect", lo=-0.001, hi=0.002, inner_lo=-0.0005,
                        inner_hi=0.0015, inner_level="99.3%", margin=0.01, null=0.0)])
    svg = cf.svg(r, "x")
    assert axis_holds(svg, -0.01, 0.01)
    assert svg.count('class="band-edge"') == 2 and 'class="inner-bar"' in svg
    assert ">null 0<" in svg  # "null", not "paper", even for a claim of no effect
    text = cf.caption(r)
    assert "equivalence band" in text and "inner (TOST) 99.3% interval" in text


@pytest.mark.parametrize("direction,word,edge", [(1, "floor", -0.01), (-1, "ceiling", 0.01)])
def test_a_claim_of_no_drop_draws_its_one_sided_edge(direction, word, edge):
    r = cf.rule([record(kind="no drop", direction=direction, lo=0.05, hi=0.09,
                        inner_lo=0.055, inner_hi=0.085, margin=0.01)])
    svg = cf.svg(r, "x")
    assert f'class="edge" data-value="{edge!r}"' in svg and f">{word} " in svg
    assert axis_holds(svg, 0.0, edge, 0.05, 0.09)
    assert word in cf.caption(r)


def test_a_per_task_row_draws_one_line_per_task_and_seed():
    recs = [record(verdict="inconclusive", lo="", hi="", estimate="", kind="")]  # summary
    recs += [record(task=t, entry=float(e), lo=0.01 * e - 0.02, hi=0.01 * e + 0.01,
                    paper_effect=0.03 if t == "RTE" else "")
             for t in ("MRPC", "RTE") for e in range(3)]
    r = cf.rule(recs)
    assert r.per_task and r.seeds and len(r.lines) == 6
    svg = cf.svg(r, "x")
    assert svg.count('class="bar"') == 6 and svg.count('class="null"') == 6
    assert ">MRPC<" in svg and ">RTE<" in svg and ">s3<" in svg
    assert svg.count('class="paper"') == 3 and axis_holds(svg, 0.03)
    assert cf.caption(r).startswith("One line per task and seed.")
    # pooled seeds: one line per task, no seed labels
    pooled = cf.rule([record(task=t, entry=0.0) for t in ("MRPC", "RTE")])
    assert not pooled.seeds and ">s1<" not in cf.svg(pooled, "x")


def test_the_fallback_from_a_note_keeps_the_null_and_the_paper():
    n = claimpages.interval_numbers("the interval [0.3, 0.4] excludes 0, the paper's "
                                    "effect 0.9")
    svg = claimpages.interval_svg(n, "x")
    assert "null 0" in svg and "paper 0.9" in svg and axis_holds(svg, 0.0, 0.9)


def test_the_top_of_a_section_says_why_and_the_control_in_words():
    row = {"verdict": "yes", "why": "yes: the 99.7% interval [+1, +2] lies above the null 0",
           "specifications": "yes in 4 of 6 (no in 2)", "robust": "no",
           "turns_on": "margin (no margin: no); route (Holm: no)",
           "control_verdict": "no", "note": "",
           "training_specific": "specific to training: the random-weights control does not "
                                "pass the same rule"}
    assert claimpages.why_sentence(row) == "The 99.7% interval [+1, +2] lies above the null 0."
    spec = claimpages.specifications_sentence(row)
    assert spec.startswith("Holds in 4 of 6 specifications (no in 2): it turns on the margin")
    assert "the route (Holm: no)" in spec
    control = claimpages.control_sentence(row)
    assert "so this is specific to training" in control
    # the control's `no` is the good outcome here: its own style, never the failed claim's
    assert "control-good" in control and "verdict-no" not in control
    untestable = {"verdict": "untestable", "why": "untestable", "note": "no UD relation"}
    assert claimpages.why_sentence(untestable) == "No UD relation."
    # every specification agrees, but another bootstrap seed does not: not called robust
    drawn = {"specifications": "no in 2 of 2", "robust": "no",
             "turns_on": "the bootstrap seed (inconclusive under another stream)"}
    assert claimpages.specifications_sentence(drawn) == (
        "The verdict is no in 2 of 2 specifications: robust to the choices the paper leaves "
        "open, but not to the bootstrap seed (inconclusive under another stream).")
    both = {**row, "turns_on": row["turns_on"] + "; the fine-tuning seeds (no with seed 43 "
            "left out)"}
    spec = claimpages.specifications_sentence(both)
    assert "the route (Holm: no)" in spec and "fine-tuning" not in spec.split(".")[0]
    assert spec.endswith("It is not robust to the fine-tuning seeds (no with seed 43 left out).")


@pytest.fixture(scope="module")
def committed():
    ledger = claimpages.ledger()
    mv = cf.load()
    if mv.empty:
        pytest.fail("results/08_multiverse.csv is missing: the ledger stage writes it")
    return ledger, mv


def test_every_tested_rows_figure_draws_the_null_and_the_papers_value(committed):
    ledger, mv = committed
    tested = ledger[ledger["verdict"] != "untestable"].to_dict("records")
    assert tested
    for row in tested:
        recs = [r for r in cf.main_records(mv, row["model"], row["id"]) if r["lo"]]
        assert recs, (row["model"], row["id"], "no main-specification record")
        svg = cf.svg(claimpages.figure(row, mv), "x")
        where = (row["model"], row["id"])
        assert 'class="null"' in svg and "null " in svg, where
        for r in recs:
            values = [float(r["null"]), float(r["lo"]), float(r["hi"])]
            if r["paper_effect"]:
                assert f'class="paper" data-value="{float(r["paper_effect"])!r}"' in svg, where
                values.append(float(r["paper_effect"]))
            if r["margin"]:
                m, n, d = float(r["margin"]), float(r["null"]), float(r["direction"])
                values += {"effect": [n + d * m], "no drop": [n - d * m],
                           "no effect": [n - m, n + m]}[r["kind"]]
            assert axis_holds(svg, *values), (where, values)


def test_every_tested_rows_figure_names_its_unit(committed):
    """No unitless axis: a figure's numbers carry a % or its axis names the unit (points, nats,
    attention weight, Spearman rho...), from the same records as the ledger's cells."""
    ledger, mv = committed
    unitless = []
    for row in ledger[ledger["verdict"] != "untestable"].to_dict("records"):
        r = claimpages.figure(row, mv)
        if r is not None and not r.unit() and r.suffix != "%":
            unitless.append((row["model"], row["id"]))
    assert unitless == []
    svg = cf.svg(cf.Rule((cf.Line(lo=0.1, hi=0.2, null=0.0),), axis_unit="Spearman rho"), "x")
    assert "Spearman rho" in svg
    assert "Units: Spearman rho." in cf.caption(cf.Rule((cf.Line(lo=0.1, hi=0.2, null=0.0),),
                                                        axis_unit="Spearman rho"))


def test_every_claim_page_puts_why_above_its_figure(committed):
    ledger, mv = committed
    for c in claimpages.claims(ledger):
        md = claimpages.page(c, {}, paths.REPO_ROOT, {}, mv)
        for model, row in c.rows.items():
            section = md.split(f"### {claimpages._md(model)}\n", 1)[1].split("\n### ", 1)[0]
            why = section.find('class="why"')
            assert why >= 0 or row["verdict"] == "untestable" and not row["note"], \
                (c.id, model)
            if row["verdict"] != "untestable":
                fig = section.find('<figure class="claim-rule">')
                assert 0 <= why < fig, (c.id, model)
                assert 'class="null"' in section[fig:], (c.id, model)
            if row["per_task"]:
                assert '<table class="claim-tasks">' in section, (c.id, model)
                assert section.find("<details") < section.find("| this run |"), (c.id, model)


def test_the_figures_layouts_keep_their_own_class():
    r = cf.rule([record(paper_effect=0.05)])
    for cls in ("rule-wide", "rule-narrow"):
        assert cf.svg(r, "x", width=360, cls=cls).startswith(
            f'<svg class="interval rule {cls}" viewBox="0 0 360 ')


def test_a_07_head_opens_the_atlas_on_the_task_it_was_found_on():
    from analysis_utils.publish import claimpages

    row = {"notebook": "07", "claim": "disabling some single head improves every task",
           "this_run": "largest gain per model: MRPC s42: 4-8 +1.22; STS-B s42: 2-3 +1.74; "
                       "STS-B s43: 12-3 +0.4", "heads": "4-8, 2-3"}
    assert claimpages.head_property(row, "4-8") == "07.disable.MRPC.uniform"
    assert claimpages.head_property(row, "2-3") == "07.disable.STS-B.uniform"
    assert claimpages.head_property(row, "1-1") is None
    assert claimpages.head_property({**row, "notebook": "02"}, "4-8") is None
