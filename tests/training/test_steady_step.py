"""A training step after warm-up costs the same every time (issue 24).

Two properties keep a step from mapping fresh memory, and so from costing
more on some steps than on others:

* a step leaves no reference cycles: its temporaries (gradients of several
  MiB) are freed when the step ends, not when the garbage collector next
  runs.  A recursive closure in ``autodiff.nest.pack_as`` held every gradient
  of ``tape.gradient`` until then, so the pool of result blocks grew by a
  block a step and each new block was fresh pages;
* nothing the step allocates follows the size of the table: the memory Python
  traces (NumPy reports its allocations to tracemalloc) peaks at the same
  value for a table eight times larger.

The steps are the two of ``sparsegrad bench``: an embedding bag with a sparse
optimizer, and a CTR model (a lookup, an MLP, a clip by global norm, lazy
Adam on the table and Adam on the MLP), at small sizes.
"""

import gc
import tracemalloc

import numpy as np
import pytest
import scipy.sparse

import sparsegrad as sg

WIDTH = 16
BAGS, BAG = 256, 8
ID_RANGE = 20_000          # every id below it, whatever the table's size
OPTIMIZERS = {
    "adagrad": lambda: sg.optimizers.Adagrad(0.1),
    "rowwise_adagrad": lambda: sg.optimizers.RowwiseAdagrad(0.1),
    "adam_lazy": lambda: sg.optimizers.Adam(0.01, lazy=True),
    "ftrl": lambda: sg.optimizers.Ftrl(0.1),
}


def _bag_step(n_rows, make_optimizer):
    rng = np.random.default_rng(3)
    var = sg.Variable(rng.standard_normal((n_rows, WIDTH)).astype(np.float32) * 0.01)
    ids = ((rng.zipf(1.1, BAGS * BAG) - 1) % ID_RANGE).astype(np.int32)
    csr = scipy.sparse.csr_array(
        (np.ones(ids.size, np.float32), ids, np.arange(0, ids.size + 1, BAG)),
        shape=(BAGS, n_rows))
    upstream = rng.standard_normal((BAGS, WIDTH)).astype(np.float32)
    opt = make_optimizer()

    def step():
        with sg.GradientTape() as tape:
            out = sg.nn.embedding_lookup_sparse(var, csr, combiner="sum")
        grad = tape.gradient(out, var, output_gradients=upstream)
        opt.apply_gradients([(grad, var)])

    return step, var


def _ctr_step(n_rows):
    rng = np.random.default_rng(4)
    fields, hidden, batch = 6, 32, 512
    table = sg.Variable(rng.standard_normal((n_rows, WIDTH)).astype(np.float32) * 0.01)
    w1 = sg.Variable(rng.standard_normal((fields * WIDTH, hidden)).astype(np.float32)
                     * 0.1)
    b1 = sg.Variable(np.zeros(hidden, np.float32))
    w2 = sg.Variable(rng.standard_normal((hidden, 1)).astype(np.float32) * 0.1)
    ids = ((rng.zipf(1.15, (batch, fields)) - 1) % ID_RANGE).astype(np.int64)
    labels = (rng.random(batch) < 0.25).astype(np.float32)
    sparse_opt = sg.optimizers.Adam(0.01, lazy=True)
    dense_opt = sg.optimizers.Adam(0.01)
    dense = [w1, b1, w2]

    def step():
        with sg.GradientTape() as tape:
            x = sg.reshape(sg.gather(table, ids), (batch, fields * WIDTH))
            h = sg.nn.relu(sg.matmul(x, w1) + b1)
            logits = sg.reshape(sg.matmul(h, w2), (-1,))
            loss = sg.reduce_mean(sg.nn.sigmoid_cross_entropy_with_logits(
                labels=labels, logits=logits))
        grads = tape.gradient(loss, [table] + dense)
        grads, _ = sg.clip_by_global_norm(grads, 1.0)
        sparse_opt.apply_gradients([(grads[0], table)])
        dense_opt.apply_gradients(list(zip(grads[1:], dense)))

    return step, table


STEPS = {f"bag_{name}": (lambda rows, make=make: _bag_step(rows, make))
         for name, make in OPTIMIZERS.items()}
STEPS["ctr"] = _ctr_step


@pytest.mark.parametrize("name", sorted(STEPS))
def test_a_step_leaves_no_reference_cycles(name):
    step, table = STEPS[name](50_000)
    for _ in range(3):
        step()
    before = table.numpy().copy()
    gc.collect()
    gc.disable()
    try:
        step()
        found = gc.collect()
    finally:
        gc.enable()
    assert found == 0, f"{name}: a step left {found} objects in reference cycles"
    assert not np.array_equal(table.numpy(), before)   # the step did update


def _traced_peak(step):
    """Bytes above the start that Python's allocations reach during one step."""
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        step()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak - start


@pytest.mark.parametrize("name", sorted(STEPS))
def test_a_step_after_warm_up_allocates_nothing_that_follows_the_table(name):
    peaks = {}
    for n_rows in (50_000, 400_000):
        step, _ = STEPS[name](n_rows)
        for _ in range(3):
            step()
        peaks[n_rows] = min(_traced_peak(step) for _ in range(2))
    # the step's own temporaries: a small fraction of the larger table
    assert peaks[400_000] < 400_000 * WIDTH * 4 // 16, (name, peaks)
    # and the same for a table eight times larger
    assert abs(peaks[400_000] - peaks[50_000]) < 64 << 10, (name, peaks)
