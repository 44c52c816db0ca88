"""The claims ledger: its tests against hand-computed numbers, its verdict rules on hand-made
run folders (a raw maximum never passes, the control's pass blocks a yes, too few seeds give
untestable, seeds that disagree give mixed), and the committed ledger and README findings
against what the code makes from the committed tables."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pandas as pd
import pytest

from analysis_utils import ledger, paths
from analysis_utils.analyses import crossmodel as cm
from analysis_utils.ledger import core, spec_kovaleva, stats

# --- the tests, by hand ------------------------------------------------------------------


def test_hoeffding_by_hand():
    assert stats.hoeffding_p(0.6, 0.5, 100) == pytest.approx(math.exp(-2.0))
    assert stats.hoeffding_p(0.4, 0.5, 100) == 1.0  # the wrong side is never significant
    lo, hi = stats.hoeffding_interval(0.5, 50, width=2.0, alpha=0.05)
    assert hi - 0.5 == pytest.approx(2.0 * math.sqrt(math.log(40) / 100))
    with pytest.raises(ValueError, match="independent unit"):
        stats.hoeffding_p(0.6, 0.5, 0)


def test_binomial_count_and_overlap_by_hand():
    assert stats.binom_greater(7, 10, 0.5) == pytest.approx(176 / 1024)
    q = stats.normal_tail(2.0)
    assert q == pytest.approx(0.02275, abs=1e-5)
    assert stats.count_greater(2, 72, q) == pytest.approx(
        1 - (1 - q) ** 72 - 72 * q * (1 - q) ** 71)
    assert stats.expected_overlap(40, 28, 72) == pytest.approx(15.56, abs=0.01)
    # two sets of 2 of 4 share both items: 1 of C(4, 2) = 6 draws
    assert stats.overlap_greater(2, 2, 2, 4) == pytest.approx(1 / 6)
    assert stats.bonferroni(0.02, 10) == pytest.approx(0.2)
    assert stats.bonferroni(0.2, 10) == 1.0


def test_welch_against_a_constant_and_between_probes():
    assert stats.welch_greater([61, 62, 63], [30]) < 0.01
    assert stats.welch_greater([61, 62, 63], [62, 63, 64]) > 0.5
    assert math.isnan(stats.welch_greater([61], [30]))
    lo, hi = stats.seed_interval([1.0, 2.0, 3.0])
    assert (lo + hi) / 2 == pytest.approx(2.0) and hi - 2.0 == pytest.approx(
        4.302653 * 1 / math.sqrt(3), rel=1e-5)


# --- verdicts on hand-made folders --------------------------------------------------------










def test_holm_within_a_family_by_hand():
    o1 = core.Outcome("a", effect=True, p=0.03)
    o2 = core.Outcome("b", effect=True, p=0.04)
    def fixed(outcome):
        return lambda tables, which: outcome

    claims = [core.Claim("01", "P", "1", name, "", "", "", "", fixed(out), ())
              for name, out in (("c1", o1), ("c2", o2))]

    class _T:
        notebooks = ["01"]

        def has(self, name):
            return True

        def label(self):
            return "m"
    out = core.evaluate(claims, _T(), control=False)
    # Holm: 0.03 x 2 = 0.06, then max(0.06, 0.04 x 1) = 0.06: neither survives, and an
    # estimate on the claimed side that its test does not carry is inconclusive, not no
    assert out["p_adjusted"].tolist() == ["0.060", "0.060"]
    assert out["verdict"].tolist() == ["inconclusive", "inconclusive"]








def test_a_folder_without_provenance_is_refused_with_the_command(tmp_path):
    with pytest.raises(FileNotFoundError, match="make reproduce"):
        ledger.build([str(tmp_path)])


def test_every_criterion_and_reference_is_stated_before_the_numbers():
    for c in ledger.claims():
        assert c.criterion and c.reference and c.test, c.claim
        assert not re.search(r"\{|\}", c.criterion + c.reference), c.claim  # no unfilled fields


# --- the committed ledger, README and recap are what the code makes -----------------------


def _committed_folders():
    return [f for f in ("results", "results/base")
            if (paths.REPO_ROOT / f / "01_provenance.json").is_file()]


def test_every_committed_yes_beats_a_reference_under_a_test():
    """The issue's rule over the whole committed ledger: a ``yes`` names a test that is not
    descriptive, an interval at the family's level (every ``yes`` of this ledger is a
    resampled Check whose interval excludes its null), and a reference cell that says what
    the result is compared with, or why nothing beyond the compared quantity is needed
    ("none: a claim of no (large) effect; ...", "none beyond the compared probe"; never a
    bare "none"); and the random-weights control did not pass the same rule. A range match
    with no test (the Heterogeneous share once read ``yes`` in 06) fails here."""
    saved = pd.read_csv(paths.REPO_ROOT / "results" / "08_claims.csv", dtype=str,
                        keep_default_na=False)
    yes = saved[saved["verdict"] == "yes"]
    assert len(yes) > 0
    for _, row in yes.iterrows():
        where = f"{row['model']} {row['notebook']}: {row['claim']}"
        assert row["reference"] and row["reference"] != "none", f"{where}: no reference"
        assert row["test"] and not row["test"].startswith("none"), f"{where}: no test"
        assert row["interval"] or row["per_task"], f"{where}: no interval"
        # a control that passes the same rule keeps the yes and says so in its own column
        assert (row["control_verdict"] == "yes") == row["training_specific"].startswith(
            "not specific"), f"{where}: training_specific contradicts the control's verdict"


def test_rendered_recap_of_notebook_08_agrees_with_its_tables():
    runs = cm.load_runs(",".join(_committed_folders()))
    lines = cm.recap(cm.sink_by_layer(runs), cm.positional_heads(runs),
                     cm.syntax_best_heads(runs))
    nb = json.loads((paths.REPO_ROOT / "notebooks" / "08_cross_model.ipynb").read_text())
    rendered = "".join("".join(o.get("data", {}).get("text/markdown", ""))
                       for c in nb["cells"] for o in c.get("outputs", []))
    for line in lines:
        assert line in rendered, f"the rendered recap does not say: {line}"






def test_bootstrap_below_by_hand():
    # a statistic that never moves: every draw below gives p = 1 / (B + 1); above gives 1
    assert stats.bootstrap_below(lambda w: 0.1, 10, 0.5, n_boot=99) == (0.01, 0.1, 0.1)
    assert stats.bootstrap_below(lambda w: 0.9, 10, 0.5, n_boot=99)[0] == 1.0
    # an undefined draw counts against the claim
    assert stats.bootstrap_below(lambda w: float("nan"), 10, 0.5, n_boot=9)[0] == 1.0
    # the draws are reproducible and resample the units: the mean of 0/1 units
    units = [0.0] * 10 + [1.0] * 10
    p1 = stats.bootstrap_below(lambda w: float(w @ units / w.sum()), 20, 0.5, seed=1)
    assert p1 == stats.bootstrap_below(lambda w: float(w @ units / w.sum()), 20, 0.5, seed=1)
    assert 0.3 < p1[0] < 0.7  # a mean of exactly 0.5 is not below 0.5










def _claim_row(folder, start):
    claim = next(c for c in spec_kovaleva.claims() if c.claim.startswith(start))
    return core.evaluate([claim], core.Tables(folder)).iloc[0]




def test_an_estimate_on_the_claimed_side_that_its_test_misses_is_inconclusive_not_no():
    weak = core._judge_outcome(core.Outcome("x", effect=True, p=0.2), 0.05, 0.2)
    assert weak.verdict == "inconclusive" and "not shown" in weak.reason
    reversed_ = core._judge_outcome(core.Outcome("x", effect=False, p=1.0), 0.05, 1.0)
    assert reversed_.verdict == "no"
    seeds = core._judge_outcome(core.Outcome("x", effect=True, p=0.01,
                                             per_seed=[True, False, True]), 0.05, 0.01)
    assert seeds.verdict == "inconclusive" and "2 of 3 seeds pass" in seeds.reason


# --- resampled Checks, judged by evaluate (issue 33) ----------------------------------------


class _Stub:
    """A resampled result in miniature: a fixed interval at any level (each level asked for is
    recorded), a p-value, a standard error and a design effect."""

    def __init__(self, lo, hi, p=0.5, se=0.01, design_effect=float("nan")):
        self.lo, self.hi, self.p_value, self.se = lo, hi, p, se
        self.design_effect = design_effect
        self.alternative = "two-sided"
        self.alphas: list[float] = []

    def interval_at(self, alpha):
        self.alphas.append(alpha)
        return self.lo, self.hi


class _Folder:
    """Tables of a folder that holds notebook 01's provenance and every table."""

    notebooks = ["01"]

    def has(self, name):
        return True

    def label(self):
        return "m"


def _rule(model, control=None):
    def rule(tables, which):
        out = model if which == "model" else control
        if out is None:
            raise FileNotFoundError("no control tables")
        return out
    return rule


def _claim(name, model, control=None, family="", registry=()):
    return core.Claim("01", "P", "1", name, "", "", "", "", _rule(model, control), (),
                      family=family, control=control is not None, registry=registry)


def _effect(lo, hi, p=0.5, paper=0.03, **kw):
    return core.Outcome("x", check=core.Check(_Stub(lo, hi, p), paper_effect=paper, **kw),
                        unit="10 documents", scale=100, suffix=" points")


def _judged(*claims, multiverse: bool = True):
    return core.evaluate(list(claims), _Folder(), multiverse=multiverse)


def test_an_interval_holding_the_null_and_the_papers_effect_is_inconclusive():
    row = _judged(_claim("c", _effect(-0.01, 0.05, p=0.2))).iloc[0]
    assert row["verdict"] == "inconclusive"
    assert "holds 0: this test could not tell" in row["note"]
    assert row["interval"] == "[-1.0, +5.0] points (95%)"
    assert row["unit"] == "10 documents" and row["p_value"] == "0.200"
    assert row["family"] == "notebook 01 claims (Holm, m = 1)"


def test_the_papers_effect_decides_only_a_claim_that_states_its_size_and_the_null_yes():
    # a claim of direction is not refuted by an effect smaller than BERT-base's
    small = _judged(_claim("c", _effect(-0.01, 0.01, paper=0.05))).iloc[0]
    assert small["verdict"] == "inconclusive"
    no = _judged(_claim("c", _effect(-0.01, 0.01, paper=0.05, sized=True))).iloc[0]
    assert no["verdict"] == "no" and "lies outside the interval" in no["note"]
    yes = _judged(_claim("c", _effect(0.01, 0.05, p=0.001))).iloc[0]
    assert yes["verdict"] == "yes"
    # the wrong side of the null is a reversal, whatever the paper's size
    below = _judged(_claim("c", _effect(-0.05, -0.01, p=0.001, paper=None))).iloc[0]
    assert below["verdict"] == "no" and "reversed" in below["note"]


def test_a_no_effect_claim_is_judged_on_the_tost_interval():
    stub = _Stub(-0.004, 0.004)
    o = core.Outcome("x", check=core.Check(stub, kind="no effect", margin=0.01))
    row = _judged(_claim("c", o)).iloc[0]
    assert row["verdict"] == "yes" and "lies within 0 +- 0.01" in row["note"]
    assert sorted(set(stub.alphas)) == [0.05, 0.1]  # 1 - 2a for yes, 1 - a for no
    far = core.Outcome("x", check=core.Check(_Stub(0.02, 0.05), kind="no effect", margin=0.01))
    assert _judged(_claim("c", far)).iloc[0]["verdict"] == "no"
    with pytest.raises(TypeError, match="margin"):
        core.Check(stub, kind="no effect")
    with pytest.raises(TypeError, match="kind"):
        core.Check(stub, kind="effects")


def test_a_no_drop_claim_reads_its_90_interval_lower_end_and_allows_gains():
    gain = core.Outcome("x", check=core.Check(_Stub(0.02, 0.05), kind="no drop", margin=0.01))
    row = _judged(_claim("c", gain)).iloc[0]
    assert row["verdict"] == "yes" and "no drop beyond the margin" in row["note"]
    drop = core.Outcome("x", check=core.Check(_Stub(-0.05, -0.02), kind="no drop",
                                              margin=0.01))
    assert _judged(_claim("c", drop)).iloc[0]["verdict"] == "no"
    with pytest.raises(TypeError, match="margin"):
        core.Check(_Stub(0, 1), kind="no drop")


def _seeds(*verdicts):
    """Per-seed Checks: ``yes`` an interval above 0, ``no`` one wholly below it (reversed),
    ``inconclusive`` one that holds 0."""
    bounds = {"yes": (0.01, 0.03), "no": (-0.03, -0.01), "inconclusive": (-0.01, 0.08)}
    return [core.Check(_Stub(*bounds[v]), paper_effect=0.05) for v in verdicts]


@pytest.mark.parametrize(("scope", "verdict"), [("every", "no"), ("some", "yes")])
def test_tasks_that_differ_across_seeds_are_never_mixed(scope, verdict):
    o = core.Outcome("x", per_task={"STS-B": _seeds("yes", "yes", "yes"),
                                    "MRPC": _seeds("no", "no", "no")}, scope=scope)
    row = _judged(_claim("c", o)).iloc[0]
    assert row["verdict"] == verdict
    assert row["per_task"] == "STS-B yes; MRPC no (3 seeds)"
    assert row["p_value"] == "" and row["family"] == "notebook 01 claims (Holm, m = 1)"
    assert ("MRPC fails in every seed" if scope == "every" else "STS-B passes") in row["note"]


def test_seeds_of_one_task_that_disagree_are_mixed():
    o = core.Outcome("x", per_task={"RTE": _seeds("yes", "no", "yes"),
                                    "MRPC": _seeds("yes", "yes", "yes")}, scope="every")
    row = _judged(_claim("c", o)).iloc[0]
    assert row["verdict"] == "mixed"
    assert row["per_task"] == "RTE mixed (yes, no, yes); MRPC yes (3 seeds)"
    two = core.Outcome("x", per_task={"RTE": _seeds("yes", "yes")}, scope="every")
    assert _judged(_claim("c", two)).iloc[0]["verdict"] == "untestable"  # < 3 seeds


def test_pooled_tasks_show_their_intervals_and_the_largest_mde():
    o = core.Outcome("x", per_task={"RTE": [core.Check(_Stub(0.01, 0.03, se=0.01))],
                                    "MRPC": [core.Check(_Stub(-0.01, 0.01, se=0.02))]},
                     scope="some", scale=100, suffix=" points")
    row = _judged(_claim("c", o)).iloc[0]
    assert row["interval"] == "RTE [+1.0, +3.0] points; MRPC [-1.0, +1.0] points (95%)"
    assert row["mde"] == f"{100 * 0.02 * 2.8016:.1f} points"
    # "seeds pooled" only where the row has seeds (a per-relation row of 02 has none)
    assert row["per_task"] == "RTE yes; MRPC inconclusive"


def test_every_check_row_has_a_numeric_mde_and_a_design_effect_where_the_result_has_one():
    rows = _judged(_claim("a", core.Outcome("x", check=core.Check(
                       _Stub(0.01, 0.03, p=0.01, se=0.01, design_effect=1.5)))),
                   _claim("b", _effect(-0.01, 0.05)))
    assert rows["mde"].map(lambda x: float(x.split()[0]) > 0).all()
    assert rows["design_effect"].tolist() == ["1.50", ""]
    # at a = 0.025 (two rows): (z_0.9875 + z_0.8) x se
    assert float(rows["mde"].iloc[0]) == pytest.approx(
        (2.2414 + 0.8416) * 0.01, abs=1e-3)


def test_two_rows_of_one_family_are_judged_at_half_the_level():
    a, b = _Stub(0.01, 0.03, p=0.01), _Stub(-0.01, 0.05, p=0.3)
    other = _Stub(0.01, 0.03, p=0.01)
    rows = _judged(_claim("a", core.Outcome("x", check=core.Check(a)), family="f"),
                   _claim("b", core.Outcome("x", check=core.Check(b)), family="f"),
                   _claim("c", core.Outcome("x", check=core.Check(other)), family="g"),
                   multiverse=False)  # the main route only: the multiverse adds Holm's levels
    assert set(a.alphas) == set(b.alphas) == {0.025} and set(other.alphas) == {0.05}
    assert rows["p_adjusted"].tolist() == ["0.020", "0.300", "0.010"]
    assert rows["interval"].iloc[0].endswith("(97.5%)")
    assert rows["family"].iloc[0] == "f (Holm, m = 2)"
    # per-task rows count in m though they have no p-value: Holm over two, and a = 0.025
    t = _Stub(0.01, 0.03)
    rows = _judged(_claim("a", core.Outcome("x", check=core.Check(_Stub(0.01, 0.03, p=0.02)))),
                   _claim("b", core.Outcome("x", per_task={"RTE": [core.Check(t)]},
                                            scope="every")), multiverse=False)
    assert rows["p_adjusted"].tolist() == ["0.040", ""] and set(t.alphas) == {0.025}


def test_the_control_earning_the_same_yes_keeps_the_verdict_and_says_not_specific():
    def yes():
        return core.Outcome("x", check=core.Check(_Stub(0.01, 0.03, p=0.001)))

    row = _judged(_claim("c", yes(), control=yes())).iloc[0]
    assert (row["verdict"], row["control_verdict"]) == ("yes", "yes")
    assert row["training_specific"] == core.NOT_SPECIFIC
    row = _judged(_claim("c", yes(), control=_effect(-0.01, 0.05))).iloc[0]
    assert (row["verdict"], row["control_verdict"]) == ("yes", "inconclusive")
    assert row["training_specific"] == core.SPECIFIC
    row = _judged(_claim("c", _effect(-0.03, -0.01), control=yes())).iloc[0]
    assert (row["verdict"], row["control_verdict"], row["training_specific"]) == \
        ("no", "yes", "")
    tasks = core.Outcome("x", per_task={"RTE": _seeds("yes", "yes", "yes")}, scope="every")
    row = _judged(_claim("c", tasks, control=tasks)).iloc[0]
    assert (row["verdict"], row["control_verdict"]) == ("yes", "yes")
    assert row["training_specific"] == core.NOT_SPECIFIC


def test_an_untestable_check_and_a_one_sided_interval_read_untestable():
    o = core.Outcome("x", check=core.Check(untestable="no counterpart"))
    row = _judged(_claim("c", o)).iloc[0]
    assert row["verdict"] == "untestable" and row["note"] == "no counterpart"
    assert row["family"] == "" and row["mde"] == ""
    inf = core.Outcome("x", check=core.Check(_Stub(0.01, float("inf"), p=0.3)))
    assert _judged(_claim("c", inf)).iloc[0]["verdict"] == "untestable"


def test_a_real_cluster_bootstrap_and_max_over_heads_are_judged():
    from analysis_utils.ledger import resample

    rng = np.random.default_rng(0)
    clusters = np.repeat(np.arange(30), 20)
    shift = rng.normal(0, 0.1, 30)[clusters]
    values = (rng.random(600) < 0.6 + shift).astype(float)
    r = resample.cluster_bootstrap(values, clusters, null=0.5, n_resamples=2000)
    o = core.Outcome("x", check=core.Check(r, null=0.5, paper_effect=0.55), scale=100,
                     suffix="%", unit="30 documents")
    row = _judged(_claim("c", o)).iloc[0]
    lo, hi = r.interval_at(0.05)
    assert row["interval"] == f"[{100 * lo:+.1f}%, {100 * hi:+.1f}%] (95%)"
    assert row["verdict"] == ("yes" if r.p_value < 0.05 else "inconclusive")
    assert float(row["mde"].rstrip("%")) == pytest.approx(100 * r.mde(0.05), abs=0.05)
    assert float(row["design_effect"]) == pytest.approx(r.design_effect, abs=0.005)
    heads = np.stack([values, (rng.random(600) < 0.5).astype(float)], axis=1)
    m = resample.max_over_heads(heads, None, clusters, null=0.5, n_resamples=2000)
    o = core.Outcome("x", check=core.Check(m, null=0.0, paper_effect=0.05), scale=100)
    row = _judged(_claim("c", o)).iloc[0]
    crit = float(np.quantile(m.max_draws, 0.95))
    assert float(row["mde"]) == pytest.approx(
        100 * resample.minimum_detectable_effect(m.se, critical=crit), abs=0.05)
    # another head than the best: its own simultaneous interval and max-T p-value
    other = 1 - m.best
    o = core.Outcome("x", check=core.Check(m, head=other, paper_effect=0.05), scale=100)
    row = _judged(_claim("c", o)).iloc[0]
    lo, hi = m.head_interval(other, 0.05)
    assert row["interval"] == f"[{100 * lo:+.1f}, {100 * hi:+.1f}] (95%)"
    assert float(row["p_value"]) >= m.p_value


def test_a_rows_quote_is_its_registry_entries_words():
    from analysis_utils import claims as registry

    q = registry.quotes()
    ids = ("clark-3.1-previous-token-heads", "clark-3.1-current-token")
    row = _judged(_claim("c", _effect(0.01, 0.02), registry=ids)).iloc[0]
    assert row["quote"] == f"{q[ids[0]]} | {q[ids[1]]}"
    assert _judged(_claim("c", _effect(0.01, 0.02))).iloc[0]["quote"] == ""
    assert "no registry entry 'clark-9'" in _judged(
        _claim("c", _effect(0.01, 0.02), registry=("clark-9",))).iloc[0]["quote"]


def _folder(tmp_path, prev_model, prev_control, n_segments=100):
    """A notebook-01 folder of a 1 x 2 model: provenance and the per-head tables."""
    f = tmp_path / "run"
    f.mkdir()
    ident = {"name": "tiny", "num_layers": 1, "num_heads": 2}
    (f / "01_provenance.json").write_text(json.dumps(
        {"parameters": {"n_segments": n_segments, "max_tokens": 128},
         "models": {"model": ident}}))
    for which, prev in (("model", prev_model), ("control", prev_control)):
        pd.DataFrame({"layer": [1, 1], "head": [1, 2], "previous": prev, "next": [0.1, 0.1],
                      "sep_to_sep": [0.0, 0.0], "max_weight": [0.5, 0.5],
                      "entropy_cls": [1.0, 1.0]}).to_csv(f / f"01_per_head_{which}.csv",
                                                          index=False)
    return f


def test_untestable_registry_entries_are_rows_that_say_why(tmp_path):
    f = _folder(tmp_path, [0.9, 0.1], [0.1, 0.1])
    out = ledger.build([str(f)])
    from analysis_utils import claims as registry

    by_rules = {i for c in ledger.spec_clark.claims() + ledger.spec_kovaleva.claims() for i in c.registry}
    mine = [e for e in registry.load() if e.untestable and e.id not in by_rules]
    for e in mine:
        rows = out[out["quote"] == registry.normalise(e.quote)]
        if e.notebooks and e.notebooks[0] != "01":
            continue  # the folder holds notebook 01 only
        row = rows[rows["claim"] == e.claim]
        assert len(row) == 1, e.id
        assert row["verdict"].iloc[0] == "untestable"
        assert e.untestable_reason in row["note"].iloc[0]
        assert row["notebook"].iloc[0] == (e.notebooks[0] if e.notebooks else "08")
    assert list(out.columns) == [*core.COLUMNS, "multiverse", "evidence"]  # the stage splits them off


def test_every_ledger_claim_names_its_registry_entries():
    missing = [f"{c.notebook}: {c.claim}" for c in ledger.claims() if not c.registry]
    assert not missing, f"ledger claims without a registry id (so without a quote): {missing}"


def test_no_rule_tests_items_as_independent():
    """Words, mentions, segments and probe seeds on one dev set are not independent samples:
    no rule calls the old item-level tests of ``ledger.stats``; the only function of it a rule
    module still uses is the descriptive expected overlap of two random head sets."""
    used = set()
    for name in ("clark.py", "kovaleva.py"):
        text = (paths.REPO_ROOT / "analysis_utils" / "ledger" / name).read_text()
        used |= {m.group(1) for m in re.finditer(r"\bstats\.(\w+)\b", text)}
        assert not re.search(r"from \.stats import|from \.\.ledger\.stats import", text), name
    assert used <= {"expected_overlap"}, sorted(used)


def test_counts_and_findings_show_every_verdict():
    frame = pd.DataFrame([{"model": "m", "notebook": "01", "verdict": v, "control_verdict": cv,
                           "family": fam, "p_value": ""}
                          for v, cv, fam in (("yes", "no", "f"), ("inconclusive", "yes", "f"),
                                             ("mixed", "", ""), ("untestable", "", ""))])
    c = ledger.counts(frame).iloc[0]
    assert [c[v] for v in ledger.VERDICTS] == [1, 0, 1, 1, 1]
    assert c["control yes (same rules)"] == "1 of 2"
    assert c["yes expected by chance"] == "<= 0.1 of 2"
    table = ledger.findings_markdown(frame).splitlines()
    assert "inconclusive" in table[0] and "1 of 2" in table[2]


def test_the_level_shows_the_digits_it_needs():
    assert [core.level(a) for a in (0.05, 0.05 / 2, 0.05 / 6, 0.05 / 5000)] == [
        "95%", "97.5%", "99.2%", "99.999%"]
