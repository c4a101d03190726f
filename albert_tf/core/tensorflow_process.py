"""The one way a process on another Keras backend (JAX) gets a TensorFlow-only step done: it
starts a child Python process on Keras' TensorFlow backend and reads its result.

What needs TensorFlow's own graphs (a SavedModel's functions, the LiteRT and ONNX converters)
cannot be traced from JAX's Keras layers, so the project runs it in such a child, never the
user. The child gets this albert_tf first on its `PYTHONPATH`, `KERAS_BACKEND=tensorflow`, no
accelerator (the parent process holds it; writing files is host work) and no `TF_CONFIG` (it is
one process, not a worker of the parent's cluster). Its output is captured; `failure_line` is
what to report when it fails: its own one-line `error:`, else its last line.
"""

from __future__ import annotations

import os
import subprocess
import sys

from albert_tf.core import fileio

# the package's parent folder, put first on the child's PYTHONPATH: the child runs this albert_tf
PACKAGE_ROOT = fileio.dirname(fileio.dirname(fileio.dirname(fileio.abspath(__file__))))
ERROR_PREFIX = "error: "  # how a driver's last stderr line reports a failure (drivers.cli)


def tensorflow_environment(environ=None) -> dict:
    """The environment of a child process on Keras' TensorFlow backend.

    Args:
        environ: The parent's environment; default `os.environ`.

    Returns:
        A copy with KERAS_BACKEND=tensorflow, this albert_tf first on PYTHONPATH, no visible
        GPU (CUDA_VISIBLE_DEVICES empty) and no TF_CONFIG.

    Example:

    >>> from albert_tf.core.tensorflow_process import tensorflow_environment
    >>> env = tensorflow_environment({"KERAS_BACKEND": "jax", "TF_CONFIG": "{}"})
    >>> env["KERAS_BACKEND"], "TF_CONFIG" in env, env["CUDA_VISIBLE_DEVICES"]
    ('tensorflow', False, '')
    """
    env = dict(os.environ if environ is None else environ)
    env["KERAS_BACKEND"] = "tensorflow"
    env["CUDA_VISIBLE_DEVICES"] = ""  # the parent's accelerator stays the parent's
    env.pop("TF_CONFIG", None)
    paths = [PACKAGE_ROOT] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return env


def run_in_tensorflow(args, cwd=None) -> subprocess.CompletedProcess:
    """Runs `python ARGS` (this interpreter) on Keras' TensorFlow backend and waits for it.

    Args:
        args: The interpreter's arguments, e.g. `["-m", "albert_tf.convert", ...]` or a
            script and its flags.
        cwd: The child's working folder; default the parent's (relative paths mean the same).

    Returns:
        subprocess.CompletedProcess with `returncode` and the captured `stdout` and `stderr`
        (text).

    Example:

    >>> from albert_tf.core.tensorflow_process import run_in_tensorflow
    >>> run = run_in_tensorflow(["-c", "import os; print(os.environ['KERAS_BACKEND'])"])
    >>> run.returncode, run.stdout.strip()
    (0, 'tensorflow')
    """
    return subprocess.run(
        [sys.executable, *map(str, args)],
        env=tensorflow_environment(),
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def failure_line(run) -> str:
    """What a failed child said, in one line: its last `error: ...` line's message (a driver's
    or a command's one-line report), else its last stderr line, else its exit code.

    Args:
        run: The subprocess.CompletedProcess of `run_in_tensorflow`.

    Returns:
        The message, without the `error: ` prefix.

    Example:

    >>> import subprocess
    >>> from albert_tf.core.tensorflow_process import failure_line
    >>> failure_line(subprocess.CompletedProcess([], 2, "", "log\\nerror: --x: bad\\n"))
    '--x: bad'
    >>> failure_line(subprocess.CompletedProcess([], -9, "", ""))
    'the TensorFlow process ended with exit code -9 and no output'
    """
    lines = [line.strip() for line in (run.stderr or "").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(ERROR_PREFIX)]
    if errors:
        return errors[-1][len(ERROR_PREFIX) :]
    if lines:
        return lines[-1]
    return f"the TensorFlow process ended with exit code {run.returncode} and no output"
