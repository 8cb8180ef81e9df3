"""Build the Cython kernels of sparsegrad.

Every ``sparsegrad/_kernels/*.pyx`` becomes one extension module; a module's
AVX2 build is a second ``.pyx`` (``<name>_avx2.pyx``) that includes the same
``.pxi`` source.  Templates (``*.tp``, Tempita) are rendered to the file named
without ``.tp``.  Importing this file only declares the extensions; the
``build_ext`` command renders the templates, runs Cython and compiles the
modules side by side.  OpenMP is used when a tiny test program
compiles and links with it; otherwise the kernels are built serial and a
warning says so.  :func:`compile_args` holds every compiler flag of every module.

Environment variables
---------------------
SPARSEGRAD_CYTHON_DEBUG=1
    Turn Cython's bounds, wraparound and initialisation checks back on (the C
    files are generated again whenever this setting changes).
SPARSEGRAD_DISABLE_OPENMP=1
    Build without OpenMP even where the compiler supports it.
SPARSEGRAD_BUILD_ONLY=name1,name2
    Developer aid: compile only these kernel modules and their AVX2 builds
    (``name_avx2``); the others are skipped.
"""

import glob
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import textwrap
import warnings

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL_DIR = os.path.join("sparsegrad", "_kernels")

# Modules whose floating-point code must round every operation on its own:
# -ffp-contract=off forbids FMA contraction (GCC would contract on targets
# with FMA); -fno-math-errno (sqrt need not set errno) and -fno-trapping-math
# (a select may compute both of its values) change no result and let loops
# vectorise.  The AVX2 build of a module (``<name>_avx2``) gets its flags.
STRICT_FP_MODULES = ("training", "elementwise", "segment")
STRICT_FP_FLAGS = ["-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math"]


def _env_flag(name):
    return os.environ.get(name, "0").strip().lower() not in ("", "0", "false", "no")


def _is_x86():
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")


def compile_args(name, compiler_type, openmp_args):
    """Every compiler flag of kernel module `name`, in the order given to the
    compiler (after Python's own flags).

    Parameters
    ----------
    name : str
        Module name under ``sparsegrad._kernels``, e.g. ``"training_avx2"``.
    compiler_type : str
        ``distutils`` compiler type (``"unix"``, ``"msvc"``, ...).
    openmp_args : list of str
        The flags that enable OpenMP, or ``[]`` for a serial build.

    Returns
    -------
    list of str
        -O3, OpenMP, the strict floating-point flags of the modules that need
        them, and -mavx2 for the AVX2 builds (``*_avx2``) on x86.
    """
    msvc = compiler_type == "msvc"
    base = name[: -len("_avx2")] if name.endswith("_avx2") else name
    args = [] if msvc else ["-O3"]
    args += openmp_args
    if base in STRICT_FP_MODULES and not msvc:
        args += STRICT_FP_FLAGS
    if name.endswith("_avx2") and _is_x86():
        args += ["/arch:AVX2"] if msvc else ["-mavx2"]
    return args


OPENMP_TEST_PROGRAM = textwrap.dedent(
    """
    #include <omp.h>
    #include <stdio.h>
    int main(void) {
        int n = 0;
        #pragma omp parallel reduction(+:n)
        n += 1;
        printf("%d", n > 0);
        return 0;
    }
    """
)


def _openmp_flags(compiler):
    """Return (compile_args, link_args) enabling OpenMP for this compiler."""
    if sys.platform == "win32" and compiler.compiler_type == "msvc":
        return ["/openmp"], []
    if sys.platform == "darwin":
        return ["-Xpreprocessor", "-fopenmp"], ["-lomp"]
    return ["-fopenmp"], ["-fopenmp"]


def check_openmp_support(compiler):
    """Compile, link and run a tiny OpenMP program; True when it all works."""
    cflags, ldflags = _openmp_flags(compiler)
    tmpdir = tempfile.mkdtemp()
    cwd = os.getcwd()
    try:
        os.chdir(tmpdir)
        with open("test_openmp.c", "w") as f:
            f.write(OPENMP_TEST_PROGRAM)
        objects = compiler.compile(["test_openmp.c"], extra_postargs=cflags)
        compiler.link_executable(objects, "test_openmp", extra_postargs=ldflags)
        out = subprocess.check_output([os.path.join(tmpdir, "test_openmp")])
        return out.decode().strip() == "1"
    except Exception:  # compile, link or run failed: no usable OpenMP
        return False
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmpdir, ignore_errors=True)


def render_templates():
    """Render each ``X.tp`` of the kernels to ``X`` when the template is newer
    (``_training.pxi.tp`` to ``_training.pxi``)."""
    from Cython import Tempita

    for template in sorted(glob.glob(os.path.join(KERNEL_DIR, "*.tp"))):
        outfile = template[: -len(".tp")]
        if os.path.exists(outfile) and (
            os.path.getmtime(template) <= os.path.getmtime(outfile)
        ):
            continue
        with open(template, encoding="utf-8") as f:
            rendered = Tempita.sub(f.read())
        banner = (
            f"# WARNING: do not edit this file: it is generated from "
            f"{os.path.basename(template)} by setup.py.\n"
        )
        with open(outfile, "w", encoding="utf-8") as f:
            f.write(banner + rendered)


def cythonize_kernels(extensions, force, jobs):
    """Run Cython on the extensions' ``.pyx`` sources, `jobs` at a time; the
    extensions with C sources.

    A module is generated again when its sources changed, when `force`, or
    when the directives (SPARSEGRAD_CYTHON_DEBUG) differ from those its C file
    was generated with, which a stamp per module in ``build/`` records.
    """
    from Cython.Build import cythonize

    debug = _env_flag("SPARSEGRAD_CYTHON_DEBUG")
    directives = {
        "language_level": 3,
        "boundscheck": debug,
        "wraparound": debug,
        "initializedcheck": debug,
        "cdivision": not debug,
        "embedsignature": True,
    }
    wanted = repr(sorted(directives.items()))
    stamps = []
    for ext in extensions:
        stamp = os.path.join(HERE, "build", "cython-directives", ext.name + ".txt")
        previous = None
        if os.path.exists(stamp):
            with open(stamp) as f:
                previous = f.read()
        c_file = os.path.splitext(ext.sources[0])[0] + ".c"
        if previous != wanted and os.path.exists(c_file):
            os.remove(c_file)  # generated with other directives
        stamps.append(stamp)
    extensions = cythonize(
        extensions, compiler_directives=directives, nthreads=jobs, force=force
    )
    for stamp in stamps:
        os.makedirs(os.path.dirname(stamp), exist_ok=True)
        with open(stamp, "w") as f:
            f.write(wanted)
    return extensions


class BuildExt(build_ext):
    """Render, cythonize, probe for OpenMP once, set each module's flags and
    compile the modules side by side."""

    def build_extensions(self):
        jobs = self.parallel if isinstance(self.parallel, int) else 0
        jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
        render_templates()
        c_sources = {
            ext.name: ext.sources
            for ext in cythonize_kernels(self.extensions, self.force, jobs)
        }
        for ext in self.extensions:
            ext.sources = c_sources[ext.name]
        # Largest C file first: the others compile beside it.
        self.extensions.sort(key=lambda ext: -os.path.getsize(ext.sources[0]))

        use_openmp = not _env_flag("SPARSEGRAD_DISABLE_OPENMP") and (
            check_openmp_support(self.compiler)
        )
        if use_openmp:
            cflags, ldflags = _openmp_flags(self.compiler)
        else:
            cflags, ldflags = [], []
            warnings.warn(
                "\n" + "*" * 72 + "\nsparsegrad: the compiler does not support "
                "OpenMP (or SPARSEGRAD_DISABLE_OPENMP is set).\nThe kernels are "
                "built single-threaded; results are identical, only slower.\n"
                + "*" * 72,
                stacklevel=1,
            )
        for ext in self.extensions:
            name = ext.name.rsplit(".", 1)[-1]
            ext.extra_compile_args = compile_args(
                name, self.compiler.compiler_type, cflags
            )
            ext.extra_link_args = list(ldflags)
        self.parallel = jobs
        super().build_extensions()


def kernel_extensions():
    """One Extension per kernel module (``*.pyx``), as SPARSEGRAD_BUILD_ONLY
    selects; nothing is generated here."""
    sources = glob.glob(os.path.join(KERNEL_DIR, "*.pyx"))
    only = os.environ.get("SPARSEGRAD_BUILD_ONLY", "").strip()
    wanted = {name.strip() for name in only.split(",") if name.strip()}
    wanted |= {f"{name}_avx2" for name in wanted}
    extensions = []
    for source in sorted(sources):
        name = os.path.splitext(os.path.basename(source))[0]
        if wanted and name not in wanted:
            continue
        extensions.append(
            Extension(
                f"sparsegrad._kernels.{name}",
                [source],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
            )
        )
    return extensions


setup(ext_modules=kernel_extensions(), cmdclass={"build_ext": BuildExt})
