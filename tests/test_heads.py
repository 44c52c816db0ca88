"""The one head-label helper: 0-based indices in, the papers' 1-based "layer-head" out."""

import pandas as pd
import pytest

from analysis_utils import heads
from analysis_utils.analyses import coref, surface


def test_head_label_is_one_based_and_round_trips():
    assert heads.head_label(0, 0) == "1-1"
    assert heads.head_label(6, 5) == "7-6"  # Clark's head 7-6
    assert heads.parse_head_label("7-6") == (6, 5)
    for layer in range(12):
        for head in range(12):
            assert heads.parse_head_label(heads.head_label(layer, head)) == (layer, head)


def test_head_label_rejects_the_wrong_base():
    with pytest.raises(ValueError, match="0-based"):
        heads.head_label(-1, 0)
    with pytest.raises(ValueError, match="1-based"):
        heads.parse_head_label("0-3")
    with pytest.raises(ValueError, match="layer-head"):
        heads.parse_head_label("7/6")


def test_head_labels_are_layer_major():
    assert heads.head_labels(2, 3) == ["1-1", "1-2", "1-3", "2-1", "2-2", "2-3"]


def test_tables_keep_their_labels():
    # surface frames are 1-based: a 1-based (2, 1) row is labelled "2-1", as before
    df = pd.DataFrame({"layer": [1, 2, 2], "head": [2, 1, 3], "previous": [0.1, 0.9, 0.7]})
    assert surface.heads_above(df, "previous", 0.5) == ["2-1", "2-3"]
    # coref scores are 0-based: head (4, 3) is Clark's "head 5-4"
    hs = pd.DataFrame({"breakdown": ["all"], "group": ["All"], "layer": [4], "head": [3],
                       "accuracy": [0.5], "correct": [1], "total": [2]})
    base = pd.DataFrame({"system": list(coref.SYSTEMS), "breakdown": "all", "group": "All",
                         "accuracy": 0.25, "correct": 1, "total": 4})
    assert "head 5-4" in coref.table2(hs, base, breakdown="all").index
