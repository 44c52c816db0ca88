"""Attention capture through AttentionInterface, padding, gradients and the fitted MLM head,
on a tiny randomly initialised BERT (no downloads)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import AttentionInterface, AutoTokenizer, BertConfig, BertForMaskedLM, BertModel

from analysis_utils.analyses import gradients
from analysis_utils.engine.interventions import intervene, intervention_attention_forward

WORDS = ["the", "a", "cat", "dog", "sat", "ran", "on", "mat", "rug", "big", "small", "he",
         "she", "saw", "and", "it", "red", "blue", "bird", "tree"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ","] + WORDS


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny_grad_bert")
    (folder / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (folder / "tokenizer_config.json").write_text(
        '{"do_lower_case": true, "tokenizer_class": "BertTokenizer", "model_max_length": 64}')
    tok = AutoTokenizer.from_pretrained(str(folder))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=64,
                     attn_implementation="eager")
    model = BertModel(cfg).eval()
    return model, tok, folder


def _enc(tok, a, b):
    return tok(a, b)["input_ids"]


def test_captured_probs_equal_eager_output_attentions(tiny):
    model, tok, _ = tiny
    enc = tok(["the cat sat on the mat .", "a dog ran"], padding=True, return_tensors="pt")
    with torch.no_grad():
        ref = model(**enc, output_attentions=True)
        assert model.config._attn_implementation == "eager"
        with intervene(model, record=True) as iv:
            out = model(**enc)
        probs = iv.attentions
        assert model.config._attn_implementation == "eager"  # restored
    assert len(probs) == 2 and len(ref.attentions) == 2
    for p, r in zip(probs, ref.attentions, strict=True):
        torch.testing.assert_close(p, r)
    torch.testing.assert_close(out.last_hidden_state, ref.last_hidden_state)


def test_padding_is_masked_under_custom_interface(tiny):
    model, tok, _ = tiny
    ids = _enc(tok, "the cat sat", "a dog ran on the mat")
    n = len(ids)
    single = torch.tensor([ids])
    padded = torch.tensor([ids + [0] * 5])
    mask = torch.tensor([[1] * n + [0] * 5])
    with torch.no_grad(), intervene(model, record=True) as iv:
        h1 = model(input_ids=single).last_hidden_state
        h2 = model(input_ids=padded, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(h1[0], h2[0, :n], atol=1e-5, rtol=1e-5)
    for p in iv.attentions:
        assert float(p[0, :, :, n:].abs().max()) == 0.0  # no weight on padding columns
        torch.testing.assert_close(p[0, :, :n, :n].sum(-1), torch.ones(2, n))

    # the guard the module exists for: an attention function registered WITHOUT its mask
    # function silently stops masking padding
    AttentionInterface.register("test_unmasked", intervention_attention_forward)
    try:
        model.set_attn_implementation("test_unmasked")
        with torch.no_grad():
            h3 = model(input_ids=padded, attention_mask=mask).last_hidden_state
    finally:
        model.set_attn_implementation("eager")
    assert not torch.allclose(h1[0], h3[0, :n], atol=1e-5)


def test_mask_tokens_never_masks_specials():
    rng = np.random.default_rng(0)
    ids = [2, 7, 8, 9, 3, 10, 11, 3]
    out, pos, lab = gradients.mask_tokens(ids, rng, mask_id=4, vocab_size=30,
                                          never_mask={0, 2, 3}, mask_prob=0.5)
    assert len(pos) >= 1
    assert not set(pos.tolist()) & {0, 4, 7}
    np.testing.assert_array_equal(lab, np.asarray(ids)[pos])
    assert (out[[0, 4, 7]] == [2, 3, 3]).all()


def _three_pairs(tok):
    """Three sentence pairs of different lengths (a padded batch)."""
    return [_enc(tok, "the cat sat .", "a dog ran , the mat"),
            _enc(tok, "she saw it", "he ran"),
            _enc(tok, "the big red bird sat on the tree .", "it ran")]


def test_gradients_finite_zero_for_padding_and_batch_invariant(tiny):
    model, tok, _ = tiny
    head = gradients.build_mlm_head(model, seed=1)
    encs = _three_pairs(tok)
    # raw gradients on a padded batch: finite, zero on padding rows
    ids, am, _ = gradients._pad_batch([(e, None) for e in encs], 0)
    with torch.enable_grad(), intervene(model, record=True, make_leaf=True) as iv:
        hidden = model(input_ids=ids, attention_mask=am).last_hidden_state
        probs = iv.attentions
        loss = torch.nn.functional.cross_entropy(head(hidden[:, 1:3]).reshape(-1, len(VOCAB)),
                                                 ids[:, 1:3].reshape(-1))
        grads = torch.autograd.grad(loss, probs)
    assert all(p.grad is None for p in model.parameters())
    for g in grads:
        assert torch.isfinite(g).all()
        for b, e in enumerate(encs):
            assert float(g[b, :, len(e):, :].abs().sum()) == 0.0
        assert float(g.abs().sum()) > 0

    df1 = gradients.attention_gradient_importance(model, head, tok, encs, batch_size=1, seed=3)
    df3 = gradients.attention_gradient_importance(model, head, tok, encs, batch_size=3, seed=3)
    assert list(df1.columns[:3]) == ["layer", "target", "mean_abs_grad"]
    assert set(df1["target"]) == {"[SEP]", "./,", "other"}
    assert df1["layer"].tolist() == [1, 1, 1, 2, 2, 2]
    assert np.isfinite(df1["mean_abs_grad"]).all() and (df1["mean_abs_grad"] > 0).all()
    np.testing.assert_allclose(df1["mean_abs_grad"], df3["mean_abs_grad"], rtol=1e-4)
    np.testing.assert_array_equal(df1["n_weights"], df3["n_weights"])
    # entries: heads x real rows x real columns of the class
    n_sep = sum(len(e) * 2 for e in encs) * 2  # 2 [SEP] per segment, 2 heads
    assert int(df1.loc[(df1.layer == 1) & (df1.target == "[SEP]"), "n_weights"].iloc[0]) == n_sep
    assert df1.attrs["masked_tokens"] >= 3
    dfc = gradients.attention_gradient_importance(model, head, tok, encs, seed=3,
                                                  separate_cls=True)
    assert set(dfc["target"]) == {"[SEP]", "./,", "other", "[CLS]"}
    both = dfc[dfc.target.isin(["other", "[CLS]"])].groupby("layer")["n_weights"].sum()
    np.testing.assert_array_equal(both.to_numpy(),
                                  df1[df1.target == "other"]["n_weights"].to_numpy())


def test_fit_mlm_head_beats_chance(tiny):
    model, tok, _ = tiny
    rng = np.random.default_rng(0)
    # planted corpus: the word at each position is fixed by a small set of templates
    templates = ["the cat sat on the mat .", "a dog ran on a rug .", "she saw the big red bird .",
                 "he saw a small blue tree ."]
    texts = [templates[i] for i in rng.integers(0, len(templates), 500)]
    head, rep = gradients.fit_mlm_head(model, tok, texts, steps=400, batch_size=128, lr=3e-2,
                                       seed=0, copies=2)
    assert rep["heldout_masked_tokens"] > 20
    assert rep["final_train_loss"] < rep["initial_train_loss"]
    assert rep["heldout_accuracy"] > max(rep["majority_token_accuracy"], 1 / len(VOCAB)) + 0.1
    # the decoder is the frozen word-embedding matrix
    assert not head.predictions.decoder.weight.requires_grad
    assert head.predictions.decoder.weight.data_ptr() == \
        model.get_input_embeddings().weight.data_ptr()


def test_heldout_accuracy_by_hand_and_the_same_in_any_batch(tiny):
    """The accuracy is counted position by position: a planted head whose prediction is
    known, in batches smaller than, dividing and exceeding the positions."""
    model, _, _ = tiny
    head = gradients.build_mlm_head(model, seed=0)
    states = torch.randn(10, model.config.hidden_size, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        predicted = head(states).argmax(-1)
    labels = predicted.clone()
    labels[[1, 4, 7]] = (predicted[[1, 4, 7]] + 1) % model.config.vocab_size  # 3 wrong of 10
    for batch in (1, 3, 5, 512):
        assert gradients._accuracy(head, states, labels, "cpu", batch=batch) == 0.7


def test_load_mlm_head_detects_checkpoint_head(tiny, tmp_path):
    model, _, folder = tiny
    enc_dir = tmp_path / "enc"
    model.save_pretrained(enc_dir)
    assert gradients.has_mlm_head(enc_dir) is False
    assert gradients.load_mlm_head(enc_dir) is None
    torch.manual_seed(0)
    mlm = BertForMaskedLM(model.config)
    mlm_dir = tmp_path / "mlm"
    mlm.save_pretrained(mlm_dir)
    assert gradients.has_mlm_head(mlm_dir) is True
    head = gradients.load_mlm_head(mlm_dir)
    assert head is not None
    h = torch.randn(3, model.config.hidden_size)
    with torch.no_grad():
        torch.testing.assert_close(head(h), mlm.cls(h))


def test_fitted_head_is_cached_and_reloaded_identically(tiny_loaded, tmp_path):
    lm = tiny_loaded
    texts = ["the cat sat on the mat .", "a dog ran on the mat ."] * 10
    h1, r1 = gradients.mlm_head_for(lm, texts, steps=3, batch_size=8, seed=0,
                                    cache_dir=tmp_path / "c", heldout_fraction=0.2)
    h2, r2 = gradients.mlm_head_for(lm, texts, steps=3, batch_size=8, seed=0,
                                    cache_dir=tmp_path / "c", heldout_fraction=0.2)
    assert r1 == json.loads(json.dumps(r2))
    x = torch.randn(2, 3, lm.model.config.hidden_size)
    torch.testing.assert_close(h1(x), h2(x))
    h3, _ = gradients.mlm_head_for(lm, texts[:-1], steps=3, batch_size=8, seed=0,
                                   cache_dir=tmp_path / "c", heldout_fraction=0.2)
    assert len(list((tmp_path / "c" / "mlm_heads").iterdir())) == 2
    note = gradients.head_quality_note({"head": "x", "heldout_accuracy": 0.08,
                                        "majority_token_accuracy": 0.07})
    assert "uninformative" in note


def test_head_quality_verdict_in_words_and_in_one_line():
    weak = {"head": "fitted on the frozen encoder", "heldout_accuracy": 0.079,
            "majority_token_accuracy": 0.073}
    good = {**weak, "heldout_accuracy": 0.40}
    own = {"head": "the checkpoint's own masked-LM head"}
    assert not gradients.head_is_informative(weak)
    assert gradients.head_is_informative(good) and gradients.head_is_informative(own)
    caption = gradients.head_quality_caption(weak)
    assert "7.9% held-out masked-token accuracy vs. 7.3%" in caption
    assert "uninformative" in caption
    assert "uninformative" not in gradients.head_quality_caption(good)
    assert gradients.head_quality_caption(own) == f"masked-LM head: {own['head']}"
    assert "uninformative" in gradients.head_quality_note(weak)


def test_per_segment_sums_pool_to_the_table_and_give_its_ratio(tiny):
    model, tok, _ = tiny
    head = gradients.build_mlm_head(model, seed=1)
    encs = _three_pairs(tok)
    pooled = gradients.attention_gradient_importance(model, head, tok, encs, seed=3,
                                                     separate_cls=True)
    again, per = gradients.attention_gradient_importance(model, head, tok, encs, seed=3,
                                                         separate_cls=True, by_example=True,
                                                         batch_size=2)
    np.testing.assert_allclose(again["mean_abs_grad"], pooled["mean_abs_grad"], rtol=1e-6)
    assert len(per) == 3 * 2 * 4 and set(per["example"]) == {0, 1, 2}
    sums = per.groupby(["layer", "target"], sort=False)[["sum_abs_grad", "n_weights"]].sum()
    merged = pooled.set_index(["layer", "target"]).join(sums.add_suffix("_segments"))
    np.testing.assert_array_equal(merged["n_weights"], merged["n_weights_segments"])
    np.testing.assert_allclose(merged["sum_abs_grad_segments"] / merged["n_weights"],
                               merged["mean_abs_grad"], rtol=1e-5)
    # the segment-level ratio, unweighted, is the notebook's pooled ratio of the table
    cube = {c: per.pivot_table(index="example", columns=["layer", "target"], values=c)
            .sort_index(axis=1).to_numpy(dtype=float).reshape(3, 2, 4)
            for c in ("sum_abs_grad", "n_weights")}
    targets = sorted(gradients.TARGETS + ("[CLS]",))
    g = pooled.pivot(index="layer", columns="target", values="mean_abs_grad")
    want = float((g["[SEP]"] / g["other"]).mean())
    got = gradients.pooled_ratio(cube["sum_abs_grad"], cube["n_weights"],
                                 targets.index("[SEP]"), targets.index("other"))
    assert got == pytest.approx(want, rel=1e-5)
    # a bootstrap weight of 0 drops a segment from both numerator and denominator
    w = np.array([1, 0, 2])
    s, c = cube["sum_abs_grad"], cube["n_weights"]
    i, o = targets.index("[SEP]"), targets.index("other")
    by_hand = np.mean([(s[0, L, i] + 2 * s[2, L, i]) / (c[0, L, i] + 2 * c[2, L, i])
                       / ((s[0, L, o] + 2 * s[2, L, o]) / (c[0, L, o] + 2 * c[2, L, o]))
                       for L in range(2)])
    assert gradients.pooled_ratio(s, c, i, o, w) == pytest.approx(by_hand)


def test_head_source_names_where_the_head_came_from():
    assert gradients.head_source({"head": "the checkpoint's own masked-LM head"}) == \
        gradients.OWN_HEAD
    assert gradients.head_source({"head": "fitted on the frozen encoder",
                                  "heldout_accuracy": 0.3}) == gradients.FITTED_HEAD


def test_mlm_head_builds_for_every_family_from_the_model_not_family_fields(tiny):
    """The fitted head reads no family-only config field (issue 44: DistilBERT has no
    ``hidden_act``). For BERT it is the head BERT's own config would build, weight for weight;
    for DistilBERT and ALBERT (factorised embeddings, narrower than the hidden states) it
    maps the last hidden states to vocabulary logits."""
    from transformers import AlbertConfig, AlbertModel, DistilBertConfig, DistilBertModel
    from transformers.models.bert.modeling_bert import BertOnlyMLMHead

    model, _, _ = tiny
    head = gradients.build_mlm_head(model, seed=3)
    torch.manual_seed(3)
    ref = BertOnlyMLMHead(model.config)
    torch.nn.init.normal_(ref.predictions.transform.dense.weight, std=0.02)
    ref_dense = ref.predictions.transform.dense.weight
    assert torch.equal(head.predictions.transform.dense.weight, ref_dense)
    torch.manual_seed(0)
    distil = DistilBertModel(DistilBertConfig(vocab_size=50, dim=16, n_layers=2, n_heads=2,
                                              hidden_dim=32, max_position_embeddings=64))
    albert = AlbertModel(AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=16,
                                      num_hidden_layers=2, num_attention_heads=2,
                                      intermediate_size=32, max_position_embeddings=64))
    for enc in (distil, albert):
        h = gradients.build_mlm_head(enc, seed=0)
        assert h(torch.zeros(1, 3, 16)).shape == (1, 3, 50)
        assert h.predictions.decoder.weight.data_ptr() == \
            enc.get_input_embeddings().weight.data_ptr()


def test_gradients_leave_out_segment_ids_a_model_has_no_table_for(tiny):
    """RoBERTa has one token type: a second segment's id 1 (what notebook 01's segments carry
    when the tokenizer gives none) indexed past its table and crashed 01 (issue 44). The
    gradients' batches pass segment ids only where the engine's would (uses_token_types)."""
    from transformers import RobertaConfig, RobertaModel

    _, tok, _ = tiny
    torch.manual_seed(0)
    roberta = RobertaModel(RobertaConfig(
        vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=70, type_vocab_size=1, pad_token_id=0,
        attn_implementation="eager")).eval()
    encs = [{"input_ids": e, "token_type_ids": [0] * 3 + [1] * (len(e) - 3)}
            for e in _three_pairs(tok)]
    head = gradients.build_mlm_head(roberta, seed=1)
    df = gradients.attention_gradient_importance(roberta, head, tok, encs, seed=3)
    assert np.isfinite(df["mean_abs_grad"]).all()
