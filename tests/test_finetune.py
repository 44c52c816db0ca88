"""Fine-tuning engine on the tiny random BERT of conftest.py with hand-made examples: an end
to end run, cache keys, a rerun that trains nothing, resuming after an interruption, entries
that must not read as complete, progress output, and the two no-fine-tuning baselines."""

from __future__ import annotations

import json
import random
import shutil

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from transformers import Trainer, TrainerCallback

from analysis_utils.data import glue_metrics
from analysis_utils.data.glue import GlueExample
from analysis_utils.data.manifest import DataMissingError
from analysis_utils.engine.fingerprint import weights_fingerprint
from analysis_utils.engine.interventions import intervene
from analysis_utils.engine.models import load_model
from analysis_utils.training import baselines, finetune_cache
from analysis_utils.training.baselines import frozen_features_baseline, untrained_head_baseline
from analysis_utils.training.classifier import build_classifier, evaluate
from analysis_utils.training.finetune import finetune, finetune_key
from analysis_utils.training.glue_data import finetune_tasks, read_task, subsample
from analysis_utils.training.trainer import FinetuneSettings, progress_enabled

WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "big", "he", "she", "it", "saw",
         "and", "."]
# max_length within the tiny model's 64 positions; 2 epochs of 5 steps of 8 examples
TINY = FinetuneSettings(epochs=2, batch_size=8, max_length=32, logging_steps=1,
                        eval_batch_size=8)


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12)))


def make_examples(task: str, n: int, seed: int) -> list[GlueExample]:
    """Pairs (single sentences for SST-2) whose label depends on the words, so there is
    something to learn; STS-B gets a 0-5 score."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a = _sentence(rng)
        b = None if task == "SST-2" else _sentence(rng)
        if task == "STS-B":
            label = float(len(set(a.split()) & set(b.split()))) % 5.0
        elif task == "RTE":
            label = "entailment" if "cat" in a else "not_entailment"
        else:
            label = int("cat" in a)
        out.append(GlueExample(a, b, label))
    return out


@pytest.fixture(scope="module")
def data():
    return {task: (make_examples(task, 40, 1), make_examples(task, 12, 2))
            for task in ("MRPC", "STS-B", "SST-2", "RTE")}


def run(model_dir, task, data, cache, **kw):
    train, dev = data[task]
    kw.setdefault("settings", TINY)
    kw.setdefault("seed", 0)
    return finetune(str(model_dir), task, train_examples=train, dev_examples=dev,
                    cache_dir=cache, device="cpu", **kw)


@pytest.fixture(scope="module")
def mrpc_run(tiny_model_dir, data, tmp_path_factory):
    cache = tmp_path_factory.mktemp("ft_cache")
    return run(tiny_model_dir, "MRPC", data, cache), cache


# ------------------------------------------------------------------------------ end to end


def test_tiny_end_to_end_fine_tune(mrpc_run, data, tiny_model_dir):
    ft, cache = mrpc_run
    dev = data["MRPC"][1]
    assert not ft.from_cache and ft.task == "MRPC" and ft.seed == 0
    assert list(ft.metrics) == ["f1", "accuracy"]
    assert ft.predictions.shape == (len(dev),) and ft.logits.shape == (len(dev), 2)
    np.testing.assert_array_equal(ft.labels, [ex.label for ex in dev])
    # the metrics are those of the returned model on the dev set
    again = evaluate(ft.model, ft.tokenizer, "MRPC", dev, max_length=32)
    np.testing.assert_allclose(again.logits, ft.logits, atol=1e-5)
    assert again.metrics == pytest.approx(ft.metrics)
    # the encoder was trained: its weights moved away from the checkpoint's
    base = load_model(str(tiny_model_dir), device="cpu")
    assert weights_fingerprint(ft.model.base_model) != weights_fingerprint(base.model)
    # the curve: one loss row per step (2 epochs x 5 steps), dev metrics after each epoch
    curve = ft.curve
    assert curve["loss"].notna().sum() == 10
    assert curve["eval_f1"].notna().sum() == 2 and curve["eval_accuracy"].notna().sum() == 2
    assert ft.record["global_steps"] == 10
    # the entry: a model folder with safetensors weights, the curve as CSV and JSON
    for name in ("model.safetensors", "config.json", "predictions.npz", "log_history.csv",
                 "log_history.json", "result.json", "COMPLETE"):
        assert (ft.folder / name).is_file(), name
    assert not list(ft.folder.parent.glob("*.work")) and not list(ft.folder.parent.glob("*.tmp-*"))
    assert not list(ft.folder.glob("*.bin")) and not list(ft.folder.glob("*.pt"))


def test_fine_tuned_model_gives_attention_and_takes_interventions(mrpc_run, data):
    ft, _ = mrpc_run
    enc = ft.tokenizer("the cat sat", "a dog ran", return_tensors="pt")
    out = ft.model(**enc, output_attentions=True)
    assert len(out.attentions) == 2 and out.attentions[0].shape[1:] == (2, 9, 9)
    assert ft.loaded.num_layers == 2 and ft.loaded.identity["finetune"]["task"] == "MRPC"
    plain = evaluate(ft.model, ft.tokenizer, "MRPC", data["MRPC"][1], max_length=32)
    with intervene(ft.model, uniform=[(0, 0), (0, 1), (1, 0), (1, 1)]):
        disabled = evaluate(ft.model, ft.tokenizer, "MRPC", data["MRPC"][1], max_length=32)
    assert not np.allclose(plain.logits, disabled.logits)


def test_a_released_model_reloads_the_same_weights_from_its_entry(mrpc_run, tiny_model_dir,
                                                                   data, tmp_path, capfd):
    import shutil

    ft, cache = mrpc_run
    copy = tmp_path / "cache"
    shutil.copytree(cache, copy)
    again = run(tiny_model_dir, "MRPC", data, copy)  # a private FineTuned to release
    before = {k: v.clone() for k, v in again.model.state_dict().items()}
    again.release()
    assert again.model is None
    assert again.reload("cpu") is again and again.reload("cpu").model is not None
    assert "Loading weights" not in capfd.readouterr().err  # no bars outside a terminal
    after = again.model.state_dict()
    assert before.keys() == after.keys() and all(torch.equal(before[k], after[k]) for k in before)
    again.release()
    weights = again.folder / "model.safetensors"
    raw = bytearray(weights.read_bytes())
    raw[-1] ^= 0xFF
    weights.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="fingerprint"):
        again.reload("cpu")
    shutil.rmtree(again.folder)
    with pytest.raises(FileNotFoundError, match="run the notebook again"):
        again.reload("cpu")


def test_cached_entry_is_a_model_folder(mrpc_run):
    ft, _ = mrpc_run
    lm = load_model(str(ft.folder), device="cpu")  # the engine's loader opens it
    assert weights_fingerprint(lm.model) == weights_fingerprint(ft.model.base_model)


def test_regression_task_sts_b_prints_nothing_when_not_a_terminal(tiny_model_dir, data,
                                                                    tmp_path, capfd):
    assert not progress_enabled()  # pytest captures stderr: not a terminal
    ft = run(tiny_model_dir, "STS-B", data, tmp_path)
    out, err = capfd.readouterr()
    for text in (out, err):  # no bars (Trainer, weight loading, saving), no printed logs
        assert "it/s" not in text and "%|" not in text and "s/it" not in text
        assert "'loss'" not in text
    assert ft.model.config.num_labels == 1 and ft.model.config.problem_type == "regression"
    assert ft.logits.shape == (12, 1) and ft.predictions.dtype.kind == "f"
    assert list(ft.metrics) == ["pearson", "spearman"]
    assert ft.metrics["pearson"] == pytest.approx(
        glue_metrics.pearson(ft.labels, ft.predictions))


def test_string_labels_rte_with_progress_bars(tiny_model_dir, data, tmp_path, capfd):
    ft = run(tiny_model_dir, "RTE", data, tmp_path, progress=True, settings=FinetuneSettings(
        epochs=1, batch_size=8, max_length=32, eval_each_epoch=False))
    assert "%|" in capfd.readouterr().err  # asked for: the Trainer's bar
    expected = [0 if ex.label == "entailment" else 1 for ex in data["RTE"][1]]
    np.testing.assert_array_equal(ft.labels, expected)
    assert ft.model.config.id2label == {0: "entailment", 1: "not_entailment"}
    assert "eval_accuracy" not in ft.curve  # no per-epoch dev scoring when switched off


# ------------------------------------------------------------------------------ cache


def test_second_call_trains_nothing(mrpc_run, tiny_model_dir, data, monkeypatch):
    ft, cache = mrpc_run

    def refuse(*args, **kwargs):
        raise AssertionError("Trainer.train ran although the entry was complete")

    monkeypatch.setattr(Trainer, "train", refuse)
    again = run(tiny_model_dir, "MRPC", data, cache)
    assert again.from_cache and again.folder == ft.folder and again.key == ft.key
    assert again.metrics == ft.metrics and list(again.metrics) == list(ft.metrics)
    np.testing.assert_array_equal(again.logits, ft.logits)
    assert again.log_history == ft.log_history
    assert weights_fingerprint(again.model) == weights_fingerprint(ft.model)
    assert again.model.config._attn_implementation == "eager"


def test_cache_key_changes_with_what_changes_the_result(tiny_model_dir, data, tmp_path):
    train, dev = data["MRPC"]

    def key(model=str(tiny_model_dir), task="MRPC", **kw):
        kw.setdefault("settings", TINY)
        t, d = data[task]
        return finetune_key(model, task, train_examples=kw.pop("train", t),
                            dev_examples=kw.pop("dev", d), **kw)[0]

    base = key(seed=0)
    assert key(seed=0) == base  # same inputs, same key
    assert key(seed=0, settings=FinetuneSettings(**{**TINY.as_dict()})) == base
    changed = {
        "seed": key(seed=1),
        "task": key(task="SST-2", seed=0),
        "learning rate": key(seed=0, settings=FinetuneSettings(**{**TINY.as_dict(),
                                                                   "learning_rate": 2e-5})),
        "padding": key(seed=0, settings=FinetuneSettings(**{**TINY.as_dict(),
                                                             "dynamic_padding": False})),
        "random init": key(seed=0, init="random"),
        "train subset": key(seed=0, max_train=20),
        "subset seed": key(seed=0, max_train=20, subset_seed=1),
        "one train label": key(seed=0, train=[*train[:-1], GlueExample(
            train[-1].text_a, train[-1].text_b, 1 - train[-1].label)]),
        "dev set": key(seed=0, dev=dev[:6]),
    }
    # the same architecture and folder name with one weight changed
    other = tmp_path / tiny_model_dir.name
    shutil.copytree(tiny_model_dir, other)
    weights = load_file(other / "model.safetensors")
    name = next(k for k in weights if k.endswith("word_embeddings.weight"))
    weights[name][3, 0] += 1.0
    save_file(weights, other / "model.safetensors", metadata={"format": "pt"})
    changed["one weight"] = key(model=str(other), seed=0)
    assert base not in changed.values()
    assert len(set(changed.values())) == len(changed), changed
    assert key(seed=0, max_train=20) == changed["train subset"]


def test_half_written_entries_never_read_as_complete(mrpc_run, tiny_model_dir, data, tmp_path,
                                                      monkeypatch):
    ft, _ = mrpc_run
    cache = tmp_path / "cache"
    entry = cache / "finetune" / ft.key
    calls = []
    real_train = Trainer.train

    def counting(self, *a, **k):
        calls.append(1)
        return real_train(self, *a, **k)

    monkeypatch.setattr(Trainer, "train", counting)
    # a copy of the entry without its COMPLETE marker (a writer killed before the end)
    shutil.copytree(ft.folder, entry)
    (entry / "COMPLETE").unlink()
    # and a leftover temporary folder of a killed writer
    (cache / "finetune" / f"{ft.key}.tmp-99999").mkdir()
    again = run(tiny_model_dir, "MRPC", data, cache)
    assert calls == [1] and not again.from_cache
    assert (entry / "COMPLETE").is_file() and not list(entry.parent.glob("*.tmp-*"))
    # the same training gives the same weights (seeded)
    assert weights_fingerprint(again.model) == weights_fingerprint(ft.model)
    assert finetune_cache.read_complete(entry, ft.key) is not None
    assert finetune_cache.read_complete(entry, "another-key") is None
    # weights that are not the ones recorded: retrained, with a warning
    weights = load_file(entry / "model.safetensors")
    name = sorted(weights)[0]
    weights[name] = weights[name] + 1.0
    save_file(weights, entry / "model.safetensors", metadata={"format": "pt"})
    with pytest.warns(UserWarning, match="fingerprint"):
        fixed = run(tiny_model_dir, "MRPC", data, cache)
    assert calls == [1, 1] and not fixed.from_cache
    # a result.json edited after completion no longer matches the marker
    record = json.loads((entry / "result.json").read_text())
    record["metrics"]["f1"] = 1.0
    (entry / "result.json").write_text(json.dumps(record))
    assert finetune_cache.read_complete(entry, ft.key) is None
    # so do damaged predictions
    fixed2 = run(tiny_model_dir, "MRPC", data, cache)
    assert calls == [1, 1, 1] and finetune_cache.read_complete(entry, ft.key) is not None
    (entry / "predictions.npz").write_bytes(b"damaged")
    assert finetune_cache.read_complete(entry, ft.key) is None
    assert weights_fingerprint(fixed2.model) == weights_fingerprint(ft.model)


@pytest.mark.parametrize("damage", ["truncated", "header only", "missing"])
def test_unreadable_weights_are_dropped_and_trained_again(mrpc_run, tiny_model_dir, data,
                                                           tmp_path, monkeypatch, damage):
    """A cached entry whose ``model.safetensors`` cannot be read (cut off by a full disk or a
    copy that stopped, or gone) counts as missing: a warning, then the same model again."""
    ft, _ = mrpc_run
    cache = tmp_path / "cache"
    entry = cache / "finetune" / ft.key
    shutil.copytree(ft.folder, entry)
    weights = entry / "model.safetensors"
    if damage == "missing":
        weights.unlink()
    else:
        blob = weights.read_bytes()
        weights.write_bytes(blob[:len(blob) // 2] if damage == "truncated" else blob[:5])
    assert finetune_cache.read_complete(entry, ft.key) is not None  # the marker cannot tell
    calls = []
    real_train = Trainer.train
    monkeypatch.setattr(Trainer, "train",
                        lambda self, *a, **k: calls.append(1) or real_train(self, *a, **k))
    with pytest.warns(UserWarning, match="cannot be read"):
        again = run(tiny_model_dir, "MRPC", data, cache)
    assert calls == [1] and not again.from_cache
    assert weights_fingerprint(again.model) == weights_fingerprint(ft.model)
    assert run(tiny_model_dir, "MRPC", data, cache).from_cache  # the new entry reads back


class Interrupt(TrainerCallback):
    """Stop training like a Ctrl-C right after optimiser step ``at``."""

    def __init__(self, at: int):
        self.at = at

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.at:
            raise KeyboardInterrupt


def test_interrupted_run_resumes_from_its_last_checkpoint(mrpc_run, tiny_model_dir, data,
                                                          tmp_path):
    ft, _ = mrpc_run
    cache = tmp_path / "cache"
    with pytest.raises(KeyboardInterrupt):
        run(tiny_model_dir, "MRPC", data, cache, checkpoint_steps=2, callbacks=[Interrupt(7)])
    work = cache / "finetune" / f"{ft.key}.work"
    assert not (cache / "finetune" / ft.key).exists()  # nothing published
    assert sorted(p.name for p in work.glob("checkpoint-*")) == ["checkpoint-6"]
    # checkpoints cut off while being written are not resumed from: one before its
    # trainer_state.json (written last), one in the middle of writing it
    (work / "checkpoint-7").mkdir()
    (work / "checkpoint-7" / "model.safetensors").write_bytes(b"partial")
    shutil.copytree(work / "checkpoint-6", work / "checkpoint-8")
    state = work / "checkpoint-8" / "trainer_state.json"
    state.write_text(state.read_text()[:40])
    resumed = run(tiny_model_dir, "MRPC", data, cache, checkpoint_steps=2)
    assert resumed.record["resumed_from_step"] == 6 and resumed.record["global_steps"] == 10
    assert not work.exists()
    # same weights, predictions and curve as the uninterrupted run
    assert weights_fingerprint(resumed.model) == weights_fingerprint(ft.model)
    np.testing.assert_array_equal(resumed.logits, ft.logits)
    losses = [r["loss"] for r in resumed.log_history if "loss" in r]
    assert losses == [r["loss"] for r in ft.log_history if "loss" in r]


def test_same_seed_same_model_other_seed_other_model(mrpc_run, tiny_model_dir, data, tmp_path):
    ft, _ = mrpc_run
    other = run(tiny_model_dir, "MRPC", data, tmp_path, seed=1)
    assert other.key != ft.key
    assert weights_fingerprint(other.model) != weights_fingerprint(ft.model)


def test_random_init_differs_from_pretrained(tiny_model_dir, data, tmp_path, mrpc_run):
    ft, _ = mrpc_run
    rnd = run(tiny_model_dir, "MRPC", data, tmp_path, init="random",
              settings=FinetuneSettings(epochs=1, batch_size=8, max_length=32,
                                        eval_each_epoch=False))
    assert rnd.init == "random" and rnd.identity["init"] == "random"
    assert (rnd.record["key_inputs"]["model"]["weights_fingerprint"]
            != ft.record["key_inputs"]["model"]["weights_fingerprint"])
    with pytest.raises(ValueError, match="init must be one of"):
        run(tiny_model_dir, "MRPC", data, tmp_path, init="random_keep_embeddings")


# ------------------------------------------------------------------------------ data


def test_subsample_is_seeded_sorted_and_recorded(tiny_model_dir, data, tmp_path):
    items = list(range(100))
    a, ia = subsample(items, 10, seed=3)
    b, ib = subsample(items, 10, seed=3)
    c, _ = subsample(items, 10, seed=4)
    assert a == b and a != c and a == sorted(a) and list(ia) == a
    assert subsample(items, 200, seed=3) == (items, None)
    ft = run(tiny_model_dir, "MRPC", data, tmp_path, max_train=16,
             settings=FinetuneSettings(epochs=1, batch_size=8, max_length=32))
    sub = ft.record["train_subset"]
    assert sub["max_train"] == 16 and sub["n_available"] == 40 and len(sub["indices"]) == 16
    assert sub["indices"] == subsample(data["MRPC"][0], 16, 0)[1].tolist()
    assert ft.record["global_steps"] == 2


def test_missing_train_split_says_what_to_do(tmp_path):
    (tmp_path / "glue" / "QNLI").mkdir(parents=True)
    with pytest.raises(DataMissingError, match="no train split.*QNLI/train.tsv"):
        read_task("QNLI", "train", data_dir=tmp_path)
    with pytest.raises(ValueError, match="no column layout"):
        read_task("QQP", "train", data_dir=tmp_path)
    # a file the manifest lists keeps the manifest's message (the command that fetches it)
    with pytest.raises(DataMissingError, match="fetch-data --dataset glue"):
        read_task("MRPC", "train", data_dir=tmp_path)


@pytest.mark.gold_data
def test_tasks_with_train_and_dev_in_the_bundle(gold_data_dir):
    assert finetune_tasks() == ["MRPC", "STS-B", "SST-2", "RTE", "CoLA"]
    assert finetune_tasks(include_excluded=False) == ["MRPC", "STS-B", "SST-2", "RTE"]


# ------------------------------------------------------------------------------ baselines


def test_frozen_features_baseline(tiny_model_dir, data, tmp_path, monkeypatch):
    train, dev = data["MRPC"]
    kw = dict(train_examples=train, dev_examples=dev, cache_dir=tmp_path, device="cpu",
              max_length=32)
    b = frozen_features_baseline(str(tiny_model_dir), "MRPC", **kw)
    assert b.kind == "frozen_features" and not b.from_cache
    assert b.details["kind"] == "logistic_regression" and b.details["pooling"] == "cls"
    assert b.metrics == glue_metrics.compute_metrics("MRPC", b.predictions, b.labels)
    # an independent reference: the same features and the same scikit-learn head by hand
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    lm = load_model(str(tiny_model_dir), device="cpu")

    def cls(examples):
        rows = []
        with torch.no_grad():
            for ex in examples:
                enc = lm.tokenizer(ex.text_a, ex.text_b, return_tensors="pt")
                rows.append(lm.model(**enc).last_hidden_state[0, 0].numpy())
        return np.stack(rows)

    ref = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    ref.fit(cls(train), [ex.label for ex in train])
    np.testing.assert_array_equal(b.predictions, ref.predict(cls(dev)))
    # cached: the second call computes no features
    monkeypatch.setattr(baselines, "_features", lambda *a, **k: pytest.fail("features recomputed"))
    again = frozen_features_baseline(str(tiny_model_dir), "MRPC", **kw)
    assert again.from_cache and again.metrics == b.metrics


def test_frozen_features_regression_and_mean_pooling(tiny_model_dir, data, tmp_path):
    train, dev = data["STS-B"]
    b = frozen_features_baseline(str(tiny_model_dir), "STS-B", pooling="mean",
                                 train_examples=train, dev_examples=dev, cache_dir=tmp_path,
                                 device="cpu", max_length=32)
    assert b.details["kind"] == "ridge" and b.details["pooling"] == "mean"
    assert list(b.metrics) == ["pearson", "spearman"] and b.predictions.dtype.kind == "f"


def test_untrained_head_baseline(tiny_model_dir, data, tmp_path):
    dev = data["MRPC"][1]
    b = untrained_head_baseline(str(tiny_model_dir), "MRPC", seed=0, dev_examples=dev,
                                cache_dir=tmp_path, device="cpu", max_length=32)
    assert b.kind == "untrained_head" and b.predictions.shape == (len(dev),)
    # the same model built by hand gives the same predictions
    lm = load_model(str(tiny_model_dir), device="cpu")
    model = build_classifier(lm, "MRPC", seed=0)
    ev = evaluate(model, lm.tokenizer, "MRPC", dev, max_length=32)
    np.testing.assert_array_equal(b.predictions, ev.predictions)
    again = untrained_head_baseline(str(tiny_model_dir), "MRPC", seed=0, dev_examples=dev,
                                    cache_dir=tmp_path, device="cpu", max_length=32)
    assert again.from_cache and again.metrics == b.metrics


@pytest.mark.packaged_model
@pytest.mark.gold_data
def test_packaged_minilm_on_real_mrpc(gold_data_dir, tmp_path):
    """The real path: the "minilm" alias, the gold MRPC files, a seeded train subset."""
    settings = FinetuneSettings(epochs=1, batch_size=8, eval_each_epoch=False, num_threads=1)
    ft = finetune("minilm", "MRPC", seed=42, settings=settings, max_train=16, max_dev=16,
                  cache_dir=tmp_path, device="cpu")
    assert ft.identity["name"] == "all-MiniLM-L6-v2 + MRPC"
    assert (ft.loaded.num_layers, ft.loaded.num_heads) == (6, 12)
    assert ft.record["train_subset"]["n_available"] == 3668 and ft.record["global_steps"] == 2
    assert ft.predictions.shape == (16,) and set(ft.metrics) == {"f1", "accuracy"}


# ------------------------------------------------------- keys across precision and device
# Keys computed BEFORE the fine-tune key learned precision and device kind (issue 34), by
# `plan show --profile default` / `--profile smoke` on the CPU: every CPU float32 key must stay
# byte-identical, or the cache filled for the re-render would be trained again.
PINNED_CPU_FLOAT32_KEYS = [
    # (task, seed, init, max_train, learning rate, epochs, max_dev) -> key
    (("MRPC", 42, "pretrained", None, 5e-5, 3, 0),
     "all-MiniLM-L6-v2-MRPC-pretrained-seed42-42cdf586d6c7b954a5f4"),
    (("SST-2", 43, "pretrained", 8000, 5e-5, 3, 0),
     "all-MiniLM-L6-v2-SST-2-pretrained-seed43-e6394e3874f32acfa810"),
    (("CoLA", 44, "random", 4000, 5e-5, 3, 0),
     "all-MiniLM-L6-v2-CoLA-random-seed44-b7dff632bbd10875c4ef"),
    (("RTE", 42, "pretrained", None, 1e-4, 3, 0),
     "all-MiniLM-L6-v2-RTE-pretrained-seed42-ef65bd64a264cad29e50"),
    (("MRPC", 42, "pretrained", 64, 5e-5, 1, 48),  # the smoke profile's until 2 Dec 2026
     "all-MiniLM-L6-v2-MRPC-pretrained-seed42-8a431f7705157f047f56"),
]


def _plan_key(task, seed, init, max_train, lr, epochs, max_dev, precision="float32",
              device=None):
    from analysis_utils.runplan import finetunes

    settings = finetunes.settings(epochs, 32, lr, 128, 0.1, 1, precision)
    return finetunes.run_key(finetunes.Run(task, seed, init, max_train), "minilm", settings,
                             subset_seed=0, max_dev=max_dev, device=device)[0]


@pytest.mark.packaged_model
@pytest.mark.gold_data
@pytest.mark.parametrize(("args", "key"), PINNED_CPU_FLOAT32_KEYS,
                         ids=[k.split("-", 3)[-1] for _, k in PINNED_CPU_FLOAT32_KEYS])
def test_cpu_float32_keys_are_the_ones_computed_before_precision_and_device_kind(
        gold_data_dir, args, key):
    assert _plan_key(*args, device="cpu") == key
    assert _plan_key(*args, precision="float32", device="cpu") == key


@pytest.mark.packaged_model
@pytest.mark.gold_data
def test_a_bf16_tf32_or_cuda_fine_tune_has_a_key_of_its_own(gold_data_dir):
    args, base = PINNED_CPU_FLOAT32_KEYS[-1]
    others = {"bf16 cpu": _plan_key(*args, precision="bf16", device="cpu"),
              "float32 cuda": _plan_key(*args, device="cuda"),
              "tf32 cuda": _plan_key(*args, precision="tf32", device="cuda"),
              "bf16 cuda": _plan_key(*args, precision="bf16", device="cuda")}
    assert base not in others.values()
    assert len(set(others.values())) == len(others), others


def test_precision_is_validated_and_keyed_only_when_not_float32():
    assert "precision" not in TINY.as_dict()  # float32: the key inputs of before
    bf16 = FinetuneSettings(**{**TINY.as_dict(), "precision": "bf16"})
    assert bf16.as_dict()["precision"] == "bf16"
    assert FinetuneSettings.from_dict(bf16.as_dict()) == bf16
    with pytest.raises(ValueError, match="'fp16' is not one of float32, tf32, bf16"):
        FinetuneSettings(precision="fp16")


def test_device_kind_and_precision_enter_the_key_only_off_the_cpu_float32_run(
        tiny_model_dir, data):
    train, dev = data["MRPC"]

    def key(settings=TINY, device="cpu"):
        k, inputs = finetune_key(str(tiny_model_dir), "MRPC", 0, settings, train_examples=train,
                                 dev_examples=dev, device=device)
        return k, inputs

    base, inputs = key()
    assert "device_kind" not in inputs and "precision" not in inputs["settings"]
    assert key(device=torch.device("cpu"))[0] == base
    cuda, cuda_inputs = key(device="cuda:1")  # only the kind counts, and no GPU is needed
    assert cuda_inputs["device_kind"] == "cuda" and key(device="cuda")[0] == cuda
    bf16 = key(FinetuneSettings(**{**TINY.as_dict(), "precision": "bf16"}))[0]
    assert len({base, cuda, bf16}) == 3


def test_a_bf16_fine_tune_runs_on_the_cpu_beside_the_float32_one(tiny_model_dir, data,
                                                                  tmp_path, mrpc_run):
    ft32, _ = mrpc_run
    assert ft32.record["precision"] == "float32"
    before = (torch.get_float32_matmul_precision(), torch.is_autocast_enabled("cpu"))
    bf16 = run(tiny_model_dir, "MRPC", data, tmp_path,
               settings=FinetuneSettings(**{**TINY.as_dict(), "precision": "bf16"}))
    assert (torch.get_float32_matmul_precision(), torch.is_autocast_enabled("cpu")) == before
    assert bf16.key != ft32.key and bf16.record["precision"] == "bf16"
    assert bf16.record["key_inputs"]["settings"]["precision"] == "bf16"
    assert bf16.logits.dtype == np.float32 and np.isfinite(bf16.logits).all()
    again = run(tiny_model_dir, "MRPC", data, tmp_path,
                settings=FinetuneSettings(**{**TINY.as_dict(), "precision": "bf16"}))
    assert again.from_cache and again.settings.precision == "bf16"
    with pytest.raises(ValueError, match="tf32 applies to CUDA matrix products only"):
        run(tiny_model_dir, "MRPC", data, tmp_path / "tf32",
            settings=FinetuneSettings(**{**TINY.as_dict(), "precision": "tf32"}))


@pytest.mark.parametrize("family", ["mpnet", "roberta", "bert"])
def test_classifier_takes_every_encoder_weight_whatever_the_family(tmp_path, family):
    """RoBERTa's and MPNet's task models build their encoder without the pooler: the loaded
    encoder's pooler is left out (issue 44: MPNet's 06 stopped on the unexpected keys), every
    other weight is copied exactly, and a weight the task model's encoder has but the loaded
    one lacks still fails."""
    import torch
    from transformers import (
        BertConfig,
        BertModel,
        MPNetConfig,
        MPNetModel,
        RobertaConfig,
        RobertaModel,
    )

    from analysis_utils.engine.models import LoadedModel

    shape = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=32, max_position_embeddings=40)
    cls, config = {"mpnet": (MPNetModel, MPNetConfig), "roberta": (RobertaModel, RobertaConfig),
                   "bert": (BertModel, BertConfig)}[family]
    torch.manual_seed(0)
    enc = cls(config(**shape))
    lm = LoadedModel(enc, tokenizer=None, device=torch.device("cpu"))
    model = build_classifier(lm, "MRPC", seed=0)
    got = model.base_model.state_dict()
    for k, v in enc.state_dict().items():
        if k.split(".")[0] in {n for n, _ in model.base_model.named_children()}:
            assert torch.equal(got[k], v), k
    assert family == "bert" or getattr(model.base_model, "pooler", None) is None
    broken = cls(config(**shape))
    del broken.encoder.layer[1]
    with pytest.raises(RuntimeError, match="do not fit"):
        build_classifier(LoadedModel(broken, tokenizer=None, device=torch.device("cpu")),
                         "MRPC", seed=0)


def test_a_model_with_one_token_type_is_fine_tuned_and_scored(tmp_path, data, tiny_model_dir):
    """A RoBERTa-family model has one token type: GLUE pairs' second-segment id 1 indexed past
    its table and 06 stopped (issue 44). Its datasets carry no segment ids (uses_token_types,
    as the engine's batches), so it fine-tunes and is scored like any other."""
    import torch
    from transformers import AutoTokenizer, RobertaConfig, RobertaModel

    from analysis_utils.engine.models import LoadedModel
    from analysis_utils.training import glue_data

    tok = AutoTokenizer.from_pretrained(str(tiny_model_dir))  # gives segment ids 0/1
    torch.manual_seed(0)
    enc = RobertaModel(RobertaConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=32,
                                     max_position_embeddings=70, type_vocab_size=1,
                                     pad_token_id=0, attn_implementation="eager"))
    train, dev = data["MRPC"]
    assert "token_type_ids" not in glue_data.task_dataset("MRPC", dev, tok, 32, False)[0]
    lm = LoadedModel(enc, tokenizer=tok, device=torch.device("cpu"))
    model = build_classifier(lm, "MRPC", seed=0)
    ev = evaluate(model, tok, "MRPC", dev, max_length=32)
    assert ev.predictions.shape == (len(dev),)
    # a dataset built with segment ids is still scored: predict leaves them out
    with_types = glue_data.task_dataset("MRPC", dev, tok, 32)
    np.testing.assert_array_equal(evaluate(model, tok, "MRPC", with_types).logits, ev.logits)


def test_cache_entries_with_the_same_tokenizer_files_share_one_tokenizer(tiny_model_dir,
                                                                         tmp_path):
    # notebook 06 holds 50 FineTuned of one encoder: a tokenizer each was 500 MB resident
    import shutil

    from transformers import AutoTokenizer

    from analysis_utils.training.finetune import shared_tokenizer

    a, b, c = (tmp_path / x for x in "abc")
    for d in (a, b, c):
        shutil.copytree(tiny_model_dir, d)
    vocab = c / "vocab.txt"
    vocab.write_text(vocab.read_text() + "zzzextra\n")
    (c / "tokenizer.json").unlink(missing_ok=True)  # rebuilt from the changed vocab
    calls = []

    def load(folder):
        calls.append(folder)
        return AutoTokenizer.from_pretrained(folder)

    ta, tb, tc = (shared_tokenizer(d, load) for d in (a, b, c))
    assert ta is tb and tc is not ta and calls == [a, c]
    assert len(tc) == len(ta) + 1
