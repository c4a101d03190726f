"""The drivers' entry point: `run(main)` is absl's app.run with bad input reported as ONE
stderr line, `error: <message>`, and the error's exit code (2 for InputError), no traceback.

`--verbose_errors` keeps the traceback for debugging. Flag-parse errors (an unknown flag, a
value of the wrong type, a required flag left out) and absl UsageError exit with code 2 too.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import traceback

from absl import app, flags, logging

from albert_tf.core import environment
from albert_tf.core.errors import AlbertError, InputError
from albert_tf.core.fileio import storage_error
from albert_tf.core.native_stderr import verbose_requested
from albert_tf.drivers import console, validation
from albert_tf.drivers.exports import check_export_choices
from albert_tf.drivers.flag_words import command_flag_names, in_flag_words

USAGE_EXIT_CODE = InputError.exit_code

if "verbose_errors" not in flags.FLAGS:
    flags.DEFINE_bool(
        "verbose_errors",
        False,
        "On an error, print the Python traceback before the one `error:` line.",
    )


@dataclasses.dataclass(frozen=True)
class Usage:
    """What a driver's `--help` shows first, and the flags every run of it needs.

    Args:
        text: What the driver does and one command that works, shown by `--help`.
        required: Flags every run needs.
        one_of: Groups of flags of which a run needs one, e.g.
            `(("spm_model_file", "vocab_file"),)`.
        modules: Modules whose flags `--help` lists after the text (the driver's own flags
            always come first); `--helpfull` lists every flag.
        builds_models: Whether the command builds Keras models (refused, before anything
            else, on a Keras backend that runs them forward only: KERAS_BACKEND=torch).

    Example:

    >>> from absl import flags
    >>> fv = flags.FlagValues()
    >>> _ = flags.DEFINE_string("data_dir", None, "data", flag_values=fv)
    >>> _ = flags.DEFINE_string("output_dir", None, "out", flag_values=fv)
    >>> _ = fv(["prog"])
    >>> Usage("demo", required=("data_dir", "output_dir")).missing(fv)
    ['--data_dir', '--output_dir']
    """

    text: str
    required: tuple = ()
    one_of: tuple = ()
    modules: tuple = ()
    builds_models: bool = True

    def missing(self, flag_values=None) -> list:
        """The required flags a command line left out, as `--name` (or `--a / --b`).

        Args:
            flag_values: The parsed flags; default absl's FLAGS.

        Returns:
            The missing flags, in order; empty when the run has all it needs.
        """
        fv = flag_values or flags.FLAGS
        out = [f"--{n}" for n in self.required if fv[n].value in (None, "")]
        for group in self.one_of:
            if all(fv[n].value in (None, "") for n in group):
                out.append("one of " + " / ".join(f"--{n}" for n in group))
        return out

    def help_text(self, main_module) -> str:
        """The text `--help` prints: the usage text, then the driver's flags."""
        fv = flags.FLAGS
        parts = [self.text.strip(), ""]
        for module in (main_module, *self.modules):
            listed = fv.module_help(module).strip()
            if listed:
                parts += [listed, ""]
        parts.append("--helpfull lists every flag (TPU, distribution, absl's own).")
        return "\n".join(parts)


def one_line(message) -> str:
    """The message on one line: newlines become '; ', surrounding blanks dropped."""
    parts = [p.strip() for p in str(message).splitlines() if p.strip()]
    return "; ".join(parts) or "unknown error"


def fail(message, exit_code: int, show_traceback: bool = False):
    """Prints `error: <message>` as the last stderr line and exits with `exit_code`.

    Args:
        message: What went wrong; newlines are folded into one line.
        exit_code: The process's exit code (2 for bad input).
        show_traceback: Print the current exception's traceback first, then the
            environment's short block (`core.environment.short_block`), for a bug report.

    Raises:
        SystemExit: Always, with `exit_code`.
    """
    if show_traceback:
        traceback.print_exc()
        print(environment.short_block(), file=sys.stderr)
    logging.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    print(f"error: {one_line(message)}", file=sys.stderr, flush=True)
    raise SystemExit(exit_code)


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


def guarded(main, usage=None):
    """`main` with AlbertError and UsageError turned into the one-line error and exit code.

    Args:
        main: The driver's `main(argv)`.
        usage: The driver's `Usage`; every missing required flag is reported in one line
            before any work (and before TensorFlow is imported).

    Returns:
        The wrapped main.
    """

    def wrapped(argv):
        try:  # first: no flag of the command can help on such a backend
            if usage is None or usage.builds_models:
                environment.check_backend_runs(
                    os.path.basename(argv[0]) if argv else "this command"
                )
        except InputError as e:
            fail(e, e.exit_code)
        missing = usage.missing() if usage is not None else []
        if missing:
            fail(
                f"missing required flag{'s' if len(missing) > 1 else ''}: "
                f"{', '.join(missing)} (see --help)",
                USAGE_EXIT_CODE,
            )
        try:
            check_export_choices(flags.FLAGS)  # before TensorFlow loads (console.setup's)
            console.setup(verbose=verbose_requested(argv) or _verbose())
            validation.check_filesystems(flags.FLAGS)
            return main(argv)
        except AlbertError as e:  # the library names its arguments; the user typed flags
            fail(in_flag_words(e, command_flag_names(flags.FLAGS)), e.exit_code, _verbose())
        except Exception as e:  # noqa: BLE001  a full disk anywhere: one line, not a traceback
            mapped = storage_error("a file", e)
            bug = mapped is None and not isinstance(e, app.UsageError)
            if bug and _verbose():  # its trace, then the environment block, then one line
                fail(f"{type(e).__name__}: {_cause(e)}", 1, True)
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


HELP_ARGS = ("-h", "--help", "--helpshort", "-?")


def run(main, argv=None, usage=None):
    """Runs a driver's `main` as absl's app.run does, with one-line errors.

    Run as a program (`argv` None), a failed run ends the process right after its `error:`
    line, so nothing TensorFlow prints while shutting down can follow it.

    Args:
        main: The driver's `main(argv)`.
        argv: The command line; default `sys.argv` (then the process exits when main ends).
        usage: The driver's `Usage`: `--help` prints it and exits 0; the required flags are
            checked first, all at once.

    Raises:
        SystemExit: With main's exit code, when `argv` is given (tests run drivers in-process).
    """
    args = sys.argv if argv is None else argv
    if usage is not None and any(a in HELP_ARGS for a in args[1:]):
        print(usage.help_text(sys.modules.get(getattr(main, "__module__", ""), "__main__")))
        if argv is None:
            sys.stdout.flush()
            os._exit(0)
        raise SystemExit(0)
    try:
        app.run(guarded(main, usage), argv=argv, flags_parser=parse_flags)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if argv is None and code != 0:
            logging.flush()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        raise
