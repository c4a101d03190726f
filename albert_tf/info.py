"""What this environment holds, for a bug report:

    python -m albert_tf.info

prints the versions of Python, TensorFlow, tensorflow-text, Keras (and its backend), keras-hub
and jax, the devices each framework sees, which optional extras import (deploy: ai-edge-litert,
tf2onnx, onnxruntime, sympy; the TFLite Task Library's environment from
$ALBERT_TF_TASKLIB_VENV) and the known incompatibilities found (e.g. TensorFlow and
tensorflow-text of different minor versions, two TensorFlow distributions in one environment,
a TensorFlow outside the tested range). Builds no model.
"""

from __future__ import annotations

import argparse
import sys

from albert_tf.core import environment
from albert_tf.drivers import console


def main(argv=None) -> int:
    """Prints the environment report.

    Args:
        argv: The command line after the program name (default `sys.argv[1:]`); takes only
            `--help`.

    Returns:
        0.
    """
    argparse.ArgumentParser(
        prog="python -m albert_tf.info", description=__doc__.split("\n\n")[0]
    ).parse_args(argv)
    try:
        console.import_tensorflow_quietly()
    except ImportError:  # the report says what failed
        pass
    print(environment.report())
    return 0


if __name__ == "__main__":
    sys.exit(main())
