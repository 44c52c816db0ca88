import shutil
import socket
import threading
import time

import pytest
import torch
from transformers import AutoModel

from analysis_utils.engine import models
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


# --- loading errors: folders without a model, hub ids without a hub -------------------------

def _copy_model_folder(src, dst, skip=()):
    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.name not in skip:
            shutil.copy(f, dst / f.name)
    return dst


def test_folder_with_only_a_config_says_what_is_missing(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ModelError) as ei:
        load_model(str(tmp_path), device="cpu")
    msg = str(ei.value)
    assert "is not a model folder" in msg and str(tmp_path) in msg
    assert "tokenizer files (one of tokenizer.json, vocab.txt" in msg and "weights" in msg
    assert "config.json;" not in msg.split("lacks")[1].split("It holds")[0]
    assert "sentencepiece or tiktoken" not in msg and "backend tokenizer" not in msg


def test_folder_without_config_or_with_tokenizer_config_only(tiny_model_dir, tmp_path):
    no_config = _copy_model_folder(tiny_model_dir, tmp_path / "a", skip=("config.json",))
    with pytest.raises(ModelError, match=r"lacks config\.json\. It holds"):
        load_model(str(no_config), device="cpu")
    tok_config_only = _copy_model_folder(tiny_model_dir, tmp_path / "b", skip=("vocab.txt",))
    with pytest.raises(ModelError, match="lacks tokenizer files .*tokenizer_config.json alone"):
        load_model(str(tok_config_only), device="cpu")
    empty = tmp_path / "c"
    empty.mkdir()
    with pytest.raises(ModelError, match="lacks config.json; tokenizer files .*; weights"):
        load_model(str(empty), device="cpu")


def test_missing_folder_is_not_sent_to_the_hub(tmp_path):
    with pytest.raises(ModelError, match="neither an existing folder .* nor a valid"):
        load_model(str(tmp_path / "no" / "such" / "model"), device="cpu")


def _blocked_network(monkeypatch):
    """Fail the test on any connection attempt other than the hub probe's."""
    def refuse(*a, **k):
        raise AssertionError("a network connection was attempted")
    monkeypatch.setattr(socket, "create_connection", refuse)


FAKE_HUB_ID = "no-such-org-4f1c/no-such-model-9b27"


def test_hub_id_offline_fails_fast_with_the_fix(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    _blocked_network(monkeypatch)
    t0 = time.perf_counter()
    with pytest.raises(ModelError) as ei:
        load_model(FAKE_HUB_ID, device="cpu")
    assert time.perf_counter() - t0 < 2.0
    msg = str(ei.value)
    assert "neither a local folder nor in the local Hugging Face hub cache" in msg
    assert "hub is unreachable (HF_HUB_OFFLINE is set" in msg
    assert "local folder" in msg and f"hf download {FAKE_HUB_ID}" in msg and "'minilm'" in msg


def _online_mode(monkeypatch, endpoint):
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    for var in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(var, raising=False)


def test_hub_id_with_unreachable_hub_fails_fast(monkeypatch):
    # Nothing listens on the local discard port: the probe is refused at once, no real network.
    _online_mode(monkeypatch, "http://127.0.0.1:9")
    t0 = time.perf_counter()
    with pytest.raises(ModelError, match=r"hub is unreachable \(http://127.0.0.1:9: "):
        load_model(FAKE_HUB_ID, device="cpu")
    assert time.perf_counter() - t0 < 3.0


def test_hub_probe_is_bounded_when_the_network_hangs(monkeypatch):
    # A black hole: the connection attempt never returns. The probe gives up on its own clock.
    _online_mode(monkeypatch, "https://hub.invalid")
    release = threading.Event()

    def hang(*args, **kwargs):
        release.wait(60)
        raise OSError("released by the test")

    monkeypatch.setattr(socket, "create_connection", hang)
    monkeypatch.setattr(models, "HUB_PROBE_TIMEOUT_S", 0.5)
    t0 = time.perf_counter()
    try:
        with pytest.raises(ModelError, match=r"unreachable \(https://hub.invalid: no answer"):
            load_model(FAKE_HUB_ID, device="cpu")
        assert time.perf_counter() - t0 < 2.0
    finally:
        release.set()


def test_hub_id_in_the_local_hub_cache_loads_without_the_hub(tiny_model_dir, tmp_path,
                                                             monkeypatch):
    from huggingface_hub import constants

    repo = tmp_path / "models--fakeorg--tiny-bert"
    _copy_model_folder(tiny_model_dir, repo / "snapshots" / ("a" * 40))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    _online_mode(monkeypatch, "http://127.0.0.1:9")  # hub unreachable: local files only
    lm = load_model("fakeorg/tiny-bert", device="cpu")
    assert (lm.num_layers, lm.num_heads) == (2, 2)
    assert lm.identity["weights_sha256"] == load_model(str(tiny_model_dir),
                                                       device="cpu").identity["weights_sha256"]


def test_loading_is_quiet_outside_a_terminal_and_settings_come_back(tiny_model_dir, capfd,
                                                                    monkeypatch):
    from transformers.utils import logging as hf_logging

    from analysis_utils.engine import attention

    capfd.readouterr()
    load_model(str(tiny_model_dir), device="cpu")
    load_model(str(tiny_model_dir), init="random", device="cpu")
    err = capfd.readouterr().err
    assert "Loading weights" not in err and "it/s" not in err, err  # no bars in a log
    assert hf_logging.is_progress_bar_enabled()  # restored for the caller
    verbosity = hf_logging.get_verbosity()
    with models.quiet_loading(quiet=True):
        assert not hf_logging.is_progress_bar_enabled()
        assert hf_logging.get_verbosity() == hf_logging.ERROR
    assert hf_logging.is_progress_bar_enabled() and hf_logging.get_verbosity() == verbosity
    monkeypatch.setattr(attention, "show_progress", lambda: True)  # a terminal: untouched
    with models.quiet_loading():
        assert hf_logging.is_progress_bar_enabled()


def test_the_widget_warning_of_tqdm_auto_is_filtered():
    # A kernel without ipywidgets warns "IProgress not found" when transformers imports
    # tqdm.auto; once the loader is imported that warning is ignored, even where every other
    # warning is an error. (A subprocess: pytest resets warning filters around each test.)
    import subprocess
    import sys

    code = ("import warnings, analysis_utils.engine.models\n"
            "from tqdm import TqdmWarning\n"
            "warnings.warn('IProgress not found. Please update jupyter and ipywidgets.', "
            "TqdmWarning)\n"
            "warnings.warn('another tqdm warning', TqdmWarning)\n")
    done = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True,
                          text=True)
    assert "IProgress" not in done.stderr and "another tqdm warning" in done.stderr
