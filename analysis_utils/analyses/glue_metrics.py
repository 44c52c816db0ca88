"""Moved to :mod:`analysis_utils.data.glue_metrics`, where the training layer can import it
without importing upward. This name stays only for notebook 06, which imports
``analysis_utils.analyses.glue_metrics``; new code imports ``analysis_utils.data.glue_metrics``.
"""

from ..data.glue_metrics import *  # noqa: F401,F403
from ..data.glue_metrics import __all__  # noqa: F401
