import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad._kernels import parallel as _parallel
from sparsegrad.framework import threads


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


LIMIT = sg.framework.threads.MAX_THREADS


def test_limit_is_four_per_processor_and_at_least_16():
    procs = sg.framework.threads._parallel.num_procs()
    assert max(16, 4 * procs) == LIMIT
    sg.set_num_threads(LIMIT)
    assert sg.framework.threads._parallel.requested_threads() == LIMIT


@pytest.mark.parametrize("bad", [LIMIT + 1, 100_000, 2**31, 2**64, np.uint64(2**63)])
def test_counts_beyond_the_limit_are_rejected(bad):
    sg.set_num_threads(1)
    with pytest.raises(ValueError, match=f"n must be at most {LIMIT}.*got {int(bad)}"):
        sg.set_num_threads(bad)
    assert sg.get_num_threads() == 1       # unchanged


_KERNEL_RUN = (
    "import numpy as np, sparsegrad as sg\n"
    "v = np.zeros((64, 3))\n"
    "sg.training_ops.sparse_apply_gradient_descent(\n"
    "    v, 1.0, np.ones((40, 3)), np.arange(40) % 7)\n"
    "print(sg.get_num_threads(), v.sum())\n"
)


@pytest.mark.parametrize("value", ["99999999999", "100000", str(LIMIT + 1)])
def test_environment_variable_beyond_the_limit_warns_and_falls_back(value):
    out, err = _run(_KERNEL_RUN, SPARSEGRAD_NUM_THREADS=value, OMP_NUM_THREADS="2")
    threads, total = out.split()
    assert threads == ("2" if sg.openmp_enabled() else "1")
    assert float(total) == -120.0
    assert "SPARSEGRAD_NUM_THREADS" in err and f"at most {LIMIT}" in err


@pytest.mark.skipif(not sg.openmp_enabled(), reason="built without OpenMP")
def test_huge_omp_num_threads_is_capped():
    out, _ = _run(_KERNEL_RUN, OMP_NUM_THREADS="100000", SPARSEGRAD_NUM_THREADS="")
    threads, total = out.split()
    assert int(threads) == LIMIT and float(total) == -120.0


@pytest.mark.skipif(not sg.openmp_enabled(), reason="built without OpenMP")
def test_threadpoolctl_cannot_raise_the_count_beyond_the_limit():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    sg.set_num_threads(None)        # follow OpenMP's maximum
    with threadpoolctl.threadpool_limits(limits=100_000, user_api="openmp"):
        assert sg.get_num_threads() == LIMIT
        v = np.zeros((8, 2))
        sg.training_ops.sparse_apply_gradient_descent(v, 1.0, np.ones((3, 2)),
                                                      [1, 1, 5])
    np.testing.assert_array_equal(v[:, 0], [0, -2, 0, 0, 0, -1, 0, 0])


def test_openmp_threads_sleep_between_kernels_unless_the_user_says():
    code = ("import os, sparsegrad; from sparsegrad import _kernels; "
            "print(os.environ.get('OMP_WAIT_POLICY'), "
            "_kernels.OMP_WAIT_POLICY_DEFAULTED)")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, env=env, check=True, cwd=os.path.expanduser("~"))
    assert out.stdout.split() == ["PASSIVE", "True"]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, env=dict(env, OMP_WAIT_POLICY="ACTIVE"),
                         check=True, cwd=os.path.expanduser("~"))
    assert out.stdout.split() == ["ACTIVE", "False"]


needs_shared_blas = pytest.mark.skipif(
    not threads.BLAS_SHARING_POOL,
    reason="NumPy's BLAS is not an OpenBLAS with a threads callback")


@needs_shared_blas
def test_numpy_products_run_on_the_kernel_pool_with_the_same_bits():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2048, 416)).astype(np.float32)
    b = rng.standard_normal((416, 64)).astype(np.float32)
    before = _parallel.blas_callback_calls()
    shared = (a @ b, a.T @ (a @ b))
    assert _parallel.blas_callback_calls() > before   # threaded calls came to us
    for setter in threads._blas_setters:
        setter(None)
    try:
        own = (a @ b, a.T @ (a @ b))
    finally:
        for setter in threads._blas_setters:
            setter(_parallel.blas_callback_address())
    for x, y in zip(shared, own):
        assert np.array_equal(x, y)


def test_blas_sharing_can_be_turned_off():
    code = "from sparsegrad.framework import threads; print(threads.BLAS_SHARING_POOL)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True, cwd=os.path.expanduser("~"),
                         env=dict(os.environ, SPARSEGRAD_SHARE_BLAS_THREADS="0"))
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork")
def test_forked_child_runs_kernels_and_products():
    # GNU OpenMP cannot start threads in a forked child once the parent used
    # them: the child must run the kernels on one thread, and NumPy's products
    # on OpenBLAS's own threads, instead of hanging.
    code = textwrap.dedent("""
        import os, numpy as np, sparsegrad as sg
        x = np.ones((2000, 2000), np.float32)
        def kernels():
            s = sg.IndexedSlices(np.ones((300000, 16), np.float32),
                                 np.arange(300000) % 1000, (1000, 16))
            return float(s.deduplicate().values.numpy().sum())
        parent = (kernels(), float((x @ x)[0, 0]))
        pid = os.fork()
        if pid == 0:
            ok = (kernels(), float((x @ x)[0, 0])) == parent
            os._exit(0 if ok and sg.get_num_threads() == 1 else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), parent)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, check=True, timeout=60,
                         cwd=os.path.expanduser("~"))
    assert out.stdout.split()[0] == "0", out.stdout + out.stderr


def test_run_parts_returns_in_order_and_raises_after_all_finish():
    import threading
    import time

    from sparsegrad.framework.threads import run_parts

    names = []

    def part(k, delay):
        def run():
            time.sleep(delay)
            names.append(threading.current_thread().name)
            return k * k
        return run

    assert run_parts([part(k, 0.01 * (3 - k)) for k in range(4)]) == [0, 1, 4, 9]
    assert names[-1] == threading.current_thread().name or len(set(names)) > 1
    done = []

    def slow():
        time.sleep(0.05)
        done.append(True)

    def bad():
        raise ValueError("band 1")

    with pytest.raises(ValueError, match="band 1"):
        run_parts([slow, bad, slow])
    assert done == [True, True]            # every part ran to its end
