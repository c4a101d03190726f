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
