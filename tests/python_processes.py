"""`python SCRIPT ARGS` for the tests at half the CPU: `run` and `start` are drop-ins for
`subprocess.run` and `subprocess.Popen` that fork the child from a "zygote" (tests/scripts/
python_zygote.py), a Python that has already imported TensorFlow, Keras, tensorflow-text,
sentencepiece and NumPy (~5.5 CPU-s a fresh `python` pays before a driver does anything).

The child does what `python SCRIPT ARGS` would: default signal handling, the request's cwd,
environment and stdin/stdout/stderr, `sys.argv`, `sys.path[0]` = the script's folder, the script
run as `__main__` (`-m MODULE` as runpy runs it), SystemExit's code, an uncaught exception's
traceback on stderr and status 1, the threads joined, atexit run, the streams flushed. Return
codes are subprocess's (-9 after SIGKILL), so is TimeoutExpired (after killing the child).

A real process (plain subprocess) is started instead whenever a fork would not be the same:
argv[0] is not this Python; argv[1] is an option other than `-m` (`-c`, `-W`, ...) or a file
that is not `.py`; a keyword the fork does not do (shell, preexec_fn, pass_fds, user, ...);
KERAS_BACKEND=torch (torch must load before TensorFlow); a verbose driver run (--verbose_errors,
ALBERT_TF_VERBOSE: TensorFlow's native start-up lines are part of what it shows);
ALBERT_TF_TEST_REAL_PROCESSES=1 (everything real, to compare). One zygote serves each value of
the variables read at import time (`import_time_environment`: KERAS_BACKEND, XLA_FLAGS, every
TF_*/JAX_*/XLA_*/KERAS_*/PYTHON*/CUDA_* variable, HOME, TMPDIR, PATH, locale ...; not
TF_CONFIG, which TensorFlow reads when a strategy starts), started when first asked for, per
pytest worker, at most `MAX_ZYGOTES` at once (the least recently used one with no running
child is closed to make room).

Tests that must NOT use it, because their claim is about a process's start-up: the checks of
TensorFlow's native start-up lines ("prints no native lines", "the console shows the run, not
tensorflow": the zygote imported TensorFlow with its stderr elsewhere), import-time backend
selection (tests/test_package.py), `python -m albert_tf.info` (tests/test_info.py), virtual-env
and install tests (tests/test_first_run.py, tests/deploy/test_tasklib_env.py).

The forked children are the zygote's, not the test process's, so RUSAGE_CHILDREN misses them:
`cpu_seconds()` is their CPU (and the running zygotes' own), which bench/suite_cpu.py adds to a
test's children column.
"""

import atexit
import io
import itertools
import json
import os
import pathlib
import select
import selectors
import socket
import subprocess
import sys
import tempfile
import time

ZYGOTE = os.fspath(pathlib.Path(__file__).resolve().parent / "scripts" / "python_zygote.py")
MAX_ZYGOTES = 3
IMPORT_TIME_PREFIXES = (
    "TF_", "TF2_", "JAX_", "XLA_", "KERAS_", "PYTHON", "CUDA_", "TPU_", "PJRT_", "LD_", "OMP_",
    "MKL_", "KMP_", "LC_", "NVIDIA_", "GRPC_", "ABSL_", "HF_",
)  # fmt: skip
IMPORT_TIME_NAMES = ("HOME", "TMPDIR", "PATH", "LANG", "LANGUAGE", "TZ")
RUN_TIME_NAMES = ("TF_CONFIG",)  # read when a strategy starts, not at import
FORKED_KEYWORDS = {
    "stdin", "stdout", "stderr", "env", "cwd", "text", "universal_newlines", "encoding",
    "errors", "start_new_session", "bufsize", "close_fds",
}  # fmt: skip
_ZYGOTES = {}  # import-time environment -> _Zygote, least recently used first
_CPU = {"forked": 0.0, "zygotes_closed": 0.0}
_IDS = itertools.count()
atexit.register(lambda: close_zygotes())


def import_time_environment(env):
    """The variables of `env` that a Python reads while importing TensorFlow, Keras or JAX.

    Args:
        env: An environment (a mapping).

    Returns:
        A sorted tuple of (name, value): the key of the zygote that serves `env`.

    Example:

    >>> import_time_environment({"KERAS_BACKEND": "jax", "TF_CONFIG": "{}", "USER": "x"})
    (('KERAS_BACKEND', 'jax'),)
    """
    return tuple(
        sorted(
            (name, value)
            for name, value in env.items()
            if name not in RUN_TIME_NAMES
            and (name in IMPORT_TIME_NAMES or name.startswith(IMPORT_TIME_PREFIXES))
        )
    )


def forks(args, kwargs):
    """Whether `start(args, **kwargs)` forks from a zygote (else it starts a real process).

    Args:
        args: The argv.
        kwargs: subprocess.Popen's keywords.

    Returns:
        True when a forked child would be the same as `python ...`.

    Example:

    >>> import sys
    >>> forks([sys.executable, "run_classifier.py"], {}), forks([sys.executable, "-c", "1"], {})
    (True, False)
    """
    env = kwargs.get("env")
    env = os.environ if env is None else env
    args = [os.fspath(a) for a in args] if isinstance(args, (list, tuple)) else None
    return bool(
        args
        and len(args) >= 2
        and args[0] == sys.executable
        and (args[1].endswith(".py") or (args[1] == "-m" and len(args) >= 3))
        and set(kwargs) <= FORKED_KEYWORDS
        and env.get("KERAS_BACKEND", "tensorflow") in ("tensorflow", "jax")
        and "--verbose_errors" not in args
        and not env.get("ALBERT_TF_VERBOSE")
        and not env.get("ALBERT_TF_TEST_REAL_PROCESSES")
        and hasattr(socket, "send_fds")
    )


def start(args, **kwargs):
    """`subprocess.Popen(args, **kwargs)`, forked from a zygote where that is the same.

    Args:
        args: The argv (`[sys.executable, script, ...]` forks).
        **kwargs: subprocess.Popen's keywords (stdin, stdout, stderr, env, cwd, text, ...).

    Returns:
        A subprocess.Popen or a `ForkedProcess` (the same methods and attributes).

    Example:

    >>> import sys
    >>> p = start([sys.executable, "-c", "print(6 * 7)"], stdout=subprocess.PIPE, text=True)
    >>> p.communicate()[0], p.returncode
    ('42\\n', 0)
    """
    if not forks(args, kwargs):
        return subprocess.Popen(args, **kwargs)
    return ForkedProcess(args, **kwargs)


def run(args, *, input=None, capture_output=False, timeout=None, check=False, **kwargs):
    """`subprocess.run(args, ...)`, forked from a zygote where that is the same.

    Args:
        args: The argv.
        input: Bytes (or text, with text=True) for the child's stdin.
        capture_output: stdout and stderr to PIPE.
        timeout: Seconds; past them the child is killed and TimeoutExpired raised.
        check: Raise CalledProcessError on a non-zero status.
        **kwargs: subprocess.Popen's keywords.

    Returns:
        subprocess.CompletedProcess.

    Raises:
        subprocess.TimeoutExpired: past `timeout`.
        subprocess.CalledProcessError: with check=True, a non-zero status.

    Example:

    >>> import sys
    >>> run([sys.executable, "-c", "import sys; sys.exit(3)"]).returncode
    3
    """
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    with start(args, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as expired:
            process.kill()
            expired.output, expired.stderr = process.communicate()
            raise
        except BaseException:
            process.kill()
            raise
        code = process.poll()
    if check and code:
        raise subprocess.CalledProcessError(code, process.args, stdout, stderr)
    return subprocess.CompletedProcess(process.args, code, stdout, stderr)


def cpu_seconds():
    """CPU seconds of the forked children that have ended plus the live zygotes' own (a closed
    zygote's CPU is in the test process's RUSAGE_CHILDREN from then on).

    Returns:
        Seconds (float).

    Example:

    >>> cpu_seconds() >= 0
    True
    """
    return _CPU["forked"] + sum(z.own_cpu() for z in _ZYGOTES.values())


def close_zygotes():
    """Ends every zygote (the forked children that still run go on, like orphans).

    Example:

    >>> close_zygotes()
    """
    while _ZYGOTES:
        _ZYGOTES.pop(next(iter(_ZYGOTES))).close()


class _Zygote:
    """One zygote process and its socket; `pump` collects its answers."""

    def __init__(self, env):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock, self.log = ours, tempfile.TemporaryFile()
        with theirs:
            self.process = subprocess.Popen(
                [sys.executable, ZYGOTE, str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=subprocess.STDOUT,
            )
        self.started, self.exited, self.running = {}, {}, set()
        self.pump_until(lambda: "ready" in self.started)

    def pump_until(self, done, timeout=None):
        """Reads answers until `done()`; False if `timeout` seconds pass first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not done():
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not select.select([self.sock], [], [], left)[0]:
                return False
            message = self.sock.recv(1 << 16)
            if not message:
                self.log.seek(0)
                raise RuntimeError(
                    "the zygote ended: " + self.log.read().decode(errors="replace")[-4000:]
                )
            message = json.loads(message)
            if message["event"] == "ready":
                self.started["ready"] = True
            elif message["event"] == "started":
                self.started[message["id"]] = message["pid"]
                self.running.add(message["pid"])
            else:
                self.exited[message["pid"]] = message["status"]
                self.running.discard(message["pid"])
                _CPU["forked"] += message["cpu"]
        return True

    def fork(self, argv, env, cwd, fds, new_session):
        """Asks for a child; its pid."""
        request_id = next(_IDS)
        request = {"id": request_id, "argv": argv, "env": env, "cwd": cwd}
        request["new_session"] = new_session
        socket.send_fds(self.sock, [json.dumps(request).encode()], fds)
        self.pump_until(lambda: request_id in self.started)
        return self.started.pop(request_id)

    def own_cpu(self):
        try:
            fields = pathlib.Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)
            utime, stime = fields[1].split()[11:13]
        except (OSError, IndexError, ValueError):
            return 0.0
        return (int(utime) + int(stime)) / os.sysconf("SC_CLK_TCK")

    def close(self):
        self.sock.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def _zygote(env):
    key = import_time_environment(env)
    zygote = _ZYGOTES.pop(key, None)
    if zygote is None or zygote.process.poll() is not None:
        idle = [k for k, z in _ZYGOTES.items() if not z.running]  # least recently used first
        for old in idle[: max(0, len(_ZYGOTES) + 1 - MAX_ZYGOTES)]:
            _ZYGOTES.pop(old).close()
        zygote = _Zygote(dict(env))
    _ZYGOTES[key] = zygote  # most recently used last
    return zygote


def _stream(spec, which, opened):
    """(fd for the child, our end or None) for a stdin/stdout/stderr keyword."""
    if spec is None:
        return which, None
    if spec == subprocess.DEVNULL:
        fd = os.open(os.devnull, os.O_RDWR)
        opened.append(fd)
        return fd, None
    if spec == subprocess.PIPE:
        read, write = os.pipe()
        ours, theirs = (write, read) if which == 0 else (read, write)
        opened.append(theirs)
        return theirs, ours
    return (spec if isinstance(spec, int) else spec.fileno()), None


class ForkedProcess:
    """A child forked from a zygote, with subprocess.Popen's methods and attributes (pid,
    returncode, args, stdin/stdout/stderr, poll, wait, communicate, send_signal, terminate,
    kill; a context manager). Made by `start`.

    Example:

    >>> import sys
    >>> p = start([sys.executable, "-m", "this"], stdout=subprocess.DEVNULL)
    >>> p.wait(timeout=60)
    0
    """

    def __init__(self, args, stdin=None, stdout=None, stderr=None, env=None, cwd=None, **kw):
        self.args, self.returncode, self._chunks = args, None, {}
        self.text = bool(kw.get("text") or kw.get("universal_newlines") or kw.get("encoding"))
        self.encoding, self.errors = kw.get("encoding") or "utf-8", kw.get("errors") or "strict"
        env = dict(os.environ if env is None else env)
        opened, fds, ours = [], [], []
        try:
            for which, spec in enumerate((stdin, stdout, stderr)):
                if which == 2 and spec == subprocess.STDOUT:
                    fd, end = fds[1], None
                else:
                    fd, end = _stream(spec, which, opened)
                fds.append(fd)
                ours.append(end)
            zygote = _zygote(env)
            self.pid = zygote.fork(
                [os.fspath(a) for a in args[1:]],
                {k: os.fspath(v) for k, v in env.items()},
                os.path.abspath(os.fspath(cwd if cwd is not None else os.getcwd())),
                fds,
                bool(kw.get("start_new_session")),
            )
            self._zygote = zygote
        finally:
            for fd in opened:
                os.close(fd)
        self.stdin, self.stdout, self.stderr = (
            None if end is None else self._wrap(end, "wb" if which == 0 else "rb")
            for which, end in enumerate(ours)
        )

    def _wrap(self, fd, mode):
        raw = open(fd, mode)
        if not self.text:
            return raw
        return io.TextIOWrapper(raw, self.encoding, self.errors, write_through=mode == "wb")

    def poll(self):
        """The return code, or None while the child runs."""
        if self.returncode is None:
            self._zygote.pump_until(lambda: self.pid in self._zygote.exited, timeout=0)
            if self.pid in self._zygote.exited:
                status = self._zygote.exited.pop(self.pid)
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout=None):
        """Waits for the end (subprocess.TimeoutExpired past `timeout` seconds)."""
        if self.returncode is None:
            if not self._zygote.pump_until(lambda: self.pid in self._zygote.exited, timeout):
                raise subprocess.TimeoutExpired(self.args, timeout)
        return self.poll()

    def communicate(self, input=None, timeout=None):
        """Writes `input`, reads stdout and stderr to their end, waits; (stdout, stderr)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        chunks = self._chunks  # kept across a TimeoutExpired, as subprocess does
        with selectors.DefaultSelector() as selector:
            if self.stdin is not None and not self.stdin.closed:
                data = input or b""
                data = data.encode(self.encoding, self.errors) if isinstance(data, str) else data
                self.stdin.flush()
                selector.register(self.stdin.fileno(), selectors.EVENT_WRITE, memoryview(data))
            for stream in (self.stdout, self.stderr):
                if stream is not None and not stream.closed:
                    chunks.setdefault(stream, [])
                    selector.register(stream.fileno(), selectors.EVENT_READ, stream)
            while selector.get_map():
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise subprocess.TimeoutExpired(self.args, timeout)
                for key, _ in selector.select(left):
                    self._transfer(selector, key, chunks)
        self.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
        out = [self._decode(chunks.get(s)) for s in (self.stdout, self.stderr)]
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        return tuple(out)

    def _transfer(self, selector, key, chunks):
        if isinstance(key.data, memoryview):
            written = os.write(key.fd, key.data[:65536]) if key.data else 0
            if written >= len(key.data):
                selector.unregister(key.fd)
                self.stdin.close()
            else:
                selector.modify(key.fd, selectors.EVENT_WRITE, key.data[written:])
            return
        data = os.read(key.fd, 65536)
        if data:
            chunks[key.data].append(data)
        else:
            selector.unregister(key.fd)

    def _decode(self, chunks):
        if chunks is None:
            return None
        data = b"".join(chunks)
        if not self.text:
            return data
        return data.decode(self.encoding, self.errors).replace("\r\n", "\n").replace("\r", "\n")

    def send_signal(self, signum):
        """Sends `signum` to the child while it runs."""
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self):
        """SIGTERM."""
        self.send_signal(15)

    def kill(self):
        """SIGKILL."""
        self.send_signal(9)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait()
