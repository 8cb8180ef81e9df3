"""Training loop, evaluation, checkpoints and the report of the demo.

The loop is the usual one: for each epoch, for each batch of the train split,
:func:`~sparsegrad.demo.models.train_step`; after each epoch, the log-loss and
AUC on the test split.  Batches are taken in the order of the split (the
synthetic examples are independent, :func:`~sparsegrad.demo.data.load_svmlight`
shuffles once), so a run resumed from a checkpoint sees the same batches as an
uninterrupted one and ends with the same weights, bit for bit.

What differs between one process and the ranks of an MPI job (which rows a
step takes, how it combines the gradients, how the test split is evaluated,
how checkpoints are written) is the *runner* of :func:`fit`:
:class:`LocalRunner` here, :class:`sparsegrad.demo.distributed.DistributedRunner`
under ``mpiexec``.
"""

import json
import os
import sys
import time

import numpy as np

from sparsegrad.errors import InvalidArgumentError
from sparsegrad.framework.archives import read_npz, write_npz

from .metrics import log_loss, roc_auc
from .models import Batch, train_step

__all__ = [
    "batches", "predict", "evaluate", "fit", "LocalRunner", "save_checkpoint",
    "load_checkpoint", "write_index", "read_index", "reset_peak_memory",
    "peak_memory", "format_table", "plot_curves",
]

# Points of the running training loss kept per epoch for the plot.
CURVE_POINTS = 50


def batches(split, batch_size, xp=np):
    """Yield the examples of `split` in order as :class:`~sparsegrad.demo.models.Batch`.

    Parameters
    ----------
    split : CTRSplit
    batch_size : int
    xp : module, default=numpy
        The array module of the model: with ``cupy`` the ids and labels of
        each batch are copied to the GPU (the features stay ``scipy.sparse``).

    Yields
    ------
    Batch
        Rows ``[start, start + batch_size)``; the last batch may be smaller.
    """
    n = split.y.shape[0]
    for start in range(0, n, batch_size):
        rows = slice(start, min(start + batch_size, n))
        ids = None if split.ids is None else xp.asarray(split.ids[rows])
        yield Batch(split.X[rows], ids, xp.asarray(split.y[rows].reshape(-1, 1)))


def predict(model, split, batch_size=8192):
    """Click probabilities of `model` for every row of `split`, float64 (n,)."""
    logits = [model.logits(b).numpy().reshape(-1)
              for b in batches(split, batch_size, model.xp)]
    return 1.0 / (1.0 + np.exp(-np.concatenate(logits).astype(np.float64)))


def evaluate(model, split):
    """Log-loss and ROC AUC of `model` on `split`, as a dict."""
    p = predict(model, split)
    return {"log_loss": log_loss(split.y, p), "auc": roc_auc(split.y, p)}


class LocalRunner:
    """How :func:`fit` and the command line train in a single process.

    Every step takes a whole batch (:func:`batches`) and runs
    :func:`~sparsegrad.demo.models.train_step`; the test split is evaluated
    by :func:`evaluate`; checkpoints are :func:`save_checkpoint` and
    :func:`load_checkpoint`.  :class:`sparsegrad.demo.distributed.DistributedRunner`
    has the same attributes and methods for the ranks of an MPI job.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> from sparsegrad.demo.data import CTRSplit
    >>> from sparsegrad.demo.train import LocalRunner
    >>> split = CTRSplit(sp.csr_matrix(np.eye(5, dtype=np.float32)), None,
    ...                  np.zeros(5, np.float32))
    >>> [rows for _, rows in LocalRunner().batches(split, 2)]
    [2, 2, 1]
    """

    #: bool: whether this process prints, shows progress and writes the
    #: files of rank 0 (always, in a single process).
    main = True
    #: int: the number of processes that train together.
    size = 1

    def batches(self, split, batch_size, xp=np):
        """``(batch, rows)`` for each step: the :func:`batches` of `split`
        and the number of examples of each."""
        for batch in batches(split, batch_size, xp):
            yield batch, batch.y.shape[0]

    def step(self, model, batch, rows):
        """Train on `batch` (of `rows` examples); its mean loss before the update."""
        del rows
        return train_step(model, batch)

    def evaluate(self, model, split):
        """:func:`evaluate`."""
        return evaluate(model, split)

    def peak_memory(self):
        """:func:`peak_memory`."""
        return peak_memory()

    def missing(self, directory, name):
        """The parts of model `name` that a checkpoint in `directory` lacks."""
        return [part for part in ("weights", "optimizer")
                if not os.path.exists(os.path.join(directory, f"{name}.{part}.npz"))]

    def check(self, directory, name):
        """Read the files of model `name` in `directory` once, before any
        training, so that a damaged one is reported first.

        Raises
        ------
        ValueError
            If one cannot be read (:func:`~sparsegrad.framework.archives.read_npz`).
        """
        for part in ("weights", "optimizer"):
            path = os.path.join(directory, f"{name}.{part}.npz")
            read_npz(path, f"cannot read the saved {part} of the {name} model from")

    def save(self, directory, model, state):
        """:func:`save_checkpoint`."""
        save_checkpoint(directory, model, state)

    def load(self, directory, model):
        """:func:`load_checkpoint`."""
        load_checkpoint(directory, model)


def fit(model, data, *, epochs, batch_size, history, progress=True, on_epoch=None,
        runner=None):
    """Train `model` on ``data.train`` up to epoch `epochs`, resuming after `history`.

    Parameters
    ----------
    model : FtrlLogistic or EmbeddingMLP
    data : CTRDataset
    epochs : int
        The epoch to stop after (epochs already in `history` are skipped).
    batch_size : int
    history : dict
        ``{"epochs": [...], "curve": [...]}``, extended in place: one entry
        per epoch (train loss, test log-loss and AUC, seconds, examples) and
        the running training loss at ``CURVE_POINTS`` points per epoch, as
        ``[epoch + fraction, loss]`` pairs.
    progress : bool, default=True
        Show a tqdm progress bar (on stderr) with the running loss.
    on_epoch : callable, optional
        Called with the epoch number (from 1) after each epoch is evaluated.
    runner : LocalRunner or DistributedRunner, optional
        How the steps and the evaluation run (default: ``LocalRunner()``,
        this process alone).  With a
        :class:`~sparsegrad.demo.distributed.DistributedRunner`, every rank
        of its communicator calls :func:`fit` with the same arguments; the
        global batch of each step is `batch_size` examples, the history is
        the same on every rank (but for the seconds, each rank's own), and
        only rank 0 prints.
    """
    from tqdm import tqdm

    runner = LocalRunner() if runner is None else runner
    n = data.train.y.shape[0]
    n_batches = -(-n // batch_size)
    every = max(1, n_batches // CURVE_POINTS)
    for epoch in range(len(history["epochs"]), epochs):
        running, seen, total = None, 0, 0.0
        bar = tqdm(runner.batches(data.train, batch_size, model.xp), total=n_batches,
                   leave=False, disable=not (progress and runner.main), unit="batch",
                   file=sys.stderr, desc=f"{model.name} epoch {epoch + 1}/{epochs}")
        start = time.perf_counter()
        for k, (batch, rows) in enumerate(bar):
            value = runner.step(model, batch, rows)
            total += value * rows
            seen += rows
            running = value if running is None else 0.98 * running + 0.02 * value
            if k % every == every - 1 or k == n_batches - 1:
                history["curve"].append([epoch + (k + 1) / n_batches, running])
                bar.set_postfix(loss=f"{running:.4f}", refresh=False)
        seconds = time.perf_counter() - start
        bar.close()
        metrics = runner.evaluate(model, data.test)
        history["epochs"].append({
            "epoch": epoch + 1, "train_loss": total / seen,
            "test_log_loss": metrics["log_loss"], "test_auc": metrics["auc"],
            "seconds": seconds, "examples": seen,
        })
        if runner.main:
                print(f"{model.name:<9} epoch {epoch + 1}/{epochs}  train loss "
                  f"{total / seen:.4f}  test log-loss {metrics['log_loss']:.4f}  "
                  f"AUC {metrics['auc']:.4f}  ({seen / seconds:,.0f} examples/s)",
                  flush=True)
        if on_epoch is not None:
            on_epoch(epoch + 1)


# -- checkpoints ----------------------------------------------------------------


def _replace_atomically(path, write):
    tmp = f"{path}.tmp"
    with open(tmp, "wb") as f:
        write(f)
    os.replace(tmp, path)


def save_checkpoint(directory, model, state):
    """Write `model`'s weights and optimizer state and the run's `state` to `directory`.

    Files: ``<name>.weights.npz`` (the variables by name; float16 and
    bfloat16 ones as their bits with their dtype's name,
    :func:`~sparsegrad.framework.archives.write_npz`),
    ``<name>.optimizer.npz`` (:meth:`~sparsegrad.optimizers.Optimizer.save_state`)
    and ``checkpoint.json``, the `state` of the run: ``{"settings": {...},
    "models": {name: history}}`` (the data settings, and the history of every
    model saved so far).  Each file is replaced whole, so an interrupted save
    leaves the previous checkpoint readable.
    """
    os.makedirs(directory, exist_ok=True)
    weights = {v.name: v.numpy() for v in model.variables}
    _replace_atomically(os.path.join(directory, f"{model.name}.weights.npz"),
                        lambda f: write_npz(f, weights))
    _replace_atomically(os.path.join(directory, f"{model.name}.optimizer.npz"),
                        model.optimizer.save_state)
    write_index(directory, state)


def write_index(directory, state):
    """Write `state` as ``checkpoint.json`` in `directory` (replaced whole).

    Parameters
    ----------
    directory : str
        An existing directory.
    state : dict
        JSON-serializable: ``{"settings": {...}, "models": {...}}`` and,
        from an MPI run, ``"ranks"``; :func:`read_index` reads it back.
    """
    text = json.dumps(state, indent=1).encode()
    _replace_atomically(os.path.join(directory, "checkpoint.json"),
                        lambda f: f.write(text))


def read_index(directory):
    """The ``checkpoint.json`` of `directory` as a dict (``settings``, ``models``,
    and ``ranks`` when saved by an MPI run).

    Raises
    ------
    OSError
        If it cannot be read.
    ValueError
        If it is not a checkpoint written by :func:`save_checkpoint`.
    """
    path = os.path.join(directory, "checkpoint.json")
    with open(path, encoding="utf-8") as f:
        try:
            state = json.load(f)
        except ValueError:
            raise ValueError(f"{path} is not valid JSON") from None
    if not (isinstance(state, dict) and isinstance(state.get("settings"), dict)
            and isinstance(state.get("models"), dict)):
        raise ValueError(f"{path} is not a demo checkpoint")
    ranks = state.get("ranks")
    if ranks is not None and not (type(ranks) is int and ranks >= 1):
        raise ValueError(f"{path}: 'ranks' must be a positive integer, got {ranks!r}")
    return state


def load_checkpoint(directory, model):
    """Restore `model`'s weights and optimizer state from `directory`.

    Nothing changes unless both files read and fit.

    Raises
    ------
    ValueError
        If a file is missing, cannot be read or is damaged (an
        :class:`~sparsegrad.errors.InvalidArgumentError` from
        :func:`~sparsegrad.framework.archives.read_npz`), the saved weights
        do not fit the model (another data set or architecture: another
        shape or dtype, an InvalidArgumentError naming the entry and both)
        or the optimizer state does not load.
    """
    path = os.path.join(directory, f"{model.name}.weights.npz")
    weights = read_npz(path, f"cannot read the saved weights of the {model.name} "
                             "model from")
    for var in model.variables:
        value = weights.get(var.name)
        wanted = f"{path} does not hold {var.name} of shape {var.shape}"
        if value is None:
            raise InvalidArgumentError(f"{wanted}: it has no entry {var.name!r}")
        if value.shape != var.shape or value.dtype != var.dtype:
            raise InvalidArgumentError(
                f"{wanted} and dtype {var.dtype}: its entry {var.name!r} has "
                f"shape {value.shape} and dtype {value.dtype}")
    # load_state checks the whole file before it changes anything; the
    # weights, already checked, go in after it
    model.optimizer.load_state(os.path.join(directory, f"{model.name}.optimizer.npz"),
                               var_list=model.variables)
    for var in model.variables:
        var.assign(weights[var.name])


# -- memory ---------------------------------------------------------------------


def reset_peak_memory():
    """Reset the process's peak resident memory (Linux); False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def peak_memory():
    """Peak resident memory of the process in bytes since the last reset (or start)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


# -- report ---------------------------------------------------------------------


def format_table(rows):
    """The final comparison as text: one row per dict of `rows`.

    Each row has ``model``, ``log_loss``, ``auc`` and optionally
    ``examples_per_s``, ``peak_memory`` (bytes) and ``table_memory`` (bytes,
    with its dtype: the embedding table and its optimizer slots); missing
    values print as "-".
    """
    head = ("model", "test log-loss", "test AUC", "examples/s", "peak memory",
            "table + slots")
    lines = []
    for row in rows:
        speed = row.get("examples_per_s")
        memory = row.get("peak_memory")
        table = row.get("table_memory")
        lines.append((
            row["model"], f"{row['log_loss']:.4f}", f"{row['auc']:.4f}",
            "-" if speed is None else f"{speed:,.0f}",
            "-" if memory is None else f"{memory / 2**20:,.0f} MiB",
            "-" if table is None else f"{table[0] / 2**20:,.1f} MiB ({table[1]})"))
    widths = [max(len(r[k]) for r in (head, *lines)) for k in range(len(head))]

    def fmt(cells):
        return "  ".join(c.ljust(w) if k == 0 else c.rjust(w)
                         for k, (c, w) in enumerate(zip(cells, widths)))

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([fmt(head), rule] + [fmt(r) for r in lines])


def plot_curves(path, histories, titles, baseline=None):
    """Save a chart of the training loss, test log-loss and test AUC per epoch.

    Parameters
    ----------
    path : str
        The image file (the format follows its extension, e.g. ``.png``).
    histories : dict
        Model name -> history as :func:`fit` fills it.
    titles : dict
        Model name -> label of the curves.
    baseline : dict, optional
        ``{"log_loss": ..., "auc": ...}`` of the constant predictor, drawn as
        dashed lines.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for k, (name, history) in enumerate(histories.items()):
        color = f"C{k}"
        curve = np.asarray(history["curve"], dtype=float).reshape(-1, 2)
        epochs = [e["epoch"] for e in history["epochs"]]
        left.plot(curve[:, 0], curve[:, 1], color=color, alpha=0.6,
                  label=f"{titles[name]}: train (running)")
        left.plot(epochs, [e["test_log_loss"] for e in history["epochs"]], "o-",
                  color=color, label=f"{titles[name]}: test")
        right.plot(epochs, [e["test_auc"] for e in history["epochs"]], "o-",
                   color=color, label=titles[name])
    if baseline is not None:
        left.axhline(baseline["log_loss"], color="gray", ls="--", label="constant")
        right.axhline(baseline["auc"], color="gray", ls="--", label="constant")
    left.set(xlabel="epoch", ylabel="log-loss", title="Loss")
    right.set(xlabel="epoch", ylabel="AUC", title="Test AUC")
    for ax in (left, right):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.legend(fontsize="small")
    right.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
