"""Train two click-through-rate models with sparsegrad and compare them.

Without --data, a synthetic data set is generated (deterministic from --seed):
26 categorical fields with Zipf-distributed values hashed into --buckets
buckets (2**20), clicks drawn from a hidden logistic model with a few pairwise
field crosses.  80% of the examples train, 20% are held out.

--data FILE reads an svmlight/libsvm file instead: lines "label id:value ...",
labels -1/+1 or 0/1 (both labels present), feature ids integers in
[0, 2**64) in any order (none twice on a line), values finite float32
numbers; "#" starts a comment.  The ids are hashed (splitmix64) into
--buckets columns, so no id sizes a table: ids that share a bucket add up.
The whole file is checked before any training; a malformed one ends the run
with one line naming the file, the line and the problem (exit status 2).
The rows are shuffled with --seed, and 20% are held out.

Models (--model):
  ftrl       logistic regression on the hashed one-hot features (a CSR
             matrix, through sg.sparse.sparse_dense_matmul), trained with
             FTRL-Proximal (sg.optimizers.Ftrl)
  embedding  an 8-wide embedding per field from one shared --buckets-row
             table (sg.nn.embedding_lookup; initial rows from
             sparsegrad.distributed.uniform_rows, the same bits on any CPU
             and number of MPI ranks), concatenated, then a 64-32 ReLU MLP,
             plus a linear term over the same buckets; lazy Adam
             (sg.optimizers.Adam(lazy=True)) with sg.clip_by_global_norm.
             With --data (no fields), the row's features form one weighted
             bag: sg.nn.embedding_lookup_sparse on the CSR rows with
             combiner="sum" (the sum of value * embedding over the stored
             entries), then the same MLP and linear term.
             --table-dtype bfloat16 (or float16) stores the table in half
             precision: looked up as float32, trained in mixed precision
             (float32 arithmetic) with slots of the table's type and
             stochastic rounding (seeded by --seed); the other weights stay
             float32.  Half the table's memory; CPU and one process only.

Each epoch prints the held-out log-loss and AUC (scikit-learn's); the end is
a table of both models, a constant predictor (the train-set rate of label 1,
the click rate of the synthetic data) as the baseline, examples per second
peak resident memory and the memory of the embedding table with its
optimizer slots.  With fewer than 50 held-out examples of either
label, those figures are noise, and a note says so.  Needs the demo extra:
pip install "sparsegrad[demo]" (tqdm, scikit-learn, matplotlib).

--save DIR writes the weights and optimizer state after every epoch;
--resume DIR continues from there to --epochs, with the same result as an
uninterrupted run (a damaged checkpoint is refused before any training, in
one line, with exit status 2).

Under an MPI launcher (mpiexec -n P python -m sparsegrad demo ...; needs
pip install "sparsegrad[mpi]"), the P ranks train together: each step's
global batch of --batch-size examples is split among them and their
gradients are summed, so the result is that of one process up to float
rounding, for both models.  (The ranks add in another order than one process
does; over a long run of the embedding model those roundings grow, to about
0.2% of its final log-loss and AUC at the default size.)  The embedding table
is sharded (each rank holds every P-th row, with the initial values it has in
one process); the other weights are copied on every rank.  Only rank 0
prints; --save writes one set of files per rank, and --resume continues on P
ranks again.  --device gpu is not supported under MPI.  Run it from outside
the source tree (there, Python would import the unbuilt sources).
"""

import importlib
import os
import sys
import time

HELP = "train FTRL and embedding CTR models on synthetic or svmlight data"

# Defaults of the run; --resume takes them from the checkpoint instead.
DEFAULTS = {"examples": 500_000, "seed": 0, "batch_size": 512, "data": None,
            "buckets": 2**20, "table_dtype": "float32"}
# The storage types of --table-dtype.
TABLE_DTYPES = ("float32", "bfloat16", "float16")
DEFAULT_EPOCHS = 2
# The most buckets: the column indices of the features are int32.
MAX_BUCKETS = 2**31 - 1
# Below this many held-out examples of either label, the test log-loss and
# AUC are noise (the standard error of the AUC is then 0.04 or more), and
# the run says so.
MIN_TEST_PER_LABEL = 50
# What the demo imports besides sparsegrad: (module, the package to install).
REQUIRED = (("sklearn.metrics", "scikit-learn"), ("threadpoolctl", "threadpoolctl"),
            ("tqdm", "tqdm"))


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
        "--buckets", type=int, metavar="N",
        help=f"hash buckets: rows of the embedding table and weights of the "
             f"linear terms; the synthetic field values and the feature ids of "
             f"--data are hashed into them (default {DEFAULTS['buckets']:,} = "
             f"2**20, at most 2**31 - 1)")
    parser.add_argument(
        "--table-dtype", choices=TABLE_DTYPES,
        help="storage type of the embedding table (default float32); bfloat16 "
             "or float16 halve its memory: float32 arithmetic, slots of the "
             "table's type, stochastic rounding (CPU, one process)")
    parser.add_argument(
        "--data", metavar="FILE",
        help="train on this svmlight/libsvm file instead of synthetic data "
             "(labels -1/+1 or 0/1, ids in [0, 2**64) hashed into --buckets "
             "columns, finite values; rows shuffled with --seed, 20%% held out; "
             "a malformed file is refused before training, in one line)")
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
        message = " ".join(str(exc).split())       # one line, whatever it quotes
        print(f"sparsegrad demo: error: {message}", file=sys.stderr)
        return 2


def _check_range(value, option, low, high=None):
    if value is not None and value < low:
        raise UsageError(f"{option} must be >= {low}, got {value}")
    if value is not None and high is not None and value > high:
        raise UsageError(f"{option} must be <= {high:,}, got {value:,}")


def _check_dependencies():
    """A UsageError naming what is missing of the demo extra."""
    missing = []
    for module, package in REQUIRED:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(package)
    if missing:
        raise UsageError(f"the demo needs {', '.join(missing)}, not installed: "
                         'pip install "sparsegrad[demo]"')


def _check_memory(settings, names, ranks):
    """A UsageError, before anything is allocated, if the synthetic data or a
    model's weights would not fit in this process's memory."""
    import numpy as np

    from sparsegrad.errors import InvalidArgumentError
    from sparsegrad.framework.buffers import check_allocation

    from .data import FIELD_CARDINALITIES
    from .models import EMBEDDING_DIM

    calls = []
    if settings["data"] is None:
        # the ids, their copy in the splits, the CSR features (indices and
        # values), and the per-example float64 temporaries of the draw
        n, fields = settings["examples"], len(FIELD_CARDINALITIES)
        what = f"--examples {n:,}: the synthetic data"
        calls.append([((n, fields), np.int64, what)] * 3
                     + [((n, fields), np.float32, what), ((n, 8), np.float64, what)])
    # each model's variables and optimizer slots, and one more copy of its
    # largest weights while they are made (under MPI, a rank holds its share
    # of the embedding table, and all of the rest)
    buckets = settings["buckets"]
    rows = buckets if ranks is None else -(-buckets // ranks)
    table_dtype = np.dtype(settings["table_dtype"])
    for name in names:
        what = f"--buckets {buckets:,}: the weights of the {name} model"
        column = ((buckets, 1), np.float32, what)
        if name == "ftrl":
            calls.append([column] * 4)
        else:
            # the table, its two slots, and the float32 rows it starts from
            calls.append([((rows, EMBEDDING_DIM), table_dtype, what)] * 3
                         + [((rows, EMBEDDING_DIM), np.float32, what)]
                         + [column] * 3)
    for buffers in calls:
        try:
            check_allocation(*buffers)
        except InvalidArgumentError as exc:
            raise UsageError(str(exc)) from None


def _settings(args, ranks):
    """The data settings of the run: the defaults, or the checkpoint's with
    --resume (which must have been saved by `ranks` MPI ranks, or without
    MPI for None)."""
    given = {"examples": args.examples, "seed": args.seed,
             "batch_size": args.batch_size, "buckets": args.buckets,
             "data": None if args.data is None else os.path.abspath(args.data),
             "table_dtype": getattr(args, "table_dtype", None)}
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
    settings.setdefault("buckets", DEFAULTS["buckets"])  # saved before --buckets
    settings.setdefault("table_dtype", "float32")   # saved before --table-dtype
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
    try:
        import matplotlib
    except ImportError:
        raise UsageError(f"--plot {path}: needs matplotlib, not installed: "
                         'pip install "sparsegrad[demo]"') from None

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
                                              n_buckets=settings["buckets"],
                                              seed=settings["seed"])
        except ValueError as exc:
            raise UsageError(f"--examples {settings['examples']}: {exc}") from None
    try:
        return demo_data.load_svmlight(settings["data"], n_buckets=settings["buckets"],
                                       seed=settings["seed"])
    except (OSError, ValueError) as exc:
        message = str(exc)
        if not message.startswith(settings["data"]):
            message = f"{settings['data']}: {message}"
        raise UsageError(f"--data {message}") from None


def _models(names, data, settings, device, comm):
    from .models import EmbeddingMLP, FtrlLogistic

    for name in names:
        if name == "ftrl":
            yield FtrlLogistic(data.n_buckets, device=device, comm=comm)
        else:
            yield EmbeddingMLP(data.n_buckets, data.n_fields, seed=settings["seed"],
                               device=device, comm=comm,
                               table_dtype=settings["table_dtype"])


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
        try:
            runner.check(directory, name)
        except (OSError, ValueError) as exc:
            raise UsageError(f"--resume {directory}: {exc}") from None


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
            "peak_memory": max(memory) if memory else None,
            "table_memory": getattr(model, "table_memory", lambda: None)()}


def _prepare(args, runner, ranks):
    """Check the options and the checkpoint to resume; the run's plan."""
    settings, saved = _settings(args, ranks)
    epochs = DEFAULT_EPOCHS if args.epochs is None else args.epochs
    names = ["ftrl", "embedding"] if args.model == "both" else [args.model]
    _check_memory(settings, names, ranks)
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
    if settings["table_dtype"] != "float32" and "embedding" in names:
        where = ("--device gpu" if args.device == "gpu"
                 else "mpiexec" if ranks is not None else None)
        if where is not None:
            raise UsageError(f"--table-dtype {settings['table_dtype']} trains on the "
                             f"CPU in one process; it cannot be combined with {where}")
    if args.device == "gpu":
        from ..framework.backend import cupy_status

        usable, why = cupy_status()
        if not usable:
            raise UsageError(f"--device gpu: {why}")
    return settings, saved, epochs, names, save_dir


def _small_test_note(y, synthetic):
    """The note on a test split too small for its figures, or None."""
    ones = int(y.sum())
    zeros = y.shape[0] - ones
    if min(ones, zeros) >= MIN_TEST_PER_LABEL:
        return None
    auc = " (the AUC of one label is undefined: nan)" if min(ones, zeros) == 0 else ""
    remedy = "use more --examples" if synthetic else "use a larger file"
    return (f"note: the test split has {ones:,} example(s) of label 1 and {zeros:,} "
            f"of label 0; with fewer than {MIN_TEST_PER_LABEL} of either, its "
            f"log-loss and AUC are noise{auc} ({remedy})")


def _quiet(*args, **kwargs):
    """print on the ranks other than 0: nothing."""


def _run(args):
    for option, value, low in (("--examples", args.examples, 2),
                               ("--epochs", args.epochs, 1),
                               ("--batch-size", args.batch_size, 1),
                               ("--threads", args.threads, 1),
                               ("--seed", args.seed, 0)):
        _check_range(value, option, low)
    _check_range(args.buckets, "--buckets", 1, MAX_BUCKETS)
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

    import sparsegrad as sg

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
    checked(_check_dependencies)     # after the data: a bad file fails quickly
    from threadpoolctl import threadpool_limits  # a dependency of scikit-learn

    from .metrics import log_loss, roc_auc

    n_train, n_test = data.train.y.shape[0], data.test.y.shape[0]
    rate = float(np.mean(data.train.y))
    if settings["data"] is None:
        source = (f"synthetic CTR data (seed {settings['seed']}): {data.n_fields} "
                  f"fields hashed into {data.n_buckets:,} buckets")
        rate_name = "click rate"
    else:
        source = (f"{settings['data']}: {data.n_ids:,} feature ids hashed into "
                  f"{data.n_buckets:,} buckets")
        rate_name = "rate of label 1"
    split = "" if comm is None else f", split over {runner.size} MPI rank(s)"
    say(f"{source}; {n_train:,} train / {n_test:,} test examples{split}, "
        f"{rate_name} {rate:.3f} (loaded in {time.perf_counter() - start:.1f} s)",
        flush=True)
    note = _small_test_note(data.test.y, settings["data"] is None)
    if note is not None:
        say(note, flush=True)

    constant = np.full(n_test, rate)
    baseline = {"log_loss": log_loss(data.test.y, constant),
                "auc": roc_auc(data.test.y, constant)}
    rows = [{"model": f"constant ({rate_name} {rate:.3f})", **baseline}]
    # What checkpoint.json holds: the data settings and each model's history.
    # A fresh run starts it empty, so that --save never mixes two runs.
    state = {"settings": settings, "models": {}}
    histories, titles = {}, {}
    with threadpool_limits(limits=threads, user_api="blas"):
        for model in _models(names, data, settings, args.device, comm):
            history = saved.get(model.name, {"epochs": [], "curve": []})
            state["models"][model.name] = history
            rows.append(_train(model, data, args, epochs, history, state, save_dir,
                               runner))
            histories[model.name], titles[model.name] = history, model.title
            del model                        # free the tables before the next one

    say()
    say(train.format_table(rows))
    if note is not None:
        say(f"(from {n_test:,} test examples: too few for these figures to mean "
            "anything; see the note above)")
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
