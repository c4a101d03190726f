"""One run per output_dir: a lock file (pid and host) held for a run, so a second run on the
same output_dir fails at once instead of both writing the same checkpoints."""
from __future__ import annotations

import contextlib
import json
import os
import socket

from absl import logging

from albert_tf.engine import distribute
from albert_tf.errors import TrainingError

LOCK_FILE = "albert_tf.lock"  # {"pid", "host"} of the run that holds output_dir


class OutputDirLockedError(TrainingError):
    """Another live run holds output_dir's lock file."""


_HELD_LOCKS: dict = {}  # realpath of a lock file this process holds -> nesting depth


def _read_lock(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _pid_alive(pid: int) -> bool:
    """Whether a process with this pid runs on this host (zombies count as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _holder_alive(holder) -> bool:
    if not holder or not isinstance(holder.get("pid"), int):
        return False  # unreadable lock: its writer died before finishing it
    if holder.get("host") != socket.gethostname():
        return True  # cannot check another host's processes: assume it still runs
    return holder["pid"] != os.getpid() and _pid_alive(holder["pid"])


def _create_lock(path) -> bool:
    """Create the lock file with its content in one step (link fails if it exists)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"pid": os.getpid(), "host": socket.gethostname()}, f)
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    finally:
        os.remove(tmp)


def _acquire_lock(output_dir):
    path = os.path.join(output_dir, LOCK_FILE)
    while not _create_lock(path):
        holder = _read_lock(path)
        if _holder_alive(holder):
            raise OutputDirLockedError(
                f"--output_dir {output_dir} is in use by pid {holder['pid']} on {holder.get('host')} "
                f"(lock file {path}); wait for that run to end, or delete the lock file if it is gone")
        logging.warning("taking over the stale lock %s of pid %s, which no longer runs", path,
                        (holder or {}).get("pid"))
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)
    return path


def _release_lock(path):
    holder = _read_lock(path)
    if holder and holder.get("pid") == os.getpid():
        os.remove(path)


@contextlib.contextmanager
def output_dir_lock(output_dir: str, strategy=None):
    """Hold output_dir/albert_tf.lock (pid and host) for the block; a second run on the same
    output_dir fails with one line naming the holder. Re-entrant; only the chief locks."""
    if not distribute.is_chief(strategy):
        yield
        return
    os.makedirs(output_dir, exist_ok=True)
    key = os.path.realpath(os.path.join(output_dir, LOCK_FILE))
    if key not in _HELD_LOCKS:
        _acquire_lock(output_dir)
    _HELD_LOCKS[key] = _HELD_LOCKS.get(key, 0) + 1
    try:
        yield
    finally:
        _HELD_LOCKS[key] -= 1
        if not _HELD_LOCKS[key]:
            del _HELD_LOCKS[key]
            _release_lock(key)
