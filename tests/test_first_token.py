"""The last layer's feed-forward step on the first token only (engine.first_token): the logits
agree with the full computation to float rounding on every family it applies to, it leaves the
model as it found it, and it refuses a model whose head reads other positions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    DistilBertConfig,
    DistilBertForSequenceClassification,
    ElectraConfig,
    ElectraForSequenceClassification,
    RobertaConfig,
    RobertaForSequenceClassification,
)

from analysis_utils import training
from analysis_utils.analyses import disabling as dis
from analysis_utils.engine import first_token as ftk

SHAPE = dict(vocab_size=40, hidden_size=16, num_hidden_layers=3, num_attention_heads=2,
             intermediate_size=32, num_labels=3, initializer_range=0.4)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    with training.torch_threads(1):
        yield


def _model(family: str) -> nn.Module:
    torch.manual_seed(0)
    if family == "bert":
        m = BertForSequenceClassification._from_config(BertConfig(**SHAPE),
                                                       attn_implementation="eager")
    elif family == "roberta":
        m = RobertaForSequenceClassification._from_config(
            RobertaConfig(**SHAPE, pad_token_id=1, max_position_embeddings=64),
            attn_implementation="eager")
    elif family == "electra":
        m = ElectraForSequenceClassification._from_config(
            ElectraConfig(**SHAPE, embedding_size=16), attn_implementation="eager")
    else:
        m = DistilBertForSequenceClassification(DistilBertConfig(
            vocab_size=40, dim=16, n_layers=3, n_heads=2, hidden_dim=32, num_labels=3,
            initializer_range=0.4, attn_implementation="eager"))
    return m.eval()


def _inputs(n: int = 24):
    rng = np.random.default_rng(0)
    return [{"input_ids": [2, *rng.integers(5, 39, int(rng.integers(3, 20))), 3]}
            for _ in range(n)]


def _batch(inputs):
    from analysis_utils.engine import attention as ea

    return ea.collate(ea.as_inputs(inputs[:4]), 0, torch.device("cpu"), False)


@pytest.mark.parametrize("family", ["bert", "roberta", "electra"])
def test_logits_agree_and_the_model_is_restored(family):
    model = _model(family)
    assert ftk.applies(model)
    inputs = _inputs()
    changes = ([dis.baseline_change()] + dis.head_changes(3, 2, "uniform")
               + dis.layer_changes(3, 2, "zero"))
    full = dis.evaluate_changes(model, inputs, changes, first_token=False)
    short = dis.evaluate_changes(model, inputs, changes, first_token=True)
    np.testing.assert_allclose(short, full, rtol=ftk.RTOL, atol=ftk.ATOL)
    assert np.abs(full[1:] - full[0]).max() > 1e-3  # the changes do move the logits
    # restored: the class's own method, the full computation again
    last = ftk._last_layer(model)
    assert "feed_forward_chunk" not in vars(last)
    assert np.array_equal(dis.evaluate_changes(model, inputs, changes, first_token=False), full)


def test_it_saves_the_work_it_claims():
    """The last layer's feed-forward step sees one position per example, not all of them."""
    model = _model("bert")
    last = ftk._last_layer(model)
    seen = []
    hook = last.intermediate.register_forward_hook(lambda m, a, out: seen.append(a[0].shape))
    batch = _batch(_inputs())
    try:
        with ftk.first_token_last_layer(model, check=batch) as on, torch.inference_mode():
            model(**batch)
    finally:
        hook.remove()
    # the check's full pass, the check's short pass, then the caller's pass
    assert on and [x[1] for x in seen] == [batch["input_ids"].shape[1], 1, 1]


def test_a_family_without_the_step_is_left_alone():
    model = _model("distilbert")
    assert not ftk.applies(model)
    with ftk.first_token_last_layer(model, check=_batch(_inputs())) as on:
        assert on is False


class _MeanPooled(nn.Module):
    """A BERT encoder whose head averages every position: the shortcut would change it."""

    def __init__(self):
        super().__init__()
        self.bert = _model("bert").bert
        self.config = self.bert.config
        self.head = nn.Linear(16, 3)

    def forward(self, **kw):
        h = self.bert(**kw).last_hidden_state.mean(1)
        return type("Out", (), {"logits": self.head(h)})()


def test_a_head_that_reads_other_positions_is_caught_by_the_check():
    model = _MeanPooled().eval()
    batch = _batch(_inputs())
    with ftk.first_token_last_layer(model, check=batch) as on:
        assert on is False
        with torch.inference_mode():
            inside = model(**batch).logits
    with torch.inference_mode():
        assert torch.equal(inside, model(**batch).logits)
