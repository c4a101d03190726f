"""What albert_tf runs on: the versions of Python, TensorFlow, tensorflow-text, Keras (and its
backend), keras-hub and jax, the devices each framework sees, which optional extras import, and
the known incompatibilities among them — the report `python -m albert_tf.info` prints and the
short block that ends every driver's `--verbose_errors` trace.

Versions are read from the installed distributions' metadata (`importlib.metadata`), so the
short block imports nothing; only the full report imports the frameworks (to list devices).
`SUPPORTED` holds the version ranges `pyproject.toml` declares (a test checks they agree).
"""

from __future__ import annotations

import dataclasses
import importlib
from importlib import metadata
import json
import os
import platform
import sys

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from albert_tf.core import fileio

# The ranges pyproject.toml declares, tested at both ends by .ci/run.
SUPPORTED = {
    "tensorflow": ">=2.18,<2.22",
    "tensorflow-text": ">=2.18,<2.22",
    "keras": ">=3.10,<4",
}
# Distributions that each install the `tensorflow` package: two in one environment overwrite
# each other's files.
TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-tpu")
# (label, distribution) shown in the versions section
FRAMEWORKS = (
    ("tensorflow-text", "tensorflow-text"),
    ("Keras", "keras"),
    ("keras-hub", "keras-hub"),
    ("jax", "jax"),
    ("jaxlib", "jaxlib"),
)
# (distribution, module) of the optional extras: deploy's runtimes and converters
EXTRAS = (
    ("ai-edge-litert", "ai_edge_litert"),
    ("tf2onnx", "tf2onnx"),
    ("onnxruntime", "onnxruntime"),
    ("sympy", "sympy"),
)
TASKLIB_VENV_VARIABLE = "ALBERT_TF_TASKLIB_VENV"


@dataclasses.dataclass
class Environment:
    """The versions an environment holds, as found (or given, in tests).

    Args:
        python: Python's version, e.g. "3.11.7".
        versions: Distribution name → version, for the distributions installed (the absent
            ones are left out).
        keras_backend: The Keras backend ("tensorflow", "jax", ...).

    Example:

    >>> env = Environment("3.11.7", {"tensorflow": "2.20.0", "tensorflow-text": "2.20.1"})
    >>> env.tensorflow
    ('tensorflow', '2.20.0')
    """

    python: str
    versions: dict
    keras_backend: str = "tensorflow"

    @property
    def tensorflow(self):
        """(distribution, version) of the first TensorFlow distribution installed, or None."""
        for name in TENSORFLOW_DISTRIBUTIONS:
            if name in self.versions:
                return name, self.versions[name]
        return None


def installed_version(distribution: str):
    """The installed version of a distribution, or None when it is not installed.

    Args:
        distribution: The name pip knows it by, e.g. "tensorflow-text".

    Returns:
        The version string, or None.

    Example:

    >>> installed_version("no-such-distribution-albert") is None
    True
    """
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def keras_backend() -> str:
    """The Keras backend this process uses (or would use): Keras' own answer once Keras is
    imported, else KERAS_BACKEND, else ~/.keras/keras.json's, else "tensorflow".

    Returns:
        The backend's name.

    Example:

    >>> keras_backend() in ("tensorflow", "jax", "torch", "numpy", "openvino")
    True
    """
    keras = sys.modules.get("keras")
    if keras is not None and hasattr(keras, "config"):
        return keras.config.backend()
    if os.environ.get("KERAS_BACKEND"):
        return os.environ["KERAS_BACKEND"]
    home = os.environ.get("KERAS_HOME") or os.path.join(os.environ.get("HOME", "/"), ".keras")
    try:
        with open(os.path.join(home, "keras.json"), encoding="utf-8") as f:
            return json.load(f).get("backend", "tensorflow")
    except (OSError, ValueError, AttributeError):  # no or unreadable keras.json: the default
        return "tensorflow"


def current() -> Environment:
    """The environment of this process, from the installed distributions' metadata (imports
    no framework).

    Returns:
        An `Environment`.

    Example:

    >>> current().python == platform.python_version()
    True
    """
    names = TENSORFLOW_DISTRIBUTIONS + tuple(d for _, d in FRAMEWORKS) + ("albert_tf",)
    found = {n: installed_version(n) for n in names}
    versions = {n: v for n, v in found.items() if v is not None}
    return Environment(platform.python_version(), versions, keras_backend())


def _minor(version: str):
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    return v.major, v.minor


def incompatibilities(env: Environment) -> list:
    """The known incompatibilities of an environment, one sentence each.

    Args:
        env: The environment (`current()`, or made up in a test).

    Returns:
        The problems found; empty when none.

    Example:

    >>> env = Environment("3.11.7", {"tensorflow": "2.21.0", "tensorflow-text": "2.20.1",
    ...                              "keras": "3.15.1"})
    >>> for problem in incompatibilities(env):
    ...     print(problem)  # doctest: +ELLIPSIS
    TensorFlow 2.21.0 and tensorflow-text 2.20.1 differ in minor version: ...
    """
    found = []
    v = env.versions
    both = [n for n in TENSORFLOW_DISTRIBUTIONS if n in v]
    if len(both) > 1:
        listed = " and ".join(f"{n} {v[n]}" for n in both)
        found.append(
            f"{listed} are both installed: each writes the same `tensorflow` package; keep one "
            f"(pip uninstall the other{'s' if len(both) > 2 else ''}, then reinstall the one)"
        )
    tf = env.tensorflow
    if tf is None:
        found.append(
            "TensorFlow is not installed (albert_tf needs tensorflow "
            + SUPPORTED["tensorflow"]
            + ")"
        )
    text = v.get("tensorflow-text")
    if tf is not None and text is not None and _minor(tf[1]) != _minor(text):
        found.append(
            f"TensorFlow {tf[1]} and tensorflow-text {text} differ in minor version: "
            "tf-text's ops are built for one TensorFlow (install tensorflow-text=="
            f"{'.'.join(map(str, _minor(tf[1]) or ()))}.*)"
        )
    # tensorflow-text's range follows TensorFlow's (the minor-version check above)
    checks = [
        ("TensorFlow", tf[1] if tf else None, "tensorflow"),
        ("Keras", v.get("keras"), "keras"),
    ]
    for label, version, key in checks:
        if version is not None and not SpecifierSet(SUPPORTED[key]).contains(
            version, prereleases=True
        ):
            found.append(f"{label} {version} is outside the tested range {SUPPORTED[key]}")
    if env.keras_backend == "jax" and "jax" not in v:
        found.append("KERAS_BACKEND is jax but jax is not installed (pip install -e '.[jax]')")
    if "jax" in v and "jaxlib" in v and _minor(v["jax"]) != _minor(v["jaxlib"]):
        found.append(f"jax {v['jax']} and jaxlib {v['jaxlib']} differ in minor version")
    return found


def short_block(env: Environment | None = None) -> str:
    """The few lines that end every driver's `--verbose_errors` trace: the versions and the
    incompatibilities found, for a bug report.

    Args:
        env: The environment; default `current()`.

    Returns:
        The block, lines joined by newlines (no trailing newline).

    Example:

    >>> env = Environment("3.11.7", {"tensorflow": "2.21.0", "tensorflow-text": "2.21.1",
    ...                              "keras": "3.15.1"})
    >>> print(short_block(env))
    environment (python -m albert_tf.info for the full report):
      Python 3.11.7, tensorflow 2.21.0, tensorflow-text 2.21.1, Keras 3.15.1 (backend tensorflow)
      incompatibilities: none found
    """
    env = env or current()
    tf = env.tensorflow
    parts = [f"Python {env.python}", f"{tf[0]} {tf[1]}" if tf else "no TensorFlow"]
    for label, name in FRAMEWORKS:
        if name in env.versions and name != "jaxlib":
            extra = f" (backend {env.keras_backend})" if name == "keras" else ""
            parts.append(f"{label} {env.versions[name]}{extra}")
    problems = incompatibilities(env)
    lines = ["environment (python -m albert_tf.info for the full report):", "  " + ", ".join(parts)]
    lines += [f"  incompatible: {p}" for p in problems] or ["  incompatibilities: none found"]
    return "\n".join(lines)


def importable(module: str):
    """Whether a module imports, and why not.

    Args:
        module: The module's import name, e.g. "onnxruntime".

    Returns:
        None when it imports; else the error, on one line.

    Example:

    >>> importable("json") is None
    True
    >>> importable("no_such_module_albert")
    "No module named 'no_such_module_albert'"
    """
    try:
        importlib.import_module(module)
    except Exception as e:  # noqa: BLE001  any failure to import is the answer
        return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return None


def tasklib_venv(environ=None):
    """The TFLite Task Library's virtual environment (.ci/tasklib_env.sh builds it), from
    $ALBERT_TF_TASKLIB_VENV.

    Args:
        environ: The environment variables; default `os.environ`.

    Returns:
        (folder, built): the folder (None when the variable is unset) and whether its
        `.complete` marker is there.

    Example:

    >>> tasklib_venv({})
    (None, False)
    >>> tasklib_venv({"ALBERT_TF_TASKLIB_VENV": "ram://no/venv"})
    ('ram://no/venv', False)
    """
    folder = (os.environ if environ is None else environ).get(TASKLIB_VENV_VARIABLE)
    if not folder:
        return None, False
    return folder, fileio.exists(fileio.join(folder, ".complete"))


def devices() -> dict:
    """The devices each installed framework sees: TensorFlow's physical devices, and jax's
    when jax is installed (importing them; a framework that fails says why).

    Returns:
        Framework → list of device names, or the error on one line.

    Example:

    >>> "TensorFlow" in devices()
    True
    """
    seen = {}
    try:
        # deferred: the versions and the short block import no framework; this lists devices
        import tensorflow as tf

        seen["TensorFlow"] = [
            d.name.replace("/physical_device:", "") for d in tf.config.list_physical_devices()
        ]
    except Exception as e:  # noqa: BLE001  a broken install is what the report is for
        seen["TensorFlow"] = f"error: {str(e).strip()[:200]}"
    if installed_version("jax") is not None:
        try:
            # deferred: jax is an optional extra
            import jax

            seen["jax"] = [f"{d.platform}:{d.id}" for d in jax.devices()]
        except Exception as e:  # noqa: BLE001  e.g. the TPU already held by TensorFlow
            seen["jax"] = f"error: {str(e).strip()[:200]}"
    return seen


def report(env: Environment | None = None, environ=None) -> str:
    """The full report `python -m albert_tf.info` prints: versions, devices, optional extras,
    the Task Library environment and the incompatibilities found.

    Args:
        env: The environment; default `current()`.
        environ: The environment variables; default `os.environ`.

    Returns:
        The report, lines joined by newlines.

    Example:

    >>> text = report()
    >>> [s in text for s in ("Python", "TensorFlow", "devices", "incompatibilities")]
    [True, True, True, True]
    """
    env = env or current()
    tf = env.tensorflow
    lines = ["versions"]
    rows = [("Python", f"{env.python} ({sys.executable})")]
    rows.append(("TensorFlow", f"{tf[1]} ({tf[0]})" if tf else "not installed"))
    for label, name in FRAMEWORKS:
        version = env.versions.get(name, "not installed")
        if name == "keras":
            version += f", backend {env.keras_backend}"
        rows.append((label, version))
    rows.append(("albert_tf", env.versions.get("albert_tf", "not installed (run from a checkout)")))
    lines += [f"  {k:<18}{v}" for k, v in rows]
    lines.append("devices")
    for framework, seen in devices().items():
        shown = seen if isinstance(seen, str) else ", ".join(seen) or "none"
        lines.append(f"  {framework:<18}{shown}")
    lines.append("optional extras (deploy: pip install -e '.[deploy]')")
    for distribution, module in EXTRAS:
        version = installed_version(distribution)
        why = importable(module) if version is not None else "not installed"
        lines.append(f"  {distribution:<18}{version + ' imports' if why is None else why}")
    folder, built = tasklib_venv(environ)
    state = (
        f"{folder} ({'built' if built else 'no .complete marker: not built'})"
        if folder
        else f"${TASKLIB_VENV_VARIABLE} not set (.ci/tasklib_env.sh DIR builds one)"
    )
    lines.append(f"  {'Task Library venv':<18}{state}")
    lines.append("incompatibilities")
    lines += [f"  {p}" for p in incompatibilities(env)] or ["  none found"]
    return "\n".join(lines)
