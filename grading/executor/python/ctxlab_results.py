"""ctxlab: every test's result, written where the tests cannot write it (docs/grading.md, "Python results").

PYTEST_DONT_REWRITE (ctxlab_boot imports it before pytest, which would otherwise warn that it cannot rewrite it).

pytest loads this plugin (-p ctxlab_results) before any conftest.py or test module. It takes the results file's
path out of the environment, opens the file and removes it from its folder: a test cannot find it by name, a process
the tests start does not inherit the descriptor (Python opens it non-inheritable), and nothing the tests print is
read as a result. It uses only the builtins and the os module (frozen, imported before any path is searched), so no
module of the repository stands in for what it calls.
"""
import os

_fd = -1
_path = os.environ.pop("CTXLAB_RESULTS", "")
# The docker executor's channel is a descriptor the eval script passes (its stdout, which nothing else writes): a
# non-inheritable copy is kept and the number the tests could guess is closed.
_channel = os.environ.pop("CTXLAB_RESULTS_FD", "")
if _path:
    _fd = os.open(_path, os.O_WRONLY | os.O_APPEND)
    os.unlink(_path)
elif _channel.isdigit():
    _fd = os.dup(int(_channel))
    os.close(int(_channel))
if _fd >= 0:
    # The channel is claimed: from now on it is the run's only source of results (testrun.Options.OutputIfUnclaimed).
    os.write(_fd, b"ctxlab1\tclaim\n")


def _hex(s):
    return str(s).encode("utf-8", "backslashreplace").hex()


def _write(*fields):
    if _fd >= 0:
        os.write(_fd, ("ctxlab1\t" + "\t".join(fields) + "\n").encode("ascii"))


def pytest_sessionstart(session):
    _write("session")


def pytest_runtest_logreport(report):
    # The outcomes of pytest's -rA summary: a failed setup or teardown is an error, an xfail that passed an xpass.
    xfail = hasattr(report, "wasxfail")
    if report.when == "call":
        if report.passed:
            outcome = "xpass" if xfail else "pass"
        elif report.skipped:
            outcome = "xfail" if xfail else "skip"
        else:
            outcome = "fail"
    elif report.failed:
        outcome = "error"
    elif report.skipped and report.when == "setup":
        outcome = "xfail" if xfail else "skip"
    else:
        return
    _write("pytest", outcome, _hex(report.nodeid))


def _missing_module(text):
    # "ModuleNotFoundError: No module named 'x.y'" in a collection error's report.
    marker = "ModuleNotFoundError: No module named "
    for line in str(text).splitlines():
        i = line.find(marker)
        if i >= 0:
            return line[i + len(marker):].strip().strip("'\"")
    return ""


def pytest_collectreport(report):
    # A file that fails to collect is an error under its own id, as pytest's -rA summary lists it, and a module it
    # could not import is named. One hook: a second definition of the name would replace the first.
    if report.failed:
        _write("pytest", "error", _hex(report.nodeid))
        name = _missing_module(report.longrepr)
        if name:
            _write("missing_module", _hex(name))
