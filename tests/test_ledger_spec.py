"""The ledger's specifications (issue 52): margins with their sources, the multiverse's choices
and agreement, Holm's route both ways, the depth readings, and the one sentence of why, each
following its parameters."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from analysis_utils.ledger import (
    core,
    depth,
    headline_counts,
    spec,
    spec_clark,
    spec_kovaleva,
    stability,
)
from analysis_utils.ledger.core import Check, Claim, Outcome, Tables
from analysis_utils.ledger.resample import EQUIVALENCE_MARGINS, from_draws
from analysis_utils.ledger.spec import Margin, Spec


def _result(lo: float, hi: float, estimate: float | None = None, null: float = 0.0):
    """A Resampled whose draws put the 95% (and every) interval near [lo, hi]: uniform draws
    between them, many of them."""
    draws = np.linspace(lo, hi, 20_001)
    est = (lo + hi) / 2 if estimate is None else estimate
    return from_draws(draws, est, null=null)


# --- Margin ------------------------------------------------------------------------------


def test_margin_is_a_float_with_its_source_and_survives_pickling():
    m = Margin(0.02, "convention", "convention: two points")
    assert m == 0.02 and m * 100 == pytest.approx(2.0)
    back = pickle.loads(pickle.dumps(m))
    assert isinstance(back, Margin) and back.source == "convention: two points"
    assert spec.margin_source(m) == "convention: two points"
    assert spec.margin_source(Margin(0.1, "paper", "Table 1")) == "paper: Table 1"
    assert spec.margin_source(0.3).startswith("unnamed")
    with pytest.raises(ValueError, match="source"):
        Margin(0.1, "convention", "")
    with pytest.raises(ValueError, match="kind"):
        Margin(0.1, "guess", "x")


def test_every_margin_a_rule_uses_names_its_source():
    from analysis_utils.ledger import clark, kovaleva

    for m in (clark.SHARE_MARGIN, clark.ENTROPY_MARGIN, clark.ENTROPY_DIFF_MARGIN,
              clark.NOT_MUCH, kovaleva.FEATURE_MARGIN, kovaleva.STRIPE_MARGIN,
              *EQUIVALENCE_MARGINS.values()):
        assert isinstance(m, Margin) and m.source, m
    assert clark.NOT_MUCH.kind == "paper"


# --- choices and agreement ---------------------------------------------------------------


def test_margin_choices_follow_the_check():
    r = _result(0.01, 0.02)
    assert spec.margin_choices(Check(r)) == ("none",)  # a threshold: nothing to choose
    assert spec.margin_choices(Check(r, margin=Margin(0.02, "convention", "c"))) == \
        ("sourced", "none")
    assert spec.margin_choices(Check(r, margin=Margin(0.02, "convention", "c"), level=0.3)) == \
        ("sourced", "none", "scaled")
    assert spec.margin_choices(Check(r, level=0.3)) == ("none", "scaled")
    band = Check(r, kind="no effect", margin=Margin(0.5, "convention", "c"), level=4.0)
    assert spec.margin_choices(band) == ("sourced", "scaled")  # a band needs a margin


def test_a_margin_that_reads_the_claims_word_of_size_has_no_none_beside_it():
    """'Substantially' read as 13 points: dropping the margin would test 'beats the baseline',
    another claim (the referee's point on 02's bold rows, issue 52)."""
    r = _result(0.01, 0.2)
    size = Margin(0.13, "paper", "Table 1")
    assert spec.margin_choices(Check(r, margin=size)) == ("sourced", "none")
    assert spec.margin_choices(Check(r, margin=size, states_size="substantially")) == \
        ("sourced",)
    # the size carried by the bar instead (no margin): the one choice is none, as before
    assert spec.margin_choices(Check(r, states_size="substantially")) == ("none",)


def test_scaled_margin_is_the_stated_fraction_of_the_level():
    ch = spec.with_margin(Check(_result(0.0, 1.0), level=0.02), "scaled")
    assert float(ch.margin) == pytest.approx(spec.SCALED_FRACTION * 0.02)
    assert ch.margin.kind == "scaled"
    assert spec.with_margin(Check(_result(0, 1), margin=0.5), "none").margin is None
    with pytest.raises(ValueError, match="margin choice"):
        spec.with_margin(Check(_result(0, 1)), "half")


def test_agreement_counts_and_names_the_choice_a_verdict_turns_on():
    main = Spec("sourced", "intervals")
    v = {main: "no", Spec("sourced", "holm"): "no", Spec("none", "intervals"): "yes",
         Spec("none", "holm"): "yes"}
    k, n, robust, text = spec.agreement(main, v)
    assert (k, n, robust) == (2, 4, False)
    assert text.startswith("no in 2 of 4 (yes in 2); turns on margin (no margin: yes)")
    assert "route" not in text
    k, n, robust, text = spec.agreement(main, {main: "yes", Spec("none", "intervals"): "yes"})
    assert robust and text == "yes in 2 of 2"


def test_specs_put_the_main_specification_first():
    s = spec.specs(("sourced", "none"), ("intervals", "holm"), ("halves", "thirds"))
    assert s[0] == Spec("sourced", "intervals", "halves") and len(s) == 8


# --- Holm's route: both ways -------------------------------------------------------------


def test_holm_level_lies_between_bonferroni_and_alpha():
    assert core._holm_level(0.01, 0.004, 0.012) == pytest.approx(0.05 * 0.004 / 0.012)
    assert core._holm_level(0.01, 0.001, 1.0) == 0.01  # never below Bonferroni
    assert core._holm_level(0.01, 0.04, 0.04) == 0.05
    assert core._holm_level(0.01, float("nan"), 0.04) is None


def _tables(tmp_path) -> Tables:
    (tmp_path / "01_provenance.json").write_text(
        '{"models": {"model": {"name": "toy", "num_layers": 2, "num_heads": 2}}}')
    return Tables(tmp_path)


def _claim(name: str, outcome: Outcome, **kw) -> Claim:
    return Claim("01", "Clark et al. 2019", "3", name, "", "criterion", "reference", "test",
                 lambda t, which: outcome, (), control=False, **kw)


def test_holm_route_gives_no_on_mirrored_evidence(tmp_path):
    """A family of two: a strong row, and a gain whose Bonferroni (97.5%) interval holds 0 but
    whose Holm level (95%: the strong row is rejected first) excludes it. Holm's route gives the
    gain ``yes`` and, on the mirrored drop, ``no``; the main route is inconclusive both ways."""
    strong = Outcome("x", check=Check(_result(0.5, 1.5)))
    draws = np.random.default_rng(0).normal(0.1, 0.045, 20_000)
    t = _tables(tmp_path)
    verdicts = {}
    for name, d, est in (("a gain", draws, 0.1), ("a drop", -draws, -0.1)):
        row = core.evaluate([_claim("a strong row", strong),
                             _claim(name, Outcome("g", check=Check(from_draws(d, est))))],
                            t).iloc[1]
        mv = pd.DataFrame(__import__("json").loads(row["multiverse"])).set_index("route")
        assert row["verdict"] == mv.loc["intervals", "verdict"] == "inconclusive"
        assert mv.loc["holm", "alpha"] == pytest.approx(0.05, abs=0.005)
        verdicts[name] = mv.loc["holm", "verdict"]
    assert verdicts == {"a gain": "yes", "a drop": "no"}


# --- the multiverse on a row -------------------------------------------------------------


def test_evaluate_judges_every_specification_and_the_main_one_is_the_row(tmp_path):
    """A 1.5-point gain on a share of 30%: no under the 2-point convention (the main margin),
    yes with no margin: fragile, and it says why."""
    r = _result(0.0125, 0.0193)
    o = Outcome("x", check=Check(r, margin=Margin(0.02, "convention", "convention: 2 points"),
                                 level=0.30), scale=100, suffix=" points", digits=2)
    df = core.evaluate([_claim("sep from sep", o)], _tables(tmp_path))
    row = df.iloc[0]
    assert row["verdict"] == "no"
    assert row["robust"] == "no"
    assert row["specifications"].startswith("no in 4 of 6 (yes in 2)")
    assert "margin (no margin: yes)" in row["turns_on"]
    assert row["why"].startswith("no: the ") and "short of the margin +2.00 points" in row["why"]
    assert "convention: 2 points" in row["specification"]
    assert "Holm" in row["specification"]


def test_a_convention_margin_above_half_the_level_gives_way_to_the_scaled_one(tmp_path):
    """The same gain on a share of 2%: a 2-point convention is the whole quantity, so the main
    margin is a tenth of the level (0.2 points) and the convention an alternative."""
    r = _result(0.0125, 0.0193)
    conv = Margin(0.02, "convention", "convention: 2 points")
    assert spec.margin_choices(Check(r, margin=conv, level=0.02))[0] == "scaled"
    o = Outcome("x", check=Check(r, margin=conv, level=0.02), scale=100, suffix=" points",
                digits=2)
    row = core.evaluate([_claim("sep from sep", o)], _tables(tmp_path)).iloc[0]
    assert row["verdict"] == "yes" and row["robust"] == "no"
    assert "margin (the rule's margin: no)" in row["turns_on"]
    assert row["specification"].split("; ")[1].startswith("a margin of 0.200 points (scaled: 10%")


def test_alternative_sourced_margins_are_specifications():
    r = _result(0.05, 0.20)
    main = Margin(0.16, "paper", "paper: error reduction", name="error reduction")
    alt = Margin(0.13, "paper", "paper: 13 points", name="13 points")
    ch = Check(r, margin=main, alt_margins=(alt,))
    assert spec.margin_choices(ch) == ("sourced", "alt:13 points", "none")
    assert float(spec.with_margin(ch, "alt:13 points").margin) == 0.13
    assert spec.Spec("alt:13 points", "intervals").label() == "13 points, Bonferroni intervals"


def test_why_follows_each_parameter():
    base = dict(lo=0.012, hi=0.019, level="99.7%", scale=100, suffix=" points", digits=2)
    assert "above the null +0.00 points" in spec.why("yes", **base)
    assert "above the margin +0.50 points" in spec.why("yes", margin=0.005, **base)
    assert "below the null" in spec.why("yes", direction=-1, **{**base, "lo": -0.019,
                                                                 "hi": -0.012})
    assert "99.9% interval" in spec.why("yes", **{**base, "level": "99.9%"})
    assert "[+1.20%, +1.90%]" in spec.why("yes", **{**base, "suffix": "%"})
    assert "other side from the claim" in spec.why("no", **{**base, "lo": -0.02, "hi": -0.01})
    assert "paper's stated size +5.00 points" in spec.why("no", paper_effect=0.05, sized=True,
                                                          **base)
    band = spec.why("yes", kind="no effect", margin=0.5, null=3.89, lo=3.6, hi=3.9,
                    level="99.4%", digits=2, suffix=" nats")
    assert "within the band +3.39 nats to +4.39 nats" in band
    assert spec.why("untestable", reason="no data") == "untestable: no data"


# --- depth readings ----------------------------------------------------------------------


def test_depth_readings_change_the_layers_and_restore():
    assert depth.earlier_later(12) == ([1, 2, 3, 4, 5, 6], [7, 8, 9, 10, 11, 12])
    with depth.reading("earlier/later", "thirds"):
        assert depth.earlier_later(12) == ([1, 2, 3, 4], [9, 10, 11, 12])
        assert depth.last_two(6) == [5, 6]
    assert depth.chosen("earlier/later") == "halves"
    with depth.reading("last two", "BERT-base's 11-12 at relative depth"):
        assert depth.last_two(12) == [11, 12] and depth.last_two(6) == [6]
    with pytest.raises(ValueError, match="no reading"):
        with depth.reading("earlier/later", "quarters"):
            pass


def test_a_claim_with_depth_words_is_rerun_under_each_reading(tmp_path):
    seen = []

    def rule(t, which):
        early, late = depth.earlier_later(12)
        seen.append(len(early))
        return Outcome("x", check=Check(_result(0.1, 0.2) if len(early) == 6
                                        else _result(-0.05, 0.2)))

    c = Claim("01", "Clark et al. 2019", "3", "earlier", "", "c", "r", "t", rule, (),
              control=False, reading="earlier/later")
    row = core.evaluate([c], _tables(tmp_path)).iloc[0]
    assert sorted(set(seen)) == [4, 6]
    assert row["verdict"] == "yes" and row["robust"] == "no"
    assert "earlier/later (thirds: inconclusive)" in row["turns_on"]


def test_claim_refuses_unknown_about_and_depth():
    with pytest.raises(TypeError, match="about"):
        Claim("01", "p", "s", "c", "", "", "", "", lambda t, w: None, (), about="vibes")
    with pytest.raises(TypeError, match="reading"):
        Claim("01", "p", "s", "c", "", "", "", "", lambda t, w: None, (), reading="middle")


# --- headline counts ---------------------------------------------------------------------


def test_headline_counts_split_three_ways_and_count_robust_verdicts_only():
    df = pd.DataFrame({
        "model": ["m"] * 6,
        "verdict": ["yes", "yes", "no", "yes", "untestable", "inconclusive"],
        "control_verdict": ["no", "yes", "no", "", "", "no"],
        "about": ["attention", "attention", "attention", "data", "attention", "attention"],
        "robust": ["yes", "yes", "no", "yes", "", "yes"]})
    hc = headline_counts(df).set_index("group")
    a = hc.loc["about trained attention"]
    assert (a["rows"], a["tested"], a["robust yes"], a["robust no"], a["fragile"],
            a["untestable"], a["robust inconclusive"]) == (4, 3, 1, 0, 1, 1, 1)
    assert hc.loc["data and pipeline checks", "robust yes"] == 1
    assert hc.loc["the random-weights control passes too", "rows"] == 1


# --- the committed ledger: every row's text follows its parameters -----------------------

def _committed():
    from analysis_utils import paths

    root = paths.REPO_ROOT / "results"
    claims = pd.read_csv(root / "08_claims.csv", keep_default_na=False, dtype=str)
    mv = pd.read_csv(root / "08_multiverse.csv", keep_default_na=False, dtype=str)
    return claims, mv


def _f(x: str):
    return float(x) if x not in ("", "nan") else None


def test_every_committed_row_says_why_from_its_own_numbers():
    """For every tested row with one interval, the ``why`` cell is what :func:`spec.why`
    writes from the main specification's numbers in 08_multiverse.csv, and the row's verdict
    is that specification's; for every tested row, ``specifications`` counts its records."""
    claims, mv = _committed()
    tested = claims[claims["robust"] != ""]
    assert len(tested) > 50
    rows = mv[mv["task"] == ""]
    for _, r in tested.iterrows():
        mine = rows[(rows["model"] == r["model"]) & (rows["id"] == r["id"])]
        main = mine[mine["main"] == "True"]
        assert len(main) == 1, (r["model"], r["claim"])
        m = main.iloc[0]
        assert m["verdict"] == r["verdict"], r["claim"]
        k = int((mine["verdict"] == r["verdict"]).sum())
        assert r["specifications"].startswith(f"{r['verdict']} in {k} of {len(mine)}"), \
            r["claim"]
        # robust: every specification agrees, and no draw (another bootstrap stream, a
        # fine-tuning seed left out) moves the verdict, which turns_on then names
        drawn = any(t.startswith(tuple(stability.TURNS_ON_NAMES.values()))
                    for t in r["turns_on"].split("; "))
        assert (r["robust"] == "yes") == (k == len(mine) and not drawn), r["claim"]
        if m["lo"] == "":
            continue
        inner = m["kind"] != "effect" and m["verdict"] == "yes" and m["inner_lo"] != ""
        text = spec.why(m["verdict"], kind=m["kind"],
                        lo=float(m["inner_lo" if inner else "lo"]),
                        hi=float(m["inner_hi" if inner else "hi"]),
                        level=m["inner_level" if inner else "level"], null=float(m["null"]),
                        margin=_f(m["margin"]), direction=int(float(m["direction"])),
                        paper_effect=_f(m["paper_effect"]), sized=m["sized"] == "True",
                        scale=float(m["scale"]), suffix=m["suffix"],
                        digits=int(float(m["digits"])), own_p=_f(m["own_p"]),
                        reason=m["reason"])
        assert r["why"] == text, (r["model"], r["claim"])


def test_every_committed_margin_names_its_source():
    _, mv = _committed()
    with_margin = mv[mv["margin"] != ""]
    assert len(with_margin) > 20
    assert not with_margin["margin_source"].str.startswith("unnamed").any()
    assert set(with_margin["margin_source"].str.split(":").str[0]) <= {"paper", "convention", "scaled"}


def test_a_verdict_that_only_several_changes_together_turn_names_them():
    main = Spec("none", "intervals", "a")
    v = {main: "yes", Spec("none", "holm", "a"): "yes", Spec("sourced", "intervals", "b"): "no"}
    text = spec.agreement(main, v)[3]
    assert text.startswith("yes in 2 of 3 (no in 1); turns on ")
    assert "the rule's margin, Bonferroni intervals, b together (no)" in text


def test_another_reading_is_taken_with_its_own_margin():
    """The main reading has no margin; the other brings one (13 points). Changing the reading
    alone means the other reading with its margin, not stripped of it."""
    main = Spec("none", "intervals", "share")
    v = {main: "no", Spec("sourced", "intervals", "13 points"): "inconclusive",
         Spec("none", "intervals", "13 points"): "yes"}
    t = spec.turns_on(main, v, "substantially", {"share": "none", "13 points": "sourced"})
    assert t == ["substantially (13 points: inconclusive)"]


def test_the_readings_name_the_numbers_the_rules_use():
    """The words of a reading that states a number are the number the rule computes."""
    from analysis_utils.ledger import clark, readings

    share, points = readings.READINGS["substantially"]
    assert f"{clark.SUBSTANTIAL_ERROR_SHARE:.3f}" in share
    assert f"{100 * clark.NOT_MUCH:.1f} points" in points


def test_every_number_the_paper_leaves_open_is_read_by_a_claim_and_named_from_its_value():
    """Each entry of readings.VALUES is some claim's reading (judged across its alternatives),
    its main reading first, and each reading's words change when its number does."""
    from fractions import Fraction

    from analysis_utils.ledger import readings

    used = {k for c in (*spec_clark.claims(), *spec_kovaleva.claims()) for k in c.reading.split("+") if k}
    assert set(readings.VALUES) <= used
    for key, values in readings.VALUES.items():
        assert tuple(values) == readings.READINGS[key] and len(values) >= 2
        assert readings.main_value(key) == next(iter(values.values()))
        assert readings.value(key) == readings.main_value(key)
        for label, v in values.items():
            with readings.reading(key, label):
                assert readings.value(key) == v
    assert readings.READINGS["often"][0] == "a quarter of the heads"
    assert readings.READINGS["substantial"][1:] == tuple(
        f"more than {100 * 0.10 * f:g} points above uniform attention"
        for f in readings.SENSITIVITY)
    assert readings.VALUES["often"]["half of the heads"] == Fraction(1, 2)
    assert "within 4 points below" in readings.READINGS["close to"]


def test_the_book_names_every_reading_the_ledger_judges():
    """The findings page's account of the multiverse names each key of readings.READINGS, so a
    reading added to the ledger cannot go unmentioned where a reader learns what was varied."""
    from analysis_utils import paths
    from analysis_utils.ledger import readings

    text = (paths.REPO_ROOT / "book" / "findings.md").read_text()
    para = text[text.index("**Every verdict across its specifications**"):]
    para = " ".join(para[:para.index("\n\n")].split())
    missing = [k for k in readings.READINGS if f'"{k}' not in para]
    assert not missing, f"book/findings.md does not name the readings {missing}"


def test_every_reading_names_its_source():
    """Each key of readings.READINGS has a source (the paper's words, or a named convention),
    which the ledger prints in the specification cell of every row judged under it."""
    from analysis_utils.ledger import readings

    assert set(readings.SOURCES) == set(readings.READINGS)
    assert all(len(v) > 20 for v in readings.SOURCES.values())
    assert "4-point gap" in readings.SOURCES["close to"]  # generated from Clark's Table 2
    assert "within 4 points below" in readings.READINGS["close to"]


def test_a_two_part_row_states_each_parts_claim_in_its_specification(tmp_path):
    """Referees of 2 Dec 2026 (issue 52): the many-relations row's specification stated only its
    first part ("below the null 0") while its second part is tested above 13 points; parts that
    claim different things are each stated, tasks under one rule once."""
    parts = {"no head well at many": [Check(_result(-0.05, -0.01), null=0.0, direction=-1)],
             "particular heads": [Check(_result(0.2, 0.3), null=0.13)]}
    o = Outcome("x", per_task=parts, scope="every", scale=100, suffix=" points")
    row = core.evaluate([_claim("two parts", o)], _tables(tmp_path)).iloc[0]
    assert row["specification"].startswith(
        "claim: an effect, below the null +0.0 points (no head well at many); an effect, above "
        "the null +13.0 points (particular heads); no margin")
    tasks = {t: [Check(_result(0.2, 0.3), null=0.0)] for t in ("MRPC", "RTE")}
    o = Outcome("x", per_task=tasks, scope="every", scale=100, suffix=" points")
    row = core.evaluate([_claim("two tasks", o)], _tables(tmp_path)).iloc[0]
    assert row["specification"].startswith("claim: an effect, above the null +0.0 points; ")
