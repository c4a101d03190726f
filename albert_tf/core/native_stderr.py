"""What native code (TensorFlow's start-up banner, the LiteRT converter and interpreter) writes
to the process's stderr, kept off the screen unless something fails.

`--verbose_errors` on the command line or ALBERT_TF_VERBOSE=1 keeps everything.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile

VERBOSE_ENV = "ALBERT_TF_VERBOSE"


def verbose_requested(argv=None) -> bool:
    """Whether the user asked for everything: `--verbose_errors` or ALBERT_TF_VERBOSE=1.

    Args:
        argv: The command line; default `sys.argv`.

    Returns:
        True to keep TensorFlow's own start-up lines and tracebacks.
    """
    argv = sys.argv if argv is None else argv
    flag = any(
        a in ("--verbose_errors", "--verbose_errors=true", "--verbose_errors=True") for a in argv
    )
    return flag or os.environ.get(VERBOSE_ENV, "") not in ("", "0")


@contextlib.contextmanager
def quiet_native_stderr():
    """Sends what native code writes to the process's stderr during the block to a buffer,
    shown only if the block raises (or with `--verbose_errors` / ALBERT_TF_VERBOSE=1, not
    captured at all): TensorFlow's start-up banner, the LiteRT converter's "fully_quantize: 0,
    inference_type: 6" and the interpreter's "Created TensorFlow Lite XNNPACK delegate" lines.

    Yields:
        Nothing.

    Example:

    >>> from albert_tf.core.native_stderr import quiet_native_stderr
    >>> with quiet_native_stderr():
    ...     pass
    """
    if verbose_requested():
        yield
        return
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        sys.stderr.flush()
        os.dup2(captured.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            captured.seek(0)
            sys.stderr.write(captured.read().decode("utf-8", "replace"))
            raise
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
