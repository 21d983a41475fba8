"""Element types: which NumPy dtypes the compiler supports, their MLIR spelling,
and the NumPy 2 (NEP 50) promotion rules. The rules are never re-implemented:
NumPy itself is asked, with Python scalars passed as weak operands."""

from __future__ import annotations

import numbers

import numpy as np

SUPPORTED = {
    np.dtype(np.bool_): "i1",
    np.dtype(np.int8): "i8",
    np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
    np.dtype(np.uint8): "i8",
    np.dtype(np.uint16): "i16",
    np.dtype(np.uint32): "i32",
    np.dtype(np.uint64): "i64",
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
}


class Weak:
    """A Python scalar operand: it takes part in promotion as a *weak* type (NEP 50)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    @property
    def pytype(self):
        # bool before int: bool is a subclass of int
        for t in (bool, int, float, complex):
            if isinstance(self.value, t):
                return t
        raise TypeError(f"unsupported Python scalar {self.value!r}")


def check_supported(dtype, what: str) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype not in SUPPORTED:
        raise TypeError(f"{what}: dtype {dtype} is not supported (supported: {', '.join(sorted(str(d) for d in SUPPORTED))})")
    return dtype


def mlir_type(dtype) -> str:
    return SUPPORTED[np.dtype(dtype)]


def storage_type(dtype) -> str:
    """The element type of tensors and buffers: bool is stored as one byte (i8), as NumPy does;
    MLIR's memref-to-LLVM lowering cannot load or store i1, so i1 exists only inside regions."""
    return "i8" if np.dtype(dtype).kind == "b" else mlir_type(dtype)


def tensor_type(shape, dtype) -> str:
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{storage_type(dtype)}>"


def arithmetic_type(dtype) -> np.dtype:
    """The type a value of ``dtype`` is computed in: NumPy's float16 loops convert each operand to
    float32, compute, and round the result back to float16 (a single +, -, *, / or sqrt rounded twice
    that way is still correctly rounded: float32 carries more than 2 * 11 + 2 bits), so the compiler
    does the same rather than trust each target's own half-precision arithmetic and math functions."""
    dtype = np.dtype(dtype)
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def is_float(dtype) -> bool:
    return np.dtype(dtype).kind == "f"


def is_unsigned(dtype) -> bool:
    return np.dtype(dtype).kind in "ub"


def is_bool(dtype) -> bool:
    return np.dtype(dtype).kind == "b"


def is_python_scalar(x) -> bool:
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def resolve_ufunc(ufunc: np.ufunc, operand_types: list, signature=None, casting=None) -> tuple[list[np.dtype], np.dtype]:
    """(loop input dtypes, output dtype) NumPy would use; operands are dtypes or Weak scalars. ``signature``
    and ``casting`` are the ufunc call's (``dtype=D`` is the signature ``(None, ..., D)``): NumPy checks
    the operands' conversions to the loop's types under ``casting`` (default 'same_kind')."""
    spec = tuple(t.pytype if isinstance(t, Weak) else np.dtype(t) for t in operand_types)
    given = {k: v for k, v in (("signature", signature), ("casting", casting)) if v is not None}
    try:
        resolved = ufunc.resolve_dtypes(spec + (None,) * ufunc.nout, **given)
    except Exception as exc:  # NumPy's own error, of its own class (UFuncTypeError's kin, a ValueError for a
        # malformed signature), so that what catches NumPy's catches it; the note names what was asked
        asked = "".join(f" and {k}={v!r}" for k, v in given.items())
        exc.add_note(f"np.{ufunc.__name__} is not defined for operand types {spec}{asked}")
        raise
    ins, outs = resolved[: ufunc.nin], resolved[ufunc.nin:]
    return [np.dtype(d) for d in ins], np.dtype(outs[0])


def weak_to_array(value, dtype) -> np.ndarray:
    """Materialize a weak Python scalar in the dtype promotion chose (raises on overflow as NumPy does)."""
    if np.dtype(dtype).kind == "b" and isinstance(value, int) and not isinstance(value, bool):
        # a bool loop (np.logical_*) takes a Python int through a C long first: beyond int64, OverflowError
        return np.asarray(np.asarray(value, dtype=np.int64), dtype=bool)
    if np.dtype(dtype).kind in "iu" and isinstance(value, float):
        # only an unsafe dtype= gets here: NumPy casts the float as a float64 (wrapping, and the
        # platform's value for NaN and out-of-range ones) where np.asarray would refuse
        with np.errstate(invalid="ignore"):
            return np.asarray(np.float64(value)).astype(dtype)
    return np.asarray(value, dtype=dtype)


def number_like(x) -> bool:
    return isinstance(x, numbers.Number)
