"""engine.memory.release: freed heap pages go back to the operating system."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from analysis_utils.engine import memory


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_release_returns_freed_heap_pages_to_the_os():
    """4,000 arrays of 64 kB (below glibc's mmap threshold, so on the heap) with a live one
    above them: freeing them leaves 256 MB resident until :func:`memory.release`."""
    chunks = [np.ones(8_000) for _ in range(4_000)]
    pin = np.ones(8_000)  # a live allocation above them: free() alone cannot shrink the heap
    del chunks
    held = memory.rss_mb()
    assert memory.release() is True
    after = memory.rss_mb()
    assert held - after > 150, f"RSS {held:.0f} MB before release, {after:.0f} MB after"
    assert pin.sum() == 8_000


def test_peak_rss_remembers_a_freed_block_that_the_current_rss_no_longer_holds():
    """The peak the provenance records (``ru_maxrss``) still counts a 64 MB block after it is
    freed and the current RSS has dropped: a reader of the current RSS would fail here."""
    import numpy as np

    from analysis_utils.publish import notebook, report

    block = np.ones(64 * 1024 * 1024 // 8)  # touched pages: 64 MB resident
    held = memory.rss_mb()
    del block
    memory.release()
    after = memory.rss_mb()
    assert after < held - 32  # the block left the process...
    assert memory.peak_rss_mb() >= held - 1  # ...but not the peak
    assert notebook.peak_rss_mb is memory.peak_rss_mb  # one reader, re-exported for notebooks
    assert report.peak_rss_mb() == round(memory.peak_rss_mb(), 1)
