"""The errors the drivers report as one line on stderr, without a traceback.

`InputError` is bad input the user can fix (a flag, a file, a config: exit code 2);
`TrainingError` is a run that cannot go on (a non-finite loss, a locked output_dir: exit code 1).
Messages name the flag, file (with line) or variable at fault and say what would fit.
"""


class AlbertError(Exception):
    """Base of the errors a driver prints as `error: <message>` and exits with `exit_code`."""

    exit_code = 1


class InputError(AlbertError, ValueError):
    """A flag, file, config or data record that is wrong; nothing has been written yet."""

    exit_code = 2


class TrainingError(AlbertError, RuntimeError):
    """Training had to stop (e.g. a non-finite loss); the last good checkpoint is kept."""

    exit_code = 1


class StorageError(TrainingError):
    """A file could not be written or read (no space left, access denied, a broken file); the
    message names the path and the cause, and what was complete before is kept."""

    exit_code = 1


class PreemptedError(AlbertError):
    """The run got SIGTERM (a preempted TPU or spot VM): it saved a checkpoint at the step it
    was on and stopped; the same command resumes there."""

    exit_code = 75  # EX_TEMPFAIL: try again, distinct from bad input (2) and failures (1)
