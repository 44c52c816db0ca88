"""Attention maps with their padding, as the authors' released code compared them
(Kovaleva et al. 2019, Section 4.3; the padded variant of
:func:`analysis_utils.analyses.drift.cosine_similarity`).

The attention store keeps only the real-token block of each map. The released code ran every
input padded to ``max_seq_length`` (128) and flattened the whole ``(128, 128)`` map. Padding
*columns* get (almost exactly) zero weight, since the attention mask hides padded keys, but
padding *rows* do not: every padded position still attends, with weights summing to 1, over
the real tokens. Zeros appended to both maps would leave a cosine similarity unchanged; it is
these ``P - n`` extra rows, produced by each model, that move it. So the padded variant needs
the model's own padded rows, which this module computes on the fly (never cached: they serve
only this comparison; about a minute per 1,000 inputs for MiniLM on two CPU cores).

The real-token block of a padded map equals the store's map (padding keys are masked), up to
float16 rounding in the store.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import torch

from .attention import as_inputs, uses_token_types

__all__ = ["iter_padded_attention"]


def iter_padded_attention(loaded, items: Sequence, pad_to: int = 128, *,
                          batch_size: int = 4) -> Iterator[np.ndarray]:
    """Yield, input by input, the ``(layers, heads, pad_to, pad_to)`` float32 maps of
    ``loaded`` (a models.LoadedModel) on ``items`` padded to ``pad_to`` tokens with the
    tokenizer's pad id, attention mask 0 on the padding (what ``max_seq_length`` padding
    did). Only one batch of maps is held at a time. ``batch_size`` 4: two of these streams
    zipped over 200 inputs of MiniLM at 128 tokens peak +200 MB (at 16: +590 MB, and no
    faster on CPU; measured in notebook 06's padding cell).

    items: as for :func:`~analysis_utils.engine.attention.extract_attention`. Inputs longer
    than ``pad_to`` are refused (encode them with ``max_tokens <= pad_to``).
    """
    inputs = as_inputs(items)
    long = [i for i, x in enumerate(inputs) if len(x) > pad_to]
    if long:
        raise ValueError(f"{len(long)} inputs are longer than pad_to={pad_to} (first: "
                         f"#{long[0]}, {len(inputs[long[0]])} tokens); encode with "
                         f"max_tokens <= {pad_to}")
    pad_id = loaded.tokenizer.pad_token_id or 0
    model, device = loaded.model, loaded.device
    # Inference mode is entered per batch and left before yielding: a context held across a
    # ``yield`` leaks into the caller, and two such generators zipped together (this module's
    # use) restore each other's saved state in the wrong order, leaving gradients disabled for
    # the rest of the process.
    for start in range(0, len(inputs), batch_size):
        with torch.inference_mode():
            chunk = inputs[start:start + batch_size]
            ids = torch.full((len(chunk), pad_to), pad_id, dtype=torch.long)
            mask = torch.zeros((len(chunk), pad_to), dtype=torch.long)
            types = torch.zeros((len(chunk), pad_to), dtype=torch.long)
            for b, x in enumerate(chunk):
                ids[b, :len(x)] = torch.tensor(x.input_ids)
                mask[b, :len(x)] = 1
                if x.token_type_ids is not None:
                    types[b, :len(x)] = torch.tensor(x.token_type_ids)
            extra = ({"token_type_ids": types.to(device)}
                     if uses_token_types(model) else {})
            out = model(input_ids=ids.to(device), attention_mask=mask.to(device), **extra,
                        output_attentions=True)
            if not out.attentions:
                raise RuntimeError("the model returned no attentions; load it with "
                                   "attn_implementation='eager' (models.load_model does)")
            maps = torch.stack([a.float() for a in out.attentions], 1).cpu().numpy()
            del out
        yield from maps  # (layers, heads, P, P) per input
