"""The hand-labelled map set: one example per type, and the labelled maps read back from
attention stores."""

from __future__ import annotations

import numpy as np
import pandas as pd

from analysis_utils.data import labels as sheets


def test_example_per_type_picks_by_length_then_id():
    df = pd.DataFrame({"id": [0, 1, 2, 3, 4],
                       "label": ["Vertical", "Vertical", "Block", "Heterogeneous", "Vertical"]})
    assert sheets.example_per_type(df, [40, 40, 3, 70, 41]) == {
        "Vertical": 0, "Block": 2, "Heterogeneous": 3}
    assert sheets.example_per_type(df, [90, 45, 3, 70, 30], target_length=40) == {
        "Vertical": 1, "Block": 2, "Heterogeneous": 3}


def test_gather_maps_from_a_store_and_from_plain_arrays(tiny_loaded, tmp_path):
    from analysis_utils.engine import attention

    ids = [[2, 7, 8, 9, 3], [2, 12, 13, 3]]
    store = attention.extract_attention(tiny_loaded, [{"input_ids": x} for x in ids],
                                        cache_dir=tmp_path, progress=False)
    labels = pd.DataFrame({"id": [0, 1, 2], "source": ["s", "s", "t"], "example": [11, 10, 5],
                           "layer": [1, 0, 0], "head": [0, 1, 1], "label": ["Vertical"] * 3})
    plain = [np.arange(2 * 2 * 3 * 3, dtype=np.float64).reshape(2, 2, 3, 3)]
    maps = sheets.gather_maps(labels, {"s": store, "t": plain}, {"s": [10, 11], "t": [5]})
    np.testing.assert_array_equal(maps[0], store[1][1, 0])  # example 11 is entry 1
    np.testing.assert_array_equal(maps[1], store[0][0, 1])
    np.testing.assert_array_equal(maps[2], plain[0][0, 1])
    assert all(m.dtype == np.float32 and not isinstance(m, np.memmap) for m in maps)
    assert maps[0].flags.writeable  # a copy, not a view of the store's read buffer
