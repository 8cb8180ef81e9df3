"""Build the Cython kernels of sparsegrad.

Every ``sparsegrad/_kernels/*.pyx`` becomes one extension module; a module's
AVX2 build is a second ``.pyx`` (``<name>_avx2.pyx``) that includes the same
``.pxi`` source.  Templates (``*.tp``, Tempita) are rendered to the file named
without ``.tp``.  Run as a script (pip's build backend runs it as
``__main__``) it declares the extensions, and the ``build_ext`` command
renders the templates, runs Cython and compiles the modules side by side;
imported, it defines its functions and does nothing.  OpenMP is used when a
tiny test program compiles and links with it; otherwise the kernels are built
serial and a warning says so.  :func:`compile_args` holds every compiler flag
of every module.

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

The kernel cache
----------------
Every compiled module is also kept in ``build/kernel-cache/``, named by a hash
of everything that goes into it (:func:`cache_key`): the contents of its
``.pyx`` and of every file it includes or cimports, the Cython version and
directives, the compiler, its version and every flag (OpenMP on or off
included), Python's version and ABI, the NumPy version and this file.  A
build whose hash is there copies the module instead of running Cython and the
compiler, so a second ``pip install .`` of an unchanged tree takes seconds;
any change of source or setting is a new hash and compiles afresh.  (Without
it, pip's isolated build environment, new at every install, holds Cython's
own ``.pxd`` files with new timestamps, and Cython's timestamp check
regenerates, and so recompiles, every module.)  The three most recently used
builds of each module are kept; ``rm -rf build/kernel-cache`` empties it.
"""

import glob
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import warnings
from importlib import metadata

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
KERNEL_DIR = os.path.join("sparsegrad", "_kernels")
# The shared kernel sources (C headers compiled for the CPU here and for the
# GPU by sparsegrad._cuda): on every module's include path.
INCLUDE_DIR = os.path.join(KERNEL_DIR, "include")
PACKAGE_DIR = os.path.join(HERE, "sparsegrad")
KERNEL_CACHE = os.path.join(HERE, "build", "kernel-cache")
KERNEL_CACHE_KEEP = 3  # builds kept per module

# Modules whose floating-point code must round every operation on its own
# (every module that compiles a shared kernel body of include/, as NVRTC
# compiles it with --fmad=false, and elementwise):
# -ffp-contract=off forbids FMA contraction (GCC would contract on targets
# with FMA); -fno-math-errno (sqrt need not set errno) and -fno-trapping-math
# (a select may compute both of its values) change no result and let loops
# vectorise.  The AVX2 build of a module (``<name>_avx2``) gets its flags.
STRICT_FP_MODULES = ("training", "training_half", "elementwise", "segment", "clip",
                     "ragged", "slices")
STRICT_FP_FLAGS = ["-ffp-contract=off", "-fno-math-errno", "-fno-trapping-math"]
# Modules whose baseline build (not ``_avx2``) compiles at -O2.
BASELINE_O2_MODULES = ("training", "training_half")


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
        -O3 (-O2 for the baseline builds of BASELINE_O2_MODULES) and -g0,
        OpenMP, the strict floating-point flags of the modules that need
        them, and -mavx2 -mf16c for the AVX2 builds (``*_avx2``) on x86.
    """
    msvc = compiler_type == "msvc"
    base = name[: -len("_avx2")] if name.endswith("_avx2") else name
    # -g0: no debug information, which Python's own flags (-g) ask for and
    # which took a third of the compile time of the large modules.  The
    # training kernels' baseline builds, which only CPUs without AVX2 run,
    # take -O2 (a quarter less compile time; the same bits, since the
    # floating-point flags fix every rounding).
    opt = "-O2" if base in BASELINE_O2_MODULES and base == name else "-O3"
    args = [] if msvc else [opt, "-g0"]
    args += openmp_args
    if base in STRICT_FP_MODULES and not msvc:
        args += STRICT_FP_FLAGS
    if name.endswith("_avx2") and _is_x86():
        # F16C (half <-> float conversions) came with AVX2 on every CPU; the
        # half kernels use its instructions, the others no half values.
        args += ["/arch:AVX2"] if msvc else ["-mavx2", "-mf16c"]
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


def template_table(template):
    """The table module a template ``_<family>.pxi.tp`` is rendered from,
    ``<family>_table.py`` beside it, or None.  A family's half-precision
    kernels (``_<family>_half.pxi.tp``) share its table."""
    family = os.path.basename(template).split(".")[0].lstrip("_")
    for suffix in ("_half", "_mixed"):
        if family.endswith(suffix):
            family = family[: -len(suffix)]
    path = os.path.join(os.path.dirname(template), f"{family}_table.py")
    return path if os.path.exists(path) else None


def render_template(template):
    """The text of template `template` rendered with Tempita, the names of
    its table (``template_table``) as its namespace (also what .ci/lint
    lints)."""
    import runpy

    from Cython import Tempita

    table = template_table(template)
    namespace = {}
    if table:
        namespace = {k: v for k, v in runpy.run_path(table).items()
                     if not k.startswith("__")}
    with open(template, encoding="utf-8") as f:
        return Tempita.sub(f.read(), **namespace)


def render_templates():
    """Render each ``X.tp`` of the kernels to ``X`` when the template or its
    table is newer (``_training.pxi.tp`` and ``training_table.py`` to
    ``_training.pxi``)."""
    for template in sorted(glob.glob(os.path.join(KERNEL_DIR, "*.tp"))):
        outfile = template[: -len(".tp")]
        table = template_table(template)
        inputs = [template] + ([table] if table else [])
        if os.path.exists(outfile) and (
            max(os.path.getmtime(p) for p in inputs) <= os.path.getmtime(outfile)
        ):
            continue
        rendered = render_template(template)
        banner = (
            f"# WARNING: do not edit this file: it is generated from "
            f"{os.path.basename(template)} by setup.py.\n"
        )
        with open(outfile, "w", encoding="utf-8") as f:
            f.write(banner + rendered)


def cython_directives():
    """Cython's directives for the kernels (checks on with
    SPARSEGRAD_CYTHON_DEBUG)."""
    debug = _env_flag("SPARSEGRAD_CYTHON_DEBUG")
    return {
        "language_level": 3,
        "boundscheck": debug,
        "wraparound": debug,
        "initializedcheck": debug,
        "cdivision": not debug,
        "embedsignature": True,
    }


def cythonize_kernels(extensions, force, jobs, directives):
    """Run Cython with `directives` on the extensions' ``.pyx`` sources, `jobs`
    at a time; the extensions with C sources.

    A module is generated again when its sources changed, when `force`, or
    when the directives differ from those its C file was generated with,
    which a stamp per module in ``build/`` records.
    """
    from Cython.Build import cythonize

    wanted = repr(sorted(directives.items()))
    stamps = []
    for ext in extensions:
        stamp = os.path.join(HERE, "build", "cython-directives", ext.name + ".txt")
        previous = None
        if os.path.exists(stamp):
            with open(stamp) as f:
                previous = f.read()
        for c_file in (os.path.splitext(ext.sources[0])[0] + x for x in (".c", ".cpp")):
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


def file_digests(paths, root=PACKAGE_DIR):
    """``(label, sha256 of the contents)`` of each file, sorted.

    The label of a file under the package directory `root` is its path from
    the directory that holds `root`; any other file (Cython's own ``.pxd``
    files, in a new temporary environment at every isolated build or in a
    virtual environment inside the tree) is labelled by its name alone, so
    that only its contents count.
    """
    digests = []
    for path in paths:
        full = os.path.abspath(path)
        if os.path.commonpath([full, root]) == root:
            label = os.path.relpath(full, os.path.dirname(root))
            label = label.replace(os.sep, "/")
        else:
            label = os.path.basename(full)
        with open(full, "rb") as f:
            digests.append((label, hashlib.sha256(f.read()).hexdigest()))
    return sorted(digests)


def kernel_sources(ext):
    """The files compiled into `ext`: its ``.pyx``, every file Cython finds
    it includes or cimports, at any depth, and every shared header (which
    include one another behind Cython's back)."""
    from Cython.Build.Dependencies import create_dependency_tree

    found = set(create_dependency_tree().all_dependencies(ext.sources[0]))
    found.update(glob.glob(os.path.join(HERE, INCLUDE_DIR, "*.h")))
    return sorted(os.path.abspath(p) for p in found)


def compiler_version(command):
    """What ``command --version`` prints, or "" where it does not run."""
    try:
        proc = subprocess.run([command, "--version"], capture_output=True,
                              text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (proc.stdout or proc.stderr).strip()


def _installed_version(package):
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _holds_files(directory):
    try:
        return any(True for _ in os.scandir(directory))
    except OSError:
        return False


def build_settings(compiler, ext, directives, version=None):
    """Everything besides the sources that goes into the compiled module
    `ext`, as a dict for :func:`cache_key`.

    `compiler` is the configured distutils compiler (``CC``, ``CFLAGS``,
    ``LDFLAGS`` are in its commands), `ext` has its final flags, `version` is
    :func:`compiler_version` of the compiler (looked up when None).  An
    include directory with nothing in it (a virtual environment's) is left
    out: it changes nothing.
    """
    import Cython

    command = list(getattr(compiler, "compiler_so", None) or [])
    if version is None:
        version = compiler_version(command[0]) if command else ""
    dirs = [d for d in compiler.include_dirs + ext.include_dirs if _holds_files(d)]
    return {
        "compiler_type": compiler.compiler_type,
        "compiler": command,
        "compiler_version": version,
        "linker": list(getattr(compiler, "linker_so", None) or []),
        "macros": [list(m) for m in compiler.macros + ext.define_macros],
        "include_dirs": dirs,
        "libraries": compiler.libraries + ext.libraries,
        "library_dirs": compiler.library_dirs + ext.library_dirs,
        "compile_args": list(ext.extra_compile_args),
        "link_args": list(ext.extra_link_args),
        "cython": Cython.__version__,
        "directives": sorted([k, v] for k, v in directives.items()),
        "python": [sys.version, sys.implementation.cache_tag,
                   sysconfig.get_config_var("EXT_SUFFIX"), sysconfig.get_platform()],
        "numpy": _installed_version("numpy"),
        "setup.py": file_digests([os.path.join(HERE, "setup.py")]),
    }


def cache_key(module, sources, settings):
    """The name of a compiled module in the kernel cache: a hash of the module
    name, its sources (:func:`file_digests`) and its settings
    (:func:`build_settings`, or any JSON-serialisable dict)."""
    blob = json.dumps([module, sorted(map(list, sources)), settings],
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:32]


def _copy(source, target):
    """Copy `source` to `target` through a temporary file, so that no reader
    sees half of it."""
    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
    partial = f"{target}.{os.getpid()}.part"
    shutil.copyfile(source, partial)
    shutil.copymode(source, partial)
    os.replace(partial, target)


def prune_cache(module, keep=KERNEL_CACHE_KEEP, cache=KERNEL_CACHE):
    """Delete all but the `keep` most recently used builds of `module`."""
    builds = glob.glob(os.path.join(cache, glob.escape(module) + "-*"))
    builds.sort(key=os.path.getmtime, reverse=True)
    for path in builds[keep:]:
        os.remove(path)


class BuildExt(build_ext):
    """Render, probe for OpenMP once, set each module's flags, take the
    modules the kernel cache holds from it, cythonize the others and compile
    them side by side."""

    def build_extensions(self):
        jobs = self.parallel if isinstance(self.parallel, int) else 0
        jobs = jobs if jobs > 0 else (os.cpu_count() or 1)
        render_templates()
        directives = cython_directives()
        self._set_flags()

        version = compiler_version((getattr(self.compiler, "compiler_so", None)
                                    or [""])[0])
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        self._cached = {}
        missing = []
        for ext in self.extensions:
            key = cache_key(ext.name, file_digests(kernel_sources(ext)),
                            build_settings(self.compiler, ext, directives, version))
            path = os.path.join(KERNEL_CACHE, f"{ext.name}-{key}{suffix}")
            self._cached[ext.name] = path
            if not os.path.exists(path):
                missing.append(ext)
        if missing:
            c_sources = {
                ext.name: ext.sources
                for ext in cythonize_kernels(missing, self.force, jobs, directives)
            }
            for ext in missing:
                ext.sources = c_sources[ext.name]
        # Largest C file first: the others compile beside it.
        self.extensions.sort(key=lambda ext: -os.path.getsize(ext.sources[0]))
        # A module the cache lacks is compiled even where its output looks
        # newer than its C file: that output may have other settings.
        self.force = True
        self.parallel = jobs
        super().build_extensions()

    def build_extension(self, ext):
        cached = self._cached[ext.name]
        target = self.get_ext_fullpath(ext.name)
        if os.path.exists(cached):
            _copy(cached, target)
            os.utime(cached)  # most recently used
            print(f"sparsegrad: {ext.name} taken from the kernel cache "
                  f"({os.path.relpath(cached, HERE)})", flush=True)
            return
        super().build_extension(ext)
        _copy(target, cached)
        prune_cache(ext.name)

    def _set_flags(self):
        """Probe for OpenMP and set every module's compile and link flags."""
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
                include_dirs=[INCLUDE_DIR],
            )
        )
    return extensions


if __name__ == "__main__":  # pip's build backend runs this file as __main__
    setup(ext_modules=kernel_extensions(), cmdclass={"build_ext": BuildExt})
