"""Atomic file writing: readers see the old file or the whole new one, never half of it."""
import os
import tempfile


def write_text_atomic(path, text: str) -> str:
    """Write `text` to a temporary file beside `path`, then rename it into place."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path
