"""Train two click-through-rate models with sparsegrad and compare them.

Without --data, a synthetic data set is generated (deterministic from --seed):
26 categorical fields with Zipf-distributed values hashed into 2**20 buckets,
clicks drawn from a hidden logistic model with a few pairwise field crosses.
80% of the examples train, 20% are held out.

Models (--model):
  ftrl       logistic regression on the hashed one-hot features (a CSR
             matrix, through sg.sparse.sparse_dense_matmul), trained with
             FTRL-Proximal (sg.optimizers.Ftrl)
  embedding  an 8-wide embedding per field from one shared 2**20-row table
             (sg.nn.embedding_lookup), concatenated, then a 64-32 ReLU MLP,
             plus a linear term over the same buckets; lazy Adam
             (sg.optimizers.Adam(lazy=True)) with sg.clip_by_global_norm.
             With --data (no fields), the row's features form one weighted
             bag: sg.nn.embedding_lookup_sparse on the CSR rows with
             combiner="sum" (the sum of value * embedding over the stored
             entries), then the same MLP and linear term.

Each epoch prints the held-out log-loss and AUC; the end is a table of both
models, a constant predictor (the train-set click rate) as the baseline,
examples per second and peak resident memory.  Needs the demo extra:
pip install "sparsegrad[demo]" (tqdm, scikit-learn, matplotlib).

--save DIR writes the weights and optimizer state after every epoch;
--resume DIR continues from there to --epochs, with the same result as an
uninterrupted run.

Under an MPI launcher (mpiexec -n P python -m sparsegrad demo ...; needs
pip install "sparsegrad[mpi]"), the P ranks train together: each step's
global batch of --batch-size examples is split among them and their
gradients are summed, so the result is that of one process up to float
rounding.  The embedding table is sharded (each rank holds every P-th row);
the other weights are copied on every rank.  Only rank 0 prints; --save
writes one set of files per rank, and --resume continues on P ranks again.
--device gpu is not supported under MPI.
"""

import os
import sys
import time

HELP = "train FTRL and embedding CTR models on synthetic or svmlight data"

# Defaults of the run; --resume takes them from the checkpoint instead.
DEFAULTS = {"examples": 500_000, "seed": 0, "batch_size": 512, "data": None}
DEFAULT_EPOCHS = 2


class UsageError(Exception):
    """A bad option value or file; the message is printed as one line."""


def _one_line_error(message):
    print(f"sparsegrad demo: error: {message}", file=sys.stderr)
    sys.exit(2)


def add_arguments(parser):
    """Add the options of ``sparsegrad demo`` to the argparse `parser`.

    A value argparse rejects (``--epochs two``) is reported in one line, as
    the checks of :func:`run` are, with exit status 2.
    """
    parser.error = _one_line_error
    parser.add_argument(
        "--examples", type=int, metavar="N",
        help=f"synthetic examples, train and test (default {DEFAULTS['examples']:,})")
    parser.add_argument(
        "--epochs", type=int, default=None, metavar="N",
        help=f"epochs to train each model to (default {DEFAULT_EPOCHS}; with "
             "--resume, the total including the saved ones)")
    parser.add_argument(
        "--batch-size", type=int, metavar="N",
        help=f"examples per training step (default {DEFAULTS['batch_size']})")
    parser.add_argument(
        "--model", choices=("ftrl", "embedding", "both"), default="both",
        help="which model to train (default both)")
    parser.add_argument(
        "--threads", type=int, default=None, metavar="N",
        help="threads of the kernels and of BLAS (sg.set_num_threads; default: "
             "sparsegrad's own count, SPARSEGRAD_NUM_THREADS or every core; "
             "under mpiexec, the machine's cores divided among its ranks); the "
             "results are the same for any count")
    parser.add_argument(
        "--device", choices=("cpu", "gpu"), default="cpu",
        help="where the models' weights live and their kernels run (gpu: "
             "CuPy arrays and the CUDA kernels; needs CuPy and a GPU)")
    parser.add_argument(
        "--seed", type=int, metavar="N",
        help=f"seed of the synthetic data, the initial weights and the "
             f"svmlight split (default {DEFAULTS['seed']})")
    parser.add_argument(
        "--data", metavar="FILE",
        help="train on this svmlight/libsvm file (labels -1/+1 or 0/1; rows "
             "shuffled with --seed, 20%% held out) instead of synthetic data")
    parser.add_argument(
        "--save", metavar="DIR",
        help="save weights and optimizer state to DIR after every epoch")
    parser.add_argument(
        "--resume", metavar="DIR",
        help="continue the run saved in DIR (saving there again unless --save "
             "names another directory)")
    parser.add_argument(
        "--plot", metavar="FILE",
        help="save a chart of the loss and AUC curves (e.g. curves.png)")
    parser.add_argument(
        "--no-progress", action="store_true", help="no progress bar")


def run(args):
    """Run the demo for the parsed `args`; returns the exit status (2 on bad input)."""
    try:
        return _run(args)
    except UsageError as exc:
        print(f"sparsegrad demo: error: {exc}", file=sys.stderr)
        return 2


def _check_range(value, option, low):
    if value is not None and value < low:
        raise UsageError(f"{option} must be >= {low}, got {value}")


def _settings(args, ranks):
    """The data settings of the run: the defaults, or the checkpoint's with
    --resume (which must have been saved by `ranks` MPI ranks, or without
    MPI for None)."""
    given = {"examples": args.examples, "seed": args.seed,
             "batch_size": args.batch_size,
             "data": None if args.data is None else os.path.abspath(args.data)}
    if args.data is not None and args.examples is not None:
        raise UsageError("--examples sets the size of the synthetic data; "
                         "it cannot be combined with --data")
    if args.resume is None:
        settings = dict(DEFAULTS)
        if args.data is not None:
            settings["examples"] = None
        settings.update({k: v for k, v in given.items() if v is not None})
        return settings, {}
    from .train import read_index

    try:
        state = read_index(args.resume)
    except FileNotFoundError:
        raise UsageError(f"--resume {args.resume}: no checkpoint.json there "
                         "(write one with --save)") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"--resume {args.resume}: {exc}") from None
    if state.get("ranks") != ranks:
        raise UsageError(_other_ranks(args.resume, state.get("ranks"), ranks))
    settings = state["settings"]
    for key, value in given.items():
        if value is not None and value != settings.get(key):
            option = "--" + key.replace("_", "-")
            raise UsageError(f"{option} {value} differs from {settings.get(key)}, "
                             f"the value of the run saved in {args.resume}")
    return settings, state["models"]


def _other_ranks(directory, saved, ranks):
    """The error of a --resume on another number of ranks than saved it."""
    if saved is None:
        return (f"--resume {directory}: saved by a run without MPI; resume it "
                "without mpiexec (a checkpoint continues on the ranks that wrote it)")
    if ranks is None:
        return (f"--resume {directory}: saved by {saved} MPI rank(s); resume it "
                f"with mpiexec -n {saved}")
    return (f"--resume {directory}: saved by {saved} MPI rank(s), this run has "
            f"{ranks}; resume it with mpiexec -n {saved}")


def _check_plot(path):
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"--plot {path}: directory {directory} does not exist")
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    extension = os.path.splitext(path)[1].lstrip(".").lower()
    formats = Figure().canvas.get_supported_filetypes()
    if extension not in formats:
        raise UsageError(f"--plot {path}: unknown image format {extension!r} "
                         f"(use one of {', '.join(sorted(formats))})")


def _load_data(settings):
    from . import data as demo_data

    if settings["data"] is None:
        try:
            return demo_data.make_ctr_dataset(settings["examples"],
                                              seed=settings["seed"])
        except ValueError as exc:
            raise UsageError(f"--examples {settings['examples']}: {exc}") from None
    try:
        return demo_data.load_svmlight(settings["data"], seed=settings["seed"])
    except (OSError, ValueError) as exc:
        message = str(exc)
        if not message.startswith(settings["data"]):
            message = f"{settings['data']}: {message}"
        raise UsageError(f"--data {message}") from None


def _models(names, data, seed, device, comm):
    from .models import EmbeddingMLP, FtrlLogistic

    for name in names:
        if name == "ftrl":
            yield FtrlLogistic(data.n_buckets, device=device, comm=comm)
        else:
            yield EmbeddingMLP(data.n_buckets, data.n_fields, seed=seed,
                               device=device, comm=comm)


def _check_resume(directory, saved, names, epochs, runner):
    """Fail early, before any training, if the saved models cannot continue."""
    for name in names:
        done = len(saved.get(name, {}).get("epochs", []))
        if not done:
            continue
        if done > epochs:
            raise UsageError(f"--epochs {epochs}: the {name} model saved in "
                             f"{directory} has trained {done} epochs already")
        for part in runner.missing(directory, name):
            raise UsageError(f"--resume {directory}: the {part} of the {name} "
                             "model are missing")


def _world(device):
    """``MPI.COMM_WORLD`` when started by an MPI launcher, else None."""
    from . import distributed

    if not distributed.launched_by_mpi():
        return None
    if device == "gpu":
        raise UsageError("--device gpu is not supported under mpiexec yet (the "
                         "MPI demo trains on the CPU); drop --device gpu, or run "
                         "without mpiexec")
    try:
        return distributed.world()
    except ImportError as exc:
        raise UsageError(str(exc)) from None


def _train(model, data, args, epochs, history, state, save_dir, runner):
    """Train one model (resuming it if `history` has epochs); its table row."""
    from . import train

    if history["epochs"]:
        try:
            runner.load(args.resume, model)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--resume {args.resume}: {exc}") from None
    train.reset_peak_memory()

    def on_epoch(epoch):
        history["epochs"][-1]["peak_memory"] = runner.peak_memory()
        if save_dir is not None:
            runner.save(save_dir, model, state)

    before = len(history["epochs"])
    train.fit(model, data, epochs=epochs, batch_size=state["settings"]["batch_size"],
              history=history, progress=not args.no_progress, on_epoch=on_epoch,
              runner=runner)
    if save_dir is not None and len(history["epochs"]) == before:
        runner.save(save_dir, model, state)     # resumed into a new DIR
    done = history["epochs"]
    seconds = sum(e["seconds"] for e in done)
    memory = [e["peak_memory"] for e in done if "peak_memory" in e]
    return {"model": model.title, "log_loss": done[-1]["test_log_loss"],
            "auc": done[-1]["test_auc"],
            "examples_per_s": sum(e["examples"] for e in done) / seconds
            if seconds else None,
            "peak_memory": max(memory) if memory else None}


def _prepare(args, runner, ranks):
    """Check the options and the checkpoint to resume; the run's plan."""
    settings, saved = _settings(args, ranks)
    epochs = DEFAULT_EPOCHS if args.epochs is None else args.epochs
    names = ["ftrl", "embedding"] if args.model == "both" else [args.model]
    if args.resume is not None:
        _check_resume(args.resume, saved, names, epochs, runner)
    save_dir = args.save if args.save is not None else args.resume
    if (save_dir is not None and os.path.exists(save_dir)
            and not os.path.isdir(save_dir)):
        raise UsageError(f"--save {save_dir}: exists and is not a directory")
    if args.plot is not None:
        _check_plot(args.plot)
    if args.threads is not None:
        import sparsegrad as sg

        try:
            sg.set_num_threads(args.threads)
        except ValueError as exc:
            raise UsageError(f"--threads {args.threads}: {exc}") from None
    if args.device == "gpu":
        from ..framework.backend import cupy_status

        usable, why = cupy_status()
        if not usable:
            raise UsageError(f"--device gpu: {why}")
    return settings, saved, epochs, names, save_dir


def _quiet(*args, **kwargs):
    """print on the ranks other than 0: nothing."""


def _run(args):
    for option, value, low in (("--examples", args.examples, 2),
                               ("--epochs", args.epochs, 1),
                               ("--batch-size", args.batch_size, 1),
                               ("--threads", args.threads, 1),
                               ("--seed", args.seed, 0)):
        _check_range(value, option, low)
    comm = _world(args.device)
    from . import train

    if comm is None:
        runner, ranks = train.LocalRunner(), None

        def checked(check):
            return check()
    else:
        from .distributed import DistributedRunner, agree

        runner = DistributedRunner(comm)
        ranks = runner.size

        def checked(check):          # an error on any rank is raised on all
            return agree(comm, check)
    settings, saved, epochs, names, save_dir = checked(
        lambda: _prepare(args, runner, ranks))

    import numpy as np
    from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

    import sparsegrad as sg

    from .metrics import log_loss, roc_auc

    threads = args.threads
    if comm is not None and threads is None \
            and "SPARSEGRAD_NUM_THREADS" not in os.environ:
        # the ranks on one machine share its cores
        from .distributed import threads_per_rank

        threads = threads_per_rank(comm)
        sg.set_num_threads(threads)
    say = print if runner.main else _quiet
    start = time.perf_counter()
    data = checked(lambda: _load_data(settings))
    n_train, n_test = data.train.y.shape[0], data.test.y.shape[0]
    click_rate = float(np.mean(data.train.y))
    if settings["data"] is None:
        source = (f"synthetic CTR data (seed {settings['seed']}): {data.n_fields} "
                  f"fields hashed into {data.n_buckets:,} buckets")
    else:
        source = f"{settings['data']}: {data.n_buckets:,} features"
    split = "" if comm is None else f", split over {runner.size} MPI rank(s)"
    say(f"{source}; {n_train:,} train / {n_test:,} test examples{split}, click rate "
        f"{click_rate:.3f} (loaded in {time.perf_counter() - start:.1f} s)",
        flush=True)

    constant = np.full(n_test, click_rate)
    baseline = {"log_loss": log_loss(data.test.y, constant),
                "auc": roc_auc(data.test.y, constant)}
    rows = [{"model": f"constant (click rate {click_rate:.3f})", **baseline}]
    # What checkpoint.json holds: the data settings and each model's history.
    # A fresh run starts it empty, so that --save never mixes two runs.
    state = {"settings": settings, "models": {}}
    histories, titles = {}, {}
    with threadpool_limits(limits=threads, user_api="blas"):
        for model in _models(names, data, settings["seed"], args.device, comm):
            history = saved.get(model.name, {"epochs": [], "curve": []})
            state["models"][model.name] = history
            rows.append(_train(model, data, args, epochs, history, state, save_dir,
                               runner))
            histories[model.name], titles[model.name] = history, model.title
            del model                        # free the tables before the next one

    say()
    say(train.format_table(rows))
    if args.device == "gpu":
        where = "on the GPU"
    elif comm is None:
        where = f"{sg.get_num_threads()} thread(s)"
    else:
        where = (f"{runner.size} rank{'s' if runner.size != 1 else ''} x "
                 f"{sg.get_num_threads()} thread(s)")
    say(f"\ntotal {time.perf_counter() - start:.1f} s, {where}")
    if args.plot is not None and runner.main:
        train.plot_curves(args.plot, histories, titles, baseline)
        say(f"curves written to {args.plot}")
    return 0
