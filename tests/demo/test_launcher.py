"""How ``sparsegrad demo`` tells an MPI launch from a plain one, and what it
refuses under a launcher before starting MPI (the MPI runs themselves are in
tests/distributed/test_demo.py)."""

import sys

import pytest

from sparsegrad.demo.distributed import LAUNCHER_VARIABLES, launched_by_mpi


@pytest.mark.parametrize("name", LAUNCHER_VARIABLES)
def test_each_launcher_variable_means_mpi(name):
    assert launched_by_mpi({name: "0"})
    assert not launched_by_mpi({"OMPI_MCA_foo": "1", "PMI_HOSTNAME": "vm"})


def test_the_environment_is_read_by_default(monkeypatch):
    assert not launched_by_mpi()           # conftest cleared the variables
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "2")
    assert launched_by_mpi()


def test_launcher_without_mpi4py(demo, monkeypatch):
    monkeypatch.setenv("PMI_RANK", "0")
    monkeypatch.setitem(sys.modules, "mpi4py", None)     # import fails
    status, out, err = demo("--examples", "4000")
    assert status == 2 and out == ""
    assert err.startswith("sparsegrad demo: error: started by mpiexec (PMI_RANK is "
                          "set) but mpi4py cannot be imported")
    assert 'pip install "sparsegrad[mpi]"' in err and err.count("\n") == 1


def test_launcher_with_gpu(demo, monkeypatch):
    monkeypatch.setenv("PMIX_RANK", "0")
    status, out, err = demo("--examples", "4000", "--device", "gpu")
    assert status == 2 and out == ""
    assert err == ("sparsegrad demo: error: --device gpu is not supported under "
                   "mpiexec yet (the MPI demo trains on the CPU); drop --device "
                   "gpu, or run without mpiexec\n")


def test_plain_run_is_not_split(demo, table):
    status, out, _ = demo("--examples", "3000", "--epochs", "1", "--model", "ftrl")
    assert status == 0
    assert "split over" not in out and "rank" not in out
    assert "FTRL logistic regression" in table(out)
