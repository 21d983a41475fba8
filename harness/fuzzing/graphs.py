"""Graph-level fuzzing: random programs built from the op registry, NNSmith style —
a DAG of 2 to 30 nodes, valid by construction because every node is evaluated in
NumPy as it is added (so its shape and dtype are known, and a proposal NumPy rejects
is simply not added). The program is compiled as ONE function returning its sinks,
so fusion and bufferization see realistic chains, and compared with NumPy running
the same program. Tolerances follow exactness: a node is exact when its op is
correctly rounded, all its inputs are exact and, for a float result, NumPy defines
the sign of a zero (then the compiled value must match bit for bit, NaN-aware);
discontinuous ops (comparisons, sign, isnan/isinf/isfinite, any/all, float->int
casts) only take exact operands, so rounding differences never flip a branch."""

from __future__ import annotations

import json

import numpy as np

from compiler import dtypes as cdt
from compiler import jit
from compiler import opinfo as oi

from .cases import FOLDED, decode_array, decode_operand, encode_array, encode_operand, make_values, random_layout
from .check import ZERO_SIGN_UNDEFINED, Mismatch, compare_layout, compare_values, numpy_eval, with_constants

MAX_ELEMENTS = 4096
GRAPH_DOMAIN = oi.Domain(lo=-4.0, hi=4.0, special=False)
EXCLUDED = set(oi.INDEX_OPERAND_OPS + oi.EXPONENT_OPERAND_OPS)  # need an index or exponent argument; covered at op level
# an integer array's mean rounded back to its dtype: beyond the op's MODERATE domain (a graph's int64 values are
# not held to it) the float64 sum's order, not NumPy's, can move the rounded integer (seed 1134); covered at op level
EXCLUDED.add("pad_mean")
_JOINS = ("stack", "concatenate", "hstack", "column_stack", "dstack", "vstack")  # what ``_join`` builds

DISCONTINUOUS = {"greater", "greater_equal", "less", "less_equal", "equal", "not_equal",
                 "operator.gt", "operator.ge", "operator.lt", "operator.le", "operator.eq", "operator.ne",
                 "sign", "isinf", "isfinite", "isnan", "any", "all", "method.any", "method.all",
                 "signbit", "isclose", "count_nonzero", "argsort", "method.argsort",
                 # reads its second operand's sign, which IEEE leaves open for the NaN of an invalid operation:
                 # NumPy's log(-2.6) is -nan, the compiled one may be +nan (seed 1115)
                 "copysign",
                 # a power of two apart: an input off by an ulp may land on the other side of one
                 "spacing", "frexp", "modf",
                 # a step's difference is wrapped by mod and compared with discont
                 "unwrap",
                 # its conditions compare with thresholds
                 "piecewise",
                 # read the sign bit or infinity: an inexact NaN's sign, or an overflow, decides them
                 "isposinf", "isneginf", "angle",
                 # the bits themselves: an input an ulp off is another integer
                 "view",
                 # a float's truth value is x != 0: a cancelling difference NumPy gets exactly 0 may be an ulp in
                 # the compiled program (seed 1209: sinh(x[1]) - sinh(x[0]) of equal constants, one sinh folded by
                 # MLIR and the other computed at run time)
                 "logical_and", "logical_or", "logical_xor", "logical_not", "logical_and.reduce", "logical_or.reduce",
                 "accumulate"}  # its comparisons, copysign, floor_divide and remainder
# ops that map inf and NaN to finite values: where an inexact operand is already non-finite in NumPy,
# which of inf, -inf and NaN it is can depend on evaluation order (BLAS's fused multiply-adds sum past
# a product that overflows on its own: seed 1125), and the finite images are far apart
FINITE_IMAGES = {"nan_to_num"}


def _undefined_conversion(src: np.dtype, dtype, exact: bool) -> bool:
    """An op's ``dtype=`` that converts a float operand as astype would refuse to: to an integer (undefined
    outside the target's range, as NaN and infinities are), or to bool from an inexact value (sum(x,
    dtype=int64) of a computed float differs wherever a last-ulp difference crosses an integer)."""
    if dtype is None or src.kind != "f":
        return False
    return np.dtype(dtype).kind in "iu" or (np.dtype(dtype).kind == "b" and not exact)


def graph_ops() -> list[oi.OpInfo]:
    return [o for o in oi.REGISTRY.values() if o.name not in EXCLUDED]


# --------------------------------------------------------------------------- evaluation


def _resolve(ref, inputs, values):
    if "input" in ref:
        return inputs[ref["input"]]
    if "node" in ref:
        return values[ref["node"]]
    return decode_operand(ref)


def run_program(program: dict, inputs: list) -> list:
    """Every node's value; ``inputs`` are NumPy arrays or traced tensors."""
    values = []
    for node in program["nodes"]:
        info = oi.REGISTRY[node["op"]]
        out = info([_resolve(r, inputs, values) for r in node["args"]], node["params"])
        if node.get("item") is not None:
            out = out[node["item"]]
        values.append(out)
    return values


def exact_node(info: oi.OpInfo, value, inputs_exact: bool) -> bool:
    """Bit for bit NumPy's: a correctly rounded op (or one whose CPU kernel calls NumPy's own loop or BLAS
    routine, or sums in NumPy's order: ``OpInfo.exact_on_cpu``) of exact
    inputs whose float result also has a defined
    zero sign (signbit, copysign or 1/x of a max of +0.0 and -0.0 would otherwise see NumPy's SIMD order) and
    holds no NaN: a graph's inputs hold none, so a NaN is an invalid operation's, whose sign IEEE leaves open (x86's
    0/0 is -nan, the one MLIR folds from constants +nan: signbit(-((x != x) / False)) of integers, seed 1234)."""
    float_result = np.asarray(value).dtype.kind == "f"
    zero_sign_open = info.family in ZERO_SIGN_UNDEFINED and not info.numpy_order
    return (info.exact or info.exact_on_cpu) and inputs_exact and not (
        float_result and (zero_sign_open or not info.zero_sign or bool(np.isnan(value).any())))


def exactness(program: dict, values: list) -> list[bool]:
    exact = []
    for node, value in zip(program["nodes"], values):
        inputs_exact = all(exact[r["node"]] for r in node["args"] if "node" in r)
        exact.append(exact_node(oi.REGISTRY[node["op"]], value, inputs_exact))
    return exact


def _finite_max(v) -> float:
    a = np.asarray(v)
    if a.dtype.kind == "b" or a.size == 0:
        return 0.0
    with np.errstate(invalid="ignore"):  # (a signaling NaN's conversion flags "invalid"; it is dropped next)
        a = a.astype(np.float64)
    a = a[np.isfinite(a)]
    return float(np.abs(a).max()) if a.size else 0.0


def magnitudes(program: dict, inputs, values) -> list[float]:
    """Per node: the largest finite magnitude on any path into it (scales atol for inexact nodes), that of
    what a summing op sums included (its registry ``scale``, as the op fuzzer uses it: a variance of equal
    int64 values near 3e18 is 0 in NumPy, 512**2 from a mean one ulp off, seed 1140)."""
    mags = []
    for node, value in zip(program["nodes"], values):
        m = _finite_max(value)
        for r in node["args"]:
            if "node" in r:
                m = max(m, mags[r["node"]])
            elif "input" in r:
                m = max(m, _finite_max(inputs[r["input"]]))
        info = oi.REGISTRY[node["op"]]
        if info.scale is not None:
            args = [_resolve(r, inputs, values) for r in node["args"]]
            m = max(m, _finite_max(numpy_eval(lambda: info.scale(args, node["params"]))))
        mags.append(m)
    return mags


# derivatives of the elementwise ops that can magnify an inexact operand's error far past its own rounding:
# tan near a pole (seed 1136: tan of a matmul's 1.5626, 190x), the inverse functions near their domain's ends
_DERIVATIVES = {
    "tan": lambda x: 1 + np.tan(x) ** 2, "exp": np.exp, "exp2": lambda x: np.exp2(x) * np.log(2), "expm1": np.exp,
    "sinh": np.cosh, "cosh": np.sinh, "arcsin": lambda x: 1 / np.sqrt(1 - x * x),
    "arccos": lambda x: 1 / np.sqrt(1 - x * x), "arctanh": lambda x: 1 / (1 - x * x),
    "arccosh": lambda x: 1 / np.sqrt(x * x - 1),
}


def _magnification(op: str, x) -> float:
    """How much more than in proportion to the magnitudes involved ``op`` magnifies an error in its operand
    ``x`` (NumPy's values): max |f'(x)| |x| / max(|f(x)|, |x|), at least 1; inf where it is unbounded."""
    x = np.asarray(x)
    if op not in _DERIVATIVES or x.dtype.kind != "f" or x.size == 0:
        return 1.0
    with np.errstate(all="ignore"):
        x = x.astype(np.float64)
        slope = np.abs(_DERIVATIVES[op](x)) * np.abs(x)
        scale = np.maximum(np.abs(getattr(np, op)(x)), np.abs(x))
        ratio = np.where(np.isfinite(x) & np.isfinite(scale) & (slope > 0), slope / np.maximum(scale, 1e-300), 1.0)
    worst = float(ratio.max())
    return np.inf if np.isnan(worst) else max(1.0, worst)


def magnifications(program: dict, values, exact) -> list[float]:
    """Per node: the product of the magnifications of the ops on its most magnifying path from an inexact
    value (1 for most nodes): the graph tolerance is scaled by it."""
    out = []
    for node in program["nodes"]:
        fed = [r["node"] for r in node["args"] if "node" in r]
        m = max([out[i] for i in fed], default=1.0)
        if fed and not exact[fed[0]]:
            m *= _magnification(node["op"], values[fed[0]])
        out.append(m)
    return out


def _near_overflow(v) -> bool:
    a = np.asarray(v)
    return a.dtype.kind == "f" and _finite_max(a) > float(np.finfo(a.dtype).max) / 2**20


def overflow_paths(program: dict, inputs, values) -> list[bool]:
    """Per node: whether a value on some path into it came near its own dtype's overflow (a float32
    sum near 3.4e38 feeding a float64 add counts), where the order of a rounded chain decides
    between inf, -inf and NaN."""
    out = []
    for node, value in zip(program["nodes"], values):
        near = _near_overflow(value)
        for r in node["args"]:
            near = near or (out[r["node"]] if "node" in r else "input" in r and _near_overflow(inputs[r["input"]]))
        out.append(near)
    return out


# ops whose result blows up as an operand nears zero (a divisor, a logarithm's argument, a negative power's
# base): fed a value that is zero up to its own rounding (a sum that cancels), their result is noise
NOISE_AMPLIFIERS = {"divide", "operator.truediv", "floor_divide", "operator.floordiv", "remainder", "operator.mod",
                    "fmod", "reciprocal", "log", "log2", "log10", "arctan2", "power", "operator.pow", "float_power"}


# ops that blow up where an operand reaches other points, as NOISE_AMPLIFIERS do at zero: arctanh of a
# computed 1.0 is inf where its neighbour below is 18.7 (seed 1208: NumPy's tanh(19.0) is 1.0, the correctly
# rounded one 1 - 2**-53, and tan(arctanh(...)) NaN against -0.135)
SINGULAR_POINTS = {"arctanh": (1.0, -1.0), "log1p": (-1.0,)}


def amplified_noise(program: dict, values, exact, tolerance) -> list[bool]:
    """Per node: whether some path into it passes a NOISE_AMPLIFIER fed an inexact value that lies within
    its own tolerance of zero somewhere (seed 1127: 1 / the mean of symmetric histogram edges, a float32
    sum of rounding residue), or an op of SINGULAR_POINTS so near one of its points. Such a node's values
    are not comparable, only its dtype and shape."""
    def noisy_near(r, points) -> bool:
        if "node" not in r or exact[r["node"]]:
            return False
        v = np.asarray(values[r["node"]])
        if v.dtype.kind != "f":
            return False
        # in float64: a float16 value's tolerance may lie beyond float16's range
        wide = v.astype(np.float64)
        return any(bool((np.abs(wide - p) <= tolerance(r["node"])[1] + abs(p) * tolerance(r["node"])[0]).any())
                   for p in points)
    out = []
    for node in program["nodes"]:
        fed = [r for r in node["args"] if "node" in r]
        points = (0.0,) if node["op"] in NOISE_AMPLIFIERS else SINGULAR_POINTS.get(node["op"], ())
        out.append(any(out[r["node"]] for r in fed) or any(noisy_near(r, points) for r in fed))
    return out


def path_eps(program: dict, values, exact) -> list[float]:
    """Per node: the coarsest machine epsilon among the inexact float values that flow into it.
    A float32 rounding difference promoted into float64 is still a float32-sized difference."""
    out = []
    for node, value, ex in zip(program["nodes"], values, exact):
        dtype = np.asarray(value).dtype
        e = oi.EPS.get(dtype, 0.0) if not ex else 0.0
        for r in node["args"]:
            if "node" in r:
                e = max(e, out[r["node"]])
        out.append(e)
    return out


def depths(program: dict) -> list[int]:
    d = []
    for node in program["nodes"]:
        d.append(1 + max([d[r["node"]] for r in node["args"] if "node" in r], default=0))
    return d


def check_graph_case(case: dict) -> None:
    fn, inputs, problems_of = graph_case_parts(case)
    compiled = jit(fn)
    try:
        got = numpy_eval(lambda: compiled(*inputs))
    except Exception as exc:
        raise Mismatch(f"compiler raised {type(exc).__name__}: {exc}") from None
    problems = problems_of(got)
    if problems:
        raise Mismatch("; ".join(problems))


def graph_case_parts(case: dict):
    """(the program as a function of its inputs, the inputs, problems of a compiled result)."""
    inputs = [decode_array(a) for a in case["inputs"]]
    values = numpy_eval(lambda: run_program(case, inputs))
    exact, mags, depth = exactness(case, values), magnitudes(case, inputs, values), depths(case)
    overflow = overflow_paths(case, inputs, values)
    eps_in = path_eps(case, values, exact)
    magnified = magnifications(case, values, exact)
    outputs = case["outputs"]

    def tolerance(o: int) -> tuple[float, float]:
        e = np.asarray(values[o])
        if exact[o] or e.dtype.kind != "f":
            return 0.0, 0.0
        rtol = 64 * max(oi.EPS[e.dtype], eps_in[o]) * depth[o] * min(magnified[o], 1e300)
        return rtol, rtol * mags[o] + float(np.finfo(e.dtype).tiny)

    unbounded = amplified_noise(case, values, exact, tolerance)

    def problems_of(got) -> list[str]:
        problems = []
        for o, g in zip(outputs, got):
            # the graph's NumPy evaluation keeps 0-d results as arrays; whether the compiled function
            # returns one as a scalar is the op fuzzer's to check
            e, g = np.asarray(values[o]), np.asarray(g) if isinstance(g, np.generic) else g
            problems += compare_layout(e, g, f"node {o} ({case['nodes'][o]['op']})")
            rtol, atol = tolerance(o)
            near = rtol and (overflow[o] or mags[o] > float(np.finfo(e.dtype).max) / 2**20)
            if near and isinstance(g, np.ndarray) and g.shape == e.shape:
                # near overflow, whether a rounded chain ends in inf, -inf or NaN depends on
                # evaluation order (inf + -inf): non-finite elements are not comparable there
                either = ~np.isfinite(e) | ~np.isfinite(g)
                e, g = np.where(either, 0, e).astype(e.dtype), np.where(either, 0, g).astype(g.dtype)
            if unbounded[o] and isinstance(g, np.ndarray) and g.shape == e.shape:
                e, g = np.zeros_like(e), np.zeros_like(g)  # only the dtype and shape are comparable
            node = case["nodes"][o]
            problems += compare_values(e, g, rtol, atol, f"node {o} ({node['op']})")
        return problems

    program = lambda xs: [run_program(case, list(xs))[o] for o in outputs]  # noqa: E731
    if case.get("folded"):
        return (*with_constants(program, inputs), problems_of)
    return (lambda *xs: program(xs)), inputs, problems_of


# --------------------------------------------------------------------------- generation


class _Builder:
    def __init__(self, c: oi.Chooser, seed: int, profile: str):
        self.c = c
        self.rng = np.random.default_rng(seed)
        self.profile = profile
        self.inputs: list[np.ndarray] = []
        self.nodes: list[dict] = []
        self.values: list = []
        self.exact: list[bool] = []
        self.refs: list[tuple] = []      # (ref, value, exact)

    # -- operands
    def new_input(self, shape, dtype, domain=GRAPH_DOMAIN) -> dict:
        profile = "edge" if self.profile in ("edge", FOLDED) and domain is GRAPH_DOMAIN else "plain"
        if profile == "edge":
            domain = oi.ANY
        value = make_values(self.rng, shape, dtype, domain, profile)
        if self.profile == FOLDED and value.size:
            value = np.full(value.shape, value.flat[0], value.dtype)  # one value: MLIR folds what it feeds
        self.inputs.append(value)
        ref = {"input": len(self.inputs) - 1}
        self.refs.append((ref, value, True))
        return ref

    def candidates(self, pred) -> list[tuple]:
        return [r for r in self.refs if pred(np.asarray(r[1]), r[2])]

    def pick_ref(self, pred):
        cands = self.candidates(pred)
        if not cands:
            return None
        # mostly the newest values, so programs grow deep chains (what fusion works on)
        if len(cands) > 2 and self.c.pick((0, 1, 1)):
            cands = cands[-2:]
        return self.c.pick(cands)

    def broadcast_variant(self, shape) -> tuple:
        drop = self.c.integer(0, len(shape))
        return tuple(1 if self.c.pick((0, 0, 1)) else d for d in shape[drop:])

    def scalar(self, dtype, domain=GRAPH_DOMAIN) -> dict:
        v = make_values(self.rng, (), dtype, domain, "plain")[()]
        return encode_operand(v if self.c.pick(("python", "numpy")) == "numpy" else v.item())

    # -- proposals: (args, params) or None
    def propose(self, info: oi.OpInfo):
        f = info.family
        c = self.c
        if f == "elementwise" and info.name.startswith("power"):
            return self._power(info)
        discontinuous = info.name in DISCONTINUOUS
        finite_images = info.name in FINITE_IMAGES
        if f == "elementwise" and info.arity == 1 and info.name != "astype":
            a = self.pick_ref(lambda v, e: v.dtype in info.dtypes and (e or not discontinuous)
                              and (e or not finite_images or bool(np.isfinite(v).all())))
            return ([a[0]], {}) if a else None
        if info.name == "astype":
            a = self.pick_ref(lambda v, e: True)
            if a is None:
                return None
            params = info.params_for(c, np.shape(a[1]))
            src, dst = np.asarray(a[1]).dtype, np.dtype(params["dtype"])
            if src.kind == "f" and (dst.kind in "iu" or not a[2]):
                return None     # float -> int is undefined outside the target range; -> bool needs exact input
            return [a[0]], params
        if f == "elementwise":   # binary, or clip's array and two bounds
            a = self.pick_ref(lambda v, e: v.dtype in info.dtypes and (e or not discontinuous))
            if a is None:
                return None
            shape, dtype = np.shape(a[1]), np.asarray(a[1]).dtype
            others = [self._operand_for(info, shape, dtype, discontinuous) for _ in range(info.arity - 1)]
            if info.arity > 2:
                return [a[0], *others], info.sample(c).params
            b = others[0]
            return ([b, a[0]] if c.pick((0, 1)) else [a[0], b]), {}
        if f == "select":
            cond = self.pick_ref(lambda v, e: v.dtype == np.bool_ and e)
            x = self.pick_ref(lambda v, e: True)
            if x is None:
                return None
            shape = np.shape(x[1])
            cond = cond[0] if cond and _broadcastable(np.shape(cond[1]), shape) else self.new_input(self.broadcast_variant(shape), np.bool_)
            y = self.pick_ref(lambda v, e: _broadcastable(v.shape, shape))
            y = y[0] if y and c.pick((0, 1)) else self.scalar(np.asarray(x[1]).dtype)
            return [cond, x[0], y], {}
        if f == "matmul":
            return self._matmul(info)
        if f == "join" and info.name in _JOINS:  # np.append, np.insert and np.block take their own samples
            return self._join(info)
        if info.params_for is not None:
            # a float's bits hold a NaN's sign and payload, which no rule fixes where two NaNs meet (x86 keeps
            # the first operand's, and LLVM may swap a multiply's operands: seed 1168)
            nan_bits = info.name == "view"
            a = self.pick_ref(lambda v, e: v.dtype in info.dtypes and (e or not discontinuous)
                              and not (nan_bits and np.asarray(v).dtype.kind == "f" and bool(np.isnan(v).any())))
            if a is None:
                return None
            params = info.params_for(c, np.shape(a[1]))
            if params is None or _undefined_conversion(np.asarray(a[1]).dtype, params.get("dtype"), a[2]):
                return None
            return [a[0]], params
        return None

    def _operand_for(self, info, shape, dtype, discontinuous) -> dict:
        """Another operand of an elementwise op over ``shape``: an existing value, a new input or a scalar."""
        c = self.c
        kind = c.pick(("existing", "existing", "input", "scalar"))
        if kind == "existing":
            b = self.pick_ref(lambda v, e: v.dtype in info.dtypes and (e or not discontinuous) and _broadcastable(v.shape, shape))
            if b:
                return b[0]
        if kind == "scalar":
            return self.scalar(c.pick(info.dtypes) if c.pick((0, 1)) else dtype)
        return self.new_input(self.broadcast_variant(shape), c.pick((dtype, dtype, c.pick(info.dtypes))))

    def _power(self, info):
        ints = info.name == "power_int"
        a = self.pick_ref(lambda v, e: v.dtype in info.dtypes)
        if a is None:
            return None
        shape = np.shape(a[1])
        if ints:
            exp_dtype, domain = self.c.pick(oi.INTS), oi.Domain(lo=0, hi=3, special=False)
        else:
            exp_dtype, domain = np.asarray(a[1]).dtype, oi.Domain(lo=-3.0, hi=3.0, special=False)
        if self.c.pick((0, 1)):
            b = self.scalar(exp_dtype, domain)
        else:
            b = self.new_input(self.broadcast_variant(shape), exp_dtype, domain)
        return [a[0], b], {}

    def _matmul(self, info):
        c = self.c
        a = self.pick_ref(lambda v, e: v.dtype in info.dtypes and 1 <= v.ndim <= 3)
        if a is None:
            return None
        shape, dtype = np.shape(a[1]), np.asarray(a[1]).dtype
        k = shape[-1]
        if len(shape) == 1:
            b_shape = c.pick(((k,), (k, c.pick(oi.DIMS[:5]))))
        else:
            n = c.pick(oi.DIMS[:5])
            b_shape = c.pick(((k, n), (k,), shape[:-2] + (k, n)))
        existing = self.pick_ref(lambda v, e: v.dtype in info.dtypes and v.shape == b_shape)
        b = existing[0] if existing and c.pick((0, 1)) else self.new_input(b_shape, dtype, oi.Domain(lo=-2.0, hi=2.0, special=False))
        return [a[0], b], {}

    def _join(self, info):
        c = self.c
        a = self.pick_ref(lambda v, e: 1 <= v.ndim <= 3)
        if a is None:
            return None
        shape, dtype = np.shape(a[1]), np.asarray(a[1]).dtype
        if info.name == "stack":
            free, params = None, {"axis": c.integer(-len(shape) - 1, len(shape))}
        elif info.name == "concatenate":
            free = c.integer(0, len(shape) - 1)
            params = {"axis": free}
        elif info.name == "hstack":
            free, params = (0 if len(shape) == 1 else 1), {}
        elif info.name == "column_stack":  # 1-d parts are columns, others join along axis 1
            free, params = (None if len(shape) == 1 else 1), {}
        elif info.name == "dstack":  # 1-d and 2-d parts gain a third axis, along which they join
            free, params = (None if len(shape) <= 2 else 2), {}
        else:  # vstack
            free, params = (None if len(shape) == 1 else 0), {}

        def fits(v):
            return v.ndim == len(shape) and all(x == y for i, (x, y) in enumerate(zip(v.shape, shape)) if i != free)

        parts = [a[0]]
        for _ in range(c.integer(0, 2)):
            other = self.pick_ref(lambda v, e: fits(v))
            if other and c.pick((0, 1)):
                parts.append(other[0])
            else:
                s = list(shape)
                if free is not None:
                    s[free] = c.pick(oi.DIMS[:5])
                parts.append(self.new_input(tuple(s), c.pick((dtype, dtype, c.pick(oi.ALL)))))
        return parts, params

    def add(self, info: oi.OpInfo) -> bool:
        mark = (len(self.inputs), len(self.refs))
        proposal = self.propose(info)
        if proposal is None:
            self._rollback(mark)
            return False
        args, params = proposal
        params = json.loads(json.dumps(params))
        node = {"op": info.name, "args": args, "params": params, "item": None}
        try:
            value = numpy_eval(lambda: info([_resolve(r, self.inputs, self.values) for r in args], params))
        except Exception:
            self._rollback(mark)
            return False
        if isinstance(value, tuple):
            node["item"] = self.c.integer(0, len(value) - 1)
            value = value[node["item"]]
        value = np.asarray(value)
        if value.dtype not in cdt.SUPPORTED or value.size == 0 or value.size > MAX_ELEMENTS or value.ndim > 5:
            self._rollback(mark)
            return False
        self.nodes.append(node)
        self.values.append(value)
        exact = exact_node(info, value, all(self._exact_of(r) for r in args))
        self.refs.append(({"node": len(self.nodes) - 1}, value, exact))
        return True

    def _exact_of(self, ref) -> bool:
        for r, _, e in self.refs:
            if r == ref:
                return e
        return True  # scalars are exact

    def _rollback(self, mark):
        n_inputs, n_refs = mark
        del self.inputs[n_inputs:]
        del self.refs[n_refs:]


def _broadcastable(s1, s2) -> bool:
    try:
        np.broadcast_shapes(tuple(s1), tuple(s2))
        return True
    except ValueError:
        return False


def sample_graph_case(c: oi.Chooser, min_nodes: int = 2, max_nodes: int = 30) -> dict:
    """A random valid program of ``min_nodes``..``max_nodes`` registry ops."""
    seed = c.integer(0, 2**31 - 1)
    profile = c.pick(("plain", "plain", "plain", "edge", FOLDED))
    b = _Builder(c, seed, profile)
    dtype = c.pick(oi.FLOATS + oi.FLOATS + (np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint8)))
    shapes = oi.broadcast_shapes_for(c, c.integer(1, 3), 1, 3, empty=False)  # programs of empty arrays test little
    for s in shapes:
        b.new_input(s, dtype)
    target = c.integer(min_nodes, max_nodes)
    ops = graph_ops()
    attempts = 0
    while len(b.nodes) < target and attempts < target * 8:
        attempts += 1
        b.add(c.pick(ops))
    if len(b.nodes) < 1:
        b.add(oi.REGISTRY["add"])
    used = {r["node"] for n in b.nodes for r in n["args"] if "node" in r}
    outputs = [i for i in range(len(b.nodes)) if i not in used]
    extra = [i for i in range(len(b.nodes)) if i in used and c.pick((0, 0, 0, 1))]
    outputs = sorted(set(outputs + extra))
    # inputs no node reads are dropped, so the program's signature is what it uses
    read = sorted({r["input"] for n in b.nodes for r in n["args"] if "input" in r})
    renumber = {old: new for new, old in enumerate(read)}
    for n in b.nodes:
        n["args"] = [{"input": renumber[r["input"]]} if "input" in r else r for r in n["args"]]
    if profile == FOLDED:  # the inputs are given to the compiled program as constants, which lie C-contiguously
        layouts = [None] * len(read)
    else:
        layouts = [random_layout(c, b.inputs[i].ndim) for i in read]
    case = {"kind": "graph", "inputs": [encode_array(b.inputs[i], layout) for i, layout in zip(read, layouts)],
            "nodes": b.nodes, "outputs": outputs}
    if profile == FOLDED:
        case["folded"] = True
    return case
