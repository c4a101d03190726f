"""Atomic file writing: readers see the old file or the whole new one, never half of it.

Temporary files are created as open() creates files (mode 0666 less the umask), not 0600 as
tempfile.mkstemp makes them, so the renamed file has the mode of any other file written.
"""
import contextlib
import hashlib
import os
import secrets


def _new_file_beside(path: str) -> str:
    """Creates a new empty file with a random hidden name in path's folder; returns its path."""
    directory, name = os.path.split(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:  # O_EXCL: never an existing file; 0o666: the kernel applies the umask
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"could not create a temporary file beside {path}")


@contextlib.contextmanager
def atomic_path(path):
    """Yields the path of a new empty temporary file beside `path` to write; renamed onto
    `path` when the block ends, removed if it raises."""
    tmp = _new_file_beside(os.fspath(path))
    try:
        yield tmp
        os.replace(tmp, os.fspath(path))
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_text_atomic(path, text: str) -> str:
    """Write `text` (UTF-8) to a temporary file beside `path`, then rename it into place."""
    path = os.fspath(path)
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    return path


def file_fingerprint(path) -> str:
    """SHA-256 of a file's bytes (e.g. the tokenizer model), for cache keys."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
