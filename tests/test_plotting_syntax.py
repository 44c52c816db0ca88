"""plotting_syntax: figures build from small hand-made inputs; example pickers are
deterministic and never look at predictions."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from analysis_utils.analyses import coref, syntax  # noqa: E402
from analysis_utils.data import ontogum  # noqa: E402
from analysis_utils.engine.wordmaps import WordMaps  # noqa: E402
from analysis_utils.plotting import syntax as syntax_plots  # noqa: E402

FIX = Path(__file__).parent / "fixtures"

# "the cat sat on the mat": det(cat, the), nsubj(sat, cat), case(mat, on), det(mat, the),
# obl(sat, mat)
SENT = SimpleNamespace(words=("the", "cat", "sat", "on", "the", "mat"),
                       heads=(2, 3, 0, 6, 6, 3), deprels=("det", "nsubj", "root", "case", "det",
                                                          "obl"))


def _maps(seed=0, layers=2, heads=3):
    m = len(SENT.words) + 2
    x = np.random.default_rng(seed).random((layers, heads, m, m))
    return WordMaps(attn=x / x.sum(-1, keepdims=True),
                           is_special=np.r_[True, np.zeros(m - 2, bool), True],
                           word_pos=np.arange(1, m - 1))


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_relation_heatmaps_one_panel_per_relation():
    scores = syntax.score_heads([(SENT, _maps(0)), (SENT, _maps(1))], min_count=0)
    base = syntax.offset_baselines([SENT, SENT])
    rels = ["All", "det", "case"]
    fig = syntax_plots.relation_heatmaps(scores, base, relations=rels, ncols=2)
    titled = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title().split(" ")[0] for ax in titled] == rels
    assert "offset" in titled[1].get_title()
    assert len(fig.axes) == len(rels) + 1  # the empty fourth panel removed; one colour bar
    best = syntax.best_heads(scores).set_index("relation").loc["det"]
    box = [p for p in titled[1].patches][0]  # the best head, 0-based (layer, head)
    assert (box.get_y() + 0.5, box.get_x() + 0.5) == (best["layer"], best["head"])
    assert f"best {best['layer'] + 1}-{best['head'] + 1}" in titled[1].get_title()


def test_attention_lines_draws_gold_and_weights():
    words = ["[CLS]", *SENT.words, "[SEP]"]
    attn = np.eye(8)[[0, 2, 3, 3, 6, 6, 3, 7]]  # one-hot rows: each word -> one word
    fig = syntax_plots.attention_lines(words, attn, gold=[(1, 2)],
                                          is_special=[True] + [False] * 6 + [True])
    lines = fig.axes[0].get_lines()
    assert len(lines) == 1 + 8  # one gold edge + one line per row (weight 1)
    with pytest.raises(ValueError, match="attn must be"):
        syntax_plots.attention_lines(words, attn[:7, :7])


def test_attention_lines_grid():
    words = ["[CLS]", *SENT.words, "[SEP]"]
    panel = dict(words=words, attn=_maps().attn[0, 0], gold=[(1, 2)], rows=[1])
    fig = syntax_plots.attention_lines_grid([panel, panel], ncols=2, suptitle="x")
    assert len(fig.axes) == 2 and fig.canvas.manager is None  # no pyplot state


def test_map_labels_and_edges():
    maps = _maps()
    labels = syntax_plots.map_labels(SENT.words, maps.is_special, maps.word_pos)
    assert labels == ["[CLS]", *SENT.words, "[SEP]"]
    assert syntax_plots.relation_edges(SENT, "det", maps.word_pos, "dep2head") == [
        (1, 2), (5, 6)]
    assert syntax_plots.relation_edges(SENT, "det", maps.word_pos, "head2dep") == [
        (2, 1), (6, 5)]


def test_pick_sentence():
    short = SimpleNamespace(words=("cat",), heads=(0,), deprels=("root",))
    assert syntax_plots.pick_sentence([short, SENT], "det", min_words=2) == 1
    assert syntax_plots.pick_sentence([short, SENT], "det", min_words=2, exclude=[1]) is None
    # only one "case" word: falls back to one instance
    assert syntax_plots.pick_sentence([short, SENT], "case", min_words=2) == 1
    assert syntax_plots.pick_sentence([SENT], "ccomp", min_words=2) is None


def test_pick_coref_window():
    doc = ontogum.read_ontogum(FIX / "coref" / "tiny.conllu")[0]
    wins = coref.windows(doc, lambda ws: [1] * len(ws), max_pieces=128)
    k, s, e = syntax_plots.pick_coref_window(wins, max_span=30, min_mentions=1)
    assert k == 0 and 0 <= s < e <= len(wins[0].words)
    for m, heads in coref.evaluable_mentions(wins[0]):
        if s <= m.head_word < e:
            assert all(s <= h for h in heads)
    assert syntax_plots.pick_coref_window(wins, max_span=1, min_mentions=1) is None


def test_describe_margins_from_table():
    import pandas as pd

    t = pd.DataFrame({"relation": ["All", "det", "amod"], "head": ["1-1", "1-2", "2-1"],
                      "accuracy": [60.0, 90.0, 70.0], "baseline": [30.0, 50.0, 68.0],
                      "offset": [1, 1, 1]})
    text = syntax.describe_margins(t, wide=10)
    # "All" is not counted among the relations (one count throughout the notebook)
    assert ("Of the 2 relations in the table, the best head beats its best fixed-offset "
            "baseline by 10 points or more for 1: det (head 1-2 90.0% vs. offset +1 50.0%, "
            "+40.0).") in text
    assert "It does not for the other 1: amod" in text
    assert text.endswith("Over all words: All (head 1-1 60.0% vs. offset +1 30.0%, +30.0).")
    assert syntax.clear_wins(t, wide=10).to_dict() == {"det": 40.0}


def test_relation_heatmaps_subset_notes_and_font_scale():
    scores = syntax.score_heads([(SENT, _maps(0)), (SENT, _maps(1))], min_count=0)
    rels = sorted(set(scores["relation"]) - {syntax.ALL})[:2]
    fig = syntax_plots.relation_heatmaps(scores, relations=rels, notes={rels[0]: "paper: x"},
                                         font_scale=1.4)
    titles = [ax.get_title() for ax in fig.axes if ax.get_images()]
    assert len(titles) == 2 and titles[0].endswith("\npaper: x")
    assert titles[0].startswith(f"{rels[0]} (n=") and "paper" not in titles[1]
