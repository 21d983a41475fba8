"""The primitive operations: the single place that defines each op's semantics —
its shape rule, dtype rule, NumPy evaluation (used for constant folding and for
op-by-op divergence localization) and its lowering to MLIR ``linalg`` on tensors.
Everything the tracer accepts is decomposed into these few primitives."""

from __future__ import annotations

import contextlib
import operator
import threading
from dataclasses import dataclass
from typing import Callable

import numpy as np

from . import dtypes as dt
from .graph import Node, const_node, user_location

# --------------------------------------------------------------------------- scalar code
# Scalar MLIR for one element, by dtype kind: "f" float, "i" signed, "u" unsigned, "b" bool.

_BINARY = {
    "add": {"f": "arith.addf", "i": "arith.addi", "u": "arith.addi", "b": "arith.ori"},
    "subtract": {"f": "arith.subf", "i": "arith.subi", "u": "arith.subi"},
    "multiply": {"f": "arith.mulf", "i": "arith.muli", "u": "arith.muli", "b": "arith.andi"},
    "divide": {"f": "arith.divf"},
    "power": {"f": "math.powf", "i": None, "u": None},  # integers: _integer_power
    "bitwise_and": {"i": "arith.andi", "u": "arith.andi", "b": "arith.andi"},
    "bitwise_or": {"i": "arith.ori", "u": "arith.ori", "b": "arith.ori"},
    "bitwise_xor": {"i": "arith.xori", "u": "arith.xori", "b": "arith.xori"},
    "maximum": {"f": None, "i": "arith.maxsi", "u": "arith.maxui", "b": "arith.ori"},  # floats: _float_extremum
    "minimum": {"f": None, "i": "arith.minsi", "u": "arith.minui", "b": "arith.andi"},
    "fmax": {"f": None, "i": "arith.maxsi", "u": "arith.maxui", "b": "arith.ori"},  # floats: _float_nan_ignoring_extremum
    "fmin": {"f": None, "i": "arith.minsi", "u": "arith.minui", "b": "arith.andi"},
    "arctan2": {"f": "math.atan2"},
    "copysign": {"f": "math.copysign"},
}
_COMPARE = {  # (float predicate, signed predicate, unsigned/bool predicate)
    "greater": ("ogt", "sgt", "ugt"),
    "greater_equal": ("oge", "sge", "uge"),
    "less": ("olt", "slt", "ult"),
    "less_equal": ("ole", "sle", "ule"),
    "equal": ("oeq", "eq", "eq"),
    "not_equal": ("une", "ne", "ne"),  # NaN != NaN is True, as in NumPy
}
_UNARY_FLOAT = {"exp": "math.exp", "tanh": "math.tanh", "sqrt": "math.sqrt", "log": "math.log",
                "sin": "math.sin", "cos": "math.cos", "exp2": "math.exp2", "expm1": "math.expm1",
                "log2": "math.log2", "log10": "math.log10", "log1p": "math.log1p", "tan": "math.tan",
                "arcsin": "math.asin", "arccos": "math.acos", "arctan": "math.atan", "sinh": "math.sinh",
                "cosh": "math.cosh", "arcsinh": "math.asinh", "arccosh": "math.acosh", "arctanh": "math.atanh",
                "cbrt": "math.cbrt", "rint": "math.roundeven"}
# NumPy has integer and bool loops for these too, where every value is finite: a constant
_FLOAT_CLASS = {"isnan": False, "isinf": False, "isfinite": True}
# rounding: a float op; integers and bools are already integral (NumPy's integer loops are the identity)
_ROUNDING = {"floor": "math.floor", "ceil": "math.ceil", "trunc": "math.trunc"}
_DIVISION = ("floor_divide", "remainder", "fmod")
_LOGICAL = {"logical_and": "arith.andi", "logical_or": "arith.ori", "logical_xor": "arith.xori", "logical_not": None}


def _kind(dtype) -> str:
    k = np.dtype(dtype).kind
    return {"f": "f", "i": "i", "u": "u", "b": "b"}[k]


def scalar_const(rb, value, dtype) -> str:
    """An ``arith.constant`` of one element inside a region (floats as exact bit patterns)."""
    t = dt.mlir_type(dtype)
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        bits = np.asarray(value, dtype).view(f"u{dtype.itemsize}")
        text = f"0x{int(bits):0{dtype.itemsize * 2}X}"
    elif dtype.kind == "b":
        text = "1" if bool(value) else "0"  # `arith.constant true : i1` does not parse; `1 : i1` does
    else:
        v = int(np.asarray(value, dtype))
        if dtype.kind == "u" and v >= 2 ** (dtype.itemsize * 8 - 1):
            v -= 2 ** (dtype.itemsize * 8)  # signless storage of the same bits
        text = str(v)
    return rb.op(f"arith.constant {text} : {t}")


def cast_scalar(rb, x: str, src, dst) -> str:
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst:
        return x
    ts, td = dt.mlir_type(src), dt.mlir_type(dst)
    if dst.kind == "b":
        if src.kind == "f":
            zero = scalar_const(rb, 0.0, src)
            return rb.op(f"arith.cmpf une, {x}, {zero} : {ts}")
        zero = scalar_const(rb, 0, src)
        return rb.op(f"arith.cmpi ne, {x}, {zero} : {ts}")
    if src.kind == "f" and dst.kind == "f":
        op = "arith.extf" if dst.itemsize > src.itemsize else "arith.truncf"
        return rb.op(f"{op} {x} : {ts} to {td}")
    if dst.kind == "f":
        op = "arith.sitofp" if src.kind == "i" else "arith.uitofp"
        return rb.op(f"{op} {x} : {ts} to {td}")
    if src == np.dtype(np.float16):  # as NumPy converts a half: to float first (exact), then to the integer
        x, src = rb.op(f"arith.extf {x} : f16 to f32"), np.dtype(np.float32)
    if src.kind == "f":
        return _float_to_int(rb, x, src, dst)
    if ts == td:  # int32 <-> uint32: the same bits
        return x
    sbits, dbits = int(ts[1:]), int(td[1:])
    if dbits < sbits:
        return rb.op(f"arith.trunci {x} : {ts} to {td}")
    op = "arith.extsi" if src.kind == "i" else "arith.extui"
    return rb.op(f"{op} {x} : {ts} to {td}")


def _float_to_int(rb, x: str, src, dst) -> str:
    """Truncate toward zero, then wrap to ``dst``'s width, as NumPy does on x86-64: through int32
    for 8-, 16- and signed 32-bit results, through int64 for uint32 and int64, and as an unsigned
    conversion for uint64 values of 2**63 and up. A value outside the range converted through
    (NaN and infinities included) gives that range's minimum (x86's "integer indefinite"), or 0
    from 2**64 up for uint64. NumPy leaves those values to the C compiler and the SIMD unit, so
    they are not promised to match; the point is that LLVM's ``fptosi``/``fptoui`` never see a
    value they would turn into poison."""
    ts, td = dt.mlir_type(src), dt.mlir_type(dst)
    bits = 32 if dst.itemsize < 4 or dst == np.dtype(np.int32) else 64
    tw = f"i{bits}"

    def in_range(lo: float, hi: float) -> str:  # lo <= x < hi, false for NaN
        above = rb.op(f"arith.cmpf oge, {x}, {scalar_const(rb, lo, src)} : {ts}")
        below = rb.op(f"arith.cmpf olt, {x}, {scalar_const(rb, hi, src)} : {ts}")
        return rb.op(f"arith.andi {above}, {below} : i1")

    limit = 2.0 ** (bits - 1)
    indefinite = rb.op(f"arith.constant {-(2 ** (bits - 1))} : {tw}")
    signed = rb.op(f"arith.fptosi {x} : {ts} to {tw}")
    wide = rb.op(f"arith.select {in_range(-limit, limit)}, {signed}, {indefinite} : {tw}")
    if dst == np.dtype(np.uint64):
        zero = rb.op(f"arith.constant 0 : {tw}")
        high = rb.op(f"arith.fptoui {x} : {ts} to {tw}")
        huge = rb.op(f"arith.cmpf oge, {x}, {scalar_const(rb, 2.0 ** 64, src)} : {ts}")
        beyond = rb.op(f"arith.select {huge}, {zero}, {wide} : {tw}")
        wide = rb.op(f"arith.select {in_range(limit, 2.0 ** 64)}, {high}, {beyond} : {tw}")
    if td == tw:
        return wide
    return rb.op(f"arith.trunci {wide} : {tw} to {td}")


def _integer_power(rb, x: str, y: str, dtype) -> str:
    """``x ** y`` modulo 2**bits by square-and-multiply over every bit of ``y``, in an ``scf.for`` over
    the bits: no call, so the same code serves both targets (``math.ipowi`` has no lowering to NVVM, and
    reads an unsigned exponent's top bit as a sign). (Unrolled, the 64 steps of an int64 power with a
    broadcast base sent LLVM's optimizer into minutes of work for a 16-element kernel.) A signed exponent
    is never negative here: arguments are checked on the host, constants when traced, computed ones
    replaced by 0 (see ``_checked_exponent``)."""
    t = dt.mlir_type(dtype)
    bits = np.dtype(dtype).itemsize * 8
    one = scalar_const(rb, 1, dtype)  # the product's start and the exponent's shift
    first, count, step = (rb.op(f"arith.constant {v} : index") for v in (0, bits, 1))
    em = rb.em
    k, acc, square, rest = em.fresh("k"), em.fresh("acc"), em.fresh("sq"), em.fresh("rest")
    bit, product, kept, squared, shifted = (em.fresh("s") for _ in range(5))
    loop = em.fresh("pow")
    # one line: the region's lines each end with the op's location
    rb.lines.append(
        f"{loop}:3 = scf.for {k} = {first} to {count} step {step} "
        f"iter_args({acc} = {one}, {square} = {x}, {rest} = {y}) -> ({t}, {t}, {t}) {{ "
        f"{bit} = arith.trunci {rest} : {t} to i1 "
        f"{product} = arith.muli {acc}, {square} : {t} "
        f"{kept} = arith.select {bit}, {product}, {acc} : {t} "
        f"{squared} = arith.muli {square}, {square} : {t} "
        f"{shifted} = arith.shrui {rest}, {one} : {t} "
        f"scf.yield {kept}, {squared}, {shifted} : {t}, {t}, {t} }}")
    return f"{loop}#0"


def _euclid_steps(bits: int) -> int:
    """An upper bound on the remainder steps of Euclid's algorithm for two ``bits``-wide unsigned numbers
    (plus one that swaps them into order): by Lame's theorem consecutive Fibonacci numbers take the most
    steps, so the index of the largest below 2**bits."""
    a, b, index = 1, 1, 2
    while b < 2**bits:
        a, b, index = b, a + b, index + 1
    return index + 1


def _gcd_lcm(rb, name: str, x: str, y: str, dtype) -> str:
    """NumPy's npy_gcd/npy_lcm: Euclid on the operands' magnitudes as unsigned numbers of the type's
    width (|INT_MIN| is 2**(bits-1) there), the result's bits read back in the type, so gcd(-128, 0)
    of int8 is -128 as in NumPy; lcm is |x| / gcd * |y| modulo 2**bits, 0 where both are 0. The loop is
    an ``scf.for`` of Lame's bound of steps (a step once the remainder is 0 does nothing), so it needs no
    ``scf.while`` and divides only under an ``scf.if`` of a nonzero divisor."""
    t = dt.mlir_type(dtype)
    if np.dtype(dtype).kind == "i":
        x, y = rb.op(f"math.absi {x} : {t}"), rb.op(f"math.absi {y} : {t}")
    zero = scalar_const(rb, 0, dtype)
    first, count, step = (rb.op(f"arith.constant {v} : index") for v in (0, _euclid_steps(np.dtype(dtype).itemsize * 8), 1))
    em = rb.em
    k, a, b, nonzero, rem, loop, branch = (em.fresh(p) for p in ("k", "a", "b", "nz", "rem", "gcd", "step"))
    # the loop carries (a, b) -> (b % a, a) while a != 0; b is the gcd when a reaches 0
    rb.lines.append(
        f"{loop}:2 = scf.for {k} = {first} to {count} step {step} "
        f"iter_args({a} = {x}, {b} = {y}) -> ({t}, {t}) {{ "
        f"{nonzero} = arith.cmpi ne, {a}, {zero} : {t} "
        f"{branch}:2 = scf.if {nonzero} -> ({t}, {t}) {{ "
        f"{rem} = arith.remui {b}, {a} : {t} "
        f"scf.yield {rem}, {a} : {t}, {t} }} else {{ scf.yield {a}, {b} : {t}, {t} }} "
        f"scf.yield {branch}#0, {branch}#1 : {t}, {t} }}")
    gcd = f"{loop}#1"
    if name == "gcd":
        return gcd
    both_zero = rb.op(f"arith.cmpi eq, {gcd}, {zero} : {t}")
    divisor = rb.op(f"arith.select {both_zero}, {scalar_const(rb, 1, dtype)}, {gcd} : {t}")  # 0 / 1 * 0 is 0
    quotient = rb.op(f"arith.divui {x}, {divisor} : {t}")
    return rb.op(f"arith.muli {quotient}, {y} : {t}")


def _shift(rb, name: str, x: str, count: str, dtype) -> str:
    """NumPy's npy_lshift/npy_rshift: the count read as unsigned, a shift by the type's width or more
    (so a negative count too) all bits out -- 0, or a signed right shift's sign fill (-1 for a negative
    x) -- where LLVM's shift by that much would be poison."""
    t, bits = dt.mlir_type(dtype), np.dtype(dtype).itemsize * 8
    in_range = rb.op(f"arith.cmpi ult, {count}, {scalar_const(rb, bits, dtype)} : {t}")
    zero = scalar_const(rb, 0, dtype)
    safe = rb.op(f"arith.select {in_range}, {count}, {zero} : {t}")
    if name == "left_shift":
        op, beyond = "arith.shli", zero
    elif np.dtype(dtype).kind == "i":
        op, beyond = "arith.shrsi", rb.op(f"arith.shrsi {x}, {scalar_const(rb, bits - 1, dtype)} : {t}")
    else:
        op, beyond = "arith.shrui", zero
    shifted = rb.op(f"{op} {x}, {safe} : {t}")
    return rb.op(f"arith.select {in_range}, {shifted}, {beyond} : {t}")


def _bitwise_count(rb, x: str, compute, out) -> str:
    """NumPy's bitwise_count: the one bits of |x| (so -1 has one, |INT_MIN| = 2**(bits-1) one too), as uint8."""
    t = dt.mlir_type(compute)
    if np.dtype(compute).kind == "i":
        x = rb.op(f"math.absi {x} : {t}")
    return cast_scalar(rb, rb.op(f"math.ctpop {x} : {t}"), compute, out)


def _float_extremum(rb, name: str, a: str, b: str, t: str, half: bool = False) -> str:
    """NumPy's float maximum/minimum: ``a`` if it is strictly beyond ``b`` or NaN, else ``b`` -- so a
    NaN on either side propagates and of two equal values (+0.0 and -0.0) the second is returned,
    where ``arith.maximumf`` would order -0.0 below +0.0. NumPy's float16 loop (``half``) compares
    with ``>=``/``<=`` instead, so there the first of two equal values is returned."""
    pred = {("maximum", False): "ogt", ("minimum", False): "olt", ("maximum", True): "oge", ("minimum", True): "ole"}
    beyond = rb.op(f"arith.cmpf {pred[name, half]}, {a}, {b} : {t}")
    a_is_nan = rb.op(f"arith.cmpf uno, {a}, {a} : {t}")
    take_a = rb.op(f"arith.ori {beyond}, {a_is_nan} : i1")
    return rb.op(f"arith.select {take_a}, {a}, {b} : {t}")


def _float_nan_ignoring_extremum(rb, name: str, a: str, b: str, t: str) -> str:
    """NumPy's fmax/fmin (C's): the larger (smaller) of two numbers, a NaN only where both are NaN.
    ``a`` when it is at least as far out as ``b`` or ``b`` is NaN; which zero of +0.0 and -0.0 C's
    fmax returns is the library's choice (NumPy's float32 and float64 loops differ), not compared."""
    beyond = rb.op(f"arith.cmpf {'oge' if name == 'fmax' else 'ole'}, {a}, {b} : {t}")
    b_is_nan = rb.op(f"arith.cmpf uno, {b}, {b} : {t}")
    take_a = rb.op(f"arith.ori {beyond}, {b_is_nan} : i1")
    return rb.op(f"arith.select {take_a}, {a}, {b} : {t}")


def _arctan2(rb, y: str, x: str, compute) -> str:
    """C's atan2, two zeros included: y's zero for x = +0.0, pi with y's sign for x = -0.0. math.atan2
    lowers to the C library's, but MLIR's constant folder makes atan2 of two zeros NaN, which a kernel
    whose operands fold to zeros (x * 0 of an integer) would then return: the zeros are chosen here."""
    t = dt.mlir_type(compute)
    angle = rb.op(f"math.atan2 {y}, {x} : {t}")
    zero = scalar_const(rb, 0, compute)
    both_zero = rb.op(f"arith.andi {rb.op(f'arith.cmpf oeq, {y}, {zero} : {t}')}, "
                      f"{rb.op(f'arith.cmpf oeq, {x}, {zero} : {t}')} : i1")
    same_width = np.dtype(f"int{np.dtype(compute).itemsize * 8}")
    x_bits = rb.op(f"arith.bitcast {x} : {t} to {dt.mlir_type(same_width)}")
    x_negative = rb.op(f"arith.cmpi slt, {x_bits}, {scalar_const(rb, 0, same_width)} : {dt.mlir_type(same_width)}")
    magnitude = rb.op(f"arith.select {x_negative}, {scalar_const(rb, np.pi, compute)}, {zero} : {t}")
    return rb.op(f"arith.select {both_zero}, {rb.op(f'math.copysign {magnitude}, {y} : {t}')}, {angle} : {t}")


def _sign(rb, x: str, compute) -> str:
    """NumPy's ``x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x``: +0.0 for both zeros, NaN stays NaN."""
    kind, t = _kind(compute), dt.mlir_type(compute)
    if kind == "b":
        raise TypeError("np.sign is not supported for bool")  # NumPy has no bool loop
    zero, one = scalar_const(rb, 0, compute), scalar_const(rb, 1, compute)
    if kind == "u":
        nonzero = rb.op(f"arith.cmpi ne, {x}, {zero} : {t}")
        return rb.op(f"arith.select {nonzero}, {one}, {zero} : {t}")
    minus_one = scalar_const(rb, -1, compute)
    if kind == "f":
        positive = rb.op(f"arith.cmpf ogt, {x}, {zero} : {t}")
        negative = rb.op(f"arith.cmpf olt, {x}, {zero} : {t}")
        is_zero = rb.op(f"arith.cmpf oeq, {x}, {zero} : {t}")
        rest = rb.op(f"arith.select {is_zero}, {zero}, {x} : {t}")
    else:
        positive = rb.op(f"arith.cmpi sgt, {x}, {zero} : {t}")
        negative = rb.op(f"arith.cmpi slt, {x}, {zero} : {t}")
        rest = zero
    rest = rb.op(f"arith.select {negative}, {minus_one}, {rest} : {t}")
    return rb.op(f"arith.select {positive}, {one}, {rest} : {t}")


def _mixed_sign_compare(rb, name: str, args: list[str], operand_dtypes) -> str:
    """uint64 against int64 (NumPy's exact ``Qq->?``/``qQ->?`` loops): a negative signed
    operand is below every unsigned value; otherwise the unsigned comparison is exact."""
    signed = 0 if _kind(operand_dtypes[0]) == "i" else 1
    t = dt.mlir_type(operand_dtypes[signed])
    zero = scalar_const(rb, 0, operand_dtypes[signed])
    negative = rb.op(f"arith.cmpi slt, {args[signed]}, {zero} : {t}")
    unsigned = rb.op(f"arith.cmpi {_COMPARE[name][2]}, {args[0]}, {args[1]} : {t}")
    # the value of "first op second" when the signed operand is negative
    first_is_larger = signed == 1
    when_negative = {"greater": first_is_larger, "greater_equal": first_is_larger, "less": not first_is_larger,
                     "less_equal": not first_is_larger, "equal": False, "not_equal": True}[name]
    fixed = rb.op(f"arith.constant {1 if when_negative else 0} : i1")
    return rb.op(f"arith.select {negative}, {fixed}, {unsigned} : i1")


def _floor_adjustment(rb, rem: str, divisor: str, zero: str, t: str, kind: str) -> tuple[str, str]:
    """(remainder nonzero, remainder must move): Python's floor convention moves a truncated remainder
    that is nonzero and whose sign differs from the divisor's (and its quotient one step down). For
    floats, C's ``if (mod)``: NaN counts as nonzero, hence ``une``."""
    cmp, ne, lt = ("arith.cmpf", "une", "olt") if kind == "f" else ("arith.cmpi", "ne", "slt")
    nonzero = rb.op(f"{cmp} {ne}, {rem}, {zero} : {t}")
    rem_negative = rb.op(f"{cmp} {lt}, {rem}, {zero} : {t}")
    divisor_negative = rb.op(f"{cmp} {lt}, {divisor}, {zero} : {t}")
    signs_differ = rb.op(f"arith.xori {rem_negative}, {divisor_negative} : i1")
    return nonzero, rb.op(f"arith.andi {nonzero}, {signs_differ} : i1")


def _integer_division(rb, name: str, a: str, b: str, compute) -> str:
    """NumPy's integer ``floor_divide``/``remainder``/``fmod``: division by zero gives 0, and
    ``MIN // -1`` wraps to MIN (NumPy warns; both trap on x86 and are undefined in LLVM). The
    divisor is replaced by 1 in those cases *before* dividing, so native code never meets them."""
    kind, t = _kind(compute), dt.mlir_type(compute)
    zero, one = scalar_const(rb, 0, compute), scalar_const(rb, 1, compute)
    by_zero = rb.op(f"arith.cmpi eq, {b}, {zero} : {t}")
    if kind == "u":  # no sign to fix: floor division is truncation
        safe = rb.op(f"arith.select {by_zero}, {one}, {b} : {t}")
        op = "arith.divui" if name == "floor_divide" else "arith.remui"
        result = rb.op(f"{op} {a}, {safe} : {t}")
        return rb.op(f"arith.select {by_zero}, {zero}, {result} : {t}")
    by_minus_one = rb.op(f"arith.cmpi eq, {b}, {scalar_const(rb, -1, compute)} : {t}")
    special = rb.op(f"arith.ori {by_zero}, {by_minus_one} : i1")
    safe = rb.op(f"arith.select {special}, {one}, {b} : {t}")
    rem = rb.op(f"arith.remsi {a}, {safe} : {t}")  # truncated: takes the sign of a
    if name == "fmod":  # C's %, and x % -1 == 0
        return rb.op(f"arith.select {special}, {zero}, {rem} : {t}")
    _, adjust = _floor_adjustment(rb, rem, safe, zero, t, "i")
    if name == "remainder":
        moved = rb.op(f"arith.addi {rem}, {safe} : {t}")
        result = rb.op(f"arith.select {adjust}, {moved}, {rem} : {t}")
        return rb.op(f"arith.select {special}, {zero}, {result} : {t}")
    quotient = rb.op(f"arith.divsi {a}, {safe} : {t}")
    lowered = rb.op(f"arith.subi {quotient}, {one} : {t}")
    result = rb.op(f"arith.select {adjust}, {lowered}, {quotient} : {t}")
    negated = rb.op(f"arith.subi {zero}, {a} : {t}")  # a // -1 == -a, wrapping at MIN as NumPy does
    result = rb.op(f"arith.select {by_minus_one}, {negated}, {result} : {t}")
    return rb.op(f"arith.select {by_zero}, {zero}, {result} : {t}")


def _logaddexp(rb, name: str, x: str, y: str, compute) -> str:
    """NumPy's npy_logaddexp (and npy_logaddexp2, in base 2): equal operands give x + log(2) (so
    infinities of one sign need no exp), otherwise the larger plus log1p of exp of minus the gap;
    a NaN gap is the result."""
    t = dt.mlir_type(compute)
    base2 = name == "logaddexp2"
    gap = rb.op(f"arith.subf {x}, {y} : {t}")
    x_larger = rb.op(f"arith.cmpf ogt, {gap}, {scalar_const(rb, 0.0, compute)} : {t}")
    larger = rb.op(f"arith.select {x_larger}, {x}, {y} : {t}")
    minus_gap = rb.op(f"arith.select {x_larger}, {rb.op(f'arith.negf {gap} : {t}')}, {gap} : {t}")
    grown = rb.op(f"{'math.exp2' if base2 else 'math.exp'} {minus_gap} : {t}")
    term = rb.op(f"math.log1p {grown} : {t}")
    if base2:  # npy_log2_1p: log1p scaled by log2(e)
        term = rb.op(f"arith.mulf {term}, {scalar_const(rb, np.log2(np.e), compute)} : {t}")
    result = rb.op(f"arith.addf {larger}, {term} : {t}")
    unordered = rb.op(f"arith.cmpf uno, {gap}, {gap} : {t}")
    result = rb.op(f"arith.select {unordered}, {gap}, {result} : {t}")
    same = rb.op(f"arith.cmpf oeq, {x}, {y} : {t}")
    doubled = rb.op(f"arith.addf {x}, {scalar_const(rb, 1.0 if base2 else np.log(2.0), compute)} : {t}")
    return rb.op(f"arith.select {same}, {doubled}, {result} : {t}")


def _heaviside(rb, x: str, h0: str, compute) -> str:
    """NumPy's npy_heaviside: NaN for NaN, ``h0`` at zero (either sign), 0 below, 1 above."""
    t = dt.mlir_type(compute)
    zero, one = scalar_const(rb, 0.0, compute), scalar_const(rb, 1.0, compute)
    r = rb.op(f"arith.select {rb.op(f'arith.cmpf olt, {x}, {zero} : {t}')}, {zero}, {one} : {t}")
    r = rb.op(f"arith.select {rb.op(f'arith.cmpf oeq, {x}, {zero} : {t}')}, {h0}, {r} : {t}")
    return rb.op(f"arith.select {rb.op(f'arith.cmpf uno, {x}, {x} : {t}')}, {x}, {r} : {t}")


# NumPy's npy_deg2rad/npy_rad2deg multiply by a constant its C compiler folds in the loop's own precision:
# NPY_PI / 180 in double, NPY_PIf / 180.0f in float (float16 loops compute in float)
_ANGLE_FACTORS = {"deg2rad": lambda pi, d: pi / d(180), "rad2deg": lambda pi, d: d(180) / pi}
_ANGLE_FACTORS.update(radians=_ANGLE_FACTORS["deg2rad"], degrees=_ANGLE_FACTORS["rad2deg"])


def _in_own_bits(rb, fn, args: list[str], compute, half: bool) -> str:
    """``fn(rb, args, own)`` in the loop's own float type ``own``: a float16 loop computes in float32
    here, but nextafter and spacing step float16's own bits."""
    own = np.dtype(np.float16) if half else np.dtype(compute)
    t, wide = dt.mlir_type(own), dt.mlir_type(compute)
    if half:
        args = [rb.op(f"arith.truncf {a} : {wide} to {t}") for a in args]  # exact: they were float16
    result = fn(rb, args, own)
    return rb.op(f"arith.extf {result} : {t} to {wide}") if half else result


def _bits(own) -> tuple[np.dtype, str]:
    same_width = np.dtype(f"int{own.itemsize * 8}")
    return same_width, dt.mlir_type(same_width)


def _nextafter(rb, args: list[str], own) -> str:
    """C's nextafter (float16: NumPy's npy_half_nextafter, which returns x, not y, where they are
    equal): a NaN operand gives NaN; from zero, the smallest subnormal with y's sign; otherwise x's
    bits one step up or down, by which side y is on and x's sign."""
    x, y = args
    t = dt.mlir_type(own)
    it, ti = _bits(own)
    xb, yb = (rb.op(f"arith.bitcast {v} : {t} to {ti}") for v in (x, y))
    one = scalar_const(rb, 1, it)
    up, down = rb.op(f"arith.addi {xb}, {one} : {ti}"), rb.op(f"arith.subi {xb}, {one} : {ti}")
    zero = scalar_const(rb, 0.0, own)
    away = rb.op(f"arith.xori {rb.op(f'arith.cmpf olt, {x}, {y} : {t}')}, "
                 f"{rb.op(f'arith.cmpf olt, {x}, {zero} : {t}')} : i1")  # the bits grow toward y
    stepped = rb.op(f"arith.select {away}, {up}, {down} : {ti}")
    sign = scalar_const(rb, np.iinfo(it).min, it)
    tiniest = rb.op(f"arith.ori {rb.op(f'arith.andi {yb}, {sign} : {ti}')}, {one} : {ti}")
    from_zero = rb.op(f"arith.cmpf oeq, {x}, {zero} : {t}")
    result = rb.op(f"arith.bitcast {rb.op(f'arith.select {from_zero}, {tiniest}, {stepped} : {ti}')} : {ti} to {t}")
    equal = rb.op(f"arith.cmpf oeq, {x}, {y} : {t}")
    result = rb.op(f"arith.select {equal}, {x if own == np.float16 else y}, {result} : {t}")
    nan = rb.op(f"arith.cmpf uno, {x}, {y} : {t}")
    return rb.op(f"arith.select {nan}, {scalar_const(rb, np.nan, own)}, {result} : {t}")


def _spacing(rb, args: list[str], own) -> str:
    """NumPy's npy_spacing: the next float away from zero (from either zero, the smallest positive
    subnormal) less x; NaN for an infinity or a NaN."""
    x, = args
    t = dt.mlir_type(own)
    it, ti = _bits(own)
    xb = rb.op(f"arith.bitcast {x} : {t} to {ti}")
    one = scalar_const(rb, 1, it)
    magnitude = rb.op(f"arith.andi {xb}, {scalar_const(rb, np.iinfo(it).max, it)} : {ti}")
    zero = rb.op(f"arith.cmpi eq, {magnitude}, {scalar_const(rb, 0, it)} : {ti}")
    nxt = rb.op(f"arith.select {zero}, {one}, {rb.op(f'arith.addi {xb}, {one} : {ti}')} : {ti}")
    gap = rb.op(f"arith.subf {rb.op(f'arith.bitcast {nxt} : {ti} to {t}')}, {x} : {t}")
    infinite = rb.op(f"arith.cmpf oeq, {rb.op(f'math.absf {x} : {t}')}, {scalar_const(rb, np.inf, own)} : {t}")
    return rb.op(f"arith.select {infinite}, {scalar_const(rb, np.nan, own)}, {gap} : {t}")


def _half_spacing(rb, args: list[str], own) -> str:
    """NumPy's npy_half_spacing, step by step on the bits: positive always, and for a negative power of
    two the gap toward zero (the smaller one); +inf from the largest finite value, NaN from inf and NaN."""
    x, = args
    t = dt.mlir_type(own)
    ti = "i16"

    def c(v):
        return scalar_const(rb, v, np.dtype(np.int16))

    def op(name, a, b):
        return rb.op(f"arith.{name} {a}, {b} : {ti}")

    def cmp(pred, a, b):
        return rb.op(f"arith.cmpi {pred}, {a}, {b} : {ti}")

    def select(cond, a, b):
        return rb.op(f"arith.select {cond}, {a}, {b} : {ti}")

    h = rb.op(f"arith.bitcast {x} : {t} to {ti}")
    exp, sig = op("andi", h, c(0x7C00)), op("andi", h, c(0x03FF))
    biased = op("shrui", exp, c(10))
    # the subnormal steps: 1 << (biased - 2) for the negative boundary case, 1 << (biased - 1) otherwise;
    # every lane computes both, so the shift is kept within the type where its result is not chosen
    def step(less):
        return op("shli", c(1), op("minsi", op("maxsi", op("subi", biased, c(less)), c(0)), c(15)))

    boundary = select(cmp("ugt", exp, c(0x2C00)), op("subi", exp, c(0x2C00)),
                      select(cmp("ugt", exp, c(0x0400)), step(2), c(1)))
    regular = select(cmp("ugt", exp, c(0x2800)), op("subi", exp, c(0x2800)),
                     select(cmp("ugt", exp, c(0x0400)), step(1), c(1)))
    negative_boundary = rb.op(f"arith.andi {cmp('slt', h, c(0))}, {cmp('eq', sig, c(0))} : i1")
    bits = select(negative_boundary, boundary, regular)
    bits = select(cmp("eq", h, c(0x7BFF)), c(0x7C00), bits)   # the largest finite value: +inf
    bits = select(cmp("eq", exp, c(0x7C00)), c(0x7E00), bits)  # inf and NaN: NaN
    return rb.op(f"arith.bitcast {bits} : {ti} to {t}")


def _hypot(rb, x: str, y: str, compute) -> str:
    """C's hypot: an infinite operand gives +inf even beside a NaN; otherwise NaN propagates. float16
    and float32 loops (float16's computes in float32 here) square and add in float64, exactly but for
    one rounding, then round once more; float64 as ``_hypot_f64``."""
    t = dt.mlir_type(compute)
    ax, ay = rb.op(f"math.absf {x} : {t}"), rb.op(f"math.absf {y} : {t}")
    if np.dtype(compute).itemsize < 8:
        wx, wy = (rb.op(f"arith.extf {v} : {t} to f64") for v in (ax, ay))
        squares = rb.op(f"arith.addf {rb.op(f'arith.mulf {wx}, {wx} : f64')}, {rb.op(f'arith.mulf {wy}, {wy} : f64')} : f64")
        result = rb.op(f"arith.truncf {rb.op(f'math.sqrt {squares} : f64')} : f64 to {t}")
    else:
        result = _hypot_f64(rb, ax, ay)
    inf = scalar_const(rb, np.inf, compute)
    nan = rb.op(f"arith.cmpf uno, {x}, {y} : {t}")
    result = rb.op(f"arith.select {nan}, {scalar_const(rb, np.nan, compute)}, {result} : {t}")
    infinite = rb.op(f"arith.ori {rb.op(f'arith.cmpf oeq, {ax}, {inf} : {t}')}, "
                     f"{rb.op(f'arith.cmpf oeq, {ay}, {inf} : {t}')} : i1")
    return rb.op(f"arith.select {infinite}, {inf}, {result} : {t}")


def _hypot_f64(rb, ax: str, ay: str) -> str:
    """sqrt(ax**2 + ay**2) of float64 magnitudes, corrected once with the fused products' exact errors
    (Borges, "An improved algorithm for hypot(a, b)", 2019: within an ulp, mostly the C library's
    correctly rounded value). Far from 1 both are first scaled by a power of two, exactly, so the
    squares neither overflow nor underflow."""
    def op(name, *xs):
        return rb.op(f"{name} {', '.join(xs)} : f64")

    def c(v):
        return scalar_const(rb, v, np.dtype(np.float64))

    def select(cond, a, b):
        return rb.op(f"arith.select {cond}, {a}, {b} : f64")

    larger, smaller = op("arith.maximumf", ax, ay), op("arith.minimumf", ax, ay)
    big, small = op("arith.cmpf ogt,", larger, c(2.0 ** 500)), op("arith.cmpf olt,", larger, c(2.0 ** -500))
    scale = select(big, c(2.0 ** -600), select(small, c(2.0 ** 600), c(1.0)))
    unscale = select(big, c(2.0 ** 600), select(small, c(2.0 ** -600), c(1.0)))
    a, b = op("arith.mulf", larger, scale), op("arith.mulf", smaller, scale)
    h = op("math.sqrt", op("math.fma", a, a, op("arith.mulf", b, b)))
    h_sq, a_sq = op("arith.mulf", h, h), op("arith.mulf", a, a)
    delta = op("math.fma", op("arith.negf", b), b, op("arith.subf", h_sq, a_sq))
    delta = op("arith.addf", delta, op("math.fma", h, h, op("arith.negf", h_sq)))
    delta = op("arith.subf", delta, op("math.fma", a, a, op("arith.negf", a_sq)))
    corrected = op("arith.subf", h, op("arith.divf", delta, op("arith.addf", h, h)))
    zero = c(0.0)
    return op("arith.mulf", select(op("arith.cmpf oeq,", h, zero), zero, corrected), unscale)


class _FloatBits:
    """Integer arithmetic on the fields of a float32/float64 value (i64 for exponents, so no sum of an
    exponent and a clamped shift can wrap)."""

    def __init__(self, rb, ftype):
        self.rb, self.f = rb, np.dtype(ftype)
        self.int, self.ti = _bits(self.f)
        self.t = dt.mlir_type(self.f)
        info = np.finfo(self.f)
        self.mant, self.bias, self.emin, self.emax = info.nmant, info.maxexp - 1, info.minexp, info.maxexp - 1

    def c(self, v, dtype=None):
        return scalar_const(self.rb, v, dtype or self.int)

    def op(self, name, a, b, t=None):
        return self.rb.op(f"arith.{name} {a}, {b} : {t or self.ti}")

    def normalized(self, x: str) -> tuple[str, str]:
        """(x scaled into the normal range, exactly, by 2**64 where it is subnormal; i64 -64 or 0)."""
        rb, t = self.rb, self.t
        tiny = rb.op(f"arith.cmpf olt, {rb.op(f'math.absf {x} : {t}')}, {self.c(np.finfo(self.f).tiny, self.f)} : {t}")
        scaled = rb.op(f"arith.select {tiny}, {rb.op(f'arith.mulf {x}, {self.c(2.0 ** 64, self.f)} : {t}')}, {x} : {t}")
        return scaled, rb.op(f"arith.select {tiny}, {self.c(-64, np.int64)}, {self.c(0, np.int64)} : i64")

    def fields(self, x: str) -> tuple[str, str]:
        """(sign and mantissa bits, unbiased exponent as i64) of a normal x."""
        bits = self.rb.op(f"arith.bitcast {x} : {self.t} to {self.ti}")
        field_mask = ((1 << (self.f.itemsize * 8 - 1 - self.mant)) - 1) << self.mant
        rest = self.op("andi", bits, self.c(~field_mask))
        field = self.op("shrui", self.op("andi", bits, self.c(field_mask)), self.c(self.mant))
        if self.ti != "i64":
            field = self.rb.op(f"arith.extui {field} : {self.ti} to i64")
        return rest, self.op("subi", field, self.c(self.bias, np.int64), "i64")

    def with_exponent(self, rest: str, exponent: str) -> str:
        """The float of these sign and mantissa bits and this (i64, in range) unbiased exponent."""
        field = self.op("addi", exponent, self.c(self.bias, np.int64), "i64")
        if self.ti != "i64":
            field = self.rb.op(f"arith.trunci {field} : i64 to {self.ti}")
        bits = self.op("ori", rest, self.op("shli", field, self.c(self.mant)))
        return self.rb.op(f"arith.bitcast {bits} : {self.ti} to {self.t}")

    def special(self, x: str) -> str:
        """x is zero, infinite or NaN: frexp and ldexp return it as it is."""
        rb, t = self.rb, self.t
        zero = rb.op(f"arith.cmpf oeq, {x}, {self.c(0.0, self.f)} : {t}")
        finite = rb.op(f"arith.cmpf olt, {rb.op(f'math.absf {x} : {t}')}, {self.c(np.inf, self.f)} : {t}")
        return rb.op(f"arith.ori {zero}, {rb.op(f'arith.xori {finite}, {scalar_const(rb, True, np.dtype(bool))} : i1')} : i1")


def _ldexp(rb, x: str, n: str, ftype, itype) -> str:
    """C's ldexp, x * 2**n rounded once: a normal result is built from x's fields, an overflow is
    +-inf, and a result below the normal range is x's mantissa at the least normal exponent times
    one power of two (a single rounding, ties to even). float16's loop computes in float32."""
    fb = _FloatBits(rb, ftype)
    n = cast_scalar(rb, n, itype, np.int64)
    n = fb.op("minsi", fb.op("maxsi", n, fb.c(-4000, np.int64), "i64"), fb.c(4000, np.int64), "i64")
    scaled, adjust = fb.normalized(x)
    rest, exponent = fb.fields(scaled)
    exponent = fb.op("addi", fb.op("addi", exponent, adjust, "i64"), n, "i64")
    emin, emax = fb.c(fb.emin, np.int64), fb.c(fb.emax, np.int64)
    normal = fb.with_exponent(rest, fb.op("minsi", fb.op("maxsi", exponent, emin, "i64"), emax, "i64"))
    # below the normal range: at the least normal exponent, then scaled by 2**(exponent - emin) >= 2**-60
    shift = fb.op("maxsi", fb.op("subi", exponent, emin, "i64"), fb.c(-60, np.int64), "i64")
    power = fb.with_exponent(fb.c(0), fb.op("minsi", shift, fb.c(0, np.int64), "i64"))
    below = rb.op(f"arith.mulf {fb.with_exponent(rest, emin)}, {power} : {fb.t}")
    infinity = rb.op(f"math.copysign {fb.c(np.inf, fb.f)}, {x} : {fb.t}")
    result = rb.op(f"arith.select {fb.op('cmpi slt,', exponent, emin, 'i64')}, {below}, {normal} : {fb.t}")
    result = rb.op(f"arith.select {fb.op('cmpi sgt,', exponent, emax, 'i64')}, {infinity}, {result} : {fb.t}")
    return rb.op(f"arith.select {fb.special(x)}, {x}, {result} : {fb.t}")


def _frexp(rb, x: str, ftype, part: str) -> str:
    """C's frexp: x = m * 2**e with 0.5 <= |m| < 1 (m keeps x's sign); zero, inf and NaN are (x, 0).
    ``part`` is "mantissa" (in x's type) or "exponent" (int32)."""
    fb = _FloatBits(rb, ftype)
    scaled, adjust = fb.normalized(x)
    rest, exponent = fb.fields(scaled)
    special = fb.special(x)
    if part == "mantissa":
        return rb.op(f"arith.select {special}, {x}, {fb.with_exponent(rest, fb.c(-1, np.int64))} : {fb.t}")
    e = rb.op(f"arith.trunci {fb.op('addi', fb.op('addi', exponent, adjust, 'i64'), fb.c(1, np.int64), 'i64')} : i64 to i32")
    return rb.op(f"arith.select {special}, {scalar_const(rb, 0, np.int32)}, {e} : i32")


def _angle_factor(name: str, compute) -> float:
    d = np.dtype(compute).type
    return _ANGLE_FACTORS[name](d(np.pi), d)


def _float_division(rb, name: str, a: str, b: str, compute) -> str:
    """NumPy's float ``floor_divide``/``remainder`` (its ``npy_divmod``: Python's convention built
    on C's ``fmod``, the quotient snapped to the nearest integer, signed zeros kept) and ``fmod``."""
    t = dt.mlir_type(compute)
    mod = rb.op(f"arith.remf {a}, {b} : {t}")
    if name == "fmod":
        return mod
    zero, one = scalar_const(rb, 0.0, compute), scalar_const(rb, 1.0, compute)
    by_zero = rb.op(f"arith.cmpf oeq, {b}, {zero} : {t}")
    mod_nonzero, adjust = _floor_adjustment(rb, mod, b, zero, t, "f")
    if name == "remainder":
        moved = rb.op(f"arith.addf {mod}, {b} : {t}")
        result = rb.op(f"arith.select {adjust}, {moved}, {mod} : {t}")
        signed_zero = rb.op(f"math.copysign {zero}, {b} : {t}")
        result = rb.op(f"arith.select {mod_nonzero}, {result}, {signed_zero} : {t}")
        return rb.op(f"arith.select {by_zero}, {mod}, {result} : {t}")
    quotient = rb.op(f"arith.divf {a}, {b} : {t}")
    div = rb.op(f"arith.divf {rb.op(f'arith.subf {a}, {mod} : {t}')}, {b} : {t}")
    div = rb.op(f"arith.select {adjust}, {rb.op(f'arith.subf {div}, {one} : {t}')}, {div} : {t}")
    floor = rb.op(f"math.floor {div} : {t}")
    half = scalar_const(rb, 0.5, compute)
    round_up = rb.op(f"arith.cmpf ogt, {rb.op(f'arith.subf {div}, {floor} : {t}')}, {half} : {t}")
    snapped = rb.op(f"arith.select {round_up}, {rb.op(f'arith.addf {floor}, {one} : {t}')}, {floor} : {t}")
    div_nonzero = rb.op(f"arith.cmpf une, {div}, {zero} : {t}")
    signed_zero = rb.op(f"math.copysign {zero}, {quotient} : {t}")
    result = rb.op(f"arith.select {div_nonzero}, {snapped}, {signed_zero} : {t}")
    return rb.op(f"arith.select {by_zero}, {quotient}, {result} : {t}")


# The float ufuncs whose values are their library's, not IEEE's: the C library's, or NumPy's own SIMD
# code (AVX-512 exp, SVML's pow, ...), which differ by an ulp or more in a third of the elements. The CPU
# target calls NumPy's own loop for them (``backend.substitute_numpy_loops``), so the value is NumPy's bit
# for bit, through private functions marked ``parity.numpy_loop = "<ufunc>/<loop dtype>"``: over whole
# arrays (``lowering.Emitter._numpy_ufunc``) and on one element, as ufunc.at calls the loop
# (``lowering.Emitter._numpy_element``). Elsewhere (accumulate and reduceat, whose overlapping operands
# send NumPy to its scalar C-library loop, and the compiler's own compositions) the op is the C
# library's, and on other targets (which keep those functions' bodies) their math functions'.
NUMPY_LOOP_UFUNCS = tuple(n for n in _UNARY_FLOAT if n not in ("sqrt", "rint")) + ("power", "float_power", "arctan2",
                                                                                   "hypot")


def numpy_loop_spec(name: str, loop) -> str:
    """``"<ufunc>/<dtype>"``: NumPy's loop of ufunc ``name`` for dtype ``loop``."""
    return f"{name}/{np.dtype(loop).name}"


def computed_by_numpy_loop(name: str, compute) -> bool:
    """Whether ufunc ``name`` with these loop dtypes is one the CPU target computes with NumPy's own loop:
    one of ``NUMPY_LOOP_UFUNCS`` in a float loop."""
    return name in NUMPY_LOOP_UFUNCS and np.dtype(compute[0]).kind == "f"


def elementwise_scalar(rb, name: str, args: list[str], compute: np.dtype, out: np.dtype, operand_dtypes=None,
                       half: bool = False) -> str:
    """One element of ufunc ``name`` computed in ``compute``; ``half``: NumPy's loop is float16's,
    computed here in float32 (``dt.arithmetic_type``), which differs in how it breaks ties."""
    if name == "float_power":  # NumPy's loops are float64 (and complex) only: a power in the loop's type
        name = "power"
    if (name in _COMPARE and operand_dtypes is not None and len(operand_dtypes) == 2
            and {_kind(d) for d in operand_dtypes} == {"i", "u"}):
        return _mixed_sign_compare(rb, name, args, operand_dtypes)
    kind, t = _kind(compute), dt.mlir_type(compute)
    if name == "power" and kind in "iu":
        return _integer_power(rb, args[0], args[1], compute)
    if name in _LOGICAL:  # truth values of the operands (NumPy's x != 0), then the boolean op
        truths = [cast_scalar(rb, a, d, np.dtype(bool)) for a, d in zip(args, operand_dtypes or [compute] * len(args))]
        if name == "logical_not":
            return rb.op(f"arith.xori {truths[0]}, {scalar_const(rb, True, np.dtype(bool))} : i1")
        return rb.op(f"{_LOGICAL[name]} {truths[0]}, {truths[1]} : i1")
    if name == "invert":
        if kind not in "iub":
            raise TypeError(f"np.invert is not supported for {compute}")
        ones = scalar_const(rb, True if kind == "b" else -1 if kind == "i" else np.iinfo(compute).max, compute)  # all bits
        return rb.op(f"arith.xori {args[0]}, {ones} : {t}")
    if name in ("maximum", "minimum") and kind == "f":
        return _float_extremum(rb, name, args[0], args[1], t, half)
    if name in ("left_shift", "right_shift", "bitwise_count"):
        if kind not in "iu":
            raise TypeError(f"np.{name} is not supported for {compute}")
        if name == "bitwise_count":
            return _bitwise_count(rb, args[0], compute, out)
        return _shift(rb, name, args[0], args[1], compute)
    if name in ("gcd", "lcm"):
        if kind not in "iu":
            raise TypeError(f"np.{name} is not supported for {compute}")
        return _gcd_lcm(rb, name, args[0], args[1], compute)
    if name in ("fmax", "fmin") and kind == "f":
        return _float_nan_ignoring_extremum(rb, name, args[0], args[1], t)
    if name == "clip":  # NumPy's loop: min(max(x, lo), hi), its own maximum and minimum
        low = elementwise_scalar(rb, "maximum", args[:2], compute, out, half=half)
        return elementwise_scalar(rb, "minimum", [low, args[2]], compute, out, half=half)
    if name == "arctan2" and kind == "f":
        return _arctan2(rb, args[0], args[1], compute)
    if name in _BINARY:
        op = _BINARY[name].get(kind)
        if op is None:
            raise TypeError(f"np.{name} is not supported for {compute}")
        return rb.op(f"{op} {args[0]}, {args[1]} : {t}")
    if name in _COMPARE:
        fpred, spred, upred = _COMPARE[name]
        if kind == "f":
            return rb.op(f"arith.cmpf {fpred}, {args[0]}, {args[1]} : {t}")
        return rb.op(f"arith.cmpi {spred if kind == 'i' else upred}, {args[0]}, {args[1]} : {t}")
    if name in ("logaddexp", "logaddexp2"):
        return _logaddexp(rb, name, args[0], args[1], compute)
    if name == "heaviside":
        return _heaviside(rb, args[0], args[1], compute)
    if name == "nextafter":
        return _in_own_bits(rb, _nextafter, args, compute, half)
    if name == "spacing":
        return _in_own_bits(rb, _half_spacing if half else _spacing, args, compute, half)
    if name == "hypot":
        return _hypot(rb, args[0], args[1], compute)
    if name == "ldexp":  # the loop's types: (float, integer exponent)
        return _ldexp(rb, args[0], args[1], operand_dtypes[0], operand_dtypes[1])
    if name in ("frexp_mantissa", "frexp_exponent"):
        return _frexp(rb, args[0], compute, name[len("frexp_"):])
    if name in _ANGLE_FACTORS:
        return rb.op(f"arith.mulf {args[0]}, {scalar_const(rb, _angle_factor(name, compute), compute)} : {t}")
    if name in _DIVISION:
        if kind == "f":
            return _float_division(rb, name, args[0], args[1], compute)
        return _integer_division(rb, name, args[0], args[1], compute)
    if name in _ROUNDING:
        return rb.op(f"{_ROUNDING[name]} {args[0]} : {t}") if kind == "f" else args[0]
    if name in _UNARY_FLOAT:
        if kind != "f":
            raise TypeError(f"np.{name} needs a float operand, got {compute}")
        return rb.op(f"{_UNARY_FLOAT[name]} {args[0]} : {t}")
    if name in _FLOAT_CLASS:
        if kind != "f":
            return scalar_const(rb, _FLOAT_CLASS[name], np.dtype(bool))
        if name == "isnan":
            return rb.op(f"arith.cmpf uno, {args[0]}, {args[0]} : {t}")
        magnitude = rb.op(f"math.absf {args[0]} : {t}")
        inf = scalar_const(rb, np.inf, compute)
        return rb.op(f"arith.cmpf {'oeq' if name == 'isinf' else 'olt'}, {magnitude}, {inf} : {t}")  # NaN: false
    if name == "sign":
        return _sign(rb, args[0], compute)
    if name == "reciprocal":
        if kind == "f":
            return rb.op(f"arith.divf {scalar_const(rb, 1.0, compute)}, {args[0]} : {t}")
        # NumPy's integer loop is C's ``1.0 / x`` in double, converted back (1 / 0 = inf: see _float_to_int)
        wide = np.dtype(np.float64)
        x = cast_scalar(rb, args[0], compute, wide)
        quotient = rb.op(f"arith.divf {scalar_const(rb, 1.0, wide)}, {x} : f64")
        return cast_scalar(rb, quotient, wide, compute)
    if name == "negative":
        if kind == "f":
            return rb.op(f"arith.negf {args[0]} : {t}")
        if kind == "b":
            raise TypeError("np.negative is not supported for bool")
        zero = scalar_const(rb, 0, compute)
        return rb.op(f"arith.subi {zero}, {args[0]} : {t}")
    if name == "fabs":  # NumPy has float loops only: an integer operand computes in a float type
        return rb.op(f"math.absf {args[0]} : {t}")
    if name == "signbit":  # the sign bit itself, so -0.0 and a NaN with its sign bit set are True
        same_width = np.dtype(f"int{np.dtype(compute).itemsize * 8}")
        as_int = rb.op(f"arith.bitcast {args[0]} : {t} to {dt.mlir_type(same_width)}")
        return rb.op(f"arith.cmpi slt, {as_int}, {scalar_const(rb, 0, same_width)} : {dt.mlir_type(same_width)}")
    if name == "absolute":
        if kind == "f":
            return rb.op(f"math.absf {args[0]} : {t}")
        if kind == "i":
            return rb.op(f"math.absi {args[0]} : {t}")
        return args[0]
    if name == "where":
        return rb.op(f"arith.select {args[0]}, {args[1]}, {args[2]} : {t}")
    if name == "cast":
        return args[0]
    raise NotImplementedError(f"no scalar lowering for {name}")


# --------------------------------------------------------------------------- primitives


# How far a correct compiled result may lie from NumPy's for the same inputs (compiler.diagnose
# checks each op against this): "exact" ops are IEEE-exact or move data, so only a few ulps;
# "libm" ops are transcendental functions, whose libraries differ by several ulps; "accumulates"
# ops (sums, matrix products) round in an order that depends on the implementation, so by the
# length reduced and the sum of the magnitudes involved.
ROUNDING = ("exact", "libm", "accumulates")


@dataclass(frozen=True)
class Primitive:
    name: str
    evaluate: Callable  # (node, list[np.ndarray]) -> np.ndarray, NumPy semantics
    lower: Callable     # (emitter, node, list[str]) -> str (SSA name of the result tensor)
    rounding: str = "exact"  # one of ROUNDING


PRIMITIVES: dict[str, Primitive] = {}


def primitive(name: str, evaluate: Callable, lower: Callable, rounding: str = "exact") -> None:
    assert rounding in ROUNDING, rounding
    PRIMITIVES[name] = Primitive(name, evaluate, lower, rounding)


UFUNCS = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "power": np.power, "maximum": np.maximum, "minimum": np.minimum, "fmax": np.fmax, "fmin": np.fmin,
    "gcd": np.gcd, "lcm": np.lcm, "left_shift": np.left_shift, "right_shift": np.right_shift,
    "bitwise_count": np.bitwise_count,
    "negative": np.negative, "exp": np.exp, "tanh": np.tanh, "sqrt": np.sqrt, "log": np.log,
    "sin": np.sin, "cos": np.cos, "exp2": np.exp2, "expm1": np.expm1, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "reciprocal": np.reciprocal, "sign": np.sign, "tan": np.tan, "arcsin": np.arcsin,
    "arccos": np.arccos, "arctan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "arcsinh": np.arcsinh,
    "arccosh": np.arccosh, "arctanh": np.arctanh, "cbrt": np.cbrt, "rint": np.rint, "arctan2": np.arctan2,
    "copysign": np.copysign, "logaddexp": np.logaddexp, "logaddexp2": np.logaddexp2, "heaviside": np.heaviside,
    "deg2rad": np.deg2rad, "rad2deg": np.rad2deg, "radians": np.radians, "degrees": np.degrees,
    "float_power": np.float_power, "nextafter": np.nextafter, "spacing": np.spacing, "hypot": np.hypot,
    "ldexp": np.ldexp,
    "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "clip": np._core.umath.clip,
    "absolute": np.absolute, "fabs": np.fabs, "signbit": np.signbit, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "floor_divide": np.floor_divide, "remainder": np.remainder, "fmod": np.fmod,
    "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor, "invert": np.invert,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
    "logical_not": np.logical_not,
    "greater": np.greater, "greater_equal": np.greater_equal, "less": np.less,
    "less_equal": np.less_equal, "equal": np.equal, "not_equal": np.not_equal,
}


def _eval_elementwise(node: Node, values):
    compute = node.attrs["compute"]
    args = [np.asarray(v).astype(c, copy=False) for v, c in zip(values, compute)]
    with np.errstate(all="ignore"):
        if node.op == "where":
            return np.where(args[0], args[1], args[2]).astype(node.dtype, copy=False)
        if node.op == "cast":
            return args[0].astype(node.dtype)
        if node.attrs.get("per_update") and computed_by_numpy_loop(node.op, compute):
            return _per_update(UFUNCS[node.op], args, node.shape).astype(node.dtype, copy=False)
        return np.asarray(UFUNCS[node.op](*args)).astype(node.dtype, copy=False)


def _per_update(ufunc, args: list, shape: tuple) -> np.ndarray:
    """ufunc.at's updates, as NumPy computes them: its loop called on each element, at stride 0 (where its
    power takes its fast paths: x ** 0.5 a square root, an ulp from its SIMD pow over an array)."""
    first = np.broadcast_to(args[0], shape).reshape(-1).copy()
    ufunc.at(first, np.arange(first.size), *(np.broadcast_to(a, shape).reshape(-1) for a in args[1:]))
    return first.reshape(shape)


def _lower_elementwise(em, node: Node, operands: list[str]) -> str:
    return em.elementwise(node, operands)


_LIBM = ("exp", "tanh", "log", "power", "sin", "cos", "exp2", "expm1", "log2", "log10", "log1p", "tan", "arcsin",
         "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "cbrt", "arctan2", "logaddexp",
         "logaddexp2", "hypot")

for _name in list(UFUNCS) + ["where", "cast"]:
    primitive(_name, _eval_elementwise, _lower_elementwise, "libm" if _name in _LIBM else "exact")


def _eval_frexp(node: Node, values):
    mantissa, exponent = np.frexp(np.asarray(values[0]).astype(node.attrs["compute"][0], copy=False))
    return mantissa if node.op == "frexp_mantissa" else exponent


primitive("frexp_mantissa", _eval_frexp, _lower_elementwise)
primitive("frexp_exponent", _eval_frexp, _lower_elementwise)


def frexp(x: Node) -> tuple[Node, Node]:
    """np.frexp's two results, each an elementwise op of x in the loop's float type."""
    compute, mantissa_type = dt.resolve_ufunc(np.frexp, [x.dtype])
    x = cast(x, compute[0])
    return (_make("frexp_mantissa", [x], x.shape, mantissa_type, compute=tuple(compute)),
            _make("frexp_exponent", [x], x.shape, np.dtype(np.int32), compute=tuple(compute)))


# the NumPy reduction each reduce_* primitive is (any/all take bool operands: NumPy's x != 0)
_REDUCE_NUMPY = {"reduce_sum": np.sum, "reduce_prod": np.prod, "reduce_max": np.max, "reduce_min": np.min,
                 "reduce_any": np.any, "reduce_all": np.all}


def _eval_reduce(node, values):
    fn = _REDUCE_NUMPY[node.op]
    if len(values) == 2:  # a start per output (one axis): NumPy's reduction from the first element
        (axis,) = node.attrs["axes"]
        joined = np.concatenate([np.expand_dims(values[1], axis), values[0]], axis=axis)
        return np.asarray(fn(joined, axis=axis, initial=None)).astype(node.dtype, copy=False)
    start = {"initial": node.attrs["initial"]} if "initial" in node.attrs else {}
    return np.asarray(fn(values[0], axis=node.attrs["axes"], **start)).astype(node.dtype, copy=False)


def _eval_row_sum_from(node, values):
    x, start = values
    joined = np.concatenate([start[..., None].astype(x.dtype), x], axis=-1)
    return np.add.reduceat(joined, [0], axis=-1)[..., 0]  # the first element, then the rest's pairwise sum


def _eval_masked_sum(node, values):
    start = node.attrs.get("initial", 0.0)
    return np.asarray(np.sum(values[0], axis=node.attrs["axes"], where=values[1], initial=start)).astype(node.dtype)


primitive("reduce_sum", _eval_reduce, lambda em, n, ops: em.reduce(n, *ops), "accumulates")
# np.sum(x, where=mask) of floats: NumPy's masked inner loop sums each run of selected elements pairwise
primitive("masked_sum", _eval_masked_sum, lambda em, n, ops: em.masked_sum(n, ops), "accumulates")
# start + the sum of each row (the last axis) as NumPy's inner loop adds a row to an output already
# holding ``start``: ``out += pairwise_sum(row)`` (float16: in float32, rounded once)
primitive("row_sum_from", _eval_row_sum_from, lambda em, n, ops: em.row_sum_from(n, ops), "accumulates")
primitive("reduce_prod", _eval_reduce, lambda em, n, ops: em.reduce(n, *ops), "accumulates")
# ufunc.reduceat along the last axis at indices the kernel computes (checked in range before)
primitive("reduceat_at", lambda n, v: UFUNCS[n.attrs["ufunc"]].reduceat(v[0], v[1], axis=-1),
          lambda em, n, ops: em.reduceat_at(n, ops), "accumulates")
# rows of an array written at computed positions in turn: replaced, or updated by a ufunc (ufunc.at)
primitive("scatter", lambda n, v: _eval_scatter(n, v), lambda em, n, ops: em.scatter(n, ops))
primitive("reduce_max", _eval_reduce, lambda em, n, ops: em.reduce(n, ops[0]))
primitive("reduce_min", _eval_reduce, lambda em, n, ops: em.reduce(n, ops[0]))
primitive("reduce_any", _eval_reduce, lambda em, n, ops: em.reduce(n, ops[0]))
primitive("reduce_all", _eval_reduce, lambda em, n, ops: em.reduce(n, ops[0]))
primitive("argmax", lambda n, v: np.argmax(v[0], axis=n.attrs["axis"]), lambda em, n, ops: em.arg_reduce(n, ops[0]))
primitive("argmin", lambda n, v: np.argmin(v[0], axis=n.attrs["axis"]), lambda em, n, ops: em.arg_reduce(n, ops[0]))
# running sums and products along one axis, in order, each step rounded to the result's dtype
primitive("cumsum", lambda n, v: np.cumsum(v[0], axis=n.attrs["axis"], dtype=n.dtype), lambda em, n, ops: em.scan(n, ops[0]))
primitive("cumprod", lambda n, v: np.cumprod(v[0], axis=n.attrs["axis"], dtype=n.dtype), lambda em, n, ops: em.scan(n, ops[0]))
primitive("accumulate", lambda n, v: UFUNCS[n.attrs["ufunc"]].accumulate(v[0], axis=n.attrs["axis"], dtype=n.dtype),
          lambda em, n, ops: em.scan(n, ops[0]))
# each element's own index along one axis (int64): positions for comparisons that must not be folded
# into an n x n constant at trace time
primitive("iota", lambda n, v: np.broadcast_to(np.arange(n.shape[n.attrs["axis"]]).reshape(
              [-1 if d == n.attrs["axis"] else 1 for d in range(n.ndim)]), n.shape).astype(n.dtype),
          lambda em, n, ops: em.iota(n))
# the stable argsort along the last axis (NaNs last): NumPy's kind="stable" order, which any NumPy kind
# gives but for the order of equal keys
primitive("sort_permutation", lambda n, v: np.argsort(v[0], axis=-1, kind="stable"),
          lambda em, n, ops: em.sort_permutation(n, ops[0]))
primitive("matmul", lambda n, v: np.matmul(v[0], v[1]), lambda em, n, ops: em.matmul(n, ops), "accumulates")


def _eval_row_dots(node, values):
    """NumPy's dot of each pair of rows, called as ``row_dots`` calls it: np.dot of two vectors is BLAS's dot
    at their strides (unit ones, or every other element of a spread copy), a running sum from 0 otherwise."""
    x, y = values
    mode = node.attrs["mode"]
    out = np.zeros((x.shape[0], y.shape[0]), node.dtype)
    for i, j in np.ndindex(out.shape):
        if mode == "loop":
            out[i, j] = np.cumsum(x[i] * y[j], dtype=node.dtype)[-1] + node.dtype.type(0) if x.shape[1] else 0
        elif mode == "unit":
            out[i, j] = np.dot(np.ascontiguousarray(x[i]), np.ascontiguousarray(y[j]))
        else:
            spread = np.zeros((2, 2 * x.shape[1]), node.dtype)
            spread[0, ::2], spread[1, ::2] = x[i], y[j]
            out[i, j] = np.dot(spread[0, ::2], spread[1, ::2])
    return out


primitive("row_dots", _eval_row_dots, lambda em, n, ops: em.row_dots(n, ops), "accumulates")
primitive("reshape", lambda n, v: np.reshape(v[0], n.shape), lambda em, n, ops: em.reshape(ops[0], n.inputs[0], n.shape, n.loc))
primitive("copy", lambda n, v: np.array(v[0], order=n.attrs["order"]), lambda em, n, ops: ops[0])
primitive("transpose", lambda n, v: np.transpose(v[0], n.attrs["perm"]).copy(), lambda em, n, ops: em.transpose(n, ops[0]))
primitive(
    "slice",
    lambda n, v: v[0][tuple(slice(s, s + z * st, st) for s, z, st in zip(n.attrs["starts"], n.shape, n.attrs["steps"]))].copy(),
    lambda em, n, ops: em.slice(n, ops[0]),
)
primitive("gather", lambda n, v: _eval_gather(n, v), lambda em, n, ops: em.gather(n, ops))
primitive("concat", lambda n, v: np.concatenate(v, axis=n.attrs["axis"]), lambda em, n, ops: em.concat(n, ops))
primitive("broadcast_to", lambda n, v: np.broadcast_to(v[0], n.shape).copy(), lambda em, n, ops: em.elementwise(n, ops))


# --------------------------------------------------------------------------- node builders
# Shape and dtype rules: each builder validates its operands, infers the result type,
# folds constants, and records the user's source location.


def _make(op: str, inputs, shape, dtype, **attrs) -> Node:
    node = Node(op, tuple(inputs), attrs, tuple(int(d) for d in shape), np.dtype(dtype), user_location())
    if inputs and all(i.is_const() for i in inputs):
        value = PRIMITIVES[op].evaluate(node, [i.value for i in inputs])
        folded = const_node(np.asarray(value, dtype=node.dtype).reshape(node.shape), node.loc)
        # the layout NumPy would give it (a view of a constant, what np.zeros_like made), which its sums follow
        from .layout import as_read, contiguous_strides, known, strides_of  # (layout reads this module's UFUNCS)
        strides = strides_of(node)
        if strides != contiguous_strides(node.shape):
            folded.attrs["strides"] = strides
        if as_read(node) != strides:  # a conversion a loop makes as it reads: its operand as it lies, to a loop
            folded.attrs["read_strides"] = as_read(node)
        if not known(node):  # (and where the model only guesses it, it still says so)
            folded.attrs["layout_unknown"] = True
        return folded
    return node


def broadcast_shapes(*shapes, what="operands") -> tuple:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise ValueError(f"{what}: shapes {' and '.join(str(tuple(s)) for s in shapes)} cannot be broadcast together") from None


@dataclass(frozen=True)
class WrittenInto:
    """The out= array of a ufunc call (its shape, strides in elements, dtype, and where it starts:
    ``layout.memory_start``) and where='s mask (its strides broadcast onto that shape, its dtype), which NumPy's
    iterator walks along with the operands."""
    shape: tuple
    strides: tuple
    dtype: np.dtype
    start: tuple
    mask: tuple | None = None


def elementwise(name: str, operands: list, signature=None, casting=None, written: WrittenInto | None = None) -> Node:
    """Apply a ufunc-like primitive; operands are Nodes or ``Weak`` Python scalars; ``signature`` and
    ``casting`` choose the loop as the ufunc's own arguments do (see ``dt.resolve_ufunc``); ``written``: the
    out= array the result goes into, as ``numpy_out``/``numpy_where`` (strides, converted by the loop) for
    ``layout.loop_steps``."""
    ufunc = UFUNCS[name]
    types = [o if isinstance(o, dt.Weak) else o.dtype for o in operands]
    compute, out = dt.resolve_ufunc(ufunc, types, signature, casting)
    what = f"np.{name}"
    for c in compute:
        dt.check_supported(c, what)
    dt.check_supported(out, what)
    if name in _COMPARE:
        folded = _out_of_range_comparison(name, operands, compute)
        if folded is not None:
            return folded
    nodes = [const_node(dt.weak_to_array(o.value, c)) if isinstance(o, dt.Weak) else o for o, c in zip(operands, compute)]
    shape = broadcast_shapes(*[n.shape for n in nodes], what=what)
    if name in _FLOAT_CLASS and compute[0].kind != "f":  # an integer is never NaN or infinite
        return _laid_out_like(const_node(np.full(shape, _FLOAT_CLASS[name])), nodes[0])
    attrs = {}
    if name == "power" and compute[1].kind == "i" and int(np.prod(shape, dtype=np.int64)) and \
            _checked_by_kernel(_exponent_source(nodes[1], compute[1])) and \
            (safe := _checked_exponent(cast(nodes[1], compute[1]))) is not None:  # (the loop's exponent: dtype= picks it)
        nodes[1], attrs["exponent_checked_in_kernel"] = safe, True
    # float16's power loop (computed in float32) has no fast paths
    if name == "power" and compute[1].kind == "f" and compute[1] != np.float16 and \
            scalar_to_loop(nodes[1], [nodes[0]], shape):
        attrs["scalar_exponent"] = True
    if name == "clip" and compute[0].kind == "f" and \
            all(scalar_to_loop(b, [n for n in nodes if n is not b], shape) for b in nodes[1:]):
        attrs["scalar_bounds"] = True
    if written is not None and written.shape == shape and name in NUMPY_LOOP_UFUNCS:
        attrs["numpy_out"] = (written.strides, np.dtype(written.dtype) != out)
        attrs["numpy_out_start"] = written.start
        if written.mask is not None:
            attrs["numpy_where"] = (written.mask[0], np.dtype(written.mask[1]) != np.bool_)
    node = _make(name, nodes, shape, out, compute=tuple(compute), **attrs)
    integer_exponent_source(node)  # refuses, at trace time, exponents that cannot be checked
    return node


def scalar_to_loop(operand: Node, others, shape: tuple) -> bool:
    """Whether NumPy's loop (result ``shape``) sees ``operand`` with stride 0, as its power's fast paths and
    its clip's scalar-bounds path look for (measured on NumPy 2.4): it holds one element and is 0-d, or is
    broadcast over more than one, or, where the result has one element too, some operand of ``others`` that is
    not 0-d has another shape (so NumPy's iterator broadcasts; (1, 1) ** (1,) takes the fast path, (1,) ** (1,)
    and () ** (1,) do not)."""
    if operand.size != 1:
        return False
    if operand.ndim == 0 or int(np.prod(shape, dtype=np.int64)) > 1:
        return True
    return any(other.ndim > 0 and other.shape != operand.shape for other in others)


def numpy_scalar_power(rb, x: str, y: str, compute) -> str:
    """NumPy's float ``power`` when the exponent is a scalar to its inner loop, computed with the C
    library's pow (the target's, where it is not NumPy's own loop: ``Emitter._numpy_ufunc``): of
    NumPy's fast paths only ``0.5 -> sqrt`` changes a value then ((-0.0) ** 0.5 is -0.0 and
    (-inf) ** 0.5 NaN, where C's pow gives +0.0 and +inf). A constant exponent folds the choice away."""
    t = dt.mlir_type(compute)
    half = scalar_const(rb, 0.5, compute)
    is_half = rb.op(f"arith.cmpf oeq, {y}, {half} : {t}")
    root = rb.op(f"math.sqrt {x} : {t}")
    power = rb.op(f"math.powf {x}, {y} : {t}")
    return rb.op(f"arith.select {is_half}, {root}, {power} : {t}")


def numpy_constant_clip(rb, x: str, lo: str, hi: str, compute) -> str:
    """NumPy's float ``clip`` when both bounds are scalars to its loop (the rule of
    ``scalar_to_loop``; measured on NumPy 2.4): a NaN bound, lo's first, is the result
    everywhere; otherwise ``x < lo -> lo``, then ``> hi -> hi``, so a NaN ``x`` stays and a tie of
    -0.0 with +0.0 keeps ``x``, where the general loop gives the bound. Constant bounds fold the
    choices away."""
    t = dt.mlir_type(compute)
    below = rb.op(f"arith.cmpf olt, {x}, {lo} : {t}")
    r = rb.op(f"arith.select {below}, {lo}, {x} : {t}")
    above = rb.op(f"arith.cmpf ogt, {r}, {hi} : {t}")
    r = rb.op(f"arith.select {above}, {hi}, {r} : {t}")
    hi_nan = rb.op(f"arith.cmpf uno, {hi}, {hi} : {t}")
    r = rb.op(f"arith.select {hi_nan}, {hi}, {r} : {t}")
    lo_nan = rb.op(f"arith.cmpf uno, {lo}, {lo} : {t}")
    return rb.op(f"arith.select {lo_nan}, {lo}, {r} : {t}")


NEGATIVE_INTEGER_POWER = "integers to negative integer powers are not allowed (np.power)"
_VALUE_PRESERVING = ("reshape", "transpose", "broadcast_to")  # every element of the input appears in the output


COMPUTED = "computed"  # a value only a kernel knows, neither a constant nor an argument's elements


def _exponent_source(exponent: Node, loop: np.dtype):
    """What must be checked so an integer exponent, converted to the ``loop``'s exponent type, is never
    negative: None (nothing: a constant, checked here, or unsigned values), the function argument whose
    values the host checks, or COMPUTED (only the kernel knows its values -- also where the conversion may
    change them: dtype= int8 makes 255 -1, which NumPy refuses)."""
    if exponent.is_const():
        with np.errstate(all="ignore"):
            converted = exponent.value.astype(loop)
        if (converted < 0).any():
            raise ValueError(f"{NEGATIVE_INTEGER_POWER}; the exponent holds {int(converted.min())}")
        return None
    if not np.can_cast(exponent.dtype, loop, "safe"):
        return COMPUTED
    source = value_source(exponent)
    if source.dtype.kind in "ub" or (source.op == "cast" and source.inputs[0].dtype.kind in "ub"
                                     and source.inputs[0].dtype.itemsize < source.dtype.itemsize):
        return None  # never negative
    return source if _host_checkable(source) else COMPUTED


def _checked_by_kernel(source) -> bool:
    """Whether the kernel, not the host, checks the values of ``source`` (a value's ``value_source``,
    COMPUTED, or None: nothing to check): those only a kernel knows, and every one once the trace has
    given the kernel a check (see ``_kernel_checks_so_far``)."""
    return source is COMPUTED or (source is not None and (not _host_checkable(source) or _kernel_checks_so_far()))


def _host_checkable(source: Node) -> bool:
    """An argument the host holds, so its values can be checked before any kernel runs; a
    ``DeviceArray``'s are in GPU memory, known only to kernels, like a computed value's."""
    return source.op == "input" and not source.attrs.get("device_resident")


def _kernel_checks_so_far() -> bool:
    """Whether the trace has already given the kernel a check. Later checks then go to the kernel too:
    NumPy raises the error of the first op that fails, and a host check, made before the kernel runs,
    would pre-empt the kernel's report of an earlier op (a ValueError for a negative argument exponent
    where NumPy raises the IndexError of a computed index before it)."""
    return bool(getattr(_RUNTIME_CHECKS, "found", None))


def integer_exponent_source(node: Node):
    """For an integer ``power``, the function argument whose values must be checked for negative
    exponents before native code runs (NumPy raises ValueError; ``_integer_power`` assumes none), or
    None when no check is needed: the exponent is a constant (checked here), unsigned, or checked by
    the kernel itself (see ``check_at_run_time``). A computed exponent outside a traced function,
    where no run-time check can be attached, is refused."""
    if node.op != "power" or node.attrs["compute"][1].kind != "i" or node.size == 0 \
            or node.attrs.get("exponent_checked_in_kernel"):
        return None
    source = _exponent_source(node.inputs[1], node.attrs["compute"][1])
    if source is COMPUTED:
        raise NotImplementedError(
            "np.power: an integer exponent computed outside a traced function must be a function argument, a "
            "constant or unsigned, so that negative exponents (which NumPy refuses) are caught before native "
            "code runs; cast the base to float for computed exponents")
    return source


def _checked_exponent(exponent: Node, what: str = "np.power") -> Node | None:
    """``exponent`` with negative elements replaced by 0 (``_integer_power`` never sees one), the kernel
    reporting any it met; None outside a trace."""
    line, origin = user_location().short(), _kernel_value_origin(exponent, "an exponent")
    return check_at_run_time(exponent, elementwise("less", [exponent, dt.Weak(0)]), "min", ValueError,
                             lambda held: f"{NEGATIVE_INTEGER_POWER}; the exponent for {what} at {line} ({origin}) "
                                          f"held {held} (checked as the kernel ran)")


# --------------------------------------------------------------------------- run-time checks
# A gather index or integer exponent computed inside a kernel cannot be checked before the kernel
# runs. The traced function then computes, beside its results, whether any such value was out of
# range (and one that was); native code meanwhile uses a safe stand-in, and the compiled function
# raises NumPy's error after the kernel returns, discarding the results.


class IndexOutOfBounds(IndexError, ValueError):
    """An index out of range for its axis. NumPy raises IndexError; a ValueError too, as the
    compiler's checks of argument and constant indices always raised."""


@dataclass(frozen=True)
class RuntimeCheck:
    """``failed`` (bool, 0-d) is true when the kernel met a value out of range, ``witness`` (0-d)
    one such value; the call then raises ``error(describe(witness))`` -- or, for a ``Warning`` class,
    warns so ``witness`` times and returns its results (NumPy's warnings that depend on the data)."""
    failed: Node
    witness: Node
    error: type
    describe: Callable[[int], str]


_RUNTIME_CHECKS = threading.local()


@contextlib.contextmanager
def runtime_checks():
    """Collects the ``RuntimeCheck``s that the ops traced inside the block need."""
    previous = getattr(_RUNTIME_CHECKS, "found", None)
    _RUNTIME_CHECKS.found = found = []
    try:
        yield found
    finally:
        _RUNTIME_CHECKS.found = previous


def _kernel_value_origin(value: Node, what: str) -> str:
    """Where a value the kernel checks comes from, for its error: computed, in GPU memory, or an
    argument checked there because an earlier check is (see ``_kernel_checks_so_far``)."""
    source = value_source(value)
    if source.op != "input":
        return f"{what} computed in the kernel"
    where_ = "held in GPU memory" if source.attrs.get("device_resident") else "checked with the values computed before it"
    return f"argument {source.name}, {where_}"


def check_at_run_time(values: Node, bad: Node, witness: str, error: type, describe: Callable[[int], str]) -> Node | None:
    """``values`` with 0 where ``bad`` (bool, shaped as ``values``) is true, the stand-in native code
    uses; the kernel also reports whether ``bad`` holds any true element, and a witness of the ``values``
    where it does: "min" (the smallest) or "first" (in C order, as NumPy's index errors name it).
    None outside a trace (nothing would read the report), and the caller must refuse the op instead."""
    found = getattr(_RUNTIME_CHECKS, "found", None)
    if found is None:
        return None
    if values.size == 0:  # nothing to check (and no first bad position to take)
        return values
    flat = lambda n: reshape(n, (n.size,))  # noqa: E731 - a 0-d value reduces over no axis otherwise
    failed = reduce("any", flat(bad), 0, False, "a run-time check")
    if witness == "first":  # argmax of the flags is the first bad position, always in range
        first = arg_reduce("argmax", flat(bad), 0, False, "a run-time check")
        value = _make("gather", [flat(values), first], (), values.dtype, axis=0)
    else:
        fill = const_node(np.asarray(np.iinfo(values.dtype).max, values.dtype))
        value = reduce("min", flat(where(bad, values, fill)), 0, False, "a run-time check")
    found.append(RuntimeCheck(failed, value, error, describe))
    return where(bad, const_node(np.zeros((), values.dtype)), values)


def warn_at_run_time(bad: Node, category: type, message: str, each: bool = False) -> bool:
    """Have the call warn ``message`` (a ``Warning`` class) when ``bad`` holds a true element, as NumPy's
    functions warn after looking at their results (np.nanmean of a slice of NaNs) -- once, or with
    ``each`` once per true element (NumPy's warning per slice). False outside a trace, where nothing
    would read the report."""
    found = getattr(_RUNTIME_CHECKS, "found", None)
    if found is None:
        return False
    flat = reshape(bad, (bad.size,))
    failed = reduce("any", flat, 0, False, "a run-time warning")
    times = reduce("sum", cast(flat, np.dtype(np.int64)), 0, False, "a run-time warning") if each \
        else const_node(np.ones((), np.int64))
    found.append(RuntimeCheck(failed, times, category, lambda _: message))
    return True


def _out_of_range_comparison(name: str, operands: list, compute: list):
    """NumPy 2 compares an integer array with a Python int its dtype cannot hold (``uint8_array > -1``):
    every element lies on the same side, so the result is a constant, the same as for the dtype's minimum."""
    weak = [(i, o) for i, o in enumerate(operands) if isinstance(o, dt.Weak) and o.pytype is int]
    if len(weak) != 1 or len(operands) != 2:
        return None
    i, w = weak[0]
    other = operands[1 - i]
    if isinstance(other, dt.Weak) or compute[i].kind not in "iu":
        return None
    if other.dtype.kind == "b" and not np.iinfo(np.int64).min <= w.value <= np.iinfo(np.int64).max:
        # NumPy's bool loop takes the int through a C long first
        raise OverflowError("Python int too large to convert to C long")
    info = np.iinfo(compute[i])
    if info.min <= w.value <= info.max:
        return None
    sample = np.array(info.min, compute[i])
    args = [sample, w.value] if i == 1 else [w.value, sample]
    value = bool(UFUNCS[name](*args))
    return const_node(np.full(other.shape, value))


def where(cond: Node, x, y) -> Node:
    xv = x.value if isinstance(x, dt.Weak) else np.empty((0,), x.dtype)
    yv = y.value if isinstance(y, dt.Weak) else np.empty((0,), y.dtype)
    out = np.result_type(xv, yv)
    dt.check_supported(out, "np.where")
    if isinstance(cond, dt.Weak):
        cond = const_node(np.asarray(cond.value, bool))
    nodes = [cast(cond, bool)]
    nodes += [const_node(_where_scalar(o.value, out)) if isinstance(o, dt.Weak) else o for o in (x, y)]
    shape = broadcast_shapes(*[n.shape for n in nodes], what="np.where")
    return _make("where", nodes, shape, out, compute=(np.dtype(bool), out, out))


def _where_scalar(value, out: np.dtype) -> np.ndarray:
    """A Python scalar as np.where takes it: an int goes through a C integer and wraps into an integer
    result dtype (``np.where(c, -5, uint8_array)`` holds 251), where ufuncs refuse out-of-range ints."""
    if isinstance(value, int) and out.kind in "iu":
        return np.asarray(value).astype(out)  # an int beyond 64 bits: OverflowError, as in NumPy
    return dt.weak_to_array(value, out)


def cast(x: Node, dtype, buffered: bool = False) -> Node:
    """``x`` converted to ``dtype``; ``buffered``: by a reduction, which NumPy casts through its buffer
    as it goes (which changes how it sums: see ``layout``), not into an array of its own."""
    dtype = dt.check_supported(dtype, "astype")
    if x.dtype == dtype:
        return x
    marked = {"buffered": True} if buffered else {}
    return _make("cast", [x], x.shape, dtype, compute=(x.dtype,), **marked)


def bitcast(x: Node, dtype) -> Node:
    """The same bits read as another dtype of the same itemsize (ndarray.view(dtype)); a bool's byte is
    0 or 1, and bytes read as bool are refused (NumPy keeps any byte in a bool, which no op then reads back)."""
    dtype = dt.check_supported(dtype, "x.view")
    if dtype.itemsize != x.dtype.itemsize:
        raise ValueError(f"bitcast from {x.dtype} to {dtype}: itemsizes differ")
    if dtype.kind == "b" and x.dtype.kind != "b":
        raise NotImplementedError(f"x.view(bool) of {x.dtype}: NumPy keeps any byte in a bool, which the compiler's "
                                  "bools (0 or 1) cannot hold; compare with 0 instead (x != 0)")
    if x.dtype == dtype:
        return x
    return _make("bitcast", [x], x.shape, dtype, compute=(x.dtype,))


def bitcast_scalar(rb, x: str, src, dst) -> str:
    """One element's bits as ``dst`` (an integer of the same width, a float, or from bool its 0/1 byte)."""
    src, dst = np.dtype(src), np.dtype(dst)
    ts, td = dt.mlir_type(src), dt.mlir_type(dst)
    if src.kind == "b":
        return rb.op(f"arith.extui {x} : i1 to {td}") if dst.kind != "b" else x
    if ts == td:  # int32 <-> uint32: MLIR's integers are signless
        return x
    return rb.op(f"arith.bitcast {x} : {ts} to {td}")


def _eval_bitcast(node: Node, values):
    return np.ascontiguousarray(values[0]).view(node.dtype)


primitive("bitcast", _eval_bitcast, _lower_elementwise)


def normalize_axes(axis, ndim: int, what: str, zero_d: bool = False, c_axes: bool = False) -> tuple:
    """``axis`` (None, an integer or a tuple of them; a list or a float is a TypeError, as in NumPy)
    as sorted non-negative axes. ``zero_d``: axis 0 or -1 of a 0-d array, as an integer, means no axis
    (NumPy's reductions and squeeze accept it; inside a tuple, (0,), it is their AxisError). Those, and
    ``c_axes`` (np.mean, np.var: NumPy's C reduction reads them), refuse a bool, as NumPy's C converter does."""
    if axis is None:
        return tuple(range(ndim))
    axes = axis if isinstance(axis, tuple) else (axis,)
    if zero_d and ndim == 0 and not isinstance(axis, tuple) and operator.index(axis) in (0, -1):
        return ()
    out = []
    for a in axes:
        boolean = isinstance(a, (bool, np.bool_))
        if zero_d and boolean:  # (NumPy's C axis converter: a bool is no integer to it)
            raise TypeError("an integer is required")
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(f"{what}: axis {a} is out of bounds for array of dimension {ndim}")
        if c_axes and boolean:  # (np.mean's count of the axes takes it as 1 first, then its C sum refuses it)
            raise TypeError("an integer is required")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{what}: duplicate value in 'axis'")
    return tuple(sorted(out))


def one_axis(axis, ndim: int, what: str, bools: bool = False) -> int:
    """A function's single ``axis`` as NumPy reads one: an integer (a tuple, a list or None is NumPy's TypeError,
    "... cannot be interpreted as an integer"), non-negative. A bool is an integer only to NumPy's Python-level
    functions (``bools``: np.stack, np.diff, np.swapaxes); its C axis converter refuses one."""
    if not bools and isinstance(axis, (bool, np.bool_)):
        raise TypeError("an integer is required for the axis")
    return normalize_axes(operator.index(axis), ndim, what)[0]


def reduce_result_type(kind: str, x: Node, axes: tuple, dtype=None) -> np.dtype:
    """np.sum's or np.prod's result type for ``x`` over ``axes`` under ``dtype=`` (NumPy's choice, asked)."""
    return getattr(np, kind)(np.zeros((1,) * x.ndim, x.dtype), axis=axes, dtype=dtype).dtype


def reduce(kind: str, x: Node, axis, keepdims: bool, what: str, dtype=None, initial=None, start: Node | None = None) -> Node:
    """A sum, product, max, min, any or all over ``axis``; ``dtype`` is np.sum's and np.prod's (the
    accumulator and result type). any/all reduce NumPy's truth values (``x != 0``, NaN true) and
    are bool; an empty any is False and an empty all True, as sums are 0 and products 1.
    ``initial`` (sums and products): NumPy's ``initial=``, already in the result's type. NumPy's
    output starts there and gains the elements (or row sums) in turn, so it is the accumulator's
    start, not a value combined with the finished reduction: ``np.sum([[-1e20], [1.0]], axis=0,
    initial=1e20)`` is (1e20 - 1e20) + 1 = 1, where 1e20 + (-1e20 + 1) would be 0. ``start`` (sums and
    products over one axis): a start per output element (the reduced shape, in the result's type), as
    NumPy's ``initial=None`` starts from each reduction's first element and folds in the rest after it."""
    axes = normalize_axes(axis, x.ndim, what, zero_d=True)
    op = f"reduce_{kind}"
    if kind in ("sum", "prod"):
        out = reduce_result_type(kind, x, axes, dtype)
        dt.check_supported(out, what)
    elif kind in ("any", "all"):
        out = np.dtype(bool)
    else:
        name = {"max": "maximum", "min": "minimum"}[kind]
        if any(x.shape[a] == 0 for a in axes):
            raise ValueError(f"{what}: zero-size array to reduction operation {name} which has no identity")
        out = x.dtype
    x = cast(x, out, buffered=True)
    begin = {} if initial is None else {"initial": np.asarray(initial).astype(out).item()}
    if (begin or start is not None) and kind not in ("sum", "prod"):
        raise ValueError(f"{what}: a start value is for sums and products")
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if start is not None:
        if len(axes) != 1 or start.shape != shape or begin:
            raise ValueError(f"{what}: starts for a reduction over one axis, one per output {shape}")
        r = _make(op, [x, cast(start, out)], shape, out, axes=axes)
    elif axes:
        r = _make(op, [x], shape, out, axes=axes, **begin)
    elif begin:  # NumPy's output starts at initial and gains each element
        r = elementwise("add" if kind == "sum" else "multiply", [const_node(np.asarray(initial).astype(out)), x])
    elif kind == "sum" and out.kind == "f":
        r = elementwise("add", [x, const_node(np.zeros((), out))])  # NumPy adds to its start, 0: -0.0 sums to +0.0
    else:
        r = x
    if keepdims:
        r = reshape(r, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    return r


def masked_sum(x: Node, mask: Node, axis, keepdims: bool, what: str, dtype=None, initial=None) -> Node:
    """``np.sum(x, axis, dtype=, where=mask, initial=)`` of a float result. NumPy's reduction skips the
    elements the mask excludes: its masked inner loop hands the sum loop each run of selected elements,
    which it sums pairwise and adds to the output, so the runs (cut where NumPy's inner loops end) decide
    the order, not only the values. ``mask``: boolean, broadcast to ``x``'s shape."""
    axes = normalize_axes(axis, x.ndim, what, zero_d=True)
    out = reduce_result_type("sum", x, axes, dtype)
    if out.kind != "f" or mask.dtype != np.dtype(bool) or mask.shape != x.shape:
        raise ValueError(f"{what}: a masked sum takes a float result and a boolean mask of the array's shape")
    x = cast(x, out, buffered=True)
    start = {} if initial is None else {"initial": np.asarray(initial).astype(out).item()}
    if axes:
        shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
        r = _make("masked_sum", [x, mask], shape, out, axes=axes, **start)
    else:  # each element alone: itself where selected, added to the start
        kept = where(mask, x, const_node(np.asarray(-0.0, out)))
        r = elementwise("add", [const_node(np.asarray(start.get("initial", 0.0), out)), kept])
    if keepdims:
        r = reshape(r, tuple(1 if i in axes else d for i, d in enumerate(x.shape)))
    return r


def reduceat_at(x: Node, indices: Node, ufunc: str) -> Node:
    """``ufunc.reduceat(x, indices, axis=-1)`` with ``indices`` (int64, one axis) computed, each already
    in [0, n): a segment's first element, then NumPy's reduction loop over the rest (``x`` is in NumPy's
    result type, its loop's own)."""
    if x.ndim == 0 or indices.ndim != 1 or indices.dtype != np.dtype(np.int64):
        raise ValueError(f"reduceat_at: an array and one axis of int64 indices, got {x.describe()} and "
                         f"{indices.describe()}")
    return _make("reduceat_at", [x, indices], x.shape[:-1] + indices.shape, x.dtype, ufunc=ufunc)


def scatter(x: Node, index: Node, updates: Node | None, ufunc: str | None = None) -> Node:
    """``x`` (rows by their elements) with row ``index[j]`` written by update j in turn, j = 0, 1, ...:
    replaced by ``updates[j]`` (``ufunc`` None: the last update of a row is what it keeps, as NumPy's item
    assignment leaves it), or updated by the ufunc of it and ``updates[j]`` (of it alone for a unary one),
    computed in the ufunc's loop for (x's dtype, the updates') and cast back to x's (NumPy's unbuffered
    ``ufunc.at``). ``index`` (int64) must already be in [0, rows): the kernel clamps, it does not check."""
    rows = x.shape[0] if x.ndim == 2 else -1
    unary = ufunc is not None and UFUNCS[ufunc].nin == 1
    if x.ndim != 2 or index.ndim != 1 or index.dtype != np.dtype(np.int64) or not rows or \
            (updates is None) != unary or updates is not None and updates.shape != index.shape + x.shape[1:] or \
            ufunc is None and updates.dtype != x.dtype:
        raise ValueError(f"scatter: rows, int64 positions and an update per position, got {x.describe()}, "
                         f"{index.describe()} and {'no updates' if updates is None else updates.describe()}")
    if ufunc == "power" and (exponent := dt.resolve_ufunc(np.power, [x.dtype, updates.dtype])[0][1]).kind == "i":
        updates = _nonnegative_exponents(cast(updates, exponent))  # (the loop's exponent, as elementwise checks it)
    return _make("scatter", [x, index] + ([] if updates is None else [updates]), x.shape, x.dtype, ufunc=ufunc)


def _nonnegative_exponents(updates: Node) -> Node:
    """Integer exponents for a scatter's power: NumPy's ValueError for a negative one (``_integer_power``
    must never see one), raised now for constants, by the kernel for computed ones."""
    if updates.is_const():
        if (updates.value < 0).any():
            raise ValueError(NEGATIVE_INTEGER_POWER)
        return updates
    safe = _checked_exponent(updates, "np.power.at")
    if safe is None:
        raise NotImplementedError("np.power.at with integer exponents outside a traced function: their check for "
                                  "negative ones needs a kernel")
    return safe


def _eval_scatter(node: Node, values):
    out = np.array(values[0], dtype=node.dtype)
    name = node.attrs["ufunc"]
    if name is None:
        for j, row in enumerate(values[1]):  # in order: the last write wins
            out[row] = values[2][j]
    else:
        with np.errstate(all="ignore"):
            UFUNCS[name].at(out, values[1], *values[2:])
    return out


def row_sum_from(x: Node, start: Node) -> Node:
    """``start`` plus each row's float sum (``x``'s last axis), in NumPy's order for a reduction whose
    inner loop runs along the row whatever its memory layout: ``ufunc.reduceat``'s segments, each its
    first element plus the rest's pairwise sum."""
    if x.ndim == 0 or x.dtype.kind != "f" or start.dtype != x.dtype or start.shape != x.shape[:-1]:
        raise ValueError(f"row_sum_from: float rows and one start per row of their dtype, got {x.describe()} "
                         f"and {start.describe()}")
    return _make("row_sum_from", [x, start], start.shape, x.dtype)


def iota(shape: tuple, axis: int) -> Node:
    """An int64 array of ``shape`` whose elements are their own index along ``axis``."""
    return _make("iota", [], shape, np.intp, axis=axis)


def sort_permutation(x: Node) -> Node:
    """The stable argsort of ``x`` along its last axis (int64): NaNs last, equal keys (+0.0 and -0.0
    included) in index order."""
    if x.ndim == 0:
        raise ValueError("sort_permutation: a 0-d array has no axis to sort")
    return _make("sort_permutation", [x], x.shape, np.intp)


def scan(kind: str, x: Node, axis, dtype, what: str) -> Node:
    """np.cumsum/np.cumprod (``kind`` "cumsum"/"cumprod"): NumPy's add/multiply.accumulate, the operand
    converted to the result dtype first (NumPy's choice: that of np.sum, so small integers and bool
    run in int64, unless ``dtype`` says otherwise); ``axis`` None scans the flattened array."""
    out = np.cumsum(np.zeros(1, x.dtype), dtype=dtype).dtype  # NumPy's choice, asked
    dt.check_supported(out, what)
    if axis is None or x.ndim == 0:  # (NumPy's PyArray_CheckAxis makes a 0-d array 1-d, then reads the axis)
        x, axis = reshape(x, (x.size,)), 0 if axis is None else axis
    axis = one_axis(axis, x.ndim, what)
    return _make(kind, [cast(x, out)], x.shape, out, axis=axis)


def accumulate(name: str, x: Node, axis: int, dtype, what: str) -> Node:
    """``ufunc.accumulate`` of a binary ufunc other than add and multiply (those are ``scan``): the first
    element, then ufunc(previous result, next element), in NumPy's accumulator type (its loop whose
    output feeds back; asked of NumPy, with its TypeError where there is none), the operand converted
    to it first as NumPy converts it."""
    ufunc = UFUNCS[name]
    if x.ndim == 0:
        raise TypeError("cannot accumulate on a scalar")
    out = ufunc.accumulate(np.zeros(1, x.dtype), dtype=dtype).dtype
    dt.check_supported(out, what)
    if name == "power" and out.kind in "iu":  # NumPy refuses a negative exponent as it meets one
        raise NotImplementedError(f"{what} of integers (NumPy's error for a negative power depends on the values)")
    axis = one_axis(axis, x.ndim, what)
    return _make("accumulate", [cast(x, out)], x.shape, out, axis=axis, ufunc=name)


def arg_reduce(kind: str, x: Node, axis, keepdims: bool, what: str) -> Node:
    """np.argmax/np.argmin: int64 positions along ``axis`` (None: of the flattened array)."""
    if axis is None:
        flat = reshape(x, (x.size,))
        r = arg_reduce(kind, flat, 0, False, what)
        return reshape(r, (1,) * x.ndim) if keepdims else r
    if isinstance(axis, (tuple, list)):
        raise TypeError(f"{what}: axis must be an integer or None, got {type(axis).__name__}")
    if not normalize_axes(axis, x.ndim, what, zero_d=True):  # axis 0 of a 0-d array: its one element
        return arg_reduce(kind, x, None, keepdims, what)
    axis = one_axis(axis, x.ndim, what)
    if x.shape[axis] == 0:
        raise ValueError(f"attempt to get {kind} of an empty sequence")
    shape = x.shape[:axis] + x.shape[axis + 1:]
    r = _make(kind, [x], shape, np.dtype(np.int64), axis=axis)
    return reshape(r, x.shape[:axis] + (1,) + x.shape[axis + 1:]) if keepdims else r


def reshape(x: Node, shape) -> Node:
    try:
        shape = tuple(operator.index(d) for d in shape)
    except TypeError:
        raise TypeError(f"expected a sequence of integers or a single integer, got {tuple(shape)}") from None
    if -1 in shape:
        known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
        if shape.count(-1) > 1 or known == 0 or x.size % known:
            raise ValueError(f"cannot reshape array of size {x.size} into shape {shape}")
        shape = tuple(x.size // known if d == -1 else d for d in shape)
    if int(np.prod(shape, dtype=np.int64)) != x.size or any(d < 0 for d in shape):
        raise ValueError(f"cannot reshape array of size {x.size} into shape {shape}")
    if shape == x.shape:
        return x
    return _make("reshape", [x], shape, x.dtype)


def _laid_out_like(made: Node, operand: Node) -> Node:
    """A constant a ufunc of one operand folded to, laid out as NumPy's iterator allocates that ufunc's
    result (the operand's order)."""
    from .layout import contiguous_strides, iteration_order, strides_of, with_strides  # (layout reads UFUNCS)
    if operand.shape != made.shape:
        return made
    return with_strides(made, contiguous_strides(made.shape, iteration_order(made.shape, [strides_of(operand)])))


def copy(x: Node, order: str) -> Node:
    """``x`` copied into a fresh array laid out in ``order`` ("C", "F", "A" or "K"). Its values are x's, so
    it lowers to nothing; what it changes is NumPy's layout, which NumPy's float sums follow (``layout``)."""
    return _make("copy", [x], x.shape, x.dtype, order=order)


def laid_out(x: Node, strides: tuple) -> Node:
    """``x`` in memory laid out with ``strides``, whatever layout the ops that computed it imply (lowers
    to nothing, as ``copy``): a NumPy function's fresh result, an array written in place."""
    from .layout import strides_of  # (layout reads this module's UFUNCS)
    if strides_of(x) == tuple(strides):
        return x
    return _make("copy", [x], x.shape, x.dtype, order="K", strides=tuple(strides))


def laid_out_as(x: Node, old: Node) -> Node:
    """``x`` as the new contents of the memory that held ``old``: NumPy's in-place write keeps the
    target's layout, whatever layout ``x`` was computed in."""
    from .layout import known, strides_of
    return laid_out(x, strides_of(old)) if known(old) else layout_unknown(x)


def layout_unknown(x: Node) -> Node:
    """``x``, whose NumPy layout the model does not know (a view NumPy makes that the trace gathers, say):
    its sums take it as a fresh C-ordered array, and it comes back C-ordered, as does what is laid out
    after it (``layout.known``)."""
    return _make("copy", [x], x.shape, x.dtype, order="K", layout_unknown=True)


def transpose(x: Node, perm=None) -> Node:
    perm = tuple(reversed(range(x.ndim))) if perm is None else tuple(normalize_axes(p, x.ndim, "transpose")[0]
                                                                      for p in perm)
    if sorted(perm) != list(range(x.ndim)):
        raise ValueError(f"transpose: axes {perm} don't match array of dimension {x.ndim}")
    if perm == tuple(range(x.ndim)):
        return x
    return _make("transpose", [x], tuple(x.shape[p] for p in perm), x.dtype, perm=perm)


def slice_(x: Node, starts, sizes, steps) -> Node:
    if tuple(sizes) == x.shape:
        return x
    return _make("slice", [x], sizes, x.dtype, starts=tuple(starts), steps=tuple(steps))


def value_source(node: Node) -> Node:
    """The node whose elements ``node`` holds, through ops that only move or repeat them."""
    while node.op in _VALUE_PRESERVING:
        node = node.inputs[0]
    return node


def gather(x: Node, indices, axis: int) -> Node:
    """``x`` indexed along ``axis, axis + 1, ...`` by integer arrays (one per axis, broadcast together),
    as NumPy's adjacent advanced indices: the result has the broadcast shape in their place."""
    indices = list(indices) if isinstance(indices, (list, tuple)) else [indices]
    for idx in indices:
        if idx.dtype.kind not in "iu":
            raise IndexError(f"arrays used as indices must be of integer type, got {idx.dtype}")
    try:
        shape = tuple(np.broadcast_shapes(*[i.shape for i in indices]))
    except ValueError:
        raise IndexError("shape mismatch: indexing arrays could not be broadcast together with shapes "
                         + " ".join(str(i.shape) for i in indices)) from None
    if not int(np.prod(shape, dtype=np.int64)):
        # NumPy checks the broadcast index arrays, of which there is no element, so none is out of range;
        # a 0-d one is an integer index to NumPy, checked on its own
        indices = [i if i.ndim == 0 else const_node(np.zeros(i.shape, i.dtype)) for i in indices]
    # a 0-d index is an integer to NumPy, which checks those before the index arrays
    for j in sorted(range(len(indices)), key=lambda j: indices[j].ndim > 0):
        idx, n = indices[j], x.shape[axis + j]
        if n == 0 and idx.size:
            raise IndexError(f"index is out of bounds for axis {axis + j} with size 0")
        if idx.is_const():
            bad = (idx.value < -n) | (idx.value >= n)
            if bad.any():
                raise IndexOutOfBounds(f"gather index {int(idx.value[bad].flat[0])} is out of range for axis {axis + j} with size {n}")
        elif _checked_by_kernel(value_source(idx)) and idx.size:
            indices[j] = _checked_index(idx, axis + j, n)
    indices = [broadcast_to(i, shape) for i in indices]
    out = x.shape[:axis] + shape + x.shape[axis + len(indices):]
    return _make("gather", [x, *indices], out, x.dtype, axis=axis)


def gather_in_range(x: Node, idx: Node, axis: int) -> Node:
    """``gather`` of indices the caller has made in range by construction (clipped to the axis, a
    bisection's midpoints): no check, in the kernel or before it, is needed or added."""
    assert idx.dtype.kind in "iu", idx.dtype
    return _make("gather", [x, idx], x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype, axis=axis)


def reversed_slice(x: Node, axis: int, positions: np.ndarray, step: int) -> Node:
    """``x`` sliced along ``axis`` with a negative ``step`` (``positions``: the slice's, in range): a
    gather, which NumPy's view is to the layout model (attr ``view_step``: its stride multiplier)."""
    assert step < 0 and positions.ndim == 1, (step, positions.shape)
    return _make("gather", [x, const_node(positions.astype(np.int64))], x.shape[:axis] + positions.shape + x.shape[axis + 1:],
                 x.dtype, axis=axis, view_step=step)


def _checked_index(idx: Node, axis: int, n: int) -> Node:
    """A computed index, out-of-range elements replaced by 0 (native code never reads outside the
    table), the kernel reporting any it met."""
    out_of_range = elementwise("greater_equal", [idx, dt.Weak(n)])
    if idx.dtype.kind == "i":
        out_of_range = elementwise("logical_or", [out_of_range, elementwise("less", [idx, dt.Weak(-n)])])
    if out_of_range.is_const() and not out_of_range.value.any():
        return idx  # the dtype holds no value out of range (int8 indices of an axis of 300)
    line, origin = user_location().short(), _kernel_value_origin(idx, "an index")
    safe = check_at_run_time(idx, out_of_range, "first", IndexOutOfBounds,
                             lambda bad: f"index {bad} is out of bounds for axis {axis} with size {n} ({origin}, "
                                         f"used at {line}; checked as the kernel ran)")
    if safe is None:
        raise NotImplementedError("gather indices computed outside a traced function must be a function argument "
                                  "or a constant, so they can be bounds-checked before native code runs")
    return safe


def _eval_gather(node: Node, values):
    axis = node.attrs["axis"]
    return values[0][(slice(None),) * axis + tuple(values[1:])]


def concat(xs: list[Node], axis: int) -> Node:
    if not xs:
        raise ValueError("need at least one array to concatenate")
    nd = xs[0].ndim
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        one_axis(axis, max(nd, 1), "concatenate")  # NumPy reads the axis's type first: its TypeError
    if nd == 0:
        raise ValueError("zero-dimensional arrays cannot be concatenated")
    axis = one_axis(axis, nd, "concatenate")
    out = np.result_type(*[np.empty((0,), x.dtype) for x in xs])
    for x in xs:
        if x.ndim != nd or any(a != b for i, (a, b) in enumerate(zip(x.shape, xs[0].shape)) if i != axis):
            raise ValueError(f"concatenate: all the input array dimensions except for the concatenation axis must match, got {[x.shape for x in xs]}")
    xs = [cast(x, out) for x in xs]
    if len(xs) == 1:
        return xs[0]
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return _make("concat", xs, shape, out, axis=axis)


def broadcast_to(x: Node, shape) -> Node:
    shape = tuple(int(d) for d in shape)
    if broadcast_shapes(x.shape, shape, what="broadcast_to") != shape:
        raise ValueError(f"cannot broadcast shape {x.shape} to {shape}")
    if shape == x.shape:
        return x
    return _make("broadcast_to", [x], shape, x.dtype, compute=(x.dtype,))


def window_dots(x: Node, w: Node, n_left: int, n_right: int) -> Node:
    """NumPy's correlation of x (n1,) with w (n2,), n1 >= n2 >= 1, both of one float32/float64 dtype, as its
    _pyarray_correlate computes it: ``n_left`` outputs before the full windows, each the dot of x's first
    elements with w's last ones (one more each), the n1 - n2 + 1 full windows, and ``n_right`` after, shrinking
    alike. Every output is BLAS's ?dot of the overlapping elements at unit strides, but the full windows of a w
    of at most 11 elements, which NumPy's small_correlate sums in order from 0."""
    n1, n2 = x.shape[0] if x.ndim == 1 else -1, w.shape[0] if w.ndim == 1 else -1
    if x.dtype != w.dtype or x.dtype not in (np.float32, np.float64) or not n1 >= n2 >= 1 or \
            not 0 <= n_left < n2 or not 0 <= n_right < n2:
        raise ValueError(f"window_dots: a longer and a shorter vector of one float dtype; got {x.shape} {x.dtype}, "
                         f"{w.shape} {w.dtype}, n_left={n_left}, n_right={n_right}")
    return _make("window_dots", [x, w], (n1 - n2 + 1 + n_left + n_right,), x.dtype, n_left=n_left, n_right=n_right)


# the longest w whose full windows NumPy's small_correlate sums itself (in order) rather than with BLAS
SMALL_CORRELATE = 11


def window_bounds(i: int, n1: int, n2: int, n_left: int) -> tuple[int, int, int]:
    """Output i of ``window_dots``: where its elements start in x and in w, and how many overlap."""
    x_start, w_start = max(i - n_left, 0), max(n_left - i, 0)
    return x_start, w_start, min(n2 - w_start, n1 - x_start)


def _eval_window_dots(node, values):
    x, w = values
    n_left = node.attrs["n_left"]
    out = np.zeros(node.shape, node.dtype)
    for i in range(out.shape[0]):
        xs, ws, n = window_bounds(i, x.shape[0], w.shape[0], n_left)
        if w.shape[0] <= SMALL_CORRELATE and n == w.shape[0]:
            total = node.dtype.type(0)
            for j in range(n):
                total = total + x[xs + j] * w[ws + j]
            out[i] = total
        else:
            out[i] = node.dtype.type(0) + np.dot(np.ascontiguousarray(x[xs:xs + n]), np.ascontiguousarray(w[ws:ws + n]))
    return out


primitive("window_dots", _eval_window_dots, lambda em, n, ops: em.window_dots(n, ops), "accumulates")
ROW_DOT_MODES = ("unit", "strided", "loop")


def row_dots(x: Node, y: Node, mode: str) -> Node:
    """``out[i, j]``: the dot of row i of x (m, k) and row j of y (n, k), both of one float32/float64 dtype, as
    NumPy's np.dot of operands of more than two axes computes each output element: BLAS's ?dot where both
    operands' strides along k are BLAS's, OpenBLAS taking one kernel at unit strides ("unit") and another at
    any others ("strided"), and a running sum from 0 where they are not ("loop": a zero or negative stride)."""
    if mode not in ROW_DOT_MODES or x.dtype != y.dtype or x.dtype not in (np.float32, np.float64) or \
            x.ndim != 2 or y.ndim != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"row_dots: rows of one length and float dtype, a mode of {ROW_DOT_MODES}; got {x.shape} "
                         f"{x.dtype}, {y.shape} {y.dtype}, {mode!r}")
    return _make("row_dots", [x, y], (x.shape[0], y.shape[0]), x.dtype, mode=mode)


def _converted_operand(x: Node, dtype, gufunc: bool) -> Node:
    """A matmul operand converted to the loop's ``dtype``: NumPy's matmul gufunc (np.matmul, @, np.vecdot, ...)
    converts it into a fresh C-ordered array (core axes last), whatever its layout, which its BLAS call then
    reads as a C array; np.dot's conversion keeps the operand's layout (its K order: a cast's own)."""
    from .layout import contiguous_strides  # (layout reads this module's UFUNCS)
    converted = cast(x, dtype)
    return laid_out(converted, contiguous_strides(x.shape)) if gufunc and converted is not x else converted


def _loop_axes_flattened(x: Node) -> Node:
    """``x`` (batch..., rows, columns) as one batch axis: NumPy's matmul loop steps through the batch axes one by
    one, copying nothing, so to the layout model each matrix keeps its strides (``loop_axes``)."""
    if x.ndim == 3:
        return x
    return _make("reshape", [x], (int(np.prod(x.shape[:-2], dtype=np.int64)),) + x.shape[-2:], x.dtype,
                 loop_axes=x.ndim - 2)


def matmul(a: Node, b: Node, gufunc: bool = False, cblas: bool = False) -> Node:
    """``a @ b`` (batched, a vector made a row or column); ``gufunc``: as NumPy's matmul gufunc converts its
    operands (``_converted_operand``), not as np.dot (and what NumPy builds on it) does; ``cblas``: two matrices
    that NumPy multiplies by np.dot's BLAS rule (cblasfuncs.c), not matmul's (attr ``cblas``)."""
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul: input operand does not have enough dimensions (scalars are not allowed)")
    compute, out = dt.resolve_ufunc(np.matmul, [a.dtype, b.dtype])
    if out.kind == "b":  # NumPy's bool matmul is an OR of ANDs: a count of true products, nonzero
        counts = matmul(cast(a, np.dtype(np.int64)), cast(b, np.dtype(np.int64)), gufunc)
        return elementwise("not_equal", [counts, const_node(np.zeros((), np.int64))])
    a, b = _converted_operand(a, compute[0], gufunc), _converted_operand(b, compute[1], gufunc)
    a2 = reshape(a, (1,) + a.shape) if a.ndim == 1 else a
    b2 = reshape(b, b.shape + (1,)) if b.ndim == 1 else b
    if a2.shape[-1] != b2.shape[-2]:
        raise ValueError(f"matmul: mismatch in core dimension: {a.shape} @ {b.shape}")
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2], what="matmul batch dimensions")
    m, k, n = a2.shape[-2], a2.shape[-1], b2.shape[-1]
    if batch:
        nb = int(np.prod(batch, dtype=np.int64))
        a3 = _loop_axes_flattened(broadcast_to(a2, batch + (m, k)))
        b3 = _loop_axes_flattened(broadcast_to(b2, batch + (k, n)))
        r = reshape(_make("matmul", [a3, b3], (nb, m, n), out), batch + (m, n))
    else:
        r = _make("matmul", [a2, b2], (m, n), out, **({"cblas": True} if cblas else {}))
    final = batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ())
    return reshape(r, final)
