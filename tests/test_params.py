"""Override checking: names, types and declared ranges, before anything runs."""

import pytest

from analysis_utils import params, paths, profiles
from analysis_utils.publish import pipeline

REAL_SOURCES = sorted(paths.NOTEBOOKS_DIR.glob("[0-9][0-9]_*.py"))


def test_the_real_notebooks_are_found():
    assert [p.name[:2] for p in REAL_SOURCES] == [f"{i:02d}" for i in range(1, len(REAL_SOURCES) + 1)]


@pytest.mark.parametrize("source", REAL_SOURCES, ids=lambda p: p.name[:2])
def test_every_numeric_parameter_has_a_rule_its_default_satisfies(source):
    defaults = params.read_parameters(source)
    assert params.NOT_LITERAL not in defaults.values(), "parameters cells hold literals only"
    numeric = [k for k, v in defaults.items()
               if isinstance(v, (int, float)) and not isinstance(v, bool)]
    assert numeric, "parse found no numeric parameter"
    missing = [k for k in numeric if k not in params.CONSTRAINTS]
    assert not missing, f"declare a range in analysis_utils/params.py for {missing}"
    for name, value in defaults.items():
        assert params.check_value(name, value, value) == value
    params.check_ordered(defaults)


@pytest.mark.parametrize("profile", sorted(profiles.PROFILES))
def test_every_profile_passes_the_checks_on_the_real_notebooks(profile):
    jobs = pipeline.plan(profile)
    assert [j.source.name[:2] for j in jobs] == [f"{i:02d}" for i in range(1, len(jobs) + 1)]
    if profile == "smoke":
        assert jobs[1].parameters["max_sentences"] == profiles.PROFILES["smoke"]["02"][
            "max_sentences"]


def test_control_init_choices_follow_the_model_loader():
    from analysis_utils.engine import models

    for init in models.INITS:
        params.check_value("control_init", init, "random")
    with pytest.raises(params.ParameterError, match="one of 'pretrained'"):
        params.check_value("control_init", "randm", "random")


def test_types_follow_the_parameters_cell():
    assert params.parse_text("max_sentences", "60", 0) == 60
    assert params.parse_text("wide_margin", "5", 10.0) == 5.0  # an int where a float is fine
    assert isinstance(params.parse_text("wide_margin", "5", 10.0), float)
    assert params.parse_text("first_only", "true", False) is True
    assert params.parse_text("model", "bert-base-uncased", "minilm") == "bert-base-uncased"
    assert params.parse_text("device", "", "") == ""
    assert params.parse_text("device", "'cuda:1'", "") == "cuda:1"
    with pytest.raises(params.ParameterError, match=r"max_sentences='abc': expected an integer"):
        params.parse_text("max_sentences", "abc", 0)
    with pytest.raises(params.ParameterError, match="expected an integer"):
        params.parse_text("max_sentences", "2.5", 0)
    with pytest.raises(params.ParameterError, match="expected True or False"):
        params.parse_text("first_only", "1", False)
    with pytest.raises(params.ParameterError, match="expected an integer"):
        params.check_value("n_segments", "24", 1000)  # a profile typo: text for a count


@pytest.mark.parametrize("name, value, default, expected", [
    ("min_count", -5, 100, r"min_count=-5: expected an integer >= 0"),
    ("n_segments", 0, 1000, r">= 1"),
    ("seed", -1, 0, r"seed=-1: expected an integer in \[0, 4294967295\]"),
    ("thr_prev", 1.5, 0.5, r"in \[0, 1\]"),
    ("lr", 0, 0.002, r"> 0"),
    ("n_folds", 1, 5, r">= 2"),
    ("smoothing", float("nan"), 0.001, r">= 0"),
    ("device", "gpu", "", r"'cpu', 'cuda', 'cuda:N'"),
    ("ewt_splits", "dev,tset", "dev,test", r"comma-separated list of 'train', 'dev', 'test'"),
    ("block_grid", "0.9,1.5", "0.9,0.95,0.99", r"shares in \[0, 1\]"),
    ("truncation", "trunc", "truncate", r"one of 'truncate', 'skip'"),
    ("train_subsets", "SST-2:0", "SST-2:8000", r"TASK:N entries"),
    ("train_subsets", "SST2:10", "", r"TASK:N entries"),
    ("max_train", -1, 0, r"an integer >= 0"),
    ("tasks", "MRPC,QQQ", "MRPC", r"comma-separated list of GLUE tasks"),
    ("multi_seed_tasks", "MRPC,", "", r"'' or a comma-separated list"),
    ("modes", "uniform,mean", "uniform,zero", r"'uniform', 'zero'"),
    ("framenet_heads", "0-3", "", r"1-based head labels"),
    ("alpha", 0, 0.05, r"in \(0, 1\]"),
])
def test_out_of_range_values_are_refused(name, value, default, expected):
    with pytest.raises(params.ParameterError, match=expected):
        params.check_value(name, value, default)


def test_in_range_values_pass():
    assert params.check_value("device", "cuda:0", "") == "cuda:0"
    assert params.check_value("wikitext_splits", "train,valid", "valid,test") == "train,valid"
    assert params.check_value("block_grid", "0.5,1,.75", "0.9") == "0.5,1,.75"
    assert params.check_value("min_offset", -10, -3) == -10


def test_notebook_06_07_plan_values_pass():
    assert params.check_value("train_subsets", "SST-2:8000,CoLA:4000", "") == "SST-2:8000,CoLA:4000"
    assert params.check_value("train_subsets", "", "SST-2:8000") == ""
    assert params.check_value("max_train", 200, 0) == 200  # notebook 04's count
    with pytest.raises(params.ParameterError, match="expected a string"):
        params.check_value("train_subsets", 200, "SST-2:8000")  # each notebook keeps its type
    assert params.check_value("multi_seed_tasks", "", "MRPC,RTE") == ""
    assert params.check_value("framenet_heads", "3-2,10-12", "") == "3-2,10-12"


def test_task_names_follow_the_metrics_table():
    from analysis_utils.data.glue_metrics import TASKS

    assert params.GLUE_TASKS == tuple(TASKS)
    params.check_value("tasks", ",".join(TASKS), "MRPC")


def test_ordered_pairs():
    params.check_ordered({"min_offset": -3, "max_offset": 3})
    with pytest.raises(params.ParameterError, match="min_offset=5 is above max_offset=3"):
        params.check_ordered({"min_offset": 5, "max_offset": 3})


def test_did_you_mean():
    assert "did you mean 'min_count'" in params.did_you_mean("min_cont", ["min_count", "seed"])
    assert params.did_you_mean("zzz", ["min_count"]) == ""
