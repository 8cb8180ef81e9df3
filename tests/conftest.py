"""Shared fixtures: every test is seeded, and the thread count is restored."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.training.optimizers.base import Optimizer


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def _restore_threads():
    before = sg.framework.threads._parallel.requested_threads()
    yield
    sg.framework.threads._parallel.set_requested_threads(before)


def zipf_indices(rng, n, n_rows, a=1.1, dtype=np.int64):
    """Zipf-distributed row ids in [0, n_rows) (heavy rows first)."""
    ids = rng.zipf(a, size=n) - 1
    return (ids % n_rows).astype(dtype)


@pytest.fixture
def zipf():
    return zipf_indices


# The preamble of the scripts of run_limited: limit(extra) caps the address
# space at what the interpreter holds plus `extra` bytes, so that a call that
# allocated what a file or an argument claims ends in MemoryError (exit code
# 3); expect_refusal(call, *fragments) requires an InvalidArgumentError whose
# message holds every fragment, and prints "refused: " and the message.
LIMITED = """
import resource, sys
import numpy as np
import sparsegrad as sg

def limit(extra):
    with open("/proc/self/statm") as f:
        size = int(f.read().split()[0]) * resource.getpagesize()
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (size + extra, hard))

def expect_refusal(call, *fragments):
    try:
        call()
    except sg.errors.InvalidArgumentError as exc:
        for fragment in fragments:
            assert fragment in str(exc), (fragment, str(exc))
        print("refused:", exc)
        return
    except MemoryError as exc:
        print("MemoryError:", exc)
        sys.exit(3)
    sys.exit(4)
"""


@pytest.fixture
def run_limited():
    """``run_limited(body, *args)``: the script `body` after the LIMITED
    preamble, in a one-thread interpreter started outside the source tree
    (whose sparsegrad is unbuilt), with `args` as ``sys.argv[1:]``; it must
    exit 0, and its stdout is returned."""

    def run(body, *args):
        code = LIMITED + textwrap.dedent(body)
        env = {**os.environ, "SPARSEGRAD_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1"}
        done = subprocess.run([sys.executable, "-c", code, *map(str, args)],
                              capture_output=True, text=True, env=env, timeout=120,
                              cwd=os.path.expanduser("~"))
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    return run


def _contiguous_sum(x):
    """sg_seg_sum_contiguous in NumPy scalars of x's dtype: eight partial
    sums over the whole blocks, combined pairwise, then the tail in order;
    fewer than eight values are one chain; no value: -0.0."""
    x = np.asarray(x)
    if x.size == 0:
        return x.dtype.type(-0.0)
    if x.size < 8:
        acc = x[0]
        for v in x[1:]:
            acc = acc + v
        return acc
    a, k = list(x[:8]), 8
    while k + 8 <= x.size:
        a = [a[p] + x[k + p] for p in range(8)]
        k += 8
    acc = ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]))
    for v in x[k:]:
        acc = acc + v
    return acc


@pytest.fixture
def contiguous_sum():
    """The model of the kernels' contiguous sum (``sg_seg_sum_contiguous``),
    value type arithmetic, that the header and the row-sum tests compare
    with bit for bit."""
    return _contiguous_sum


def bits(array):
    """`array`'s values as the unsigned integers of their bits (for
    bit-for-bit comparisons, NaN payloads and signed zeros included)."""
    array = np.ascontiguousarray(array)
    return array.view({2: np.uint16, 4: np.uint32, 8: np.uint64}[array.itemsize])


@pytest.fixture
def half_slots_of_each_type(monkeypatch):
    """Optimizers give every variable slots of its own dtype, float16 and
    bfloat16 ones in one optimizer (``slot_dtype`` names one half type), for
    the tests of what states and checkpoints store of both encodings."""
    monkeypatch.setattr(Optimizer, "_slot_dtype", lambda self, var: var.dtype)

