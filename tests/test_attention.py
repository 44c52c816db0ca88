import json

import numpy as np
import pytest
import torch

from analysis_utils.engine.attention import (
    AttentionStore,
    ModelInput,
    cache_key,
    extract_attention,
    token_to_word_index,
    word_conversion_matrices,
    word_level,
)
from analysis_utils.engine.interventions import intervene
from analysis_utils.engine.models import load_model


def _inputs(n_items=9, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_items):
        a, b = int(rng.integers(1, 12)), int(rng.integers(1, 8))
        ids = [2] + list(rng.integers(5, 26, a)) + [3] + list(rng.integers(5, 26, b)) + [3]
        out.append(ModelInput(tuple(int(i) for i in ids), tuple([0] * (a + 2) + [1] * (b + 1))))
    return out


def _reference(loaded, x):
    with torch.inference_mode():
        out = loaded.model(input_ids=torch.tensor([x.input_ids]),
                           token_type_ids=torch.tensor([x.token_type_ids]),
                           output_attentions=True)
    return torch.stack(out.attentions)[:, 0].numpy()


def test_batched_store_equals_one_at_a_time_forward(tiny_loaded, tmp_path):
    items = _inputs()
    store = extract_attention(tiny_loaded, items, cache_dir=tmp_path, max_tokens=40,
                              progress=False)
    assert len(store) == len(items)
    for i, x in enumerate(items):
        got = store[i]
        assert got.shape == (2, 2, len(x), len(x))
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float32), _reference(tiny_loaded, x), atol=1e-3)
        np.testing.assert_allclose(got.astype(np.float32).sum(-1), 1.0, atol=2e-3)


def test_warm_cache_does_not_run_model(tiny_loaded, tmp_path, monkeypatch):
    items = _inputs()
    first = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)

    def boom(*a, **k):
        raise AssertionError("model ran on a warm cache")

    monkeypatch.setattr(tiny_loaded.model, "forward", boom)
    again = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    assert again.directory == first.directory
    np.testing.assert_array_equal(again[3], first[3])


def test_changed_input_or_model_changes_key(tiny_loaded):
    items = _inputs()
    base = cache_key(tiny_loaded.identity, items)
    changed = list(items)
    changed[0] = ModelInput(items[0].input_ids, tuple([0] * len(items[0])))
    assert cache_key(tiny_loaded.identity, changed) != base
    assert cache_key({**tiny_loaded.identity, "init": "random"}, items) != base
    assert cache_key(tiny_loaded.identity, items[:-1]) != base
    assert cache_key(tiny_loaded.identity, list(items)) == base


def test_weights_changed_in_memory_never_get_the_old_maps(tiny_model_dir, tmp_path):
    """One in-place weight change (as a fine-tuning step makes) must give a new cache entry
    with the new model's maps, not the maps cached for the weights at load time."""
    lm = load_model(str(tiny_model_dir), device="cpu")
    items = _inputs(4)
    before = extract_attention(lm, items, cache_dir=tmp_path, progress=False)
    with torch.no_grad():
        lm.model.encoder.layer[0].attention.self.query.weight.mul_(3.0)
    after = extract_attention(lm, items, cache_dir=tmp_path, progress=False)
    assert after.directory != before.directory
    np.testing.assert_allclose(after[0], _reference(lm, items[0]), atol=1e-3)
    assert not np.allclose(after[0][0], before[0][0], atol=1e-3)


def test_maps_under_an_intervention_are_keyed_apart(tiny_loaded, tmp_path):
    items = _inputs(4)
    plain = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    with intervene(tiny_loaded, uniform=[(0, 1)]):
        disabled = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    assert disabled.directory != plain.directory
    n = len(items[0])
    np.testing.assert_allclose(disabled[0][0, 1], np.full((n, n), 1 / n), atol=1e-3)
    assert not np.allclose(plain[0][0, 1], 1 / n, atol=1e-3)
    again = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    assert again.directory == plain.directory  # leaving the context restores the plain key


def test_interrupted_run_resumes_without_recomputing(tiny_loaded, tmp_path, monkeypatch):
    items = _inputs(12)
    # Same batching as the interrupted run, so the resumed maps must match bit for bit.
    clean = extract_attention(tiny_loaded, items, cache_dir=tmp_path / "clean", max_batch=3,
                              progress=False)

    real_forward = tiny_loaded.model.forward
    seen = []

    def crashing(*args, **kwargs):
        if len(seen) == 2:
            raise KeyboardInterrupt("simulated crash")
        seen.append(kwargs["input_ids"].shape[0])
        return real_forward(*args, **kwargs)

    monkeypatch.setattr(tiny_loaded.model, "forward", crashing)
    with pytest.raises(KeyboardInterrupt):
        extract_attention(tiny_loaded, items, cache_dir=tmp_path / "run", max_batch=3,
                          flush_every_s=0, progress=False)
    key_dir = next((tmp_path / "run" / "attention").iterdir())
    assert not (key_dir / "COMPLETE").exists()
    with pytest.raises(FileNotFoundError, match="not a complete attention store"):
        AttentionStore(key_dir)
    done = json.loads((key_dir / "progress.json").read_text())["done"]
    assert len(done) == sum(seen) == 6

    resumed_batches = []

    def counting(*args, **kwargs):
        resumed_batches.append(kwargs["input_ids"].shape[0])
        return real_forward(*args, **kwargs)

    monkeypatch.setattr(tiny_loaded.model, "forward", counting)
    store = extract_attention(tiny_loaded, items, cache_dir=tmp_path / "run", max_batch=3,
                              progress=False)
    assert sum(resumed_batches) == len(items) - 6
    for i in range(len(items)):
        np.testing.assert_array_equal(store[i], clean[i])


def test_truncated_maps_file_restarts_from_scratch(tiny_loaded, tmp_path, monkeypatch):
    items = _inputs(6)
    store = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    expected = [np.array(store[i]) for i in range(len(items))]
    (store.directory / "COMPLETE").unlink()
    (store.directory / "progress.json").write_text(json.dumps({"done": [0, 1, 2]}))
    with open(store.directory / "maps.f16", "r+b") as fh:
        fh.truncate(10)
    again = extract_attention(tiny_loaded, items, cache_dir=tmp_path, progress=False)
    for i in range(len(items)):
        np.testing.assert_array_equal(again[i], expected[i])


def test_too_long_input_is_refused(tiny_loaded, tmp_path):
    with pytest.raises(ValueError, match="longer than the model's 64 positions"):
        extract_attention(tiny_loaded, [ModelInput(tuple([5] * 70))], cache_dir=tmp_path,
                          progress=False)


def test_token_to_word_index_keeps_special_tokens_as_words():
    assert token_to_word_index([None, 0, 0, 1, None, 0, None]).tolist() == [0, 1, 1, 2, 3, 4, 5]


def test_word_level_hand_computed():
    # tokens: [CLS] un ##believ ##able [SEP]; word 1 = three pieces
    attn = np.array([
        [0.5, 0.1, 0.1, 0.1, 0.2],
        [0.2, 0.2, 0.2, 0.2, 0.2],
        [0.0, 0.6, 0.0, 0.4, 0.0],
        [0.1, 0.0, 0.3, 0.3, 0.3],
        [0.0, 0.0, 0.0, 0.0, 1.0],
    ])
    tok2word = token_to_word_index([None, 0, 0, 0, None])
    got = word_level(attn, tok2word)
    # FROM the split word: mean of its three rows; TO it: sum over its three columns
    expected = np.array([
        [0.5, 0.3, 0.2],
        [(0.2 + 0.0 + 0.1) / 3, (0.6 + 1.0 + 0.6) / 3, (0.2 + 0.0 + 0.3) / 3],
        [0.0, 0.0, 1.0],
    ])
    np.testing.assert_allclose(got, expected, atol=1e-6)
    np.testing.assert_allclose(got.sum(-1), 1.0, atol=1e-6)


def test_word_level_on_real_maps_rows_sum_to_one(tiny_loaded, tmp_path):
    store = extract_attention(tiny_loaded, _inputs(3), cache_dir=tmp_path, progress=False)
    n = store.lengths[0]
    tok2word = np.minimum(np.arange(n) // 2, (n - 1) // 2)
    R, C = word_conversion_matrices(tok2word)
    assert R.shape == (C.shape[1], n)
    wl = word_level(store[0], tok2word)
    np.testing.assert_allclose(wl.sum(-1), 1.0, atol=3e-3)
