"""Run ``sparsegrad demo`` in the test process, as ``sparsegrad.__main__`` does."""

import argparse

import pytest

from sparsegrad.demo import cli


def parse(argv):
    parser = argparse.ArgumentParser(prog="sparsegrad demo", description=cli.__doc__)
    cli.add_arguments(parser)
    return parser.parse_args(argv)


@pytest.fixture(autouse=True)
def no_launcher(monkeypatch):
    """The single-process demo, even if pytest itself runs under mpiexec."""
    from sparsegrad.demo.distributed import LAUNCHER_VARIABLES

    for name in LAUNCHER_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def demo(capsys):
    """``demo(*argv)`` runs the command; returns (exit status, stdout, stderr)."""

    def run(*argv):
        try:
            status = cli.run(parse(["--no-progress", *argv]))
        except SystemExit as exc:          # argparse rejected a value
            status = exc.code
        out, err = capsys.readouterr()
        return status, out, err

    return run


@pytest.fixture
def table():
    """``table(out)``: the rows of the final table, model -> (log-loss, AUC)."""
    return read_table


def read_table(out):
    lines = out.splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith("model "))
    rows = {}
    for line in lines[start + 2:]:
        if not line.strip():
            break
        cells = line.split("  ")
        cells = [c.strip() for c in cells if c.strip()]
        name = "constant" if cells[0].startswith("constant") else cells[0]
        rows[name] = (float(cells[1]), float(cells[2]))
    return rows
