"""The attention-intervention engine (record / uniform / zero / gate) and the in-memory weights
fingerprint, on the tiny random BERT of conftest.py (no downloads)."""

from __future__ import annotations

import copy
import json

import pytest
import torch
from transformers import (
    AlbertConfig,
    AlbertModel,
    AttentionInterface,
    BertForSequenceClassification,
    DistilBertConfig,
    DistilBertModel,
)

from analysis_utils.engine import interventions as iv_mod
from analysis_utils.engine.fingerprint import weights_fingerprint
from analysis_utils.engine.interventions import active_intervention, intervene
from analysis_utils.engine.models import load_model

SENTENCES = ["the cat sat on the mat .", "a dog ran"]  # 9 and 5 tokens with [CLS]/[SEP]


@pytest.fixture(scope="module")
def batch(tiny_loaded):
    enc = tiny_loaded.tokenizer(SENTENCES, padding=True, return_tensors="pt")
    lengths = enc["attention_mask"].sum(1).tolist()
    assert lengths[0] != lengths[1] and min(lengths) < enc["input_ids"].shape[1]
    return dict(enc), lengths


def _plain(model, batch):
    with torch.no_grad():
        return model(**batch, output_attentions=True)


@pytest.fixture
def reference(tiny_loaded, batch):
    """``(model, encoded batch, the model's outputs on it with no intervention, attentions
    included)``."""
    enc, _ = batch
    return tiny_loaded.model, enc, _plain(tiny_loaded.model, enc)


def test_uniform_rows_are_exactly_one_over_real_tokens(tiny_loaded, batch):
    enc, lengths = batch
    n = enc["input_ids"].shape[1]
    with torch.no_grad(), intervene(tiny_loaded, uniform=[(0, 1), (1, 0)], record=True) as iv:
        out = tiny_loaded.model(**enc, output_attentions=True)
    for layer, head in [(0, 1), (1, 0)]:
        for b, length in enumerate(lengths):
            expected = torch.zeros(n, n)
            expected[:, :length] = 1.0 / length
            assert torch.equal(iv.attentions[layer][b, head], expected)
            assert torch.equal(out.attentions[layer][b, head], expected)
    # a batch without padding gets no mask at all (attention_mask=None in the function)
    single = tiny_loaded.tokenizer(SENTENCES[1:], return_tensors="pt")
    with torch.no_grad(), intervene(tiny_loaded, uniform=[(0, 1)], record=True) as iv:
        tiny_loaded.model(**single)
    assert torch.equal(iv.attentions[0][0, 1], torch.full((lengths[1], lengths[1]),
                                                          1.0 / lengths[1]))


def test_other_heads_and_unchanged_outputs_are_bit_identical(tiny_loaded, reference):
    model, enc, ref = reference
    with torch.no_grad():
        with intervene(tiny_loaded, uniform=[(0, 1)], record=True) as iv:
            model(**enc)
        assert torch.equal(iv.attentions[0][:, 0], ref.attentions[0][:, 0])  # same layer
        assert not torch.equal(iv.attentions[0][:, 1], ref.attentions[0][:, 1])
        for kwargs in ({}, {"record": True}, {"gate": torch.ones(2, 2)}):
            with intervene(tiny_loaded, **kwargs):
                out = model(**enc)
            assert torch.equal(out.last_hidden_state, ref.last_hidden_state), kwargs

    # the same batch does see a function registered without the eager mask: padding unmasked
    AttentionInterface.register("test_iv_unmasked", iv_mod.intervention_attention_forward)
    try:
        model.set_attn_implementation("test_iv_unmasked")
        with torch.no_grad():
            unmasked = model(**enc).last_hidden_state
    finally:
        model.set_attn_implementation("eager")
    assert not torch.allclose(unmasked, ref.last_hidden_state, atol=1e-5)


def test_zero_mode_zeroes_the_head_and_changes_the_output(tiny_loaded, reference):
    model, enc, ref = reference
    with torch.no_grad():
        with intervene(tiny_loaded, zero=[(1, 1)], record=True) as iv:
            out = model(**enc)
        gate = torch.ones(2, 2)
        gate[1, 1] = 0.0
        with intervene(tiny_loaded, gate=gate):
            gated = model(**enc)
    assert float(iv.attentions[1][:, 1].abs().max()) == 0.0
    assert torch.equal(iv.attentions[1][:, 0], ref.attentions[1][:, 0])
    assert not torch.allclose(out.last_hidden_state, ref.last_hidden_state, atol=1e-4)
    torch.testing.assert_close(gated.last_hidden_state, out.last_hidden_state)


def _loss(model, enc, weights):
    hidden = model(**enc).last_hidden_state
    mask = enc["attention_mask"][..., None].to(hidden.dtype)
    return (hidden * weights * mask).sum()


def test_gate_gradient_matches_central_finite_difference(tiny_loaded, batch):
    enc, _ = batch
    model = copy.deepcopy(tiny_loaded.model).double()
    torch.manual_seed(1)
    weights = torch.randn(16, dtype=torch.float64)
    gate = torch.ones(2, 2, dtype=torch.float64, requires_grad=True)
    with intervene(model, gate=gate):
        _loss(model, enc, weights).backward()
    eps = 1e-6
    for layer, head in [(0, 1), (1, 0)]:
        values = []
        for sign in (1, -1):
            g = torch.ones(2, 2, dtype=torch.float64)
            g[layer, head] += sign * eps
            with torch.no_grad(), intervene(model, gate=g):
                values.append(float(_loss(model, enc, weights)))
        numeric = (values[0] - values[1]) / (2 * eps)
        assert abs(float(gate.grad[layer, head])) > 1e-3
        assert float(gate.grad[layer, head]) == pytest.approx(numeric, rel=1e-6, abs=1e-9)


def test_leaving_restores_the_model_also_on_error(tiny_loaded, reference):
    model, enc, ref = reference
    assert model.config._attn_implementation == "eager"
    with pytest.raises(KeyError, match="boom"):
        with intervene(tiny_loaded, uniform=[(0, 0)], zero=[(1, 1)], record=True):
            assert model.config._attn_implementation == iv_mod.INTERVENTION_IMPL
            raise KeyError("boom")
    assert model.config._attn_implementation == "eager"
    assert active_intervention(tiny_loaded) is None and not iv_mod._ACTIVE
    after = _plain(model, enc)
    assert torch.equal(after.last_hidden_state, ref.last_hidden_state)
    for a, r in zip(after.attentions, ref.attentions, strict=True):
        assert torch.equal(a, r)


def test_nesting_is_refused_and_leaves_the_outer_context_working(tiny_loaded, batch):
    enc, _ = batch
    with torch.no_grad(), intervene(tiny_loaded, uniform=[(0, 0)], record=True) as outer:
        with pytest.raises(RuntimeError, match="nesting is not supported"):
            with intervene(tiny_loaded.model, zero=[(1, 1)]):
                pass
        assert tiny_loaded.model.config._attn_implementation == iv_mod.INTERVENTION_IMPL
        tiny_loaded.model(**enc)
        assert active_intervention(tiny_loaded)["mode"] == "uniform"
        assert float(outer.attentions[0][1, 0, 0, 0]) == pytest.approx(1 / 5)
    assert tiny_loaded.model.config._attn_implementation == "eager"


def test_works_on_a_task_head_model(tiny_model_dir, batch):
    enc, lengths = batch
    clf = BertForSequenceClassification.from_pretrained(
        tiny_model_dir, num_labels=3, attn_implementation="eager").eval()
    with torch.no_grad():
        ref = clf(**enc, output_hidden_states=True)
        with intervene(clf, record=True) as iv:
            same = clf(**enc, output_hidden_states=True)
        with intervene(clf, uniform=[(1, 1)], record=True) as iv:
            changed = clf(**enc, output_hidden_states=True)
    assert torch.equal(same.logits, ref.logits)
    assert torch.equal(same.hidden_states[-1], ref.hidden_states[-1])
    # random init: attention moves the encoder output by ~2e-5 and the logits by ~1e-7
    assert float((changed.hidden_states[-1] - ref.hidden_states[-1]).abs().max()) > 1e-6
    assert not torch.equal(changed.logits, ref.logits)
    assert torch.equal(iv.attentions[1][1, 1, :, : lengths[1]],
                       torch.full((enc["input_ids"].shape[1], lengths[1]), 1.0 / lengths[1]))
    gate = torch.ones(2, 2, requires_grad=True)
    with intervene(clf, gate=gate):
        clf(**enc).logits.log_softmax(-1)[:, 0].sum().backward()
    assert gate.grad.shape == (2, 2) and bool((gate.grad != 0).all())
    assert clf.config._attn_implementation == "eager"
    with torch.no_grad():
        assert torch.equal(clf(**enc).logits, ref.logits)


def test_record_equals_output_attentions_per_layer_and_pass(tiny_loaded, batch):
    enc, _ = batch
    b, n = enc["input_ids"].shape
    ref = _plain(tiny_loaded.model, enc)
    with torch.no_grad(), intervene(tiny_loaded, record=True) as iv:
        tiny_loaded.model(**enc)
        first = iv.attentions
        tiny_loaded.model(**enc)
    assert iv.passes == 2 and first is not iv.attentions
    assert len(iv.attentions) == 2
    for got, want in zip(iv.attentions, ref.attentions, strict=True):
        assert got.shape == (b, 2, n, n)
        assert torch.equal(got, want)
    with torch.no_grad(), intervene(tiny_loaded, record=[1]) as iv:
        tiny_loaded.model(**enc)
    assert len(iv.attentions) == 1 and torch.equal(iv.attentions[0], ref.attentions[1])


def test_make_leaf_gives_the_gradients_of_an_unfrozen_model(tiny_loaded, batch):
    """On a frozen model make_leaf turns the recorded probabilities into leaves; d loss / d
    probs must equal what retain_grad gives when the parameters require grad."""
    enc, _ = batch
    weights = torch.randn(16, generator=torch.Generator().manual_seed(2))
    frozen = copy.deepcopy(tiny_loaded.model).requires_grad_(False)
    with intervene(frozen, record=True, retain_grad=True, make_leaf=True) as leafy:
        _loss(frozen, enc, weights).backward()
    trainable = copy.deepcopy(tiny_loaded.model).requires_grad_(True)
    with intervene(trainable, record=True, retain_grad=True) as kept:
        _loss(trainable, enc, weights).backward()
    assert leafy.attentions[0].is_leaf and not kept.attentions[0].is_leaf
    assert len(leafy.attentions) == len(kept.attentions) == 2
    for got, want in zip(leafy.attentions, kept.attentions, strict=True):
        assert got.grad is not None and torch.equal(got.grad, want.grad)


def test_active_intervention_describes_mode_heads_and_gate(tiny_loaded):
    assert active_intervention(tiny_loaded) is None
    seen = []
    for kwargs in ({"uniform": [(1, 0), (0, 1)]}, {"uniform": [(0, 1)]}, {"zero": [(0, 1)]},
                   {"gate": torch.ones(2, 2)}, {"gate": torch.full((2, 2), 0.5)}):
        with intervene(tiny_loaded, **kwargs) as iv:
            desc = active_intervention(tiny_loaded)
            assert desc == iv.describe() == active_intervention(tiny_loaded.model)
        json.dumps(desc)
        seen.append(json.dumps(desc, sort_keys=True))
    assert len(set(seen)) == len(seen)
    assert json.loads(seen[0])["uniform"] == [[0, 1], [1, 0]]  # sorted
    with intervene(tiny_loaded, record=True):
        assert active_intervention(tiny_loaded) is None  # recording changes no map
    assert active_intervention(tiny_loaded) is None


def test_weights_fingerprint_tracks_in_memory_weights(tiny_model_dir):
    a = load_model(str(tiny_model_dir), device="cpu")
    b = load_model(str(tiny_model_dir), device="cpu")
    assert a.model is not b.model
    fp = weights_fingerprint(a)
    assert len(fp) == 64 and fp == weights_fingerprint(b.model)
    weight = b.model.encoder.layer[1].attention.self.query.weight
    old = weight[3, 4].item()
    with torch.no_grad():
        weight[3, 4] += 1e-3
    assert weights_fingerprint(b) != fp
    with torch.no_grad():
        weight[3, 4] = old
    assert weights_fingerprint(b) == fp
    assert weights_fingerprint(copy.deepcopy(a.model).double()) != fp


def test_other_bert_family_layouts(batch):
    """DistilBERT has no layer_idx (layers mapped by position); ALBERT shares one attention
    module across layers (layers numbered by the order of calls in a pass)."""
    enc, lengths = batch
    enc = {k: v for k, v in enc.items() if k != "token_type_ids"}
    torch.manual_seed(0)
    distil = DistilBertModel(DistilBertConfig(vocab_size=30, dim=16, n_layers=2, n_heads=2,
                                              hidden_dim=32, attn_implementation="eager")).eval()
    with torch.no_grad():
        ref = distil(**enc, output_attentions=True)
        with intervene(distil, uniform=[(1, 0)], record=True) as iv:
            distil(**enc)
    assert torch.equal(iv.attentions[0], ref.attentions[0])
    assert torch.equal(iv.attentions[1][:, 1], ref.attentions[1][:, 1])
    n = enc["input_ids"].shape[1]
    assert torch.equal(iv.attentions[1][1, 0, :, : lengths[1]],
                       torch.full((n, lengths[1]), 1.0 / lengths[1]))
    # ALBERT: one attention module shared by both layers, numbered by call order
    albert = AlbertModel(AlbertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2,
                                      num_attention_heads=2, intermediate_size=32,
                                      embedding_size=8, attn_implementation="eager")).eval()
    with torch.no_grad():
        ref = albert(**enc, output_attentions=True)
        for _ in range(2):  # numbering restarts with every pass
            with intervene(albert, record=True) as iv:
                albert(**enc)
            assert len(iv.attentions) == 2
            assert all(torch.equal(a, r) for a, r in zip(iv.attentions, ref.attentions,
                                                         strict=True))
        with intervene(albert, uniform=[(1, 0)], record=True) as iv:
            out = albert(**enc)
    assert torch.equal(iv.attentions[0], ref.attentions[0])  # layer 0 untouched
    assert torch.equal(iv.attentions[1][1, 0, :, : lengths[1]],
                       torch.full((n, lengths[1]), 1.0 / lengths[1]))
    assert not torch.equal(out.last_hidden_state, ref.last_hidden_state)
    with pytest.raises(ValueError, match="outside this model"):
        with intervene(distil, zero=[(2, 0)]):
            pass
