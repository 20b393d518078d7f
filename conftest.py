"""Suite-wide settings: BLAS threads and the hypothesis profile.

One BLAS thread for every test and every notebook kernel that nbval starts
(the kernels inherit this process's environment): the matrices here are
small, and a second, spinning BLAS thread makes small calls slower on a busy
2-core machine. See benchmarks/README.md for the measurements.
"""

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

try:  # threadpoolctl (the bench extra) also limits a BLAS loaded before this file
    from threadpoolctl import threadpool_limits  # noqa: E402  (after the variables)
except ImportError:  # the variables above are enough for the kernels and the tests
    pass
else:
    threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]))

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # hypothesis is a test dependency; doctests run without it
    pass
else:
    # "ci" (the default) is deterministic, so a run that passes passes again;
    # HYPOTHESIS_PROFILE=explore searches with fresh random examples.
    settings.register_profile(
        "ci",
        derandomize=True,
        deadline=None,
        max_examples=100,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile("explore", deadline=None, max_examples=1000)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


try:
    import numpy as _np
    import pytest as _pytest
except ImportError:  # pragma: no cover - both are test dependencies
    pass
else:

    @_pytest.fixture(autouse=True)
    def _numpy_print_options():
        """Each test (and doctest) starts from NumPy's print options and leaves them as it found them.

        A test that runs a notebook's code in this process (its set-up cell sets 4 or 3 decimals)
        would otherwise change how a later doctest prints its arrays.
        """
        saved = _np.get_printoptions()
        yield
        _np.set_printoptions(**saved)


_MEDIUM_VARIABLES = ("ATTENTION_MEDIUM", "ATTENTION_CAP_PX")


def pytest_runtest_setup(item):
    """A notebook's cells are checked as the notebook page draws them, whatever ran before.

    The stored outputs are the notebook medium's (helpers/style.py); a slide-medium
    variable left in this process (by a tool a test called, or by the shell) would reach
    the kernel nbval starts and change every figure's ``<img>``.
    """
    if str(getattr(item, "path", "")).endswith(".ipynb"):
        for var in _MEDIUM_VARIABLES:
            os.environ.pop(var, None)
