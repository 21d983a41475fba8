"""Runs the GPU target's kernels on the CPU, for tests on machines without a GPU.

It interprets the module exactly as the GPU target leaves it before NVVM (host code
with ``gpu.alloc``/``gpu.memcpy``/``gpu.launch_func``, plus the outlined ``gpu.func``
kernels): every block of every launch, every thread of a block as a generator that
pauses at ``gpu.barrier`` until all threads of its block reach it. Float arithmetic
is done in NumPy scalars of the IR's types. It checks what a device would not:
each memref index against its bounds, reads of device memory nothing wrote (fresh
allocations hold NaN, or a marker for integers), use after ``gpu.dealloc``, and
barriers that not every thread of a block reaches. Slow (pure Python): for small
shapes only. What it cannot check is below the IR: NVVM codegen, PTX, the driver."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np

from compiler.gpu import GpuTarget
from compiler.gpu_memory import DeviceArray
from compiler.jit import _boundary_arrays, _flatten, _unflatten, trace
from compiler.lowering import build_module

BARRIER = object()
UNINITIALIZED_INT = 0x5A5A5A5A  # what a fresh integer device buffer holds


class EmulationError(RuntimeError):
    pass


# --------------------------------------------------------------------------- memory


class Buffer:
    def __init__(self, data: np.ndarray, name: str):
        self.data = data  # flat
        self.name = name
        self.freed = False


class View:
    """A strided memref: buffer, offset, sizes, strides (elements)."""

    __slots__ = ("buf", "offset", "sizes", "strides")

    def __init__(self, buf: Buffer, offset: int, sizes: tuple, strides: tuple):
        self.buf, self.offset, self.sizes, self.strides = buf, offset, tuple(sizes), tuple(strides)
        if all(s > 0 for s in self.sizes):
            low = offset + sum(st * (sz - 1) for st, sz in zip(self.strides, self.sizes) if st < 0)
            high = offset + sum(st * (sz - 1) for st, sz in zip(self.strides, self.sizes) if st > 0)
            if low < 0 or high >= buf.data.size:
                raise EmulationError(f"view {self.sizes}/{self.strides}+{offset} exceeds buffer {buf.name} of {buf.data.size}")

    def flat(self, idx) -> int:
        if self.buf.freed:
            raise EmulationError(f"access to {self.buf.name} after gpu.dealloc")
        pos = self.offset
        for i, size, stride in zip(idx, self.sizes, self.strides):
            if not 0 <= i < size:
                raise EmulationError(f"index {tuple(idx)} out of bounds for memref of shape {self.sizes} ({self.buf.name})")
            pos += i * stride
        return pos

    def load(self, idx):
        return self.buf.data[self.flat(idx)]

    def store(self, idx, value):
        self.buf.data[self.flat(idx)] = value

    def elements(self) -> np.ndarray:
        """The viewed elements as a fresh dense array."""
        out = np.empty(self.sizes, self.buf.data.dtype)
        for idx in np.ndindex(*self.sizes):
            out[idx] = self.buf.data[self.flat(idx)]
        return out

    def assign(self, values: np.ndarray):
        for idx in np.ndindex(*self.sizes):
            self.buf.data[self.flat(idx)] = values[idx]


def dense_view(array: np.ndarray, name: str) -> View:
    flat = np.ascontiguousarray(array).reshape(-1)
    strides = [int(np.prod(array.shape[i + 1:], dtype=np.int64)) for i in range(array.ndim)]
    return View(Buffer(flat, name), 0, array.shape, strides)


_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i1": np.bool_, "i8": np.int8,
           "i16": np.int16, "i32": np.int32, "i64": np.int64, "index": np.int64}


def element_dtype(type_text: str):
    m = re.match(r"memref<(?:[\d?]+x)*(\w+)", type_text)
    return _DTYPES[m.group(1)]


def fresh_buffer(type_text: str, sizes, name: str) -> Buffer:
    dtype = element_dtype(type_text)
    n = int(np.prod(sizes, dtype=np.int64))
    if np.issubdtype(dtype, np.floating):
        data = np.full(n, np.nan, dtype)
    elif dtype == np.bool_:
        data = np.ones(n, dtype)
    else:
        data = np.full(n, UNINITIALIZED_INT, dtype) if np.iinfo(dtype).max >= UNINITIALIZED_INT else np.full(n, 0x5A, dtype)
    return Buffer(data, name)


def memref_shape(type_text: str) -> list:
    m = re.match(r"memref<((?:[\d?]+x)*)", type_text)
    return [None if d == "?" else int(d) for d in m.group(1).split("x")[:-1]] if m.group(1) else []


# --------------------------------------------------------------------------- scalar semantics

_INT_WIDTH = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64}


def _wrap(value: int, width: int) -> int:
    """Two's-complement wrap to ``width`` bits, as a signed Python int."""
    value = int(value)  # loads give NumPy integers, which would overflow below
    if width == 1:
        return int(bool(value & 1))
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def _truncated_div(x: int, y: int) -> int:
    """LLVM's ``sdiv`` on Python ints: the quotient rounded toward zero, exactly."""
    q = abs(x) // abs(y)
    return q if (x < 0) == (y < 0) else -q


class _Poison:
    """LLVM's poison: what fptosi/fptoui give for a value the result type cannot hold. Only
    ``arith.select`` may carry it (and drop it when it picks the other operand); any other use raises."""

    def _used(self, *args):
        raise EmulationError("a poison value (an out-of-range float -> int conversion) was used")

    __int__ = __float__ = __index__ = __bool__ = __array__ = _used


POISON = _Poison()


def _unsigned(value: int, width: int) -> int:
    return int(value) & ((1 << width) - 1) if width > 1 else int(bool(value))


_CMPI = {
    "eq": lambda a, b, w: a == b, "ne": lambda a, b, w: a != b,
    "slt": lambda a, b, w: a < b, "sle": lambda a, b, w: a <= b, "sgt": lambda a, b, w: a > b, "sge": lambda a, b, w: a >= b,
    "ult": lambda a, b, w: _unsigned(a, w) < _unsigned(b, w), "ule": lambda a, b, w: _unsigned(a, w) <= _unsigned(b, w),
    "ugt": lambda a, b, w: _unsigned(a, w) > _unsigned(b, w), "uge": lambda a, b, w: _unsigned(a, w) >= _unsigned(b, w),
}
_CMPI_CODES = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
_CMPF_CODES = ["false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true"]


def _cmpf(pred: str, a, b) -> bool:
    unordered = math.isnan(a) or math.isnan(b)
    if pred == "false":
        return False
    if pred == "true":
        return True
    if pred == "ord":
        return not unordered
    if pred == "uno":
        return unordered
    rel = {"eq": a == b, "gt": a > b, "ge": a >= b, "lt": a < b, "le": a <= b, "ne": a != b}[pred[1:]]
    return (not unordered and rel) if pred[0] == "o" else (unordered or rel)


def _float_binary(name):
    ops = {
        "arith.addf": lambda a, b: a + b, "arith.subf": lambda a, b: a - b, "arith.mulf": lambda a, b: a * b,
        "arith.divf": lambda a, b: a / b, "arith.remf": lambda a, b: np.fmod(a, b),
        "arith.maximumf": lambda a, b: np.maximum(a, b), "arith.minimumf": lambda a, b: np.minimum(a, b),
        "arith.maxnumf": lambda a, b: np.fmax(a, b), "arith.minnumf": lambda a, b: np.fmin(a, b),
        "math.powf": lambda a, b: np.power(a, b), "math.atan2": lambda a, b: np.arctan2(a, b),
        "math.copysign": lambda a, b: np.copysign(a, b),
    }
    return ops.get(name)


def _fma(a, b, c, t):
    """a * b + c rounded once (exact rationals; only a tie between two floats could round twice)."""
    values = [float(v) for v in (a, b, c)]
    if not all(math.isfinite(v) for v in values):
        with np.errstate(all="ignore"):
            return t(np.float64(values[0]) * values[1] + values[2])
    exact = Fraction(values[0]) * Fraction(values[1]) + Fraction(values[2])
    try:
        return t(float(exact))
    except OverflowError:
        return t(math.copysign(math.inf, exact))


_FLOAT_UNARY = {
    "arith.negf": np.negative, "math.absf": np.abs, "math.exp": np.exp, "math.exp2": np.exp2, "math.expm1": np.expm1,
    "math.log": np.log, "math.log2": np.log2, "math.log10": np.log10, "math.log1p": np.log1p, "math.sqrt": np.sqrt,
    "math.rsqrt": lambda a: type(a)(1) / np.sqrt(a), "math.tanh": np.tanh, "math.sin": np.sin, "math.cos": np.cos,
    "math.tan": np.tan, "math.atan": np.arctan, "math.floor": np.floor, "math.ceil": np.ceil,
    "math.erf": lambda a: type(a)(math.erf(float(a))), "math.round": np.round, "math.trunc": np.trunc,
    "math.sinh": np.sinh, "math.cosh": np.cosh, "math.asin": np.arcsin, "math.acos": np.arccos,
    "math.asinh": np.arcsinh, "math.acosh": np.arccosh, "math.atanh": np.arctanh, "math.cbrt": np.cbrt,
    "math.roundeven": np.rint,
}


# --------------------------------------------------------------------------- compiling ops to closures


class _Slots:
    def __init__(self):
        self.index: dict = {}

    def of(self, value) -> int:
        slot = self.index.get(value)
        if slot is None:
            slot = self.index[value] = len(self.index)
        return slot


def _attr(op, name):
    return op.attributes[name] if name in op.attributes else None


def _int_attr(op, name) -> int:
    from mlir import ir
    return ir.IntegerAttr(op.attributes[name]).value


def _dense_i64(op, name) -> list[int]:
    from mlir import ir
    return list(ir.DenseI64ArrayAttr(op.attributes[name]))


def _constant_value(op):
    from mlir import ir
    attr = op.attributes["value"]
    t = str(op.results[0].type)
    if t in _INT_WIDTH:  # signless: the attribute may hold the unsigned reading
        return _wrap(ir.IntegerAttr(attr).value, _INT_WIDTH[t]) if t != "i1" else bool(ir.IntegerAttr(attr).value)
    if t in ("f16", "f32", "f64"):
        return _DTYPES[t](ir.FloatAttr(attr).value)
    raise EmulationError(f"constant of type {t} is not emulated")


class Compiler:
    """Turns a region's ops into a list of (is_generator, closure) over a slot list ``env``."""

    def __init__(self, slots: _Slots):
        self.slots = slots

    def block(self, block) -> list:
        return [self.op(op.operation) for op in block.operations]

    def op(self, op):
        name = op.name
        s = self.slots
        ins = [s.of(v) for v in op.operands]
        outs = [s.of(r) for r in op.results]
        loc = str(op.location)

        def plain(fn):
            def run(env, ctx):
                try:
                    fn(env, ctx)
                except EmulationError as err:
                    raise EmulationError(f"{name} at {loc}: {err}") from None
            return (False, run)

        if name == "arith.constant":
            value = _constant_value(op)
            o = outs[0]
            return plain(lambda env, ctx: env.__setitem__(o, value))
        if name in ("arith.addi", "arith.subi", "arith.muli", "arith.andi", "arith.ori", "arith.xori",
                    "arith.divui", "arith.remui", "arith.divsi", "arith.remsi", "arith.ceildivui", "arith.ceildivsi",
                    "arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui", "arith.shli", "arith.shrui", "arith.shrsi"):
            w = _INT_WIDTH[str(op.results[0].type)]
            a, b, o = ins[0], ins[1], outs[0]
            f = {
                "arith.addi": lambda x, y: x + y, "arith.subi": lambda x, y: x - y, "arith.muli": lambda x, y: x * y,
                "arith.andi": lambda x, y: x & y, "arith.ori": lambda x, y: x | y, "arith.xori": lambda x, y: x ^ y,
                "arith.divui": lambda x, y: _unsigned(x, w) // _unsigned(y, w),
                "arith.remui": lambda x, y: _unsigned(x, w) % _unsigned(y, w),
                "arith.divsi": _truncated_div, "arith.remsi": lambda x, y: x - y * _truncated_div(x, y),
                "arith.ceildivui": lambda x, y: -(-_unsigned(x, w) // _unsigned(y, w)),
                "arith.ceildivsi": lambda x, y: -(-x // y), "arith.maxsi": max, "arith.minsi": min,
                "arith.maxui": lambda x, y: x if _unsigned(x, w) >= _unsigned(y, w) else y,
                "arith.minui": lambda x, y: x if _unsigned(x, w) <= _unsigned(y, w) else y,
                "arith.shli": lambda x, y: x << y, "arith.shrui": lambda x, y: _unsigned(x, w) >> y,
                "arith.shrsi": lambda x, y: x >> y,
            }[name]
            if w == 1:
                return plain(lambda env, ctx: env.__setitem__(o, bool(f(int(env[a]), int(env[b])) & 1)))
            if name in ("arith.shli", "arith.shrui", "arith.shrsi"):
                def shift(env, ctx):
                    if _unsigned(env[b], w) >= w:
                        raise EmulationError(f"{name} by {_unsigned(env[b], w)} of an i{w}: poison in LLVM")
                    env[o] = _wrap(f(int(env[a]), _unsigned(env[b], w)), w)
                return plain(shift)
            g = f
            f = lambda x, y: g(int(x), int(y))  # noqa: E731  (Python ints: wrap explicitly, never overflow)
            if name in ("arith.divui", "arith.remui", "arith.divsi", "arith.remsi", "arith.ceildivui", "arith.ceildivsi"):
                signed = name.endswith("si")

                def div(env, ctx):
                    if env[b] == 0:
                        raise EmulationError(f"{name}: integer division by zero")
                    if signed and env[b] == -1 and int(env[a]) == -(1 << (w - 1)):
                        raise EmulationError(f"{name}: MIN / -1 overflows (undefined in LLVM)")
                    env[o] = _wrap(f(env[a], env[b]), w)
                return plain(div)
            return plain(lambda env, ctx: env.__setitem__(o, _wrap(f(env[a], env[b]), w)))
        if name == "arith.cmpi":
            pred = _CMPI_CODES[_int_attr(op, "predicate")]
            w = _INT_WIDTH[str(op.operands[0].type)]
            f, a, b, o = _CMPI[pred], ins[0], ins[1], outs[0]
            return plain(lambda env, ctx: env.__setitem__(o, bool(f(int(env[a]), int(env[b]), w))))
        if name == "arith.cmpf":
            pred = _CMPF_CODES[_int_attr(op, "predicate")]
            a, b, o = ins[0], ins[1], outs[0]
            return plain(lambda env, ctx: env.__setitem__(o, _cmpf(pred, env[a], env[b])))
        if name == "arith.select":
            c, a, b, o = ins[0], ins[1], ins[2], outs[0]
            return plain(lambda env, ctx: env.__setitem__(o, env[a] if env[c] else env[b]))
        fb = _float_binary(name)
        if fb is not None:
            a, b, o = ins[0], ins[1], outs[0]
            t = _DTYPES[str(op.results[0].type)]

            def binary(env, ctx):
                with np.errstate(all="ignore"):
                    env[o] = t(fb(env[a], env[b]))
            return plain(binary)
        if name in _FLOAT_UNARY:
            f, a, o = _FLOAT_UNARY[name], ins[0], outs[0]
            t = _DTYPES[str(op.results[0].type)]

            def unary(env, ctx):
                with np.errstate(all="ignore"):
                    env[o] = t(f(env[a]))
            return plain(unary)
        if name == "math.fma":
            a, b, c, o = ins[0], ins[1], ins[2], outs[0]
            t = _DTYPES[str(op.results[0].type)]
            return plain(lambda env, ctx: env.__setitem__(o, _fma(env[a], env[b], env[c], t)))
        if name == "math.ctpop":
            w, a, o = _INT_WIDTH[str(op.results[0].type)], ins[0], outs[0]
            return plain(lambda env, ctx: env.__setitem__(o, _wrap(bin(_unsigned(env[a], w)).count("1"), w)))
        if name == "math.absi":
            w, a, o = _INT_WIDTH[str(op.results[0].type)], ins[0], outs[0]
            return plain(lambda env, ctx: env.__setitem__(o, _wrap(abs(int(env[a])), w)))  # |MIN| wraps to MIN
        if name in ("math.fpowi", "math.ipowi"):
            a, b, o = ins[0], ins[1], outs[0]
            t = _DTYPES[str(op.results[0].type)]

            w = _INT_WIDTH.get(str(op.results[0].type))

            def powi(env, ctx):
                if name == "math.fpowi":
                    with np.errstate(all="ignore"):
                        env[o] = t(np.power(env[a], t(env[b])))
                    return
                if int(env[b]) < 0:
                    raise EmulationError("math.ipowi with a negative exponent (the compiler must refuse or avoid it)")
                env[o] = _wrap(pow(int(env[a]), int(env[b]), 1 << w), w)
            return plain(powi)
        if name in ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp"):
            t = _DTYPES[str(op.results[0].type)]
            a, o = ins[0], outs[0]
            if name == "arith.uitofp":
                w = _INT_WIDTH[str(op.operands[0].type)]
                return plain(lambda env, ctx: env.__setitem__(o, t(_unsigned(int(env[a]), w))))

            def convert(env, ctx):
                with np.errstate(over="ignore"):  # truncf beyond the narrower type's range is inf, as on the GPU
                    env[o] = t(env[a])
            return plain(convert)
        if name in ("arith.fptosi", "arith.fptoui"):
            w = _INT_WIDTH[str(op.results[0].type)]
            a, o = ins[0], outs[0]

            lo, hi = (-(1 << (w - 1)), 1 << (w - 1)) if name == "arith.fptosi" else (0, 1 << w)

            def fptoi(env, ctx):
                v = env[a]
                env[o] = _wrap(int(v), w) if np.isfinite(v) and lo <= int(v) < hi else POISON
            return plain(fptoi)
        if name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci"):
            w_in = _INT_WIDTH[str(op.operands[0].type)]
            w = _INT_WIDTH[str(op.results[0].type)]
            a, o = ins[0], outs[0]
            if name in ("arith.extui", "arith.index_castui"):
                return plain(lambda env, ctx: env.__setitem__(o, _wrap(_unsigned(int(env[a]), w_in), w)))
            if w == 1:
                return plain(lambda env, ctx: env.__setitem__(o, bool(int(env[a]) & 1)))
            return plain(lambda env, ctx: env.__setitem__(o, _wrap(int(env[a]), w)))
        if name == "arith.bitcast":
            src, dst = _DTYPES[str(op.operands[0].type)], _DTYPES[str(op.results[0].type)]
            a, o = ins[0], outs[0]
            return plain(lambda env, ctx: env.__setitem__(o, np.array(env[a], src).view(dst)[()]))
        if name == "memref.load":
            m, idx, o = ins[0], ins[1:], outs[0]
            return plain(lambda env, ctx: env.__setitem__(o, env[m].load([env[i] for i in idx])))
        if name == "memref.store":
            v, m, idx = ins[0], ins[1], ins[2:]
            return plain(lambda env, ctx: env[m].store([env[i] for i in idx], env[v]))
        if name == "memref.dim":
            m, i, o = ins[0], ins[1], outs[0]
            return plain(lambda env, ctx: env.__setitem__(o, env[m].sizes[env[i]]))
        if name in ("gpu.thread_id", "gpu.block_id", "gpu.block_dim", "gpu.grid_dim"):
            dim = "xyz".index(str(op.attributes["dimension"]).split()[-1].rstrip(">"))
            key = name.split(".")[1]
            o = outs[0]
            return plain(lambda env, ctx: env.__setitem__(o, ctx[key][dim]))
        if name == "gpu.barrier":
            return (True, "barrier")
        if name in ("scf.yield", "gpu.return", "gpu.terminator", "func.return"):
            return (False, ("yield", ins))
        if name == "scf.for":
            lb, ub, step, inits = ins[0], ins[1], ins[2], ins[3:]
            body = op.regions[0].blocks[0]
            iv = s.of(body.arguments[0])
            carried = [s.of(a) for a in list(body.arguments)[1:]]
            code = self.block(body)
            return (True, ("for", lb, ub, step, inits, iv, carried, code, outs))
        if name == "scf.if":
            cond = ins[0]
            then = self.block(op.regions[0].blocks[0])
            other = self.block(op.regions[1].blocks[0]) if len(op.regions) > 1 and op.regions[1].blocks else []
            return (True, ("if", cond, then, other, outs))
        raise EmulationError(f"op {name} is not emulated (at {loc})")


def execute(code, env, ctx):
    """Run compiled ops; a generator that yields at every barrier. Returns the yielded values."""
    for is_structured, item in code:
        if not is_structured:
            if type(item) is tuple:  # a terminator
                return [env[i] for i in item[1]]
            item(env, ctx)
            continue
        if item == "barrier":
            yield BARRIER
            continue
        kind = item[0]
        if kind == "for":
            _, lb, ub, step, inits, iv, carried, body, outs = item
            values = [env[i] for i in inits]
            for i in range(env[lb], env[ub], env[step]):
                env[iv] = i
                for slot, v in zip(carried, values):
                    env[slot] = v
                values = yield from execute(body, env, ctx)
            for slot, v in zip(outs, values):
                env[slot] = v
        else:
            _, cond, then, other, outs = item
            values = yield from execute(then if env[cond] else other, env, ctx)
            for slot, v in zip(outs, values or []):
                env[slot] = v
    return []


# --------------------------------------------------------------------------- kernels and host


class Kernel:
    def __init__(self, func_op, slots: _Slots):
        from mlir import ir
        block = func_op.regions[0].blocks[0]
        n_workgroup = _int_attr(func_op, "workgroup_attributions") if "workgroup_attributions" in func_op.attributes else 0
        args = list(block.arguments)
        self.params = [slots.of(a) for a in args[: len(args) - n_workgroup]]
        self.workgroup = [(slots.of(a), str(a.type)) for a in args[len(args) - n_workgroup:]]
        self.code = Compiler(slots).block(block)
        self.slots = slots
        self.name = ir.StringAttr(func_op.attributes["sym_name"]).value

    def launch(self, grid, block, operands):
        template = [None] * len(self.slots.index)
        for slot, value in zip(self.params, operands):
            template[slot] = value
        for bz in range(grid[2]):
            for by in range(grid[1]):
                for bx in range(grid[0]):
                    self._run_block((bx, by, bz), grid, block, template)

    def _run_block(self, bid, grid, block, template):
        env0 = list(template)
        for slot, type_text in self.workgroup:
            shape = memref_shape(type_text)
            env0[slot] = View(fresh_buffer(type_text, shape, f"{self.name}:workgroup"), 0, shape,
                              [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))])
        threads = []
        for tz in range(block[2]):
            for ty in range(block[1]):
                for tx in range(block[0]):
                    ctx = {"thread_id": (tx, ty, tz), "block_id": bid, "block_dim": block, "grid_dim": grid}
                    threads.append(execute(self.code, list(env0), ctx))
        live = threads
        while live:
            waiting, finished = [], 0
            for t in live:
                try:
                    next(t)
                    waiting.append(t)
                except StopIteration:
                    finished += 1
            if waiting and finished:
                raise EmulationError(f"kernel {self.name}: {finished} threads returned while {len(waiting)} wait at a barrier")
            live = waiting


def _global_value(op) -> np.ndarray:
    """A ``memref.global`` constant's initial value as a (signless) array."""
    from mlir import ir
    t = str(ir.TypeAttr(op.attributes["type"]).value)
    shape = [d for d in memref_shape(t)]
    dtype = element_dtype(t)
    attr = ir.DenseElementsAttr(op.attributes["initial_value"])
    if attr.is_splat:
        splat = attr.get_splat_value()
        value = ir.FloatAttr(splat).value if np.issubdtype(dtype, np.floating) else ir.IntegerAttr(splat).value
        return np.full(shape, value, dtype)
    return np.array(attr).astype(dtype).reshape(shape)


class Emulator:
    """A module at the GPU target's ``kernels`` stage, ready to run on the CPU."""

    def __init__(self, module, func_name: str):
        self.slots = _Slots()
        self.kernels = {}
        self.globals = {}
        host = None
        for op in module.body.operations:
            op = op.operation
            if op.name == "gpu.module":
                mod_name = str(op.attributes["sym_name"]).strip('"')
                for inner in op.regions[0].blocks[0].operations:
                    inner = inner.operation
                    if inner.name == "gpu.func":
                        k = Kernel(inner, self.slots)
                        self.kernels[(mod_name, k.name)] = k
            elif op.name == "func.func" and str(op.attributes["sym_name"]).strip('"') == func_name:
                host = op
            elif op.name == "memref.global":
                self.globals[str(op.attributes["sym_name"]).strip('"')] = _global_value(op)
        if host is None:
            raise EmulationError(f"no host function @{func_name}")
        host_block = host.regions[0].blocks[0]
        self.host_args = [self.slots.of(a) for a in host_block.arguments]
        self.host_program = self._prepare(host_block)  # every value has its slot from here on
        self.launches = 0

    def _prepare(self, block) -> list:
        """(op, compiled arith closure or None, program of its body or None) per host op."""
        program = []
        for op in block.operations:
            op = op.operation
            for result in op.results:
                self.slots.of(result)
            body = None
            if op.regions and op.regions[0].blocks:
                inner = op.regions[0].blocks[0]
                for arg in inner.arguments:
                    self.slots.of(arg)
                body = self._prepare(inner)
            arith = Compiler(self.slots).op(op)[1] if op.name.startswith("arith.") else None
            program.append((op, arith, body))
        return program

    def run(self, arrays: list[np.ndarray]) -> None:
        env = [None] * len(self.slots.index)
        views = []
        for i, (slot, array) in enumerate(zip(self.host_args, arrays)):
            view = dense_view(array, f"arg{i}")
            env[slot] = view
            views.append(view)
        self._run_host(self.host_program, env)
        for array, view in zip(arrays, views):  # results were written into the argument buffers
            array[...] = view.buf.data.reshape(array.shape)

    def _run_host(self, program, env):
        for op, arith, body in program:
            if arith is not None:
                arith(env, {})
            else:
                self._host_op(op, body, env)

    def _get(self, env, value):
        return env[self.slots.index[value]]

    def _set(self, env, value, result):
        env[self.slots.index[value]] = result

    def _host_op(self, op, body, env):
        from mlir import ir
        name = op.name
        get = lambda v: self._get(env, v)  # noqa: E731
        if name == "memref.dim":
            self._set(env, op.results[0], get(op.operands[0]).sizes[get(op.operands[1])])
        elif name == "gpu.alloc":
            t = str(op.results[0].type)
            shape = memref_shape(t)
            dynamic = iter(get(v) for v in op.operands)
            shape = [d if d is not None else next(dynamic) for d in shape]
            strides = [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape))]
            self._set(env, op.results[0], View(fresh_buffer(t, shape, f"alloc@{op.location}"), 0, shape, strides))
        elif name == "memref.get_global":
            value = self.globals[str(op.attributes["name"]).lstrip("@")]
            self._set(env, op.results[0], dense_view(value.copy(), f"global {op.attributes['name']}"))
        elif name == "gpu.dealloc":
            get(op.operands[0]).buf.freed = True
        elif name == "gpu.memcpy":
            dst, src = get(op.operands[0]), get(op.operands[1])
            if dst.sizes != src.sizes:
                raise EmulationError(f"gpu.memcpy between shapes {src.sizes} and {dst.sizes}")
            dst.assign(src.elements())
        elif name == "gpu.launch_func":
            self._launch(op, env)
        elif name == "memref.cast":
            self._set(env, op.results[0], get(op.operands[0]))
        elif name == "memref.transpose":
            v = get(op.operands[0])
            perm = ir.AffineMapAttr(op.attributes["permutation"]).value
            order = [int(str(e).lstrip("d")) for e in perm.results]
            self._set(env, op.results[0], View(v.buf, v.offset, [v.sizes[i] for i in order], [v.strides[i] for i in order]))
        elif name == "memref.subview":
            self._subview(op, env)
        elif name == "memref.expand_shape":
            v = get(op.operands[0])
            groups = [list(ir.ArrayAttr(g)) for g in ir.ArrayAttr(op.attributes["reassociation"])]
            out_shape = memref_shape(str(op.results[0].type))
            if None in out_shape:
                raise EmulationError("dynamic expand_shape is not emulated")
            strides = [0] * len(out_shape)
            for src_dim, group in enumerate(groups):
                dims = [ir.IntegerAttr(d).value for d in group]
                stride = v.strides[src_dim]
                for d in reversed(dims):
                    strides[d] = stride
                    stride *= out_shape[d]
            self._set(env, op.results[0], View(v.buf, v.offset, out_shape, strides))
        elif name == "memref.collapse_shape":
            v = get(op.operands[0])
            groups = [[ir.IntegerAttr(d).value for d in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
            sizes, strides = [], []
            for group in groups:
                moving = [d for d in group if v.sizes[d] != 1]  # unit dimensions' strides are never used
                for a, b in zip(moving, moving[1:]):
                    if v.strides[a] != v.strides[b] * v.sizes[b]:
                        raise EmulationError("collapse_shape of a non-contiguous group")
                sizes.append(int(np.prod([v.sizes[d] for d in group], dtype=np.int64)))
                # the innermost dimension that moves: a trailing unit dimension's stride says nothing (a column
                # of a matrix, [2, 1] viewed as 2x1 with strides [2, 1], collapses to stride 2, not 1)
                strides.append(v.strides[moving[-1]] if moving else v.strides[group[-1]] if group else 1)
            self._set(env, op.results[0], View(v.buf, v.offset, sizes, strides))
        elif name == "scf.for":  # a sequential loop of launches (a reduction over an outer axis)
            lb, ub, step = (get(v) for v in list(op.operands)[:3])
            if len(op.operands) > 3:
                raise EmulationError("host scf.for with iter_args is not emulated")
            iv = op.regions[0].blocks[0].arguments[0]
            for i in range(lb, ub, step):
                self._set(env, iv, i)
                self._run_host(body, env)
        elif name in ("func.return", "scf.yield"):
            pass
        else:
            raise EmulationError(f"host op {name} is not emulated (at {op.location})")

    def _subview(self, op, env):
        from mlir import ir
        v = self._get(env, op.operands[0])
        dynamic = iter(self._get(env, x) for x in list(op.operands)[1:])
        dyn = -(2 ** 63)

        def resolve(values):
            return [next(dynamic) if x == dyn else x for x in values]

        offsets = resolve(_dense_i64(op, "static_offsets"))
        sizes = resolve(_dense_i64(op, "static_sizes"))
        steps = resolve(_dense_i64(op, "static_strides"))
        offset = v.offset + sum(o * s for o, s in zip(offsets, v.strides))
        strides = [s * k for s, k in zip(v.strides, steps)]
        out_rank = ir.MemRefType(op.results[0].type).rank
        if out_rank < len(sizes):  # rank-reducing: drop unit dimensions
            keep = [i for i, size in enumerate(sizes) if size != 1]
            while len(keep) < out_rank:
                keep.append(next(i for i in range(len(sizes)) if i not in keep))
            keep.sort()
            sizes, strides = [sizes[i] for i in keep], [strides[i] for i in keep]
        self._set(env, op.results[0], View(v.buf, offset, sizes, strides))

    def _launch(self, op, env):
        from mlir import ir
        mod_name, kern_name = [part.strip("@") for part in str(op.attributes["kernel"]).split("::")]
        operands = [self._get(env, v) for v in op.operands]
        # operand groups: async dependencies, grid x/y/z, block x/y/z, cluster x/y/z, dynamic shared
        # memory size, kernel operands, async object
        segments = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        if segments[7:11] != [0, 0, 0, 0]:
            raise EmulationError("cluster launches and dynamic shared memory are not emulated")
        start = segments[0]
        grid, block = tuple(operands[start:start + 3]), tuple(operands[start + 3:start + 6])
        first = sum(segments[:-2])
        self.launches += 1
        self.kernels[(mod_name, kern_name)].launch(grid, block, operands[first:first + segments[-2]])


class ResidentArray(DeviceArray):
    """Stands for a ``DeviceArray`` holding ``host``: the function is compiled with that argument
    device-resident, and the emulator (whose device memory is host memory) reads ``host``."""

    def __init__(self, host: np.ndarray):
        super().__init__(None, host.shape, host.dtype)
        self.host = np.ascontiguousarray(host)


def signless(array: np.ndarray) -> np.ndarray:
    """The array as the IR stores it: bools as i8, unsigned integers as signless (signed) ones."""
    if array.dtype == np.bool_:
        return array.view(np.int8)
    if array.dtype.kind == "u":
        return array.view(np.dtype(f"i{array.dtype.itemsize}"))
    return array


def emulate(fn, *args, **static):
    """``fn`` compiled for the GPU target and run on the CPU emulator: (what the compiled function
    returns, the Emulator). ``ResidentArray`` arguments compile as device-resident."""
    inputs, outputs_nodes, out_tree, _ = trace(fn, args, static)
    target = GpuTarget()
    lowered = build_module(inputs, outputs_nodes, **target.lowering_form())
    module = target.to_kernels(target.optimized(lowered.text), lowered)
    leaves, paths = [], []
    for i, a in enumerate(args):
        _flatten(a, f"#{i}", leaves, paths)
    leaves = [leaf.host if isinstance(leaf, ResidentArray) else leaf for leaf in leaves]
    arrays = [signless(a.copy()) for a in _boundary_arrays(leaves)]
    outputs = [np.empty(shape, dtype) for shape, dtype in lowered.out_specs]
    storage = [signless(o) for o in outputs]
    with module.context:
        emulator = Emulator(module, lowered.func_name)
        # hidden constants copied: the emulator writes every buffer back, and a constant may be read-only
        # (np.broadcast_to's result when nothing is broadcast)
        emulator.run(arrays + [signless(np.array(h, order="C")) for h in lowered.hidden] + storage)
    return _unflatten(out_tree, iter(outputs)), emulator
