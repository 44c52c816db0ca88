"""Tiny randomly initialised encoders of several families and shapes, built offline, for the
model matrix (tests/test_model_matrix.py; issue 44).

Each builder writes a folder that ``load_model(folder)`` reads through the same code path as a
hub checkpoint: ``config.json``, weights (``save_pretrained``) and a tokenizer. WordPiece
families (BERT, DistilBERT, ALBERT, ELECTRA, MPNet) take the packaged all-MiniLM-L6-v2's
uncased vocabulary; the RoBERTa-family model gets a byte-level BPE tokenizer trained here, with
``tokenizers``, on the bundled WikiText-2 text (no download).

Run as a script to build every model into a folder for manual runs:
``python tests/matrix_models.py /tmp/matrix-models``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

# name -> (family, layers, heads): the matrix of issue 44.
MATRIX = {
    "bert-4x4": ("bert", 4, 4),
    "bert-12x2": ("bert", 12, 2),
    # MiniLM's shape with other weights: the hand labels' (layer, head) positions all exist, so
    # only the guard (identity, not shape) keeps 05 and 06 from training on other heads' maps
    "bert-6x12": ("bert", 6, 12),
    "distilbert-3x4": ("distilbert", 3, 4),
    "roberta-4x4": ("roberta", 4, 4),
    "albert-4x4": ("albert", 4, 4),
    "electra-4x4": ("electra", 4, 4),
    "mpnet-4x4": ("mpnet", 4, 4),
}
HIDDEN_PER_HEAD = 8
MAX_POSITIONS = 512
BPE_VOCAB = 2000


def _wordpiece_tokenizer(folder: Path, tokenizer_class: str | None = None,
                         input_names: list[str] | None = None):
    """The packaged uncased WordPiece tokenizer saved into ``folder``; ``tokenizer_class`` and
    ``input_names`` rewrite its tokenizer_config.json (MPNet and DistilBERT take no segment
    ids)."""
    from transformers import AutoTokenizer

    from analysis_utils.engine.models import minilm_path, quiet_loading

    with quiet_loading(True):
        tok = AutoTokenizer.from_pretrained(minilm_path())
        tok.save_pretrained(folder)
    cfg_path = folder / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    if tokenizer_class:
        cfg["tokenizer_class"] = tokenizer_class
    if input_names:
        cfg["model_input_names"] = input_names
    cfg["model_max_length"] = MAX_POSITIONS
    cfg_path.write_text(json.dumps(cfg, indent=2))
    return len(tok)


def _bpe_tokenizer(folder: Path) -> int:
    """A byte-level BPE tokenizer (RoBERTa's kind, <s> ... </s>) trained on the bundled
    WikiText-2 text (valid + test, the only splits bundled), saved into ``folder``; returns its vocabulary size."""
    from tokenizers import ByteLevelBPETokenizer
    from tokenizers.processors import RobertaProcessing
    from transformers import RobertaTokenizerFast

    from analysis_utils import paths

    files = [str(f) for f in sorted((paths.data_dir() / "wikipedia").rglob("*.raw"))]
    if not files:
        raise FileNotFoundError(f"no WikiText-2 text under {paths.data_dir()}/wikipedia")
    bpe = ByteLevelBPETokenizer()
    bpe.train(files, vocab_size=BPE_VOCAB, min_frequency=2, show_progress=False,
              special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    # RobertaTokenizerFast(vocab_file=...) ignores the files in transformers 5: wrap the
    # trained tokenizer object, with RoBERTa's framing <s> A </s></s> B </s>.
    inner = bpe._tokenizer
    inner.post_processor = RobertaProcessing(("</s>", 2), ("<s>", 0))
    tok = RobertaTokenizerFast(tokenizer_object=inner, bos_token="<s>", eos_token="</s>",
                               sep_token="</s>", cls_token="<s>", pad_token="<pad>",
                               unk_token="<unk>", mask_token="<mask>",
                               model_max_length=MAX_POSITIONS - 2)
    tok.save_pretrained(folder)
    return len(tok)


def build(name: str, folder: str | Path, seed: int = 0) -> Path:
    """Write model ``name`` of :data:`MATRIX` (random weights from ``seed``) into ``folder``."""
    from transformers import (
        AlbertConfig,
        AlbertModel,
        BertConfig,
        BertModel,
        DistilBertConfig,
        DistilBertModel,
        ElectraConfig,
        ElectraModel,
        MPNetConfig,
        MPNetModel,
        RobertaConfig,
        RobertaModel,
    )

    family, layers, heads = MATRIX[name]
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    hidden = HIDDEN_PER_HEAD * heads
    common = dict(hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=2 * hidden, max_position_embeddings=MAX_POSITIONS)
    if family == "roberta":
        vocab = _bpe_tokenizer(folder)
        cfg, cls = RobertaConfig(vocab_size=vocab, **{**common, "max_position_embeddings":
                                                      MAX_POSITIONS + 2},
                                 pad_token_id=1, bos_token_id=0, eos_token_id=2,
                                 type_vocab_size=1), RobertaModel
    elif family == "distilbert":
        vocab = _wordpiece_tokenizer(folder, "DistilBertTokenizer",
                                     ["input_ids", "attention_mask"])
        cfg, cls = DistilBertConfig(vocab_size=vocab, dim=hidden, n_layers=layers,
                                    n_heads=heads, hidden_dim=2 * hidden,
                                    max_position_embeddings=MAX_POSITIONS), DistilBertModel
    elif family == "mpnet":
        vocab = _wordpiece_tokenizer(folder, "MPNetTokenizer", ["input_ids", "attention_mask"])
        cfg, cls = MPNetConfig(vocab_size=vocab, **{**common, "max_position_embeddings":
                                                    MAX_POSITIONS + 2}), MPNetModel
    else:
        vocab = _wordpiece_tokenizer(folder)
        config_cls, cls = {"bert": (BertConfig, BertModel),
                           "albert": (AlbertConfig, AlbertModel),
                           "electra": (ElectraConfig, ElectraModel)}[family]
        extra = {"embedding_size": hidden} if family in ("albert", "electra") else {}
        cfg = config_cls(vocab_size=vocab, **common, **extra)
    torch.manual_seed(seed)
    cls(cfg).save_pretrained(folder)
    return folder


if __name__ == "__main__":
    out = Path(sys.argv[1])
    for n in sys.argv[2:] or MATRIX:
        print(n, build(n, out / n))
