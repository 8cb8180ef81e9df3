"""``sparsegrad demo --device gpu``: both models train on the device and reach
the CPU run's numbers (cuBLAS, cuSPARSE and libdevice differ from the CPU in
the last bits, so the metrics agree to a tolerance, not bit for bit)."""

import argparse

import numpy as np
from sklearn.datasets import dump_svmlight_file

from sparsegrad.demo import cli


def _svmlight(path, n=600, n_features=120):
    rng = np.random.default_rng(5)
    cols = rng.integers(0, n_features, size=(n, 4))
    X = np.zeros((n, n_features), np.float32)
    np.put_along_axis(X, cols, 1.0, axis=1)
    logit = X @ rng.standard_normal(n_features) - 0.5
    y = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), 1, -1)
    dump_svmlight_file(X, y, str(path))


def _demo(capsys, *argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    status = cli.run(parser.parse_args(["--no-progress", *argv]))
    out, err = capsys.readouterr()
    assert status == 0, err
    rows = {}
    for line in out.splitlines():
        for model in ("FTRL logistic regression", "embedding + MLP"):
            if line.startswith(model):
                rows[model] = [float(x) for x in line[len(model):].split()[:2]]
    return rows, out


def test_demo_on_the_device_matches_the_cpu(device, capsys, tmp_path):
    path = tmp_path / "train.svm"
    _svmlight(path)
    argv = ("--data", str(path), "--buckets", "4096", "--epochs", "2",
            "--batch-size", "100")
    cpu, _ = _demo(capsys, *argv)
    gpu, out = _demo(capsys, *argv, "--device", "gpu")
    assert "on the GPU" in out
    assert set(gpu) == set(cpu) == {"FTRL logistic regression", "embedding + MLP"}
    for model in cpu:
        np.testing.assert_allclose(gpu[model], cpu[model], atol=2e-4)
