"""Moved to :mod:`analysis_utils.runplan.finetunes`; this re-export keeps notebooks 06 and 07's
``from analysis_utils.training import plan`` working until they import the new path.

It is the one import from ``training`` up into ``runplan`` that the layering allows
(``MOVED`` in :mod:`analysis_utils.imports`); ``tests/test_imports.py`` fails once no notebook
imports this path any more, and then this file is deleted.
"""

from ..runplan.finetunes import *  # noqa: F403
from ..runplan.finetunes import __all__  # noqa: F401
