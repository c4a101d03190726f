"""Kill points for the preemption tests: SIGKILL the training process at a named point and
step, chosen through an environment variable, so a test can stop a run exactly there."""
import os
import signal

from absl import logging

KILL_AT_ENV = "ALBERT_TF_TEST_KILL_AT"  # "point:step": SIGKILL there; "sigterm@point:step": SIGTERM


def _kill_point(point: str, step: int):
    """Preemption tests: SIGKILL this process when $ALBERT_TF_TEST_KILL_AT is `point:step`, or
    send it SIGTERM (a VM's preemption notice) when it is `sigterm@point:step`."""
    if os.environ.get(KILL_AT_ENV) == f"sigterm@{point}:{step}":
        logging.warning("%s=%s: SIGTERM to pid %d", KILL_AT_ENV, os.environ[KILL_AT_ENV], os.getpid())
        os.kill(os.getpid(), signal.SIGTERM)
    if os.environ.get(KILL_AT_ENV) == f"{point}:{step}":
        logging.warning("%s=%s: killing pid %d", KILL_AT_ENV, os.environ[KILL_AT_ENV], os.getpid())
        logging.flush()
        os.kill(os.getpid(), signal.SIGKILL)
