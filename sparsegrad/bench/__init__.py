"""``sparsegrad bench``: a benchmark suite shipped with the package.

One module per area (:mod:`~sparsegrad.bench.slices`,
:mod:`~sparsegrad.bench.training_ops`, :mod:`~sparsegrad.bench.clip`,
:mod:`~sparsegrad.bench.segment`, :mod:`~sparsegrad.bench.autodiff`,
:mod:`~sparsegrad.bench.end_to_end`) lists its :class:`~sparsegrad.bench.case.Case`
objects in ``CASES``; :mod:`~sparsegrad.bench.harness` times them, each
(case, library) pair in a process of its own (:mod:`~sparsegrad.bench.worker`),
and :mod:`~sparsegrad.bench.cli` is the command line.  The peers are
TensorFlow, PyTorch, FBGEMM (the embedding-bag cases) and NumPy, each
optional.  Training steps are steady-state cases
(:attr:`~sparsegrad.bench.case.Case.steps`): 100 consecutive steps per
process, compared block by block.  Every worker also measures its process's
resident-memory growth (:mod:`~sparsegrad.bench.memory`), which the cases
of half-precision tables compare with their float32 cases.  Nothing in the
library imports this package.
"""
