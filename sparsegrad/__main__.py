"""Command line: ``sparsegrad info | demo | bench`` (or ``python -m sparsegrad ...``).

``demo`` and ``bench`` live in :mod:`sparsegrad.demo.cli` and
:mod:`sparsegrad.bench.cli`; each of those modules has ``add_arguments(parser)``
and ``run(args) -> int`` (the exit status), and imports its heavy dependencies
only inside ``run``.
"""

import argparse
import platform
import sys


def _kernels_built():
    import importlib
    import pkgutil

    from . import _kernels

    names = []
    for module in pkgutil.iter_modules(_kernels.__path__):
        if module.name.startswith("_"):
            continue
        try:
            importlib.import_module(f"{_kernels.__name__}.{module.name}")
        except ImportError as exc:
            names.append(f"{module.name} (failed to load: {exc})")
        else:
            names.append(module.name)
    return names


def _openmp_line():
    import os

    import sparsegrad
    from sparsegrad import _kernels

    if not sparsegrad.openmp_enabled():
        return "no (serial kernels)"
    whose = "sparsegrad's default" if _kernels.OMP_WAIT_POLICY_DEFAULTED else "yours"
    return f"yes, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')} ({whose})"


def _blas_line():
    import os

    from sparsegrad.framework import threads

    if threads.BLAS_SHARING_POOL:
        names = ", ".join(os.path.basename(p) for p in threads.BLAS_SHARING_POOL)
        return f"OpenBLAS runs its threaded calls on sparsegrad's pool ({names})"
    return "BLAS keeps its own threads (SPARSEGRAD_SHARE_BLAS_THREADS=0, or no " \
        "OpenBLAS with a threads callback loaded)"


def _cuda_sources():
    from . import _cuda

    return _cuda.families()


def info(out=None):
    """Print the version, OpenMP, threads, kernels, GPU and MPI status."""
    out = sys.stdout if out is None else out
    import numpy
    import scipy

    import sparsegrad
    from sparsegrad._kernels import parallel
    from sparsegrad.distributed import comm
    from sparsegrad.framework.backend import cupy_status

    usable, gpu = cupy_status()
    has_mpi, mpi = comm.status()
    lines = [
        f"sparsegrad {sparsegrad.__version__}",
        f"python     {platform.python_version()} ({platform.machine()})",
        f"numpy      {numpy.__version__}",
        f"scipy      {scipy.__version__}",
        f"openmp     {_openmp_line()}",
        f"threads    {sparsegrad.get_num_threads()} "
        f"(processors seen by OpenMP: {parallel.num_procs()})",
        f"kernels    {', '.join(_kernels_built())}",
        f"blas       {_blas_line()}",
        f"cuda       {', '.join(_cuda_sources())} (.cu, compiled by CuPy on first use)",
        f"gpu        {'yes' if usable else 'no'}: {gpu}",
        f"mpi        {'yes' if has_mpi else 'no'}: {mpi}",
    ]
    print("\n".join(lines), file=out)


def main(argv=None):
    from .bench import cli as bench_cli
    from .demo import cli as demo_cli

    parser = argparse.ArgumentParser(prog="sparsegrad")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="show the build and runtime configuration")
    demo = commands.add_parser(
        "demo", help=demo_cli.HELP, description=demo_cli.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    demo_cli.add_arguments(demo)
    bench = commands.add_parser(
        "bench", help=bench_cli.HELP, description=bench_cli.__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    bench_cli.add_arguments(bench)
    args = parser.parse_args(argv)
    if args.command == "info":
        info()
        return 0
    if args.command == "demo":
        return demo_cli.run(args)
    return bench_cli.run(args)


if __name__ == "__main__":
    sys.exit(main())
