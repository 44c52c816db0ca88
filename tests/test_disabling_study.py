"""Notebook 07's per-model study (analyses/disabling_study.py): the same numbers as the
disabling functions called directly, read back bit for bit from the cache, recomputed when
an entry is damaged, keyed by what changes them. A tiny random classifier (conftest's tiny
BERT config, 2 layers x 2 heads) on the first MRPC dev and train pairs of the gold bundle."""

from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification

from analysis_utils import training
from analysis_utils.analyses import disabling as dis
from analysis_utils.analyses import disabling_study as ds
from analysis_utils.analyses import significance as sig
from analysis_utils.training.glue_data import read_task, subsample, task_dataset

SETTINGS = ds.StudySettings(modes=("uniform", "zero"), metric_name="f1", max_tokens=48,
                            max_dev=24, importance_examples=16, n_random_orders=2)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    with training.torch_threads(1):
        yield


@pytest.fixture(scope="module")
def ft(tiny_model_dir, tiny_loaded):
    """What ``study`` reads of a FineTuned: its cache key, model and tokenizer."""
    config = BertConfig.from_pretrained(tiny_model_dir, num_labels=2, initializer_range=0.4)
    torch.manual_seed(0)
    model = BertForSequenceClassification._from_config(config, attn_implementation="eager")
    return types.SimpleNamespace(key="tiny-MRPC-pretrained-seed0-0123", model=model.eval(),
                                 tokenizer=tiny_loaded.tokenizer)


def test_study_equals_the_direct_calls_and_reads_back_bit_for_bit(ft, gold_data_dir, tmp_path):
    first = ds.study(ft, "MRPC", SETTINGS, cache_dir=tmp_path, data_dir=gold_data_dir)
    assert not any(first.from_cache.values())
    assert set(first.from_cache) == {"sweep-uniform", "sweep-zero", "importance", "curves"}
    # the same numbers as the notebook computed before the cache existed
    dev = task_dataset("MRPC", read_task("MRPC", "dev", gold_data_dir, max_examples=24),
                       ft.tokenizer, 48)
    direct = dis.sweep(ft.model, dev, dev.labels, sig.f1, mode="zero", metric_name="f1")
    pd.testing.assert_frame_equal(first.sweeps["zero"].table, direct.table)
    imp_ex = subsample(read_task("MRPC", "train", gold_data_dir), 16, 0)[0]
    imp_set = task_dataset("MRPC", imp_ex, ft.tokenizer, 48)
    np.testing.assert_array_equal(first.importance,
                                  dis.head_importance(ft.model, imp_set, imp_set.labels))
    assert first.n_dev == 24 and len(first.labels) == 24
    assert ds.cached_parts(ft.key, "MRPC", SETTINGS, tmp_path, gold_data_dir) == {
        p: True for p in first.from_cache}

    again = ds.study(ft, "MRPC", SETTINGS, cache_dir=tmp_path, data_dir=gold_data_dir)
    assert all(again.from_cache.values())
    assert again.seconds == first.seconds  # the time it took when it was computed
    for mode in SETTINGS.modes:
        a, b = first.sweeps[mode], again.sweeps[mode]
        pd.testing.assert_frame_equal(a.table, b.table)
        np.testing.assert_array_equal(a.predictions, b.predictions)
        np.testing.assert_array_equal(a.logits, b.logits)
        assert [c.name for c in a.changes] == [c.name for c in b.changes]
        # the tests over the sweep give the same table either way
        pd.testing.assert_frame_equal(dis.compare_to_baseline(a, sig.f1, n_boot=200),
                                      dis.compare_to_baseline(b, sig.f1, n_boot=200))
    np.testing.assert_array_equal(first.importance, again.importance)
    pd.testing.assert_frame_equal(first.curves, again.curves)


def test_a_damaged_part_is_computed_again(ft, gold_data_dir, tmp_path):
    s = ds.StudySettings(modes=("uniform",), metric_name="f1", max_tokens=48, max_dev=16,
                         importance_examples=8, curves=False)
    first = ds.study(ft, "MRPC", s, cache_dir=tmp_path, data_dir=gold_data_dir)
    key = ds.part_keys(ft.key, "MRPC", s, gold_data_dir)["sweep-uniform"][0]
    values = tmp_path / ds.SUBDIR / key / "values.npy"
    raw = bytearray(values.read_bytes())
    raw[-1] ^= 0xFF  # same size, other number
    values.write_bytes(bytes(raw))
    (tmp_path / ds.SUBDIR / f"{key}.tmp-999").mkdir()  # a killed writer's leftover
    again = ds.study(ft, "MRPC", s, cache_dir=tmp_path, data_dir=gold_data_dir)
    assert again.from_cache == {"sweep-uniform": False, "importance": True}
    pd.testing.assert_frame_equal(first.sweeps["uniform"].table, again.sweeps["uniform"].table)
    assert not list((tmp_path / ds.SUBDIR).glob("*.tmp-*"))


def test_keys_follow_what_changes_the_numbers(gold_data_dir):
    base = ds.part_keys("m1", "MRPC", SETTINGS, gold_data_dir)
    assert set(base) == {"sweep-uniform", "sweep-zero", "importance", "curves"}
    assert base == ds.part_keys("m1", "MRPC", SETTINGS, gold_data_dir)
    other_model = ds.part_keys("m2", "MRPC", SETTINGS, gold_data_dir)
    assert all(other_model[p][0] != base[p][0] for p in base)
    fewer = ds.part_keys("m1", "MRPC", ds.StudySettings(
        modes=("uniform", "zero"), metric_name="f1", max_tokens=48, max_dev=20,
        importance_examples=16, n_random_orders=2), gold_data_dir)
    assert fewer["sweep-zero"][0] != base["sweep-zero"][0]
    assert fewer["importance"][0] == base["importance"][0]  # importance reads train examples
    more_orders = ds.part_keys("m1", "MRPC", ds.StudySettings(
        modes=("uniform", "zero"), metric_name="f1", max_tokens=48, max_dev=24,
        importance_examples=16, n_random_orders=3), gold_data_dir)
    assert more_orders["curves"][0] != base["curves"][0]
    assert more_orders["sweep-uniform"][0] == base["sweep-uniform"][0]


def test_settings_are_checked_and_a_released_model_is_refused(ft):
    with pytest.raises(ValueError, match="modes"):
        ds.StudySettings(modes=("half",))
    with pytest.raises(ValueError, match="no metric"):
        ds.StudySettings(metric_name="bleu")
    with pytest.raises(ValueError, match="importance_split"):
        ds.StudySettings(importance_split="test")
    released = types.SimpleNamespace(key="k", model=None, tokenizer=ft.tokenizer)
    with pytest.raises(ValueError, match="released"):
        ds.study(released, "MRPC", SETTINGS)


def test_cached_curves_read_back_undefined_values_and_empty_labels(tmp_path):
    curves = pd.DataFrame({"order": ["importance", "importance"], "repeat": [0, 0],
                           "n_removed": [0, 4], "fraction": [0.0, 1.0], "mode": "zero",
                           "metric": "pearson", "value": [0.8123456789012345, np.nan],
                           "delta": [0.0, np.nan], "removed": ["", "1-1 1-2 2-1 2-2"]})
    curves.to_csv(tmp_path / "curves.csv", index=False, float_format="%.17g")
    pd.testing.assert_frame_equal(ds.read_curves(tmp_path / "curves.csv"), curves)
