"""Work that tests share across pytest-xdist workers: one driver run per test run, not one per
worker."""

import fcntl
import json
import os


def once_per_test_run(tmp_path_factory, name, make):
    """`make(folder)` once per test run, however many pytest-xdist workers ask: the first makes
    it (the others wait on a lock) and every worker gets its JSON result and the same folder.

    Args:
        tmp_path_factory: pytest's fixture (its base folder's parent is shared by the workers).
        name: The folder's name.
        make: `make(folder) -> JSON-able result`; a failure is retried by the next worker.

    Returns:
        (result, folder).
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the workers' base folders sit side by side in it
    folder, done = root / name, root / f"{name}.result.json"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            folder.mkdir(exist_ok=True)
            done.write_text(json.dumps(make(folder)))
    return json.loads(done.read_text()), folder
