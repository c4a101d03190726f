"""ram:// (TensorFlow's in-memory filesystem) as the offline stand-in for a gs:// bucket.

ram:// lives in one process: tests that use it run the drivers in-process (`main(argv)`).
"""

import os
import uuid

import tensorflow as tf


def new_bucket(name="bucket") -> str:
    """A fresh, empty ram:// prefix (unique per call, so tests never see each other's files)."""
    return f"ram://{name}-{uuid.uuid4().hex[:8]}"


def upload(local, remote) -> str:
    """Copy a local file or folder tree to `remote` (a ram:// path); returns `remote`."""
    local = os.fspath(local)
    if os.path.isdir(local):
        for root, _, files in os.walk(local):
            rel = os.path.relpath(root, local)
            target = remote if rel == "." else f"{remote}/{rel.replace(os.sep, '/')}"
            tf.io.gfile.makedirs(target)
            for name in files:
                tf.io.gfile.copy(os.path.join(root, name), f"{target}/{name}", overwrite=True)
    else:
        tf.io.gfile.makedirs(remote.rsplit("/", 1)[0])
        tf.io.gfile.copy(local, remote, overwrite=True)
    return remote


def download(remote, local) -> str:
    """Copy a ram:// file to a local path (to open it with local-only libraries in a test)."""
    tf.io.gfile.copy(remote, os.fspath(local), overwrite=True)
    return os.fspath(local)


def tree(remote) -> list:
    """Every file under `remote`, as paths relative to it, sorted. (ram:// lists a sibling file
    `run/eval_results.txt` under `run/eval` as `_results.txt` too: names that do not exist are
    left out.)"""
    found = []
    for root, _, files in tf.io.gfile.walk(remote):
        rel = root[len(remote) :].strip("/")
        found += [
            f"{rel}/{f}" if rel else f
            for f in files
            if tf.io.gfile.exists(f"{root.rstrip('/')}/{f}")
        ]
    return sorted(found)
