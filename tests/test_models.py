import pytest
import torch
from transformers import AutoModel

from analysis_utils.engine.models import ModelError, check_attentions, load_model


def test_tiny_model_loads_through_folder_path(tiny_loaded):
    ident = tiny_loaded.identity
    assert (ident["num_layers"], ident["num_heads"]) == (2, 2)
    assert ident["init"] == "pretrained"
    assert len(ident["weights_sha256"]) == 64
    assert tiny_loaded.special_ids == {"cls": 2, "sep": 3, "pad": 0}
    assert tiny_loaded.model.config._attn_implementation == "eager"


def test_random_keep_embeddings_keeps_only_word_and_position(tiny_model_dir, tiny_loaded):
    ctrl = load_model(str(tiny_model_dir), init="random_keep_embeddings", device="cpu", seed=3)
    a, b = tiny_loaded.model, ctrl.model
    assert torch.equal(a.embeddings.word_embeddings.weight, b.embeddings.word_embeddings.weight)
    assert torch.equal(a.embeddings.position_embeddings.weight,
                       b.embeddings.position_embeddings.weight)
    qa = a.encoder.layer[0].attention.self.query.weight
    qb = b.encoder.layer[0].attention.self.query.weight
    assert not torch.allclose(qa, qb)
    assert ctrl.identity["init"] == "random_keep_embeddings"
    assert ctrl.identity["seed"] == 3


def test_random_init_is_seeded_and_differs_from_pretrained(tiny_model_dir, tiny_loaded):
    r1 = load_model(str(tiny_model_dir), init="random", device="cpu", seed=1)
    r2 = load_model(str(tiny_model_dir), init="random", device="cpu", seed=1)
    w = lambda m: m.model.embeddings.word_embeddings.weight  # noqa: E731
    assert torch.equal(w(r1), w(r2))
    assert not torch.equal(w(r1), w(tiny_loaded))


def test_model_without_attentions_is_refused(tiny_model_dir, tiny_loaded):
    sdpa = AutoModel.from_pretrained(tiny_model_dir, attn_implementation="sdpa").eval()
    with pytest.raises(ModelError, match="attn_implementation='eager'"):
        check_attentions(sdpa, tiny_loaded.tokenizer, torch.device("cpu"))


def test_bad_name_gives_clear_error(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelError):
        load_model(str(tmp_path), device="cpu")


def test_unknown_init_rejected():
    with pytest.raises(ValueError, match="init must be one of"):
        load_model("minilm", init="shuffled")


@pytest.mark.packaged_model
def test_packaged_minilm_identity():
    lm = load_model("minilm", device="cpu")
    assert (lm.num_layers, lm.num_heads) == (6, 12)
    assert lm.identity["do_lower_case"] is True
    assert lm.tokenizer.convert_ids_to_tokens([lm.special_ids["cls"], lm.special_ids["sep"]]) \
        == ["[CLS]", "[SEP]"]
