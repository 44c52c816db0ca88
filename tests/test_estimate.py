"""The run plan's cost estimate (``analysis_utils.runplan.estimate``): the FLOP formula against
a hand count, each unit kind's work, the rate fitted from fake cache records, list scheduling
and the GPU makespan by hand, the plan's units, and ``benchmarks/estimate_plan.py``.

The tiny shape used by hand: 2 layers, hidden 4, feed-forward 8, 2 heads, 2 labels. One layer
has P = 4*16 + 4*4 (attention maps and biases) + 2*4*8 + 8 + 4 (feed-forward) + 4*4 (two
LayerNorms) = 172 parameters; one layer over a 3-piece sequence costs 2*3*172 + 4*3^2*4 = 1176
FLOPs, a 5-piece one 2*5*172 + 4*25*4 = 2120; the pooler and classifier 2*(16 + 4 + 8 + 2) = 60
per sequence, so F(3) = 2*1176 + 60 = 2412 and F(5) = 2*2120 + 60 = 4300."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import benchmark_module

from analysis_utils.runplan import estimate as est

TINY = est.Shape(layers=2, hidden=4, intermediate=8, heads=2, name="tiny")
F3, F5 = 2412.0, 4300.0
T = 1e12


# ------------------------------------------------------------------------------ the formula

def test_layer_parameters_by_hand_and_as_transformers_counts_them():
    from transformers import BertConfig, BertModel

    assert TINY.layer_params == 172 and TINY.non_embedding_params == 344
    assert TINY.head_params(2) == 30
    model = BertModel(BertConfig(vocab_size=10, hidden_size=4, num_hidden_layers=2,
                                 num_attention_heads=2, intermediate_size=8))
    assert sum(p.numel() for p in model.encoder.parameters()) == 344
    assert sum(p.numel() for p in model.pooler.parameters()) == 4 * 4 + 4
    # BERT-base: 85.1 M non-embedding parameters, 7,087,872 per layer
    base = est.Shape(12, 768, 3072, 12)
    assert base.layer_params == 7_087_872 and base.non_embedding_params == 85_054_464


def test_forward_flops_by_hand():
    assert est.layer_flops(TINY, [3]) == 1176.0
    assert est.layer_flops(TINY, [3, 5]) == 1176.0 + 2120.0
    assert est.head_flops(TINY, 2, 1) == 60.0
    assert est.forward_flops(TINY, [3]) == F3
    assert est.forward_flops(TINY, [3, 5]) == F3 + F5
    assert est.forward_flops(TINY, [3], num_labels=1) == F3 - 2 * 1 * 5  # d + 1 fewer weights
    assert est.forward_flops(TINY, []) == 0.0


def test_finetune_flops_by_hand():
    # 2 epochs: 3 forward passes per train example and epoch; dev scored after each epoch
    # and once more at the end
    got = est.finetune_flops(TINY, [3], [5], epochs=2)
    assert got == {"train": 3 * 2 * F3, "dev": 3 * F5}
    assert est.finetune_flops(TINY, [3, 3], [5], epochs=1, dev_passes=1) == {
        "train": 3 * 2 * F3, "dev": F5}


def test_sweep_passes_by_hand_and_from_the_sweeps_own_changes():
    # plain pass 2 layers; layer-0 heads 2 x 2 layers, layer-1 heads 2 x 1; layers 2 + 1
    assert est.sweep_layer_passes(2, 2) == 2 + 4 + 2 + 2 + 1 == 11
    assert est.sweep_flops(TINY, [3]) == 11 * 1176.0 + 60.0 * 7  # head: 1 + 4 heads + 2 layers
    from analysis_utils.analyses import disabling

    for layers, heads in ((2, 2), (6, 12), (12, 12)):
        changes = (disabling.head_changes(layers, heads, "uniform")
                   + disabling.layer_changes(layers, heads, "uniform"))
        assert est.sweep_layer_passes(layers, heads) == layers + sum(
            layers - c.lowest_layer for c in changes)


def test_curve_passes_by_hand():
    # 72 heads in steps of 10%: 0, 7, 14, 22, 29, 36, 43, 50, 58, 65, 72; four orders
    # (importance + 3 random) x the 9 steps between, all heads once, the plain pass once
    assert est.curve_passes(72, 0.1, 3) == 1 + 4 * 9 + 1 == 38
    assert est.curve_passes(4, 0.5, 1) == 1 + 2 * 1 + 1
    assert est.curve_passes(4, 0.5, 0, importance=False) == 1
    assert est.curve_flops(TINY, [3], step=0.5, n_random=1) == 4 * F3


def test_study_flops_by_hand():
    from analysis_utils.analyses.disabling_study import StudySettings

    s = StudySettings(modes=("uniform", "zero"), prune_step=0.5, n_random_orders=1)
    sweep = 11 * 1176.0 + 60.0 * 7
    assert est.study_flops(TINY, s, [3], [5]) == {
        "sweep-uniform": sweep, "sweep-zero": sweep, "importance": 2 * F5,
        "curves": 4 * F3}
    one = StudySettings(modes=("uniform",), curves=False)
    assert est.study_flops(TINY, one, [3], [3, 5]) == {"sweep-uniform": sweep,
                                                      "importance": 2 * (F3 + F5)}


# ------------------------------------------------------------------------- rates, schedules

def test_fit_rate_by_hand():
    r = est.fit_rate([(2.0, 1.0), (4.0, 1.0), (9.0, 3.0), (5.0, 0.0)])  # last: no FLOPs
    assert (r.n, r.median, r.low, r.high, r.q1, r.q3) == (3, 3.0, 2.0, 4.0, 2.5, 3.5)
    assert r.pooled == 15.0 / 5.0 and r.flops_per_second == 1 / 3
    with pytest.raises(ValueError, match="no recorded unit"):
        est.fit_rate([])


def test_list_schedule_by_hand():
    # longest first on 2 slots: 4 | 3, then 3 on the second (6), 2 on the first (6)
    assert est.list_schedule([4, 3, 3, 2], 2) == 6.0
    # as given: 2 | 3, 3 on the first (5), 4 on the second (7)
    assert est.list_schedule([2, 3, 3, 4], 2, order="given") == 7.0
    assert est.list_schedule([4, 3, 3, 2], 1) == 12.0
    assert est.list_schedule([4, 3], 8) == 4.0 and est.list_schedule([], 2) == 0.0
    with pytest.raises(ValueError):
        est.list_schedule([1], 0)
    with pytest.raises(ValueError):
        est.list_schedule([1], 1, order="random")


def _costs():
    ft = [est.UnitCost(f"ft{i}", "finetune", "MRPC", d * 0.5 * T, gpu_share=0.5)
          for i, d in enumerate((4, 3, 3, 2))]
    st = [est.UnitCost(f"st{i}", "study", "MRPC", 1 * 0.25 * T, gpu_share=0.25)
          for i in range(5)]
    return ft + st


def test_gpu_makespan_by_hand():
    costs = _costs()  # at 1 TFLOP/s a fine-tune on half a GPU takes 4, 3, 3, 2 s
    one = est.gpu_makespan(costs, 1, T, overhead={})
    assert one == {"finetune": 6.0, "study": 2.0, "total": 8.0}  # 4 study slots, 5 units
    eight = est.gpu_makespan(costs, 8, T, overhead={})
    assert eight == {"finetune": 4.0, "study": 1.0, "total": 5.0}
    # a fixed cost per unit; whole GPUs per unit (--gpus-per-unit 1): one slot, full speed
    # fine-tunes 5, 4, 4, 3 on 2 slots: 8; studies 1.5 x 5 on 4 slots: 3
    assert est.gpu_makespan(costs, 1, T, overhead={"finetune": 1.0, "study": 0.5}) == {
        "finetune": 8.0, "study": 3.0, "total": 11.0}
    whole = est.gpu_makespan(costs, 1, T, overhead={}, share=1.0)
    assert whole == {"finetune": 6.0, "study": 1.25, "total": 7.25}
    with pytest.raises(ValueError, match="different GPU shares"):
        est.gpu_makespan(costs + [est.UnitCost("x", "study", "RTE", 1.0, gpu_share=0.5)], 1, T)


def test_cpu_seconds_and_notebook_remainder_by_hand():
    rates = {"finetune": est.fit_rate([(2.0, 1.0)]), "all": est.fit_rate([(3.0, 1.0)])}
    costs = [est.UnitCost("a", "finetune", "MRPC", 10.0), est.UnitCost("b", "study", "MRPC", 1.0)]
    assert est.cpu_seconds(costs, rates) == 10 * 2.0 + 1 * 3.0  # no study rate: "all"
    rest = est.notebook_remainder({"07": {"wall_time_s": 50}, "06": {"wall_time_s": 100}},
                                  {"07": 80.0})
    assert rest == {"06": {"wall": 100.0, "units": 0.0, "rest": 100.0},
                    "07": {"wall": 50.0, "units": 80.0, "rest": 0.0}}


# ------------------------------------------------------------------- the cache's records

def _write(folder: Path, record: dict) -> None:
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps(record))


def _finetune_record(key: str, device: str = "cpu") -> dict:
    return {"key": key, "device": device, "train_seconds": 17.052,
            "key_inputs": {"task": "MRPC", "model": {"name": "tiny"},
                           "settings": {"epochs": 2, "max_length": 128,
                                        "eval_each_epoch": True},
                           "train": {"n": 10, "sha256": "x", "max_n": None,
                                     "subset_seed": None},
                           "dev": {"n": 2, "sha256": "y", "max_n": None}},
            "train_encoding": {"mean_length": 3.0}, "dev_encoding": {"mean_length": 5.0}}


def test_measured_units_from_fake_records(tmp_path):
    """Examples that cannot be rebuilt (no data here): the recorded mean lengths stand in."""
    info = est.ModelInfo("tiny", TINY, None, "test")
    cache = tmp_path / "cache"
    _write(cache / "finetune" / "tiny-MRPC-a", _finetune_record("tiny-MRPC-a"))
    _write(cache / "finetune" / "tiny-MRPC-b", _finetune_record("tiny-MRPC-b", "cuda:0"))
    _write(cache / "finetune" / "tiny-MRPC-c.tmp-12", _finetune_record("tiny-MRPC-c"))
    (cache / "finetune" / "broken").mkdir()
    (cache / "finetune" / "broken" / "result.json").write_text("{")
    # a study part whose dev examples cannot be read: skipped, it says nothing countable
    _write(cache / "disabling" / "k-sweep", {
        "key": "k-sweep", "seconds": 3.0,
        "key_inputs": {"task": "MRPC", "part": "sweep", "mode": "uniform",
                       "finetuned": "tiny-MRPC-a", "max_tokens": 128,
                       "dev": {"n": 2, "sha256": "z"}}})
    got = est.measured_units(cache, tmp_path / "no-data", info_of=lambda name: info)
    assert [(m.kind, m.device, m.exact) for m in got] == [("finetune", "cpu", False),
                                                         ("finetune", "cuda", False)]
    # train: 3 x 2 epochs x 10 sequences of 3; dev: (2 + 1) passes x 2 sequences of 5
    flops = 3 * 2 * 10 * F3 + 3 * 2 * F5
    assert got[0].flops == flops == 170_520.0 and got[0].seconds == 17.052
    rates = est.fit_rates(got, "cpu", min_flops=0)
    assert set(rates) == {"finetune", "all"} and rates["finetune"].median == pytest.approx(1e-4)
    assert est.fit_rates(got, "cpu") == {}  # under MIN_FIT_FLOPS
    assert est.fit_rates(got, "cuda", min_flops=0)["finetune"].n == 1


@pytest.fixture(scope="module")
def minilm():
    return est.model_info("minilm")


def test_measured_study_part_rebuilt_from_the_data(tmp_path, minilm):
    """A study part's dev rows are re-read and checked against its key's digest; its FLOPs are
    counted from their lengths as glue.encode makes them."""
    from analysis_utils.data import glue
    from analysis_utils.training.glue_data import examples_digest, read_task

    dev = read_task("MRPC", "dev", max_examples=4)
    cache = tmp_path / "cache"
    _write(cache / "finetune" / "tiny-MRPC-a", _finetune_record("tiny-MRPC-a"))
    _write(cache / "disabling" / "k-sweep", {
        "key": "k-sweep", "seconds": 3.0,
        "key_inputs": {"task": "MRPC", "part": "sweep", "mode": "zero",
                       "finetuned": "tiny-MRPC-a", "max_tokens": 32,
                       "dev": {"n": 4, "sha256": examples_digest(dev)}}})
    _write(cache / "disabling" / "k-foreign", {
        "key": "k-foreign", "seconds": 3.0,
        "key_inputs": {"task": "MRPC", "part": "sweep", "mode": "zero",
                       "finetuned": "not-in-the-cache", "max_tokens": 32,
                       "dev": {"n": 4, "sha256": examples_digest(dev)}}})
    info = est.ModelInfo("tiny", TINY, minilm.tokenizer, "test")
    got = [m for m in est.measured_units(cache, None, info_of=lambda name: info)
           if m.kind == "study"]
    lengths = [len(x) for x in glue.encode(dev, minilm.tokenizer, max_tokens=32).inputs]
    assert [(m.part, m.device, m.exact) for m in got] == [("sweep-zero", "cpu", True)]
    assert got[0].flops == est.sweep_flops(TINY, lengths)


def test_sequence_lengths_are_glue_encodes(minilm):
    from analysis_utils.data import glue
    from analysis_utils.training.glue_data import read_task

    for task in ("MRPC", "SST-2"):  # pairs, single sentences
        rows = read_task(task, "dev", max_examples=12)
        for cap in (16, 128):
            want = [len(x) for x in glue.encode(rows, minilm.tokenizer, max_tokens=cap).inputs]
            assert est.sequence_lengths(rows, minilm.tokenizer, cap).tolist() == want


# ---------------------------------------------------------------------------- the plan

SMALL = {"tasks": "MRPC", "multi_seed_tasks": "MRPC", "train_subsets": "MRPC:16",
         "max_dev": "16", "random_init": "0", "lr_check": "",
         "importance_examples": "16", "n_random_orders": "1"}


def test_plan_costs_of_a_small_plan(minilm):
    costs = est.plan_costs("smoke", SMALL)
    assert [(c.kind, c.label) for c in costs] == [
        ("finetune", "MRPC/pretrained/seed42"), ("finetune", "MRPC/pretrained/seed43"),
        ("study", "MRPC/pretrained/seed42 study (uniform+zero +curves)"),
        ("study", "MRPC/pretrained/seed43 study (uniform)")]
    ft, _, first, other = costs
    assert ft.gpu_share == 0.5 and first.gpu_share == 0.25
    assert ft.examples["train"][0] == 16 and ft.examples["dev"][0] == 16
    assert set(ft.parts) == {"train", "dev"} and ft.flops == sum(ft.parts.values())
    assert set(first.parts) == {"sweep-uniform", "sweep-zero", "importance", "curves"}
    assert set(other.parts) == {"sweep-uniform", "importance"}
    # MiniLM: 6 x 12 heads; the dev rows are the same for fine-tune and study
    sweep = first.parts["sweep-uniform"]
    dev_fwd = ft.parts["dev"] / 2  # smoke: 1 epoch -> 2 dev passes
    head = est.head_flops(minilm.shape, 2, 16)
    layer = (dev_fwd - head) / 6
    assert sweep == pytest.approx(est.sweep_layer_passes(6, 12) * layer + head * (1 + 72 + 6))
    assert first.parts["curves"] == pytest.approx(est.curve_passes(72, 0.1, 1) * dev_fwd)


def test_bert_base_shape_without_downloading():
    info = est.model_info("bert-base-uncased")
    assert info.shape == est.Shape(12, 768, 3072, 12, "bert-base-uncased")
    assert len(info.tokenizer) == 30522


# ------------------------------------------------------------------------ the benchmark

def _bench():
    return benchmark_module("estimate_plan")


def test_benchmark_help(capsys):
    with pytest.raises(SystemExit) as stop:
        _bench().main(["--help"])
    assert stop.value.code == 0 and "estimate" in capsys.readouterr().out


def test_benchmark_on_a_small_plan(tmp_path, capsys):
    cache = tmp_path / "cache"
    record = _finetune_record("all-MiniLM-L6-v2-MRPC-a")
    record["key_inputs"]["model"]["name"] = "all-MiniLM-L6-v2"
    _write(cache / "finetune" / "all-MiniLM-L6-v2-MRPC-a", record)
    results = tmp_path / "results"
    results.mkdir()
    (results / "06_provenance.json").write_text(json.dumps({"wall_time_s": 120.0}))
    args = ["--profile", "smoke", "--reference", "smoke", "--cache-dir", str(cache),
            "--results-dir", str(results), "--min-tflop", "0", "--json",
            str(tmp_path / "out.json")]
    for k, v in SMALL.items():
        args += ["-p", f"{k}={v}"]
    bench = _bench()
    assert bench.main(args) == 0
    first = capsys.readouterr().out
    assert bench.main(args) == 0
    assert capsys.readouterr().out == first  # deterministic
    assert "| fine-tunes MRPC | 2 | 16 train x 1, 16 dev |" in first
    assert "| studies MRPC | 2 |" in first and "(estimate)" in first
    assert "fine-tunes: 1 records" in first and "06 2.0 min" in first
    out = json.loads((tmp_path / "out.json").read_text())
    assert out["flop_ratio"] == 1.0 and len(out["units"]) == 4
    assert np.isclose(out["gpu_wall_s"]["1xdefault"]["total"],
                      out["gpu_wall_s"]["1xdefault"]["finetune"]
                      + out["gpu_wall_s"]["1xdefault"]["study"])


def test_shape_from_any_family_config():
    """The FLOP count's shape reads no family-only config field (issue 44): DistilBERT names
    its feed-forward size hidden_dim, found here from the model built on the meta device."""
    from transformers import AlbertConfig, BertConfig, DistilBertConfig

    from analysis_utils.runplan.estimate import Shape

    assert Shape.from_config(BertConfig()) == Shape(12, 768, 3072, 12)
    assert Shape.from_config(DistilBertConfig(dim=32, n_layers=3, n_heads=4, hidden_dim=80)) \
        == Shape(3, 32, 80, 4)
    assert Shape.from_config(AlbertConfig(hidden_size=32, num_attention_heads=4,
                                          intermediate_size=64, num_hidden_layers=2,
                                          embedding_size=16)).intermediate == 64
