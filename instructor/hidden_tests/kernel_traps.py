"""The grading cell's wrapper of every hidden test: the library's kernels are traps while it runs.

Grading does not rest on the visible check alone (which a student's notebook can replace or
switch off before the grading cell runs). ``graded_without_kernels(hidden, answer)`` runs one
hidden test with a profiling hook that notes every call of a function of ``helpers`` (the
kernels of ``helpers.attention``, and the checks' own references in ``helpers.checks``), by its
code object, so that no route escapes it: a module attribute, a name imported into the
notebook, a closure, a default argument, a class attribute, ``functools.partial``, a copy of the
kernel made with ``types.FunctionType(kernel.__code__, ...)``, an index past 50 in a list or a
generator. Any such call, or an answer that removes the hook, fails the test.

It is self-contained like the hidden tests (tools/make_nbgrader_course.py copies its source
into the hidden region of each grading cell) and imports the library with ``importlib``, not an
import statement, so the grading cell passes the checks' static reading of the calling cell.
"""


def graded_without_kernels(hidden, answer):
    import importlib
    import sys

    threading = sys.modules.get("threading")  # not imported here: the grading cell imports no thread module
    try:
        library = importlib.import_module("helpers.attention")
    except ImportError:  # no library in this environment: nothing to reach
        return hidden(answer)
    import os

    # Only code written in the package: a decorated helper's __code__ can be the decorator's (a
    # contextlib.contextmanager's is contextlib's), which NumPy or the hidden test may call too.
    package = os.path.dirname(os.path.abspath(sys.modules["helpers"].__file__)) + os.sep
    codes = {}
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "helpers" or name.startswith("helpers.")):
            continue
        for attr, value in list(vars(module).items()):
            code = getattr(value, "__code__", None)
            if (code is not None and getattr(value, "__module__", "") == name
                    and os.path.abspath(code.co_filename).startswith(package)):
                codes[code] = f"{name}.{attr}"
    del library
    used = []

    def hook(frame, event, arg):
        if event == "call" and frame.f_code in codes:
            used.append(codes[frame.f_code])

    before = sys.getprofile()
    before_threads = threading.getprofile() if threading is not None else None
    sys.setprofile(hook)
    if threading is not None:
        threading.setprofile(hook)
    try:
        hidden(answer)
        still_on = sys.getprofile() is hook
    finally:
        sys.setprofile(before)
        if threading is not None:
            threading.setprofile(before_threads)
    assert still_on, "the graded function switched off the grader's profiling hook (sys.setprofile)"
    assert not used, (
        f"the graded function calls the course's library ({', '.join(sorted(set(used)))}): graded answers are "
        "computed with your own NumPy code, not the library's kernels"
    )
