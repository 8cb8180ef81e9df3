"""Write ``cupy_api.json``: the public names of the installed CuPy (module,
``ndarray``, ufunc methods, flags, ``linalg``, ``random``), which the
emulator's stand-in allows and nothing else.  Needs CuPy, not a GPU:

    pip install cupy-cuda13x && python tests/gpu/emulator/dump_cupy_api.py
"""

import json
import os

import cupy
from cupy._core import flags


def public(obj):
    return sorted(n for n in dir(obj) if not n.startswith("_"))


api = dict(
    version=cupy.__version__,
    module=public(cupy),
    ndarray=public(cupy.ndarray),
    ufunc=public(cupy.add),
    flags=public(flags.Flags),
    linalg=public(cupy.linalg),
    random=public(cupy.random),
)
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cupy_api.json")
with open(path, "w") as f:
    json.dump(api, f, indent=0)
    f.write("\n")
