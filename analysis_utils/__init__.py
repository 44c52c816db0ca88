"""analysis_utils: the package behind the notebooks that reproduce Clark et al. (2019) and
Kovaleva et al. (2019) on what Transformer attention heads do.

Folders: ``data`` (checksummed gold data and one reader per corpus), ``engine`` (model
loading, attention extraction and its on-disk store, token -> word maps), ``analyses`` (pure
functions over attention arrays, one module per paper section), ``plotting`` (figures).
Top level: ``paths``, ``profiles``, ``pipeline`` (papermill driver), ``report`` (outputs with
provenance).
"""

__version__ = "0.1.0"
