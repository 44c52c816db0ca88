"""Figures, one module per analysis: ``surface`` (Clark Figures 1-4), ``syntax`` (Figure 5
and relation heatmaps), ``probes`` (Section 5), ``maptypes`` (MDS of heads, contact sheets,
map-type shares); ``grid`` draws every layer x head heatmap."""
