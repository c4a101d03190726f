"""TEST-ONLY fault injection: the preemption tests stop a training run at a named point and step.

Nothing here runs in a normal run: `kill_point` returns at once unless the environment variable
ALBERT_TF_TEST_KILL_AT names that point and step, which only tests/engine/test_preemption.py sets.
The engine calls it where a real preemption could strike (after a step, after a checkpoint is
written, after a save point's bookkeeping), so those tests can show that a run killed there
resumes to the same result as an unbroken one.
"""

import os
import signal

from absl import logging

KILL_AT_ENV = "ALBERT_TF_TEST_KILL_AT"  # "point:step": SIGKILL there; "sigterm@point:step": SIGTERM


def kill_point(point: str, step: int):
    """Test-only: SIGKILL this process when $ALBERT_TF_TEST_KILL_AT is `point:step`, or
    send it SIGTERM (a VM's preemption notice) when it is `sigterm@point:step`."""
    if os.environ.get(KILL_AT_ENV) == f"sigterm@{point}:{step}":
        logging.warning(
            "%s=%s: SIGTERM to pid %d", KILL_AT_ENV, os.environ[KILL_AT_ENV], os.getpid()
        )
        os.kill(os.getpid(), signal.SIGTERM)
    if os.environ.get(KILL_AT_ENV) == f"{point}:{step}":
        logging.warning("%s=%s: killing pid %d", KILL_AT_ENV, os.environ[KILL_AT_ENV], os.getpid())
        logging.flush()
        os.kill(os.getpid(), signal.SIGKILL)
