"""tests/python_processes.py, the tests' `python SCRIPT` forked from a pre-imported zygote: it
behaves as subprocess does (status, streams, env, cwd, timeout, SIGKILL), forks only where that
is the same, and counts its children's CPU."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest
import python_processes

SCRIPT = """
import atexit, os, sys, threading, time
mode = sys.argv[1]
print("argv=" + ",".join(sys.argv[1:]), "cwd=" + os.getcwd(), "X=" + os.environ.get("X", "-"))
print("file=" + __file__, "argv0=" + sys.argv[0])
print("pid=%d" % os.getpid(), "ppid=%d" % os.getppid(), "path0=" + sys.path[0], "main=" + __name__)
print("to stderr", file=sys.stderr)
if mode == "exit":
    sys.exit(int(sys.argv[2]))
if mode == "raise":
    raise ValueError("boom")
if mode == "sleep":
    print("sleeping", flush=True)
    time.sleep(float(sys.argv[2]))
if mode == "echo":
    print("stdin=" + sys.stdin.read().upper())
if mode == "burn":
    end = time.process_time() + float(sys.argv[2])
    while time.process_time() < end:
        pass
if mode == "finish":
    atexit.register(lambda: print("atexit ran"))
    threading.Thread(target=lambda: (time.sleep(0.2), print("thread joined"))).start()
if mode == "backend":
    import jax, keras
    print("backend=" + keras.backend.backend(), "devices=%d" % jax.device_count())
"""


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    path = tmp_path_factory.mktemp("scripts") / "child.py"
    path.write_text(textwrap.dedent(SCRIPT))
    return str(path)


def _lines(text):
    return dict(
        item.split("=", 1) for line in text.splitlines() for item in line.split() if "=" in item
    )


def test_a_script_runs_forked_with_argv_env_cwd_and_streams(script, tmp_path):
    r = python_processes.run(
        [sys.executable, script, "exit", "3"],
        capture_output=True,
        text=True,
        env=dict(os.environ, X="y"),
        cwd=tmp_path,
        timeout=120,
    )
    seen = _lines(r.stdout)
    assert r.returncode == 3
    assert r.stderr == "to stderr\n"
    assert seen["argv"] == "exit,3" and seen["X"] == "y" and seen["cwd"] == str(tmp_path)
    assert seen["path0"] == os.path.dirname(script) and seen["main"] == "__main__"
    assert int(seen["ppid"]) != os.getpid()  # forked from the zygote, not started by us
    raw = python_processes.run([sys.executable, script, "exit", "0"], stdout=subprocess.PIPE)
    assert raw.returncode == 0 and isinstance(raw.stdout, bytes) and raw.stderr is None
    assert _lines(raw.stdout.decode())["X"] == "-"  # this process's environment by default
    folder, name = os.path.split(script)
    relative = python_processes.run(
        [sys.executable, name, "exit", "0"], capture_output=True, text=True, cwd=folder
    )
    seen = _lines(relative.stdout)
    assert seen["argv0"] == name and seen["file"] == script  # as Python 3.9+ sets them


def test_an_uncaught_exception_prints_its_traceback_and_exits_1(script):
    r = python_processes.run([sys.executable, script, "raise"], capture_output=True, text=True)
    assert r.returncode == 1
    assert "Traceback (most recent call last)" in r.stderr
    frames = [line for line in r.stderr.splitlines() if line.startswith('  File "')]
    assert len(frames) == 1 and "child.py" in frames[0]  # the script's frame, none of ours
    assert r.stderr.rstrip().splitlines()[-1] == "ValueError: boom"


def test_stdin_stderr_to_stdout_and_the_ends_of_the_interpreter(script, tmp_path):
    r = python_processes.run(
        [sys.executable, script, "echo"],
        input="hello",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert "stdin=HELLO" in r.stdout and "to stderr" in r.stdout
    log = tmp_path / "log.txt"
    with open(log, "w") as f:
        done = python_processes.run([sys.executable, script, "finish"], stdout=f, stderr=f)
    assert done.returncode == 0
    assert log.read_text().splitlines()[-2:] == ["thread joined", "atexit ran"]


def test_sigkill_gives_minus_9_and_a_timeout_kills_the_child(script):
    p = python_processes.start(
        [sys.executable, script, "sleep", "60"], stdout=subprocess.PIPE, text=True
    )
    assert p.stdout.readline().startswith("argv=sleep")
    assert p.poll() is None
    p.kill()
    assert p.wait(timeout=60) == -signal.SIGKILL and p.returncode == -9
    with pytest.raises(subprocess.TimeoutExpired) as timed_out:
        python_processes.run(
            [sys.executable, script, "sleep", "60"], capture_output=True, timeout=2
        )
    assert b"sleeping" in timed_out.value.output
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(_lines(timed_out.value.output.decode())["pid"]), 0)


def test_two_children_run_at_once(script):
    procs = [
        python_processes.start([sys.executable, script, "sleep", "1"], stdout=subprocess.DEVNULL)
        for _ in range(2)
    ]
    assert procs[0].pid != procs[1].pid
    assert [p.poll() for p in procs] == [None, None]  # both started before either ended
    assert [p.wait(timeout=60) for p in procs] == [0, 0]


def test_the_forked_children_cpu_is_counted(script):
    before = python_processes.cpu_seconds()
    r = python_processes.run([sys.executable, script, "burn", "0.5"], capture_output=True)
    assert r.returncode == 0
    assert python_processes.cpu_seconds() - before >= 0.5


def test_what_a_fork_would_not_reproduce_runs_in_a_real_process(script):
    code = "import os; print(os.getppid())"
    r = python_processes.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert int(r.stdout) == os.getpid()
    torch = dict(os.environ, KERAS_BACKEND="torch")
    assert not python_processes.forks([sys.executable, script], {"env": torch})
    assert not python_processes.forks([sys.executable, script, "--verbose_errors"], {})
    assert not python_processes.forks([sys.executable, script], {"shell": True})
    assert not python_processes.forks(["python3", script], {})


def test_another_keras_backend_gets_its_own_zygote(script):
    tf_child = python_processes.run([sys.executable, script, "exit", "0"], capture_output=True)
    env = dict(
        os.environ, KERAS_BACKEND="jax", XLA_FLAGS="--xla_force_host_platform_device_count=2"
    )
    r = python_processes.run(
        [sys.executable, script, "backend"], capture_output=True, text=True, env=env, timeout=300
    )
    seen = _lines(r.stdout)
    assert r.returncode == 0, r.stderr
    assert seen["backend"] == "jax" and seen["devices"] == "2"
    assert seen["ppid"] != _lines(tf_child.stdout.decode())["ppid"]
