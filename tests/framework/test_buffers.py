"""The pool of large result buffers: a block is handed out again only when
nothing references it."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework import buffers

# subprocesses start outside the source tree, whose sparsegrad is unbuilt
OUTSIDE = os.path.expanduser("~")

SHAPE = (1024, 512)  # 2 MiB of float32: pooled


def test_small_results_are_plain_arrays():
    a = buffers.empty((10, 10), np.float64)
    assert a.base is None and a.shape == (10, 10)


def test_a_block_in_use_is_never_handed_out_again():
    a = buffers.empty(SHAPE, np.float32)
    a[...] = 1.0
    view = a[3:5]                                 # a view keeps the block busy
    b = buffers.empty(SHAPE, np.float32)
    assert not np.shares_memory(a, b)
    del a
    c = buffers.empty(SHAPE, np.float32)
    assert not np.shares_memory(view, c)
    np.testing.assert_array_equal(view, 1.0)


def test_a_free_block_is_reused():
    a = buffers.empty(SHAPE, np.float32)
    address = a.__array_interface__["data"][0]
    del a
    b = buffers.empty((512, 1024), np.float32)     # same size, any shape
    assert b.__array_interface__["data"][0] == address
    assert b.flags.writeable and b.flags.c_contiguous


def test_clip_results_survive_the_next_call(rng):
    x = rng.standard_normal(SHAPE).astype(np.float32)
    first, _ = sg.clip_by_global_norm([x], 1.0)
    kept = first[0].numpy().copy()
    second, _ = sg.clip_by_global_norm([x * 2], 1.0)
    np.testing.assert_array_equal(first[0].numpy(), kept)
    assert not np.shares_memory(first[0].numpy(), second[0].numpy())
    arr = np.asarray(second[0])                    # a user's view keeps it
    del second
    third = sg.clip_by_value(x, 0.0, 0.0)
    assert not np.shares_memory(arr, third.numpy())


def test_size_classes_cover_every_request_with_at_most_an_eighth_more():
    for nbytes in (1, 7, 1 << 18, (1 << 18) + 1, 3_000_000, 6_815_744, 10**9 + 7):
        size = buffers.size_class(nbytes)
        assert nbytes <= size <= nbytes + nbytes // 8 + 1
        assert buffers.size_class(size) == size           # a class is its own class
    assert buffers.size_class(1 << 20) == 1 << 20
    assert buffers.size_class((1 << 20) + 1) == (1 << 20) + (1 << 17)


def test_results_of_varying_size_share_the_blocks_of_their_class():
    # the distinct rows of an IndexedSlices change from batch to batch
    a = buffers.empty((70_000, 16), np.float32)
    address = a.__array_interface__["data"][0]
    del a
    b = buffers.empty((66_000, 16), np.float32)          # smaller, same class
    assert b.__array_interface__["data"][0] == address
    assert b.shape == (66_000, 16) and b.flags.c_contiguous and b.flags.writeable


def test_pooled_copy_is_a_contiguous_cast():
    x = np.arange(300_000, dtype=np.int64)[::3]
    y = buffers.copy(x, np.float64)
    assert y.flags.c_contiguous and y.dtype == np.float64
    np.testing.assert_array_equal(y, x.astype(np.float64))
    assert not np.shares_memory(x, y)


# -- check_allocation and memory_limit -------------------------------------------


def test_check_allocation_lets_small_and_fitting_calls_through():
    assert buffers.check_allocation(((10, 10), np.float64, "op: x")) is None
    assert buffers.check_allocation() is None
    limit, _ = buffers.memory_limit()
    assert buffers.check_allocation(((limit // 2,), np.uint8, "op: x"), None) is None


def test_check_allocation_names_the_largest_buffer_and_the_total():
    with pytest.raises(InvalidArgumentError) as info:
        buffers.check_allocation(((2**62,), np.int64, "segment_sum: segment_ids"))
    message = str(info.value)
    assert message.startswith(
        "segment_sum: segment_ids asks for a result of shape (4611686018427387904,) "
        "and dtype int64 (36893488147419103232 bytes), more than ")
    limit, bound = buffers.memory_limit()
    assert message.endswith(f"{bound} ({limit} bytes)")
    # each fits; together they do not
    half = limit // 2 + 1
    with pytest.raises(InvalidArgumentError, match=re.escape(
            f"op: b asks for a result of shape ({half},) and dtype uint8 ({half} "
            f"bytes); with the call's other buffers, {2 * half - 1} bytes, more "
            "than")):
        buffers.check_allocation(((half - 1,), np.uint8, "op: a"), None,
                                 ((half,), np.uint8, "op: b"))


def test_a_negative_length_counts_as_nothing():
    # (the allocation itself raises for it; it must not hide another buffer)
    with pytest.raises(InvalidArgumentError, match="op: big"):
        buffers.check_allocation(((-(2**62), 2), np.int64, "op: negative"),
                                 ((2**62,), np.int64, "op: big"))


def test_copy_of_a_broadcast_view_is_its_whole_shape():
    view = np.broadcast_to(np.int32(0), (2**31,))
    assert view.nbytes == 2**33 and buffers.copy_of(view, "op: x") == (
        (2**31,), np.dtype(np.int32), "op: x")
    assert buffers.copy_of(np.zeros((3, 2)), "op: x") is None
    with pytest.raises(InvalidArgumentError, match=re.escape(
            "op: x asks for a result of shape (1099511627776,)")):
        buffers.check_allocation(buffers.copy_of(np.broadcast_to(0.0, (2**40,)),
                                                 "op: x"))


def test_ancestors_of_a_cgroup():
    assert buffers._ancestors("/a/b/c") == ["/a/b/c", "/a/b", "/a", "/"]
    assert buffers._ancestors("/") == ["/"]


RLIMITED = """
import resource, sys
import numpy as np
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework import buffers

name = sys.argv[1]
with open("/proc/self/statm") as f:
    pages = [int(n) for n in f.read().split()]
used = pages[0 if name == "RLIMIT_AS" else 5] * resource.getpagesize()
which = getattr(resource, name)
resource.setrlimit(which, (used + (1 << 30), resource.getrlimit(which)[1]))
limit, bound = buffers.memory_limit()
assert limit <= 1 << 30 and name in bound, (limit, bound)
buffers.check_allocation(((1 << 26,), np.uint8, "op: small"))   # fits
try:
    buffers.check_allocation(((1 << 30,), np.float32, "op: x"))
except InvalidArgumentError as exc:
    print(exc)
except MemoryError:
    sys.exit(3)
else:
    sys.exit(4)
"""


@pytest.mark.parametrize("name", ["RLIMIT_AS", "RLIMIT_DATA"])
def test_memory_limit_follows_the_process_rlimits(name):
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "SPARSEGRAD_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", RLIMITED, name], env=env,
                          capture_output=True, text=True, timeout=120,
                          cwd=OUTSIDE)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "op: x asks for a result of shape (1073741824,) and dtype float32" in \
        done.stdout
    assert f"more than the memory this process may still map ({name})" in done.stdout
