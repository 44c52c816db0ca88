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


class _Stub:
    """A model stand-in with an identity (what the guard reads) and a label."""

    def __init__(self, sha, init="pretrained", name="stub", device="cpu"):
        self.identity = {"weights_sha256": sha, "init": init, "name": name}
        self.label, self.device = name, device


def test_labels_are_refused_on_any_model_but_the_labelled_one(tiny_loaded):
    """labelled_maps on another model would gather other heads' maps under the labels (issue
    44: notebook 06 did this on any model of 6 or more layers); it refuses, naming the fix."""
    import pytest

    assert not sheets.labels_drawn_on(tiny_loaded)
    with pytest.raises(sheets.LabelsNotOfThisModel, match="training_set"):
        sheets.labelled_maps(tiny_loaded)
    # identity, not shape: a 6 x 12 model with other weights, or the labelled weights
    # randomised, is not the labelled model
    assert not sheets.labels_drawn_on(_Stub("0" * 64))
    assert not sheets.labels_drawn_on(_Stub(sheets.LABELLED_WEIGHTS_SHA256, init="random"))
    assert sheets.labels_drawn_on(_Stub(sheets.LABELLED_WEIGHTS_SHA256))


def test_training_set_falls_back_to_the_labelled_model_and_states_the_transfer(monkeypatch):
    labelled = _Stub(sheets.LABELLED_WEIGHTS_SHA256, name="all-MiniLM-L6-v2")
    drawn_on = []

    def fake_maps(model, **kw):
        drawn_on.append(model)
        return pd.DataFrame({"label": ["Block"]}), [np.zeros((3, 3))], [None]

    monkeypatch.setattr(sheets, "labelled_maps", fake_maps)
    other = _Stub("1" * 64, name="tiny-bert")
    loaded_names = []
    ts = sheets.training_set(other, load=lambda name, device: loaded_names.append(name)
                             or labelled)
    assert loaded_names == [sheets.LABELLED_MODEL] and drawn_on == [labelled]
    assert ts.model is labelled and ts.identity["weights_sha256"] == \
        sheets.LABELLED_WEIGHTS_SHA256
    assert "all-MiniLM-L6-v2" in ts.transfer and "tiny-bert" in ts.transfer
    # the labelled model itself: its own maps, no transfer, nothing else loaded
    own = sheets.training_set(labelled, load=None)
    assert own.model is labelled and own.transfer is None and drawn_on[-1] is labelled
