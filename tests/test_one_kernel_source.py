"""Each kernel body is written once: in a shared header of
``sparsegrad/_kernels/include``, compiled for the CPU (the Cython kernels) and
for the GPU (the CUDA kernels).

The checker reduces every formula of the headers (the value an assignment or
a ``return`` computes) to its *shape*: casts, subscripts and member accesses
dropped, the elementary functions named alike in C, CUDA and Cython (``sqrtf``,
``_sqrt``, ``sg_sqrt`` are all ``SQRT``), every other name and every number
erased.  A statement of a driver (a ``.cu``/``.cuh`` file, a ``.pyx``/``.pxi``
or its template) whose value has the shape of a header formula writes that
formula a second time, under whatever names, and fails the test.  Shapes too
small to tell a formula from addressing (a running sum ``acc + x``, an index
``i * R + j``, ``v - g * alpha``) are not compared: a formula counts when it
calls an elementary function within a larger expression, or has three
operators, or two and a quotient; one elementary call on plain values
(``sg_max(a, b)``, ``sqrtf(x)``) is sg_base.h's function itself, not a formula.
"""

import glob
import os
import re

import pytest

from sparsegrad import _cuda

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = os.path.join(ROOT, "sparsegrad", "_kernels", "include")
KERNELS = os.path.join(ROOT, "sparsegrad", "_kernels")
CUDA = os.path.join(ROOT, "sparsegrad", "_cuda")

FUNCTIONS = {
    "SQRT": r"sg_sqrt|_sqrt|sqrtf|sqrt",
    "RSQRT": r"sg_rsqrt|_rsqrt|rsqrtf|rsqrt",
    "ABS": r"sg_abs|_abs|fabsf|fabs|abs",
    "POW": r"sg_pow|_pow|tr_pow|powf|pow",
    "EXP": r"sg_exp|_exp|tr_exp|expf|exp",
    "LOG": r"sg_log|_log|logf|log",
    "SIGN": r"sg_sign|_sign",
    "MAX": r"sg_max|_max_d|_max|fmax|max",
    "MIN": r"sg_min|_min|fmin|min",
    "CLAMP": r"sg_clamp|_clamp",
}
_FUNCTION = re.compile(r"\b(?:" + "|".join(
    f"(?P<{token}>{names})" for token, names in FUNCTIONS.items()) + r")\b(?=\s*\()")
_TYPES = (r"(?:const\s+)?(?:SG_M|SG_S|T|double|float|floating|int|bint|long long|"
          r"unsigned(?: int| long long)?|sg_i64|i64|int64_t|int32_t|Py_ssize_t|"
          r"size_t)\s*\**")
_C_CAST = re.compile(r"\(\s*" + _TYPES + r"\s*\)(?=\s*[\w(.])")
_CY_CAST = re.compile(r"<\s*" + _TYPES + r"\s*>")
_SUBSCRIPT = re.compile(r"\[[^\[\]]*\]")
_MEMBER = re.compile(r"\b[A-Za-z_]\w*\s*(?:->|\.)\s*[A-Za-z_]\w*\b")
_NUMBER = re.compile(r"(?<![\w.])(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFL]?\b")
_NAME = re.compile(r"\b(?!(?:" + "|".join(FUNCTIONS) + r")\b)[A-Za-z_]\w*\b")


def shape(expression):
    """The shape of a value expression (see the module docstring)."""
    text = expression
    text = _CY_CAST.sub("", text)
    text = _C_CAST.sub("", text)
    while _SUBSCRIPT.search(text):
        text = _SUBSCRIPT.sub("", text)
    text = re.sub(r"SG_F\(\s*(\w+)\s*\)", r"\1", text)
    text = re.sub(r"\b(\w+?)_(?:f32|f64|i32|i64)\b(?=\s*\()", r"\1", text)
    text = _FUNCTION.sub(lambda m: m.lastgroup, text)
    text = _MEMBER.sub("x", text)
    text = _NUMBER.sub("#", text)
    text = _NAME.sub("x", text)
    text = re.sub(r"\s+", "", text)
    while text.startswith("(") and _closing(text, 0) == len(text) - 1:
        text = text[1:-1]
    return text


def _closing(text, i):
    depth = 0
    for k in range(i, len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return k
    return -1


def significant(form):
    """Whether a shape is large enough to count (module docstring)."""
    ops = len(re.findall(r"(?<=[\w)#])\s*[-+*/]", form))
    if re.fullmatch(r"[A-Z]+\(x(?:,x)*\)", form):
        return False        # one elementary function of plain values: sg_base's
    return (any(token in form for token in FUNCTIONS) or ops >= 3
            or (ops >= 2 and "/" in form))


def _strip_comments(text, cython):
    if cython:
        text = re.sub(r'"""[\s\S]*?"""', "", text)
        return re.sub(r"#[^\n]*", "", text)
    text = re.sub(r"/\*[\s\S]*?\*/", "", text)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r"^\s*#[^\n]*", "", text, flags=re.M)


def _top_level_split(text, sep):
    parts, depth, start = [], 0, 0
    for k, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return parts


_ASSIGN = re.compile(r"(?<![=!<>+\-*/])=(?!=)")


def values(statement):
    """The value expressions of one statement: the right of each top-level
    assignment (declarations of several names included) and of ``return``."""
    out = []
    for part in _top_level_split(statement, ","):
        part = part.strip()
        if part.startswith("return "):
            out.append(part[len("return "):])
            continue
        pieces = _ASSIGN.split(part)
        if len(pieces) > 1:
            out.append(pieces[-1])
    return out


def statements(text, cython):
    """The statements of a source: split at ``;`` and braces in C, at the
    ends of lines outside brackets in Cython."""
    text = _strip_comments(text, cython)
    if not cython:
        return [s for s in re.split(r"[;{}]", text) if s.strip()]
    out, current, depth = [], [], 0
    for line in text.split("\n"):
        current.append(line)
        depth += line.count("(") + line.count("[") - line.count(")") - line.count("]")
        if depth <= 0:
            out.append(" ".join(current))
            current, depth = [], 0
    return out


# Addressing, not a value: a statement that declares an integer, or a value
# that reads a CUDA thread or block coordinate.
_INTEGER_DECLARATION = re.compile(
    r"^\s*(?:cdef\s+)?(?:const\s+)?(?:i64|sg_i64|int|unsigned|long long|size_t|"
    r"int64_t|int32_t|Py_ssize_t)\s+\w+\s*=")
_COORDINATE = re.compile(
    r"\b(?:threadIdx|blockIdx|blockDim|gridDim|SPARSEGRAD_BLOCK)\b")


def formulas(text, cython=False):
    """{shape: expression} of the significant values of a source."""
    found = {}
    for statement in statements(text, cython):
        if _INTEGER_DECLARATION.match(statement):
            continue
        for value in values(statement):
            if _COORDINATE.search(value):
                continue
            form = shape(value)
            if significant(form):
                found.setdefault(form, " ".join(value.split()))
    return found


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def header_formulas():
    """{shape: (header, expression)} of every shared header."""
    out = {}
    for path in sorted(glob.glob(os.path.join(INCLUDE, "*.h"))):
        for form, expr in formulas(_read(path)).items():
            out.setdefault(form, (os.path.basename(path), expr))
    return out


def driver_sources():
    """(name, text, is Cython) of every driver: the CUDA modules as compiled
    (``.cu`` and what the launchers generate) and ``common.cuh``, and the
    Cython sources (templates rather than what they render)."""
    out = [(f"{family}.cu", _cuda.source(family), False)
           for family in _cuda.families()]
    out += [(os.path.basename(p), _read(p), False)
            for p in glob.glob(os.path.join(CUDA, "*.cuh"))]
    for pattern in ("*.pyx", "*.pxi", "*.pxd", "*.tp"):
        for path in glob.glob(os.path.join(KERNELS, pattern)):
            if os.path.exists(path + ".tp"):
                continue                    # rendered from a template
            out.append((os.path.basename(path), _read(path), True))
    return sorted(out)


def twins(sources, shared):
    """The statements of `sources` that write a formula of `shared` again."""
    found = []
    for name, text, cython in sources:
        for form, expr in formulas(text, cython).items():
            if form in shared:
                header, original = shared[form]
                found.append(f"{name}: {expr!r} is {header}'s {original!r}")
    return found


def test_no_kernel_body_is_written_twice():
    shared = header_formulas()
    assert len(shared) > 40                 # the optimizers' alone are more
    found = twins(driver_sources(), shared)
    assert not found, "\n".join(found)


def test_no_formula_is_in_two_headers():
    # a formula two families share belongs to sg_base.h (or to one of them)
    where = {}
    for path in sorted(glob.glob(os.path.join(INCLUDE, "*.h"))):
        for form, expr in formulas(_read(path)).items():
            where.setdefault(form, []).append(f"{os.path.basename(path)}: {expr!r}")
    doubled = [" and ".join(places) for places in where.values() if len(places) > 1]
    assert not doubled, "\n".join(doubled)


# What main's sources held before the kernel bodies moved into the headers:
# each of these lines wrote a formula that a header now holds.
_OLD_TWINS = [
    ("_training_rows.pxi",
     "        v[j] = v[j] - (s1[j] * alpha) / (_sqrt(s2[j]) + epsilon)\n", True),
    ("training.cu",
     "    s2[0] = s2[0] * momentum + (sg_rsqrt(s1[0] + epsilon) * lr) * g;\n", False),
    ("training.cu",
     "    T gs_lr = gs_t * lr;\n    v[0] = ((-sg_sign(s1[0])) * sg_max(sg_abs(s1[0]) "
     "/ global_step - l1, (T)0)) /\n               (l2 + sg_sqrt(s2[0]) / gs_lr);\n",
     False),
    ("_training_rows.pxi",
     "            v[j] = (_sign(p) * _max(_abs(p) - eta * l1, <floating>0)) / den\n",
     True),
]


@pytest.mark.parametrize("name,text,cython", _OLD_TWINS,
                         ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(_OLD_TWINS)])
def test_the_check_finds_a_second_copy(name, text, cython):
    # the checker is not vacuous: the twins that main held are found
    assert twins([(name, text, cython)], header_formulas())


def test_shapes():
    assert shape("(SG_M)((double)num / den)") == "x/x"
    assert shape("<floating>(<double>num / den)") == "x/x"
    assert shape("s1[0] * rho + (g * g) * c") == shape("s1[j] * rho + (gj * gj) * c")
    assert shape("sqrtf(x[k]) + k->t[1]") == shape("_sqrt(x) + eps") == "SQRT(x)+x"
    assert shape("SG_F(sg_max)(a, 0.0)") == "MAX(x,#)"
    assert shape("8 * n + 16 * m") == "#*x+#*x"
    assert not significant(shape("acc + x"))
    assert not significant(shape("row * R + j"))
    assert not significant(shape("v[0] - g * alpha"))
    assert significant(shape("(x * c) / d"))
    assert significant(shape("s1[0] * rho + (g * g) * c"))
    assert significant(shape("sg_sqrt(a) + b"))
    assert not significant(shape("sg_sqrt(a)"))


def _defined(text):
    names = re.findall(r"SG_F\((\w+)\)\s*\(", text)
    names += re.findall(r"^SG_ELEMENT\((\w+)\)", text, flags=re.M)
    return set(names)


def _calls(text, fn):
    """How many times the headers' `text` calls `fn` (definitions are not
    calls)."""
    calls = re.findall(rf"(?:\b{fn}|SG_F\(\s*{fn}\s*\))\s*\(", text)
    return len(calls) - len(re.findall(
        rf"(?:SG_FN(?:_OUTLINE)?\s+[\w\s*()]*?SG_F\(\s*{fn}\s*\)|"
        rf"^SG_ELEMENT\(\s*{fn}\s*\))\s*\(?", text, flags=re.M))


# Functions that one side calls and the other need not: {name: why}.
_ONE_SIDED = {
    "sg_ftrl_dense_row": "the GPU's FTRL entry; the CPU's loops call sg_ftrl "
                         "with literal flags",
    "sg_ftrl_sparse_row": "as sg_ftrl_dense_row",
    "sg_seg_apply": "the GPU's reduction by a constant op code; the CPU's "
                    "loops are written per op and call sg_seg_max/min/prod",
    # the clip ops' scalar steps on the device, so that a norm never leaves
    # the GPU; on the CPU, clip_ops computes them in NumPy's 0-d arithmetic
    # with the same bits (tests/gpu/test_clip.py checks the two agree)
    "sg_norm": "the device's norm of a sum of squares",
    "sg_global_scale": "the device's clip_by_global_norm factor",
    "sg_norm_divisor": "the device's clip_by_norm divisor",
}


def test_every_shared_function_is_compiled_for_both():
    # A function of a header is called by the Cython kernels (by its C name,
    # name_f32 ...) and by the CUDA ones (its overloaded name; the training
    # ops' element functions through their generated SG_ROW lines), or by
    # another function of the headers.
    headers = {os.path.basename(p): _read(p)
               for p in glob.glob(os.path.join(INCLUDE, "*.h"))
               if not p.endswith("sg_base.h")}   # a library: not all is used
    cython = "\n".join(text for _, text, cy in driver_sources() if cy)
    rendered = glob.glob(os.path.join(KERNELS, "*.tp"))
    cython += "\n".join(_read(p[:-3]) for p in rendered if os.path.exists(p[:-3]))
    cuda = "\n".join(text for _, text, cy in driver_sources() if not cy)
    cuda += "\n".join(f"sg_{fn}" for fn in re.findall(r"SG_ROW\((\w+),", cuda))
    missing = []
    every = "\n".join(_strip_comments(t, False) for t in headers.values())
    for header, text in headers.items():
        for fn in sorted(_defined(text) - set(_ONE_SIDED)):
            used_here = _calls(every, fn) > 0
            if not (re.search(rf"\b{fn}(?:_[fi](?:32|64))?\b", cython) or used_here):
                missing.append(f"{header}: {fn} unused by the Cython kernels")
            if not (re.search(rf"\b{fn}\b", cuda) or used_here):
                missing.append(f"{header}: {fn} unused by the CUDA kernels")
    assert not missing, "\n".join(missing)


# Headers of the host's loop structure only, with no arithmetic of their own:
# sg_segment_rows.h sums rows in sg_seg_sum_contiguous's order with SIMD
# masks (tests/ops/test_segment_ops.py checks its bits against a model of
# that function); the CUDA kernels call sg_seg_sum_contiguous itself.
HOST_ONLY_HEADERS = {"sg_segment_rows.h": "sg_seg_sum_contiguous"}


def test_each_header_is_included_on_both_sides():
    cython = "\n".join(text for _, text, cy in driver_sources() if cy)
    cuda = "\n".join(text for _, text, cy in driver_sources() if not cy)
    for path in glob.glob(os.path.join(INCLUDE, "sg_*.h")):
        name = os.path.basename(path)
        if name in ("sg_base.h", "sg_type_end.h") or re.fullmatch(
                r"sg_l?b?[fi]\d+\.h", name):
            continue
        if name in HOST_ONLY_HEADERS:
            # host-only, and it names the shared function whose bits it keeps
            assert HOST_ONLY_HEADERS[name] in _read(path), name
            assert f'cdef extern from "{name}"' in cython, name
            assert f'#include "{name}"' not in cuda, name
            continue
        assert f'cdef extern from "{name}"' in cython, name
        assert f'#include "{name}"' in cuda, name


# sg_half.h's functions that no kernel uses yet: {name: why}.
_HALF_UNUSED = {}
# F16C's own conversions (host instructions): the reference the tests hold
# sg_half.h's portable code to, which is what both sides' kernels run.
_HALF_HOST_ONLY = {"sg_f16_to_f32_f16c", "sg_f32_to_f16_f16c"}


def test_every_half_function_is_compiled_for_both():
    # sg_half.h's functions are plain (no SG_F name), which the rule above
    # does not list.  Each is used by the header itself (by another
    # conversion, or named in the SG_HALF_TYPES lines of the rounding types,
    # which both sides' half kernels instantiate), or named by the Cython and
    # the CUDA drivers both (training_half.pyx's and training_half.cu's
    # conversion functions), except F16C's own conversions (_HALF_HOST_ONLY).
    text = _strip_comments(_read(os.path.join(INCLUDE, "sg_half.h")), False)
    definition = r"^SG_FN(?:_OUTLINE)?\s+\w+\s+({})\s*\("
    names = set(re.findall(definition.format(r"\w+"), text, flags=re.M))
    assert {"sg_f32_to_f16", "sg_f16_to_f32", "sg_f32_to_bf16"} <= names
    cython = "\n".join(text for _, text, cy in driver_sources() if cy)
    cuda = "\n".join(text for _, text, cy in driver_sources() if not cy)
    unused, missing = set(), []
    for fn in sorted(names):
        mentions = len(re.findall(rf"\b{fn}\b", text))
        if mentions > len(re.findall(definition.format(fn), text, flags=re.M)):
            continue                        # used by the header
        on_host = re.search(rf"\b{fn}\b", cython) is not None
        on_device = re.search(rf"\b{fn}\b", cuda) is not None
        if not (on_host or on_device):
            unused.add(fn)
        elif not (on_host and on_device) and fn not in _HALF_HOST_ONLY:
            missing.append(f"{fn}: used by the {'Cython' if on_host else 'CUDA'} "
                           "kernels only")
    assert not missing, "\n".join(missing)
    # an entry of _HALF_UNUSED leaves the list once the function is used
    assert unused == set(_HALF_UNUSED), unused ^ set(_HALF_UNUSED)
