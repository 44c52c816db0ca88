"""Quotes as shown (issue 53, item 6): :mod:`analysis_utils.claims.display` takes the papers'
source-text residue out of a quote (LaTeX labels, simple inline math, line-break hyphens) and
nothing else; the registry and the ledger keep the verbatim words."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from analysis_utils import claims
from analysis_utils.claims.display import apply_edits, display_edits, display_quote

#: every registry quote the cleaning changes, as shown (all others are shown verbatim)
CHANGED = {
    "clark-4.1-split-words":
        "which means some words ( ~8% in our data) are split up into multiple tokens.",
    "clark-4.2-specialised-heads":
        "However, we do find that certain attention heads specialize to specific dependency "
        "relations, sometimes achieving high accuracy and substantially outperforming the "
        "fixed-offset baseline.",
    "clark-6-behaviour-clusters":
        "We find that there are several clear clusters of heads that behave similarly, often "
        "corresponding to behaviors we have already discussed in this paper.",
    "kovaleva-4.1-types-repeated":
        "[Figure] shows that the self-attention map types described above are consistently "
        "repeated across different heads and tasks.",
    "kovaleva-4.2-two-heads":
        "The heatmap of averaged attention scores over all collected examples ([Figure]) "
        "suggests that 2 out of 144 heads tend to attend to the parts of the sentence that "
        "FrameNet annotators identified as core elements of the same frame.",
    "kovaleva-4.3-last-two-layers":
        "[Figure] shows that for all the tasks except QQP, it is the last two layers that "
        "undergo the largest changes compared to the pre-trained BERT model.",
    "kovaleva-4.3-finetuned-beats-pretrained":
        "At the same time, [Table] shows that fine-tuned BERT outperforms pre-trained BERT by "
        "a significant margin on all the tasks (with an average of 35.9 points of absolute "
        "difference).",
    "kovaleva-4.5-cls-attends-sep":
        "Our investigation of attention distribution for the [CLS] token in the output layer "
        "suggests that for most tasks, with the exception of STS-B, RTE and QNLI, the [SEP] "
        "gets attended the most, as shown in [Figure].",
    "kovaleva-4.6-gain-range":
        "The gain from disabling a single head is different for different tasks, ranging from "
        "the minimum absolute gain of 0.1% for STS-B, to the maximum of 1.2% for MRPC (see "
        "[Figure]).",
}

#: what a removed span may be, by kind: nothing outside these patterns is ever changed
RESIDUE = {
    "label": re.compile(r"(fig|tab|sec|eq|app):[A-Za-z]\w*(?:[-.:]\w+)*|\\\w*ref\{[^{}]*\}"
                        r"|\\label\{[^{}]*\}"),
    "math": re.compile(r"\$[^$]+\$"),
    "hyphen": re.compile(r"(?:[A-Za-z]+-)*[A-Za-z]+- (?:\[\.\.\.\] )?[a-z]+"),
}
#: the residue as written and as shown, both dropped before comparing the rest
_SHOWN_MARKS = re.compile(r"\[(Figure|Table|Section|Equation|Appendix)\]")


def _canon(verbatim: bool, text: str) -> list[str]:
    """The words that must survive unchanged: labels, brackets, math markup and the
    line-break joins dropped (from the verbatim) or their shown forms dropped (from the
    shown text)."""
    if verbatim:
        text = RESIDUE["label"].sub("", text)
        text = re.sub(r"\$|\\sim|\\approx|\\pm", "", text).replace("\\%", "%")
        text = re.sub(r"- (?:\[\.\.\.\] )?(?=[a-z])", "\x00", text)
    else:
        text = _SHOWN_MARKS.sub("", text)
        text = re.sub(r"[~\u2248\u00b1](?=\d)", "", text)
    return text.split()


@pytest.fixture(scope="module")
def entries():
    return claims.load()


def test_changed_quotes_are_the_listed_ones(entries):
    shown = claims.display_quotes()
    verbatim = claims.quotes()
    assert shown.keys() == verbatim.keys()
    changed = {i: s for i, s in shown.items() if s != verbatim[i]}
    assert changed == CHANGED


def test_the_cleaning_removes_only_residue(entries):
    """For every quote: each changed span is residue of a known kind; the edits rebuild the
    shown text; the words outside them are the verbatim ones, in order and as a multiset;
    hyphens inside words (fine-tuning, self-attention) are all still there."""
    for e in entries:
        text = claims.normalise(e.quote)
        shown = display_quote(e.quote)
        edits = display_edits(e.quote)
        assert apply_edits(text, edits) == shown, e.id
        for ed in edits:
            assert RESIDUE[ed.kind].fullmatch(ed.before), (e.id, ed)
            assert text[ed.start:ed.end] == ed.before
        before = [w.replace("\x00", "") for w in _canon(True, text)]
        after = _canon(False, shown)
        assert Counter(before) == Counter(after), (e.id, Counter(before) - Counter(after),
                                                   Counter(after) - Counter(before))
        assert before == after, e.id
        labels = [ed for ed in edits if ed.kind == "label"]
        for m in re.finditer(r"\w+(?:-\w+)+", text):
            if not any(ed.start <= m.start() < ed.end for ed in labels):
                assert m.group(0) in shown, (e.id, m.group(0))


def test_the_registry_and_the_ledger_keep_the_verbatim_words(entries):
    verbatim = claims.quotes()
    for e in entries:
        assert verbatim[e.id] == claims.normalise(e.quote)
    assert "tab:glue-results" in verbatim["kovaleva-4.3-finetuned-beats-pretrained"]
    assert "some- [...] times" in verbatim["clark-4.2-specialised-heads"]


@pytest.mark.parametrize("text, shown", [
    # labels: bare keys (any position, any punctuation around them) and commands
    ("fig:cosine shows that", "[Figure] shows that"),
    ("as shown in fig:cls.", "as shown in [Figure]."),
    ("(see fig:disableheadsall).", "(see [Figure])."),
    ("At the same time, tab:glue-results shows", "At the same time, [Table] shows"),
    ("results in \\ref{tab:glue-results} and \\autoref{fig:x}",
     "results in [Table] and [Figure]"),
    ("as in Section \\ref{sec:method}.", "as in Section [Section]."),
    ("a caption\\label{fig:one} here", "a caption here"),
    ("words ($\\sim 8\\%$)", "words (~8%)"),
    # line-break hyphens: page-break join and plain space
    ("relations, some- [...] times achieving", "relations, sometimes achieving"),
    ("relations, some- times achieving", "relations, sometimes achieving"),
    ("Some- times it does", "Sometimes it does"),
    ("heads that be- [...] have similarly", "heads that behave similarly"),
    # compounds keep their hyphen, split or not
    ("fine-tuning, self-attention and head-to-head", "fine-tuning, self-attention and head-to-head"),
    ("the self- attention maps", "the self-attention maps"),
    ("a head-to- head comparison", "a head-to-head comparison"),
    ("the pre- [...] trained model", "the pre-trained model"),
    # left as printed
    ("pre- and post-training", "pre- and post-training"),
    ("The attention- and-words", "The attention- and-words"),
    ("layers 2- 4", "layers 2- 4"),
    ("STS-B- RTE", "STS-B- RTE"),
    ("see Figure 3: the map", "see Figure 3: the map"),
    ("http://nlp.stanford.edu/ fig", "http://nlp.stanford.edu/ fig"),
    ("math $x^2$ stays", "math $x^2$ stays"),
    ("the [CLS] token, [SEP] and <b>76.3</b>", "the [CLS] token, [SEP] and <b>76.3</b>"),
    ("  several\n  spaces\tand\nlines  ", "several spaces and lines"),
])
def test_display_quote_by_hand(text, shown):
    assert display_quote(text) == shown


def test_edits_that_do_not_fit_are_refused():
    edits = display_edits("fig:cosine shows")
    with pytest.raises(ValueError):
        apply_edits("tab:cosine shows", edits)


def test_claim_pages_show_the_cleaned_quote():
    """The claim pages' quote lines (``> ...``) carry no label, math markup or line-break
    hyphen; the ledger's ``quote`` column they come from stays verbatim."""
    from analysis_utils import paths
    from analysis_utils.publish import claimpages

    ledger = claimpages.ledger()
    assert ledger["quote"].str.contains("tab:glue-results", regex=False).any()
    sources = claimpages.registry_by_quote()
    shown = []
    for c in claimpages.claims(ledger):
        md = claimpages.page(c, {}, paths.REPO_ROOT, sources)
        shown += [line for line in md.splitlines() if line.startswith("> ")]
    text = "\n".join(shown)
    for residue in ("fig:", "tab:", "- \\[...\\] ", "\\\\sim", "some- "):
        assert residue not in text, residue
    assert "> At the same time, \\[Table\\] shows that fine-tuned BERT" in text
    assert "sometimes achieving high accuracy" in text
