#!/usr/bin/env bash
# Makes a Python virtual environment with the TFLite Task Library (tflite-support 0.4.4, its
# last release) so the tests check albert_tf's LiteRT files with the real on-device clients
# (BertNLClassifier, BertQuestionAnswerer): tests/deploy/conftest.py builds it once per
# version of this script (~/.cache/albert_tf/tasklib-<hash of this file>) and .ci/run before
# the tests.
#
# Why a venv of its own: tflite-support 0.4.4 needs protobuf<4 and numpy<2, which TensorFlow
# 2.21 cannot share an environment with. Its native modules link against libusb-1.0.so.0
# (Debian: libusb-1.0-0); instead of apt (root) the PyPI package libusb-package is installed,
# a symlink with that soname made in <venv>/lib/libusb/, and a .pth file preloads it (ctypes,
# RTLD_GLOBAL) at interpreter start, so `import tflite_support` needs no LD_LIBRARY_PATH.
#
# Usage: .ci/tasklib_env.sh VENV_DIR        (~10 s with PyPI reachable, ~75 MB downloaded)
# Env:   PYTHON=python3.11 (wheels exist for CPython 3.7-3.11 only), PIP_OPTS="..." for pip.
# VENV_DIR must be new, empty or a venv this script made (its .albert_tf_tasklib marker): any
# other folder is refused (exit 2), never wiped; a failed run removes what it made.
# Writes VENV_DIR/.complete last; prints the venv's python on its last line.
set -euo pipefail

VENV="${1:?usage: tasklib_env.sh VENV_DIR}"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3

"$PYTHON" - <<'PY'
import sys
if not ((3, 7) <= sys.version_info[:2] <= (3, 11)):
    sys.exit("tflite-support 0.4.4 has wheels for CPython 3.7-3.11 only; got %s "
             "(set PYTHON=...)" % sys.version.split()[0])
PY

# Only a folder this script made (its marker inside), an empty folder or a new path is
# (re)built: any other folder is the user's, and stays untouched.
MARKER="$VENV/.albert_tf_tasklib"
if [ -e "$VENV" ] && ! [ -f "$MARKER" ]; then
  if ! [ -d "$VENV" ] || [ -n "$(ls -A "$VENV")" ]; then
    echo "error: $VENV exists and is not a Task Library venv of this script; give a new" \
      "folder (or remove it yourself)" >&2
    exit 2
  fi
fi
# a failed run removes what it made (a previous venv of this script is rebuilt, never kept half)
KEEP_EMPTY=0
[ -d "$VENV" ] && ! [ -f "$MARKER" ] && KEEP_EMPTY=1
cleanup() {
  rm -rf "$VENV"
  [ "$KEEP_EMPTY" = 1 ] && mkdir -p "$VENV"
  return 0
}
trap 'cleanup' ERR
trap 'cleanup; exit 130' INT TERM
rm -rf "$VENV"
mkdir -p "$VENV"
touch "$MARKER"
if ! "$PYTHON" -m venv "$VENV"; then
  echo "'$PYTHON -m venv' failed; on Debian: apt-get install python3.11-venv" >&2
  cleanup
  exit 1
fi
PY="$VENV/bin/python"

# shellcheck disable=SC2086
"$PY" -m pip install --disable-pip-version-check -q ${PIP_OPTS:-} \
  "tflite-support==0.4.4" "numpy<2" "protobuf<4" "libusb-package"

LIBUSB="$("$PY" -c 'import importlib.util, os; s = importlib.util.find_spec("libusb_package"); print(os.path.join(os.path.dirname(s.origin), "libusb-1.0.so"))')"
[ -f "$LIBUSB" ] || { echo "libusb-package did not ship $LIBUSB" >&2; cleanup; exit 1; }
mkdir -p "$VENV/lib/libusb"
ln -sf "$LIBUSB" "$VENV/lib/libusb/libusb-1.0.so.0"
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cat > "$SITE/albert_tf_libusb_preload.pth" <<PTH
import ctypes, os; p = "$VENV/lib/libusb/libusb-1.0.so.0"; os.path.exists(p) and ctypes.CDLL(p, mode=ctypes.RTLD_GLOBAL)
PTH

"$PY" -c "from tflite_support.task import text; text.BertNLClassifier; text.BertQuestionAnswerer" \
  || { echo "tflite_support.task.text does not import" >&2; cleanup; exit 1; }
touch "$VENV/.complete"
echo "$PY"
