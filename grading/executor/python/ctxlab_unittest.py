"""ctxlab: python -m unittest, with every test's result written where the tests cannot write it. PYTEST_DONT_REWRITE.

ctxlab_boot runs main() in place of `python -m unittest ARGS` (or run it as `python -m ctxlab_unittest ARGS`): the
same test program and -v output,
with a result class that also writes each outcome to the results file (through ctxlab_results, which opens it and
removes it from its folder before any test module is imported), and a loader under which a name that loads no test
fails alone instead of stopping the run.
"""
import sys

# Importing the pytest plugin opens the results file and takes it out of the tests' reach; its writer is shared.
from ctxlab_results import _hex, _missing_module, _write

import unittest  # noqa: E402 (after the results file is out of the tests' reach)


def _record(outcome, test, subtest=None):
    # A subtest reports as its test's id, method and docstring, plus its own description ("(i=1)", "[msg]").
    case, sub = test, ""
    if subtest is not None:
        sub = subtest._subDescription()
    elif isinstance(test, unittest.case._SubTest):
        case, sub = test.test_case, test._subDescription()
    doc = ""
    try:
        doc = case.shortDescription() or ""
    except Exception:
        pass
    _write("unittest", outcome, _hex(case.id()), _hex(getattr(case, "_testMethodName", "")), _hex(doc), _hex(sub))


class _Result(unittest.TextTestResult):
    def startTestRun(self):
        _write("session")
        super().startTestRun()

    def addSuccess(self, test):
        _record("pass", test)
        super().addSuccess(test)

    def addFailure(self, test, err):
        _record("fail", test)
        super().addFailure(test, err)

    def addError(self, test, err):
        _record("error", test)
        # A module a listed name or a test module could not import, as the loader reports it (the error itself, or
        # an ImportError whose text holds the module's traceback).
        if type(test).__name__ == "_FailedTest":
            name = err[1].name if isinstance(err[1], ModuleNotFoundError) else _missing_module(err[1])
            if name:
                _write("missing_module", _hex(name))
        super().addError(test, err)

    def addSkip(self, test, reason):
        _record("skip", test)
        super().addSkip(test, reason)

    def addExpectedFailure(self, test, err):
        _record("xfail", test)
        super().addExpectedFailure(test, err)

    def addUnexpectedSuccess(self, test):
        _record("xpass", test)
        super().addUnexpectedSuccess(test)

    def addSubTest(self, test, subtest, err):
        if err is not None:
            _record("fail" if issubclass(err[0], test.failureException) else "error", test, subtest)
        super().addSubTest(test, subtest, err)


class _Runner(unittest.TextTestRunner):
    resultclass = _Result


class _Loader(unittest.TestLoader):
    # A name unittest cannot load (a doctest's id, a method that is gone) fails as that name alone, as a missing
    # module does, instead of stopping every other listed test.
    def loadTestsFromNames(self, names, module=None):
        suites = []
        for name in names:
            try:
                suites.append(self.loadTestsFromName(name, module))
            except Exception as e:
                failed = unittest.loader._make_failed_test(name, e, self.suiteClass, str(e))
                suites.append(failed[0] if isinstance(failed, tuple) else failed)  # (suite, message) since 3.5
        return self.suiteClass(suites)


def main():
    sys.argv[0] = "python -m unittest"
    unittest.main(module=None, testRunner=_Runner, testLoader=_Loader())


if __name__ == "__main__":
    main()
