"""Published numbers live in analysis_utils.papers, once, and agree with the shared
reference_numbers.md (the transcription the compendium was built from)."""

from __future__ import annotations

import re

import pytest

from analysis_utils import heads, papers, paths
from analysis_utils.analyses import syntax

REFERENCE = paths.REPO_ROOT.parent / "shared" / "papers" / "reference_numbers.md"


def test_table1_heads_and_directions_are_well_formed():
    for rel, (head, acc, base, offset, direction) in papers.CLARK_TABLE1.items():
        layer, h = heads.parse_head_label(head)
        assert layer < papers.BERT_BASE_LAYERS and h < 12, rel
        assert 0 < base < acc <= 100 or rel == "nn", rel  # nn: 70.4 vs 70.2
        assert direction == ("head2dep" if rel == "pobj" else "dep2head")
        assert isinstance(offset, int)
    assert syntax.paper_table1().set_index("sd_relation").loc["det", "head"] == "8-11"


@pytest.fixture(scope="module")
def reference() -> str:
    if not REFERENCE.is_file():
        pytest.skip(f"{REFERENCE} not found: it sits in the shared bundle beside the clone")
    return REFERENCE.read_text()


def _rows(text: str, heading: str) -> list[list[str]]:
    """Cells of the first markdown table after the heading that starts with ``heading``."""
    lines = text.split(heading, 1)[1].splitlines()[1:]
    end = next((i for i, line in enumerate(lines) if line.startswith("#")), len(lines))
    rows = [line for line in lines[:end] if line.startswith("|")]
    return [[c.strip() for c in r.strip("|").split("|")] for r in rows[2:]]


def test_table1_matches_reference(reference):
    got = {}
    for rel, head, acc, base in _rows(reference, "### Table 1"):
        b, off = re.fullmatch(r"([\d.]+) \(([+-]\d+)\)", base).groups()
        got[rel] = (head, float(acc), float(b), int(off))
    assert got == {k: v[:4] for k, v in papers.CLARK_TABLE1.items()}


def test_table2_matches_reference(reference):
    names = {"Nearest mention": "nearest", "Head-word match": "head_match",
             "Rule-based sieve": "rule_based", "Neural coref (not comparable)": "neural",
             "Best head (5-4)": "head 5-4"}
    got = {names[r[0]]: tuple(None if c == "-" else int(c) for c in r[1:])
           for r in _rows(reference, "### Table 2")}
    assert got == papers.CLARK_TABLE2


def test_table3_and_ewt_reproduction_match_reference(reference):
    rows = {r[0]: r[1] for r in _rows(reference, "### Table 3")}
    assert {k: int(v) for k, v in rows.items() if k in papers.CLARK_TABLE3} == papers.CLARK_TABLE3
    flat = " ".join(reference.split())
    for needle in ("right-branching 32.1", "attention-only probe 61.4", "attention + GloVe 74.7"):
        assert needle in flat, needle
    assert papers.EWT_REPRODUCTION_TABLE3 == {"Right-branching": 32.1, "Attention only": 61.4,
                                              "Attention + GloVe": 74.7}


def test_section3_and_kovaleva_claims_appear_in_reference(reference):
    flat = " ".join(reference.split())
    for needle in ("(layers 2, 4, 7, 8)", "(layers 1, 2, 2, 3, 6)", "layers 6-10", "> 90%",
                   "3.89 nats", "About 8%", "About 400", "Vertical 30%", "F1 0.86",
                   "32% (MRPC) to 61% (QQP)"):
        assert needle in flat, needle


def test_kovaleva_table1_matches_reference(reference):
    columns = ("pretrained", "random_finetuned", "finetuned")
    got = {}
    for task, *cells in _rows(reference, "- Table 1 (dev sets"):
        task = "MNLI" if task == "MNLI-m" else task
        got[task] = tuple(tuple(float(v) for v in c.split(" / ")) for c in cells)
    assert got == {t: tuple(tuple(papers.KOVALEVA_TABLE1[t][c].values()) for c in columns)
                   for t in papers.KOVALEVA_TASKS}


def test_kovaleva_section46_numbers_appear_in_reference(reference):
    flat = " ".join(reference.split())
    s46 = papers.KOVALEVA_SECTION46
    assert f"+{s46['best_head_gain']['STS-B']} (STS-B)" in flat
    assert f"+{s46['best_head_gain']['MRPC']} points (MRPC)" in flat
    assert f"layer 1 on RTE gives +{s46['layer1_rte_gain']}" in flat
    assert f"up to -{s46['layer_cost_max']}" in flat
    assert "helps MRPC and RTE on average" in flat and s46["random_head_helps"] == ("MRPC", "RTE")
    assert f"FrameNet: {papers.KOVALEVA_SECTIONS42_45['framenet_sentences']} sentences" in flat
