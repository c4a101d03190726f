"""The one file layer: every path a user gives (local, gs://, ram://, any filesystem TensorFlow
knows) is read and written here, through tf.io.gfile, with object-store semantics.

What is atomic where (docs/cloud_tpu.md):
- local single files are written to a hidden temporary file beside the target, then renamed
  into place (`os.replace`): readers see the old file or the whole new one;
- remote single files (gs://...) are written straight to their final path: an object appears
  whole when its upload closes, a rename would be a copy, and there is no O_EXCL;
- multi-file outputs write the file that marks them complete last (a checkpoint's `.index`,
  the `checkpoint` state, a `DONE` marker), and readers trust nothing without it.
Every written local file follows the umask (mode 0666 less the umask), whatever the library
that wrote it (tempfile and safetensors make 0600 files).
Long because every file access of the project goes through here: one small function per
operation, each with its local and remote branch.

>>> from albert_tf.core import fileio
>>> fileio.write_text("ram://bucket/run/notes.txt", "hello")
'ram://bucket/run/notes.txt'
>>> fileio.read_text(fileio.join("ram://bucket/run", "notes.txt"))
'hello'
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import posixpath
import secrets
import shutil
import tempfile

import numpy as np

from albert_tf.core.errors import StorageError

_LOCAL_SCHEMES = ("", "file")
_FULL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS}
_FULL_TF_ERRORS = {"ResourceExhaustedError"}  # TensorFlow's "No space left on device"


def storage_error(path, error):
    """A StorageError naming `path` when `error` says the storage is full or read-only (local
    ENOSPC, TensorFlow's ResourceExhaustedError, ...); None for any other error."""
    full = (isinstance(error, OSError) and error.errno in _FULL_ERRNOS) or type(
        error
    ).__name__ in _FULL_TF_ERRORS
    if not full:
        return None
    cause = getattr(error, "strerror", None) or getattr(error, "message", None) or str(error)
    cause = str(cause).strip().splitlines()[0] if str(cause).strip() else type(error).__name__
    return StorageError(
        f"cannot write {os.fspath(path)}: {cause}; nothing of it was kept; free "
        "space (or fix access), then run the same command again"
    )


@contextlib.contextmanager
def _reported(path):
    """Within: a full or read-only storage error becomes one StorageError naming `path`."""
    try:
        yield
    except Exception as e:  # noqa: BLE001  OSError, or tf.errors.* without importing tf here
        mapped = storage_error(path, e)
        if mapped is None:
            raise
        raise mapped from None


def _gfile():
    # config and the data builder's workers import this module without needing TensorFlow
    # deferred: TensorFlow loads on the first file operation
    import tensorflow as tf

    return tf.io.gfile


def scheme(path) -> str:
    """The filesystem scheme of a path ("gs", "ram", ...), "" for a plain local path."""
    path = os.fspath(path)
    head, sep, _ = path.partition("://")
    return head if sep and "/" not in head else ""


def is_remote(path) -> bool:
    """Whether `path` lives on a filesystem other than the local disk (gs://, ram://, hdfs://)."""
    return scheme(path) not in _LOCAL_SCHEMES


def has_filesystem(path) -> bool:
    """Whether TensorFlow has a filesystem for `path`'s scheme in this process.

    Args:
        path: A path or URL.

    Returns:
        False for a scheme TensorFlow does not know (s3:// without tensorflow-io, a typo such
        as gcs://); True otherwise, whether or not the path exists.

    Example:

    >>> has_filesystem("/tmp/x"), has_filesystem("ram://x"), has_filesystem("nosuch://b/x")
    (True, True, False)
    """
    if not is_remote(path):
        return True
    # deferred: TensorFlow loads on the first file operation
    import tensorflow as tf

    try:
        tf.io.gfile.exists(os.fspath(path))
    except tf.errors.UnimplementedError:
        return False
    except Exception:  # noqa: BLE001  (no network, no permission: that is for the real access)
        return True
    return True


def _local(path) -> str:
    path = os.fspath(path)
    return path[len("file://") :] if path.startswith("file://") else path


def join(base, *parts) -> str:
    """os.path.join for local paths, '/'-joining for remote ones (never a backslash)."""
    base = os.fspath(base)
    if is_remote(base):
        return posixpath.join(base, *map(os.fspath, parts))
    return os.path.join(base, *map(os.fspath, parts))


def dirname(path) -> str:
    path = os.fspath(path)
    if is_remote(path):
        fs, _, rest = path.partition("://")
        return f"{fs}://{posixpath.dirname(rest.rstrip('/'))}"
    return os.path.dirname(path)


def basename(path) -> str:
    path = os.fspath(path)
    return posixpath.basename(path.rstrip("/")) if is_remote(path) else os.path.basename(path)


def abspath(path) -> str:
    """Local paths made absolute (so they resolve from any working folder); remote ones as given."""
    path = os.fspath(path)
    return path if is_remote(path) else os.path.abspath(_local(path))


def exists(path) -> bool:
    return _gfile().exists(os.fspath(path))


def isdir(path) -> bool:
    return _gfile().isdir(os.fspath(path))


def isfile(path) -> bool:
    """An existing file (ram:// says a checkpoint prefix `ckpt-1` is a folder: ask by listing)."""
    path = os.fspath(path)
    gfile = _gfile()
    if not gfile.exists(path):
        return False
    if not is_remote(path):
        return os.path.isfile(_local(path))
    if not gfile.isdir(path):
        return True
    parent = dirname(path)
    try:
        return basename(path) in gfile.listdir(parent) and not gfile.listdir(path)
    except Exception:  # noqa: BLE001  an unlistable parent: trust isdir
        return False


def is_folder(path) -> bool:
    """An existing folder, not merely a prefix of some path (ram:// calls `run/ckpt` a folder
    when `run/ckpt-1.index` exists: there, ask the parent's listing)."""
    path = os.fspath(path)
    if not isdir(path):
        return False
    parent = dirname(path)
    if not is_remote(path) or parent.endswith("://"):
        return True
    try:
        return basename(path) in listdir(parent)
    except Exception:  # noqa: BLE001  an unlistable parent: trust isdir
        return True


def folder_of(path) -> str:
    """The folder a path is (itself, when it is a folder) or lives in (a checkpoint prefix or a
    file: its parent)."""
    path = os.fspath(path)
    return path if is_folder(path) else dirname(abspath(path))


def getsize(path) -> int:
    return int(_gfile().stat(os.fspath(path)).length)


def makedirs(path) -> str:
    path = os.fspath(path)
    _gfile().makedirs(path)
    return path


def listdir(path) -> list:
    """Names in a folder, without the trailing '/' some object stores add to sub-folders (and
    without the names ram:// lists under `run/eval` for a sibling file `run/eval_results.txt`)."""
    path = os.fspath(path)
    names = sorted(name.rstrip("/") for name in _gfile().listdir(path))
    if scheme(path) == "ram":
        names = [n for n in names if _gfile().exists(posixpath.join(path, n))]
    return names


def glob(pattern) -> list:
    return sorted(_gfile().glob(os.fspath(pattern)))


def remove(path, missing_ok: bool = True) -> None:
    path = os.fspath(path)
    try:
        _gfile().remove(path)
    except Exception as e:  # noqa: BLE001  tf.errors.NotFoundError, without importing tf here
        if not (missing_ok and type(e).__name__ == "NotFoundError"):
            raise


def rmtree(path) -> None:
    path = os.fspath(path)
    if _gfile().exists(path):
        _gfile().rmtree(path)


def _replaceable(path) -> None:
    """Before a remote file is written or copied onto: ram:// (the tests' stand-in for a bucket)
    appends to an existing file where an object store replaces the object when the new upload
    closes, so there the old file is removed first. Nothing to do anywhere else."""
    if scheme(path) == "ram" and _gfile().exists(path) and not _gfile().isdir(path):
        _gfile().remove(path)


def copy(src, dst, overwrite: bool = True) -> str:
    """Copy one file between any two filesystems; the copy follows the umask."""
    src, dst = os.fspath(src), os.fspath(dst)
    if is_remote(dst):
        if overwrite:
            _replaceable(dst)
        _gfile().copy(src, dst, overwrite=overwrite)
    else:
        with atomic_path(dst) as tmp:
            _gfile().copy(src, tmp, overwrite=True)
    return dst


def open_file(path, mode: str = "r"):
    """A file object on any filesystem (tf.io.gfile.GFile): text for "r"/"w", bytes for "rb"/"wb".
    For writing prefer write_text/write_bytes or atomic_path, which keep readers safe."""
    return _gfile().GFile(os.fspath(path), mode)


def read_bytes(path) -> bytes:
    """A whole file's bytes; a missing file is FileNotFoundError, as open() raises."""
    try:
        with open_file(path, "rb") as f:
            return f.read()
    except Exception as e:  # noqa: BLE001  tf.errors.NotFoundError, without importing tf here
        if type(e).__name__ == "NotFoundError":
            raise FileNotFoundError(f"No such file: {os.fspath(path)}") from None
        raise


def read_text(path) -> str:
    return read_bytes(path).decode("utf-8")


def read_json(path):
    return json.loads(read_text(path))


def umask() -> int:
    """The process umask (read without changing it for more than an instant)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def follow_umask(path) -> None:
    """Give a local file the mode open() would have given it (0666 less the umask)."""
    if not is_remote(path):
        os.chmod(_local(path), 0o666 & ~umask())


def _new_file_beside(path: str, suffix: str = ".tmp") -> str:
    """Creates a new empty file with a random hidden name in path's folder, ending in `suffix`;
    returns its path."""
    directory, name = os.path.split(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}{suffix}")
        try:  # O_EXCL: never an existing file; 0o666: the kernel applies the umask
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"could not create a temporary file beside {path}")


@contextlib.contextmanager
def atomic_path(path, local: bool = False):
    """Yields a path to write `path`'s content to, with any writer (tf.io.TFRecordWriter and
    other gfile users take remote paths; `local=True` for libraries that need a local file).

    Local target: a new hidden file beside it, renamed onto it when the block ends. Remote
    target: the target itself (an object appears whole when it closes), or with `local=True` a
    local scratch file uploaded to it at the end. Whatever was written is removed if the block
    raises, so a failed write leaves nothing half-written."""
    path = os.fspath(path)
    with _reported(path):
        with _atomic_path(path, local) as tmp:
            yield tmp


@contextlib.contextmanager
def atomic_path_with_suffix(path, suffix: str, local: bool = False):
    """atomic_path for writers that insist on how a file name ends (Keras: `.keras`,
    `.weights.h5`): a local temporary file's name ends in `suffix` too."""
    path = os.fspath(path)
    with _reported(path):
        with _atomic_path(path, local, suffix) as tmp:
            yield tmp


@contextlib.contextmanager
def _atomic_path(path, local, suffix=".tmp"):
    if not is_remote(path):
        tmp = _new_file_beside(_local(path), suffix)
        try:
            yield tmp
            follow_umask(tmp)
            os.replace(tmp, _local(path))
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
        return
    parent = dirname(path)
    if not parent.endswith("://"):
        _gfile().makedirs(parent)
    _replaceable(path)
    if not local:
        try:
            yield path
        except BaseException:
            remove(path)
            raise
        return
    scratch = tempfile.mkdtemp(prefix="albert_tf-upload-")
    try:
        tmp = os.path.join(scratch, basename(path))
        yield tmp
        try:
            _gfile().copy(tmp, path, overwrite=True)
        except BaseException:
            remove(path)
            raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def local_copy(path):
    """Yields a local path holding `path`'s bytes, for libraries that read only local files
    (the path itself when it is local)."""
    path = os.fspath(path)
    if not is_remote(path):
        yield _local(path)
        return
    scratch = tempfile.mkdtemp(prefix="albert_tf-download-")
    try:
        tmp = os.path.join(scratch, basename(path))
        _gfile().copy(path, tmp, overwrite=True)
        yield tmp
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def local_folder_copy(path):
    """Yields a local folder holding every file under the folder `path` (sub-folders too), for
    libraries that read only local folders (the path itself when it is local)."""
    path = os.fspath(path)
    if not is_remote(path):
        yield _local(path)
        return
    scratch = tempfile.mkdtemp(prefix="albert_tf-download-")
    try:
        for root, _, files in _gfile().walk(path):
            rel = root[len(path) :].strip("/")
            target = os.path.join(scratch, *rel.split("/")) if rel else scratch
            os.makedirs(target, exist_ok=True)
            for name in files:
                _gfile().copy(
                    posixpath.join(root, name), os.path.join(target, name), overwrite=True
                )
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def output_folder(path, last=()):
    """Yields a local folder to write a multi-file output for the folder `path` with libraries
    that write only local files. Local `path`: the folder itself (made if missing). Remote: a
    local scratch folder whose files are uploaded when the block ends, those named in `last`
    (relative paths, e.g. the `config.json` readers look for) after all the others, so a reader
    that trusts the folder only with them never sees half of it; nothing is uploaded if the
    block raises."""
    path = os.fspath(path)
    if not is_remote(path):
        yield makedirs(_local(path))
        return
    scratch = tempfile.mkdtemp(prefix="albert_tf-upload-")
    try:
        yield scratch
        files = []
        for root, _, names in os.walk(scratch):
            rel = os.path.relpath(root, scratch)
            files += [
                name if rel == "." else "/".join([*rel.split(os.sep), name]) for name in names
            ]
        order = sorted(files, key=lambda f: (f in last, last.index(f) if f in last else 0, f))
        with _reported(path):
            for rel in order:
                target = posixpath.join(path, rel)
                _gfile().makedirs(dirname(target))
                copy(os.path.join(scratch, *rel.split("/")), target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@contextlib.contextmanager
def scratch_file(data: bytes, name: str = "scratch"):
    """Yields the path of a local temporary file named `name` holding `data`, removed when the
    block ends (for libraries that take only a path, e.g. a tokenizer model held in memory)."""
    scratch = tempfile.mkdtemp(prefix="albert_tf-scratch-")
    try:
        tmp = os.path.join(scratch, name)
        with open(tmp, "wb") as f:
            f.write(data)
        yield tmp
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def rename(src, dst) -> str:
    """Move one file onto `dst` within one filesystem, replacing it: locally one atomic
    os.replace; remote a copy then a delete (no atomic rename there: write remote outputs
    straight to their final path instead)."""
    src, dst = os.fspath(src), os.fspath(dst)
    with _reported(dst):
        if is_remote(dst):
            _gfile().rename(src, dst, overwrite=True)
        else:
            os.replace(_local(src), _local(dst))
    return dst


def write_bytes(path, data: bytes) -> str:
    """Write `data` to `path` so that no reader sees half of it (see the module docstring)."""
    path = os.fspath(path)
    with atomic_path(path) as tmp:
        with open_file(tmp, "wb") as f:
            f.write(data)
    return path


def write_text(path, text: str) -> str:
    """Write `text` (UTF-8) to `path` so that no reader sees half of it."""
    return write_bytes(path, text.encode("utf-8"))


write_text_atomic = write_text  # the name the engine and tasks have used


def write_json(path, obj, **dump_kwargs) -> str:
    return write_text(path, json.dumps(obj, **dump_kwargs))


def write_npz(path, arrays: dict, compressed: bool = False) -> str:
    """NumPy arrays as one `.npz` file at `path` (any filesystem), written as write_bytes does."""
    buffer = io.BytesIO()  # np.savez seeks in its file: build it in memory, then write it
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return write_bytes(path, buffer.getvalue())


def read_npz(path) -> dict:
    """The arrays of the `.npz` file at `path` (any filesystem), as {name: numpy array}."""
    with np.load(io.BytesIO(read_bytes(path))) as data:
        return {name: data[name] for name in data.files}


def create_exclusive(path, text: str) -> bool:
    """Create `path` holding `text` only if it does not exist; False if it does. Local: one
    atomic step (a hard link of a complete temporary file fails if the name exists). Remote:
    object stores have no O_EXCL, so this checks, writes, then reads back: two writers racing
    within one round trip can both see their own text last (docs/cloud_tpu.md)."""
    path = os.fspath(path)
    if is_remote(path):
        if exists(path):
            return False
        write_text(path, text)
        return read_text(path) == text
    with _reported(path):
        return _link_new(path, text)


def _link_new(path, text) -> bool:
    tmp = _new_file_beside(_local(path))
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.link(tmp, _local(path))
        return True
    except FileExistsError:
        return False
    finally:
        os.remove(tmp)


def file_fingerprint(path) -> str:
    """SHA-256 of a file's bytes (e.g. the tokenizer model), for cache keys."""
    digest = hashlib.sha256()
    with open_file(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class _GFileRaw(io.RawIOBase):
    """A tf.io.gfile.GFile opened "rb" as a raw binary stream (for io.BufferedReader)."""

    def __init__(self, gfile):
        super().__init__()
        self._file = gfile

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self._file.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def close(self):
        if not self.closed:
            self._file.close()
        super().close()


def open_binary(path):
    """A file opened "rb" on any filesystem, as open(path, "rb") reads it (iterating yields
    lines split on "\\n" only); remote files are streamed, not downloaded whole. A missing
    file is FileNotFoundError."""
    path = os.fspath(path)
    if not is_remote(path):
        return open(_local(path), "rb")
    try:
        raw = _gfile().GFile(path, "rb")
        raw.size()  # GFile opens lazily: ask now, so a missing file fails here
    except Exception as e:  # noqa: BLE001  tf.errors.NotFoundError, without importing tf here
        if type(e).__name__ == "NotFoundError":
            raise FileNotFoundError(f"No such file: {path}") from None
        raise
    return io.BufferedReader(_GFileRaw(raw), 1 << 20)


def numbered_lines(path, error=ValueError):
    """(1-based line number, text) of each line of a UTF-8 file on any filesystem, without a
    BOM or its LF / CRLF ending (a lone CR inside a line is kept); a line that is not UTF-8 is
    one `error` naming the file, line and byte. Streamed, split on "\n" only."""
    path = os.fspath(path)
    with open_binary(path) as f:
        for lineno, raw in enumerate(f, start=1):
            try:
                line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise error(
                    f"{path}, line {lineno}: not UTF-8 text "
                    f"(byte {raw[e.start]:#04x} at column {e.start + 1})"
                ) from None
            line = line[:-1] if line.endswith("\n") else line
            yield lineno, line[:-1] if line.endswith("\r") else line


def open_text(path, encoding: str = "utf-8", errors: str = "strict"):
    """A text file opened for reading on any filesystem, as open(path, encoding=...) reads it
    (universal newlines: "\\r\\n" and "\\r" end lines too); remote files are streamed, not
    downloaded whole. A missing file is FileNotFoundError."""
    path = os.fspath(path)
    if not is_remote(path):
        return open(_local(path), encoding=encoding, errors=errors)
    return io.TextIOWrapper(open_binary(path), encoding=encoding, errors=errors)


@contextlib.contextmanager
def scratch_folder(beside=None, prefix: str = "albert_tf-scratch-"):
    """Yields a new local folder for scratch files, removed with everything in it when the
    block ends. With a local `beside` path it is a hidden-prefixed folder in that path's folder
    (the same disk, so a finished file can be renamed onto a target there); with a remote or
    no `beside`, in the system's temporary folder."""
    parent = None
    if beside is not None and not is_remote(beside):
        parent = os.path.dirname(os.path.abspath(_local(beside)))
        os.makedirs(parent, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=prefix, dir=parent)
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def sync(path) -> None:
    """Flush a written local file to the disk (os.fsync), so a rename after it survives a
    crash with the content; remote objects are durable once closed (nothing to do)."""
    path = os.fspath(path)
    if is_remote(path):
        return
    with open(_local(path), "rb") as f:
        os.fsync(f.fileno())
