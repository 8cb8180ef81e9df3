"""setup.py's kernel cache: a compiled module is reused only by a build with
the same sources and the same settings (issue 23)."""

import importlib.util
import os
import pathlib
import re
import sys
import types

import pytest

pytest.importorskip("setuptools")
SETUP_PY = pathlib.Path(__file__).resolve().parents[1] / "setup.py"
if not SETUP_PY.exists():
    pytest.skip("no setup.py next to the tests", allow_module_level=True)


@pytest.fixture(scope="module")
def setup_module():
    spec = importlib.util.spec_from_file_location("sparsegrad_setup", SETUP_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)       # not __main__: defines, builds nothing
    return module


def fake_compiler(**changes):
    compiler = types.SimpleNamespace(
        compiler_type="unix",
        compiler_so=["gcc", "-O2", "-fPIC"],
        linker_so=["gcc", "-shared"],
        macros=[],
        include_dirs=[],
        libraries=[],
        library_dirs=[],
    )
    for name, value in changes.items():
        setattr(compiler, name, value)
    return compiler


def extension(setup_module, name="training", openmp=("-fopenmp",), **kwargs):
    from setuptools import Extension

    ext = Extension(f"sparsegrad._kernels.{name}", [f"{name}.pyx"], **kwargs)
    ext.extra_compile_args = setup_module.compile_args(name, "unix", list(openmp))
    ext.extra_link_args = list(openmp)
    return ext


def test_the_key_changes_with_every_setting(setup_module, monkeypatch, tmp_path):
    pytest.importorskip("Cython")
    import Cython

    s = setup_module
    sources = [("sparsegrad/_kernels/training.pyx", "0" * 64)]

    def key(compiler=None, ext=None, version="gcc 13.2", name="training"):
        settings = s.build_settings(compiler or fake_compiler(),
                                    ext or extension(s), s.cython_directives(),
                                    version)
        return s.cache_key(f"sparsegrad._kernels.{name}", sources, settings)

    base = key()
    assert key() == base and len(base) == 32
    empty = tmp_path / "empty-include"
    empty.mkdir()
    # an include directory with nothing in it changes nothing (a venv's)
    assert key(fake_compiler(include_dirs=[str(empty)])) == base

    headers = tmp_path / "include"
    headers.mkdir()
    (headers / "x.h").write_text("#define X 1\n")
    variants = {
        "OpenMP off": key(ext=extension(s, openmp=())),
        "other flags (CFLAGS)": key(fake_compiler(
            compiler_so=["gcc", "-O2", "-fPIC", "-march=native"])),
        "other compiler": key(fake_compiler(compiler_so=["clang", "-O2", "-fPIC"])),
        "other compiler version": key(version="gcc 14.1"),
        "other linker flags": key(fake_compiler(linker_so=["gcc", "-shared", "-s"])),
        "a macro": key(fake_compiler(macros=[("NDEBUG", None)])),
        "an include directory": key(fake_compiler(include_dirs=[str(headers)])),
        "a library": key(ext=extension(s, libraries=["m"])),
        "another module": key(name="training_avx2"),
    }
    with monkeypatch.context() as m:
        m.setenv("SPARSEGRAD_CYTHON_DEBUG", "1")
        variants["Cython's checks on"] = key()
    with monkeypatch.context() as m:
        m.setattr(Cython, "__version__", "0.0.1")
        variants["other Cython"] = key()
    with monkeypatch.context() as m:
        m.setattr(s, "_installed_version",
                  lambda package: "0.0.1" if package == "numpy" else None)
        variants["other NumPy"] = key()
    with monkeypatch.context() as m:
        m.setattr(sys, "version", "3.99.0 (other build)")
        variants["other Python"] = key()
    with monkeypatch.context() as m:
        m.setattr(s.sysconfig, "get_config_var",
                  lambda name: ".cpython-399-x86_64-linux-gnu.so")
        variants["other ABI"] = key()
    assert base not in variants.values()
    assert len(set(variants.values())) == len(variants), variants
    # and a change of source
    settings = s.build_settings(fake_compiler(), extension(s),
                                s.cython_directives(), "gcc 13.2")
    assert s.cache_key("sparsegrad._kernels.training",
                       [(sources[0][0], "1" * 64)], settings) != base


def test_file_digests_follow_contents(setup_module, tmp_path):
    s = setup_module
    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    pyx = root / "pkg" / "k.pyx"
    pyx.write_text("def f(): pass\n")
    # Cython's own .pxd files sit in a new temporary directory at every
    # isolated build: only their name and contents count
    first, second = tmp_path / "env1" / "libc", tmp_path / "env2" / "libc"
    for where in (first, second):
        where.mkdir(parents=True)
        (where / "math.pxd").write_text("cdef extern double sqrt(double)\n")
    a = s.file_digests([pyx, first / "math.pxd"], root=str(root / "pkg"))
    assert [label for label, _ in a] == ["math.pxd", "pkg/k.pyx"]
    assert s.file_digests([pyx, second / "math.pxd"], root=str(root / "pkg")) == a
    # an edited source, whatever its timestamp, is another digest
    stat = os.stat(pyx)
    pyx.write_text("def f(): return 1\n")
    os.utime(pyx, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert s.file_digests([pyx, first / "math.pxd"], root=str(root / "pkg")) != a


def test_kernel_sources_are_every_file_a_module_reads(setup_module):
    pytest.importorskip("Cython")
    from setuptools import Extension

    s = setup_module
    kernels = SETUP_PY.parent / "sparsegrad" / "_kernels"
    ext = Extension("sparsegrad._kernels.clip", [str(kernels / "clip.pyx")])
    labels = [label for label, _ in s.file_digests(s.kernel_sources(ext))]
    for name in ("clip.pyx", "_openmp.pxd", "_prefetch.pxd"):
        assert f"sparsegrad/_kernels/{name}" in labels
    assert "stdint.pxd" in labels           # Cython's libc/stdint.pxd, by name


def test_prune_keeps_the_most_recently_used(setup_module, tmp_path):
    s = setup_module
    module = "sparsegrad._kernels.training"
    for age, key in enumerate("abcde"):
        path = tmp_path / f"{module}-{key}.so"
        path.write_bytes(b"x")
        os.utime(path, (1_000_000 - age, 1_000_000 - age))
    other = tmp_path / "sparsegrad._kernels.training_avx2-z.so"
    other.write_bytes(b"x")
    os.utime(other, (1, 1))
    s.prune_cache(module, keep=3, cache=str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"{module}-a.so", f"{module}-b.so", f"{module}-c.so", other.name]


def test_every_module_of_a_shared_kernel_body_keeps_contraction_off(setup_module):
    # NVRTC compiles the shared headers with --fmad=false; the C compiler
    # must not contract them either, in every module that includes one
    kernels = SETUP_PY.parent / "sparsegrad" / "_kernels"

    def text(path):
        # a source with the .pxi files it includes (a template for a rendered
        # one), at any depth
        body = path.read_text(encoding="utf-8")
        for name in re.findall(r'^include "([^"]+)"', body, flags=re.M):
            included = kernels / name
            if not included.exists():
                included = kernels / (name + ".tp")
            body += text(included)
        return body

    includers = {source.stem for source in kernels.glob("*.pyx")
                 if 'cdef extern from "sg_' in text(source)}
    assert {"training", "training_avx2", "clip"} <= includers
    for name in includers:
        assert "-ffp-contract=off" in setup_module.compile_args(name, "unix", []), name
