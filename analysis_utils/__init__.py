"""analysis_utils: the package behind the notebooks that reproduce Clark et al. (2019) and
Kovaleva et al. (2019) on what Transformer attention heads do.

Modules mirror the papers: ``paths``, ``datasets`` (manifest, checks, fetching), ``corpora``
(typed readers), ``models``, ``attention`` (extraction engine and on-disk store), ``surface``,
``gradients``, ``syntax``, ``coref``, ``plotting``, ``report``, ``pipeline``.
"""

__version__ = "0.1.0"
