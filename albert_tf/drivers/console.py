"""What a driver prints: short log lines, warnings that mean something, the progress bar left
intact, and TensorFlow's start-up banner kept off the screen.

`setup()` runs once per process when a driver starts (albert_tf.drivers.cli.run). TensorFlow's
C++ start-up lines (oneDNN notes, "Could not find cuda drivers", "failed call to cuInit",
"All log messages before absl::InitializeLog()") ignore TF_CPP_MIN_LOG_LEVEL in TensorFlow
2.21, so TensorFlow is imported with the process's stderr sent to a buffer, which is printed
only if the import fails. `--verbose_errors` (or ALBERT_TF_VERBOSE=1) keeps everything.
"""

from __future__ import annotations

import logging as pylogging
import os
import sys
import time

from absl import logging

from albert_tf.core.native_stderr import quiet_native_stderr
from albert_tf.engine import progress

_STATE = {"set_up": False}


def import_tensorflow_quietly():
    """Imports TensorFlow (and tensorflow-text) and finds the devices with stderr captured.

    Raises:
        ImportError: TensorFlow failed to import; what it printed is shown first.
    """
    with quiet_native_stderr():
        # deferred: the whole point is to import TensorFlow with its banner captured
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  # deferred: registers the in-graph text ops

        tf.config.list_physical_devices()


class ConsoleFormatter(pylogging.Formatter):
    """Log records as `HH:MM:SS message` (`HH:MM:SS warning: message` for warnings).

    Example:

    >>> import logging
    >>> record = logging.LogRecord("x", logging.WARNING, "f.py", 1, "disk %s", ("full",), None)
    >>> ConsoleFormatter().format(record)[8:]
    ' warning: disk full'
    """

    def format(self, record):
        stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
        level = "" if record.levelno < pylogging.WARNING else f"{record.levelname.lower()}: "
        text = f"{stamp} {level}{record.getMessage()}"
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text


class OwnInfoFilter(pylogging.Filter):
    """Keeps warnings and errors from anyone, and INFO lines only from albert_tf and the
    driver scripts (TensorFlow's own INFO lines, such as "Sharding callback duration" or
    "Writing fingerprint", are about its internals)."""

    def __init__(self, roots):
        super().__init__()
        self.roots = tuple(os.path.abspath(r) + os.sep for r in roots)

    def filter(self, record):
        return record.levelno >= pylogging.WARNING or os.path.abspath(record.pathname).startswith(
            self.roots
        )


def _bar_aware(emit):
    """A handler's emit that clears the live progress bar first and redraws it after."""

    def wrapped(record):
        bar = progress.active_bar()
        if bar is not None:
            bar.clear()
        emit(record)
        if bar is not None:
            bar.redraw()

    return wrapped


def setup(verbose: bool = False):
    """Prepares the console for a driver run; safe to call more than once.

    Args:
        verbose: Keep TensorFlow's start-up lines and the full log format.
    """
    if not verbose and "tensorflow" not in sys.modules:
        # TensorFlow's C++ INFO lines at run time ("TFRecordDataset `buffer_size` is
        # unspecified") obey this one; its start-up lines do not (see the module docstring)
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        import_tensorflow_quietly()
    if _STATE["set_up"]:
        return
    _STATE["set_up"] = True
    handler = logging.get_absl_handler().python_handler
    if not verbose:
        handler.setFormatter(ConsoleFormatter())
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        script = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv[0] else package
        handler.addFilter(OwnInfoFilter([package, script]))
    handler.emit = _bar_aware(handler.emit)
    pylogging.captureWarnings(True)  # Python warnings become log lines (not torn into the bar)
    # TensorFlow's Python logger repeats what the project says itself ("Assets written to"):
    # keep its warnings and errors only.
    pylogging.getLogger("tensorflow").setLevel(pylogging.WARNING)
