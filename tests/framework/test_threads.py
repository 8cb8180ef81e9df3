import os
import subprocess
import sys

import numpy as np
import pytest

import sparsegrad as sg


def test_set_and_get():
    sg.set_num_threads(1)
    assert sg.get_num_threads() == 1
    sg.set_num_threads(2)
    expected = 2 if sg.openmp_enabled() else 1
    assert sg.get_num_threads() == expected
    sg.set_num_threads(None)
    assert sg.get_num_threads() >= 1


@pytest.mark.parametrize("bad, error", [(0, ValueError), (-3, ValueError),
                                        (1.5, TypeError), ("2", TypeError),
                                        (True, TypeError)])
def test_bad_counts(bad, error):
    with pytest.raises(error, match="n must be"):
        sg.set_num_threads(bad)


def test_numpy_integer_accepted():
    sg.set_num_threads(np.int64(1))
    assert sg.get_num_threads() == 1


def _run(code, **env):
    # Run outside the source tree, so that the installed package is imported.
    full_env = dict(os.environ, **env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=full_env, check=True, cwd=os.path.expanduser("~"))
    return out.stdout.strip(), out.stderr


@pytest.mark.skipif(not sg.openmp_enabled(), reason="built without OpenMP")
def test_environment_variable():
    out, _ = _run("import sparsegrad as sg; print(sg.get_num_threads())",
                  SPARSEGRAD_NUM_THREADS="1", OMP_NUM_THREADS="4")
    assert out == "1"
    out, err = _run("import sparsegrad as sg; print(sg.get_num_threads())",
                    SPARSEGRAD_NUM_THREADS="many", OMP_NUM_THREADS="3")
    assert out == "3" and "SPARSEGRAD_NUM_THREADS" in err


@pytest.mark.skipif(not sg.openmp_enabled(), reason="built without OpenMP")
def test_threadpoolctl_sees_and_limits_the_pool():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    sg.set_num_threads(4)
    info = threadpoolctl.threadpool_info()
    assert any(entry["user_api"] == "openmp" for entry in info)
    with threadpoolctl.threadpool_limits(limits=1, user_api="openmp"):
        assert sg.get_num_threads() == 1
    assert sg.get_num_threads() == 4
