"""Moved to :mod:`analysis_utils.publish.pipeline`. This re-export stays only while
``analysis_utils/atlas.py`` (still at the top level) imports ``.pipeline``; delete it when the
atlas moves into ``publish/`` (``tests/test_imports.py`` says when)."""

from .publish.pipeline import *  # noqa: F403
from .publish.pipeline import destination  # noqa: F401
