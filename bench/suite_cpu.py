"""The test suite's cost by CPU seconds, a pytest plugin: what each test used of the CPU (its own
process and the processes it started and waited for, those forked for it by
tests/python_processes.py's zygotes included), which stays the same on a busy machine
where --durations' wall time does not (at a load of 16 on 2 cores a test's wall time is ~8x its
CPU time). On 2 cores the suite's wall time is about its CPU total / 2.

    PYTHONPATH=$PWD:bench python -m pytest -p suite_cpu -n 2 tests
    PYTHONPATH=$PWD:bench SUITE_CPU_TOP=60 python -m pytest -p suite_cpu tests/engine

Prints, after the run, the total and the SUITE_CPU_TOP (default 30) most costly tests and test
files (setup, call and teardown together; a shared fixture's cost, and a worker's first
imports, fall on the first test that needs them).
"""

import collections
import os
import resource
import sys
import time

import pytest

KEY = "suite_cpu"
_START = pytest.StashKey()
_COSTS = {}


def _cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    children = children.ru_utime + children.ru_stime
    # the processes tests/python_processes.py forks from its zygotes are the zygotes' children,
    # not this process's: it counts their CPU (and the zygotes' own) itself
    forked = sys.modules.get("python_processes")
    if forked is not None:
        children += forked.cpu_seconds()
    return own.ru_utime + own.ru_stime, children


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Notes the CPU and wall clock where the test (its setup first) starts."""
    item.stash[_START] = (*_cpu(), time.time())
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Puts (own, children, wall) seconds on the teardown report, which pytest-xdist sends on
    to the controller."""
    if call.when == "teardown" and _START in item.stash:
        own0, children0, wall0 = item.stash[_START]
        own, children = _cpu()
        cost = (round(own - own0, 2), round(children - children0, 2), round(time.time() - wall0, 1))
        item.user_properties.append((KEY, cost))
    yield


def pytest_runtest_logreport(report):
    """Collects the records, in the controller as in a single process."""
    if report.when == "teardown":
        for name, value in report.user_properties:
            if name == KEY and value:
                _COSTS[report.nodeid] = value


def pytest_terminal_summary(terminalreporter):
    """Prints the total and the most costly tests and files."""
    if not _COSTS:
        return
    top = int(os.environ.get("SUITE_CPU_TOP", "30"))
    write = terminalreporter.write_line
    total = sum(own + children for own, children, _ in _COSTS.values())
    terminalreporter.section(f"CPU seconds: {total:.0f} over {len(_COSTS)} tests")
    files = collections.Counter()
    for nodeid, (own, children, _) in _COSTS.items():
        files[nodeid.split("::")[0]] += own + children
    write("cpu s    own s  children s   wall s  test")
    ranked = sorted(_COSTS.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))
    for nodeid, (own, children, wall) in ranked[:top]:
        write(f"{own + children:6.1f}  {own:6.1f}  {children:10.1f}  {wall:7.1f}  {nodeid}")
    write("cpu s  file")
    for path, cpu in files.most_common(top):
        write(f"{cpu:6.1f}  {path}")
