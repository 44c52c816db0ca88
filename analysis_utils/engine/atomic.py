"""Atomic file writes, the one way the package replaces a file: the new content goes to a
temporary file beside the target, is flushed to disk, and then ``os.replace`` swaps it in.
A reader, or a run killed half-way, sees the old file or the new one, never half of one,
and a failed write leaves neither a temporary file nor a damaged target behind.

The temporary file is created like any other file (permissions from the umask), so a
replaced README or notebook keeps the permissions a normal write would give it.
"""
from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def replacing(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary path beside ``path`` for the caller to write; when the block
    ends without an exception the file is flushed to disk and replaces ``path``, otherwise
    it is removed and the exception goes on. ``path``'s folder is created if missing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.part")
    try:
        yield tmp
        if not tmp.is_file():
            raise FileNotFoundError(f"nothing was written to {tmp} for {path}")
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically (see the module docstring)."""
    with replacing(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> None:
    """Replace ``path`` by ``text`` atomically (see the module docstring)."""
    write_bytes(path, text.encode(encoding))
