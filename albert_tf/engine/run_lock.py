"""One run per output_dir: a lock object held for a run, so a second run on the same output_dir
(local or gs://) fails at once instead of both writing the same checkpoints.

The lock (`albert_tf.lock`) holds a random run id, the pid, the host and a heartbeat (unix
seconds) that a thread refreshes every HEARTBEAT_SECONDS. A lock is live while its holder runs:
on this host, while its pid lives; on another host (a TPU VM writing to the same bucket), while
its heartbeat is younger than LOCK_TTL_SECONDS. An older heartbeat is a preempted or dead VM: its
lock is taken over with a warning. On an object store the take-over and the first creation are
check-then-write (there is no O_EXCL): two runs started within one round trip of each other can
both think they hold it; each then sees the other's run id at its next heartbeat and stops
refreshing (docs/cloud_tpu.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import threading
import time

from absl import logging

from albert_tf.core import fileio
from albert_tf.core.errors import TrainingError
from albert_tf.engine import distribute

LOCK_FILE = "albert_tf.lock"  # {"run_id", "pid", "host", "heartbeat"} of the run holding output_dir
LOCK_TTL_SECONDS = float(os.environ.get("ALBERT_TF_LOCK_TTL", 300))  # older heartbeat: holder gone
HEARTBEAT_SECONDS = LOCK_TTL_SECONDS / 5


class OutputDirLockedError(TrainingError):
    """Another live run holds output_dir's lock file."""


_HELD_LOCKS: dict = {}  # lock path this process holds -> [nesting depth, run id, stop event]


def _read_lock(path):
    try:
        return json.loads(fileio.read_text(path))
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
    beat = holder.get("heartbeat")
    fresh = not isinstance(beat, (int, float)) or time.time() - beat < LOCK_TTL_SECONDS
    if holder.get("host") == socket.gethostname():  # a recreated VM may reuse the pid: both
        return holder["pid"] != os.getpid() and _pid_alive(holder["pid"]) and fresh
    return fresh  # another host's lock without a heartbeat: cannot tell, assume it runs


def _lock_text(run_id) -> str:
    return json.dumps(
        {
            "run_id": run_id,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "heartbeat": time.time(),
        }
    )


def _acquire_lock(output_dir, run_id):
    path = fileio.join(output_dir, LOCK_FILE)
    while not fileio.create_exclusive(path, _lock_text(run_id)):
        holder = _read_lock(path)
        if _holder_alive(holder):
            age = time.time() - holder["heartbeat"] if "heartbeat" in holder else None
            beat = f", heartbeat {age:.0f} s ago" if age is not None else ""
            raise OutputDirLockedError(
                f"output_dir {output_dir} is in use by pid {holder['pid']} on "
                f"{holder.get('host')}"
                f"{beat} (lock file {path}); wait for that run to end, or delete the lock file if "
                f"it is gone (a lock whose heartbeat is older than {LOCK_TTL_SECONDS:.0f} s is "
                "taken over)"
            )
        logging.warning(
            "taking over the stale lock %s of pid %s on %s, which no longer runs",
            path,
            (holder or {}).get("pid"),
            (holder or {}).get("host"),
        )
        fileio.remove(path)
    return path


def _heartbeat(path, run_id, stop: threading.Event):
    """Refresh the lock's heartbeat until `stop`; stop refreshing if another run took it."""
    while not stop.wait(HEARTBEAT_SECONDS):
        holder = _read_lock(path)
        if not holder or holder.get("run_id") != run_id:
            logging.warning(
                "lock %s is now held by another run (%s); no longer refreshing it", path, holder
            )
            return
        try:
            fileio.write_text(path, _lock_text(run_id))
        except Exception as e:  # noqa: BLE001  a transient storage error: try again next beat
            logging.warning("could not refresh lock %s: %s", path, e)


def _release_lock(path, run_id):
    holder = _read_lock(path)
    if holder and holder.get("run_id") == run_id:
        fileio.remove(path)


@contextlib.contextmanager
def output_dir_lock(output_dir: str, strategy=None):
    """Hold output_dir/albert_tf.lock for the block; a second run on the same output_dir fails
    with one line naming the holder. Re-entrant; only the chief locks.

    >>> import tempfile
    >>> with output_dir_lock(tempfile.mkdtemp()):
    ...     pass  # train here
    """
    if not distribute.is_chief(strategy):
        yield
        return
    fileio.makedirs(output_dir)
    key = fileio.join(fileio.abspath(output_dir), LOCK_FILE)
    if key not in _HELD_LOCKS:
        run_id = secrets.token_hex(8)
        _acquire_lock(output_dir, run_id)
        stop = threading.Event()
        threading.Thread(
            target=_heartbeat,
            args=(key, run_id, stop),
            daemon=True,
            name="albert_tf-lock-heartbeat",
        ).start()
        _HELD_LOCKS[key] = [0, run_id, stop]
    _HELD_LOCKS[key][0] += 1
    try:
        yield
    finally:
        _HELD_LOCKS[key][0] -= 1
        if not _HELD_LOCKS[key][0]:
            _, run_id, stop = _HELD_LOCKS.pop(key)
            stop.set()
            _release_lock(key, run_id)
