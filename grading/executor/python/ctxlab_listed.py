"""ctxlab: run only the listed tests (grading.tests = 'listed'). PYTEST_DONT_REWRITE.

Of the collected tests it keeps those whose node id, or the id cut at its first space (as SWE-bench lists
parametrized tests), is listed, and deselects the others. Passing the ids on pytest's command line instead would run
nothing at all as soon as one id is not found. The list holds one hex-encoded UTF-8 id per line, read with the
builtins only.
"""
import os

with open(os.environ.pop("CTXLAB_LISTED_TESTS"), encoding="ascii") as f:
    _LISTED = {bytes.fromhex(line.strip()).decode("utf-8") for line in f if line.strip()}


def pytest_collection_modifyitems(session, config, items):
    keep, drop = [], []
    for item in items:
        nodeid = item.nodeid
        (keep if nodeid in _LISTED or nodeid.split(" ")[0] in _LISTED else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
