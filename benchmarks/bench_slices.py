"""IndexedSlices kernels against their NumPy equivalents.

Setting (issue 2): a 1,000,000 x 64 float32 table and 16,384 Zipf(1.1) row ids.

* ``deduplicate``: ``IndexedSlices.deduplicate()`` against ``np.unique(...,
  return_inverse=True)`` + ``np.add.at`` into the unique rows.
* ``scatter_add``: ``Variable.scatter_add`` into the table against
  ``np.add.at(table, ids, values)``.

The memory-bandwidth floor is the bytes an operation must move (read the values
and ids, read and write the touched rows) divided by the bandwidth of a large
``np.copyto`` measured in the same run.

Run: ``python benchmarks/bench_slices.py [--repeat 15] [--threads N]``.
The ``time_*`` functions are collectable by asv.
"""

import argparse
import os
import platform
import statistics
import time

import numpy as np

import sparsegrad as sg

N_ROWS, WIDTH, N_IDS = 1_000_000, 64, 16_384


def make_inputs(seed=0):
    rng = np.random.default_rng(seed)
    ids = (rng.zipf(1.1, size=N_IDS) - 1) % N_ROWS
    values = rng.standard_normal((N_IDS, WIDTH)).astype(np.float32)
    return ids.astype(np.int64), values


_IDS, _VALUES = make_inputs()
_TABLE = sg.Variable(np.zeros((N_ROWS, WIDTH), np.float32))
_NP_TABLE = np.zeros((N_ROWS, WIDTH), np.float32)
_SLICES = sg.IndexedSlices(_VALUES, _IDS, dense_shape=(N_ROWS, WIDTH))


def time_deduplicate_sparsegrad():
    _SLICES.deduplicate()


def time_deduplicate_numpy():
    unique, inverse = np.unique(_IDS, return_inverse=True)
    summed = np.zeros((unique.size, WIDTH), np.float32)
    np.add.at(summed, inverse, _VALUES)


def time_scatter_add_sparsegrad():
    _TABLE.scatter_add(_SLICES)


def time_scatter_add_numpy():
    np.add.at(_NP_TABLE, _IDS, _VALUES)


def copy_bandwidth(n_bytes=256 * 2**20, repeat=5):
    """Bytes per second of a large ``np.copyto`` (read + write counted)."""
    src = np.ones(n_bytes // 4, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    best = min(_timed(lambda: np.copyto(dst, src)) for _ in range(repeat))
    return 2 * n_bytes / best


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_time(fn, repeat):
    fn()  # warm up
    return statistics.median(_timed(fn) for _ in range(repeat))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        sg.set_num_threads(args.threads)

    n_unique = np.unique(_IDS).size
    bandwidth = copy_bandwidth()
    row_bytes = WIDTH * 4
    # dedupe: read values + ids, write the unique rows.
    dedupe_bytes = N_IDS * (row_bytes + 8) + n_unique * row_bytes
    # scatter-add: read values + ids, read and write each touched row once.
    scatter_bytes = N_IDS * (row_bytes + 8) + 2 * n_unique * row_bytes

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, "
          f"{platform.python_implementation()} {platform.python_version()}, "
          f"numpy {np.__version__}")
    print(f"sparsegrad {sg.__version__}, OpenMP {sg.openmp_enabled()}, "
          f"threads {sg.get_num_threads()}")
    print(f"table {N_ROWS} x {WIDTH} float32, {N_IDS} Zipf(1.1) ids, "
          f"{n_unique} distinct; copy bandwidth {bandwidth / 1e9:.1f} GB/s; "
          f"medians of {args.repeat} runs\n")
    header = (f"{'operation':<14}{'sparsegrad':>12}{'numpy':>12}{'speed-up':>10}"
              f"{'floor':>11}{'x floor':>9}")
    print(header)
    print("-" * len(header))
    rows = [
        ("deduplicate", time_deduplicate_sparsegrad, time_deduplicate_numpy,
         dedupe_bytes, 5),
        ("scatter_add", time_scatter_add_sparsegrad, time_scatter_add_numpy,
         scatter_bytes, 10),
    ]
    verdicts = []
    for name, ours, theirs, n_bytes, target in rows:
        t_ours = median_time(ours, args.repeat)
        t_theirs = median_time(theirs, max(3, args.repeat // 3))
        floor = n_bytes / bandwidth
        print(f"{name:<14}{t_ours * 1e3:>10.3f}ms{t_theirs * 1e3:>10.3f}ms"
              f"{t_theirs / t_ours:>9.1f}x{floor * 1e3:>9.3f}ms{t_ours / floor:>8.1f}x")
        verdicts.append(f"{name}: {t_theirs / t_ours:.1f}x faster than NumPy "
                        f"(target >= {target}x: "
                        f"{'met' if t_theirs / t_ours >= target else 'NOT met'})")
    print()
    print("\n".join(verdicts))


if __name__ == "__main__":
    main()
