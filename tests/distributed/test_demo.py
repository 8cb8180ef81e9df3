"""``sparsegrad demo`` under mpiexec: the data split over the ranks gives the
single-process result; rank 0 alone prints; checkpoints resume on as many
ranks as saved them."""

import argparse
import contextlib
import io
import json

import numpy as np
import pytest

from sparsegrad.demo import cli
from sparsegrad.demo.distributed import share

SMALL = ("--examples", "4000", "--epochs", "1", "--no-progress")
# 3,200 train rows = 7 x 457 + 1: the last global batch has one row, so the
# second rank's share of it is empty (and so are its lookups)
ODD = ("--examples", "4000", "--epochs", "1", "--batch-size", "457",
       "--no-progress")


def job(mpirun, n, outdir, runs):
    """Run the `runs` ({tag: args}) in one job of `n` ranks; per tag, per
    rank: (status, stdout, stderr)."""
    argv = []
    for tag, args in runs.items():
        argv += (["+"] if argv else []) + [tag, *args]
    mpirun(n, "demo_job.py", outdir, *argv)
    results = {}
    for tag in runs:
        results[tag] = [
            (int((outdir / f"{tag}.rank{r}.status").read_text()),
             (outdir / f"{tag}.rank{r}.out").read_text(),
             (outdir / f"{tag}.rank{r}.err").read_text()) for r in range(n)]
    return results


def single(*argv):
    """``sparsegrad demo`` in this process (no launcher): (status, stdout, stderr)."""
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.run(parser.parse_args(list(argv)))
    return status, out.getvalue(), err.getvalue()


def history(directory):
    return json.loads((directory / "checkpoint.json").read_text())


def epoch(directory, model, k=0):
    return history(directory)["models"][model]["epochs"][k]


def svmlight_file(path):
    """A small svmlight file: 1,500 rows of 300 features, labels of a
    linear model."""
    import scipy.sparse as sp
    from sklearn.datasets import dump_svmlight_file

    rng = np.random.default_rng(0)
    X = sp.random(1500, 300, density=0.03, random_state=1, format="csr",
                  dtype=np.float32)
    y = (X @ rng.standard_normal(300) + 0.3 * rng.standard_normal(1500) > 0)
    dump_svmlight_file(X, y.astype(int), str(path))
    return path


def svmlight_args(path, directory):
    return ("--data", path, "--model", "embedding", "--epochs", "1",
            "--batch-size", "100", "--no-progress", "--save", directory)


@pytest.fixture(scope="module")
def two(mpirun, tmp_path_factory):
    """A job of 2 ranks: a small run saved to A, A resumed to 2 epochs, the
    same 2 epochs straight to S, the odd batch size saved to O, the
    embedding model on an svmlight file (bags of weighted features) to V."""
    tmp = tmp_path_factory.mktemp("demo2")
    dirs = {k: tmp / k for k in "ASOV"}
    dirs["svmlight"] = svmlight_file(tmp / "data.svm")
    runs = {"main": (*SMALL, "--save", dirs["A"]),
            "resume": ("--resume", dirs["A"], "--epochs", "2", "--no-progress"),
            "straight": (*SMALL[:2], "--epochs", "2", "--no-progress",
                         "--save", dirs["S"]),
            "odd": (*ODD, "--save", dirs["O"]),
            "svmlight": svmlight_args(dirs["svmlight"], dirs["V"])}
    (tmp / "out").mkdir()
    return job(mpirun, 2, tmp / "out", runs), dirs


@pytest.fixture(scope="module")
def one(mpirun, tmp_path_factory, two):
    """A job of 1 rank: the embedding model saved to B and on the svmlight
    file to V; A (of 2 ranks) and a checkpoint of one process without MPI
    (C) resumed on 1 rank; --device gpu."""
    _, dirs = two
    tmp = tmp_path_factory.mktemp("demo1")
    (tmp / "out").mkdir()
    status, _, err = single(*SMALL, "--model", "ftrl", "--save", str(tmp / "C"))
    assert status == 0, err
    runs = {"embedding": (*SMALL, "--model", "embedding", "--save", tmp / "B"),
            "svmlight": svmlight_args(dirs["svmlight"], tmp / "V"),
            "other_ranks": ("--resume", dirs["A"], "--epochs", "3", "--no-progress"),
            "without_mpi": ("--resume", tmp / "C", "--epochs", "2", "--no-progress"),
            "gpu": (*SMALL, "--device", "gpu")}
    return job(mpirun, 1, tmp / "out", runs), tmp


def test_share_is_array_split():
    for n in range(0, 12):
        for size in range(1, 6):
            expected = np.array_split(np.arange(100, 100 + n), size)
            for rank in range(size):
                first, end = share(100, 100 + n, rank, size)
                np.testing.assert_array_equal(np.arange(first, end), expected[rank])


def test_only_rank_0_prints(two):
    results, _ = two
    for tag, ranks in results.items():
        for rank, (status, _, err) in enumerate(ranks):
            assert status == 0, f"{tag} rank {rank}: {err}"
        (_, out, _), (_, out1, err1) = ranks
        assert out1 == "" and err1 == "", tag
        assert out.count("test log-loss  test AUC") == 1, tag
        assert "2 ranks x 1 thread(s)" in out, tag
    out = results["main"][0][1]
    assert "3,200 train / 800 test examples, split over 2 MPI rank(s)" in out
    assert "ftrl      epoch 1/1" in out and "embedding epoch 1/1" in out


@pytest.mark.parametrize("args, directory", [(SMALL, "A"), (ODD, "O")],
                         ids=["batch512", "batch457"])
def test_ftrl_matches_one_process(two, tmp_path, args, directory):
    _, dirs = two
    status, _, err = single(*args, "--model", "ftrl", "--save", str(tmp_path))
    assert status == 0, err
    expected, got = epoch(tmp_path, "ftrl"), epoch(dirs[directory], "ftrl")
    for key in ("train_loss", "test_log_loss", "test_auc"):
        assert got[key] == pytest.approx(expected[key], rel=1e-4), key
    assert got["examples"] == expected["examples"] == 3200


@pytest.mark.parametrize("tag, directory", [("embedding", "A"), ("svmlight", "V")])
def test_embedding_on_one_and_two_ranks(two, one, tag, directory):
    _, dirs = two
    results, tmp = one
    assert results[tag][0][0] == 0, results[tag][0][2]
    assert "1 rank x 1 thread(s)" in results[tag][0][1]
    expected = epoch(tmp / ("B" if tag == "embedding" else "V"), "embedding")
    got = epoch(dirs[directory], "embedding")
    for key in ("train_loss", "test_log_loss", "test_auc"):
        assert got[key] == pytest.approx(expected[key], rel=1e-3), key
    if tag == "embedding":
        # it learned: the loss of the first steps is log(2) = 0.693
        assert got["train_loss"] < 0.67
    else:
        # the labels are linear in X (twelve steps of one epoch: about 0.75)
        assert got["test_auc"] > 0.7


@pytest.mark.parametrize("tag", ["synthetic", "svmlight"])
def test_embedding_matches_one_process(two, tmp_path, tag):
    # the sharded table starts from the rows of the single-process table
    # (uniform_rows of the seed), so 2 ranks give the result of one process
    # without MPI up to float rounding
    _, dirs = two
    if tag == "synthetic":
        args = (*SMALL, "--model", "embedding", "--save", str(tmp_path))
        directory = dirs["A"]
    else:
        args = tuple(map(str, svmlight_args(dirs["svmlight"], tmp_path)))
        directory = dirs["V"]
    status, _, err = single(*args)
    assert status == 0, err
    expected, got = epoch(tmp_path, "embedding"), epoch(directory, "embedding")
    assert got["examples"] == expected["examples"]
    for key in ("train_loss", "test_log_loss", "test_auc"):
        assert got[key] == pytest.approx(expected[key], rel=1e-3), key


def test_resumed_run_equals_the_straight_run(two):
    _, dirs = two
    resumed, straight = history(dirs["A"]), history(dirs["S"])
    assert resumed["ranks"] == straight["ranks"] == 2
    for name in ("ftrl", "embedding"):
        a, s = resumed["models"][name], straight["models"][name]
        assert a["curve"] == s["curve"], name
        assert len(a["epochs"]) == len(s["epochs"]) == 2
        for ea, es in zip(a["epochs"], s["epochs"]):
            for key in ("train_loss", "test_log_loss", "test_auc", "examples"):
                assert ea[key] == es[key], (name, key)


def test_resume_on_other_ranks_is_refused(two, one):
    _, dirs = two
    results, tmp = one
    status, out, err = results["other_ranks"][0]
    assert status == 2 and out == ""
    assert err == (f"sparsegrad demo: error: --resume {dirs['A']}: saved by 2 MPI "
                   "rank(s), this run has 1; resume it with mpiexec -n 2\n")
    status, out, err = results["without_mpi"][0]
    assert status == 2 and out == ""
    assert err == (f"sparsegrad demo: error: --resume {tmp / 'C'}: saved by a run "
                   "without MPI; resume it without mpiexec (a checkpoint "
                   "continues on the ranks that wrote it)\n")
    # without mpiexec, a checkpoint of 2 ranks, before any work
    status, out, err = single("--resume", str(dirs["A"]), "--epochs", "3")
    assert status == 2 and out == ""
    assert err == (f"sparsegrad demo: error: --resume {dirs['A']}: saved by 2 MPI "
                   "rank(s); resume it with mpiexec -n 2\n")


def test_gpu_under_mpi_is_refused(one):
    results, _ = one
    status, out, err = results["gpu"][0]
    assert status == 2 and out == ""
    assert err.startswith("sparsegrad demo: error: --device gpu is not supported "
                          "under mpiexec")
    assert err.count("\n") == 1
