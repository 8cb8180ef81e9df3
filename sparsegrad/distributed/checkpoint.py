"""Checkpoints of a data-parallel job: one file per rank, one index.

:func:`save_checkpoint` has every rank write what it holds (the values of
its variables, a shard of a :class:`~sparsegrad.distributed.ShardedEmbedding`
being that rank's rows) and, optionally, its optimizer's state; rank 0 then
writes ``index.json``, which makes the directory a complete checkpoint.
:func:`load_checkpoint` reads and checks everything on every rank before it
changes anything anywhere, so a bad or incomplete checkpoint raises on every
rank and leaves the job as it was.

A directory holds::

    index.json                   format, number of ranks, each rank's entries
    rank-{r}-of-{p}.npz          rank r's variables, by position
    rank-{r}-of-{p}.optimizer.npz
                                 rank r's optimizer state (optimizer.save_state)

float16 and bfloat16 values are stored as their bits with their dtype's name
(:func:`~sparsegrad.framework.archives.write_npz`) and come back bit for bit;
a saved dtype that is not the variable's is refused before anything changes.
"""

import contextlib
import json
import os
import tempfile

import numpy as np

from ..errors import InvalidArgumentError
from ..framework.archives import NpzArchive, write_npz
from ..framework.variable import Variable
from . import registry
from .comm import checked_allgather, resolve

__all__ = ["save_checkpoint", "load_checkpoint"]

#: The ``format`` entry of ``index.json``.
FORMAT = "sparsegrad.distributed.checkpoint/1"
INDEX = "index.json"


def _rank_path(directory, rank, size):
    return os.path.join(directory, f"rank-{rank}-of-{size}.npz")


def _optimizer_path(directory, rank, size):
    return os.path.join(directory, f"rank-{rank}-of-{size}.optimizer.npz")


def _job(comm, directory, where):
    """``(comm, rank, size, directory as a str)``; a bad `directory` on any
    rank raises on every rank."""
    comm = resolve(comm)

    def path():
        try:
            return os.fspath(directory)
        except TypeError:
            raise TypeError(
                f"{where}: directory must be a str or os.PathLike, got {directory!r}"
            ) from None

    rank = comm.Get_rank()
    return comm, rank, comm.Get_size(), checked_allgather(comm, path)[rank]


def _variable_list(variables, where):
    """`variables` as a list of distinct Variables."""
    if isinstance(variables, Variable):
        variables = [variables]
    try:
        variables = list(variables)
    except TypeError:
        raise TypeError(
            f"{where}: variables must be a list of sparsegrad.Variable, got "
            f"{variables!r}"
        ) from None
    seen = set()
    for k, var in enumerate(variables):
        if not isinstance(var, Variable):
            raise TypeError(
                f"{where}: variables[{k}] must be a sparsegrad.Variable, got "
                f"{type(var).__name__}"
            )
        if id(var) in seen:
            raise InvalidArgumentError(
                f"{where}: variables[{k}] ({var.name!r}) appears twice in variables"
            )
        seen.add(id(var))
    return variables


def _tracked_variables(optimizer, where):
    """The variables `optimizer` holds slots for, in the order it saw them
    (a wrapper such as DistributedOptimizer is asked through its
    ``optimizer`` attribute when it does not answer itself)."""
    for candidate in (optimizer, getattr(optimizer, "optimizer", None)):
        method = getattr(candidate, "tracked_variables", None)
        if callable(method):
            return list(method())
    raise TypeError(
        f"{where}: optimizer must be a sparsegrad optimizer (with save_state, "
        f"load_state and tracked_variables), got {type(optimizer).__name__}"
    )


def _optimizer_positions(optimizer, variables, where):
    """Where each variable the optimizer tracks sits in `variables`."""
    position = {id(var): k for k, var in enumerate(variables)}
    positions = []
    for var in _tracked_variables(optimizer, where):
        if id(var) not in position:
            raise InvalidArgumentError(
                f"{where}: the optimizer holds slots for variable {var.name!r}, "
                "which is not in variables; pass every variable it trains"
            )
        positions.append(position[id(var)])
    return positions


def _remove(paths):
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


def save_checkpoint(directory, variables, optimizer=None, comm=None):
    """Write this job's variables (and optimizer state) under `directory`.

    A collective: every rank of `comm` calls it with its own `variables` (the
    same model; a sharded variable holds that rank's rows).  Each rank writes
    ``rank-{r}-of-{p}.npz`` (and ``rank-{r}-of-{p}.optimizer.npz`` with
    ``optimizer.save_state``) under a temporary name; once every rank
    succeeded, rank 0 removes the old ``index.json``, the files take their
    final names, and rank 0 writes the new ``index.json``: a save that
    stopped half-way leaves a directory without an index, which
    :func:`load_checkpoint` refuses.

    Parameters
    ----------
    directory : str or os.PathLike
        Created if missing; the same directory for every rank (a shared
        file system when the ranks run on several machines).
    variables : list of Variable
        What to save, by position; :func:`load_checkpoint` takes the same
        list.  Their names are recorded (for messages only).
    optimizer : optimizer, optional
        A sparsegrad optimizer, or a
        :class:`~sparsegrad.distributed.DistributedOptimizer`; every
        variable it holds slots for must be in `variables`.
    comm : mpi4py.MPI.Intracomm, optional
        Defaults to ``MPI.COMM_WORLD``.

    Returns
    -------
    str
        The path of ``index.json``.

    Raises
    ------
    InvalidArgumentError
        On every rank, if a variable appears twice in `variables` on any
        rank, or the optimizer trains a variable that is not in it.
    TypeError
        On every rank, if `directory` is not a path or `variables` holds
        something else than Variables (on any rank).
    OSError
        On every rank, if a file could not be written on any rank; no
        temporary file is left behind then.

    Examples
    --------
    >>> import tempfile
    >>> import sparsegrad as sg
    >>> from sparsegrad.distributed import load_checkpoint, save_checkpoint
    >>> w = sg.Variable([1.0, 2.0])
    >>> opt = sg.optimizers.Adagrad(0.1)
    >>> step = lambda: opt.apply_gradients([(sg.constant([1.0, -1.0]), w)])
    >>> _ = step()
    >>> path = tempfile.mkdtemp()
    >>> _ = save_checkpoint(path, [w], opt)
    >>> _ = step()
    >>> after_two = w.numpy()
    >>> load_checkpoint(path, [w], opt)
    >>> int(opt.iterations.numpy())
    1
    >>> _ = step()
    >>> bool((w.numpy() == after_two).all())
    True
    """
    where = "save_checkpoint"
    comm, rank, size, directory = _job(comm, directory, where)
    final = [_rank_path(directory, rank, size)]
    if optimizer is not None:
        final.append(_optimizer_path(directory, rank, size))
    partial = [f"{path}.partial" for path in final]
    written = []

    def write():
        checked = _variable_list(variables, where)
        positions = (None if optimizer is None
                     else _optimizer_positions(optimizer, checked, where))
        os.makedirs(directory, exist_ok=True)
        arrays = {f"variable/{k}": var.numpy() for k, var in enumerate(checked)}
        entries = [{"name": var.name, "shape": list(var.shape),
                    "dtype": var.dtype.name, "sharded": registry.is_sharded(var)}
                   for var in checked]
        arrays["meta"] = np.asarray(json.dumps({"format": FORMAT, "rank": rank,
                                                "size": size,
                                                "variables": entries}))
        written.append(partial[0])
        write_npz(partial[0], arrays)
        if optimizer is not None:
            written.append(partial[1])
            optimizer.save_state(partial[1])
        return {"variables": entries, "optimizer_variables": positions}

    def remove_index():
        if rank == 0:
            _remove([os.path.join(directory, INDEX)])

    def rename():
        for source, target in zip(partial, final):
            os.replace(source, target)
        if optimizer is None:   # an optimizer file of an earlier save
            _remove([_optimizer_path(directory, rank, size)])

    index_path = os.path.join(directory, INDEX)

    def write_index():
        if rank != 0:
            return None
        index = {"format": FORMAT, "size": size, "optimizer": optimizer is not None,
                 "ranks": ranks}
        with open(f"{index_path}.partial", "w", encoding="utf-8") as f:
            json.dump(index, f, indent=1)
        os.replace(f"{index_path}.partial", index_path)
        return None

    try:
        ranks = checked_allgather(comm, write)
        checked_allgather(comm, remove_index)
        checked_allgather(comm, rename)
        checked_allgather(comm, write_index)
    finally:
        _remove(written)   # the partial files, where they were not renamed
    return index_path


def _read_index(directory, size, where):
    path = os.path.join(directory, INDEX)
    if not os.path.isfile(path):
        raise InvalidArgumentError(
            f"{where}: {directory!r} holds no {INDEX}: it is not a checkpoint, or "
            "its saving did not finish"
        )
    try:
        with open(path, encoding="utf-8") as f:
            index = json.load(f)
    except (OSError, ValueError) as exc:
        raise InvalidArgumentError(f"{where}: cannot read {path!r}: {exc}") from None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise InvalidArgumentError(
            f"{where}: {path!r} is not a checkpoint index of format {FORMAT!r}"
        )
    saved = index.get("size")
    ranks = index.get("ranks")
    if not isinstance(saved, int) or not isinstance(ranks, list) or \
            len(ranks) != saved:
        raise InvalidArgumentError(f"{where}: {path!r} is damaged (size, ranks)")
    for entry in ranks:
        entries = entry.get("variables") if isinstance(entry, dict) else None
        if not isinstance(entries, list) or not all(
                isinstance(e, dict) and isinstance(e.get("name"), str)
                and isinstance(e.get("dtype"), str)
                and isinstance(e.get("shape"), list) for e in entries):
            raise InvalidArgumentError(
                f"{where}: {path!r} is damaged (the variables of a rank)")
    if saved != size:
        raise InvalidArgumentError(
            f"{where}: the checkpoint in {directory!r} was saved by {saved} ranks, "
            f"this job has {size}; load it with {saved} ranks"
        )
    return index


def _read_values(path, entries, rank, size, where):
    """The arrays of a rank file, checked against its index entries: each
    header before any data is read."""
    if not os.path.isfile(path):
        raise InvalidArgumentError(f"{where}: the rank file {path!r} is missing")
    with NpzArchive(path, f"{where}: cannot read") as archive:
        mine, header = False, archive.header("meta")
        if header is not None and header[0] == () and header[1].kind == "U":
            try:
                meta = json.loads(str(archive.read("meta")[0]))
                mine = (meta["format"], meta["rank"], meta["size"]) == (
                    FORMAT, rank, size)
            except (KeyError, TypeError, ValueError, RecursionError):
                pass
        if not mine:
            raise InvalidArgumentError(
                f"{where}: {path!r} is not the file of rank {rank} of {size} in a "
                f"checkpoint of format {FORMAT!r}"
            )
        for k, entry in enumerate(entries):
            header = archive.header(f"variable/{k}")
            if header is None:
                raise InvalidArgumentError(
                    f"{where}: {path!r} lacks variable {k} ({entry['name']!r})"
                )
            shape, dtype = header
            if list(shape) != entry["shape"] or dtype.name != entry["dtype"]:
                raise InvalidArgumentError(
                    f"{where}: variable {k} in {path!r} has shape {shape} and "
                    f"dtype {dtype}, its index says {tuple(entry['shape'])} and "
                    f"{entry['dtype']}"
                )
        return archive.read(*(f"variable/{k}" for k in range(len(entries))))


def load_checkpoint(directory, variables, optimizer=None, comm=None):
    """Restore what :func:`save_checkpoint` wrote; training then resumes exactly.

    A collective.  Every rank first reads and checks its part: the index,
    the number of ranks, its rank file, the shapes and dtypes of the
    variables, the optimizer file.  Only when every rank succeeded is the
    optimizer state loaded (``optimizer.load_state``) and then the variables
    assigned; if loading an optimizer state fails on any rank, the ranks
    where it succeeded put their previous state back.

    Parameters
    ----------
    directory : str or os.PathLike
    variables : list of Variable
        The same list (by position, shape and dtype) as when saving.
    optimizer : optimizer, optional
        Gets the saved state (the checkpoint must hold one); the variables it
        tracked when saving get their slots back.
    comm : mpi4py.MPI.Intracomm, optional
        Defaults to ``MPI.COMM_WORLD``; the same number of ranks as the
        saving job.

    Returns
    -------
    None
        The variables (and the optimizer) hold the saved values on return.

    Raises
    ------
    InvalidArgumentError
        On every rank, with nothing changed on any rank (variables and
        optimizer), if on any rank: `directory` holds no ``index.json`` (or a
        damaged one); the checkpoint was saved by another number of ranks
        (``saved by 4 ranks, this job has 2``); a rank file is missing,
        unreadable or damaged (an entry whose header declares another shape
        than the index, or more data than the file holds: every header is
        checked before any data is read); `variables` differs from the saved ones in
        number, shape or dtype; an optimizer is passed and the checkpoint
        holds none; or ``optimizer.load_state`` refuses the saved state.
    TypeError
        On every rank, if `directory` is not a path or `variables` holds
        something else than Variables.

    Examples
    --------
    >>> import tempfile
    >>> import sparsegrad as sg
    >>> from sparsegrad.distributed import load_checkpoint, save_checkpoint
    >>> path = tempfile.mkdtemp()
    >>> _ = save_checkpoint(path, [sg.Variable([1.0, 2.0])])
    >>> v = sg.Variable([0.0, 0.0])
    >>> load_checkpoint(path, [v])
    >>> v.numpy()
    array([1., 2.])
    >>> try:
    ...     load_checkpoint(path, [sg.Variable([0.0, 0.0, 0.0])])
    ... except sg.errors.InvalidArgumentError as e:
    ...     print("refused")
    refused
    """
    where = "load_checkpoint"
    comm, rank, size, directory = _job(comm, directory, where)
    read = {}

    def check():
        checked = _variable_list(variables, where)
        index = _read_index(directory, size, where)
        entries = index["ranks"][rank]["variables"]
        if len(entries) != len(checked):
            raise InvalidArgumentError(
                f"{where}: rank {rank} saved {len(entries)} variables in "
                f"{directory!r}, variables has {len(checked)}"
            )
        for k, (var, entry) in enumerate(zip(checked, entries)):
            if list(var.shape) != entry["shape"] or var.dtype.name != entry["dtype"]:
                raise InvalidArgumentError(
                    f"{where}: variables[{k}] ({var.name!r}, {var.shape}, "
                    f"{var.dtype}) does not match the saved {entry['name']!r} "
                    f"({tuple(entry['shape'])}, {entry['dtype']}) of rank {rank}"
                )
        # the variables and the index agree: the file's headers must too,
        # before its data is read
        values = _read_values(_rank_path(directory, rank, size), entries, rank,
                              size, where)
        read["variables"], read["values"] = checked, values
        if optimizer is None:
            return None
        if not index.get("optimizer"):
            raise InvalidArgumentError(
                f"{where}: the checkpoint in {directory!r} holds no optimizer state"
            )
        positions = index["ranks"][rank].get("optimizer_variables")
        if not isinstance(positions, list) or not all(
                isinstance(k, int) and 0 <= k < len(checked) for k in positions):
            raise InvalidArgumentError(
                f"{where}: the index in {directory!r} is damaged "
                f"(optimizer_variables of rank {rank})"
            )
        path = _optimizer_path(directory, rank, size)
        if not os.path.isfile(path):
            raise InvalidArgumentError(
                f"{where}: the optimizer file {path!r} is missing"
            )
        read["optimizer_path"] = path
        read["optimizer_vars"] = [checked[k] for k in positions]
        # the state to put back should another rank fail to load its own (a
        # file on disk, not memory: slots can be as large as the shard); the
        # ExitStack of load_checkpoint closes it
        read["tracked"] = _tracked_variables(optimizer, where)
        snapshot = tempfile.TemporaryFile()  # noqa: SIM115
        read["snapshot"] = snapshots.enter_context(snapshot)
        optimizer.save_state(read["snapshot"])
        return None

    with contextlib.ExitStack() as snapshots:
        checked_allgather(comm, check)
        if optimizer is not None:
            _load_optimizer(comm, optimizer, read)
    for var, value in zip(read["variables"], read["values"]):
        var.assign(value)
    return None


def _load_optimizer(comm, optimizer, read):
    """``optimizer.load_state`` on every rank, or on none: where it worked
    while another rank failed, the snapshot taken before is loaded back."""
    loaded = []

    def load():
        optimizer.load_state(read["optimizer_path"], var_list=read["optimizer_vars"])
        loaded.append(True)

    try:
        checked_allgather(comm, load)
    except Exception:
        if loaded:
            read["snapshot"].seek(0)
            optimizer.load_state(read["snapshot"], var_list=read["tracked"])
        raise
