"""One spec per claim, no number written by hand in prose (issue 52): every number in a ledger
claim's ``criterion``, ``reference`` and ``test`` is formatted from the constant its rule
applies, so that changing the constant changes the verdict and the words together.

(a) An AST scan of the specs, :mod:`analysis_utils.ledger.spec_clark` and
:mod:`~analysis_utils.ledger.spec_kovaleva` (with the words they read from the rules modules,
``rules.NAME``): no string literal that reaches a Claim's criterion, reference or test holds a digit, but for the
non-parametric tokens of :data:`ALLOWED`. (b) For a few claims, a constant is changed and both
the rebuilt claim's words and its rule follow."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis_utils.ledger import (
    clark,
    core,
    depth,
    kovaleva,
    resample,
    spec,
    spec_clark,
    spec_kovaleva,
)
from analysis_utils.ledger.spec import Margin

LEDGER = Path(clark.__file__).parent
FIELDS = {5: "criterion", 6: "reference", 7: "test"}  # Claim's positional arguments

#: Tokens with digits that are not parameters of any rule, each with why (removed before the
#: scan looks for a digit). Anything else with a digit must be formatted from a constant.
ALLOWED = [
    (r"(?<![\w.+-])0(?![\w.%])", "0: the null of a difference, slope or correlation ('above "
                                 "0', '0 change', 'a slope of 0'): what 'more' means, no size"),
    (r"1/n", "uniform attention's weight per token, a formula"),
    (r"\b[KL]/2 \+ 1\b", "the rank that 'more than half' of K heads or L layers reach"),
    (r"\b1 - 2a\b", "the TOST interval's level, a the family's level (computed in core)"),
    (r"\b2 x L x H\b", "the two directions of every head (dep2head, head2dep)"),
    (r"\bdep2head\b|\bhead2dep\b", "the directions' names"),
    (r"\(1 - baseline\)", "the baseline's errors, the share's denominator"),
    (r"\b1 - cosine\b", "the drift's definition"),
    (r"\bTable [13]\b", "the papers' tables, by name"),
    (r"\bnotebook 0[1-8]\b|\(02, |\b07 disables\b", "the compendium's notebooks, by number"),
    (r"\(\d\) ", "the parts of a two-part criterion, enumerated"),
    (r"word, 3\.3\)", "the paper's section that states the bound, by number"),
    (r"a ratio of 1 \(", "chance for a ratio: [SEP] no different from the other tokens"),
]


def _str_valued(node: ast.AST) -> bool:
    """An assignment whose value is text (a literal, an f-string or their concatenation), not a
    constant built by a call (a Margin's source is not a claim's words)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp):
        return _str_valued(node.left) or _str_valued(node.right)
    return False


def _assignments(nodes) -> dict[str, list[ast.AST]]:
    out: dict[str, list[ast.AST]] = {}
    for n in nodes:
        if isinstance(n, ast.Assign):
            for t in n.targets:
                if isinstance(t, ast.Name) and _str_valued(n.value):
                    out.setdefault(t.id, []).append(n.value)
    return out


def _literals(node: ast.AST, scope: dict) -> list[str]:
    """Every str literal that reaches ``node``'s value: its own, those of the text-valued names
    it reads (module or function), the arguments of the helpers it calls; not a format spec
    (``:.0f``), not a subscript's key (``s46['layer1_rte_gain']``)."""
    out, seen = [], set()

    def walk(n):
        if isinstance(n, ast.FormattedValue):
            walk(n.value)
        elif isinstance(n, ast.Constant):
            if isinstance(n.value, str):
                out.append(n.value)
        elif isinstance(n, ast.Subscript):
            walk(n.value)
        elif isinstance(n, ast.Name) or (isinstance(n, ast.Attribute)
                                         and isinstance(n.value, ast.Name)
                                         and n.value.id == "rules"):
            key = n.id if isinstance(n, ast.Name) else f"rules.{n.attr}"
            if key in scope and key not in seen:
                seen.add(key)
                for v in scope[key]:
                    walk(v)
        else:
            for c in ast.iter_child_nodes(n):
                walk(c)

    walk(node)
    return out


def claim_literals(path: Path, rules: Path | None = None) -> list[tuple[int, str, str]]:
    """``(line, field, literal)`` for every str literal that reaches a Claim's criterion,
    reference or test in the module at ``path`` (a spec module); ``rules``: the rules module it
    reads as ``rules.NAME``, whose text-valued names are followed too."""
    tree = ast.parse(path.read_text())
    module = _assignments(tree.body)
    if rules is not None:
        module.update({f"rules.{k}": v
                       for k, v in _assignments(ast.parse(rules.read_text()).body).items()})
    out = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        scope = {**module, **_assignments(ast.walk(fn))}
        for call in ast.walk(fn):
            if not (isinstance(call, ast.Call) and getattr(call.func, "id", "") == "Claim"):
                continue
            args = {FIELDS[i]: a for i, a in enumerate(call.args) if i in FIELDS}
            args.update({k.arg: k.value for k in call.keywords if k.arg in FIELDS.values()})
            for field, node in args.items():
                out += [(node.lineno, field, s) for s in _literals(node, scope)]
    return out


def hand_numbers(text: str) -> list[str]:
    """The digits left in ``text`` once the :data:`ALLOWED` tokens are taken out."""
    for pattern, _why in ALLOWED:
        text = re.sub(pattern, " ", text)
    return re.findall(r"\S*\d\S*", text)


@pytest.mark.parametrize("module", ["clark.py", "kovaleva.py"])
def test_no_number_is_written_by_hand_in_a_claims_words(module):
    found = claim_literals(LEDGER / f"spec_{module}", rules=LEDGER / module)
    assert len(found) > 50  # the scan reaches the claims' words
    bad = [f"{module}:{line} {field}: {s!r} ({hand_numbers(s)})" for line, field, s in found
           if hand_numbers(s)]
    assert not bad, "numbers typed by hand in a claim's words:\n" + "\n".join(bad)


def test_the_scan_finds_a_number_typed_by_hand(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("X = 'within 2 points'\n"
                   "def claims():\n"
                   "    y = f'above {Z:.0f}'\n"
                   "    return [Claim('01', 'p', '3.1', 'c', 'v', 'share > 50%' + X, y,\n"
                   "                  test='10,000 resamples; above 0')]\n")
    found = {s: hand_numbers(s) for _line, _field, s in claim_literals(src)}
    assert found == {"share > 50%": ["50%"], "within 2 points": ["2"], "above ": [],
                     "10,000 resamples; above 0": ["10,000"]}


# --- (b) the words and the rule follow one constant ---------------------------------------

L, H, N, A = 6, 2, 24, 6


def _folder(tmp_path, current=0.12, prev_early=0.40, prev_late=0.05):
    """A 6 x 2 model's per-segment statistics (notebook 01's file), just what the two rules
    below read."""
    rng = np.random.default_rng(0)
    article = np.repeat(np.arange(A), N // A)
    depth_level = np.where(np.arange(1, L + 1) <= L // 2, prev_early, prev_late)[:, None]
    z = {"article": article.astype(np.int32),
         "article_names": np.array([f"a{i}" for i in range(A)]),
         "current": current + rng.normal(0, 0.01, (N, L, H)),
         "previous": depth_level + rng.normal(0, 0.01, (N, L, H)),
         "next": 0.02 + rng.normal(0, 0.01, (N, L, H))}
    f = tmp_path / "run"
    f.mkdir()
    (f / "01_provenance.json").write_text(json.dumps(
        {"parameters": {}, "models": {"model": {"name": "tiny", "num_layers": L,
                                                "num_heads": H}}}))
    for which in ("model", "control"):
        np.savez(f / clark.SEGMENT_TABLE.format(which), **z)
    return core.Tables(f)


def _claim(words: str):
    return next(c for c in spec_clark.claims() if c.claim.startswith(words))


@pytest.fixture
def quick(monkeypatch):
    monkeypatch.setattr(clark, "RESAMPLES_01", 300)


def test_the_little_threshold_moves_the_words_and_the_null(tmp_path, monkeypatch, quick):
    c = _claim("most heads put little attention")
    assert "put < 10% of their attention" in c.criterion
    monkeypatch.setattr(clark, "LITTLE", 0.2)
    c = _claim("most heads put little attention")
    assert "put < 20% of their attention" in c.criterion
    assert "from the bottom < 20%" in c.criterion and "10%" not in c.criterion
    o = c.rule(_folder(tmp_path, current=0.15), "model")
    assert o.check.null == 0.2 and o.check.result.hi < 0.2  # 15% is 'little' under 20%


def test_the_share_margin_moves_the_words_and_the_rule(tmp_path, monkeypatch, quick):
    assert "within the smallest effect of interest, 2 points or" in _claim(
        "heads on the next or previous token").criterion
    monkeypatch.setattr(clark, "SHARE_MARGIN", Margin(0.05, "convention", "test: 5 points"))
    monkeypatch.setattr(spec, "LEVEL_CAP", 0.25)
    monkeypatch.setattr(spec, "SCALED_FRACTION", 0.2)
    c = _claim("heads on the next or previous token")
    assert ("within the smallest effect of interest, 5 points or, where that is more than a "
            "quarter of the later half's own mean share, a fifth of that share") in c.criterion
    o = c.rule(_folder(tmp_path), "model")
    assert float(o.check.margin) == 0.05
    # the later half's share is about 5%: 5 points is more than a quarter of it, so the scaled
    # margin (a fifth of the level) is the main specification, as the criterion says
    assert o.check.level == pytest.approx(0.05, abs=0.01)
    assert spec.margin_choices(o.check)[0] == "scaled"
    scaled = spec.with_margin(o.check, "scaled")
    assert float(scaled.margin) == pytest.approx(0.2 * o.check.level)


def test_the_depth_convention_moves_the_words_and_the_layers(tmp_path, monkeypatch, quick):
    c = _claim("heads on the next or previous token")
    assert "(BERT-base's layers 1-6)" in c.criterion
    monkeypatch.setitem(depth.EARLIER_LATER, "halves", ((1, 4), (5, 12)))
    c = _claim("heads on the next or previous token")
    assert "(BERT-base's layers 1-4)" in c.criterion
    assert "(BERT-base's layers 1-4)" in _claim("very broad heads").criterion
    assert depth.earlier_later(12) == ([1, 2, 3, 4], list(range(5, 13)))
    o = c.rule(_folder(tmp_path), "model")
    assert o.value.startswith("layers 1-2: ") and ", layers 3-6: " in o.value


def test_the_heterogeneous_band_moves_both_rows_and_the_rule(monkeypatch):
    d = pd.DataFrame({"seed": [0, 0], "task": ["MRPC", "QQP"], "Heterogeneous": [0.24, 0.5]})
    assert core.heterogeneous_band(d)[1] == [False]  # 24% is below 27%
    monkeypatch.setattr(core, "HETEROGENEOUS_WIDENING", 0.10)
    assert core.heterogeneous_band(d)[1] == [True]
    rows = [c for c in spec_clark.claims() + spec_kovaleva.claims()
            if c.claim.startswith("Heterogeneous maps")]
    assert len(rows) == 2 and all("within 22-71%" in c.criterion for c in rows)
    assert "(the paper's range +- 10 points)" in rows[0].criterion


def test_the_metrics_margins_and_the_papers_gains_move_the_words(monkeypatch):
    from analysis_utils import papers

    def crit(words):
        return next(c for c in spec_kovaleva.claims() if c.claim.startswith(words)).criterion

    assert "(1 point; 2 for MCC;" in crit("the FrameNet heads are not important")
    monkeypatch.setitem(resample.EQUIVALENCE_MARGINS, "mcc",
                        Margin(0.03, "convention", "test"))
    assert "(1 point; 3 for MCC;" in crit("the FrameNet heads are not important")
    monkeypatch.setitem(papers.KOVALEVA_SECTION46["best_head_gain"], "MRPC", 2.5)
    assert "(STS-B +0.1, MRPC +2.5 points)" in crit("disabling some single head improves")
    monkeypatch.setattr(kovaleva, "RTE_LAYER", 2)
    c = next(c for c in spec_kovaleva.claims() if c.claim == "disabling layer 1 improves RTE")
    assert "when the second layer is disabled" in c.criterion and "layer 2 disabled" in c.test


def test_a_bound_that_is_not_zero_never_reads_minus_zero():
    """A referee's point (issue 52): MiniLM's prt interval printed its lower bound, -0.00026,
    as "-0.0", which hides on which side of 0 it lies. Such a bound gets the digits it needs;
    the other bound and a true 0 keep the row's digits."""
    import doctest

    from analysis_utils.ledger import words

    assert doctest.testmod(words).failed == 0
    text = spec.why("inconclusive", lo=-0.00026, hi=0.228, level="99.8%", scale=100,
                    suffix=" points")
    assert "[-0.03, +22.8] points" in text and "-0.0," not in text
    o = core.Outcome(value="", scale=100, suffix=" points")
    assert core._span(-0.00026, 0.228, o) == "[-0.03, +22.8] points"
    assert core._span(0.0, 0.228, o) == "[+0.0, +22.8] points"
    assert core._span(-0.004, 0.105, o) == "[-0.4, +10.5] points"


def test_the_rules_modules_hold_no_claim_and_the_specs_hold_every_one():
    """Issue 52: ``ledger/clark.py`` and ``ledger/kovaleva.py`` shrink to the tests themselves;
    every Claim is declared in a spec module, and its rule is one of the rules modules'."""
    for module in ("clark.py", "kovaleva.py"):
        tree = ast.parse((LEDGER / module).read_text())
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and getattr(n.func, "id", "") == "Claim"]
        assert not calls, f"{module} declares claims: move them to spec_{module}"
    specs = spec_clark.claims() + spec_kovaleva.claims()
    assert len(specs) > 80
    homes = {c.rule.__module__ for c in specs}
    assert homes <= {clark.__name__, kovaleva.__name__}, homes


# --- (c) every parameter a spec reads moves its words -------------------------------------

_TEXT = ("claim", "paper_value", "criterion", "reference", "test")


def _spec_parameters(module) -> list[str]:
    """The numbers a spec module reads from its rules module (``rules.NAME``: an int, a float,
    a Fraction or a :class:`Margin`), by an AST scan of the spec module."""
    from fractions import Fraction

    spec_mod = {clark: spec_clark, kovaleva: spec_kovaleva}[module]
    tree = ast.parse(Path(spec_mod.__file__).read_text())
    names = sorted({n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name) and n.value.id == "rules"})
    return [x for x in names if isinstance(getattr(module, x), (int, float, Fraction))
            and not isinstance(getattr(module, x), bool)]


def _changed(value):
    """Another value of a parameter that its words can state exactly: a share moves by 3
    points, a count by one, a Margin keeps its kind and source."""
    if isinstance(value, Margin):
        return Margin(_changed(float(value)), value.kind, value.source, value.name)
    if isinstance(value, int):
        return value + 1
    v = float(value)
    if 0 < v < 1:
        return round(v + 0.03, 6) if v + 0.03 < 1 else round(v - 0.03, 6)
    return v + 0.5


def _words_of(build) -> list[tuple[str, ...]]:
    return [tuple(getattr(c, f) for f in _TEXT) for c in build()]


@pytest.mark.parametrize("module", [clark, kovaleva], ids=["clark", "kovaleva"])
def test_every_parameter_a_spec_reads_moves_the_words_of_the_claims_that_read_it(module):
    """Issue 52, 'a test shows for every row that its text follows its parameters': each number
    the declarations read from the rules module, changed there (the spec module re-imported,
    as after an edit), changes the words of at least one claim, so no parameter reaches a
    claim without its words saying it (a rule's parameter that no words state would pass the
    hand-typed-number scan above unnoticed)."""
    import importlib

    spec_mod = {clark: spec_clark, kovaleva: spec_kovaleva}[module]
    params = _spec_parameters(module)
    assert len(params) >= (20 if module is clark else 6), params  # the scan reaches them
    before = _words_of(spec_mod.claims)
    silent = []
    try:
        for name in params:
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(module, name, _changed(getattr(module, name)))
                importlib.reload(spec_mod)
                after = _words_of(spec_mod.claims)
            assert len(after) == len(before)
            if after == before:
                silent.append(name)
    finally:
        importlib.reload(spec_mod)
    assert _words_of(spec_mod.claims) == before  # restored
    assert not silent, f"parameters whose change leaves every claim's words as they were: {silent}"
