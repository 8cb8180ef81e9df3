#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, CuPy and nvcc: build sparsegrad in place,
# run the GPU tests on the real device (and on the emulator, for comparison),
# then the GPU benchmark.  Output goes to ${OUT:-.}/gpu-*.txt.
#   bash tests/gpu/run_on_gpu.sh            # tests + benchmark
#   QUICK=1 bash tests/gpu/run_on_gpu.sh    # benchmark at small sizes
#   ONLY=cupy bash tests/gpu/run_on_gpu.sh  # the real device's tests alone
#   NO_BENCH=1 bash tests/gpu/run_on_gpu.sh # the tests alone
set -uo pipefail
cd "$(dirname "$0")/../.."
# the in-place build below is what the tests and the benchmark's worker
# processes (started from benchmarks/) import
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-.}
python -c "import cython, numpy, scipy, ml_dtypes, pytest, hypothesis" 2>/dev/null \
    || python -m pip install -q cython numpy scipy ml_dtypes pytest hypothesis 2>&1 | tail -1
python setup.py build_ext --inplace -q -j "$(nproc)" 2>&1 | tail -3
python -m sparsegrad info | tee "$OUT/gpu-info.txt"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee -a "$OUT/gpu-info.txt"
# compile every CUDA module once, side by side, into the on-disk cache that
# the test processes then load from
python - <<'PY'
from concurrent.futures import ThreadPoolExecutor
import cupy
from sparsegrad import _cuda
with ThreadPoolExecutor(8) as pool:
    list(pool.map(lambda family: _cuda._nvrtc_module(cupy, family), _cuda.families()))
PY
XDIST=$(python -c "import xdist" 2>/dev/null && echo "-n 12")
python -m pytest -q -p no:cacheprovider tests/gpu -ra $XDIST ${ONLY:+-k "$ONLY"} 2>&1 \
    | tee "$OUT/gpu-tests.txt" | tail -40
[ -n "${NO_BENCH:-}" ] && exit 0
python benchmarks/bench_gpu.py ${QUICK:+--quick} --json "$OUT/gpu-bench.json" 2>&1 \
    | tee "$OUT/gpu-bench.txt"
