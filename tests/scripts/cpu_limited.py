"""Run a Python script under a CPU-time limit: cpu_limited.py SECONDS SCRIPT [ARGS...].

Tests bound their subprocesses by CPU seconds rather than wall-clock seconds, so a loaded
machine (pytest -n 2 beside other jobs) slows a child down without failing it, while a
runaway child is still stopped (SIGXCPU at SECONDS, SIGKILL 5 s later).
"""

import os
import resource
import runpy
import sys

if len(sys.argv) < 3:
    sys.exit("usage: cpu_limited.py SECONDS SCRIPT [ARGS...]")
seconds = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 5))
script = sys.argv[2]
sys.argv = sys.argv[2:]
sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python SCRIPT` would have it
runpy.run_path(script, run_name="__main__")
