"""The readers' format errors, in one place for every corpus reader of ``analysis_utils.data``.
A message always reads ``file:line: what is wrong`` (the CoNLL-U, GLUE, WikiText-2, OntoGUM
and FrameNet readers all raise these), so a user can open the file at the line."""
from __future__ import annotations

__all__ = ["CorpusFormatError", "GlueFormatError"]


class CorpusFormatError(ValueError):
    """A corpus file breaks its format; the message is ``file:line: what is wrong``."""


class GlueFormatError(CorpusFormatError):
    """A GLUE file breaks its format; the message is ``file:line: what is wrong``."""
