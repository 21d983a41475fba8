"""Fuzz cases as data: building op-level cases from the registry, encoding them
(and their arrays) as JSON so that a failure is a reproducible file, and value
generation per dtype and domain — ±0, subnormals, large magnitudes, ±inf and NaN
where the op's domain says they are meaningful — and the views (transposed, reversed,
strided) arrays are handed over as."""

from __future__ import annotations

import base64
import hashlib
import json
import math

import numpy as np

from compiler import opinfo as oi

# --------------------------------------------------------------------------- values

PROFILES = ("plain", "edge")
# elementwise ops (and random programs) also draw "folded" cases: every array operand one edge value repeated (a
# splat), given to the compiled function as a constant, so that MLIR's folders compute what it feeds at compile
# time (their answers must be NumPy's too: math.atan2 of two zeros folded to NaN, seed 1136)
FOLDED = "folded"
FOLDABLE_FAMILIES = ("elementwise", "elementwise_loop", "elementwise_library", "elementwise_outer")


def _float_specials(dtype, domain: oi.Domain) -> list[float]:
    fi = np.finfo(dtype)
    lo, hi = domain.bounds(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, float(fi.smallest_subnormal), -float(fi.smallest_subnormal),
              float(fi.smallest_subnormal) * 3, float(fi.tiny), -float(fi.tiny), float(fi.eps)]
    if domain.unbounded():
        values += [float(fi.max), -float(fi.max), float(fi.max) / 4, -float(fi.max) / 3, 1e30 if dtype == np.float64 else 1e19]
    values = [v for v in values if lo <= v <= hi]
    if domain.special:
        values += [math.inf, -math.inf, math.nan]
    return values


def make_values(rng: np.random.Generator, shape, dtype, domain: oi.Domain, profile: str) -> np.ndarray:
    """Deterministic values of ``shape``/``dtype`` drawn from ``domain``."""
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    if dtype.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    lo, hi = domain.bounds(dtype)
    if dtype.kind in "iu":
        if profile == "plain":
            lo, hi = max(lo, -100), min(hi, 100)
        wide = np.uint64 if dtype.kind == "u" else np.int64
        out = rng.integers(int(lo), int(hi), size=shape, endpoint=True, dtype=wide).astype(dtype)
        if profile == "edge" and out.size:
            edges = np.array([v for v in (int(lo), int(hi), 0, 1, -1) if lo <= v <= hi], dtype=dtype)
            mask = rng.random(shape) < 0.3
            out = np.where(mask, edges[rng.integers(0, len(edges), size=shape)], out)
        return np.asarray(out, dtype=dtype)
    flo, fhi = max(lo, -8.0), min(hi, 8.0)
    if flo >= fhi:
        flo, fhi = lo, hi
    base = rng.uniform(flo, fhi, size=shape)
    if profile == "plain" and domain.unbounded():
        base = base * rng.choice([1.0, 1.0, 1.0, 100.0], size=shape)
    out = base.astype(dtype)
    if profile == "edge" and out.size:
        specials = np.array(_float_specials(dtype, domain), dtype=dtype)
        mask = rng.random(shape) < 0.4
        out = np.where(mask, specials[rng.integers(0, len(specials), size=shape)], out).astype(dtype)
    return np.asarray(out, dtype=dtype)


# --------------------------------------------------------------------------- JSON encoding


def encode_array(a, layout: dict | None = None) -> dict:
    """The array's values in C order; ``layout`` (see ``laid_out``) says how the decoded array is to lie in memory."""
    a = np.array(a, order="C", copy=True)  # (ascontiguousarray would turn 0-d into 1-d)
    encoded = {"dtype": str(a.dtype), "shape": list(a.shape),
               "data": base64.b64encode(a.astype(a.dtype.newbyteorder("<")).tobytes()).decode("ascii")}
    if layout is not None:
        encoded["layout"] = layout
    return encoded


def decode_array(d: dict) -> np.ndarray:
    dtype = np.dtype(d["dtype"]).newbyteorder("<")
    raw = base64.b64decode(d["data"])
    a = np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="), copy=True).reshape(d["shape"])
    return laid_out(a, d["layout"]) if "layout" in d else a


# --------------------------------------------------------------------------- caller layouts
# A caller hands a compiled function views as often as fresh arrays: a transpose, a reversed or strided
# slice. The compiler lays out every traced value as NumPy would from its arguments' strides (and NumPy's sums,
# products and loops run in memory order), so cases also pass their arrays as such views.

LAYOUT_STEPS = (1, 1, 1, -1, 2, -2, 3)


def laid_out(a: np.ndarray, layout: dict) -> np.ndarray:
    """``a``'s values in a view whose memory holds the axes in ``layout["order"]`` (outermost first), axis
    ``i`` taken every ``layout["steps"][i]`` elements (a negative step: from the end); the elements between
    are a distinctive filler no correct reader sees."""
    order, steps = list(layout["order"]), list(layout["steps"])
    if sorted(order) != list(range(a.ndim)) or len(steps) != a.ndim or 0 in steps:
        raise ValueError(f"layout {layout} does not fit an array of {a.ndim} axes")
    memory = np.full(tuple(a.shape[i] * abs(steps[i]) for i in order), _filler(a.dtype), a.dtype)
    view = memory.transpose(np.argsort(order))[tuple(slice(None, None, s) for s in steps)]
    view[...] = a
    return view


def _filler(dtype: np.dtype):
    if dtype.kind == "f":
        return np.nan
    return True if dtype.kind == "b" else np.iinfo(dtype).max


def random_layout(c: oi.Chooser, ndim: int) -> dict | None:
    """Half the time None (a fresh C-contiguous array); else an axis order (C's, reversed or shuffled) and
    steps, at most three axes strided, so that the memory stays within 27 times the array's."""
    if ndim == 0 or not c.pick((0, 1)):  # (Hypothesis shrinks a pick to its first option: no view)
        return None
    order = list(range(ndim))
    arrangement = c.pick(("c", "reversed", "shuffled"))
    if arrangement == "reversed":
        order.reverse()
    elif arrangement == "shuffled":
        for i in range(ndim - 1, 0, -1):
            j = c.integer(0, i)
            order[i], order[j] = order[j], order[i]
    steps = [c.pick(LAYOUT_STEPS) for _ in range(ndim)]
    for i in [i for i, s in enumerate(steps) if abs(s) > 1][3:]:
        steps[i] = 1
    if order == list(range(ndim)) and steps == [1] * ndim:
        return None
    return {"order": order, "steps": steps}


def describe_layout(x: np.ndarray) -> str:
    """`` strides (e0, e1, ...)`` in elements where ``x`` is not C-contiguous, else nothing."""
    if x.flags.c_contiguous or not x.itemsize:
        return ""
    return f" strides {tuple(s // x.itemsize for s in x.strides)}"


def encode_operand(x, layout: dict | None = None) -> dict:
    if isinstance(x, np.ndarray):
        return {"array": encode_array(x, layout)}
    if isinstance(x, np.generic):
        return {"numpy_scalar": encode_array(np.asarray(x))}
    if isinstance(x, bool):
        return {"python": "bool", "value": x}
    if isinstance(x, int):
        return {"python": "int", "value": str(x)}
    if isinstance(x, float):
        return {"python": "float", "value": repr(x)}
    raise TypeError(f"cannot encode operand of type {type(x).__name__}")


def decode_operand(d: dict):
    if "array" in d:
        return decode_array(d["array"])
    if "numpy_scalar" in d:
        return decode_array(d["numpy_scalar"])[()]
    kind = d["python"]
    if kind == "bool":
        return bool(d["value"])
    if kind == "int":
        return int(d["value"])
    return float(d["value"])


def describe_operand(x) -> str:
    if isinstance(x, np.ndarray):
        return f"array{tuple(x.shape)}:{x.dtype}{describe_layout(x)}"
    if isinstance(x, np.generic):
        return f"np.{x.dtype}({x!r})"
    return f"{type(x).__name__}({x!r})"


def case_id(case: dict) -> str:
    return hashlib.sha256(json.dumps(case, sort_keys=True).encode()).hexdigest()[:12]


# --------------------------------------------------------------------------- op cases


def scalar_value(rng, dtype, domain, profile, kind: str):
    """A Python scalar ("python") or NumPy scalar ("numpy") of ``dtype``'s kind."""
    v = make_values(rng, (), dtype, domain, profile)[()]
    if kind == "numpy":
        return v
    return v.item()


def build_op_case(info: oi.OpInfo, call: oi.Call, dtypes: list, profile: str, seed: int) -> dict:
    """The JSON-able case for one call of ``info``: operands materialized from ``seed``."""
    if profile == FOLDED:
        case = build_op_case(info, call, dtypes, "edge", seed)
        case["operands"] = [encode_operand(_splat(decode_operand(o))) for o in case["operands"]]
        case["folded"] = True
        return case
    rng = np.random.default_rng(seed)
    operands = []
    for i, (shape, dtype) in enumerate(zip(call.shapes, dtypes)):
        if info.name in oi.INDEX_OPERAND_OPS and i == 1:
            size = call.shapes[0][call.params["axis"]]
            operands.append(oi.index_operand_values(rng, shape, dtype, size))
            continue
        kind = call.scalars.get(i)
        if kind:
            operands.append(scalar_value(rng, dtype, info.domain(i), profile, kind))
        else:
            operands.append(make_values(rng, shape, dtype, info.domain(i), profile))
    # drawn after the values, from a chooser of its own, so a seed's values do not depend on it
    layouts = oi.RandomChooser(seed + 1)
    return {"kind": "op", "op": info.name, "params": json.loads(json.dumps(call.params)),
            "operands": [encode_operand(x, random_layout(layouts, np.ndim(x))
                                        if isinstance(x, np.ndarray) and info.views else None) for x in operands]}


def _splat(x):
    """An array operand's first element repeated over its shape (a scalar as it is)."""
    if not isinstance(x, np.ndarray) or x.size == 0:
        return x
    return np.full(x.shape, x.flat[0], x.dtype)


def weighted_dtypes(allowed) -> list:
    """Floats are where most numerical trouble lives: they are drawn three times as often."""
    allowed = list(allowed)
    return allowed + [d for d in allowed if d.kind == "f"] * 3


def choose_dtypes(c: oi.Chooser, info: oi.OpInfo, count: int) -> list:
    first = c.pick(weighted_dtypes(oi.operand_dtypes(info, 0)))
    if info.mixed_dtypes and c.pick((0, 0, 1)):
        return [first] + [c.pick(weighted_dtypes(oi.operand_dtypes(info, i))) for i in range(1, count)]
    return [first if first in oi.operand_dtypes(info, i) else c.pick(oi.operand_dtypes(info, i)) for i in range(count)]


def sample_op_case(c: oi.Chooser, info: oi.OpInfo) -> dict:
    call = info.sample(c)
    dtypes = choose_dtypes(c, info, len(call.shapes))
    profile = c.pick(PROFILES + ((FOLDED,) if info.family in FOLDABLE_FAMILIES else ()))
    seed = c.integer(0, 2**31 - 1)
    return build_op_case(info, call, dtypes, profile, seed)


def describe_case(case: dict) -> str:
    if case["kind"] == "op":
        ops = ", ".join(describe_operand(decode_operand(o)) for o in case["operands"])
        folded = ", operands folded to constants" if case.get("folded") else ""
        return f"{case['op']}({ops}; {json.dumps(case['params'])}{folded})"
    folded = ", inputs folded to constants" if case.get("folded") else ""
    return f"graph of {len(case['nodes'])} nodes ({', '.join(n['op'] for n in case['nodes'])}{folded})"
