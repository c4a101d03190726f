"""The drivers' entry point: `run(main)` is absl's app.run with bad input reported as ONE
stderr line, `error: <message>`, and the error's exit code (2 for InputError), no traceback.

`--verbose_errors` keeps the traceback for debugging. Flag-parse errors (an unknown flag, a
value of the wrong type, a required flag left out) and absl UsageError exit with code 2 too.
"""

from __future__ import annotations

import sys
import traceback

from absl import app, flags

from albert_tf.core.errors import AlbertError, InputError
from albert_tf.core.fileio import storage_error

USAGE_EXIT_CODE = InputError.exit_code

if "verbose_errors" not in flags.FLAGS:
    flags.DEFINE_bool(
        "verbose_errors",
        False,
        "On an error, print the Python traceback before the one `error:` line.",
    )


def one_line(message) -> str:
    """The message on one line: newlines become '; ', surrounding blanks dropped."""
    parts = [p.strip() for p in str(message).splitlines() if p.strip()]
    return "; ".join(parts) or "unknown error"


def fail(message, exit_code: int, show_traceback: bool = False):
    """Print `error: <message>` as the last stderr line and exit with `exit_code`."""
    if show_traceback:
        traceback.print_exc()
    sys.stderr.flush()
    print(f"error: {one_line(message)}", file=sys.stderr, flush=True)
    sys.exit(exit_code)


def _cause(error) -> str:
    if isinstance(error, OSError) and error.filename:
        return f"{error.filename}: {error.strerror}"
    text = str(getattr(error, "message", "") or error).strip().splitlines()
    return text[0] if text else type(error).__name__


def _verbose() -> bool:
    """--verbose_errors, read safely even when flags failed to parse."""
    try:
        return bool(flags.FLAGS["verbose_errors"].value)
    except Exception:  # flags not parsed: no traceback
        return False


def parse_flags(argv):
    """absl flag parsing whose errors are one `error:` line with exit code 2 (absl prints the
    whole usage text and exits 1)."""
    try:
        return flags.FLAGS(argv)
    except flags.Error as e:
        fail(e, USAGE_EXIT_CODE)


def guarded(main):
    """`main` with AlbertError and UsageError turned into the one-line error and exit code."""

    def wrapped(argv):
        try:
            return main(argv)
        except AlbertError as e:
            fail(e, e.exit_code, _verbose())
        except Exception as e:  # noqa: BLE001  a full disk anywhere: one line, not a traceback
            mapped = storage_error("a file", e)
            if mapped is None:
                raise
            fail(
                f"storage full or read-only: {_cause(e)}; free space (or fix access), then run "
                "the same command again to resume",
                mapped.exit_code,
                _verbose(),
            )
        except app.UsageError as e:
            fail(e, USAGE_EXIT_CODE, _verbose())

    return wrapped


def run(main, argv=None):
    """app.run(main) with one-line errors; `argv` defaults to sys.argv."""
    app.run(guarded(main), argv=argv, flags_parser=parse_flags)
