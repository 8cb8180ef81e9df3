import io
import subprocess
import sys

import sparsegrad as sg
from sparsegrad.__main__ import info, main


def test_info_reports_build():
    buffer = io.StringIO()
    info(out=buffer)
    text = buffer.getvalue()
    assert f"sparsegrad {sg.__version__}" in text
    assert ("openmp     yes" in text) == sg.openmp_enabled()
    assert f"threads    {sg.get_num_threads()}" in text
    assert "slices" in text and "parallel" in text
    assert "gpu        " in text
    assert "mpi        " in text


def test_module_entry_point(tmp_path):
    # From outside the source tree, where `python -m` finds the installed package.
    out = subprocess.run([sys.executable, "-m", "sparsegrad", "info"],
                         capture_output=True, text=True, check=True, cwd=tmp_path)
    assert out.stdout.startswith("sparsegrad ")
    bad = subprocess.run([sys.executable, "-m", "sparsegrad", "nope"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode == 2


def test_main_returns_zero(capsys):
    assert main(["info"]) == 0
    assert "kernels" in capsys.readouterr().out
