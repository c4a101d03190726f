"""Run many command lines through one driver in ONE process (TensorFlow imported once), the
way `python DRIVER ARGS` would run them through albert_tf.drivers.cli.run: for each, the exit code
and everything Python wrote to stderr (absl log lines included), written as JSON.

    python bad_input_runner.py DRIVER.py CASES.json RESULTS.json
CASES.json is a list of argv lists (without the program name).

    python bad_input_runner.py BATCHES.json RESULTS.json
runs several drivers' cases in the same one process: BATCHES.json maps each DRIVER.py to its
argv lists, RESULTS.json maps it to its results. A driver's flags are removed after its cases
(the next driver defines its own of the same names).
"""

import contextlib
import importlib.util
import io
import json
import sys
import traceback


def load_driver(path):
    """Import a driver script as a module (its flags get defined, main is not run)."""
    spec = importlib.util.spec_from_file_location("driver_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_case(module, driver, argv):
    """(exit code, stderr text) of one command line; flags reset to their defaults first."""
    from absl import flags, logging

    from albert_tf.drivers import cli

    flags.FLAGS.unparse_flags()
    handler = logging.get_absl_handler().python_handler
    saved, buf, code = handler.stream, io.StringIO(), 0
    handler.stream = buf
    try:
        with contextlib.redirect_stderr(buf):
            try:
                cli.run(module.main, [driver] + argv, usage=getattr(module, "USAGE", None))
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            except BaseException:  # escaped the wrapper: reported as a traceback
                traceback.print_exc(file=buf)
                code = -1
    finally:
        handler.stream = saved
    return code, buf.getvalue()


def run_driver(driver, cases):
    """Every argv of `cases` through `driver`; the flags it defined are removed afterwards."""
    from absl import flags

    from albert_tf.drivers import cli  # noqa: F401  (its --verbose_errors stays defined)

    before = set(flags.FLAGS)
    module = load_driver(driver)
    results = []
    for argv in cases:
        code, stderr = run_case(module, driver, argv)
        results.append({"argv": argv, "code": code, "stderr": stderr})
    flags.FLAGS.unparse_flags()
    for name in set(flags.FLAGS) - before:
        if name in flags.FLAGS:  # a short name went with its flag
            delattr(flags.FLAGS, name)
    return results


def main():
    if len(sys.argv) == 3:
        batches_path, results_path = sys.argv[1:3]
        with open(batches_path, encoding="utf-8") as f:
            batches = json.load(f)
        results = {driver: run_driver(driver, cases) for driver, cases in batches.items()}
    else:
        driver, cases_path, results_path = sys.argv[1:4]
        with open(cases_path, encoding="utf-8") as f:
            results = run_driver(driver, json.load(f))
    with open(results_path, "w", encoding="utf-8") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
