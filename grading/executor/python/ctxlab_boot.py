"""ctxlab: start a Python process of a graded run so that its start-up reads nothing of the worktree.

PYTEST_DONT_REWRITE. Every python, python3, pytest (and tox) a graded command starts is one of ctxlab's shims, which
runs this file in two stages (docs/grading.md, "Python start-up"):

1. `INTERPRETER -I -S ctxlab_boot.py SHIM [--ctxlab-script SCRIPT] ARGS`: isolated, without site, so nothing but the
   standard library is read. It splits ARGS as the interpreter would (options, then -c, -m, a script or stdin),
   moves the PYTHON* variables that make an interpreter read files at start (PYTHONPATH, PYTHONHOME, ...) out of the
   environment, and executes stage 2: the same interpreter (sys.executable) with -s and the options.
2. `INTERPRETER -s OPTIONS ctxlab_boot.py --ctxlab-stage2 TARGET`: site has run on the interpreter's own folders
   only (no PYTHONPATH, no user site, no current or script folder on the path: no sitecustomize, usercustomize,
   .pth file or module of the worktree was imported). When the target is pytest or unittest and the run's results
   file is still there, it claims it (ctxlab_results) and loads ctxlab's plugins; then it puts back the variables,
   builds sys.path as the interpreter would have (the script's or current folder, then PYTHONPATH) and runs the
   target as the interpreter would.

Only the standard library is used, and only what -I -S finds.
"""
import json
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
_CONFIG = os.path.join(_HERE, "ctxlab_boot.json")
_STAGE2 = "--ctxlab-stage2"
_BOOT_ENV = "CTXLAB_BOOT"

# PYTHON* variables that make the interpreter read no file at start; every other PYTHON* variable (PYTHONPATH,
# PYTHONHOME, PYTHONSTARTUP, PYTHONUSERBASE, PYTHONPLATLIBDIR, PYTHONPYCACHEPREFIX, ...) is held back from the
# interpreter and put back for the target and its children.
_KEEP = {
    "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8", "PYTHONWARNINGS", "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED", "PYTHONFAULTHANDLER", "PYTHONDEVMODE", "PYTHONTRACEMALLOC", "PYTHONASYNCIODEBUG",
    "PYTHONINTMAXSTRDIGITS", "PYTHONWARNDEFAULTENCODING", "PYTHONOPTIMIZE", "PYTHONVERBOSE", "PYTHONDEBUG",
    "PYTHONCOERCECLOCALE", "PYTHONMALLOC", "PYTHONMALLOCSTATS", "PYTHONNOUSERSITE", "PYTHONBREAKPOINT",
    "PYTHONINSPECT", "PYTHONPROFILEIMPORTTIME", "PYTHONNODEBUGRANGES", "PYTHONSAFEPATH",
}

# Interpreter options that take a value, and those after which the interpreter only informs and exits.
_WITH_VALUE = "WX"
_INFORM = "hV?"


def _split(args):
    """Split an interpreter's arguments into its options and the target (-c CMD, -m MOD, a script or -, then the
    target's arguments), as the interpreter reads them; informational is set for -h, -V and --help/--version."""
    opts, i, informational = [], 0, False
    while i < len(args):
        a = args[i]
        if a == "-" or not a.startswith("-"):
            return opts, args[i:], informational
        if a == "--":
            return opts, args[i + 1:], informational
        if a.startswith("--"):
            if a == "--check-hash-based-pycs":
                opts += args[i:i + 2]
                i += 2
                continue
            return opts, [], True
        j = 1
        while j < len(a):
            ch = a[j]
            if ch in "cm":
                value = a[j + 1:]
                rest = args[i + 1:]
                if not value and rest:
                    value, rest = rest[0], rest[1:]
                return opts, ["-" + ch, value] + rest, informational
            if ch in _WITH_VALUE:
                value = a[j + 1:]
                if not value and i + 1 < len(args):
                    i += 1
                    value = args[i]
                opts += ["-" + ch, value]
                break
            if ch in _INFORM:
                informational = True
            opts.append("-" + ch)
            j += 1
        i += 1
    return opts, [], informational


def _stage1(argv):
    shim, args = argv[0], argv[1:]
    script = None
    if args[:1] == ["--ctxlab-script"]:
        script, args = args[1], args[2:]
    if script is not None:
        opts, target, informational = [], [script] + args, False
    else:
        opts, target, informational = _split(args)
    if informational:
        os.execv(sys.executable, [sys.executable] + args)
    env = dict(os.environ)
    held = {k: env.pop(k) for k in list(env) if k.startswith("PYTHON") and k not in _KEEP}
    env[_BOOT_ENV] = json.dumps({"shim": shim, "held": held})
    os.execve(sys.executable, [sys.executable, "-s"] + opts + [os.path.abspath(__file__), _STAGE2] + target, env)


def _runner(target):
    """The test runner a target starts: "pytest", "unittest" or None."""
    if target[:1] == ["-m"] and len(target) > 1:
        return {"pytest": "pytest", "py.test": "pytest", "unittest": "unittest"}.get(target[1])
    if target and not target[0].startswith("-"):
        if os.path.basename(target[0]) in ("pytest", "py.test", "pytest-3"):
            return "pytest"
    return None


def _claim(runner, config):
    """Load ctxlab's results plugin (and the listed plugin) from this folder, before any folder of the worktree is on
    the path (they use the os module only, which is frozen); the results plugin claims the results file (if no other process has: the first to rename it wins). It returns
    whether it did, and the arguments pytest gets in front of the target's own."""
    results = config.get("results", "")
    if not results:
        return False, []
    claimed = "%s.%d" % (results, os.getpid())
    try:
        os.rename(results, claimed)
    except OSError:
        return False, []  # claimed by another process of the run, or no results file
    sys.path.insert(0, _HERE)
    try:
        os.environ["CTXLAB_RESULTS"] = claimed
        import ctxlab_results  # noqa: F401 (opens and unlinks the file; pops the variable)
        plugins = ["-p", "ctxlab_results"]
        if config.get("listed"):
            os.environ["CTXLAB_LISTED_TESTS"] = config["listed"]
            import ctxlab_listed  # noqa: F401
            plugins += ["-p", "ctxlab_listed"]
    finally:
        sys.path.remove(_HERE)
    return True, plugins if runner == "pytest" else []


def _python_path(held):
    """PYTHONPATH's folders as the interpreter puts them on sys.path: absolute, an empty entry the current folder,
    without repeats."""
    if sys.flags.ignore_environment or "PYTHONPATH" not in held:
        return []
    out = []
    for entry in held["PYTHONPATH"].split(os.pathsep):
        entry = os.path.abspath(entry) if entry else os.getcwd()
        if entry not in out:
            out.append(entry)
    return out


def _run_code(code, filename, loader=None):
    main = sys.modules["__main__"]
    names = main.__dict__
    builtins = names["__builtins__"]
    names.clear()
    names.update(__name__="__main__", __doc__=None, __package__=None, __spec__=None, __builtins__=builtins,
                 __loader__=loader)
    if filename is not None:
        names.update(__file__=filename, __cached__=None)
    exec(code, names)


def _stage2(target):
    boot = json.loads(os.environ.pop(_BOOT_ENV))
    held = boot["held"]
    for k in [k for k in os.environ if k.startswith("CTXLAB_")]:
        del os.environ[k]
    with open(_CONFIG, encoding="utf-8") as f:
        config = json.load(f)
    runner = _runner(target)
    claimed, extra = _claim(runner, config) if runner else (False, [])

    # Back to what a plain interpreter would have: the variables, the executable children start (this shim, so
    # they start the same way), and the path.
    os.environ.update(held)
    sys.executable = boot["shim"]
    if "PYTHONPYCACHEPREFIX" in held and not sys.flags.ignore_environment:
        sys.pycache_prefix = os.path.abspath(held["PYTHONPYCACHEPREFIX"])
    if not target:
        target = ["-"]
    if target[0] == "-m":
        path0, mod, args = os.getcwd(), target[1], target[2:]
    elif target[0] == "-c":
        path0, mod, args = "", None, target[2:]
    elif target[0] == "-":
        path0, mod, args = "", None, target[1:]
    else:
        path0, mod, args = os.path.dirname(os.path.realpath(target[0])), None, target[1:]
    rest = sys.path[1:]
    head = [] if sys.flags.safe_path else [path0]
    pythonpath = _python_path(held)
    sys.path[:] = head + pythonpath + [p for p in rest if p not in pythonpath]

    if runner == "unittest" and claimed:
        # unittest and what it imports come from the path as under a plain interpreter (a repository may hold
        # modules of the standard library, as CPython's does); the results file is already claimed.
        sys.path.insert(0, _HERE)
        try:
            import ctxlab_unittest
        finally:
            sys.path.remove(_HERE)
        sys.argv = ["python -m unittest"] + args
        ctxlab_unittest.main()
        return
    if mod is not None:
        import runpy
        sys.argv = ["-m"] + extra + args
        runpy._run_module_as_main(mod, alter_argv=True)
        return
    if target[0] == "-c":
        sys.argv = ["-c"] + args
        _run_code(compile(target[1], "<string>", "exec"), None)
        return
    if target[0] == "-":
        sys.argv = ["-"] + args
        _run_code(compile(sys.stdin.read(), "<stdin>", "exec"), None)
        return
    script = target[0]
    try:
        with open(script, "rb") as f:
            source = f.read()
    except OSError as e:
        sys.stderr.write("%s: can't open file %r: [Errno %d] %s\n" % (sys.argv[0], script, e.errno, e.strerror))
        sys.exit(2)
    import importlib.machinery
    sys.argv = [script] + extra + args
    _run_code(compile(source, script, "exec", dont_inherit=True), script,
              importlib.machinery.SourceFileLoader("__main__", script))


if __name__ == "__main__":
    if sys.argv[1:2] == [_STAGE2]:
        _stage2(sys.argv[2:])
    else:
        _stage1(sys.argv[1:])
