"""The last layer's feed-forward block on the first token only, where only the logits are read.

A sequence classifier of the BERT family reads the last layer at one position, the first token
(``[CLS]``, ``<s>``): the pooler, or the classification head, takes ``hidden[:, 0]``. The
last layer's feed-forward block (two thirds of a layer's multiply-adds) at every other position
is therefore computed and thrown away whenever only the logits are wanted: in notebook 07's
disabling sweeps and pruning curves, each of which runs the layers above a change hundreds of
times. :func:`first_token_last_layer` runs that block on the first position alone (its output
is broadcast to the others, which nothing reads) while the block is active.

It applies only where it can be checked, and checks itself:

- the model's last layer has the feed-forward step transformers' BERT-family layers share,
  ``feed_forward_chunk`` (BERT, RoBERTa, ELECTRA, XLM-R...; not chunked), else nothing changes;
- on ``check`` (a batch of the caller's own inputs) the logits with and without it must agree
  to float rounding (:data:`RTOL`, :data:`ATOL`), else nothing changes: a head that reads other
  positions (mean pooling, a custom model) is caught here, not trusted.

Attention maps, hidden states and anything else read beside the logits are not what this
computes: use it only around calls whose logits alone are kept. ``benchmarks/bench_disabling.py``
prints the time it saves.

>>> with first_token_last_layer(model, check=batch) as on:        # doctest: +SKIP
...     logits = model(**batch).logits
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping

import torch
from torch import nn

from .interventions import layer_list, unwrap_model

#: How close the logits with and without the shortcut must be on the check batch (float32
#: rounding of a different matrix shape; measured differences are about 1e-6).
RTOL, ATOL = 1e-4, 1e-5

__all__ = ["first_token_last_layer", "applies", "RTOL", "ATOL"]


def _last_layer(model: nn.Module) -> nn.Module | None:
    model = unwrap_model(model)
    n = getattr(getattr(model, "config", None), "num_hidden_layers", None)
    layers = layer_list(model, int(n)) if n else None
    return None if layers is None else layers[-1]


def applies(model: nn.Module) -> bool:
    """Whether the model's last layer has the unchunked ``feed_forward_chunk`` step."""
    last = _last_layer(model)
    return (last is not None and callable(getattr(last, "feed_forward_chunk", None))
            and not getattr(last, "chunk_size_feed_forward", 0))


@contextlib.contextmanager
def _patched(last: nn.Module) -> Iterator[None]:
    step = last.feed_forward_chunk

    def first_only(attention_output: torch.Tensor) -> torch.Tensor:
        out = step(attention_output[:, :1])
        return out.expand(-1, attention_output.shape[1], -1)

    last.feed_forward_chunk = first_only
    try:
        yield
    finally:
        del last.feed_forward_chunk  # the class's method again


@contextlib.contextmanager
def first_token_last_layer(model: nn.Module, check: Mapping | None = None) -> Iterator[bool]:
    """Within the block, the last layer's feed-forward step runs on the first position only;
    yields whether it does. ``check``: keyword inputs of one batch; the shortcut is kept only
    when the logits agree with the full computation on it (module docstring). Without
    ``check`` nothing is verified: tests and benchmarks only."""
    model = unwrap_model(model)
    last = _last_layer(model) if applies(model) else None
    if last is None:
        yield False
        return
    if check is not None:
        with torch.inference_mode():
            full = model(**check).logits
            with _patched(last):
                short = model(**check).logits
        if full.shape != short.shape or not torch.allclose(full, short, rtol=RTOL, atol=ATOL):
            yield False
            return
    with _patched(last):
        yield True
