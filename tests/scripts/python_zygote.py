"""The "zygote" of tests/python_processes.py: a Python that has imported TensorFlow, Keras,
tensorflow-text, sentencepiece and NumPy (and JAX, on KERAS_BACKEND=jax) once, and forks a child
per request that runs `python SCRIPT ARGS` (or `python -m MODULE ARGS`) from there, so the child
skips the ~5.5 CPU-s those imports cost. It imports no albert_tf module and no driver: each child
defines its absl flags and loads the project fresh.

    python python_zygote.py FD
FD: this end of a SOCK_SEQPACKET socket pair. A request is one JSON message
{"id", "argv", "env", "cwd", "new_session"} carrying the child's stdin, stdout and stderr fds;
the answers are {"event": "ready"} once, {"event": "started", "id", "pid"} per request and
{"event": "exited", "pid", "status", "cpu"} when a child ends (its wait4 status and CPU seconds,
its own waited-for children included).

Single-threaded: one select loop serves requests and reaps children (SIGCHLD wakes it), since
forking from a process with threads of its own is how deadlocks start. It exits at EOF on its
socket (the test process closed it or died) or when its parent dies (PR_SET_PDEATHSIG).
"""

import atexit
import builtins
import ctypes
import importlib.machinery
import json
import os
import runpy
import select
import signal
import socket
import sys
import tempfile
import threading
import traceback
import types

PR_SET_PDEATHSIG = 1


def import_what_a_driver_imports():
    """What a driver's start imports (albert_tf.drivers.console.setup: TensorFlow with its
    native start-up lines off the run's console, since this process's stderr is a log file, and
    the devices listed), and JAX on KERAS_BACKEND=jax (importing it and Keras' JAX backend does
    not initialise JAX's devices; XLA_FLAGS stays in the zygotes' key all the same, since
    TensorFlow's XLA reads it too)."""
    import numpy  # noqa: F401
    import sentencepiece  # noqa: F401
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    tf.config.list_physical_devices()
    import keras  # noqa: F401

    if os.environ.get("KERAS_BACKEND") == "jax":
        import jax  # noqa: F401


def exit_code(code):
    """The exit status `sys.exit(code)` gives a Python process."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def run_script(path):
    """Runs the file as `python PATH` runs its `__main__` (runpy.run_path would set sys.argv[0]
    to the absolute path; Python keeps it as given, with `__file__` absolute)."""
    sys.path[0] = os.path.dirname(path)
    main = types.ModuleType("__main__")
    main.__file__, main.__builtins__, main.__cached__ = path, builtins, None
    main.__loader__ = importlib.machinery.SourceFileLoader("__main__", path)
    sys.modules["__main__"] = main
    with open(path, "rb") as f:
        code = compile(f.read(), path, "exec")
    exec(code, main.__dict__)


def run_request(request):
    """Runs the request's program as `python ...` would in this (forked) process; its status."""
    argv = request["argv"]
    try:
        if argv[0] == "-m":
            sys.argv = [argv[1], *argv[2:]]
            sys.path[0] = os.getcwd()
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(argv)
            run_script(os.path.abspath(argv[0]))
        code = 0
    except SystemExit as exit:
        code = exit_code(exit.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        code = 128 + signal.SIGINT
    except BaseException:  # an uncaught exception: Python's own report, exit status 1
        kind, value, tb = sys.exc_info()
        while tb is not None and tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__):
            tb = tb.tb_next  # the report starts at the script's frame, as Python's does
        sys.excepthook(kind, value.with_traceback(tb), tb)
        code = 1
    try:  # what the interpreter does at its end: join threads, run atexit, flush
        threading._shutdown()
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return code


def become_child(request, fds, closing):
    """In the forked child: the request's session, cwd, environment and standard streams,
    Python's default signal handling; then runs it and never returns."""
    for fd in closing:
        os.close(fd)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    code = 1
    try:
        if request.get("new_session"):
            os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in set(fds) - {0, 1, 2}:
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        tempfile.tempdir = None  # found again from this environment's TMPDIR
        if "multiprocessing.process" in sys.modules:  # the folder it started in, as imported
            sys.modules["multiprocessing.process"].ORIGINAL_DIR = os.getcwd()
        code = run_request(request)
    finally:
        os._exit(code)


def send(sock, message):
    sock.send(json.dumps(message).encode())


def serve(sock):
    """The select loop: forks a child per request, reports each child's end."""
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    send(sock, {"event": "ready"})
    while True:
        ready, _, _ = select.select([sock, wake_read], [], [], 5.0)
        if wake_read in ready:
            while True:
                try:
                    if not os.read(wake_read, 512):
                        break
                except BlockingIOError:
                    break
        reap(sock)
        if sock not in ready:
            continue
        data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        if not data:
            return  # the test process is gone
        request = json.loads(data)
        pid = os.fork()
        if pid == 0:
            become_child(request, fds, [sock.fileno(), wake_read, wake_write])
        for fd in fds:
            os.close(fd)
        send(sock, {"event": "started", "id": request["id"], "pid": pid})


def reap(sock):
    """Reports every child that has ended."""
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        cpu = usage.ru_utime + usage.ru_stime
        send(sock, {"event": "exited", "pid": pid, "status": status, "cpu": cpu})


def main():
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    sock = socket.socket(fileno=int(sys.argv[1]))
    if os.getppid() == 1:
        return  # the test process died before the prctl
    import_what_a_driver_imports()
    serve(sock)


if __name__ == "__main__":
    main()
