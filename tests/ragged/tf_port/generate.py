"""Evaluate the ported cases under TensorFlow and store the outcomes (run
once, by hand, where TensorFlow 2.21 is installed)::

    python tests/ragged/tf_port/generate.py            # every cases_*.py
    python tests/ragged/tf_port/generate.py reduce     # cases_reduce.py only

writes ``tests/ragged/tf_port/data/tf_port_<area>.npz``: for case ``c``, the
arrays of its outcome (``replay.encode``) under keys ``c__<field>``, and
``__cases__``, the case names in order.
"""

import glob
import importlib.util
import os
import sys

import numpy as np
import tensorflow as tf

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name):
    """The module ``tests/ragged/tf_port/<name>.py``."""
    spec = importlib.util.spec_from_file_location(
        f"tf_port_{name}", os.path.join(HERE, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(areas):
    replay = load("replay")
    os.makedirs(os.path.join(HERE, "data"), exist_ok=True)
    for area in areas:
        cases = load(f"cases_{area}").CASES
        names = [name for name, _ in cases]
        assert len(set(names)) == len(names), f"{area}: repeated case names"
        arrays = {"__cases__": np.array(names)}
        for name, code in cases:
            for field, value in replay.run(code, tf).items():
                if isinstance(value, np.ndarray):
                    arrays[f"{name}__{field}"] = value
        path = os.path.join(HERE, "data", f"tf_port_{area}.npz")
        np.savez_compressed(path, **arrays)
        print(f"{path}: {len(cases)} cases")


if __name__ == "__main__":
    found = sorted(os.path.basename(p)[len("cases_"):-3]
                   for p in glob.glob(os.path.join(HERE, "cases_*.py")))
    main(sys.argv[1:] or found)
