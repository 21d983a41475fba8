"""The NumPy surface the tracer understands: ufuncs through ``__array_ufunc__``,
array functions through ``__array_function__``, and indexing. Each entry
decomposes a NumPy function into primitives with NumPy's own semantics; anything
not listed raises ``NotImplementedError`` naming the function at trace time."""

from __future__ import annotations

import builtins
import contextlib
import math
import operator
import string
import warnings

import numpy as np

from . import dtypes as dt
from . import layout
from . import primitives as P
from .graph import const_node
from .tracer import (FULL_HINT, READ_ONLY, FlatIterator, Tensor, numpy_entry_point, as_node, as_operand,
                     call_library_function, dtype_argument, gathered, memory_order, raise_numpys_type_error,
                     update_in_place, view)

UFUNC_PRIMITIVES = {ufunc: name for name, ufunc in P.UFUNCS.items()}


def _node(x):
    return as_node(x)


def _operand(x):
    op = as_operand(x)
    if op is NotImplemented:
        if isinstance(x, MaskedRead):
            x.refuse()  # y[mask] where only elementwise functions of it are followed
        raise TypeError(f"unsupported operand of type {type(x).__name__}")
    return op


# --------------------------------------------------------------------------- ufuncs


def apply_ufunc(ufunc, method, inputs, kwargs):
    if any(isinstance(v, MaskedRead) for v in inputs):
        return NotImplemented  # a selection's own __array_ufunc__ takes it
    if method in _UFUNC_METHODS:
        if isinstance(kwargs.get("dtype"), Tensor):
            dtype_argument(kwargs["dtype"], f"np.{ufunc.__name__}.{method}(..., dtype=...)")
        return _UFUNC_METHODS[method](ufunc, *inputs, **kwargs)
    if method != "__call__":
        raise NotImplementedError(f"np.{ufunc.__name__}.{method} is not supported by the compiler")
    kwargs = dict(kwargs)
    out, where = kwargs.pop("out", None), kwargs.pop("where", True)
    if out is not None:  # NumPy's TypeError for the loop's types and the casts to out, before any shape's
        raise_numpys_type_error(ufunc, inputs, out, f"np.{ufunc.__name__}(..., out=...)",
                                **{k: kwargs[k] for k in ("dtype", "signature", "casting") if k in kwargs})
    loop = _loop_arguments(ufunc, kwargs)
    placement = {k: kwargs.pop(k) for k in _CORE_PLACEMENT if k in kwargs} if _is_vector_gufunc(ufunc) else {}
    order = kwargs.pop("order", None)
    if order is not None:
        np.positive(np.zeros(()), order=order)  # NumPy's reading of it (its errors)
    # whether a subclass survives (subok=) changes no value
    if not isinstance(kwargs.get("subok", True), bool):
        raise TypeError("'subok' must be a boolean")
    unsupported = {k: v for k, v in kwargs.items() if k != "subok"}
    if unsupported:
        raise NotImplementedError(f"np.{ufunc.__name__}: keyword arguments {sorted(unsupported)} are not supported by the compiler")
    if where is not True and out is None:
        raise NotImplementedError(f"np.{ufunc.__name__}: where= without out= leaves NumPy's uninitialized memory where "
                                  "the mask is False; pass out= too")
    written = _written_iteration(out, where) if out is not None and not placement else None
    results = _gufunc_placed(ufunc, inputs, placement, loop) if placement else \
        _ufunc_results(ufunc, inputs, written=written, **loop)
    if out is not None:
        return _into_out(ufunc, results, out, where, loop["casting"] or "same_kind")
    return results if order is None else _laid_out_in_order(ufunc, inputs, results, order, placement, loop)


def _laid_out_in_order(ufunc, inputs, results, order, placement: dict, loop: dict):
    """A ufunc's results under ``order=``: 'K' is the layout the model follows anyway; 'C', 'F' and 'A' are
    the layouts NumPy gives, asked of NumPy's own call on stand-ins laid out as the operands ('A' follows
    them: unknown where the model does not know theirs)."""
    kind = (order.decode() if isinstance(order, bytes) else str(order)).upper()
    if kind == "K":
        return results
    known = all(layout.known(x.node) for x in inputs if isinstance(x, Tensor))
    several = isinstance(results, tuple)
    if not known and kind == "A":
        laid = [P.layout_unknown(r.node) if r.ndim else r for r in (results if several else (results,))]
    else:
        stand_ins = [(_stand_in_laid_out(x) if known else np.zeros(x.shape, x.dtype)) if isinstance(x, Tensor)
                     else x for x in inputs]
        with np.errstate(all="ignore"):
            expected = ufunc(*stand_ins, order=order, **{k: v for k, v in loop.items() if v is not None},
                             **placement)
        laid = [P.laid_out(r.node, tuple(s // n.itemsize for s in n.strides)) if r.ndim else r
                for r, n in zip(results if several else (results,), expected if several else (expected,))]
    laid = [n if isinstance(n, Tensor) else Tensor(n, scalar=True) for n in laid]  # (a 0-d result as it was)
    return tuple(laid) if several else laid[0]


_CASTING_RULES = ("no", "equiv", "safe", "same_kind", "unsafe")


def _loop_arguments(ufunc, kwargs: dict) -> dict:
    """A ufunc call's ``dtype=``, ``signature=`` and ``casting=`` (popped from ``kwargs``) as the
    ``signature`` and ``casting`` that resolve its loop; NumPy's errors for conflicting or bad ones."""
    dtype, signature = kwargs.pop("dtype", None), kwargs.pop("signature", None)
    casting = kwargs.pop("casting", None)
    if dtype is not None and signature is not None:
        raise TypeError("cannot specify both 'signature' and 'dtype'")
    if signature is not None and not isinstance(signature, (str, tuple)):
        raise TypeError("the signature object to ufunc must be a string or a tuple.")
    if casting is not None and casting not in _CASTING_RULES:
        raise ValueError(f"casting must be one of {', '.join(map(repr, _CASTING_RULES))} (got {casting!r})")
    if dtype is not None:  # NumPy 2: the dtype of the outputs, the inputs' left to the loop
        signature = (None,) * ufunc.nin + (dtype_argument(dtype, f"np.{ufunc.__name__}(..., dtype=...)"),) * ufunc.nout
    elif isinstance(signature, tuple):
        signature = tuple(None if d is None else dtype_argument(d, f"np.{ufunc.__name__}(..., signature=...)")
                          for d in signature)
    return {"signature": signature, "casting": casting}


def _into_out(ufunc, results, out: tuple, where, casting: str = "same_kind"):
    """NumPy's ``out=``: each result broadcast to its out array's shape, converted to its dtype under
    ``casting``, and written where ``where`` holds into the array's memory (update_in_place: every view
    of it sees the write); the out arrays are returned, NumPy's results where an entry is None."""
    several = isinstance(results, tuple)
    results = results if several else (results,)
    if len(out) != len(results):
        raise ValueError("The 'out' tuple must have exactly one entry per ufunc output")
    returned = []
    for result, target in zip(results, out):
        if target is None:
            returned.append(result)
            continue
        if isinstance(target, Tensor) and target.numpy_scalar:
            raise TypeError("return arrays must be of ArrayType")  # a NumPy scalar cannot be written
        if not isinstance(target, Tensor):
            raise NotImplementedError(
                f"np.{ufunc.__name__}(..., out=...): out is a NumPy array, whose memory a compiled function cannot "
                "write; make it from a traced array (np.zeros_like(x, shape=n)) or use the returned array")
        try:
            shape = np.broadcast_shapes(result.shape, target.shape)
        except ValueError:
            shape = None
        if shape != target.shape:
            raise ValueError(f"operands could not be broadcast together with shapes {result.shape} and the output's "
                             f"{target.shape} (np.{ufunc.__name__}, out=)")
        if not np.can_cast(result.dtype, target.dtype, casting=casting):
            raise TypeError(f"Cannot cast ufunc '{ufunc.__name__}' output from {result.dtype!r} to {target.dtype!r} "
                            f"with casting rule {casting!r}")
        mask_dtype = where.dtype if isinstance(where, Tensor) else np.asarray(where).dtype
        if not np.can_cast(mask_dtype, np.bool_, casting="safe"):
            raise TypeError(f"Cannot cast array data from {mask_dtype!r} to dtype('bool') according to the rule 'safe'")
        _write_where(target, result.node, where, f"np.{ufunc.__name__}(..., out=...)", "use the returned array instead")
        returned.append(target)
    return tuple(returned) if several else returned[0]


def _written_iteration(out: tuple, where) -> P.WrittenInto | None:
    """The out= array NumPy's iterator walks along with a ufunc's operands, and where='s mask (``layout.loop_steps``
    reads their strides); None where there is not one traced array, or the model only guesses a layout."""
    if len(out) != 1 or not isinstance(out[0], Tensor):
        return None
    target = out[0].node
    mask = None
    if where is not True:
        mask = where.node if isinstance(where, Tensor) else layout.user_array_node(np.asarray(where))
        if mask.ndim > target.ndim or not layout.known(mask):
            return None
    if not layout.known(target):
        return None
    return P.WrittenInto(target.shape, layout.strides_of(target), target.dtype, layout.memory_start(target),
                         None if mask is None else (layout.broadcast_strides(mask, target.shape), mask.dtype))


def _ufunc_results(ufunc, inputs, signature=None, casting=None, written=None):
    """The result (a tuple of them for np.divmod, np.frexp, np.modf) of calling ``ufunc`` on traced inputs;
    ``signature`` and ``casting`` choose the loop (see ``_loop_arguments``); ``written``: the out= array the
    result goes into (``_written_iteration``), for the steps NumPy's loop is called with."""
    name = UFUNC_PRIMITIVES.get(ufunc)
    if name is not None:
        return Tensor(P.elementwise(name, [_operand(x) for x in inputs], signature, casting, written=written),
                      scalar=True)
    if ufunc is np.square:  # x * x in the loop NumPy picks for square (bool's is int8), under the same arguments
        x = _node(inputs[0])
        compute, out = dt.resolve_ufunc(np.square, [x.dtype], signature, casting)
        x = P.cast(x, compute[0])
        return Tensor(P.cast(P.elementwise("multiply", [x, x]), out), scalar=True)
    if ufunc is np.divmod:  # floor_divide and remainder in divmod's own loop
        x, y = (_operand(v) for v in inputs)
        compute, out = dt.resolve_ufunc(np.divmod, [o if isinstance(o, dt.Weak) else o.dtype for o in (x, y)],
                                        signature, casting)
        both = (compute[0], compute[1], out)
        return tuple(Tensor(P.elementwise(name, [x, y], both, "unsafe"), scalar=True)
                     for name in ("floor_divide", "remainder"))
    if signature is not None and _converts_for_its_loop(ufunc):
        # the loop NumPy resolves for the signature: the operands converted to its types, the default loop of
        # those (the same one), its result converted to the loop's output type
        operands = [_operand(x) for x in inputs]
        if not any(isinstance(o, dt.Weak) for o in operands):
            compute, out = dt.resolve_ufunc(ufunc, [o.dtype for o in operands], signature, casting)
            results = _ufunc_results(ufunc, [Tensor(P.cast(o, c)) for o, c in zip(operands, compute)])
            return Tensor(P.laid_out_as(P.cast(results.node, out), results.node), scalar=True)
    if signature is not None:
        _numpys_loop_or_its_error(ufunc, inputs, signature, casting)
        raise NotImplementedError(f"np.{ufunc.__name__}: dtype= and signature= are not supported by the compiler "
                                  "for this ufunc; convert its operands or its result with astype")
    if casting is not None and ufunc.__name__ not in _GUFUNC_CORES and ufunc is not np.matmul:
        # the loop is NumPy's default one: only whether the operands may be converted to it is in question
        operands = [_operand(x) for x in inputs]
        dt.resolve_ufunc(ufunc, [o if isinstance(o, dt.Weak) else o.dtype for o in operands], casting=casting)
    if ufunc is np.matmul:
        return Tensor(P.matmul(_node(inputs[0]), _node(inputs[1]), gufunc=True), scalar=True)
    if ufunc.__name__ in _GUFUNC_CORES and ufunc is getattr(np, ufunc.__name__):
        # the loop dimensions of NumPy's result follow its iterator over the operands': asked of NumPy
        return _laid_out_by_numpy(lambda *xs: _vector_gufunc(ufunc.__name__, *xs), ufunc)(*inputs)
    if ufunc is np.frexp:
        return tuple(Tensor(n, scalar=True) for n in P.frexp(_node(inputs[0])))
    if ufunc is np.modf:
        return _modf(_node(inputs[0]))
    if ufunc is np.conjugate:  # of a real array: its values, in the loop's type (bool's is int8)
        x = _node(inputs[0])
        _, out = dt.resolve_ufunc(np.conjugate, [x.dtype])
        return Tensor(_unary_result(P.cast(x, out)), scalar=True)
    if ufunc is np.positive:  # a fresh array of the same values; NumPy has no bool loop
        x = _node(inputs[0])
        dt.resolve_ufunc(np.positive, [x.dtype])
        return Tensor(_unary_result(x), scalar=True)
    _numpys_loop_or_its_error(ufunc, inputs)  # (np.isnat of numbers: NumPy's TypeError)
    raise NotImplementedError(f"np.{ufunc.__name__} is not supported by the compiler")


def _unary_result(x: P.Node) -> P.Node:
    """``x``'s values as a unary ufunc's fresh array: laid out in the order its iterator visits x, which is
    not x's own where x is a broadcast or has gaps (and a later sum follows the layout: ``layout``)."""
    return P.laid_out(x, layout.contiguous_strides(x.shape, layout.iteration_order(x.shape, [layout.as_read(x)])))


def _numpys_loop_or_its_error(ufunc, inputs, signature=None, casting=None) -> None:
    """NumPy's own error where it has no loop for these operands and loop arguments (before the compiler's
    refusal of what NumPy computes)."""
    operands = [_operand(x) for x in inputs]
    dt.resolve_ufunc(ufunc, [o if isinstance(o, dt.Weak) else o.dtype for o in operands], signature, casting)


def _converts_for_its_loop(ufunc) -> bool:
    """Whether ``ufunc``'s loops, outside the elementwise primitives, each compute in one type that its operands
    are converted to (np.positive, np.conjugate, np.matmul and the vector gufuncs: a signature or dtype= picks
    the loop by its types alone)."""
    return ufunc in (np.positive, np.conjugate, np.matmul) or \
        ufunc.__name__ in _GUFUNC_CORES and ufunc is getattr(np, ufunc.__name__)


def _modf(x: P.Node) -> tuple[Tensor, Tensor]:
    """C's modf in the loop's float type: the integral part trunc(x); the fractional part x - trunc(x)
    (exact), 0 for an infinity, with x's sign either way (-3.0 gives -0.0; NaN gives NaN twice)."""
    compute, _ = dt.resolve_ufunc(np.modf, [x.dtype])
    x = P.cast(x, compute[0])
    integral = P.elementwise("trunc", [x])
    zero = const_node(np.zeros((), compute[0]))
    fraction = P.where(P.elementwise("isinf", [x]), zero, P.elementwise("subtract", [x, integral]))
    return Tensor(P.elementwise("copysign", [fraction, x]), scalar=True), Tensor(integral, scalar=True)


# ufunc methods: the ones NumPy's own functions are (np.sum is np.add.reduce, np.cumsum
# np.add.accumulate), with the methods' defaults (axis 0)


def _ufunc_reduce(ufunc, a, axis=0, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    if ufunc in (np.fmax, np.fmin):
        if dtype is not None:
            raise NotImplementedError(f"np.{ufunc.__name__}.reduce: argument dtype is not supported by the compiler")
        return _nan_extremum(ufunc.__name__[1:], a, axis, out, keepdims, initial,
                             np._NoValue if where is True else where, what=f"np.{ufunc.__name__}.reduce")
    same = {np.add: sum_, np.multiply: prod, np.maximum: amax, np.minimum: amin, np.logical_and: all_,
            np.logical_or: any_}.get(ufunc)
    if same is None:
        return _ufunc_fold(ufunc, a, axis, dtype, out, keepdims, initial, where)
    logical = ufunc in (np.logical_and, np.logical_or)
    extras = [k for k, v in (("dtype", dtype if ufunc not in (np.add, np.multiply) else None),
                             ("initial", None if initial is np._NoValue or not logical else initial)) if v is not None]
    if extras:
        raise NotImplementedError(f"np.{ufunc.__name__}.reduce: arguments {extras} are not supported by the compiler")
    kwargs = {"dtype": dtype} if ufunc in (np.add, np.multiply) else {}
    if not logical:
        kwargs["initial"] = initial
    a = a if out is None or not _is_numpy_scalar(a) else Tensor(_node(a))  # ufunc.reduce returns out itself
    return same(a, axis=axis, keepdims=keepdims, where=where, out=out, **kwargs)


# float reductions whose NumPy loops do not fold in order: every float type's, and float16's only
_SIMD_UNFOLDED = dict.fromkeys((np.arctan2, np.power), "NumPy's SIMD loop for it (AVX-512) reads the output's first "
                               "element once where a reduction needs it updated, so along a contiguous axis it gives "
                               "ufunc(first, last), by the machine")
_HALF_UNFOLDED = dict.fromkeys((np.subtract, np.divide), "NumPy's float16 loop keeps a reduction's running value in "
                               "float32 while its inner loop runs and rounds it where the loop ends, which depends on "
                               "the iteration")


# what an element a where= mask excludes folds as (``_ufunc_fold``), by the result's dtype kind: f(x, e) is x
# for every x the fold can hold
_FOLD_RIGHT_IDENTITY = {
    np.subtract: {"f": 0.0, "i": 0, "u": 0}, np.divide: {"f": 1.0},
    np.bitwise_or: {"i": 0, "u": 0, "b": False}, np.bitwise_xor: {"i": 0, "u": 0, "b": False},
    np.bitwise_and: {"i": -1, "u": "max", "b": True}, np.logical_xor: {"b": False},
    np.logaddexp: {"f": -np.inf}, np.logaddexp2: {"f": -np.inf},
}


def _ufunc_fold(ufunc, a, axis, dtype, out, keepdims, initial, where):
    """``ufunc.reduce`` of the other binary ufuncs (subtract, logaddexp, bitwise_or, ...): NumPy folds the
    ufunc's identity where it has one (else the first element) with the next, in index order along the axis
    (a reversed view's too: reductions do not negate strides), which is ``ufunc.accumulate``'s last element.
    Over every axis NumPy folds in its iterator's order, the array read as ``ravel(order="K")`` reads it; over
    some but not all axes of several its order interleaves the kept ones, and that is refused. NumPy's own
    reduce of zeros of the same shape and dtype gives its errors (an axis tuple of a non-reorderable ufunc, an
    empty reduction without identity), the result's dtype, and an empty reduction's value."""
    what = f"np.{ufunc.__name__}.reduce"
    name = UFUNC_PRIMITIVES.get(ufunc)
    if name is None or ufunc.nin != 2 or ufunc.nout != 1:
        raise NotImplementedError(f"{what} is not supported by the compiler")
    x = _tensor(a)
    given = {} if initial is np._NoValue else {"initial": initial}
    if out is not None:  # NumPy's loop for (out's dtype, the array's), the result written into out
        target = _reduction_target(out, what)
        loop = dtype if dtype is not None else np.dtype(ufunc.resolve_dtypes((target.dtype, x.dtype, None))[0])
        check = lambda o: ufunc.reduce(_stand_in(x), axis=axis, dtype=dtype, out=o, keepdims=keepdims,  # noqa: E731
                                       where=_stand_in(where), **given)
        folded = _ufunc_fold(ufunc, Tensor(x.node), axis, loop, None, keepdims, initial, where)
        return _as_returned_for(a, _into_reduction_out(f"{ufunc.__name__}.reduce", target, check, folded))
    with np.errstate(all="ignore"):  # (NumPy's errors: where= with no start, shapes, the start's conversion)
        empty = ufunc.reduce(np.zeros(x.shape, x.dtype), axis=axis, dtype=dtype, keepdims=keepdims,
                             where=_stand_in(where), **given)
    result_type = np.asarray(empty).dtype
    why = result_type.kind == "f" and (_SIMD_UNFOLDED.get(ufunc) or
                                       result_type == np.float16 and _HALF_UNFOLDED.get(ufunc))
    if why:
        raise NotImplementedError(f"{what} of {result_type}: {why}")
    with contextlib.suppress(TypeError):  # (no loop at all: NumPy's error comes from the fold below)
        loop = ufunc.resolve_dtypes((result_type, x.dtype, result_type), casting="unsafe")
        if loop[0] != loop[1]:  # np.ldexp.reduce of ints: int exponents into a float accumulator
            raise NotImplementedError(f"{what} of {x.dtype}: NumPy's loop folds {loop[1]} elements into a "
                                      f"{loop[0]} result; the compiler folds only operands of the result's type")
    if not x.size:  # nothing to fold: the start (or NumPy's error, above)
        return Tensor(const_node(np.asarray(empty)), scalar=not np.ndim(empty))
    # NumPy's output starts at initial=, else the ufunc's identity; initial=None (or no identity) starts
    # from the first element
    start_value = ufunc.identity if initial is np._NoValue else initial
    if initial is not np._NoValue and initial is not None:  # converted as NumPy's reduction of nothing converts it
        first = np.asarray(ufunc.reduce(np.zeros((0,), x.dtype), dtype=dtype, initial=initial)).astype(result_type)
    elif start_value is not None:  # the identity, wrapped into the result's type (bitwise_and's -1: all ones)
        first = np.asarray(ufunc.identity).astype(result_type)
    if where is not True:  # an element the mask excludes folds as the ufunc's right identity, changing nothing
        identity = _FOLD_RIGHT_IDENTITY.get(ufunc, {}).get(result_type.kind)
        if ufunc in (np.hypot, np.gcd) and start_value is not None and first >= 0 and not np.signbit(first):
            # (|out| is out: from a start of +0 or more, every value folded is so)
            identity = 0
        if identity is None:
            raise NotImplementedError(f"{what} with where=: {ufunc.__name__} has no value that leaves every "
                                      f"{result_type} unchanged for an excluded element to fold as")
        identity = getattr(np.iinfo(result_type), identity) if isinstance(identity, str) else identity
        x = Tensor(P.where(_where_mask(where, x.node, what), P.cast(x.node, result_type),
                           const_node(np.asarray(identity).astype(result_type))))
    if not x.ndim:  # the one element, folded as a row of one (after the start, where there is one)
        x, axis = Tensor(P.reshape(x.node, (1,))), None
    axes = tuple(range(x.ndim)) if axis is None else P.normalize_axes(axis, x.ndim, what)
    if not axes:  # axis=(): NumPy folds each element alone, after the start where there is one
        x, axes = Tensor(P.reshape(x.node, x.shape + (1,))), (x.ndim,)
    if len(axes) > 1:
        if len(axes) != x.ndim:
            raise NotImplementedError(f"{what} over {len(axes)} of {x.ndim} axes: NumPy folds in an order that "
                                      "interleaves the kept axes (reduce one axis at a time, or all of them)")
        x, axes = Tensor(x._read_flat("K", what)), (0,)
    operand = x.node
    if start_value is not None:
        # NumPy's reduction starts there, in the result's type (get_initial_from_ufunc; converted as NumPy's
        # reduction of nothing converts it): np.hypot.reduce([-3.0]) is hypot(0, -3.0) = 3.0, np.gcd.reduce([-6])
        # is 6, np.logaddexp's of [-0.0] is 0.0
        start = const_node(np.full(x.shape[:axes[0]] + (1,) + x.shape[axes[0] + 1:], first))
        operand = P.concat([start, P.cast(operand, result_type)], axes[0])
    folded = P.accumulate(name, operand, axes[0], dtype, what)
    if folded.dtype != result_type:
        raise NotImplementedError(f"{what}: the accumulator type {folded.dtype} is not NumPy's result type "
                                  f"{result_type}")
    n, axis = folded.shape[axes[0]], axes[0]
    last = P.slice_(folded, [n - 1 if d == axis else 0 for d in range(folded.ndim)],
                    [1 if d == axis else m for d, m in enumerate(folded.shape)], [1] * folded.ndim)
    kept = P.reshape(last, folded.shape[:axis] + folded.shape[axis + 1:])
    if layout.known(x.node):  # the array NumPy's reduction allocates, laid out after the operand
        kept = P.laid_out(kept, layout.reduced(x.shape, layout.strides_of(x.node), (axis,)))
    return Tensor(P.reshape(kept, np.shape(empty)), scalar=not np.ndim(empty))


def _ufunc_accumulate(ufunc, a, axis=0, dtype=None, out=None):
    """cumsum/cumprod for add/multiply, NumPy's accumulate of any other binary ufunc (``P.accumulate``);
    one axis (NumPy refuses None and several), never a 0-d operand."""
    name = UFUNC_PRIMITIVES.get(ufunc)
    if name is None or ufunc.nin != 2 or ufunc.nout != 1:
        raise NotImplementedError(f"np.{ufunc.__name__}.accumulate is not supported by the compiler")
    x = _node(a)
    if x.ndim == 0:  # (NumPy reads the axis of a 0-d array as of a 1-d one first)
        if axis is not None and not isinstance(axis, tuple):
            np.lib.array_utils.normalize_axis_index(axis, 1)
        raise TypeError("cannot accumulate on a scalar")
    if isinstance(axis, tuple):  # (NumPy reads the axes, its AxisError, before it counts them)
        np.lib.array_utils.normalize_axis_tuple(axis, x.ndim)
    if axis is None or (isinstance(axis, tuple) and len(axis) != 1):
        raise ValueError("accumulate does not allow multiple axes")
    axis = axis[0] if isinstance(axis, tuple) else axis
    same = {np.add: cumsum, np.multiply: cumprod}.get(ufunc)
    if same is not None:  # (NumPy's cumsum is this accumulate, out= included)
        return same(a, axis=axis, dtype=dtype, out=out)
    what = f"np.{ufunc.__name__}.accumulate"
    if out is None:
        return Tensor(P.accumulate(name, x, axis, dtype, what))
    # into out=: the running value kept in the loop NumPy picks for (out's dtype, the array's), as for cumsum
    target = _reduction_target(out, what)
    if dtype is None:
        dtype = np.dtype(ufunc.resolve_dtypes((target.dtype, x.dtype, None))[0])
        if ufunc.resolve_dtypes((dtype, dtype, None))[2] != dtype:  # logical_and's bool loop: cast into out
            dtype = None
    result = Tensor(P.accumulate(name, x, axis, dtype, what))
    return _into_reduction_out(f"{ufunc.__name__}.accumulate", target,
                               lambda o: ufunc.accumulate(_stand_in(Tensor(x)), axis, dtype, out=o), result)


def _ufunc_outer(ufunc, a, b, **kwargs):
    """Every element of a against every one of b: a's axes, then b's (operands as arrays, so strong)."""
    x, y = _node(a), _node(b)
    return apply_ufunc(ufunc, "__call__", (Tensor(P.reshape(x, x.shape + (1,) * y.ndim)), Tensor(y)), kwargs)


# np.add.at of repeated positions whose loop is not the target's own type: one traced step per repeat, up to this
# many; beyond, a kernel loop over the updates (P.scatter)
_AT_MAX_STEPS = 64


def _ufunc_at(ufunc, a, indices, b=None):
    """NumPy's unbuffered ``ufunc.at(a, indices, b)``: every element of ``a[indices]`` (in C order of that
    indexing's result; ``b`` broadcast to it) updated in turn, so a position indexed twice takes both,
    in that order, each step computed in the ufunc's loop for (a's dtype, b's) and cast back to a's
    dtype (``b`` converted as np.asarray converts it: a Python number is NumPy's int64/float64 here).
    NumPy runs its own ufunc.at on stand-ins first (its index, shape and type errors). The positions
    may be traced (``_ufunc_at_traced``); constant ones decide at trace time which elements combine.
    Where the loop is a's own type, each position's contributions are one row of a matrix accumulated
    along it (``ufunc.accumulate``, in order, rounding each step), the row's last real column taken;
    otherwise one traced step per repeat, up to ``_AT_MAX_STEPS``, beyond which the kernel updates
    the elements in turn (``P.scatter``: a loop on the CPU, but a GPU thread per element folds every
    update, so the parallel steps are kept where they are few). The library-valued ufuncs (exp, power,
    ...) always take the scatter, whose CPU kernel calls NumPy's loop per update as NumPy's at does."""
    what = f"np.{ufunc.__name__}.at"
    if ufunc.nout != 1 or ufunc.nin not in (1, 2) or ufunc.signature is not None:
        raise NotImplementedError(f"{what} is not supported by the compiler")
    target = _writable_target(a, what)
    if (b is None) != (ufunc.nin == 1):
        raise ValueError("second operand needed for ufunc" if b is None else "second operand provided when ufunc is unary")
    if _holds_bool_tensor(indices) and not isinstance(indices, list):
        return _ufunc_at_through_mask(ufunc, target, indices, b, what)
    if isinstance(indices, Tensor):
        return _ufunc_at_traced(ufunc, target, indices, b, what)
    if _holds_tensor((indices,)):
        return _ufunc_at_traced_key(ufunc, target, indices, b, what)
    values = _at_values(b)
    _checked_by_numpy_at(ufunc, target.shape, target.dtype, indices, values)
    indexed = _positions(target)[indices]  # a[indices]'s positions, whose C order is the updates' order
    positions = np.ravel(indexed)
    if values is not None:
        values = ravel(broadcast_to(values, np.shape(indexed)))
    flat = Tensor(P.reshape(target.node, (target.size,)))  # its values, not a view that would block the update
    if positions.size == 0:
        return None
    # each position's contributions in order: the k-th update of position p is its depth-k one
    order = np.argsort(positions, kind="stable")
    updated, first, counts = np.unique(positions[order], return_index=True, return_counts=True)
    depth = np.arange(positions.size) - np.repeat(first, counts)
    loop, out = dt.resolve_ufunc(ufunc, [target.dtype] + ([] if values is None else [values.dtype]))
    # NumPy calls its loop on each element at stride 0 (where its power takes fast paths), and so does the
    # kernel's scatter for the library-valued ufuncs (P.NUMPY_LOOP_UFUNCS); accumulate would be NumPy's
    # scalar C-library loop, and an elementwise step its loop at contiguous strides
    numpy_loop = P.computed_by_numpy_loop(ufunc.__name__, loop)
    if (numpy_loop or counts.max() > _AT_MAX_STEPS) and ufunc in UFUNC_PRIMITIVES:  # the kernel updates them in turn
        updates = None if values is None else P.reshape(values.node, (positions.size, 1))
        updated = P.scatter(P.reshape(flat.node, (flat.size, 1)), const_node(positions.astype(np.int64)), updates,
                            UFUNC_PRIMITIVES[ufunc])
        update_in_place(target, P.reshape(updated, target.shape), what,
                        "compute the sums with np.where or a reduction instead")
        return None
    if values is not None and ufunc in UFUNC_PRIMITIVES and set(loop) | {out} == {target.dtype}:
        # [a[p], its contributions..., padding]: accumulated along the row, the column of its last one taken
        width = counts.max() + 1
        slots = np.zeros((updated.size, width), dtype=np.intp)  # padding repeats element 0: never read
        slots[:, 0] = updated
        slots[np.repeat(np.arange(updated.size), counts), depth + 1] = flat.size + order
        table = Tensor(gathered(P.concat([flat.node, values.astype(target.dtype).node], 0), slots).node)
        combined = _ufunc_accumulate(ufunc, table, axis=1, dtype=target.dtype)  # (add's default would widen ints)
        final = Tensor(gathered(combined.node, np.arange(updated.size) * width + counts).node)
    else:
        if counts.max() > _AT_MAX_STEPS:
            raise NotImplementedError(
                f"{what}: a position updated {counts.max()} times, in a loop of another type than the array's "
                f"({', '.join(map(str, loop))} -> {out} for {target.dtype}): one traced step per repeat, at most "
                f"{_AT_MAX_STEPS}")
        final = Tensor(gathered(flat.node, updated).node)
        for step in range(counts.max()):
            at_step = order[depth == step]  # the updates at this depth, one per position that has one
            rows = np.searchsorted(updated, positions[at_step])  # their rows of ``final`` (updated is sorted)
            current = Tensor(gathered(final.node, rows).node)
            operands = [current] + ([] if values is None else [Tensor(gathered(values.node, at_step).node)])
            new = apply_ufunc(ufunc, "__call__", operands, {}).astype(target.dtype)
            codes = np.arange(updated.size, dtype=np.intp)
            codes[rows] = updated.size + np.arange(rows.size)
            final = Tensor(gathered(P.concat([final.node, new.node], 0), codes).node)
    codes = np.arange(flat.size, dtype=np.intp)
    codes[updated] = flat.size + np.arange(updated.size)
    result = gathered(P.concat([flat.node, final.node], 0), codes.reshape(target.shape))
    update_in_place(target, result.node, what, "compute the sums with np.where or a reduction instead")
    return None


def _ufunc_at_traced(ufunc, target: Tensor, indices: Tensor, b, what: str):
    """``ufunc.at(a, i[, b])`` with ``i`` a traced integer array (rows of axis 0, negative ones from the end):
    which updates meet at a row only the data tell, so the kernel updates the rows in turn (``P.scatter``),
    each step computed in the ufunc's loop for (a's dtype, b's) and cast back to a's dtype. NumPy's own
    ufunc.at on stand-ins (indices as zeros) gives the shape and loop errors; an index out of range is
    NumPy's IndexError, checked as the kernel runs."""
    if indices.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer type, got {indices.dtype}")
    if not target.ndim:
        raise IndexError("too many indices for array: array is 0-dimensional, but 1 were indexed")
    name, values = _traced_at_operands(ufunc, b, what)
    n, rest = target.shape[0], target.shape[1:]
    _checked_by_numpy_at(ufunc, (max(n, 1),) + rest, target.dtype, np.zeros(indices.shape, indices.dtype), values)
    k = indices.size
    if not k:
        return None
    index = _from_the_end_checked(ravel(indices).astype(np.int64), n, f"index out of bounds for axis 0 with size {n}",
                                  what)
    row = math.prod(rest)
    if not row or not n:
        return None
    updates = None if values is None else P.reshape(broadcast_to(values, indices.shape + rest).node, (k, row))
    updated = P.scatter(P.reshape(target.node, (n, row)), index.node, updates, name)  # (its values, not a view)
    update_in_place(target, P.reshape(updated, target.shape), what, "compute the sums with np.where or a reduction instead")
    return None


def _ufunc_at_traced_key(ufunc, target: Tensor, key, b, what: str):
    """``ufunc.at(a, key[, b])`` with traced integers inside the key (a tuple of index arrays, a list holding
    np.argmax's, slices beside them): a's flat positions indexed with the key -- a traced gather, with
    NumPy's broadcasting, negative positions and IndexError as the kernel runs --, each element there updated
    in turn in that C order (``P.scatter``). NumPy's own ufunc.at on stand-ins (traced indices as zeros)
    gives the key's, shapes' and loop's errors."""
    if _holds_bool_tensor(key):
        raise NotImplementedError(f"{what} through a traced boolean mask inside a list is not supported by the "
                                  "compiler; pass the mask alone or in a tuple")
    name, values = _traced_at_operands(ufunc, b, what)
    _checked_by_numpy_at(ufunc, target.shape, target.dtype, _traced_as_zeros(key), values)
    positions = getitem(Tensor(const_node(_positions(target))), key)
    k = positions.size
    if not k or not target.size:
        return None
    updates = None if values is None else P.reshape(broadcast_to(values, positions.shape).node, (k, 1))
    index = P.reshape(P.cast(positions.node, np.int64), (k,))
    updated = P.scatter(P.reshape(target.node, (target.size, 1)), index, updates, name)
    update_in_place(target, P.reshape(updated, target.shape), what, "compute the sums with np.where or a reduction instead")
    return None


def _ufunc_at_through_mask(ufunc, target: Tensor, key, b, what: str):
    """``ufunc.at(a, mask[, b])`` through a traced boolean mask, alone or beside slices and an ellipsis
    (``(slice(None), mask)``): a mask selects each element at most once, so NumPy's updates in turn are the
    selection's elements updated at once, in at's loop for (a's dtype, b's), cast back to a's dtype and written
    where the mask holds (a ``MaskedRead`` of a and one of ``b`` spread over the selected elements). NumPy's own
    ufunc.at on stand-ins selecting as many elements as ``b`` has rows (else one) gives the key's, shapes' and
    loop's errors; a count of selected elements other than b's rows is NumPy's ValueError as the kernel runs."""
    parts = key if isinstance(key, tuple) else (key,)
    leading = _mask_key(parts)
    inner = None if leading is not None else _inner_mask_view(target, parts)
    if leading is None and inner is None:
        raise NotImplementedError(f"{what} through a traced boolean mask beside index arrays or new axes is not "
                                  "supported by the compiler; alone or beside slices, integers and an ellipsis it is")
    moved, mask, lead = (target, leading[0], 0) if inner is None else inner
    values = _at_values(b)
    rest = moved.shape[mask.ndim:]  # NumPy's selection: rest[:lead], the selected elements, rest[lead:]
    rows = None if values is None else _selection_rows(values.shape, rest, lead)
    _checked_by_numpy_at(ufunc, target.shape, target.dtype, _inner_stand_in_key(parts, rows), values)
    if not target.size or not mask.size:
        return None
    line = P.user_location().short()
    operands = [MaskedRead(moved, mask, line, lead=lead)]
    if values is not None:  # b at each selected element
        spread = _spread_over_selection(values, mask, rest, lead, lambda n: "array is not broadcastable to correct "
                                        "shape", what)
        if spread is None:
            return None
        operands.append(MaskedRead(Tensor(spread), mask, line, lead=lead))
    updated = ufunc(*operands)
    if updated.values.node.op == UFUNC_PRIMITIVES.get(ufunc):  # NumPy's at: its loop per element, at stride 0
        updated.values.node.attrs["per_update"] = True
    _write_where(moved, P.cast(updated.values.node, target.dtype), _mask_over(mask, moved.shape), what,
                 "compute the result with np.where(mask, f(x), x) instead")
    return None


def _checked_by_numpy_at(ufunc, shape: tuple, dtype, key, values: Tensor | None) -> None:
    """NumPy's own ufunc.at on stand-ins (zeros of ``shape``, the values' shape): its errors for the key, the
    shapes and the loop. Values of more axes than the elements indexed are refused first, with the message NumPy
    gives them: NumPy 2's ufunc.at reads past its shape arrays there when the key's index arrays follow a slice
    (a garbage shape in its message, or a crash)."""
    if values is not None:
        try:
            indexed = np.empty(shape, np.bool_)[key].ndim
        except (IndexError, ValueError, TypeError):
            indexed = values.ndim  # (NumPy's ufunc.at below names what is wrong with the key)
        if values.ndim > indexed:
            raise ValueError("array is not broadcastable to correct shape")
    with np.errstate(all="ignore"):
        ufunc.at(np.zeros(shape, dtype), key, *([] if values is None else [np.zeros(values.shape, values.dtype)]))


def _traced_at_operands(ufunc, b, what: str) -> tuple[str, Tensor | None]:
    """ufunc.at at traced positions: the ufunc's primitive (refused by name without one) and the values (none
    for a unary ufunc), converted as np.asarray converts them."""
    name = UFUNC_PRIMITIVES.get(ufunc)
    if name is None:
        raise NotImplementedError(f"{what} at traced positions is not supported by the compiler; positions known at "
                                  "trace time are")
    return name, _at_values(b)


def _at_values(b) -> Tensor | None:
    """ufunc.at's values as NumPy's ufunc.at converts them (np.asarray: a Python number is int64/float64); None
    for a unary ufunc."""
    return None if b is None else b if isinstance(b, Tensor) else Tensor(const_node(np.asarray(b)))


def _traced_as_zeros(key):
    """An index with each traced array (inside tuples and lists too) replaced by zeros of its shape and dtype:
    for NumPy's own checks of the key."""
    if isinstance(key, Tensor):
        return np.zeros(key.shape, key.dtype)
    if isinstance(key, (list, tuple)):
        return type(key)(_traced_as_zeros(k) for k in key)
    return key


def _holds_bool_tensor(key) -> bool:
    if isinstance(key, (list, tuple)):
        return any(_holds_bool_tensor(k) for k in key)
    return isinstance(key, Tensor) and key.dtype.kind == "b"


# float16 loops that keep a reduction's running value in float32 while their inner loop runs (rounded as it ends)
_HALF_RUNNING = (np.add, np.subtract, np.multiply, np.divide)
# the most elements ``_ufunc_reduceat`` gathers (rows x each segment's elements), and segment lengths it folds
_REDUCEAT_MAX, _REDUCEAT_LENGTHS = 1 << 26, 256


def _ufunc_reduceat(ufunc, array, indices, axis=0, dtype=None, out=None):
    """``ufunc.reduceat``: along ``axis``, segment i is [indices[i], indices[i + 1]) (the last one to the
    end; the element at indices[i] alone where the next index is not past it). NumPy copies a segment's
    first element into the output and runs the ufunc's reduction loop over the rest along the axis,
    whatever the memory layout: a float add sums the rest pairwise and adds that (``P.row_sum_from``),
    every other ufunc folds it in order; float16's add, subtract, multiply and divide keep float32 while
    the loop runs and round once. Segments of one length are folded together. NumPy's own reduceat of
    zeros laid out as the array gives the errors, the result's dtype and its layout. The positions must
    be constants: they decide which elements combine. ``out=``: NumPy's loop for the out array's dtype and
    the array's (int8 into int16 adds in int16), the result written into it."""
    what = f"np.{ufunc.__name__}.reduceat"
    name = UFUNC_PRIMITIVES.get(ufunc)
    if name is None or ufunc.nin != 2 or ufunc.nout != 1:
        raise NotImplementedError(f"{what} is not supported by the compiler")
    if out is not None:  # NumPy's loop for (out's dtype, the array's), the result written into out
        target, x = _reduction_target(out, what), _tensor(array)
        loop = dtype if dtype is not None else np.dtype(ufunc.resolve_dtypes((target.dtype, x.dtype, None))[0])
        check = lambda o: ufunc.reduceat(_stand_in_laid_out(x), indices, axis=axis, dtype=dtype, out=o)  # noqa: E731
        return _into_reduction_out(f"{ufunc.__name__}.reduceat", target, check,
                                   _ufunc_reduceat(ufunc, x, indices, axis, loop))
    if isinstance(indices, (list, tuple)) and _holds_tensor(indices):
        raise NotImplementedError(f"{what} at traced positions inside a list: pass one traced integer array")
    x = _tensor(array)
    computed = isinstance(indices, Tensor)
    stand_in = np.zeros(indices.shape, indices.dtype) if computed else indices
    with np.errstate(all="ignore"):  # NumPy's checks (a scalar, several axes, indices), result type and layout
        shaped = ufunc.reduceat(_stand_in_laid_out(x), stand_in, axis=axis, dtype=dtype)
    result_type = shaped.dtype
    if result_type.kind == "f" and ufunc in _SIMD_UNFOLDED:
        raise NotImplementedError(f"{what} of {result_type}: {_SIMD_UNFOLDED[ufunc]}")
    compute, loop_out = dt.resolve_ufunc(ufunc, [result_type, result_type])
    if tuple(compute) != (result_type, result_type) or loop_out != result_type:
        raise NotImplementedError(f"{what}: NumPy's reduction loop for {result_type} is not one of that type")
    (ax,) = P.normalize_axes(axis, x.ndim, what)
    moved = P.cast(P.transpose(x.node, [d for d in range(x.ndim) if d != ax] + [ax]), result_type)
    if computed:
        return _reduceat_at(ufunc, name, x, moved, indices, ax, shaped, what)
    idx = np.asarray(indices).astype(np.intp).ravel()
    outer, n, k = moved.shape[:-1], x.shape[ax], idx.size
    ends = np.append(idx[1:], n)
    lengths = np.where(ends > idx, ends - idx - 1, 0)  # each segment's elements after its first
    rows = int(np.prod(outer, dtype=np.int64))
    if rows * (k + int(lengths.sum())) > _REDUCEAT_MAX or len(np.unique(lengths)) > _REDUCEAT_LENGTHS:
        raise NotImplementedError(f"{what}: {rows} rows of {k} segments ({int(lengths.sum())} elements after their "
                                  f"first) is more than the compiler lays out for it ({_REDUCEAT_MAX} elements, "
                                  f"{_REDUCEAT_LENGTHS} different segment lengths)")
    if shaped.size == 0:
        return Tensor(const_node(np.zeros(shaped.shape, result_type)))
    row_starts = (np.arange(rows, dtype=np.intp) * n).reshape(outer + (1,))
    parts, code = [gathered(moved, row_starts + idx).node], np.arange(k)
    for length in np.unique(lengths[lengths > 0]):
        segments = np.flatnonzero(lengths == length)
        first = gathered(moved, row_starts + idx[segments]).node
        rest = gathered(moved, (row_starts + idx[segments])[..., None] + 1 + np.arange(length)).node
        parts.append(_segment_fold(ufunc, name, first, rest, result_type, what))
        code[segments] = k + sum(p.shape[-1] for p in parts[1:-1]) + np.arange(segments.size)
    joined = P.concat(parts, len(outer)) if len(parts) > 1 else parts[0]
    width = joined.shape[-1]
    folded = gathered(joined, (np.arange(rows, dtype=np.intp) * width).reshape(outer + (1,)) + code).node
    return _reduceat_result(folded, x, ax, shaped)


def _reduceat_result(folded: P.Node, x: Tensor, ax: int, shaped: np.ndarray) -> Tensor:
    """reduceat's segments (the axis last) put back at ``ax`` and laid out as NumPy's ``shaped`` is."""
    outer = folded.ndim - 1
    back = P.transpose(folded, list(range(ax)) + [outer] + list(range(ax, outer)))
    if not layout.known(x.node) or any(st % shaped.itemsize for st in shaped.strides):
        return Tensor(P.layout_unknown(back))
    return Tensor(P.laid_out(back, tuple(st // shaped.itemsize for st in shaped.strides)))


def _reduceat_at(ufunc, name: str, x: Tensor, moved: P.Node, indices: Tensor, ax: int, shaped: np.ndarray,
                 what: str) -> Tensor:
    """``ufunc.reduceat`` at indices the kernel computes (one integer axis, as NumPy takes): each checked
    in [0, n) as the kernel runs (NumPy's IndexError naming the first bad one), then every segment's
    bounds read by the kernel (``P.reduceat_at``)."""
    n = x.shape[ax]
    if shaped.size == 0:
        return Tensor(const_node(np.zeros(shaped.shape, shaped.dtype)))
    idx = P.cast(indices.node, np.dtype(np.int64))
    bad = P.elementwise("logical_or", [P.elementwise("less", [idx, dt.Weak(0)]),
                                       P.elementwise("greater_equal", [idx, dt.Weak(n)])])
    safe = P.check_at_run_time(idx, bad, "first", IndexError,
                               lambda v: f"index {v} out-of-bounds in {ufunc.__name__}.reduceat [0, {n})")
    if safe is None:
        raise NotImplementedError(f"{what} at computed indices outside a traced function: their check needs a kernel")
    return _reduceat_result(P.reduceat_at(moved, safe, name), x, ax, shaped)


def _segment_fold(ufunc, name: str, first: P.Node, rest: P.Node, result_type: np.dtype, what: str) -> P.Node:
    """Each row's ``first`` value (shape S) folded with its ``rest`` (S + (length,)) by NumPy's reduction
    loop for ``result_type`` (``_ufunc_reduceat``)."""
    if ufunc is np.add and result_type.kind == "f":
        return P.row_sum_from(rest, first)
    running = np.dtype(np.float32) if result_type == np.float16 and ufunc in _HALF_RUNNING else result_type
    joined = P.concat([P.reshape(P.cast(first, running), first.shape + (1,)), P.cast(rest, running)], first.ndim)
    axis = first.ndim
    if ufunc in (np.add, np.multiply):
        scanned = P.scan("cumsum" if ufunc is np.add else "cumprod", joined, axis, running, what)
    else:
        scanned = P.accumulate(name, joined, axis, running, what)
    if scanned.dtype != running:
        raise NotImplementedError(f"{what}: the accumulator type {scanned.dtype} is not NumPy's loop type {running}")
    n = joined.shape[-1]
    last = P.slice_(scanned, [0] * axis + [n - 1], first.shape + (1,), [1] * (axis + 1))
    return P.cast(P.reshape(last, first.shape), result_type)


_UFUNC_METHODS = {"reduce": _ufunc_reduce, "accumulate": _ufunc_accumulate, "outer": _ufunc_outer, "at": _ufunc_at,
                  "reduceat": _ufunc_reduceat}


# --------------------------------------------------------------------------- reductions


def sum_(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return _reduction_maybe_into("sum", a, axis, keepdims, dtype, initial, where, out)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return _reduction_maybe_into("prod", a, axis, keepdims, dtype, initial, where, out)


def any_(a, axis=None, out=None, keepdims=False, *, where=True):
    return _reduction_maybe_into("any", a, axis, keepdims, None, np._NoValue, where, out)


def all_(a, axis=None, out=None, keepdims=False, *, where=True):
    return _reduction_maybe_into("all", a, axis, keepdims, None, np._NoValue, where, out)


def amax(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return _reduction_maybe_into("max", a, axis, keepdims, None, initial, where, out)


# what max's and min's ``initial=`` joins the reduced values with (a sum or product starts there), and the
# value a ``where=`` mask leaves in the place of an element it excludes (max and min have none: NumPy then
# needs ``initial``): one that changes nothing it meets, so -0.0 for a float sum (-0.0 + -0.0 stays -0.0)
_WITH_INITIAL = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum"}
_EXCLUDED = {"sum": -0.0, "prod": 1, "any": False, "all": True}
_UFUNC_OF = {"sum": "add", "prod": "multiply", "max": "maximum", "min": "minimum", "any": "logical_or",
             "all": "logical_and"}


def _where_mask(where, x: P.Node, what: str) -> P.Node:
    """A reduction's ``where=``: a boolean array (or traced value) broadcast to ``x``'s shape."""
    mask = _node(where)
    if mask.dtype != np.dtype(bool):
        raise TypeError(f"{what}: where= must be a boolean mask, got dtype {mask.dtype}")
    if P.broadcast_shapes(mask.shape, x.shape, what=f"{what} where=") != x.shape:
        raise ValueError(f"{what}: a where= mask of shape {mask.shape} cannot be broadcast to the array's {x.shape}")
    return P.broadcast_to(mask, x.shape)


def _first_element_start(kind: str, x: P.Node, axes: tuple, keepdims: bool, typed: dict, where) -> P.Node | None:
    """np.sum/np.prod with ``initial=None``: NumPy starts each reduction from its first element instead
    of the identity (so one over nothing is its ValueError, asked of NumPy on stand-ins) and reduces the
    rest after it into that: a float sum is x[0] + pairwise(x[1:]), or x[0] + x[1] + ... along a kept
    inner axis. Over one axis, the rest (a slice, laid out as NumPy's view is) reduced from those starts,
    and so over the whole of a C-contiguous array, flattened; integers come out as from the identity (None:
    the caller's reduction); several float axes otherwise are refused (NumPy skips the first element of its
    iteration over all of them), and so are rows NumPy buffers (its first bufferful skips the first element)."""
    stand_in = np.broadcast_to(np.zeros((), x.dtype), x.shape)
    with np.errstate(all="ignore"):
        getattr(np, kind)(stand_in, axis=axes, initial=None, where=_stand_in(where), **typed)
    out = P.reduce_result_type(kind, x, axes, typed.get("dtype"))
    if out.kind != "f" or not x.size:
        return None
    if not axes:  # nothing reduced: each element is its own start
        return P.cast(x, out)
    if len(axes) == x.ndim > 1 and layout.strides_of(x) == layout.contiguous_strides(x.shape):
        # a C-contiguous array reduced whole is one inner loop to NumPy: the flat array's first element, then the rest
        whole = _first_element_start(kind, P.reshape(x, (x.size,)), (0,), False, typed, True)
        return P.reshape(whole, (1,) * x.ndim) if keepdims else whole
    if len(axes) != 1:
        raise NotImplementedError(f"np.{kind} with initial=None over {len(axes)} axes: NumPy starts from the first "
                                  "element of its iteration over all of them, an order the compiler does not follow; "
                                  "reduce one axis at a time, leave initial out (the identity) or pass a number")
    (axis,) = axes
    n = x.shape[axis]
    at = [0] * x.ndim
    first = P.reshape(P.slice_(x, at, x.shape[:axis] + (1,) + x.shape[axis + 1:], [1] * x.ndim),
                      x.shape[:axis] + x.shape[axis + 1:])
    rest = P.slice_(x, [1 if d == axis else 0 for d in range(x.ndim)],
                    x.shape[:axis] + (n - 1,) + x.shape[axis + 1:], [1] * x.ndim)
    if (kind == "sum" or out == np.float16) and \
            layout.sum_bufferful(x.shape, layout.strides_of(x), axes, out != x.dtype) is not None:
        # NumPy's bufferfuls lie over the whole array, the first element skipped inside the first one
        raise NotImplementedError(f"np.{kind} with initial=None of a row NumPy reads through its buffer (a sum that "
                                  "casts, or strided rows): its first bufferful skips the first element, an order the "
                                  "compiler does not follow; leave initial out (the identity) or pass a number")
    return P.reduce(kind, rest, axes, keepdims, f"np.{kind}", start=first, **typed)


def _reduction(kind: str, a, axis, keepdims: bool, dtype, initial, where) -> Tensor:
    """np.sum and its kin with NumPy's ``initial=`` (the reduction's starting value, so also the result
    over an empty axis) and ``where=`` (a boolean mask, broadcast to the array, of the elements reduced)."""
    x, what = _node(a), f"np.{kind}"
    a_dtype = x.dtype
    axes = P.normalize_axes(axis, x.ndim, what, zero_d=True)
    has_initial = initial is not np._NoValue and initial is not None
    typed = {"dtype": dtype} if kind in ("sum", "prod") else {}
    if initial is None and kind in ("sum", "prod"):
        from_first = _first_element_start(kind, x, axes, keepdims, typed, where)
        if from_first is not None:
            return Tensor(from_first, scalar=True)
    if where is not True and kind == "sum" and P.reduce_result_type("sum", x, axes, dtype).kind == "f":
        start = np.asarray(np.sum(np.zeros((0,), a_dtype), initial=initial, dtype=dtype)) if has_initial else None
        return Tensor(P.masked_sum(x, _where_mask(where, x, what), axes, keepdims, what, dtype, start), scalar=True)
    if where is not True:
        if kind in ("max", "min") and not has_initial:
            raise ValueError(f"reduction operation '{_UFUNC_OF[kind]}' does not have an identity, so to use a where "
                             "mask one has to specify 'initial'")
        if kind in ("any", "all"):
            x = P.cast(x, bool)
        stand_in = np.asarray(_EXCLUDED[kind]).astype(x.dtype) if kind in _EXCLUDED else \
            np.asarray(getattr(np, kind)(np.zeros((0,), x.dtype), initial=initial))
        x = P.where(_where_mask(where, x, what), x, const_node(stand_in))
    if has_initial:  # as NumPy converts it to the result's type (or refuses): its reduction of nothing
        start = np.asarray(getattr(np, kind)(np.zeros((0,), a_dtype), initial=initial, **typed))
    if has_initial and kind in ("max", "min") and not all(x.shape[i] for i in axes):
        shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape)) if keepdims else \
            tuple(d for i, d in enumerate(x.shape) if i not in axes)
        return Tensor(const_node(np.full(shape, start)), scalar=True)
    if has_initial and kind in ("sum", "prod"):  # where NumPy's output starts: the order of its steps
        return Tensor(P.reduce(kind, x, axes, keepdims, what, initial=start, **typed), scalar=True)
    result = P.reduce(kind, x, axes, keepdims, what, **typed)
    if has_initial:
        result = P.elementwise(_WITH_INITIAL[kind], [const_node(start), result])
    return Tensor(result, scalar=True)


def _reduction_target(out, what: str) -> Tensor:
    """A reduction's ``out=``: a traced array (or a tuple of one), writable, not a NumPy scalar."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"{what}: 'out' must be a tuple of exactly one array")
        out = out[0]
    return _writable_target(out, f"{what}(..., out=...)")


def _stand_in(v):
    """A NumPy value of ``v``'s kind for asking NumPy about a call (its checks, its result's type): zeros of a
    Tensor's shape and dtype (a mask all True; a NumPy scalar where it is one), anything else as it is."""
    if not isinstance(v, Tensor):
        return v
    fill = np.ones if v.dtype == np.bool_ else np.zeros
    return fill((), v.dtype)[()] if v.numpy_scalar else fill(v.shape, v.dtype)


def _is_numpy_scalar(a) -> bool:
    return isinstance(a, np.generic) or isinstance(a, Tensor) and a.numpy_scalar


def _as_returned_for(a, target: Tensor) -> Tensor:
    """What np.sum(a, out=o) and its kin return: ``o`` itself, but for a NumPy scalar ``a`` its own method's
    answer, o's value as a NumPy scalar (o is written all the same)."""
    return Tensor(target.node, scalar=True) if _is_numpy_scalar(a) else target


def _into_reduction_out(name: str, target: Tensor, check, result: Tensor) -> Tensor:
    """NumPy's ``out=`` of a reduction (``target``, from _reduction_target): ``check`` runs NumPy's own
    reduction on stand-ins with a stand-in of it (its errors: the out array's number of dimensions and shape
    for these axes and keepdims); the result is converted to out's dtype ('unsafe', as NumPy's reductions
    convert) and written into its memory (update_in_place); the out array is returned, as NumPy returns it."""
    with np.errstate(all="ignore"):
        check(np.zeros(target.shape, target.dtype))
    _write_where(target, result.node, True, f"np.{name}(..., out=...)", "use the returned array instead")
    return target


def _reduction_maybe_into(kind: str, a, axis, keepdims: bool, dtype, initial, where, out) -> Tensor:
    """np.sum and its kin, into ``out=`` when given. NumPy's reduction with an out array and no dtype runs
    the loop the ufunc's promotion picks for (out's dtype, the array's): np.sum of int8 into int16 adds in
    int16 (no wrap at 127), of float64 into int64 adds in float64 and truncates the sum."""
    if out is None:
        return _reduction(kind, a, axis, keepdims, dtype, initial, where)
    x = Tensor(_node(a))  # an array even for a NumPy scalar (whose answer is its own: _as_returned_for)
    target = _reduction_target(out, f"np.{kind}")
    given = _given(initial=initial)

    def check(stand_in_out):
        getattr(np, kind)(np.zeros(x.shape, x.dtype), axis=axis, out=stand_in_out, keepdims=keepdims,
                          where=_stand_in(where), **({"dtype": dtype} if kind in ("sum", "prod") else {}), **given)
    if dtype is None and kind in _WITH_INITIAL:
        ufunc = getattr(np, _UFUNC_OF[kind])
        loop = np.dtype(ufunc.resolve_dtypes((target.dtype, x.dtype, None))[0])
        if kind in ("sum", "prod"):
            dtype = loop
        else:
            x = Tensor(P.cast(x.node, loop))
    return _as_returned_for(a, _into_reduction_out(kind, target, check,
                                                   _reduction(kind, x, axis, keepdims, dtype, initial, where)))


def _count(x, axes) -> int:
    return int(np.prod([x.shape[a] for a in axes], dtype=np.int64))


def amin(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
    return _reduction_maybe_into("min", a, axis, keepdims, None, initial, where, out)


def _arg_reduction(kind: str, a, axis, out, keepdims: bool) -> Tensor:
    """np.argmax/np.argmin, into ``out=`` when given (NumPy's own call on stand-ins checks it)."""
    x = _tensor(a)
    result = Tensor(P.arg_reduce(kind, x.node, axis, keepdims, f"np.{kind}"), scalar=True)
    if out is None:
        return result
    target = _reduction_target(out, f"np.{kind}")
    check = lambda o: getattr(np, kind)(_stand_in(x), axis, o, keepdims=keepdims)  # noqa: E731
    return _as_returned_for(a, _into_reduction_out(kind, target, check, result))


def argmax(a, axis=None, out=None, *, keepdims=False):
    return _arg_reduction("argmax", a, axis, out, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    return _arg_reduction("argmin", a, axis, out, keepdims)


def _count_reduce_items(x: P.Node, axis, axes, keepdims: bool, where):
    """NumPy's _count_reduce_items: an np.intp (a strong operand) of the elements each result reduces, or
    with ``where=`` the mask's own sums (intp, keepdims as asked)."""
    if where is True:
        return np.intp(_count(x, axes))
    return sum_(Tensor(_where_mask(where, x, "np.mean")), axis, np.intp, None, keepdims)


def _divided_into_out(name: str, a, axis, dtype, out, keepdims: bool, where, squares=None, ddof=0):
    """np.mean/np.var with ``out=``, in NumPy's own order (numpy/_core/_methods.py): the sum (of ``squares``
    for var) into out under the reduction's loop rule, then ``true_divide(out, count, out=out, casting=
    'unsafe')`` with the count an intp (so a float32 out divides in float64 and rounds once more)."""
    x = _node(a)
    axes = P.normalize_axes(axis, x.ndim, f"np.{name}")
    count = _count_reduce_items(x, axis, axes, keepdims, where)
    if name == "mean" and where is True and count == 0:
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=3)
    elif name == "mean" and where is not True:
        P.warn_at_run_time(P.elementwise("equal", [count.node, dt.Weak(0)]), RuntimeWarning, "Mean of empty slice")
    if dtype is None and x.dtype.kind in "iub":
        dtype = np.dtype(np.float64)
    elif dtype is None and name == "mean" and x.dtype == np.float16:
        dtype = np.dtype(np.float32)
    target = sum_(squares if squares is not None else Tensor(x), axis, dtype, out, keepdims, where=where)
    if name == "var":
        count = np.maximum(count - ddof, 0)
    return np.true_divide(target, count, out=target, casting="unsafe")


def mean(a, axis=None, dtype=None, out=None, keepdims=False, where=True):
    if out is not None:
        return _as_returned_for(a, _divided_into_out("mean", a, axis, dtype, out, keepdims, where))
    x = _node(a)
    axes = P.normalize_axes(axis, x.ndim, "np.mean", c_axes=True)
    acc = np.dtype(dtype) if dtype is not None else np.mean(np.zeros((1,) * x.ndim, x.dtype), axis=axes).dtype
    # NumPy's _mean sums and divides a float16 array in float32, and rounds the mean to float16
    half = dtype is None and x.dtype == np.float16
    summed = np.dtype(np.float32) if half else acc
    if where is not True:
        mask = _where_mask(where, x, "np.mean")
        if P.reduce_result_type("sum", x, axes, summed).kind == "f":  # in NumPy's masked order
            total = P.masked_sum(x, mask, axes, keepdims, "np.mean", dtype=summed)
        else:
            total = P.reduce("sum", P.where(mask, x, const_node(np.zeros((), x.dtype))), axes, keepdims, "np.mean",
                             dtype=summed)
    else:
        total = P.reduce("sum", x, axes, keepdims, "np.mean", dtype=summed)
    if where is True:
        if _count(x, axes) == 0:
            warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=2)
        quotient = _divide_into(total, _count(x, axes))
    else:  # NumPy's _count_reduce_items: the mask's own sum is each mean's count
        count = P.reduce("sum", mask, axes, keepdims, "np.mean", dtype=np.dtype(np.intp))
        P.warn_at_run_time(P.elementwise("equal", [count, dt.Weak(0)]), RuntimeWarning, "Mean of empty slice")
        # true_divide(total, count, out=total, casting='unsafe'): into the sum's memory, laid out as it is
        quotient = P.laid_out_as(P.cast(P.elementwise("divide", [total, count]), total.dtype), total)
    return Tensor(P.cast(quotient, acc) if half else quotient, scalar=True)


def _divide_into(total: P.Node, n: int) -> P.Node:
    """NumPy's ``true_divide(total, n, out=total, casting='unsafe')``: the quotient in total's dtype
    (truncated toward zero when that is an integer type, as np.mean and np.var with an integer dtype give).
    NumPy's count is an np.intp, so it divides in float64. In float32 (exact for counts below 2**24) a
    quotient rounded to float32 is float64's rounded to float32, but a float16 may not hold the count
    (15300 is 15296 there), so a float16 total is divided in float64 as NumPy divides it."""
    dividend = P.cast(total, np.float64) if total.dtype == np.float16 else total
    return P.cast(P.elementwise("divide", [dividend, dt.Weak(n)]), total.dtype)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=np._NoValue):
    """NumPy's _var: the mean (keepdims, in acc), the deviations (the input's dtype meeting acc) squared
    by multiplication, their sum in acc divided by the count less ddof into acc. With ``where=`` both
    sums are masked and each count is the mask's own (NumPy's _count_reduce_items), the divisor
    ``maximum(count - ddof, 0)``; ``mean=`` is a precomputed mean used in place of the first sum."""
    if correction is not np._NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    x = _node(a)
    axes = P.normalize_axes(axis, x.ndim, "np.var", c_axes=True)
    acc = np.dtype(dtype) if dtype is not None else (np.dtype(np.float64) if x.dtype.kind in "iub" else x.dtype)
    masked = where is not True
    mask = _where_mask(where, x, "np.var") if masked else None

    def total(v: P.Node, keep: bool) -> P.Node:
        if masked:
            return _reduction("sum", Tensor(v), axis, keep, acc, np._NoValue, where).node
        return P.reduce("sum", v, axes, keep, "np.var", dtype=acc)

    def count(keep: bool) -> P.Node:
        return P.reduce("sum", mask, axes, keep, "np.var", dtype=np.dtype(np.intp))

    if mean is not None:
        centre = _operand(mean)
    elif masked:
        summed = total(x, True)  # divided by true_divide(out=, 'unsafe') into its own memory, laid out as it is
        centre = P.laid_out_as(P.cast(P.elementwise("divide", [summed, count(True)]), acc), summed)
    else:
        centre = _divide_into(total(x, True), _count(x, axes))
    # NumPy's _var warns before it computes, where a count is at most ddof
    if not masked and ddof >= _count(x, axes):
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=2)
    elif masked:
        P.warn_at_run_time(P.elementwise("greater_equal", [_operand(ddof), count(keepdims)]), RuntimeWarning,
                           "Degrees of freedom <= 0 for slice")
    d = P.elementwise("subtract", [x, centre])
    if out is not None:
        return _as_returned_for(a, _divided_into_out("var", a, axis, dtype, out, keepdims, where,
                                                     squares=Tensor(P.elementwise("multiply", [d, d])), ddof=ddof))
    squares = total(P.elementwise("multiply", [d, d]), keepdims)
    if not masked:
        return Tensor(_divide_into(squares, max(_count(x, axes) - ddof, 0)), scalar=True)
    dof = P.elementwise("maximum", [P.elementwise("subtract", [count(keepdims), _operand(ddof)]), dt.Weak(0)])
    return Tensor(P.laid_out_as(P.cast(P.elementwise("divide", [squares, dof]), squares.dtype), squares), scalar=True)


def _scan_maybe_into(kind: str, a, axis, dtype, out) -> Tensor:
    """np.cumsum/np.cumprod, into ``out=`` when given: with no dtype the running value is kept in the loop
    NumPy's promotion picks for (out's dtype, the array's) -- int8 into int16 does not wrap, a float64 sum
    into float32 is rounded once per element, not carried in float32 -- as NumPy's buffered accumulate does."""
    x = _tensor(a)
    if out is None:
        return Tensor(P.scan(kind, x.node, axis, dtype, f"np.{kind}"))
    target = _reduction_target(out, f"np.{kind}")
    if dtype is None:
        ufunc = np.add if kind == "cumsum" else np.multiply
        dtype = np.dtype(ufunc.resolve_dtypes((target.dtype, x.dtype, None))[0])
    result = Tensor(P.scan(kind, x.node, axis, dtype, f"np.{kind}"))
    return _into_reduction_out(kind, target, lambda o: getattr(np, kind)(_stand_in(x), axis, dtype, out=o), result)


def cumsum(a, axis=None, dtype=None, out=None):
    return _scan_maybe_into("cumsum", a, axis, dtype, out)


def cumprod(a, axis=None, dtype=None, out=None):
    return _scan_maybe_into("cumprod", a, axis, dtype, out)


def linalg_norm(x, ord=None, axis=None, keepdims=False):
    """np.linalg.norm as NumPy writes it (numpy/linalg/_linalg.py), on traced arrays: the default
    2-norm of everything by a dot of the flattened array with itself, vector norms by reductions,
    the matrix norms that need no SVD (1, -1, inf, -inf, Frobenius); 2, -2 and 'nuc' are refused."""
    x = _tensor(x)
    if x.dtype.kind != "f":
        x = x.astype(float)
    if axis is None and (ord is None or (ord in ("f", "fro") and x.ndim == 2) or (ord == 2 and x.ndim == 1)):
        flat = x.ravel()
        ret = np.sqrt(flat.dot(flat))
        return ret.reshape(x.ndim * [1]) if keepdims else ret
    if axis is None:
        axis = tuple(range(x.ndim))
    elif not isinstance(axis, tuple):
        axis = (operator.index(axis),)
    if len(axis) == 1:
        if ord == np.inf:
            return _max_from_zero(abs(x), axis, keepdims)
        if ord == -np.inf:
            return abs(x).min(axis=axis, keepdims=keepdims)
        if ord == 0:
            return (x != 0).astype(x.dtype).sum(axis=axis, keepdims=keepdims)
        if ord == 1:
            return abs(x).sum(axis=axis, keepdims=keepdims)
        if ord is None or ord == 2:
            return np.sqrt((x * x).sum(axis=axis, keepdims=keepdims))
        if isinstance(ord, str):
            raise ValueError(f"Invalid norm order '{ord}' for vectors")
        ret = (abs(x) ** ord).sum(axis=axis, keepdims=keepdims)  # a weak exponent, as NumPy's absx **= ord
        return ret ** np.reciprocal(ord, dtype=ret.dtype)
    if len(axis) == 2:
        row, col = (P.normalize_axes(a, x.ndim, "np.linalg.norm")[0] for a in axis)
        if row == col:
            raise ValueError("Duplicate axes given.")
        if ord in (2, -2, "nuc"):
            raise NotImplementedError(f"np.linalg.norm: ord={ord!r} needs singular values, which the compiler does not compute")
        if ord in (None, "fro", "f"):
            ret = np.sqrt((x * x).sum(axis=axis))
        elif ord in (1, -1):
            sums = abs(x).sum(axis=row)
            ret = _max_from_zero(sums, col - (col > row), False) if ord == 1 else sums.min(axis=col - (col > row))
        elif ord in (np.inf, -np.inf):
            sums = abs(x).sum(axis=col)
            ret = _max_from_zero(sums, row - (row > col), False) if ord == np.inf else sums.min(axis=row - (row > col))
        else:
            raise ValueError("Invalid norm order for matrices.")
        if keepdims:
            shape = list(x.shape)
            shape[row] = shape[col] = 1
            ret = ret.reshape(shape)
        return ret
    raise ValueError("Improper number of dimensions to norm.")


def _max_from_zero(x: Tensor, axis, keepdims: bool):
    """NumPy's ``x.max(axis, initial=0)`` of values that are never negative: 0 over an empty axis."""
    axes = P.normalize_axes(axis, x.ndim, "np.linalg.norm")
    if any(x.shape[a] == 0 for a in axes):
        # zeros of the result's shape: a NumPy scalar when 0-d, as a reduction's result is
        return Tensor(P.reduce("sum", x.node, axes, keepdims, "np.linalg.norm"), scalar=True)
    return x.max(axis=axis, keepdims=keepdims)


def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    """NumPy's: NaN and the infinities replaced in floats (by values converted into the array's dtype;
    the infinities by default by the dtype's extremes); other dtypes returned as they are."""
    if not copy:
        raise NotImplementedError("np.nan_to_num with copy=False updates its argument in place, which the compiler "
                                  "does not model; use the returned array")
    t = _tensor(x)
    if t.dtype.kind != "f":  # a 0-d result is a NumPy scalar, as NumPy's x[()]
        return Tensor(t.node, scalar=True)
    info, x = np.finfo(t.dtype), t.node
    infinite = P.elementwise("isinf", [x])
    positive = P.elementwise("greater", [x, dt.Weak(0)])
    node = x
    for hit, value in ((P.elementwise("isnan", [x]), nan),
                       (P.elementwise("logical_and", [infinite, positive]), info.max if posinf is None else posinf),
                       (P.elementwise("logical_and", [infinite, P.elementwise("logical_not", [positive])]),
                        info.min if neginf is None else neginf)):
        with np.errstate(over="ignore"):  # a replacement beyond float16's range is inf, as NumPy's copyto makes it
            replacement = const_node(np.asarray(value).astype(t.dtype))
        node = P.where(hit, replacement, node)
    return Tensor(node, scalar=True)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=None,
        correction=np._NoValue):
    """NumPy's _std: the square root of its _var, in var's dtype -- in place on an array (so an integer
    ``dtype`` is refused as NumPy refuses it), converted into that type for a scalar."""
    if out is not None:  # var into out (an array, even of a NumPy scalar), then _std's um.sqrt(ret, out=ret)
        v = var(Tensor(_node(a)), axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction)
        return _as_returned_for(a, np.sqrt(v, out=v))
    v = var(a, axis, dtype, out, ddof, keepdims, where=where, mean=mean, correction=correction).node
    root = P.elementwise("sqrt", [v])
    if v.ndim > 0 and root.dtype != v.dtype:
        one = np.zeros(1, v.dtype)
        np.sqrt(one, out=one)  # NumPy refuses this cast: its own error, raised by NumPy itself
    return Tensor(P.cast(root, v.dtype), scalar=True)


def round_(a, decimals=0, out=None):
    """NumPy's PyArray_Round: rint of floats scaled by a power of ten (a Python float, so weak), the
    scale then divided out again; integers with decimals >= 0 are copied as they are (NumPy's 'K' copy), and to negative
    decimals are divided, rounded and multiplied in float64 (so past 2**53 with its precision), the
    result converted back (wrapping, as a float-to-int cast does: int8 127 to tens is -126)."""
    decimals = operator.index(decimals)
    if out is not None:
        return _round_into(a, decimals, out)
    x = _node(a)
    if x.dtype.kind in "iu":  # bool is not among them: NumPy rounds it as a float (rint of bool is float16)
        if decimals >= 0:
            return Tensor(P.copy(x, "K"), scalar=True)
        scale = const_node(np.float64(10.0 ** -decimals))
        y = P.elementwise("divide", [P.cast(x, np.float64), scale])
        y = P.elementwise("multiply", [P.elementwise("rint", [y]), scale])
        return _scaled_round_result(P.cast(y, x.dtype), x)
    if decimals == 0:
        return Tensor(P.elementwise("rint", [x]), scalar=True)
    if x.dtype.kind == "b":  # NumPy scales into a bool result array and refuses: its own error, raised by NumPy
        np.round(np.zeros(1, bool), decimals)
    scale = dt.Weak(10.0 ** abs(decimals))
    into, back = ("multiply", "divide") if decimals > 0 else ("divide", "multiply")
    y = P.elementwise("rint", [P.elementwise(into, [x, scale])])
    return _scaled_round_result(P.elementwise(back, [y, scale]), x)


def _round_into(a, decimals: int, out) -> Tensor:
    """PyArray_Round with ``out=``: integers to decimals >= 0 assigned into out (same_kind casting), decimals 0
    NumPy's rint into out, anything else NumPy's three ufunc calls into out — the scaled value, its rint, the
    scale taken out again — each in the loop for out's dtype and the operand's (so an integer out of a
    division is NumPy's casting error, and a float32 out rounds the float64 product first)."""
    target = _writable_target(out, "np.round(..., out=...)")
    x = _tensor(a)
    if x.dtype.kind in "iu" and decimals >= 0:
        np.copyto(target, x, casting="same_kind")
        return target
    if decimals == 0:
        return np.rint(x, out=target)
    scale = 10.0 ** abs(decimals)
    into, back = (np.multiply, np.true_divide) if decimals > 0 else (np.true_divide, np.multiply)
    into(x, scale, out=target)
    np.rint(target, out=target)
    return back(target, scale, out=target)


def _scaled_round_result(rounded: P.Node, x: P.Node) -> Tensor:
    # PyArray_Round scales into an array it allocates itself, Fortran-ordered for a Fortran-contiguous
    # operand and C-ordered for any other (a broadcast or a transposed copy among them), not as its ufuncs would
    if not rounded.ndim:
        return Tensor(rounded, scalar=True)
    return Tensor(_fresh(Tensor(rounded), like=Tensor(x), order="A").node, scalar=True)


def _no_extras(name, **kwargs):
    # None, NumPy's "no value" and where=True are what NumPy's own defaults look like
    bad = [k for k, v in kwargs.items() if v is not None and v is not np._NoValue and not (k == "where" and v is True)]
    if bad:
        raise NotImplementedError(f"np.{name}: arguments {bad} are not supported by the compiler")


# --------------------------------------------------------------------------- clip


def clip(a, a_min=np._NoValue, a_max=np._NoValue, out=None, *, min=np._NoValue, max=np._NoValue, **kwargs):
    """np.clip as NumPy 2 computes it (``np._core._methods._clip``): a Python int bound beyond an
    integer array's range is dropped, a missing bound leaves np.minimum/np.maximum/np.positive, and
    two bounds are the ``clip`` ufunc (primitive), whose dtypes NumPy resolves from all three
    operands."""
    if a_min is np._NoValue and a_max is np._NoValue:
        a_min = None if min is np._NoValue else min
        a_max = None if max is np._NoValue else max
    elif a_min is np._NoValue or a_max is np._NoValue:
        missing = "a_min" if a_min is np._NoValue else "a_max"
        raise TypeError(f"clip() missing 1 required positional argument: '{missing}'")
    elif min is not np._NoValue or max is not np._NoValue:
        raise ValueError("Passing `min` or `max` keyword argument when `a_min` and `a_max` are provided is forbidden.")
    if out is not None:
        kwargs["out"] = out if isinstance(out, tuple) else (out,)
    return _clip(a, a_min, a_max, kwargs)


def _clip(a, lo, hi, kwargs: dict):
    """The ufunc NumPy's _clip calls, with the call's ufunc arguments (out=, dtype=, casting=, order=, where=)."""
    x = _node(a)
    if x.dtype.kind in "iu":
        if type(lo) is int and lo <= np.iinfo(x.dtype).min:
            lo = None
        if type(hi) is int and hi >= np.iinfo(x.dtype).max:
            hi = None
    ufunc, bounds = (np.positive, ()) if lo is None and hi is None else (np.minimum, (hi,)) if lo is None else \
        (np.maximum, (lo,)) if hi is None else (np._core.umath.clip, (lo, hi))
    for bound in bounds:
        if isinstance(bound, MaskedRead):
            bound.refuse()  # y[mask] where only elementwise functions of it are followed
    return apply_ufunc(ufunc, "__call__", (Tensor(x),) + bounds, dict(kwargs))


# --------------------------------------------------------------------------- shape functions


def reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    shape = newshape if shape is None else shape
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    return _tensor(a).reshape(tuple(shape), order=order, copy=copy)


def transpose(a, axes=None):
    return view(P.transpose(_node(a), axes), a, positions=lambda p: np.transpose(p, axes))


def swapaxes(a, axis1, axis2):
    x = _node(a)
    perm = list(range(x.ndim))
    i, j = P.one_axis(axis1, x.ndim, "swapaxes", True), P.one_axis(axis2, x.ndim, "swapaxes", True)
    perm[i], perm[j] = perm[j], perm[i]
    return view(P.transpose(x, perm), a, positions=lambda p: np.transpose(p, perm))


def expand_dims(a, axis):
    x = _node(a)
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    nd = x.ndim + len(axes)
    axes = P.normalize_axes(axes, nd, "expand_dims")
    it = iter(x.shape)
    return view(P.reshape(x, tuple(1 if i in axes else next(it) for i in range(nd))), a,
                positions=lambda p: np.expand_dims(p, axes))


def squeeze(a, axis=None):
    x = _node(a)
    axes = (tuple(i for i, d in enumerate(x.shape) if d == 1) if axis is None
            else P.normalize_axes(axis, x.ndim, "squeeze", zero_d=True))
    if any(x.shape[i] != 1 for i in axes):
        raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    if not axes and isinstance(a, Tensor):
        return a  # NumPy returns the array itself
    return view(P.reshape(x, tuple(d for i, d in enumerate(x.shape) if i not in axes)), a,
                positions=lambda p: np.squeeze(p, axes))


def ravel(a, order="C"):
    """The elements read in ``order`` (``Tensor._read_axes``): a view where NumPy's ravel makes one
    (``layout.ravel_is_view``), which updates write through, else NumPy's fresh copy. Where the layout model
    only guesses the array's strides, a view whose updates are refused (NumPy's sharing is not known)."""
    x = _tensor(a)
    order = memory_order(order, "C")
    flat = x._read_flat(order, "np.ravel")
    if not layout.known(x.node):
        return view(flat, a)
    if not layout.ravel_is_view(x.shape, layout.strides_of(x.node), order):
        return Tensor(P.laid_out(flat, layout.contiguous_strides(flat.shape)))  # NumPy's flatten: a fresh array
    axes = x._read_axes(order, "np.ravel")
    return view(flat, a, positions=lambda p: np.transpose(p, axes).reshape(-1))


def broadcast_to(array, shape, subok=False):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return view(P.broadcast_to(_node(array), shape), array, read_only=True,
                positions=lambda p: np.broadcast_to(p, shape))


def concatenate(arrays, axis=0, out=None, dtype=None, casting="same_kind"):
    if out is not None:
        return _concatenate_into(arrays, axis, out, dtype, casting)
    nodes = [_node(a) for a in arrays]
    if axis is None:
        nodes, axis = [P.reshape(n, (n.size,)) for n in nodes], 0
    if dtype is not None:
        dtype = dt.check_supported(dtype, "np.concatenate")
        for n in nodes:
            if not np.can_cast(n.dtype, dtype, casting=casting):
                raise TypeError(f"np.concatenate: cannot cast array data from {n.dtype} to {dtype} "
                                f"according to the rule {casting!r}")
        nodes = [P.cast(n, dtype) for n in nodes]
    return Tensor(P.concat(nodes, axis))


def _computed_into_out(name: str, out, check, compute) -> Tensor:
    """``out=`` of a NumPy function whose result is written into out whole (np.concatenate, np.einsum, np.take,
    np.compress, np.choose): NumPy's own call on stand-ins into a stand-in of out, ``check(stand_in)``, gives its
    errors (out's shape; its dtype's casting rule); the result, ``compute(out's dtype)``, is converted into out's
    memory (as NumPy writes a copy back, unsafely), and out is returned."""
    target = _writable_target(out, f"np.{name}(..., out=...)")
    with np.errstate(all="ignore"):
        check(np.zeros(target.shape, target.dtype))
    _write_where(target, _node(compute(target.dtype)), True, f"np.{name}(..., out=...)",
                 "use the returned array instead")
    return target


def _concatenate_into(arrays, axis, out, dtype, casting) -> Tensor:
    """np.concatenate's ``out=``: NumPy's own call checks out's exact shape, dtype= beside it and ``casting`` of
    each array to out's dtype; each array is converted to out's dtype on its own, as NumPy copies it in (not
    through the arrays' common type)."""
    arrays = list(arrays)
    return _computed_into_out(
        "concatenate", out,
        lambda o: np.concatenate([_stand_in(a) for a in arrays], axis, out=o, dtype=dtype, casting=casting),
        lambda to: concatenate([Tensor(P.cast(_node(a), to)) for a in arrays], axis))


def hstack(tup, *, dtype=None, casting="same_kind"):
    nodes = [_atleast(_node(a), 1) for a in tup]
    if not nodes:
        raise ValueError("need at least one array to concatenate")
    return concatenate([Tensor(n) for n in nodes], axis=0 if nodes[0].ndim == 1 else 1, dtype=dtype, casting=casting)


def vstack(tup, *, dtype=None, casting="same_kind"):
    nodes = [_atleast(_node(a), 2) for a in tup]
    return concatenate([Tensor(n) for n in nodes], axis=0, dtype=dtype, casting=casting)


def stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    nodes = [_node(a) for a in arrays]
    if not nodes:
        raise ValueError("need at least one array to stack")
    if any(n.shape != nodes[0].shape for n in nodes):
        raise ValueError("all input arrays must have the same shape")
    axis = P.one_axis(axis, nodes[0].ndim + 1, "stack", True)
    expanded = [Tensor(P.reshape(n, n.shape[:axis] + (1,) + n.shape[axis:])) for n in nodes]
    return concatenate(expanded, axis=axis, out=out, dtype=dtype, casting=casting)


def _atleast(x, nd):
    if x.ndim >= nd:
        return x
    if nd == 1:
        return P.reshape(x, (1,))
    return P.reshape(x, (1,) + x.shape if x.ndim == 1 else (1, 1))


def split(ary, indices_or_sections, axis=0):
    x = _node(ary)
    if axis is None:  # NumPy's ary.shape[axis]
        raise TypeError("tuple indices must be integers or slices, not NoneType")
    axis = P.normalize_axes(axis, x.ndim, "np.split")[0]
    n = x.shape[axis]
    if not hasattr(indices_or_sections, "__len__"):  # a count of sections; NumPy takes int() of it, 2.0 too
        sections = int(indices_or_sections)
        if sections <= 0 or n % sections:
            raise ValueError("array split does not result in an equal division")
        bounds = [i * (n // sections) for i in range(sections + 1)]
    else:
        bounds = [0] + [min(max(int(i) if i >= 0 else n + int(i), 0), n) for i in indices_or_sections] + [n]
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        hi = max(hi, lo)
        starts = [0] * x.ndim
        sizes = list(x.shape)
        # an empty part starts at 0: an offset equal to the axis size is out of bounds for extract_slice
        starts[axis], sizes[axis] = (lo if hi > lo else 0), hi - lo
        part = tuple(slice(lo, lo + size) for lo, size in zip(starts, sizes))
        parts.append(view(P.slice_(x, starts, sizes, [1] * x.ndim), ary, positions=lambda p, part=part: p[part]))
    return parts


def where(condition, x=None, y=None):
    if x is None or y is None:
        raise NotImplementedError("np.where with one argument has a data-dependent shape and is not supported by the compiler")
    return Tensor(P.where(_operand(condition), _operand(x), _operand(y)))


def _tri_mask(shape, k, upper):
    """NumPy's own mask, from np.tri as np.tril/np.triu build it: a k that is no integer then means what it
    means to NumPy (np.tri counts columns with np.arange(-k, ...) in an integer dtype, so np.triu(m, 1.5)
    keeps nothing and np.tril(m, 0.5) everything)."""
    return ~np.tri(*shape[-2:], k=k - 1, dtype=bool) if upper else np.tri(*shape[-2:], k=k, dtype=bool)


def _triangle(m, k, upper: bool):
    x = _node(m)
    if x.ndim == 0:
        raise TypeError(f"{'np.triu' if upper else 'np.tril'} of a 0-d array: it needs at least one dimension "
                        "(NumPy's np.tri(*m.shape[-2:]) is missing its N)")
    # a vector is NumPy's too: its mask is square (np.tri of its one length), the vector broadcast along it as rows
    mask = const_node(_tri_mask(x.shape, k, upper))
    return Tensor(P.where(mask, x, const_node(np.zeros((), x.dtype))))


def triu(m, k=0):
    return _triangle(m, k, upper=True)


def tril(m, k=0):
    return _triangle(m, k, upper=False)


def _like(value):
    def like(a, dtype=None, order="K", subok=True, shape=None, device=None, **kw):
        x = _node(a)
        order = memory_order(order, "K")
        shp = x.shape if shape is None else (tuple(shape) if not isinstance(shape, int) else (shape,))
        fill = kw.get("fill_value", value)
        dtype = x.dtype if dtype is None else dt.check_supported(dtype, "np.ones_like/zeros_like/full_like")
        made = const_node(np.full(shp, fill, dtype=dtype))
        # NumPy lays the new array out as ``order`` asks, after a's layout ("K": like a), which its sums follow
        made = layout.with_strides(made, layout.ordered(made.shape, order, x.shape, layout.strides_of(x)))
        if order in ("A", "K") and not layout.known(x):  # after a layout the model only guesses: so is this one
            made = P.layout_unknown(made)
        return Tensor(made)
    return like


def full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, device=None):
    """NumPy's np.full_like: np.empty_like(a, ...) laid out as it asks, then np.copyto(res, fill_value,
    casting='unsafe') -- so a traced fill value (an element, or an array broadcast to the result) is
    converted as copyto converts it (an int out of range wraps, NaN becomes what the cast makes of it)."""
    if not (isinstance(fill_value, Tensor) or _holds_tensor((fill_value,))):
        return _like(None)(a, dtype=dtype, order=order, shape=shape, fill_value=fill_value)
    if isinstance(fill_value, (list, tuple)):  # NumPy's copyto makes an array of it first
        fill_value = array_of_sequence(fill_value)
    result = _like(0)(a, dtype=dtype, order=order, shape=shape)
    copyto(result, fill_value, casting="unsafe")
    return result


def _take_mode(mode) -> str:
    """NumPy's reading of np.take's ``mode`` ('raise', 'wrap', 'clip', 0, 1, None, ...; its ValueError for
    others), found by asking its own np.take to place -3 and 2 in an axis of two."""
    try:
        placed = np.take(np.arange(2), [-3, 2], mode=mode)
    except IndexError:
        return "raise"
    return "wrap" if placed[0] == 1 else "clip"


def take(a, indices, axis=None, out=None, mode="raise"):
    """np.take: the elements along ``axis`` (of the flattened array without one) at ``indices``. Positions
    known at trace time are NumPy's own np.take of the axis's positions, so its conversions (a Python float
    or bool is an integer index to it), modes and errors hold. Computed ones: bools are 0 and 1, 'wrap'
    takes an index modulo the axis, 'clip' pins it to [0, n - 1] (a negative one to 0, not from the end),
    'raise' makes one out of range NumPy's IndexError, checked as the kernel runs."""
    if out is not None:
        if isinstance(indices, list) and _holds_tensor(indices):
            indices = array_of_sequence(indices)
        return _computed_into_out("take", out, lambda o: np.take(_stand_in(a), _stand_in(indices), axis, o, mode),
                                  lambda _: take(a, indices, axis, mode=mode))
    how, x = _take_mode(mode), _node(a)  # (NumPy reads the mode first)
    if axis is None or x.ndim == 0:  # (NumPy's PyArray_CheckAxis makes a 0-d array 1-d, then reads the axis)
        x, axis = P.reshape(x, (x.size,)), 0 if axis is None else axis
    axis = P.one_axis(axis, x.ndim, "np.take")
    n = x.shape[axis]
    if isinstance(indices, list) and _holds_tensor(indices):  # np.take(x, [np.argmax(y), 0]): an array to NumPy
        indices = array_of_sequence(indices)
    if not isinstance(indices, Tensor):
        # NumPy's conversions and errors (naming the axis): its take of the positions along an axis placed alike
        positions = np.take(np.arange(n).reshape((1,) * axis + (n,)), indices, axis=axis, mode=mode)
        positions = np.reshape(positions, np.shape(positions)[axis:])
        return Tensor(P.gather_in_range(x, const_node(np.asarray(positions, np.intp)), axis), scalar=True)
    if not np.can_cast(indices.dtype, np.intp, "same_kind"):
        raise TypeError(f"Cannot cast array data from {indices.dtype!r} to {np.dtype(np.intp)!r} according to the "
                        "rule 'same_kind'")
    index = indices.astype(np.intp) if indices.dtype.kind == "b" else indices
    if how == "raise":
        return Tensor(P.gather(x, index.node, axis), scalar=True)
    if n == 0 and index.size:
        raise IndexError("cannot do a non-empty take from an empty axes.")
    index = index % max(n, 1) if how == "wrap" else np.clip(index, 0, max(n - 1, 0))
    return Tensor(P.gather_in_range(x, _tensor(index).node, axis), scalar=True)


# --------------------------------------------------------------------------- contractions
# NumPy's own definitions, each a matmul of operands transposed and reshaped to 2-d (as
# np.tensordot computes), or an elementwise multiply where NumPy's is one; a Python scalar operand is a
# 0-d array of NumPy's default type (strong, as np.asarray makes it)


def tensordot(a, b, axes=2):
    x, y = _node(a), _node(b)
    if _holds_tensor([axes]):
        raise NotImplementedError("np.tensordot: traced axes (they decide the result's shape)")
    # NumPy's reading: anything not iterable (an int, a 0-d array, a bool) is a count of axes, the last of a
    # against the first of b; else a pair, each entry an axis or a sequence of them
    try:
        iter(axes)
    except TypeError:
        axes_a, axes_b = list(range(-axes, 0)), list(range(0, axes))
    else:
        axes_a, axes_b = axes

    def listed(entry):
        try:
            return list(entry)
        except TypeError:
            return [entry]
    axes_a, axes_b = listed(axes_a), listed(axes_b)
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):  # (a 0-d array is unhashable)
        raise ValueError("duplicate axes are not allowed in tensordot")
    if len(axes_a) != len(axes_b):
        raise ValueError(f"np.tensordot: shape-mismatch for sum ({len(axes_a)} axes of a, {len(axes_b)} of b)")
    # one at a time: normalize_axes sorts, and the pairing is by position
    axes_a = [P.normalize_axes(operator.index(i), x.ndim, "np.tensordot")[0] for i in axes_a]
    axes_b = [P.normalize_axes(operator.index(i), y.ndim, "np.tensordot")[0] for i in axes_b]
    if len(set(axes_a)) != len(axes_a) or len(set(axes_b)) != len(axes_b):
        raise ValueError("np.tensordot: repeated axis in the axes summed over")
    for i, j in zip(axes_a, axes_b):
        if x.shape[i] != y.shape[j]:
            raise ValueError(f"np.tensordot: shape-mismatch for sum: axis {i} of a has {x.shape[i]} elements, "
                             f"axis {j} of b {y.shape[j]}")
    return Tensor(_contract(x, y, axes_a, axes_b, cblas=True))


def _contract(x: P.Node, y: P.Node, axes_a: list, axes_b: list, cblas: bool = False) -> P.Node:
    """Sum of products over ``axes_a`` of x paired with ``axes_b`` of y; the free axes of x, then of y.
    ``cblas``: NumPy computes it with np.dot of operands of at most two axes (np.dot and np.inner of such
    operands; np.tensordot, which reshapes its operands to matrices), whose BLAS types take ``_axpy_product``
    where an operand holds one element."""
    free_a = [i for i in range(x.ndim) if i not in axes_a]
    free_b = [i for i in range(y.ndim) if i not in axes_b]
    k = int(np.prod([x.shape[i] for i in axes_a], dtype=np.int64))
    m = int(np.prod([x.shape[i] for i in free_a], dtype=np.int64))
    n = int(np.prod([y.shape[i] for i in free_b], dtype=np.int64))
    out_shape = tuple(x.shape[i] for i in free_a) + tuple(y.shape[i] for i in free_b)
    if cblas and np.result_type(x.dtype, y.dtype) in _BLAS_TYPES and 1 in (x.size, y.size) and m * n:
        return _axpy_product(x, y, out_shape)
    x2 = P.reshape(P.transpose(x, free_a + axes_a), (m, k))
    y2 = P.reshape(P.transpose(y, axes_b + free_b), (k, n))
    return P.reshape(P.matmul(x2, y2, cblas=cblas), out_shape)


_BLAS_TYPES = (np.dtype(np.float32), np.dtype(np.float64))  # the common types NumPy's np.dot hands to BLAS


def _blas_typed(x: P.Node, y: P.Node) -> bool:
    """Whether NumPy's np.dot of x and y goes through BLAS (cblas_matrixproduct): float32 or float64 operands
    (in their common type) of at most two axes each."""
    return np.result_type(x.dtype, y.dtype) in _BLAS_TYPES and x.ndim <= 2 and y.ndim <= 2


def _axpy_product(x: P.Node, y: P.Node, out_shape: tuple) -> P.Node:
    """NumPy's BLAS np.dot where one operand holds one element (0-d, (1,), (1, 1)): NumPy reads it as a scalar
    s and, for a result of more than one element, calls BLAS's axpy over the other's elements into zeros --
    out = s * other + 0.0, and for s == 0 axpy returns at once, leaving zeros even against inf and NaN; a result
    of one element is s * other itself. OpenBLAS's axpy adds with a fused multiply-add where it steps through
    both arrays at unit increments, and in the last (length mod 4) elements of a call at any others, so a
    product that underflows keeps its sign there (fma(-0.3, 1e-45, 0.0) is -0.0), and elsewhere multiplies,
    then adds (+0.0): ``_axpy_fused``. The axis summed over has length 1, so the other's elements are the
    result's in C order. (NumPy allocates the result C-contiguous.)"""
    dtype = np.result_type(x.dtype, y.dtype)
    s, other = (x, y) if x.size == 1 else (y, x)
    alpha = P.reshape(P.cast(s, dtype), ())
    typed = P.cast(other, dtype)  # (converted in its memory order)
    values = P.reshape(typed, out_shape)
    product = P.elementwise("multiply", [alpha, values])
    if int(np.prod(out_shape, dtype=np.int64)) > 1:
        zero = const_node(np.zeros((), dtype))
        rounded_zero = P.elementwise("add", [product, dt.Weak(0)])  # (-0.0 + 0.0 is +0.0)
        fused = _axpy_fused(typed)
        if fused.any():
            kept = P.elementwise("logical_and", [const_node(fused.reshape(out_shape)),
                                                 P.elementwise("not_equal", [values, zero])])
            rounded_zero = P.where(kept, product, rounded_zero)
        product = P.where(P.elementwise("equal", [alpha, zero]), zero, rounded_zero)
    return _fresh(Tensor(product)).node


def _axpy_fused(other: P.Node) -> np.ndarray:
    """For each of ``other``'s elements (C order), whether NumPy's axpy calls (cblasfuncs.c) reach it in
    OpenBLAS's fused multiply-add: a vector (or row, or column) is one call over it at its increment; a matrix
    one call per row or per column, whichever is longer, writing the result at that axis' step; an operand with
    a negative step, or a zero one, is copied C-contiguously first. A call is fused throughout where both
    increments are 1, else in its last (length mod 4) elements. Beyond two axes (np.tensordot's reshaped
    operand) or where the layout is only guessed, a C-contiguous operand is assumed."""
    shape = other.shape if other.ndim <= 2 else (math.prod(other.shape[:-1]), other.shape[-1])
    strides = layout.strides_of(other) if other.ndim <= 2 and layout.known(other) else layout.contiguous_strides(shape)
    if layout.copied_for_cblas(shape, strides):
        strides = layout.contiguous_strides(shape)

    def call(length: int, increment: int, out_step: int) -> np.ndarray:
        if increment == 1 and out_step == 1:
            return np.ones(length, bool)
        return np.arange(length) >= length - length % 4

    if len(shape) == 2 and min(shape) > 1:
        along = 0 if shape[0] >= shape[1] else 1
        fused = call(shape[along], strides[along], shape[1] if along == 0 else 1)
        return np.broadcast_to(fused[:, None] if along == 0 else fused[None, :], shape).ravel()
    vector = [(d, st) for d, st in zip(shape, strides) if d > 1]
    length, increment = vector[0] if vector else (1, 1)
    return call(length, increment, 1)


def dot(a, b, out=None):
    if out is not None:
        return _dot_into(a, b, out)
    x, y = _node(a), _node(b)
    if x.ndim == 0 or y.ndim == 0:
        return _one_product_laid_out(x, y)
    # the sum runs over the last axis of a and the second-to-last of b (the only one of a vector)
    axis_b = max(y.ndim - 2, 0)
    if x.shape[-1] != y.shape[axis_b]:
        raise ValueError(f"shapes {x.shape} and {y.shape} not aligned: {x.shape[-1]} (dim {x.ndim - 1}) != "
                         f"{y.shape[axis_b]} (dim {axis_b})")
    if x.ndim > 2 or y.ndim > 2:
        return Tensor(_dot_of_rows(x, y, axis_b), scalar=True)
    return Tensor(_contract(x, y, [x.ndim - 1], [axis_b], cblas=True), scalar=True)


def _dot_of_rows(x: P.Node, y: P.Node, axis_b: int) -> P.Node:
    """np.dot (and np.inner) of operands of more than two axes, as NumPy's PyArray_MatrixProduct2 computes it:
    each output element by its type's dot function, which for float32 and float64 is BLAS's ?dot at the
    operands' strides along the summed axis (x's last, y's ``axis_b``; an operand of another type is first
    converted to a copy laid out in its memory order, NumPy's K order) -- OpenBLAS has one kernel for unit
    strides and another for any others, and a stride BLAS cannot take (zero, negative) is NumPy's running sum
    from 0 (``P.row_dots``). Other types add each product in turn: the matmul's loop."""
    dtype = np.result_type(x.dtype, y.dtype)
    if dtype not in _BLAS_TYPES:
        return _contract(x, y, [x.ndim - 1], [axis_b])
    x_typed, y_typed = P.cast(x, dtype), P.cast(y, dtype)  # (a converted copy keeps the operand's K order)
    increments = [max(layout.strides_of(v)[axis], 0)
                  for v, axis in ((x_typed, x.ndim - 1), (y_typed, axis_b))]  # (in elements; BLAS takes none below 1)
    mode = "loop" if 0 in increments else "unit" if increments == [1, 1] else "strided"
    free_b = [i for i in range(y.ndim) if i != axis_b]
    k = x.shape[-1]
    rows_x = P.reshape(x_typed, (math.prod(x.shape[:-1]), k))
    rows_y = P.reshape(P.transpose(y_typed, free_b + [axis_b]), (math.prod(y.shape[i] for i in free_b), k))
    return P.reshape(P.row_dots(rows_x, rows_y, mode), x.shape[:-1] + tuple(y.shape[i] for i in free_b))


def _dot_into(a, b, out) -> Tensor:
    """np.dot's ``out=``: NumPy's own np.dot on stand-ins, into a stand-in of out laid out as out's memory is,
    gives its checks (out's exact dtype and shape, and C-contiguity: "output array is not acceptable"); the
    product is written into out's memory, which is returned."""
    target = _writable_target(out, "np.dot(..., out=...)")
    if not layout.known(target.node):
        raise NotImplementedError("np.dot(..., out=...) into an array whose memory layout the compiler only guesses "
                                  "(NumPy requires a C-contiguous out): use the returned array instead")
    np.dot(_stand_in(a), _stand_in(b),
           out=_laid_out_array(target.shape, target.dtype, layout.strides_of(target.node)))
    _write_where(target, _node(dot(a, b)), True, "np.dot(..., out=...)", "use the returned array instead")
    return target if target.ndim else Tensor(target.node, scalar=True)  # NumPy's PyArray_Return of a 0-d out


def inner(a, b):
    x, y = _node(a), _node(b)
    if x.ndim == 0 or y.ndim == 0:
        return _one_product_laid_out(x, y)
    if x.shape[-1] != y.shape[-1]:
        raise ValueError(f"np.inner: shapes {x.shape} and {y.shape} not aligned: {x.shape[-1]} (dim {x.ndim - 1}) "
                         f"!= {y.shape[-1]} (dim {y.ndim - 1})")
    # (NumPy's np.dot of x and y with y's last axis moved first)
    if x.ndim > 2 or y.ndim > 2:
        return Tensor(_dot_of_rows(x, y, y.ndim - 1), scalar=True)
    return Tensor(_contract(x, y, [x.ndim - 1], [y.ndim - 1], cblas=True), scalar=True)


def _one_product_laid_out(x: P.Node, y: P.Node) -> Tensor:
    """np.dot/np.inner with a 0-d operand: for NumPy's BLAS types with operands of at most 2 axes its cblas path
    (``_axpy_product``, a C-contiguous result), else NumPy's plain multiply, laid out after the array as a
    ufunc's result is."""
    if _blas_typed(x, y):
        return Tensor(_axpy_product(x, y, x.shape if y.ndim == 0 else y.shape), scalar=True)
    return Tensor(P.elementwise("multiply", [x, y]), scalar=True)


def outer(a, b, out=None):
    x, y = _node(a), _node(b)
    column, row = P.reshape(x, (x.size, 1)), P.reshape(y, (1, y.size))
    if out is not None:  # NumPy's multiply(a.ravel()[:, newaxis], b.ravel()[newaxis, :], out)
        return np.multiply(Tensor(column), Tensor(row), out=out)
    return Tensor(P.elementwise("multiply", [column, row]))


def vdot(a, b):
    x, y = _node(a), _node(b)
    if x.size != y.size:
        raise ValueError(f"np.vdot: vectors have different lengths ({x.size} and {y.size})")
    return Tensor(_contract(P.reshape(x, (x.size,)), P.reshape(y, (y.size,)), [0], [0]), scalar=True)


def einsum(subscripts, *operands, out=None, dtype=None, order="K", casting="safe", optimize=False):
    """np.einsum by NumPy's rules (implicit output: the labels used once, sorted; ``...`` broadcast; a
    labelled axis of length 1 broadcast against the others), computed as pairwise contractions left
    to right, each a matmul. ``optimize`` changes NumPy's order (not followed) and, for two or more operands, what
    a full contraction returns: its optimized path ends in a matmul's 0-d array, not c_einsum's NumPy scalar."""
    if out is not None:
        return _einsum_into(subscripts, operands, out, dtype, order, casting, optimize)
    if order not in ("K", "C", "A"):
        raise NotImplementedError("np.einsum: only the default order is supported")
    if not isinstance(subscripts, str):
        subscripts, operands = _einsum_from_sublists((subscripts,) + operands)
    nodes = [_node(o) for o in operands]
    labels, output = _einsum_labels(subscripts, nodes)
    for k, lab in enumerate(labels):
        labels[k], nodes[k] = _einsum_diagonals(lab, nodes[k], k)
    if len(nodes) == 1 and sorted(labels[0]) == sorted(output):
        # a permutation (of a diagonal, perhaps): NumPy returns a view, before it looks at dtype= or casting=
        return view(P.transpose(nodes[0], [labels[0].index(c) for c in output]), operands[0], scalar=True,
                    positions=lambda p: np.einsum(subscripts, p))
    result_dtype = np.result_type(*[np.empty(0, n.dtype) for n in nodes]) if dtype is None else \
        dt.check_supported(dtype, "np.einsum")
    for k, n in enumerate(nodes):  # NumPy's iterator converts each operand under ``casting``
        if not np.can_cast(n.dtype, result_dtype, casting):
            raise TypeError(f"Iterator operand {k} dtype could not be cast from {n.dtype!r} to {result_dtype!r} "
                            f"according to the rule {casting!r}")
    # bool: NumPy's sum of products is an OR of ANDs, a count of true products that is nonzero
    wide = np.dtype(np.int64) if result_dtype.kind == "b" else result_dtype
    terms = [(lab, P.cast(P.cast(n, result_dtype), wide)) for lab, n in zip(labels, nodes)]
    result = _einsum_contract(terms, output, _einsum_sizes(terms))
    if result_dtype.kind == "b":
        result = P.elementwise("not_equal", [result, const_node(np.zeros((), np.int64))])
    return Tensor(result, scalar=optimize is False or len(nodes) < 2)


def _einsum_sublist_subscripts(sublist) -> str:
    """One sublist of np.einsum's interleaved form as subscript letters, by NumPy's mapping: 0-25 are
    'A'-'Z' and 26-51 are 'a'-'z' (so the implicit output's sorted order is the integers' order)."""
    letters = []
    for s in sublist:
        if s is Ellipsis:
            letters.append("...")
            continue
        try:
            s = operator.index(s)
        except TypeError:
            raise TypeError("each subscript must be either an integer or an ellipsis") from None
        if not 0 <= s < 52:
            raise ValueError("subscript is not within the valid range [0, 52)")
        letters.append(chr(ord("A") + s) if s < 26 else chr(ord("a") + s - 26))
    return "".join(letters)


def _einsum_into(subscripts, operands, out, dtype, order, casting, optimize) -> Tensor:
    """np.einsum's ``out=``: NumPy's own einsum on stand-ins, into a stand-in of out, gives its checks (out's
    shape, and ``casting`` from the computation's type to out's); the contraction is converted into out's
    memory, and out is returned. Where NumPy's c_einsum writes out itself (optimize=False, or one operand) its
    iterator's common dtype takes out's in too, so float32 operands into a float64 out are multiplied and summed
    in float64, and bools into an integer out are counted; NumPy's optimized path for two or more operands
    contracts as without out and then writes into it."""
    def contraction(out_dtype):
        labels, arrays = (subscripts, operands) if isinstance(subscripts, str) else \
            _einsum_from_sublists((subscripts,) + tuple(operands))
        common = dtype
        if dtype is None and (optimize is False or len(arrays) == 1):
            common = np.result_type(*[np.empty(0, _node(o).dtype) for o in arrays], out_dtype)
        return einsum(labels, *arrays, dtype=common, order=order, casting=casting, optimize=optimize)
    return _computed_into_out("einsum", out, lambda o: np.einsum(
        _stand_in(subscripts), *map(_stand_in, operands), out=o, dtype=dtype, order=order, casting=casting,
        optimize=optimize), contraction)


def _einsum_from_sublists(args: tuple) -> tuple[str, tuple]:
    """np.einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]) as the subscripts string and the operands."""
    operands, sublists = args[0::2], args[1::2]
    spec = ",".join(_einsum_sublist_subscripts(s) for s in sublists)
    if len(args) % 2:  # an odd count: the last argument is the output's sublist
        spec += "->" + _einsum_sublist_subscripts(operands[-1])
        operands = operands[:-1]
    return spec, operands


def _einsum_labels(subscripts: str, nodes) -> tuple[list[list[str]], list[str]]:
    """Each operand's axis labels and the output's, ``...`` spelled out as labels of its own
    (right-aligned across operands, so broadcast like NumPy's ellipsis)."""
    spec = subscripts.replace(" ", "")
    inputs, arrow, out = spec.partition("->")
    parts = inputs.split(",")
    if len(parts) != len(nodes):
        raise ValueError(f"np.einsum: {len(parts)} operand subscripts for {len(nodes)} operands")
    ellipsis_ndim = 0
    for part, n in zip(parts, nodes):
        named = part.replace("...", "")
        if not all(ch in string.ascii_letters for ch in named) or part.count("...") > 1:
            raise ValueError(f"np.einsum: invalid subscripts {part!r} (letters and one '...')")
        extra = n.ndim - len(named)
        if extra < 0 or (extra > 0 and "..." not in part):
            raise ValueError(f"np.einsum: subscripts {part!r} do not match an operand of {n.ndim} dimensions")
        ellipsis_ndim = max(ellipsis_ndim, extra)
    broadcast = [chr(0x3B1 + i) for i in range(ellipsis_ndim)]  # Greek letters: never a user's (ASCII) label

    def expand(part: str, ndim: int) -> list[str]:
        head, dots, tail = part.partition("...")
        named = len(head) + len(tail)
        middle = broadcast[ellipsis_ndim - (ndim - named):] if dots else []
        return list(head) + middle + list(tail)

    labels = [expand(part, n.ndim) for part, n in zip(parts, nodes)]
    if arrow:
        if not all(ch in string.ascii_letters for ch in out.replace("...", "")):
            raise ValueError(f"np.einsum: invalid output subscripts {out!r}")
        output = expand(out, len(out.replace("...", "")) + (ellipsis_ndim if "..." in out else 0))
        used = {c for lab in labels for c in lab}
        for c in output:
            if c not in used:
                raise ValueError(f"np.einsum: output subscript {c!r} does not appear in the operands")
        if len(set(output)) != len(output):
            raise ValueError(f"np.einsum: output subscript repeated in {out!r}")
        if broadcast and "..." not in out:  # NumPy refuses this too
            raise ValueError("np.einsum: the operands have '...' dimensions the output subscripts leave out "
                             "(write '...' in the output too)")
    else:
        counts = {}
        for lab in labels:
            for c in lab:
                counts[c] = counts.get(c, 0) + 1
        output = broadcast + sorted(c for c, k in counts.items() if k == 1 and c not in broadcast)
    return labels, output


def _einsum_diagonals(labels: list[str], x: P.Node, k: int) -> tuple[list[str], P.Node]:
    """A label repeated within one operand takes that operand's diagonal over those axes (NumPy's rule),
    which then carries the label once, as the last axis."""
    while len(set(labels)) != len(labels):
        label = next(c for c in labels if labels.count(c) > 1)
        p = labels.index(label)
        q = labels.index(label, p + 1)
        if x.shape[p] != x.shape[q]:
            raise ValueError(f"dimensions in operand {k} for collapsing index '{label}' don't match "
                             f"({x.shape[p]} != {x.shape[q]})")
        x = _diagonal_node(x, 0, p, q)
        labels = [c for i, c in enumerate(labels) if i not in (p, q)] + [label]
    return labels, x


def _einsum_sizes(terms) -> dict:
    """Each label's length: equal wherever it appears, or 1 (broadcast), as NumPy allows."""
    sizes = {}
    for labels, node in terms:
        for c, d in zip(labels, node.shape):
            if sizes.get(c, 1) != 1 and d != 1 and sizes[c] != d:
                raise ValueError(f"np.einsum: operands could not be broadcast together: label {c!r} has lengths "
                                 f"{sizes[c]} and {d}")
            sizes[c] = d if sizes.get(c, 1) == 1 else sizes[c]
    return sizes


def _einsum_contract(terms, output: list[str], sizes: dict) -> P.Node:
    """Left to right: sum out what no later term and not the output needs, then contract with the next."""
    def needed_after(i):
        return {c for lab, _ in terms[i:] for c in lab} | set(output)

    labels, acc = terms[0]
    for i in range(1, len(terms) + 1):
        labels, acc = _einsum_sum_out(labels, acc, needed_after(i))
        if i == len(terms):
            break
        other_labels, other = _einsum_sum_out(*terms[i], needed_after(i + 1) | set(labels))
        labels, acc = _einsum_pair(labels, acc, other_labels, other, needed_after(i + 1), sizes)
    return P.transpose(acc, [labels.index(c) for c in output]) if labels != output else acc


def _einsum_sum_out(labels: list[str], node: P.Node, keep: set) -> tuple[list[str], P.Node]:
    gone = tuple(i for i, c in enumerate(labels) if c not in keep)
    if not gone:
        return labels, node
    return [c for c in labels if c in keep], P.reduce("sum", node, gone, False, "np.einsum", dtype=node.dtype)


def _einsum_pair(la, a, lb, b, keep: set, sizes: dict):
    """One contraction as a batched matmul: (shared kept) x (a's own) x (summed) @ (shared kept) x (summed) x (b's own)."""
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    own_a = [c for c in la if c not in lb]
    own_b = [c for c in lb if c not in la]

    def arrange(labels, node, order):
        node = P.broadcast_to(node, tuple(sizes[c] for c in labels))  # a length-1 label meets a longer one
        return P.transpose(node, [labels.index(c) for c in order])

    def length(group):
        return int(np.prod([sizes[c] for c in group], dtype=np.int64))

    nb, m, k, n = length(batch), length(own_a), length(summed), length(own_b)
    a3 = P.reshape(arrange(la, a, batch + own_a + summed), (nb, m, k))
    b3 = P.reshape(arrange(lb, b, batch + summed + own_b), (nb, k, n))
    labels = batch + own_a + own_b
    return labels, P.reshape(P.matmul(a3, b3), tuple(sizes[c] for c in labels))


# --------------------------------------------------------------------------- rearranging
# NumPy's definitions in terms of slices, concatenation and gathers; index arrays NumPy itself
# computes (np.repeat, np.tile, np.pad of np.arange), so its rules and its errors are its own


def _tensor(a) -> Tensor:
    return a if isinstance(a, Tensor) else Tensor(_node(a))


def flip(m, axis=None):
    x = _tensor(m)
    # NumPy's own reading of the axes: an integer, or any sequence of them (a list or an array too)
    axes = range(x.ndim) if axis is None else np.lib.array_utils.normalize_axis_tuple(axis, x.ndim)
    return x[tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(x.ndim))]  # a view


def fliplr(m):
    x = _tensor(m)
    if x.ndim < 2:
        raise ValueError("Input must be >= 2-d.")
    return x[:, ::-1]


def flipud(m):
    x = _tensor(m)
    if x.ndim < 1:
        raise ValueError("Input must be >= 1-d.")
    return x[::-1, ...]


def _fft_shift(x, axes, sign: int):
    """np.fft.fftshift (sign 1) and ifftshift (sign -1): a roll by half of each axis (rounded down), every
    axis when ``axes`` is None."""
    x = _tensor(x)
    if axes is None:
        axes, shift = tuple(range(x.ndim)), [sign * (n // 2) for n in x.shape]
    elif isinstance(axes, (int, np.integer)):
        shift = sign * (x.shape[axes] // 2)
    else:
        shift = [sign * (x.shape[ax] // 2) for ax in axes]
    return roll(x, shift, axes)


def fftshift(x, axes=None):
    return _fft_shift(x, axes, 1)


def ifftshift(x, axes=None):
    return _fft_shift(x, axes, -1)


def roll(a, shift, axis=None):
    """np.roll: NumPy's own reading of the shifts (int() of each, so a float one is truncated and a bool is 0
    or 1; shifts of one axis add up), each a slice of the end moved to the front."""
    x = _tensor(a)
    if isinstance(shift, Tensor) or _holds_tensor((shift,)):
        raise NotImplementedError("np.roll: a traced shift (it decides which elements move where, which the trace "
                                  "must know); pass a constant")
    if axis is None:
        return Tensor(P.reshape(roll(x.ravel(), shift, 0).node, x.shape))
    axes = [P.normalize_axes(ax, x.ndim, "np.roll")[0] for ax in np.atleast_1d(np.asarray(axis)).tolist()]
    if not x.ndim and not axes:  # NumPy's roll builds no index for a 0-d array and fails unpacking it
        raise ValueError("np.roll of a 0-d array along no axes: NumPy raises 'not enough values to unpack'")
    pairs = np.broadcast(np.asarray(shift), np.asarray(axes))
    if pairs.nd > 1:
        raise ValueError("'shift' and 'axis' should be scalars or 1D sequences")
    shifts = {}
    for sh, ax in pairs:
        shifts[int(ax)] = shifts.get(int(ax), 0) + int(sh)
    node = x.node
    for ax, sh in shifts.items():
        n = node.shape[ax]
        if n and sh % n:
            k = n - sh % n  # the first k elements move to the end
            starts, sizes, steps = [0] * node.ndim, list(node.shape), [1] * node.ndim
            head = P.slice_(node, starts, sizes[:ax] + [k] + sizes[ax + 1:], steps)
            tail = P.slice_(node, starts[:ax] + [k] + starts[ax + 1:], sizes[:ax] + [n - k] + sizes[ax + 1:], steps)
            node = P.concat([tail, head], ax)
    return _fresh(Tensor(node), like=x)  # NumPy's np.empty_like(a), written piece by piece


def repeat(a, repeats, axis=None):
    x = _node(a)
    if isinstance(repeats, Tensor):
        raise NotImplementedError("np.repeat: repeats computed in the traced function decide the result's shape; "
                                  "pass them as constants")
    if axis is None or x.ndim == 0:  # (NumPy's PyArray_CheckAxis makes a 0-d array 1-d, then reads the axis)
        x, axis = P.reshape(x, (x.size,)), 0 if axis is None else axis
    axis = P.one_axis(axis, x.ndim, "np.repeat")
    index = np.repeat(np.arange(x.shape[axis]), repeats)  # NumPy's own rules (and errors) for repeats
    return Tensor(P.gather(x, const_node(index), axis))


def tile(A, reps):
    x = _node(A)
    reps = tuple(reps) if np.iterable(reps) else (reps,)
    reps = tuple(operator.index(r) for r in reps)
    if x.ndim < len(reps):
        x = P.reshape(x, (1,) * (len(reps) - x.ndim) + x.shape)
    reps = (1,) * (x.ndim - len(reps)) + reps
    for axis, r in enumerate(reps):
        if r != 1:
            x = P.gather(x, const_node(np.tile(np.arange(x.shape[axis]), r)), axis)
    return Tensor(x)


def diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    """NumPy's np.diff, line for line, on traced arrays."""
    if n == 0:
        return a
    if n < 0:
        raise ValueError("order must be non-negative but got " + repr(n))
    x = _tensor(a)
    if x.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    axis = P.one_axis(axis, x.ndim, "np.diff", True)
    combined = []
    for extra in (prepend, None, append):
        if extra is None:
            combined.append(x)
        elif extra is not np._NoValue:
            extra = _tensor(extra)
            if extra.ndim == 0:
                extra = np.broadcast_to(extra, x.shape[:axis] + (1,) + x.shape[axis + 1:])
            combined.append(extra)
    if len(combined) > 1:
        x = np.concatenate(combined, axis)
    later = tuple(slice(1, None) if i == axis else slice(None) for i in range(x.ndim))
    earlier = tuple(slice(None, -1) if i == axis else slice(None) for i in range(x.ndim))
    op = np.not_equal if x.dtype == np.bool_ else np.subtract
    for _ in range(n):
        x = op(x[later], x[earlier])
    return x


# np.pad's modes and the keyword arguments each takes (NumPy's table)
_PAD_KEYWORDS = {"constant": ("constant_values",), "empty": (), "edge": (), "wrap": (), "reflect": ("reflect_type",),
                 "symmetric": ("reflect_type",), "linear_ramp": ("end_values",), "maximum": ("stat_length",),
                 "minimum": ("stat_length",), "mean": ("stat_length",), "median": ("stat_length",)}
_PAD_STATISTICS = ("maximum", "minimum", "mean", "median")


def _slice_assigned(value, dtype) -> np.ndarray:
    """``value`` (known at trace time) as NumPy's ``a[i:j] = value`` converts it into an array of ``dtype``."""
    box = np.zeros(1, dtype)
    box[0:1] = value
    return box[0]


def _pad_pairs(x, ndim: int, as_index: bool = False) -> list:
    """A (before, after) pair per axis from np.pad's broadcastable argument, as NumPy's pad reads it: one value
    or one pair (of NumPy scalars) for every axis, otherwise a pair per axis (of Python scalars); an index
    argument is rounded to intp and may not be negative."""
    if x is None:
        return [(None, None)] * ndim
    x = np.array(x)
    if as_index:
        x = np.round(x).astype(np.intp, copy=False)
    if x.ndim < 3 and (x.size == 1 or (x.size == 2 and x.shape != (2, 1))):
        pair = x.ravel()
        pair = (pair[0], pair[0]) if pair.size == 1 else (pair[0], pair[1])
        if as_index and min(pair) < 0:
            raise ValueError("index can't contain negative values")
        return [pair] * ndim
    if as_index and x.size and x.min() < 0:
        raise ValueError("index can't contain negative values")
    return np.broadcast_to(x, (ndim, 2)).tolist()


def _along(axis: int, index) -> tuple:
    return (slice(None),) * axis + (index,)


def pad(array, pad_width, mode="constant", **kwargs):
    """np.pad, axis by axis as NumPy pads (each axis's padding sees the earlier axes' padding). The modes
    that copy elements (edge, wrap, reflect, symmetric) are one gather whose indices are np.pad of
    np.arange; the others concatenate computed bands: constant values, linear ramps (np.linspace), a
    statistic of the edge (rounded for integer arrays, as NumPy rounds), reflections of type 'odd'."""
    x = _node(array)
    if isinstance(pad_width, Tensor):
        raise NotImplementedError("np.pad: pad widths computed in the traced function decide the result's shape")
    if np.asarray(pad_width).dtype.kind != "i":
        raise TypeError("`pad_width` must be of integral type.")
    widths = [(int(before), int(after)) for before, after in _pad_pairs(pad_width, x.ndim, as_index=True)]
    if callable(mode):
        raise NotImplementedError("np.pad: a function as mode (NumPy calls it to write slices of its buffer in place)")
    if mode not in _PAD_KEYWORDS:
        raise ValueError(f"mode '{mode}' is not supported")
    unsupported = set(kwargs) - set(_PAD_KEYWORDS[mode])
    if unsupported:
        raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
    if mode == "empty":
        raise NotImplementedError("np.pad: mode 'empty' leaves the padding as uninitialized memory")
    if mode == "constant":
        values = _pad_pairs(kwargs.get("constant_values", 0), x.ndim)
        for axis, ((before, after), (v_before, v_after)) in enumerate(zip(widths, values)):
            def band(width, v, axis=axis):  # the padding on one side: the value, in the array's dtype
                return const_node(np.full(x.shape[:axis] + (width,) + x.shape[axis + 1:], v))

            # converted as NumPy's pad writes each side, a slice assignment of the value (its OverflowError
            # for 300 into int8, its ValueError for NaN into an integer array), whatever the side's width
            v_before, v_after = (_slice_assigned(v, x.dtype) for v in (v_before, v_after))
            parts = ([band(before, v_before)] if before else []) + [x] + ([band(after, v_after)] if after else [])
            x = P.concat(parts, axis) if len(parts) > 1 else x
        return Tensor(x)
    if x.size == 0:  # NumPy returns before any mode reads the array: padding an empty axis is all it refuses
        for axis, (before, after) in enumerate(widths):
            if x.shape[axis] == 0 and (before or after):
                raise ValueError(f"can't extend empty axis {axis} using modes other than 'constant' or 'empty'")
        shape = tuple(n + before + after for n, (before, after) in zip(x.shape, widths))
        return Tensor(const_node(np.zeros(shape, x.dtype)))
    t = Tensor(x)
    arguments = _pad_pairs(kwargs.get("end_values", 0), x.ndim) if mode == "linear_ramp" else \
        _pad_pairs(kwargs.get("stat_length"), x.ndim, as_index=True) if mode in _PAD_STATISTICS else [None] * x.ndim
    odd = mode in ("reflect", "symmetric") and kwargs.get("reflect_type", "even") == "odd"
    # NumPy pads into np.empty(new shape, order="F" if array.flags.fnc else "C") and takes its statistics there
    order = "F" if layout.known(x) and layout.fortran_only(x.shape, layout.strides_of(x)) else "C"
    for axis, ((before, after), argument) in enumerate(zip(widths, arguments)):
        if mode == "linear_ramp":
            t = _pad_linear_ramps(t, axis, before, after, argument)
        elif mode in _PAD_STATISTICS:
            t = _pad_statistics(t, axis, before, after, argument, mode, order)
        elif odd and t.shape[axis] > 1:  # a length-1 axis takes its edge, as NumPy's legacy behaviour
            t = _pad_odd_reflection(t, axis, before, after, include_edge=mode == "symmetric")
        elif before or after:
            index = np.pad(np.arange(t.shape[axis]), (before, after), mode="edge" if odd else mode)
            t = Tensor(P.gather(t.node, const_node(index), axis))
    return t


def _pad_linear_ramps(t: Tensor, axis: int, before: int, after: int, end_values) -> Tensor:
    """NumPy's ramps: np.linspace from each end value to the edge (not included), in the array's dtype."""
    n = t.shape[axis]
    ramps = [linspace(end, t[_along(axis, k)], width, endpoint=False, dtype=t.dtype, axis=axis)
             for end, k, width in zip(end_values, (0, n - 1), (before, after))]
    right = ramps[1][_along(axis, slice(None, None, -1))]
    return concatenate([ramps[0], t, right], axis)


def _pad_statistics(t: Tensor, axis: int, before: int, after: int, lengths, mode: str, order: str) -> Tensor:
    """NumPy's statistic of the first and last ``lengths`` (all, where None or longer) along the axis, taken
    whatever the widths, rounded when the array is of integers, and converted to its dtype. NumPy takes it in
    its padded array, laid out in ``order``: a mean sums in that memory order (not the argument's, or a
    concatenation's), so it reads a copy laid out so."""
    n = t.shape[axis]
    lengths = [n if length is None or length > n else int(length) for length in lengths]
    if 0 in lengths and mode in ("maximum", "minimum"):
        raise ValueError("stat_length of 0 yields no value for padding")
    statistic = {"maximum": amax, "minimum": amin, "mean": mean, "median": median}[mode]
    source = t.copy(order=order) if mode == "mean" else t
    bands = []
    for (lo, hi), width in zip(((0, lengths[0]), (n - lengths[1], n)), (before, after)):
        value = statistic(source[_along(axis, slice(lo, hi))], axis=axis, keepdims=True)
        if np.issubdtype(t.dtype, np.integer) and not np.issubdtype(value.dtype, np.integer):
            value = round_(value)
        shape = t.shape[:axis] + (width,) + t.shape[axis + 1:]
        bands.append(broadcast_to(value.astype(t.dtype), shape))
    return concatenate([bands[0], t, bands[1]], axis)


def _pad_odd_reflection(t: Tensor, axis: int, before: int, after: int, include_edge: bool) -> Tensor:
    """NumPy's reflection of type 'odd' (2 * edge - mirrored value, in NumPy's types for that expression,
    converted to the array's dtype), in its passes: each mirrors at most the whole period so far about the
    current outermost element, so a pad wider than the array reflects the reflections."""
    period, offset = t.shape[axis], int(include_edge)
    line = t
    while before or after:
        filled = line.shape[axis]
        # the whole periods filled so far (less the edge itself where the edge is not repeated)
        chunk = filled // period * period if include_edge else (filled - 1) // (period - 1) * (period - 1)
        if before:
            k = min(chunk, before)
            mirrored = take(line, np.arange(k - offset, -offset, -1), axis)
            edge = line[_along(axis, slice(0, 1))]
            line = concatenate([(2 * edge - mirrored).astype(t.dtype), line], axis)
            before -= k
        if after:
            k = min(chunk, after)
            end = line.shape[axis] - 2 + offset
            mirrored = take(line, np.arange(end, end - k, -1), axis)
            edge = line[_along(axis, slice(-1, None))]
            line = concatenate([line, (2 * edge - mirrored).astype(t.dtype)], axis)
            after -= k
    return line


# --------------------------------------------------------------------------- more of NumPy's functions
# NumPy's own definitions (numpy/lib and numpy/_core's Python code) restated on traced arrays, so the
# dtypes, shapes and errors are its own; axis arguments go through NumPy's own normalizers.


def moveaxis(a, source, destination):
    x = _tensor(a)
    source = np.lib.array_utils.normalize_axis_tuple(source, x.ndim, "source")
    destination = np.lib.array_utils.normalize_axis_tuple(destination, x.ndim, "destination")
    if len(source) != len(destination):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(x.ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return transpose(x, order)


def _atleast_nd(nd, new_axes):
    """np.atleast_1d/2d/3d: ``new_axes[k]`` is how an array of k dimensions is indexed (a view)."""
    def one(a):
        if not isinstance(a, Tensor):
            return getattr(np, f"atleast_{nd}d")(a)
        return a if a.ndim >= nd else a[new_axes[a.ndim]]

    def atleast(*arys):
        results = tuple(one(a) for a in arys)
        return results[0] if len(results) == 1 else results
    return atleast


atleast_1d = _atleast_nd(1, {0: (None,)})
atleast_2d = _atleast_nd(2, {0: (None, None), 1: (None, slice(None))})
atleast_3d = _atleast_nd(3, {0: (None, None, None), 1: (None, slice(None), None), 2: (slice(None), slice(None), None)})


def column_stack(tup):
    columns = []
    for v in tup:
        x = _tensor(v)
        columns.append(x if x.ndim >= 2 else np.transpose(x[(None,) * (2 - x.ndim)]))
    return concatenate(columns, 1)


def dstack(tup):
    arrays = atleast_3d(*tup)
    return concatenate(arrays if isinstance(arrays, tuple) else (arrays,), 2)


def diagonal(a, offset=0, axis1=0, axis2=1):
    """PyArray_Diagonal: the two axes removed, the diagonal appended as the last axis; a gather of
    the flattened pair of axes at ``row * n2 + column``."""
    x = _tensor(a)
    if x.ndim < 2:
        raise ValueError("diag requires an array of at least two dimensions")
    axis1 = np.lib.array_utils.normalize_axis_index(axis1, x.ndim, "axis1")
    axis2 = np.lib.array_utils.normalize_axis_index(axis2, x.ndim, "axis2")
    if axis1 == axis2:
        raise ValueError("axis1 and axis2 cannot be the same")
    # NumPy's diagonal is a read-only view: it refuses updates, but sees a's
    offset = operator.index(offset)
    return view(_diagonal_node(x.node, offset, axis1, axis2), a, read_only=True,
                positions=lambda p: np.diagonal(p, offset, axis1, axis2))


def _diagonal_node(x: P.Node, offset: int, axis1: int, axis2: int) -> P.Node:
    n1, n2 = x.shape[axis1], x.shape[axis2]
    rows = np.arange(max(0, -offset), n1)
    rows = rows[rows + offset < n2]
    rest = [d for d in range(x.ndim) if d not in (axis1, axis2)]
    pairs = P.reshape(P.transpose(x, rest + [axis1, axis2]), tuple(x.shape[d] for d in rest) + (n1 * n2,))
    return P.gather(pairs, const_node(rows * n2 + rows + offset), x.ndim - 2)


def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    """PyArray_Trace: np.add.reduce of the diagonal along its (last) axis (into ``out=`` as that reduction)."""
    return np.add.reduce(diagonal(a, offset, axis1, axis2), axis=-1, dtype=dtype, out=out)


def diag(v, k=0):
    """A 1-d ``v`` set on the k-th diagonal of a square of zeros (a gather from ``v`` with a zero
    appended, whose index matrix points at the zero off the diagonal); a 2-d one's k-th diagonal."""
    x = _tensor(v)
    k = operator.index(k)
    if x.ndim == 2:
        return diagonal(x, k)
    if x.ndim != 1:
        raise ValueError("Input must be 1- or 2-d.")
    n = x.shape[0] + abs(k)
    padded = P.concat([x.node, const_node(np.zeros(1, x.dtype))], 0)
    rows, columns = np.indices((n, n))
    index = np.where(columns - rows == k, np.minimum(rows, columns), x.shape[0])
    return Tensor(P.gather(padded, const_node(index), 0))


def take_along_axis(arr, indices, axis=-1):
    """NumPy's fancy index: ``indices`` along ``axis``, an aranges broadcast along every other axis."""
    x = _tensor(arr)
    index = indices if isinstance(indices, Tensor) else np.asarray(indices)
    if axis is None:
        if index.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        x, axis = ravel(x), 0
    else:
        axis = np.lib.array_utils.normalize_axis_index(axis, x.ndim)
    if not np.issubdtype(index.dtype, np.integer):
        raise IndexError("`indices` must be an integer array")
    if x.ndim != index.ndim:
        raise ValueError("`indices` and `arr` must have the same number of dimensions")
    fancy = tuple(index if d == axis else np.arange(n).reshape((1,) * d + (-1,) + (1,) * (x.ndim - d - 1))
                  for d, n in enumerate(x.shape))
    return x[fancy]


def ptp(a, axis=None, out=None, keepdims=False):
    """NumPy's _ptp: subtract(maximum.reduce(a, axis, out=out), minimum.reduce(a, axis), out) — into ``out`` the
    maximum is converted first and the difference taken in the loop for out's dtype, as there."""
    return np.subtract(amax(a, axis, out=out, keepdims=keepdims), amin(a, axis, keepdims=keepdims), out=out)


def count_nonzero(a, axis=None, *, keepdims=False):
    x = _tensor(a)
    truth = x if x.dtype == np.bool_ else x.astype(np.bool_)
    return sum_(truth, axis=axis, dtype=np.intp, keepdims=keepdims)


def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """NumPy's formula: |x - y| <= atol + rtol * |y|, y finite, or x == y (``y`` in a float type)."""
    for name, tol in (("rtol", rtol), ("atol", atol)):
        if isinstance(tol, Tensor):
            raise NotImplementedError(f"np.isclose: a traced {name} (NumPy checks it is finite first)")
        if not np.all(np.isfinite(tol)):
            raise NotImplementedError(f"np.isclose: a non-finite {name} (NumPy warns or raises per np.seterr)")
    x, y = (v if isinstance(v, (int, float, Tensor)) else np.asanyarray(v) for v in (a, b))
    if getattr(y, "dtype", None) is not None:
        y = y.astype(np.result_type(y.dtype, 1.0), copy=False) if isinstance(y, Tensor) else np.asanyarray(y, np.result_type(y, 1.0))
    elif isinstance(y, int):
        y = float(y)
    rtol, atol = (t if isinstance(t, (int, float)) else np.asanyarray(t) for t in (rtol, atol))
    result = np.less_equal(abs(x - y), atol + rtol * abs(y)) & np.isfinite(y) | (x == y)
    if equal_nan:
        result = result | (np.isnan(x) & np.isnan(y))
    return result if result.ndim else result[()]


def _gradient_spacings(varargs, x: Tensor, axes: tuple) -> list:
    """np.gradient's spacing per axis, as NumPy reads its arguments: none (1.0), one scalar for every axis,
    or one scalar or coordinate array per axis -- coordinates become their differences, a scalar when they
    are all equal. Constants only: NumPy chooses the formula by the coordinates' values."""
    if any(isinstance(v, Tensor) for v in varargs):
        raise NotImplementedError("np.gradient: traced spacings or coordinates (NumPy picks its formula by "
                                  "their values); pass them as NumPy arrays or numbers")
    if not varargs:
        return [1.0] * len(axes)
    if len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        return list(varargs) * len(axes)
    if len(varargs) != len(axes):
        raise TypeError("invalid number of arguments")
    spacings = []
    for ax, given in zip(axes, varargs):
        distances = np.asanyarray(given)
        if distances.ndim == 0:
            spacings.append(given)
            continue
        if distances.ndim != 1:
            raise ValueError("distances must be either scalars or 1d")
        if len(distances) != x.shape[ax]:
            raise ValueError("when 1d, distances must match the length of the corresponding dimension")
        if distances.dtype.kind in "iu":
            distances = distances.astype(np.float64)
        steps = np.diff(distances)
        spacings.append(steps[0] if (steps == steps[0]).all() else steps)
    return spacings


def _gradient_coefficients(dx, at: str, ndim: int, axis: int):
    """NumPy's weights (a, b, c) of three neighbours: the interior's central difference or a second-order
    edge ("first"/"last"), for a uniform step or, per point, from the steps' array; computed by NumPy."""
    uniform = np.ndim(dx) == 0
    if at == "interior":
        d1, d2 = dx[:-1], dx[1:]
        coefficients = (-d2 / (d1 * (d1 + d2)), (d2 - d1) / (d1 * d2), d1 / (d2 * (d1 + d2)))
        shape = [1] * ndim
        shape[axis] = -1
        return tuple(np.reshape(w, shape) for w in coefficients)
    if at == "first":
        if uniform:
            return -1.5 / dx, 2. / dx, -0.5 / dx
        d1, d2 = dx[0], dx[1]
        return -(2. * d1 + d2) / (d1 * (d1 + d2)), (d1 + d2) / (d1 * d2), -d1 / (d2 * (d1 + d2))
    if uniform:
        return 0.5 / dx, -2. / dx, 1.5 / dx
    d1, d2 = dx[-2], dx[-1]
    return d2 / (d1 * (d1 + d2)), -(d2 + d1) / (d1 * d2), (2. * d2 + d1) / (d2 * (d1 + d2))


def gradient(f, *varargs, axis=None, edge_order=1):
    """NumPy's np.gradient on a traced array, each part computed as NumPy computes it (second-order central
    differences inside; first- or second-order one-sided ones at the ends; the same Python and NumPy
    scalars, so the same dtypes) and stored in the result's type (float64 for integers), the parts joined
    along the axis where NumPy assigns them into an empty array."""
    x = _tensor(f)
    axes = np.lib.array_utils.normalize_axis_tuple(tuple(range(x.ndim)) if axis is None else axis, x.ndim)
    spacings = _gradient_spacings(varargs, x, axes)
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    otype = x.dtype if x.dtype.kind == "f" else np.dtype(np.float64)
    if x.dtype.kind in "iu":
        x = x.astype(np.float64)
    results = []
    for ax, dx in zip(axes, spacings):
        if x.shape[ax] < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, at least (edge_order + 1) "
                             "elements are required.")

        def part(s):
            return x[tuple(s if i == ax else slice(None) for i in range(x.ndim))]

        def weighted(weights, s1, s2, s3):
            a, b, c = weights
            return a * part(s1) + b * part(s2) + c * part(s3)
        uniform = np.ndim(dx) == 0
        if uniform:
            interior = (part(slice(2, None)) - part(slice(None, -2))) / (2. * dx)
        else:
            interior = weighted(_gradient_coefficients(dx, "interior", x.ndim, ax),
                                slice(None, -2), slice(1, -1), slice(2, None))
        if edge_order == 1:
            first = (part(slice(1, 2)) - part(slice(0, 1))) / (dx if uniform else dx[0])
            last = (part(slice(-1, None)) - part(slice(-2, -1))) / (dx if uniform else dx[-1])
        else:
            first = weighted(_gradient_coefficients(dx, "first", x.ndim, ax), slice(0, 1), slice(1, 2), slice(2, 3))
            last = weighted(_gradient_coefficients(dx, "last", x.ndim, ax), slice(-3, -2), slice(-2, -1), slice(-1, None))
        results.append(concatenate([piece.astype(otype) for piece in (first, interior, last)], ax))
    return results[0] if len(axes) == 1 else tuple(results)


def _chebyshev_series(x: Tensor, coefficients) -> Tensor:
    """Clenshaw's recurrence as NumPy's _chbevl runs it (its coefficients Python floats, so weak)."""
    b0, b1, b2 = coefficients[0], 0.0, 0.0
    for c in coefficients[1:]:
        b2, b1 = b1, b0
        b0 = x * b1 - b2 + c
    return 0.5 * (b0 - b2)


def i0(x):
    """NumPy's np.i0 (Cephes' Chebyshev series, NumPy's own coefficients): exp(x) times the series in
    x / 2 - 2 up to 8, else in 32 / x - 2 divided by sqrt(x), of |x| in a float type; both are computed
    and one is chosen (np.piecewise applies each to its elements only). A 0-d input gives a 0-d array."""
    from numpy.lib import _function_base_impl as numpy_definitions
    t = _tensor(x)
    if t.dtype.kind != "f":
        t = t.astype(float)
    t = np.abs(t)
    near = np.exp(t) * _chebyshev_series(t / 2.0 - 2, numpy_definitions._i0A)
    far = np.exp(t) * _chebyshev_series(32.0 / t - 2.0, numpy_definitions._i0B) / np.sqrt(t)
    return Tensor(P.cast(np.where(t <= 8.0, near, far).node, t.dtype))


def unwrap(p, discont=None, axis=-1, *, period=2 * np.pi):
    """NumPy's np.unwrap: each step's difference brought into [-period/2, period/2) (its upper end where a
    positive step lands on the lower one), the corrections where a step is at least ``discont``, summed
    along the axis onto every element after the first, in NumPy's result_type of the steps and period."""
    x = _tensor(p)
    steps = diff(x, axis=axis)
    axis = P.one_axis(axis, x.ndim, "np.unwrap")  # (a bool passes diff, not the cumsum)
    if discont is None:
        discont = period / 2
    dtype = np.result_type(steps.dtype, period)
    if dtype.kind in "iu":
        high, rem = divmod(period, 2)
        ambiguous = rem == 0
    else:
        high, ambiguous = period / 2, True
    low = -high
    wrapped = np.mod(steps - low, period) + low
    if ambiguous:
        wrapped = np.where((wrapped == low) & (steps > 0), np.asarray(high).astype(wrapped.dtype), wrapped)
    correction = wrapped - steps
    correction = np.where(abs(steps) < discont, np.zeros((), correction.dtype), correction)
    later = tuple(slice(1, None) if i == axis else slice(None) for i in range(x.ndim))
    first = tuple(slice(0, 1) if i == axis else slice(None) for i in range(x.ndim))
    return concatenate([x[first].astype(dtype), (x[later] + np.cumsum(correction, axis)).astype(dtype)], axis)


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
    """NumPy's np.apply_along_axis, unrolled in the trace: ``func1d`` is traced once per 1-d slice (views of
    the array along ``axis``, in NumPy's order), the first result fixing the dtype and shape every later one
    is converted and broadcast to (NumPy's buffer), the result's own axes put where ``axis`` was."""
    x = _tensor(arr)
    axis = np.lib.array_utils.normalize_axis_index(axis, x.ndim)
    order = [d for d in range(x.ndim) if d != axis] + [axis]
    along = transpose(x, order)
    outer = along.shape[:-1]
    indices = [index + (Ellipsis,) for index in np.ndindex(outer)]
    if not indices:
        raise ValueError("Cannot apply_along_axis when any iteration dimensions are 0")
    results = []
    for index in indices:
        r = _tensor(func1d(along[index], *args, **kwargs))
        if results:  # buff[ind] = r: NumPy's assignment into the first result's dtype and shape
            r = Tensor(P.cast(P.broadcast_to(r.node, results[0].shape), results[0].dtype))
        results.append(r)
    first = results[0]
    buffer = Tensor(P.reshape(P.concat([P.reshape(r.node, (1,) + first.shape) for r in results], 0),
                              outer + first.shape))
    dims = list(range(buffer.ndim))
    permutation = dims[:axis] + dims[buffer.ndim - first.ndim:] + dims[axis:buffer.ndim - first.ndim]
    return Tensor(P.transpose(buffer.node, permutation))


def apply_over_axes(func, a, axes):
    """NumPy's np.apply_over_axes: ``func(a, axis)`` for each axis in turn, a result one dimension short
    given its axis back; any other shape is NumPy's ValueError."""
    value = _tensor(a)
    n = value.ndim
    for axis in (axes,) if np.ndim(axes) == 0 else axes:
        axis = n + axis if axis < 0 else axis
        result = _tensor(func(value, axis))
        if result.ndim != value.ndim:
            result = expand_dims(result, axis)
            if result.ndim != value.ndim:
                raise ValueError("function is not returning an array of the correct shape")
        value = result
    return value


# --------------------------------------------------------------------------- linalg by LU


def _stacked_matrices(a, square: bool = True) -> Tensor:
    """NumPy's _assert_stacked_2d (and with ``square`` _assert_stacked_square): at least 2-d, the last two
    dimensions equal."""
    x = _tensor(a)
    if x.ndim < 2:
        raise np.linalg.LinAlgError(f"{x.ndim}-dimensional array given. Array must be at least two-dimensional")
    if square and x.shape[-1] != x.shape[-2]:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return x


# The factorizations are unrolled into the kernel, so its size (and LLVM's time on it) grows as n**3: a 32 x 32
# solve compiles in about a minute on 2 cores; larger matrices are refused by name rather than left to hang.
UNROLLED_LINALG_LIMIT = 32


def _check_unrolled_size(n: int, what: str) -> None:
    if n > UNROLLED_LINALG_LIMIT:
        raise NotImplementedError(
            f"np.linalg.{what} of {n} x {n} matrices: the compiler unrolls the factorization into the kernel, whose "
            f"size grows as n**3, so matrices up to {UNROLLED_LINALG_LIMIT} x {UNROLLED_LINALG_LIMIT} are supported")


def _lapack_operand(a, what: str, square: bool = True) -> Tensor:
    """NumPy's checks of a linalg operand (at least 2-d, square last two dimensions unless ``square`` is
    False), converted to the type its LAPACK loop takes: float64, whatever the operand's (NumPy's _commonType
    computes float32 in double too, and converts the results: ``_linalg_result_type``); float16 refused;
    larger than UNROLLED_LINALG_LIMIT refused by name."""
    x = _stacked_matrices(a, square)
    _check_unrolled_size(max(x.shape[-2:]), what)
    if x.dtype == np.float16:
        raise TypeError("array type float16 is unsupported in linalg")
    return x.astype(np.float64)


def _linalg_result_type(*operands) -> np.dtype:
    """The type NumPy's linalg functions return (_commonType's result type): float32 where every operand is
    float32, else float64 (converted to as NumPy does, ``astype(..., copy=False)``: no copy of a float64 result)."""
    single = all(_tensor(o).dtype == np.float32 for o in operands)
    return np.dtype(np.float32 if single else np.float64)


def _lu(x: Tensor):
    """LAPACK getrf's LU with partial pivoting, unrolled over the columns on a stack of n x n matrices: at
    step k the row with the largest |value| in column k (the first of equals, as idamax) is swapped up and
    the rows below lose their multiples of it; a zero pivot (a column of zeros below the diagonal) skips the
    elimination, as LAPACK does. Returns the packed factors (L's multipliers below the diagonal, U on and
    above it), each row's original index, and the permutation's sign (+-1). Rounding follows this order,
    not LAPACK's blocked one: results agree to within the matrix's conditioning, not bit for bit."""
    n = x.shape[-1]
    lu = x * 1  # a fresh array, updated in place below
    rows = np.arange(n)
    order = np.broadcast_to(rows, x.shape[:-1]) * 1
    sign = np.ones(x.shape[:-2], x.dtype)
    for k in range(n):
        pivot_row = np.argmax(abs(lu[..., k:, k]), axis=-1) + k
        chosen = pivot_row[..., None]
        source = np.where(rows == k, chosen, np.where(rows == chosen, k, rows))
        lu = np.take_along_axis(lu, source[..., :, None], axis=-2)
        order = np.take_along_axis(order, source, axis=-1)
        sign = np.where(pivot_row != k, -sign, sign)
        if k + 1 < n:
            pivot = lu[..., k, k][..., None]
            multipliers = np.where(pivot == 0, np.zeros((), x.dtype), lu[..., k + 1:, k] / pivot)
            lu[..., k + 1:, k + 1:] -= multipliers[..., :, None] * lu[..., k, None, k + 1:]
            lu[..., k + 1:, k] = multipliers
    return lu, order, sign


def _diagonal_of(lu: Tensor) -> Tensor:
    return np.diagonal(lu, axis1=-2, axis2=-1)


def linalg_slogdet(a):
    """NumPy's slogdet from LU: the sign of the permutation times the signs of U's diagonal (0 with a zero
    on it), and the sum of the logs of its magnitudes (-inf then), computed in float64 as NumPy does."""
    sign, logdet = _slogdet(_lapack_operand(a, "slogdet"))
    result_type = _linalg_result_type(a)
    return np.linalg._linalg.SlogdetResult(sign.astype(result_type, copy=False), logdet.astype(result_type, copy=False))


def _slogdet(x: Tensor) -> tuple:
    if x.shape[-1] == 0:  # the empty product and sum
        result = tuple(Tensor(const_node(np.full(x.shape[:-2], v, x.dtype)), scalar=True) for v in (1, 0))
    else:
        lu, _, sign = _lu(x)
        diagonal = _diagonal_of(lu)
        zero = np.zeros((), x.dtype)  # +0.0 for a singular matrix, whatever the permutation's sign
        signs = np.where(np.any(diagonal == 0, axis=-1), zero, sign * np.prod(np.sign(diagonal), axis=-1))
        result = (Tensor(_node(signs), scalar=True), np.sum(np.log(abs(diagonal)), axis=-1))  # a scalar for one
    return result


def linalg_det(a):
    """NumPy's det as its umath_linalg computes it: sign * exp(logabsdet) of slogdet, in float64, converted."""
    sign, logdet = _slogdet(_lapack_operand(a, "det"))
    return (sign * np.exp(logdet)).astype(_linalg_result_type(a), copy=False)


def _linalg_error_at_run_time(bad, message: str) -> None:
    """NumPy's LinAlgError(``message``) where ``bad`` (a bool per matrix of the stack) holds, which only the
    values tell: the kernel reports it as it runs, with the user's line."""
    _raise_at_run_time(np.any(bad), message, "np.linalg", np.linalg.LinAlgError)


def _lu_solve(lu: Tensor, order: Tensor, b: Tensor) -> Tensor:
    """Forward substitution with L's unit diagonal on b's rows in the pivots' order, then back substitution
    with U, one row at a time (unrolled); b is a stack of n x k matrices."""
    n = lu.shape[-1]
    permuted = np.take_along_axis(b, order[..., :, None], axis=-2)
    forward = []
    for i in range(n):
        row = permuted[..., i, :]
        for j in range(i):
            row = row - lu[..., i, j, None] * forward[j]
        forward.append(row)
    backward = [None] * n
    for i in reversed(range(n)):
        row = forward[i]
        for j in range(i + 1, n):
            row = row - lu[..., i, j, None] * backward[j]
        backward[i] = row / lu[..., i, i, None]
    return np.stack(backward, axis=-2)


def linalg_solve(a, b):
    """NumPy 2's solve: b a vector when 1-d, else a stack of matrices, the stacks broadcast together; LU with
    partial pivoting, then the two triangular solves. A singular matrix is NumPy's LinAlgError, raised as
    the kernel runs."""
    x = _lapack_operand(a, "solve")
    y = _tensor(b)
    if y.dtype == np.float16:
        raise TypeError("array type float16 is unsupported in linalg")
    result_type = _linalg_result_type(a, y)
    vector = y.ndim == 1
    y = y.astype(np.float64)
    n = x.shape[-1]
    if vector:
        if y.shape[0] != n:
            raise ValueError(f"solve1: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                             f"(m,m),(m)->(m) (size {y.shape[0]} is different from {n})")
        y = y[:, None]
    elif y.shape[-2] != n:
        raise ValueError(f"solve: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"(m,m),(m,n)->(m,n) (size {y.shape[-2]} is different from {n})")
    batch = np.broadcast_shapes(x.shape[:-2], y.shape[:-2])
    x = np.broadcast_to(x, batch + x.shape[-2:])
    y = np.broadcast_to(y, batch + y.shape[-2:])
    if n == 0:
        result = y * 1
    else:
        lu, order, _ = _lu(x)
        _linalg_error_at_run_time(np.any(_diagonal_of(lu) == 0, axis=-1), "Singular matrix")  # gesv's zero pivot
        result = _lu_solve(lu, order, y)
    return (result[..., 0] if vector else result).astype(result_type, copy=False)


def linalg_inv(a):
    """NumPy's inv: the solve of the matrix against the identity (LinAlgError for a singular one)."""
    x = _lapack_operand(a, "inv")
    inverse = linalg_solve(x, np.broadcast_to(np.eye(x.shape[-1], dtype=x.dtype), x.shape))
    return inverse.astype(_linalg_result_type(a), copy=False)


def linalg_cond(x, p=None):
    """NumPy's cond for the norms that need no singular values (1, -1, inf, -inf, 'fro'): the norm of the
    matrix times the norm of its inverse, the inverse computed in float64 (a singular matrix's inverse NaN,
    as NumPy's under errstate('ignore')), the product in the matrix's own float type; NaN from a matrix
    without NaN becomes inf, as in NumPy."""
    a = _tensor(x)
    if a.size == 0 and a.ndim >= 2 and a.shape[-2] * a.shape[-1] == 0:  # NumPy's _is_empty_2d, checked first
        raise np.linalg.LinAlgError("cond is not defined on empty arrays")
    if p is None or p in (2, -2):
        raise NotImplementedError(f"np.linalg.cond: p={p!r} needs singular values, which the compiler does not compute "
                                  "(1, -1, inf, -inf and 'fro' do not)")
    wide = _lapack_operand(a, "cond")
    result_type = _linalg_result_type(a)
    lu, order, _ = _lu(wide)
    singular = np.any(_diagonal_of(lu) == 0, axis=-1)[..., None, None]
    inverse = np.where(singular, np.nan, _lu_solve(lu, order, np.broadcast_to(np.eye(wide.shape[-1]), wide.shape)))
    r = (linalg_norm(a, p, axis=(-2, -1)) * linalg_norm(inverse, p, axis=(-2, -1))).astype(result_type)
    unexplained = np.isnan(r) & ~np.any(np.isnan(wide), axis=(-2, -1))
    return Tensor(np.where(unexplained, np.inf, r).astype(result_type).node, scalar=True)


def linalg_cholesky(a, /, *, upper=False):
    """LAPACK potrf's Cholesky factor, unrolled (Cholesky-Crout, column by column) on a stack of matrices:
    L from the lower triangle (U = L.T from the upper one with ``upper``), the other triangle zero. A
    pivot <= 0 is NumPy's LinAlgError, checked as the kernel runs; a NaN pivot is not (OpenBLAS's potrf tests
    ajj <= 0 only), so NaNs run on into the factor, as in NumPy."""
    x = _lapack_operand(a, "cholesky")
    if upper:
        x = np.swapaxes(x, -1, -2)
    n = x.shape[-1]
    columns = []  # columns[j]: L[..., :, j]
    pivots = []
    for j in range(n):
        diagonal = x[..., j, j]
        for k in range(j):
            diagonal = diagonal - columns[k][..., j] * columns[k][..., j]
        pivots.append(diagonal)
        root = np.sqrt(diagonal)
        below = x[..., j + 1:, j]
        for k in range(j):
            below = below - columns[k][..., j + 1:] * columns[k][..., j, None]
        column = np.concatenate([np.zeros_like(x[..., :j, j]), root[..., None], below / root[..., None]], axis=-1)
        columns.append(column)
    factor = np.stack(columns, axis=-1) if n else x * 0
    if n:
        _linalg_error_at_run_time(np.any(np.stack(pivots, axis=-1) <= 0, axis=-1), "Matrix is not positive definite")
    factor = _fresh(np.swapaxes(factor, -1, -2)) if upper else factor  # (NumPy's own upper gufunc: a fresh array)
    return factor.astype(_linalg_result_type(a), copy=False)


def _householder(alpha: Tensor, below: Tensor):
    """LAPACK dlarfg on a stack of columns: the reflector I - tau v v^T (v[0] = 1) taking [alpha, below] to
    [beta, 0], beta = -sign(alpha) * hypot(alpha, |below|); tau = 0 (no reflection) where below is all zero.
    As dlarfg, where |beta| falls below its safe minimum (dlamch's "S" over "E") the column is first scaled up
    by the inverse, a power of two (once is enough from any subnormal), and beta scaled back. Returns (beta,
    tau, the rest of v)."""
    info = np.finfo(alpha.dtype)
    safe_min = info.tiny / (info.eps / 2)
    norm = _scaled_norm(below, alpha)
    none = norm == 0
    beta = -np.copysign(np.hypot(alpha, norm), alpha)
    rescale = np.where(np.abs(beta) < safe_min, 1 / safe_min, 1).astype(alpha.dtype)
    up, below = alpha * rescale, below * rescale[..., None]
    beta = -np.copysign(np.hypot(up, _scaled_norm(below, up)), up)
    safe_beta = np.where(none, np.ones_like(alpha), beta)
    tau = np.where(none, np.zeros_like(alpha), (beta - up) / safe_beta)
    scale = np.where(none, np.zeros_like(alpha), 1 / np.where(none, np.ones_like(alpha), up - beta))
    return np.where(none, alpha, beta / rescale), tau, below * scale[..., None]


def _scaled_norm(below: Tensor, alpha: Tensor) -> Tensor:
    """The 2-norm of each column's ``below`` as BLAS's nrm2 gives it, safe from overflow and underflow: the
    squares of [1e-300, 1e-300] or of a subnormal are 0.0 in float64, which would make dlarfg skip a reflection
    LAPACK takes (and flip R's and Q's signs); scaled by the largest magnitude first (an infinite one is the norm)."""
    if not below.shape[-1]:
        return np.zeros_like(alpha)
    big = np.max(np.abs(below), axis=-1)
    finite = np.where(np.isinf(big) | (big == 0), np.ones_like(big), big)
    scaled = below / finite[..., None]
    return np.where(np.isinf(big), big, finite * np.sqrt(np.sum(scaled * scaled, axis=-1)) * (big != 0))


def _reflected(block: Tensor, v: Tensor, tau: Tensor) -> Tensor:
    """(I - tau v v^T) block for a stack of reflectors (dlarf), v^T block first."""
    w = np.sum(v[..., :, None] * block, axis=-2)
    return block - (tau[..., None, None] * v[..., :, None]) * w[..., None, :]


def linalg_qr(a, mode="reduced"):
    """LAPACK geqrf's Householder QR, unrolled over the columns (dlarfg's reflectors, so LAPACK's signs: R's
    diagonal may be negative), Q accumulated as orgqr does, from the last reflector back; modes 'reduced'
    (Q m x k, R k x n), 'complete' (Q m x m, R m x n) and 'r' (R alone). Rounding follows this unblocked
    order: within the matrix's conditioning of NumPy's, not bit for bit."""
    if mode not in ("reduced", "complete", "r", "raw"):
        raise ValueError(f"Unrecognized mode '{mode}'")
    if mode == "raw":
        raise NotImplementedError("np.linalg.qr: mode='raw' (LAPACK's Fortran-ordered reflectors) is not supported by "
                                  "the compiler")
    x = _lapack_operand(a, "qr", square=False)
    m, n = x.shape[-2:]
    k = min(m, n)
    work = x * 1  # R takes shape in place, column by column
    reflectors = []
    for j in range(k):
        beta, tau, v_rest = _householder(work[..., j, j], work[..., j + 1:, j])
        v = np.concatenate([np.ones_like(beta)[..., None], v_rest], axis=-1)  # (..., m - j)
        if j + 1 < n:
            work[..., j:, j + 1:] = _reflected(work[..., j:, j + 1:], v, tau)
        work[..., j, j] = beta
        work[..., j + 1:, j] = np.zeros_like(v_rest)
        reflectors.append((v, tau))
    rows = k if mode in ("reduced", "r") else m
    result_type = _linalg_result_type(a)
    r = (work[..., :rows, :] * 1).astype(result_type, copy=False)
    if mode == "r":
        return r
    q = Tensor(const_node(np.broadcast_to(np.eye(m, rows, dtype=x.dtype), x.shape[:-2] + (m, rows)).copy()))
    for j in reversed(range(k)):
        v, tau = reflectors[j]
        q[..., j:, j:] = _reflected(q[..., j:, j:], v, tau)
    return np.linalg._linalg.QRResult(q.astype(result_type, copy=False), r)


def linalg_matrix_power(a, n):
    """NumPy's matrix_power: the identity for 0, the inverse's power for a negative n, a itself for 1, then
    NumPy's own sequence of matmuls (a @ a, (a @ a) @ a, then squaring by the bits of n)."""
    x = _stacked_matrices(a)
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("exponent must be an integer") from None
    if n == 0:
        return Tensor(const_node(np.broadcast_to(np.eye(x.shape[-2], dtype=x.dtype), x.shape).copy()))
    if n < 0:
        x, n = linalg_inv(x), -n
    if n == 1:
        return x  # NumPy returns the array itself
    if n == 2:
        return np.matmul(x, x)
    if n == 3:
        return np.matmul(np.matmul(x, x), x)
    z = result = None
    while n > 0:
        z = x if z is None else np.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else np.matmul(result, z)
    return result


def _chain_order(shapes: list) -> dict:
    """Cormen's matrix-chain order, as NumPy's multi_dot finds it (the first split of least cost wins)."""
    p = [s[0] for s in shapes] + [shapes[-1][1]]
    n = len(shapes)
    cost, split = {(i, i): 0 for i in range(n)}, {}
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i, j] = math.inf
            for k in range(i, j):
                q = cost[i, k] + cost[k + 1, j] + p[i] * p[k + 1] * p[j + 1]
                if q < cost[i, j]:
                    cost[i, j], split[i, j] = q, k
    return split


def linalg_multi_dot(arrays, *, out=None):
    """NumPy's multi_dot: a 1-d first (last) operand as a row (column), the products in the cheapest order
    NumPy picks from the shapes (its own comparison for three), the result raveled or a scalar again."""
    arrays = [_tensor(v) for v in arrays]
    if len(arrays) < 2:
        raise ValueError("Expecting at least two arrays.")
    if len(arrays) == 2:
        return dot(arrays[0], arrays[1], out=out)
    first, last = arrays[0].ndim, arrays[-1].ndim
    if first == 1:
        arrays[0] = arrays[0][None, :]
    if last == 1:
        arrays[-1] = arrays[-1][:, None]
    for v in arrays:
        if v.ndim != 2:
            raise np.linalg.LinAlgError(f"{v.ndim}-dimensional array given. Array must be two-dimensional")
    if len(arrays) == 3:  # (out= is the last product's, as NumPy passes it)
        (a0, a1b0), (b1c0, c1) = arrays[0].shape, arrays[2].shape
        if a0 * b1c0 * (a1b0 + c1) < a1b0 * c1 * (a0 + b1c0):
            result = dot(dot(arrays[0], arrays[1]), arrays[2], out=out)
        else:
            result = dot(arrays[0], dot(arrays[1], arrays[2]), out=out)
    else:
        split = _chain_order([v.shape for v in arrays])

        def product(i, j, into=None):
            return arrays[i] if i == j else dot(product(i, split[i, j]), product(split[i, j] + 1, j), out=into)
        result = product(0, len(arrays) - 1, out)
    if first == 1 and last == 1:
        return result[0, 0]
    return np.ravel(result) if first == 1 or last == 1 else result


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """np.isclose of everything. NumPy returns a Python bool; a traced one is only known as the kernel
    runs, so here it is a NumPy bool scalar (``if np.allclose(...)`` cannot branch on it in a trace)."""
    return all_(isclose(a, b, rtol, atol, equal_nan))


def _equal_everywhere(x: Tensor, y: Tensor, equal_nan: bool):
    same = x == y
    if equal_nan and x.dtype.kind == "f" or equal_nan and y.dtype.kind == "f":
        same = same | (np.isnan(x) & np.isnan(y))
    return all_(same)


def array_equal(a1, a2, equal_nan=False):
    """NumPy's: False (a Python bool, known when tracing) for arrays of different shapes, else whether every
    pair of elements is equal (NaNs equal to each other with ``equal_nan``) -- a NumPy bool scalar, known as
    the kernel runs, where NumPy gives a Python bool."""
    x, y = _tensor(a1), _tensor(a2)
    if x.shape != y.shape:
        return False
    return _equal_everywhere(x, y, equal_nan)


def array_equiv(a1, a2):
    """NumPy's: False (a Python bool) where the shapes do not broadcast together, else whether every pair of
    broadcast elements is equal -- a NumPy bool scalar where NumPy gives a Python bool."""
    x, y = _tensor(a1), _tensor(a2)
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        return False
    return _equal_everywhere(x, y, False)


def sinc(x):
    """NumPy's: pi * x, its zeros replaced by the float type's eps, then sin(y) / y."""
    x = np.pi * _tensor(x)
    eps = np.finfo(x.dtype).eps if x.dtype.kind == "f" else 1e-20
    y = np.where(x, x, eps)
    return np.sin(y) / y


# Sorting by counting: an element's place in the sorted order is the number of elements that come
# before it (smaller, or equal and earlier: a stable sort, NaNs last as NumPy puts them), and the k-th
# index is the one whose place is k. Every pair is compared, so the work is quadratic in the sorted
# axis' length (the comparisons fuse into the counting loops; nothing n x n is stored).


def _fresh(t: Tensor, like: Tensor | None = None, order: str = "K") -> Tensor:
    """``t`` as the new array NumPy allocates for a function's result: C-contiguous, or in ``order`` after
    ``like`` ("K": like it, as np.sort sorts such a copy; "A": Fortran's for a Fortran-contiguous one), where
    the steps that computed it here (an axis moved back, say) would imply another layout (``layout``:
    NumPy's sums and the result's strides follow it)."""
    if like is not None and not layout.known(like.node):
        return Tensor(P.layout_unknown(t.node))
    strides = (layout.contiguous_strides(t.shape) if like is None else
               layout.ordered(t.shape, order, like.shape, layout.strides_of(like.node)))
    return Tensor(P.laid_out(t.node, strides))


def _allocated(impl, order: str):
    """``impl`` whose array results are the fresh arrays NumPy's own code allocates for them in ``order``
    after its first argument (np.empty_like's "K", np.pad's and np.insert's "A": Fortran's for a
    Fortran-contiguous array, else C's)."""
    def allocated(a, *args, **kwargs):
        result, like = impl(a, *args, **kwargs), _tensor(a)

        def laid_out(r):
            return _fresh(r, like=like, order=order) if isinstance(r, Tensor) and r.ndim else r
        return type(result)(laid_out(r) for r in result) if isinstance(result, (tuple, list)) else laid_out(result)
    allocated.__name__, allocated.__doc__ = impl.__name__, impl.__doc__
    return allocated


def _sort_options(kind, order, stable) -> None:
    if order is not None:  # order= names fields, and the arrays the compiler takes have none
        raise ValueError("Cannot specify order when the array has no fields.")
    np.argsort(np.zeros(1), kind=kind, stable=stable)  # NumPy's own checks of kind and stable, and its errors


def _sorting_permutation(x: Tensor) -> Tensor:
    """The stable argsort of ``x`` along its last axis (see ``Emitter.sort_permutation``)."""
    return Tensor(P.sort_permutation(x.node))


def argsort(a, axis=-1, kind=None, order=None, *, stable=None):
    _sort_options(kind, order, stable)
    x = _tensor(a)
    if axis is None or x.ndim == 0:  # NumPy flattens a 0-d array too, then reads axis for its one dimension
        x, axis = ravel(x), 0 if axis is None else axis
    axis = P.one_axis(axis, x.ndim, "np.argsort")
    return _fresh(np.moveaxis(_sorting_permutation(np.moveaxis(x, axis, -1)), -1, axis))


def sort(a, axis=-1, kind=None, order=None, *, stable=None):
    _sort_options(kind, order, stable)
    x = _tensor(a)
    if axis is None:
        x, axis = ravel(x), 0
    axis = np.lib.array_utils.normalize_axis_index(axis, x.ndim)
    if x.size == 0:
        return Tensor(x.node)  # a new empty array
    rows = np.moveaxis(x, axis, -1)
    # each row's elements taken in its order (a permutation: in range, so no run-time check)
    return _fresh(np.moveaxis(_gathered_in_rows(rows, _sorting_permutation(rows)), -1, axis), like=x)


def _reduced_rows(x: Tensor, axis) -> tuple[Tensor, tuple, int]:
    """NumPy's _ureduce for functions of one axis: the kept axes moved first, the reduced ones flattened
    into the last. Returns (rows, the reduced axes, their length)."""
    axes = tuple(range(x.ndim)) if axis is None else np.lib.array_utils.normalize_axis_tuple(axis, x.ndim)
    kept = [d for d in range(x.ndim) if d not in axes]
    n = _count(x.node, axes)
    if axis is not None and len(axes) > 1 and x.size == 0:  # NumPy's reshape to (..., -1) may refuse an empty one
        np.moveaxis(np.empty(x.shape, bool), kept, list(range(len(kept)))).reshape(
            tuple(x.shape[d] for d in kept) + (-1,))
    rows = np.moveaxis(x, kept, list(range(len(kept))))
    return rows.reshape(rows.shape[:len(kept)] + (n,)), axes, n  # not -1: ambiguous for an empty array


def _out_as_ureduce_passes_it(out: Tensor, axes, ndim: int, keepdims) -> Tensor:
    """NumPy's _ureduce hands a function of one axis ``out`` itself, or with keepdims (np._NoValue is False)
    out indexed at 0 along the reduced ``axes``: a view the result is written through."""
    if keepdims is np._NoValue or not keepdims:
        return out
    return out[(Ellipsis,) + tuple(0 if d in axes else slice(None) for d in range(ndim))]


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """NumPy's _median: the mean of the middle one or two of the sorted values along the reduced axes;
    NaN where a slice holds one (NumPy returns the NaN its partition put last). Into ``out=`` as NumPy's
    _median writes it: np.mean of the middle values into out (its loop and conversion), then the NaNs copied
    in (with keepdims, into out indexed at 0 along the reduced axes, as _ureduce passes it)."""
    x = _tensor(a)
    rows, axes, n = _reduced_rows(x, axis)
    ordered = sort(rows, axis=-1)
    if out is not None:
        target = _writable_target(out, "np.median(..., out=...)")
        np.median(_stand_in(x), axis, out=np.zeros(target.shape, target.dtype), keepdims=keepdims)  # its checks
        inner = _out_as_ureduce_passes_it(target, axes, x.ndim, keepdims)
        mean(ordered[..., (n - 1) // 2:n // 2 + 1], axis=-1, out=inner)
        if x.dtype.kind == "f" and n > 0:
            _nans_copied_in(inner, ordered[..., -1], "np.median")
        return target
    result = mean(ordered[..., (n - 1) // 2:n // 2 + 1], axis=-1)
    if x.dtype.kind == "f" and n > 0:
        last = ordered[..., -1]
        result = Tensor(P.where(np.isnan(last).node, last.node, result.node), scalar=True)
    # with keepdims an array, even of a 0-d operand (NumPy indexes the result with new axes)
    return _with_keepdims(result, x, axes, (), bool(keepdims))


def average(a, axis=None, weights=None, returned=False, *, keepdims=np._NoValue):
    """NumPy's np.average: the mean without weights; with weights (a constant: NumPy refuses weights
    summing to zero, which the compiler checks at trace time) the weighted sum in the result type over
    the weights' sum. ``returned`` adds the divisor, broadcast to the average's shape."""
    x = _tensor(a)
    axes = None if axis is None else np.lib.array_utils.normalize_axis_tuple(axis, x.ndim, "axis")
    kept = _given(keepdims=keepdims)
    if weights is None:
        avg = mean(x, axes, **kept)
        scale = np.asarray(x.size / avg.size, avg.dtype)
    else:
        if isinstance(weights, Tensor):
            raise NotImplementedError("np.average: traced weights (NumPy refuses weights that sum to zero, a check "
                                      "on the weights' values)")
        w = np.asanyarray(weights)
        if w.shape != x.shape:
            if axes is None:
                raise TypeError("Axis must be specified when shapes of a and weights differ.")
            if w.shape != tuple(x.shape[d] for d in axes):
                raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
            w = w.transpose(np.argsort(axes)).reshape(tuple(n if d in axes else 1 for d, n in enumerate(x.shape)))
        if x.dtype.kind in "iub":
            result_dtype = np.result_type(x.dtype, w.dtype, "f8")
        else:
            result_dtype = np.result_type(x.dtype, w.dtype)
        scale = np.asarray(w.sum(axis=axes, dtype=result_dtype, **kept))
        if np.any(scale == 0.0):
            raise ZeroDivisionError("Weights sum to zero, can't be normalized")
        # the loop converts a as it reads it (NumPy's dtype=), so the product is laid out after a, not after a copy
        weighted = np.multiply(x, w, dtype=result_dtype)
        avg = sum_(weighted, axes, **kept) / scale
    if not returned:
        return avg
    return avg, Tensor(const_node(np.broadcast_to(scale, avg.shape).copy()), scalar=True)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    return _quantile(a, q, axis, out, method, keepdims, weights, "np.quantile")


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *, weights=None):
    return _quantile(a, q, axis, out, method, keepdims, weights, "np.percentile")


def _quantile_arguments(q, method, what: str) -> tuple[np.ndarray, bool, dict]:
    """NumPy's checks of a quantile function's arguments: (q as NumPy takes it, whether q was a Python
    number -- weak, so the result keeps the array's float type --, the method's entry in NumPy's table)."""
    methods = np.lib._function_base_impl._QuantileMethods
    if method not in methods:
        raise ValueError(f"{method!r} is not a valid method. Use one of: {methods.keys()}")
    if isinstance(q, Tensor):
        raise NotImplementedError(f"{what}: a traced q (it decides which elements are gathered)")
    weak_q = type(q) in (int, float)
    q = np.true_divide(q, 100) if what.endswith("percentile") else np.asanyarray(q)
    if not (np.all(q >= 0) and np.all(q <= 1)):
        raise ValueError("Percentiles must be in the range [0, 100]" if what.endswith("percentile")
                         else "Quantiles must be in the range [0, 1]")
    if q.ndim > 2:
        raise ValueError("q must be a scalar or 1d")
    return q, weak_q, methods[method]


def _quantile(a, q, axis, out, method, keepdims, weights, what: str) -> Tensor:
    """NumPy's _quantile, on the sorted values: the positions of every method (its virtual indexes), the
    neighbours and the weights between them (gamma) depend on q and the length only, so NumPy computes
    them here with its own method table; the kernel gathers the element (the discrete methods) or the
    neighbours, interpolated as NumPy's _lerp does (from the far end when gamma >= 0.5). A Python-number
    q keeps the array's float type (NumPy's weak q); a slice holding a NaN gives NaN."""
    given_q = q
    q, weak_q, props = _quantile_arguments(q, method, what)
    if weights is not None:
        if out is not None:  # NumPy's own call on stand-ins (the weights themselves where they are constants)
            target = _writable_target(out, f"{what}(..., out=...)")
            with np.errstate(all="ignore"):
                getattr(np, what[3:])(_stand_in(_tensor(a)), given_q, axis, np.zeros(target.shape, target.dtype),
                                      method=method, keepdims=keepdims,
                                      weights=np.ones(weights.shape, weights.dtype) if isinstance(weights, Tensor)
                                      else weights)
            out = target
        return _weighted_quantile(_tensor(a), q, weights, axis, keepdims, method, what, out)
    if out is not None:
        return _quantile_into(_tensor(a), q, weak_q, props, method, axis, keepdims, out, what)
    return _quantile_of(_tensor(a), q, weak_q, props, method, axis, keepdims)


def _quantile_into(x: Tensor, q: np.ndarray, weak_q: bool, props: dict, method: str, axis, keepdims, out,
                   what: str) -> Tensor:
    """NumPy's _quantile into ``out=`` (as _ureduce passes it: with keepdims, indexed at 0 along the reduced
    axes): a discrete method's elements are np.take's into out, an interpolation is NumPy's _lerp into out —
    add(a, (b - a) * t, out=out), then where t >= 0.5 subtract(b, (b - a) * (1 - t)) in out's own dtype,
    converted unsafely —, and a slice holding a NaN has its last element copied in. NumPy's own call on
    stand-ins checks out."""
    target = _writable_target(out, f"{what}(..., out=...)")
    with np.errstate(all="ignore"):
        getattr(np, what[3:])(_stand_in(x), q * 100 if what.endswith("percentile") else q, axis,
                              np.zeros(target.shape, target.dtype), method=method, keepdims=keepdims)
    ordered, axes, n, virtual, neighbours = _quantile_positions_read(x, q, weak_q, props, method, axis)
    inner = _out_as_ureduce_passes_it(target, axes, x.ndim, keepdims)
    if neighbours is None:
        take(ordered, virtual, axis=0, out=inner)
    else:
        lo, hi, t = neighbours
        diff = np.subtract(hi, lo)
        np.add(lo, diff * t, out=inner)
        np.subtract(hi, diff * (1 - t), out=inner, where=np.asarray(t) >= 0.5, casting="unsafe",
                    dtype=inner.dtype.type)
    if x.dtype.kind == "f" and n > 0:
        _nans_copied_in(inner, ordered[-1], what)
    return target


def _nans_copied_in(out: Tensor, last: Tensor, what: str) -> None:
    """NumPy's NaN check after a median or quantile into out: where a slice holds a NaN (sorted last) it is
    copied into out (np.copyto, same_kind). NumPy copies only when there is one, so an out that cannot take
    the values (an integer one) is its casting error only then: checked as the kernel runs."""
    nans = np.isnan(last)
    if np.can_cast(last.dtype, out.dtype, "same_kind"):
        np.copyto(out, last, where=nans)
    else:
        _raise_at_run_time(nans, f"Cannot cast array data from {last.dtype!r} to {out.dtype!r} according to the rule "
                           "'same_kind'", what, TypeError)


def _weighted_quantile(x: Tensor, q: np.ndarray, weights, axis, keepdims, method: str, what: str,
                       out: Tensor | None = None) -> Tensor:
    """NumPy's weighted quantile (method 'inverted_cdf' only): per slice, the values sorted with their
    weights, the weights' running sums in float64 divided by their total (in q's float type), and the
    first sorted value whose share reaches q (a leading share of 0 never does); a slice holding NaN gives
    NaN. The result keeps the array's dtype. Negative weights, and weights whose total is 0, inf or NaN,
    are NumPy's ValueErrors: at trace time for constant weights, as the kernel runs for traced ones. Into an
    ``out`` NumPy has checked: each value assigned (converted unsafely), then the NaNs copied in."""
    if method != "inverted_cdf":
        raise ValueError(f"Only method 'inverted_cdf' supports weights. Got: {method}.")
    axes = None if axis is None else np.lib.array_utils.normalize_axis_tuple(axis, x.ndim, argname="axis")
    w = _tensor(weights)
    np.lib._function_base_impl._weights_are_valid(np.zeros(w.shape), np.zeros(x.shape), axes)  # NumPy's checks
    if w.shape != x.shape:  # weights along the reduced axes, in their order: laid out as NumPy broadcasts them
        w = reshape(transpose(w, np.argsort(axes)), tuple(n if d in axes else 1 for d, n in enumerate(x.shape)))
    w = broadcast_to(w, x.shape)
    if not isinstance(weights, Tensor) and np.any(np.asarray(weights) < 0):
        raise ValueError("Weights must be non-negative.")
    _raise_at_run_time(w < 0, "Weights must be non-negative.", what)
    rows, axes, n = _reduced_rows(x, axis)
    if n == 0:  # NumPy reads the running sums' last element to normalize them
        raise IndexError("index -1 is out of bounds for axis 0 with size 0")
    weight_rows, _, _ = _reduced_rows(w, axis)
    order = argsort(rows, axis=-1)
    ordered = take_along_axis(rows, order, -1)
    shares = cumsum(take_along_axis(weight_rows, order, -1), axis=-1, dtype=np.float64)
    shares = shares / shares[..., -1:]
    _raise_at_run_time(np.isnan(shares[..., -1:]), "Weights included NaN, inf or were all zero.", what)
    if q.dtype.kind == "f":
        shares = shares.astype(q.dtype)
    shares = where(shares == 0, -1, shares).astype(shares.dtype)
    # np.searchsorted(shares, q, 'left') per slice: the count of shares below q, clipped into the slice
    below = sum_(shares[..., None, :] < np.reshape(q, (-1, 1)), axis=-1, dtype=np.intp)
    place = np.minimum(below, n - 1)
    result = _gathered_in_rows(ordered, place)  # rows x q
    result = np.moveaxis(result, -1, 0).reshape(q.shape + rows.shape[:-1])
    if out is not None:
        inner = _out_as_ureduce_passes_it(out, axes, x.ndim, keepdims)
        inner[...] = result
        if x.dtype.kind == "f":
            _nans_copied_in(inner, ordered[..., -1], what)
        return out
    if x.dtype.kind == "f" and n > 0:
        last = ordered[..., -1]
        result = where(np.isnan(last), last, result)
    return _with_keepdims(_fresh(result), x, axes, q.shape, bool(keepdims))


def _raise_at_run_time(bad: Tensor, message, what: str, error: type = ValueError, values: Tensor | None = None) -> None:
    """``error`` (NumPy's ValueError unless told) with ``message`` where any of ``bad`` holds, which only the data
    can tell: the kernel reports it as it runs, naming ``what`` was called and the user's line. ``message`` may be
    a function of the first offending element of ``values`` (integers shaped as ``bad``)."""
    line = P.user_location().short()
    flags = bad.node
    witnesses = P.cast(flags, np.dtype(np.int64)) if values is None else values.node
    describe = message if callable(message) else lambda _: message
    if P.check_at_run_time(witnesses, flags, "first", error,
                           lambda v: f"{describe(v)} ({what} at {line}, checked as the kernel ran)") is None:
        raise NotImplementedError(f"{what} outside a traced function: its checks of the data need a kernel")


def _quantile_positions_read(x: Tensor, q: np.ndarray, weak_q: bool, props: dict, method: str, axis):
    """NumPy's _quantile up to its arithmetic: (the sorted values, the sorted axis first as NumPy lays them out;
    the reduced axes; their length; the virtual indexes; None for a discrete method or an integer q, whose
    elements are taken as they are, else the neighbours below and above and the weight ``t`` between them)."""
    rows, axes, n = _reduced_rows(x, axis)
    ordered = np.moveaxis(sort(rows, axis=-1), -1, 0)
    virtual = np.asanyarray(props["get_virtual_index"](n, q))
    if props["fix_gamma"] is None or (method == "linear" and virtual.dtype.kind in "iu"):
        return ordered, axes, n, virtual, None
    fb = np.lib._function_base_impl
    previous, following = fb._get_indexes(np.empty(0, x.dtype), virtual, n)
    gamma = fb._get_gamma(virtual, previous, props)
    t = float(gamma) if weak_q else gamma.reshape(virtual.shape + (1,) * (rows.ndim - 1))
    return ordered, axes, n, virtual, (ordered[previous], ordered[following], t)


def _quantile_of(x: Tensor, q: np.ndarray, weak_q: bool, props: dict, method: str, axis, keepdims) -> Tensor:
    ordered, axes, n, virtual, neighbours = _quantile_positions_read(x, q, weak_q, props, method, axis)
    if neighbours is None:
        result = ordered[virtual]  # the element itself (a discrete method, or an integer q)
    else:
        lo, hi, t = neighbours
        diff = hi - lo
        near, far = lo + diff * t, hi - diff * (1 - t)
        result = Tensor(P.where(_node(np.asarray(t) >= 0.5), P.cast(far.node, near.dtype), near.node), scalar=True)
    if x.dtype.kind == "f" and n > 0:
        last = ordered[-1]
        result = Tensor(P.where(np.isnan(last).node, P.cast(last.node, result.dtype), result.node), scalar=True)
    return _with_keepdims(result, x, axes, q.shape, bool(keepdims))


# NaN-ignoring order statistics. NumPy drops each slice's NaNs and applies the plain function to the
# numbers left, so the positions it reads depend on each slice's count of numbers: a traced value
# here. The sorted slice holds its numbers first (NaNs sort last), and the positions are NumPy's own
# formulas evaluated on that count, in the types they have in NumPy (where the count is a Python int,
# weak beside q's float type). A slice of NaNs gives NaN and NumPy's warning, once per such slice.

_ALL_NAN = "All-NaN slice encountered"

# NumPy's (alpha, beta) for the methods its table computes with _compute_virtual_index
_ALPHA_BETA = {"interpolated_inverted_cdf": (0, 1), "hazen": (0.5, 0.5), "weibull": (0, 0),
               "median_unbiased": (1 / 3.0, 1 / 3.0), "normal_unbiased": (3 / 8.0, 3 / 8.0)}


def _numbers_first(x: Tensor, axis) -> tuple[Tensor, Tensor, Tensor, tuple]:
    """(the rows of ``_reduced_rows``, each sorted with its NaNs last; each row's count of numbers; the
    rows themselves; the reduced axes)."""
    rows, axes, _ = _reduced_rows(x, axis)
    count = sum_(~np.isnan(rows), axis=-1, dtype=np.intp)
    P.warn_at_run_time((count == 0).node, RuntimeWarning, _ALL_NAN, each=True)
    return sort(rows, axis=-1), count, rows, axes


def _gathered_in_rows(rows: Tensor, place) -> Tensor:
    """rows[..., place] for places in range along the last axis (``place`` shaped as the rows, or with
    leading axes of its own, q's): a gather from the flattened rows at row * n + place, with no check."""
    n = rows.shape[-1]
    offsets = np.arange(0, rows.size, n, dtype=np.intp).reshape(rows.shape[:-1] + (1,))
    flat = P.reshape(rows.node, (rows.size,))
    return Tensor(P.gather_in_range(flat, (place + offsets).node, 0))


def _element_in_row(rows: Tensor, place) -> Tensor:
    """rows[..., place] for one traced place per row, clipped into the row (places NumPy would not read
    are replaced by the caller)."""
    taken = _gathered_in_rows(rows, np.clip(place, 0, rows.shape[-1] - 1)[..., None])
    return Tensor(P.reshape(taken.node, taken.shape[:-1]))


def _with_keepdims(result: Tensor, x: Tensor, axes: tuple, lead: tuple, keepdims) -> Tensor:
    if keepdims is not True:
        return result
    return Tensor(P.reshape(result.node, lead + tuple(1 if d in axes else x.shape[d] for d in range(x.ndim))))


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=np._NoValue):
    """NumPy's np.nanmedian, whose two routes (chosen by shape) differ in arithmetic: the whole array, a
    1-d one, or slices of 600 or more go through np.median of the numbers (the mean of the middle one
    or two, float16 through float32; an all-NaN slice gives its last element), shorter slices through
    a masked array's median (the middle two summed and halved in the array's type, an odd count's
    middle element doubled and halved -- so it overflows where the other route does not)."""
    x = _tensor(a)
    if x.size == 0:
        return nanmean(x, axis, out=out, keepdims=keepdims)  # NumPy's own shortcut, warning included
    if out is not None:
        return _nan_order_into(x, axis, keepdims, out, "np.nanmedian",
                               lambda o: np.nanmedian(_stand_in(x), axis, o, keepdims=keepdims),
                               lambda: nanmedian(x, axis))
    if x.dtype.kind != "f":  # no NaNs: np.median's
        return median(x, axis, keepdims=keepdims is True)
    ordered, count, rows, axes = _numbers_first(x, axis)
    odd = count % 2 == 1
    low, high = _element_in_row(ordered, (count - 1) // 2), _element_in_row(ordered, count // 2)
    if axis is None or len(axes) == x.ndim or rows.shape[-1] >= 600:  # _nanmedian1d
        # np.mean of the middle two: a float16 pair summed in float32, others in their type
        pair = low.astype(np.float32) + high if x.dtype == np.float16 else low + high
        result = np.where(odd, low, (pair / 2).astype(x.dtype))
        result = np.where(count == 0, rows[..., -1], result)
    else:  # _nanmedian_small: np.ma.median
        result = np.where(count == 0, np.asarray(np.nan, x.dtype), (low + np.where(odd, low, high)) / 2.0)
    return _with_keepdims(Tensor(result.node, scalar=True), x, axes, (), keepdims)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=np._NoValue, *,
                weights=None):
    return _nanquantile(a, q, axis, out, method, keepdims, weights, "np.nanquantile")


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=np._NoValue, *,
                  weights=None):
    return _nanquantile(a, q, axis, out, method, keepdims, weights, "np.nanpercentile")


def _nanquantile(a, q, axis, out, method, keepdims, weights, what: str) -> Tensor:
    """NumPy's _nanquantile_1d on every slice: np.quantile of its numbers, NaN where there are none."""
    _no_extras(what[3:], weights=weights)
    given_q = q
    q, weak_q, props = _quantile_arguments(q, method, what)
    x = _tensor(a)
    if x.size == 0:
        return nanmean(x, axis, out=out, keepdims=keepdims)  # NumPy's own shortcut: q plays no part
    if out is not None:
        return _nan_order_into(x, axis, keepdims, out, what,
                               lambda o: getattr(np, what[3:])(_stand_in(x), given_q, axis, o, method=method,
                                                               keepdims=keepdims),
                               lambda: _nanquantile(x, given_q, axis, None, method, np._NoValue, None, what))
    if x.dtype.kind != "f":  # no NaNs: np.quantile's
        return _quantile_of(x, q, weak_q, props, method, axis, keepdims is True)
    ordered, count, _, axes = _numbers_first(x, axis)
    positions = _quantile_positions(count, q.reshape(q.shape + (1,) * count.ndim), method)
    if not isinstance(positions, tuple):  # the element itself
        result = _element_in_row(ordered, positions)
    else:
        previous, following, gamma = positions
        low, high = _element_in_row(ordered, previous), _element_in_row(ordered, following)
        diff = high - low
        if weak_q:  # NumPy's float(gamma): a Python float, weak beside the array's type; 1 - t in Python
            near = low + diff * gamma.astype(low.dtype)
            far = high - diff * (1 - gamma).astype(low.dtype)
        else:
            near, far = low + diff * gamma, high - diff * (1 - gamma)
        result = np.where(gamma >= 0.5, far.astype(near.dtype), near)
    result = np.where(count == 0, np.asarray(np.nan, result.dtype), result)
    return _with_keepdims(Tensor(result.node, scalar=True), x, axes, q.shape, keepdims)


def _nan_order_into(x: Tensor, axis, keepdims, out, what: str, check, compute) -> Tensor:
    """``out=`` of np.nanmedian/nanquantile/nanpercentile: NumPy computes the result as it does without out and
    assigns it, ``out[...] = result`` (converted unsafely, broadcast), into out as _ureduce passes it (with
    keepdims, indexed at 0 along the reduced axes); out is returned. ``check(stand-in out)`` is NumPy's own call
    on stand-ins, for its errors; ``compute()`` the result without keepdims."""
    target = _writable_target(out, f"{what}(..., out=...)")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(np.zeros(target.shape, target.dtype))
    axes = range(x.ndim) if axis is None else np.lib.array_utils.normalize_axis_tuple(axis, x.ndim)
    _out_as_ureduce_passes_it(target, axes, x.ndim, keepdims)[...] = compute()
    return target


def _quantile_positions(count, q: np.ndarray, method: str):
    """NumPy's quantile method table (``_QuantileMethods`` and ``_get_indexes``/``_get_gamma``) for
    slices of ``count`` numbers, in NumPy's types: the count converted to q's float type as NumPy
    converts its Python int. The index of the element for the discrete methods, else (the previous
    index, the next, gamma). Written in NumPy operations, so it runs on a traced count and on a NumPy
    one alike (the tests hold it to NumPy's table)."""
    if q.dtype.kind == "f":
        n, n_less_one = count.astype(q.dtype), (count - 1).astype(q.dtype)
    elif q.dtype == np.int64:  # q of Python ints (0 and 1)
        n, n_less_one = count, count - 1
    else:
        raise NotImplementedError(f"NaN-ignoring quantiles with a q of dtype {q.dtype}")
    if method in ("lower", "higher", "nearest"):
        return {"lower": np.floor, "higher": np.ceil, "nearest": np.around}[method](n_less_one * q).astype(np.intp)
    if method in ("inverted_cdf", "closest_observation"):  # NumPy's _discrete_interpolation_to_boundaries
        index = n * q - 1 if method == "inverted_cdf" else n * q - 1 - 0.5
        previous = np.floor(index)
        at_previous = index - previous == 0
        if method == "closest_observation":
            at_previous = at_previous & (previous % 2 == 1)
        return np.maximum(np.where(at_previous, previous, previous + 1).astype(np.intp), 0)
    if method == "linear":
        virtual = n_less_one * q
        if virtual.dtype.kind in "iu":
            return virtual.astype(np.intp)
    elif method == "midpoint":
        virtual = 0.5 * (np.floor(n_less_one * q) + np.ceil(n_less_one * q))
    elif method == "averaged_inverted_cdf":
        virtual = n * q - 1
    else:
        alpha, beta = _ALPHA_BETA[method]
        virtual = n * q + (alpha + q * (1 - alpha - beta)) - 1
    floor = np.floor(virtual)
    above, below = virtual >= n_less_one, virtual < 0
    undefined = above | np.isnan(virtual)  # NumPy's -1: the last number
    previous = np.where(below, 0, np.where(undefined, -1, floor)).astype(np.intp)
    following = np.where(below, 0, np.where(undefined, -1, floor + 1)).astype(np.intp)
    gamma = virtual - previous  # NumPy's own: -1 taken as an index, not as the last place
    if method == "averaged_inverted_cdf":
        gamma = np.where(gamma == 0, 0.5, 1.0)
    elif method == "midpoint":
        gamma = np.where(virtual % 1 == 0, 0.0, 0.5)
    last = count - 1
    return (np.where(previous < 0, last, previous), np.where(following < 0, last, following),
            gamma.astype(virtual.dtype))


# NumPy's Python-level array functions, restated on traced arrays in NumPy's own steps (its checks,
# messages and dtype rules): views stay views, fresh arrays fresh.


def rot90(m, k=1, axes=(0, 1)):
    """Flips and a transpose, as NumPy's: a view."""
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("len(axes) must be 2.")
    x = _tensor(m)
    if axes[0] == axes[1] or abs(axes[0] - axes[1]) == x.ndim:
        raise ValueError("Axes must be different.")
    if axes[0] >= x.ndim or axes[0] < -x.ndim or axes[1] >= x.ndim or axes[1] < -x.ndim:
        raise ValueError(f"Axes={axes} out of range for array of ndim={x.ndim}.")
    k %= 4
    if k == 0:
        return x[:]
    if k == 2:
        return flip(flip(x, axes[0]), axes[1])
    order = list(range(x.ndim))
    order[axes[0]], order[axes[1]] = order[axes[1]], order[axes[0]]
    return transpose(flip(x, axes[1]), order) if k == 1 else flip(transpose(x, order), axes[1])


def append(arr, values, axis=None):
    x = _tensor(arr)
    if axis is None:
        x = ravel(x) if x.ndim != 1 else x
        values = np.ravel(values)
        axis = x.ndim - 1
    return np.concatenate((x, values), axis=axis)


def array_split(ary, indices_or_sections, axis=0):
    """NumPy's sections: the first ``total % n`` one longer; views of the array."""
    if isinstance(indices_or_sections, Tensor):
        raise NotImplementedError("np.array_split: traced split points (they decide the parts' shapes)")
    x = _tensor(ary)
    total = x.shape[axis]
    try:
        count = len(indices_or_sections) + 1
        points = [0] + list(indices_or_sections) + [total]
    except TypeError:
        count = int(indices_or_sections)
        if count <= 0:
            raise ValueError("number sections must be larger than 0.") from None
        each, extras = divmod(total, count)
        points = np.array([0] + extras * [each + 1] + (count - extras) * [each], dtype=np.intp).cumsum()
    rows = swapaxes(x, axis, 0)
    return [swapaxes(rows[points[i]:points[i + 1]], axis, 0) for i in range(count)]


def _split_along(name: str, least: int, axis_of):
    def split_(ary, indices_or_sections):
        x = _tensor(ary)
        if x.ndim < least:
            raise ValueError(f"{name} only works on arrays of {least} or more dimensions")
        return split(x, indices_or_sections, axis_of(x.ndim))
    return split_


hsplit = _split_along("hsplit", 1, lambda ndim: 1 if ndim > 1 else 0)
vsplit = _split_along("vsplit", 2, lambda ndim: 0)
dsplit = _split_along("dsplit", 3, lambda ndim: 2)


def broadcast_arrays(*args, subok=False):
    """Each array broadcast to the common shape: a view, or the argument itself where it has that shape.
    NumPy's views are writeable (with a FutureWarning), so writing into them is refused, not read-only."""
    arrays = [_tensor(a) for a in args]
    shape = np.broadcast_shapes(*(a.shape for a in arrays))
    return tuple(a if a.shape == shape else view(P.broadcast_to(a.node, shape), a) for a in arrays)


def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
    if indexing not in ["xy", "ij"]:
        raise ValueError("Valid values for `indexing` are 'xy' and 'ij'.")
    ones = (1,) * len(xi)
    output = [_tensor(x).reshape(ones[:i] + (-1,) + ones[i + 1:]) for i, x in enumerate(xi)]
    if indexing == "xy" and len(xi) > 1:  # the first two axes swapped
        output[0] = output[0].reshape((1, -1) + ones[2:])
        output[1] = output[1].reshape((-1, 1) + ones[2:])
    if not sparse:
        output = broadcast_arrays(*output)
    if copy:
        output = tuple(x.copy() for x in output)
    return output


def ediff1d(ary, to_end=None, to_begin=None):
    """The differences of the flattened array, in its dtype; ``to_begin``/``to_end`` (NumPy's
    same_kind check) cast to it."""
    x = ravel(_tensor(ary))
    dtype = x.dtype
    if to_begin is None and to_end is None:
        return x[1:] - x[:-1]

    def end(extra, name) -> list:
        if extra is None:
            return []
        extra = extra if isinstance(extra, Tensor) else np.asanyarray(extra)
        if not np.can_cast(extra.dtype, dtype, casting="same_kind"):
            raise TypeError(f"dtype of `{name}` must be compatible with input `ary` under the `same_kind` rule.")
        return [_node(np.ravel(extra).astype(dtype))]

    begin, finish = end(to_begin, "to_begin"), end(to_end, "to_end")
    return Tensor(P.concat(begin + [_node(np.subtract(x[1:], x[:-1]).astype(dtype))] + finish, 0))


def polyval(p, x):
    """Horner's scheme as NumPy runs it: zeros like x, then y * x + c for each coefficient (an element of
    the coefficients' array, so a NumPy scalar: not weak)."""
    coefficients = p if isinstance(p, Tensor) else np.asarray(p)
    xs = x if isinstance(x, Tensor) else np.asanyarray(x)
    y = np.zeros_like(xs)
    for c in coefficients:
        y = y * xs + c
    return y


def vander(x, N=None, increasing=False):
    """Columns of powers in NumPy's type for them (x's promoted with int), each the running product of
    x (NumPy's multiply.accumulate), the first column ones; a fresh array."""
    v = _tensor(x)
    if v.ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = v.shape[0]
    N = n if N is None else operator.index(N)
    if N < 0:
        raise ValueError("negative dimensions are not allowed")
    dtype = np.promote_types(v.dtype, int)
    columns = []
    if N > 0:
        columns.append(const_node(np.ones((n, 1), dtype)))
    if N > 1:
        columns.append(_node(cumprod(broadcast_to(v[:, None].astype(dtype), (n, N - 1)), axis=1)))
    if not columns:
        return Tensor(const_node(np.zeros((n, 0), dtype)))
    table = Tensor(P.concat(columns, 1))
    return table if increasing else _fresh(Tensor(_node(table[:, ::-1])))


def _piecewise_conditions(condlist, x: Tensor) -> list[Tensor]:
    """np.piecewise's conditions as it reads them: one condition (a scalar, or anything whose first item is no
    list or array, for an x that is not 0-d) stands for a list of one; each converted to bool, of x's shape
    (NumPy's boolean index; a 0-d one selects all of x or nothing)."""
    first_is_array = lambda c: isinstance(c, (list, np.ndarray)) or isinstance(c, Tensor) and c.ndim > 0  # noqa: E731
    scalar = np.isscalar(condlist) or isinstance(condlist, Tensor) and condlist.numpy_scalar
    if scalar or (not first_is_array(condlist[0]) and x.ndim != 0):
        condlist = [condlist]
    conditions = [_tensor(c).astype(np.bool_) for c in condlist]
    if len({c.shape for c in conditions}) > 1:  # NumPy's np.asarray(condlist, dtype=bool) refuses ragged ones
        raise ValueError(f"np.piecewise: conditions of different shapes {sorted({c.shape for c in conditions})}")
    return conditions


def piecewise(x, condlist, funclist, *args, **kw):
    """np.piecewise: zeros of x's dtype, then for each condition in turn its value (converted as NumPy's
    assignment converts) where it holds, so a later condition wins. NumPy calls a function on the selected
    elements only, as a 1-d array; the compiler calls it once on all of x, raveled, and selects: the same
    wherever an element's value depends on that element alone (a function that mixes elements, like
    ``v - v.mean()``, differs), and it is traced even where its condition selects nothing, which NumPy skips.
    A value other than a scalar is refused (its length is the selection's)."""
    x = _tensor(x)
    conditions = _piecewise_conditions(condlist, x)
    n, n2 = len(conditions), len(funclist)
    if n == n2 - 1:  # the last function applies where no condition holds
        conditions.append(~any_(stack(conditions), axis=0))
    elif n != n2:
        raise ValueError(f"with {n} condition(s), either {n} or {n + 1} functions are expected")
    y = Tensor(const_node(np.zeros(x.shape, x.dtype)))
    for condition, func in zip(conditions, funclist):
        np.zeros(x.shape)[np.ones(condition.shape, np.bool_)]  # NumPy's IndexError for a condition not of x's shape
        condition = broadcast_to(condition, x.shape)
        if callable(func):
            value = _tensor(func(ravel(x), *args, **kw))
            if value.shape == (x.size,):
                value = reshape(value, x.shape)
            elif value.size != 1:
                raise NotImplementedError(f"np.piecewise: a function returning shape {value.shape} for "
                                          f"{x.size} elements (NumPy assigns it to the selected ones)")
        elif isinstance(func, Tensor) and func.size == 1:
            value = func
        elif np.ndim(func) == 0:
            box = np.zeros((), x.dtype)
            box[()] = func  # NumPy's conversion of the value, and its errors (a Python int out of range)
            value = Tensor(const_node(box))
        else:
            raise NotImplementedError(f"np.piecewise: a value of shape {np.shape(func)} (NumPy assigns it to the "
                                      "selected elements, whose number the data decide)")
        y = where(condition, value.astype(x.dtype), y)
    return y


def select(condlist, choicelist, default=0):
    """NumPy's np.select: the default, then each choice where its condition holds, the first condition
    taking precedence; NumPy's result type (Python numbers weak) and checks."""
    if len(condlist) != len(choicelist):
        raise ValueError("list of cases must be same length as list of conditions")
    if len(condlist) == 0:
        raise ValueError("select with an empty condition list is not possible")
    weak = lambda v: type(v) in (int, float, complex)  # noqa: E731  (NumPy keeps these as they are)
    choices = [c if weak(c) else _tensor(c) for c in list(choicelist) + [default]]
    try:
        dtype = np.result_type(*[c if weak(c) else np.empty(0, c.dtype) for c in choices])
    except TypeError as e:
        raise TypeError(f"Choicelist and default value do not have a common dtype: {e}") from None
    conditions = [_tensor(c) for c in condlist]
    condition_shape = np.broadcast_shapes(*(c.shape for c in conditions))
    choice_shape = np.broadcast_shapes(*(() if weak(c) else c.shape for c in choices))
    for i, c in enumerate(conditions):
        if c.dtype != np.bool_:
            raise TypeError(f"invalid entry {i} in condlist: should be boolean ndarray")
    shape = condition_shape if len(choice_shape) == 0 else np.broadcast_shapes(condition_shape, choice_shape)

    def as_result(c, casting):  # NumPy's np.full (unsafe) for the default, np.copyto (same_kind) for a choice
        if not weak(c):
            return c.astype(dtype)
        value = np.asarray(c)
        if not np.can_cast(value.dtype, dtype, casting):
            raise TypeError(f"Cannot cast array data from {value.dtype!r} to {dtype!r} according to the rule "
                            f"{casting!r}")
        return Tensor(const_node(value.astype(dtype)))

    result = broadcast_to(as_result(choices[-1], "unsafe"), shape)
    for choice, condition in zip(choices[-2::-1], conditions[::-1]):
        np.broadcast_shapes(condition.shape, shape)  # NumPy's copyto refuses what does not fit the result
        np.broadcast_shapes(() if weak(choice) else choice.shape, shape)
        result = np.where(condition, as_result(choice, "same_kind"), result)
    return _fresh(Tensor(P.broadcast_to(_node(result), shape)))  # (NumPy's np.full, written into in place)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Every element against every test element (NumPy's comparisons: exact across integer types; NaN
    is in nothing), any match; element's shape, bool."""
    if kind not in (None, "sort", "table"):
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    e = _tensor(element)
    t = test_elements if isinstance(test_elements, Tensor) else np.asarray(test_elements)
    integers = all(d.kind in "uib" for d in (e.dtype, t.dtype))
    if kind == "table" and not integers:
        raise ValueError("The 'table' method is only supported for boolean or integer arrays. "
                         "Please select 'sort' or None for kind.")
    if kind == "table" and isinstance(t, Tensor) and t.dtype.kind != "b":
        raise NotImplementedError("np.isin: kind='table' with traced test elements (NumPy refuses a range of "
                                  "them wider than their dtype: an error only their values can tell)")
    if kind == "table" and not isinstance(t, Tensor) and t.size and t.dtype.kind != "b":
        if int(t.max()) - int(t.min()) > np.iinfo(t.dtype).max:
            raise RuntimeError("You have specified kind='table', but the range of values in `ar2` or `ar1` exceed "
                               "the maximum integer of the datatype. Please set `kind` to None or 'sort'.")
    tests = np.ravel(t)
    if tests.shape[0] == 0:
        found = np.zeros(e.shape, bool)
        return Tensor(const_node(~found if invert else found))
    found = np.any(e[..., None] == tests, axis=-1)
    return _fresh(Tensor(_node(~found if invert else found)))  # (NumPy's in1d of the raveled array, reshaped)


def unravel_index(indices, shape, order="C"):
    """The coordinates of flat indices, divmod by each dimension from the last (order 'C') or the first;
    an index out of bounds is NumPy's ValueError, checked by the kernel as it runs."""
    if order not in ("C", "F"):
        raise ValueError("only 'C' or 'F' order is permitted")
    i = _tensor(indices)
    if i.dtype.kind not in "iub":  # NumPy casts the indices to intp under 'same_kind': bools are 0 and 1
        raise TypeError("only int indices permitted")
    dims = (operator.index(shape),) if not isinstance(shape, (tuple, list)) else tuple(operator.index(d) for d in shape)
    size = int(np.prod(dims, dtype=np.int64))
    flat = i.astype(np.intp)
    bad = (flat < 0) | (flat >= size)
    checked = P.check_at_run_time(flat.node, bad.node, "first", ValueError,
                                  lambda v: f"index {v} is out of bounds for array with size {size}")
    if checked is None:
        raise NotImplementedError("np.unravel_index outside a compiled function")
    rest = Tensor(checked)
    coordinates = [None] * len(dims)
    for d in (reversed(range(len(dims))) if order == "C" else range(len(dims))):
        coordinates[d] = Tensor(_node(rest % max(dims[d], 1)), scalar=True)
        rest = rest // max(dims[d], 1)
    return tuple(coordinates)


def ravel_multi_index(multi_index, dims, mode="raise", order="C"):
    """The flat index of each coordinate tuple (the coordinates broadcast together), by C or Fortran strides;
    NumPy's own call on stand-ins checks the count, dims, dtypes and modes. 'wrap' takes a coordinate modulo
    its dimension, 'clip' clips it, 'raise' (per dimension, or for all) makes one out of range NumPy's
    ValueError, checked by the kernel as it runs. All coordinates 0-d give a NumPy scalar, as in NumPy."""
    coordinates = [_tensor(c) for c in multi_index]
    dims = tuple(operator.index(d) for d in (dims if np.iterable(dims) else (dims,)))
    np.ravel_multi_index(tuple(np.zeros(c.shape, c.dtype) for c in coordinates), dims, mode=mode, order=order)
    modes = (mode,) * len(dims) if isinstance(mode, str) else tuple(mode)
    sizes = np.cumprod((1,) + (dims[:0:-1] if order == "C" else dims[:-1]), dtype=np.int64).tolist()
    strides = sizes[::-1] if order == "C" else sizes
    total, bad = 0, False
    for c, n, m, stride in zip(coordinates, dims, modes, strides):
        v = c.astype(np.intp)
        if m.startswith("w"):  # NumPy reads a mode by its first letter
            v = v % n
        elif m.startswith("c"):
            v = np.clip(v, 0, n - 1)
        else:
            bad = bad | (v < 0) | (v >= n)
        total = total + v * stride
    total = _tensor(total)
    if bad is not False:  # (NumPy checks the broadcast coordinates: none where another coordinate is empty)
        _raise_at_run_time(np.any(np.broadcast_to(bad, total.shape)), "invalid entry in coordinates array",
                           "np.ravel_multi_index")
    return Tensor(total.node, scalar=True)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """NumPy's np.geomspace on traced endpoints: computed in NumPy's type for them (float64, with NumPy's
    0-d dtype argument), the start's sign rotated out, np.logspace of the log10s, the ends set to the
    endpoints exactly, the sign put back. An endpoint of 0 is NumPy's ValueError, checked as the kernel runs."""
    lo, hi = _tensor(start) * 1.0, _tensor(stop) * 1.0
    _raise_at_run_time(np.any(lo == 0) | np.any(hi == 0), "Geometric sequence cannot include zero", "np.geomspace")
    calc = np.result_type(_stand_in(lo), _stand_in(hi), float(num), np.zeros((), dtype))
    dtype = calc if dtype is None else np.dtype(dtype)
    lo, hi = lo.astype(calc), hi.astype(calc)
    sign = np.sign(lo)
    lo, hi = lo / sign, hi / sign
    result = np.logspace(np.log10(lo), np.log10(hi), num=num, endpoint=endpoint, base=10.0, dtype=calc)
    # NumPy sets the ends and puts the sign back in place: the result keeps the memory logspace gave it
    spaced = result.node
    if num > 0:  # the ends exactly the endpoints (10 ** log10(x) need not be x)
        ends = np.broadcast_to(lo, result.shape[1:])[None]
        result = concatenate([ends, result[1:]])
        if num > 1 and endpoint:
            result = concatenate([result[:-1], np.broadcast_to(hi, result.shape[1:])[None]])
    result = Tensor(P.laid_out_as((sign * result).node, spaced))
    if axis != 0:
        result = np.moveaxis(result, 0, axis)
    return result.astype(dtype)


# Questions about dtypes, answered from the traced arrays' dtypes (NumPy 2 reads no values for them), and
# the real and imaginary parts of the real arrays the compiler takes.


def _dtype_stand_in(a):
    return np.empty(0, a.dtype) if isinstance(a, Tensor) else a


def result_type(*arrays_and_dtypes):
    return np.result_type(*map(_dtype_stand_in, arrays_and_dtypes))


def can_cast(from_, to, casting="safe"):
    dtype_argument(to, "np.can_cast(from_, to)") if isinstance(to, Tensor) else None
    return np.can_cast(_dtype_stand_in(from_), to, casting)


def iscomplexobj(x):
    return False  # the compiler takes no complex arrays


def isrealobj(x):
    return True


def iscomplex(x):
    t = _tensor(x)
    return Tensor(const_node(np.zeros(t.shape, bool)), scalar=True)


def isreal(x):
    """True everywhere: NumPy's ``imag(x) == 0``, laid out as that comparison of np.imag's array is."""
    return imag(x) == 0


def real(val):
    return val  # NumPy's val.real of a real array: the array itself


def imag(val):
    """Zeros of the array's dtype; read-only in NumPy, so refused as an in-place target."""
    t = _tensor(val)
    # NumPy's val.imag: an array for an array, even a 0-d one, allocated in "A" order after val
    zeros = const_node(np.zeros(t.shape, t.dtype))
    if layout.known(t.node):
        zeros = layout.with_strides(zeros, layout.ordered(t.shape, "A", t.shape, layout.strides_of(t.node)))
    return Tensor(zeros, aliases=READ_ONLY, scalar=t.scalar)


# Data movement that NumPy decides by positions alone (np.insert, np.delete, np.resize, np.compress with
# a constant condition): NumPy itself applies the function to the array of the operand's flat positions
# (its own rules, broadcasting and errors), and the kernel gathers the elements from where NumPy put
# them.


def _positions(x: Tensor) -> np.ndarray:
    return np.arange(x.size, dtype=np.intp).reshape(x.shape)


# --------------------------------------------------------------------------- NumPy's in-place functions


def _writable_target(a, what: str) -> Tensor:
    """``a`` as the array an in-place write (``what``: "np.put", "x.fill()") goes into, or the error saying why
    it cannot be."""
    if isinstance(a, Tensor) and a.numpy_scalar:
        raise TypeError(f"{what}: the array to write must be a numpy.ndarray, not numpy.{a.dtype} (a NumPy scalar)")
    if not isinstance(a, Tensor):
        entry, function = numpy_entry_point()
        if function is np.full:  # np.full(shape, traced, dtype=...): NumPy's own code copies into its np.empty
            raise NotImplementedError(f"a traced fill value for np.full ({entry})" + FULL_HINT)
        raise NotImplementedError(f"{what} into a NumPy array: NumPy writes that array's memory, which a compiled "
                                  "function cannot; make it from a traced array (np.zeros_like(x, shape=n))")
    if a.aliases == READ_ONLY:
        raise ValueError("assignment destination is read-only")
    return a


def _zeros_stand_in(v):
    """Zeros of a Tensor's shape and dtype (a mask that selects nothing: the data's own errors are not NumPy's
    to raise here), anything else as it is: for NumPy's own in-place functions' checks."""
    return np.zeros(v.shape, v.dtype) if isinstance(v, Tensor) else v


def _flat_values(values, dtype) -> Tensor:
    """An in-place function's values, raveled, in the target's dtype: a Tensor converted, a NumPy array
    converted (its 'safe' check already NumPy's, on stand-ins), anything else as np.asarray converts it."""
    if isinstance(values, Tensor):
        return ravel(values).astype(dtype)
    return Tensor(const_node(np.ravel(values.astype(dtype) if isinstance(values, np.ndarray)
                                      else np.asarray(values, dtype=dtype))))


def copyto(dst, src, casting="same_kind", where=True):
    """NumPy's own np.copyto on stand-ins of the operands' shapes and dtypes checks the casting,
    broadcasting and mask (its errors; a Python number is converted as it converts one); the kernel
    takes ``src`` where the mask holds, written into dst's memory (update_in_place). A view copied onto the very
    same view (NumPy compares data pointer, dtype, shape and strides) is nothing to do, read-only or not, as NumPy's
    PyArray_AssignArray skips it before it checks that dst is writable."""
    if _the_same_view(dst, src):
        return
    dst = _writable_target(dst, "np.copyto")
    np.copyto(np.zeros(dst.shape, dst.dtype), _zeros_stand_in(src), casting=casting, where=_zeros_stand_in(where))
    if isinstance(src, Tensor):
        value = src.node
    elif dt.is_python_scalar(src):
        converted = np.zeros((), dst.dtype)
        np.copyto(converted, src, casting=casting)
        value = const_node(converted)
    else:
        value = const_node(np.asarray(src))
    _write_where(dst, value, where, "np.copyto", "use np.where(mask, src, dst) instead")


def _the_same_view(a, b) -> bool:
    """Whether two traced arrays of at least one dimension are the same elements of the same memory in the same
    order and dtype, as NumPy compares them: the same positions in the array that owns it (so the same data
    pointer) and the same strides by the layout model (a unit axis's too: x[::-1] of one negates its stride)."""
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)) or a.ndim == 0 or a.size == 0 or \
            a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a is b:
        return True
    if (a.bases[-1] if a.bases else a) is not (b.bases[-1] if b.bases else b):
        return False
    positions = [t.positions if t.bases else np.arange(t.size).reshape(t.shape) for t in (a, b)]
    return (all(p is not None for p in positions) and np.array_equal(*positions) and layout.known(a.node)
            and layout.known(b.node) and layout.strides_of(a.node) == layout.strides_of(b.node))


def _leading_units_dropped(value: P.Node, ndim: int) -> P.Node:
    """``value`` without the leading unit axes it has beyond ``ndim``, as NumPy's array assignment drops them."""
    while value.ndim > ndim and value.shape[0] == 1:
        value = P.reshape(value, value.shape[1:])
    return value


def _write_where(target: Tensor, value: P.Node, where, what: str, instead: str) -> None:
    """``value`` broadcast to the target's shape and converted to its dtype, written into its memory
    where the mask ``where`` (True: everywhere) holds, as a ufunc's out= and np.copyto write. A value with
    more axes than the target loses its leading unit ones first, as NumPy's array assignment drops them."""
    value = P.cast(P.broadcast_to(_leading_units_dropped(value, target.ndim), target.shape), target.dtype)
    if where is not True:
        mask = where.node if isinstance(where, Tensor) else const_node(np.asarray(where))
        value = P.where(P.broadcast_to(P.cast(mask, np.bool_), target.shape), value, target.node)
    update_in_place(target, value, what, instead)


def _written_by_numpy(a, values, what: str, write, constants) -> None:
    """An in-place NumPy function run by NumPy itself on stand-ins: it writes the value's positions
    (offset past a's, in the value's shape) into the array of a's flat positions, so its rules (which
    positions, a short value repeated, modes, broadcasting, errors) decide which element lands where;
    the kernel gathers the updated array, written into a's memory (update_in_place). ``constants`` are
    the arguments that choose positions: traced ones are refused by name."""
    a = _writable_target(a, what)
    if any(isinstance(c, Tensor) for c in constants):
        raise NotImplementedError(f"{what}: traced positions (write np.where(...) instead)")
    if isinstance(values, Tensor):
        v = P.cast(values.node, a.dtype)
    else:
        v = const_node(np.asarray(values, dtype=a.dtype))  # NumPy's conversion (its OverflowError included)
    codes = _positions(a).copy()
    write(codes, a.size + np.arange(v.size, dtype=np.intp).reshape(v.shape))
    parts = [P.reshape(a.node, (a.size,))] + ([P.reshape(v, (v.size,))] if v.size else [])
    source = P.concat(parts, 0) if len(parts) > 1 else parts[0]
    update_in_place(a, gathered(source, codes).node, what, "build the result instead (np.where, ...)")


def flat_getitem(a: Tensor, key):
    """x.flat[key]: NumPy's own flatiter indexing of x's flat positions (C order) decides which elements, in
    what shape, and its errors; the elements are gathered into a fresh array (an element: a NumPy scalar).
    A traced key indexes x raveled, as NumPy's flatiter indexes with an integer array."""
    if _holds_tensor((key,)):
        if not isinstance(key, Tensor):
            raise NotImplementedError("x.flat[...] with traced values inside a tuple or list: index with one traced "
                                      "integer array")
        return getitem(FlatIterator(a).copy(), key)
    positions = _positions(a).flat[key]
    return Tensor(gathered(a.node, np.asarray(positions)).node, scalar=np.ndim(positions) == 0)


def flat_setitem(a, key, value) -> None:
    """x.flat[key] = value: NumPy's own flatiter assignment decides which positions take which element of the
    value (a short one repeated), its conversion and its errors; a constant value is written by NumPy
    itself into an array of x's dtype, a traced one placed by x's flat positions (``_written_by_numpy``);
    either goes into x's memory."""
    target = _writable_target(a, "x.flat[...] =")
    if _holds_tensor((key,)):
        _flat_set_at_traced_positions(target, key, value)
        return
    written = np.zeros(target.shape, target.dtype)
    written.flat[key] = _zeros_stand_in(value)
    if isinstance(value, Tensor):
        if isinstance(key, (int, np.integer)) and value.size == 1:
            # one item set from a one-element array (NumPy's bool item takes it, above): its one element, which
            # the positions' intp array would refuse
            value = value.reshape(())
        _written_by_numpy(target, value, "x.flat[...] =", lambda codes, values: codes.flat.__setitem__(key, values), [])
        return
    # the positions NumPy wrote: a value differs from zeros or from ones wherever it landed (an empty list
    # writes nothing, except False into a bool array by one integer)
    over_ones = np.ones(target.shape, target.dtype)
    over_ones.flat[key] = value
    hit = (written != 0) | (over_ones != 1)
    update_in_place(target, P.where(const_node(hit), const_node(written), target.node), "x.flat[...] =",
                    "build the result instead (np.where, ...)")


def _flat_set_at_traced_positions(target: Tensor, key, value) -> None:
    """x.flat[i] = v with i a traced integer array: NumPy's flatiter assignment on stand-ins converts the value
    (its errors); the flat positions (negative ones from the end, out of range NumPy's IndexError as the kernel
    runs) take the value's elements repeated cyclically, the last write winning. A traced boolean mask (one
    axis, x's size) selects the positions, which take the value's elements cyclically in order."""
    if not isinstance(key, Tensor):
        raise NotImplementedError("x.flat[...] = at traced positions other than one integer array or boolean mask "
                                  "(write np.where(...) instead)")
    if key.dtype == np.bool_:
        _flat_set_through_traced_mask(target, key, value)
        return
    np.zeros(target.shape, target.dtype).flat[np.zeros(key.shape, key.dtype)] = _zeros_stand_in(value)  # (a float
    # key is its IndexError)
    n, index, values = target.size, ravel(key).astype(np.int64), _flat_values(value, target.dtype)
    if not index.size or not values.size:
        return
    index = _from_the_end_checked(index, n, lambda i: f"index {i} is out of bounds for size {n}", "x.flat[...] =")
    _written_cyclically(target, index, values, "x.flat[...] =")


def _flat_set_through_traced_mask(target: Tensor, mask: Tensor, value) -> None:
    """x.flat[mask] = v: NumPy's flatiter assignment on stand-ins (a mask selecting nothing) checks the mask's
    length and converts the value; the k-th selected element in C order takes the value's element k modulo
    their count (by a running count of the mask), an empty value writes nothing."""
    np.zeros(target.shape, target.dtype).flat[np.zeros(mask.shape, mask.dtype)] = _zeros_stand_in(value)
    values = _flat_values(value, target.dtype)
    if not values.size or not target.size:
        return
    selected = ravel(mask)
    running = (cumsum(selected.astype(np.intp)) - 1) % values.size  # (-1 before the first selected: unused)
    written = np.where(selected, take(values, running), ravel(target))
    update_in_place(target, P.reshape(written.node, target.shape), "x.flat[...] =",
                    "build the result instead (np.where, ...)")


def _from_the_end_checked(index: Tensor, n: int, message, what: str) -> Tensor:
    """Traced positions along an axis of ``n``: one out of range is NumPy's IndexError with ``message`` (a
    function of the first such position, or a text), as the kernel runs; a negative one counts from the end."""
    _raise_at_run_time((index < -n) | (index >= n), message, what, IndexError, values=index)
    return np.where(index < 0, index + n, index)


def _written_cyclically(target: Tensor, index: Tensor, values: Tensor, what: str) -> None:
    """The flat positions ``index`` of ``target`` take ``values`` repeated cyclically, the last write winning
    (np.put's and x.flat's assignment)."""
    repeated = take(values, np.arange(index.size) % values.size)
    _written_at_flat_positions(target, index, repeated.node, what)


def copy(a, order="K", subok=False) -> Tensor:
    """np.copy: an array (of a NumPy scalar too, which np.copy makes a 0-d array), laid out in ``order``."""
    return Tensor(_tensor(a).copy(memory_order(order, "K")).node)


def putmask(a, mask, values):
    """np.putmask: where the mask holds (read flat: any shape of a's size) a takes the values' element at the
    same flat position modulo their count, written into a's memory. NumPy's own np.putmask on stand-ins
    checks the sizes and converts the values (an array under 'safe' casting, anything else as np.asarray
    in a's dtype converts it); no values change nothing."""
    target = _writable_target(a, "np.putmask")
    np.putmask(np.zeros(target.shape, target.dtype), _zeros_stand_in(mask), _zeros_stand_in(values))
    v = _flat_values(values, target.dtype)
    if v.size == 0:
        return None
    repeated = reshape(take(v, np.arange(target.size) % v.size), target.shape)
    selected = reshape(_tensor(mask).astype(np.bool_), target.shape)
    update_in_place(target, where(selected, repeated, target).node, "np.putmask", "use np.where(mask, values, a) instead")
    return None


def _packed(value: Tensor, dtype: np.dtype, what: str) -> P.Node:
    """A traced value as the elements NumPy's item assignment (x[i] = v, x[:] = v, x.fill(v)) makes of it. A NumPy
    scalar written into a signed integer array goes through Python's int(), as NumPy's setitem for those dtypes
    takes NumPy scalars: NaN is its ValueError, infinity, a value past a C long or past the dtype's range its
    OverflowError, each checked as the kernel runs. Anything else is cast unsafely (a 0-d array, or an unsigned,
    float or bool target: NumPy casts there)."""
    if not value.numpy_scalar or dtype.kind != "i" or value.dtype == dtype or value.dtype.kind == "b" or (
            value.dtype.kind in "iu" and np.can_cast(value.dtype, dtype, "safe")):
        return P.cast(value.node, dtype)
    v, beyond = value, None
    if v.dtype.kind == "f":
        _raise_at_run_time(np.isnan(v), "cannot convert float NaN to integer", what)
        _raise_at_run_time(np.isinf(v), "cannot convert float infinity to integer", what, OverflowError)
        v = np.trunc(np.where(np.isfinite(v), v, 0))
        beyond = (v >= 2.0 ** 63) | (v < -(2.0 ** 63))
    elif v.dtype == np.uint64:
        beyond = v > np.iinfo(np.int64).max
    if beyond is not None:
        _raise_at_run_time(beyond, "Python int too large to convert to C long", what, OverflowError)
        v = np.where(beyond, 0, v)
    as_long = v.astype(np.int64)
    info = np.iinfo(dtype)
    _raise_at_run_time((as_long < info.min) | (as_long > info.max), lambda n: f"Python integer {n} out of bounds for "
                       f"{dtype}", what, OverflowError, values=as_long)
    return P.cast(value.node, dtype)


def _basic_key(key) -> bool:
    """Whether NumPy indexes with ``key`` by basic indexing (integers, slices, Ellipsis, None: no arrays, lists
    or bools), where it assigns a scalar value as its setitem converts one."""
    parts = key if isinstance(key, tuple) else (key,)
    return all(p is None or p is Ellipsis or isinstance(p, slice) or (
        isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_))) for p in parts)


def fill(a, value) -> None:
    """x.fill(value): every element the value, converted as NumPy's fill converts a value (its errors: a
    sequence, a Python int out of range, NaN into an integer type), written into the array's memory."""
    target = _writable_target(a, "x.fill()")
    if isinstance(value, Tensor):
        if value.ndim:
            raise ValueError("setting an array element with a sequence.")
        converted = _packed(value, target.dtype, "x.fill()")
    else:
        box = np.zeros(1, target.dtype)
        box.fill(value)
        converted = const_node(box.reshape(()))
    update_in_place(target, P.broadcast_to(converted, target.shape), "x.fill()", "use np.full_like(x, value) instead")


def put(a, ind, v, mode="raise"):
    """np.put: the flat (C order) positions ``ind`` take the values, repeated cyclically where fewer, the last
    write winning. NumPy's own np.put on stand-ins for positions known at trace time; traced ones are placed
    in the kernel ('raise': NumPy's IndexError as the kernel runs, negative positions from the end; 'wrap': modulo
    the size; 'clip': into [0, size))."""
    if not _holds_tensor((ind,)):
        _written_by_numpy(a, v, "np.put", lambda codes, values: np.put(codes, ind, values, mode), [ind])
        return
    target = _writable_target(a, "np.put")
    index = array_of_sequence(ind) if isinstance(ind, (list, tuple)) else _tensor(ind)
    with np.errstate(all="ignore"):  # NumPy's checks of the types and the mode, on stand-ins
        np.put(np.zeros(target.shape, target.dtype), np.zeros(index.shape, index.dtype), _zeros_stand_in(v), mode)
    if index.size and not target.size:  # (NumPy's order: this, then no values, then the positions' range)
        raise IndexError("cannot replace in an empty array")
    values = _flat_values(v, target.dtype)
    if not index.size or not values.size:
        return
    n, index = target.size, ravel(index).astype(np.int64)
    how = _take_mode(mode)
    if how == "raise":
        index = _from_the_end_checked(index, n, lambda i: f"index {i} is out of bounds for axis 0 with size {n}",
                                      "np.put")
    else:
        index = index % n if how == "wrap" else np.clip(index, 0, n - 1)
    _written_cyclically(target, index, values, "np.put")


def place(arr, mask, vals):
    """np.place: the k-th position (in C order) where the mask holds takes the values' k-th element, modulo
    their count. NumPy's own np.place on stand-ins of the real dtypes checks the sizes and converts the
    values (an array under 'safe' casting); a traced mask chooses each position's value by a running count
    of the mask, and no values for a mask that holds somewhere is NumPy's ValueError, checked as the kernel
    runs."""
    target = _writable_target(arr, "np.place")
    np.place(np.zeros(target.shape, target.dtype), _zeros_stand_in(mask), _zeros_stand_in(vals))
    if not isinstance(mask, Tensor):
        _written_by_numpy(target, vals, "np.place", lambda codes, values: np.place(codes, mask, values), [mask])
        return
    v = _flat_values(vals, target.dtype)
    selected = ravel(mask).astype(np.bool_)
    if v.size == 0:
        _raise_at_run_time(np.any(selected), "Cannot insert from an empty array!", "np.place")
        return
    count = cumsum(selected.astype(np.intp)) - 1  # the values' index at each selected position
    chosen = Tensor(P.gather_in_range(v.node, (count % v.size).node, 0))
    update_in_place(target, where(reshape(selected, target.shape), reshape(chosen, target.shape), target).node,
                    "np.place", "use np.where(mask, values, arr) instead")


def put_along_axis(arr, indices, values, axis):
    """np.put_along_axis: NumPy's own function on stand-ins for positions known at trace time; traced ones
    (np.argmax(x, axis, keepdims=True), say) are NumPy's own fancy index of them assigned to (item assignment at
    traced positions). With axis=None NumPy assigns into np.array(arr.flat): a view of a C-contiguous array (its
    write is seen), else a copy (the array is unchanged) -- as ravel's."""
    if not isinstance(indices, Tensor):
        _written_by_numpy(arr, values, "np.put_along_axis",
                          lambda codes, v: np.put_along_axis(codes, indices, v, axis), [indices])
        return
    a = _writable_target(arr, "np.put_along_axis")
    if axis is None:
        if indices.ndim != 1:
            raise ValueError("when axis=None, `indices` must have a single dimension.")
        a, axis = a.ravel(), 0
    else:
        axis = np.lib.array_utils.normalize_axis_index(axis, a.ndim)
    a[np.lib._shape_base_impl._make_along_axis_idx(a.shape, indices, axis)] = values


def fill_diagonal(a, val, wrap=False):
    _written_by_numpy(a, val, "np.fill_diagonal", lambda codes, values: np.fill_diagonal(codes, values, wrap), [])


def block(arrays):
    """NumPy's np.block: its own checks of the nesting (``_block_setup``: depths, empty lists, tuples),
    each leaf given the result's number of axes by leading ones, then the innermost lists joined along
    the last axis, the next along the one before, and so on -- NumPy's concatenations."""
    arrays, list_ndim, result_ndim, _ = np._core.shape_base._block_setup(arrays)

    def joined(part, depth):
        if depth < list_ndim:
            return concatenate([joined(p, depth + 1) for p in part], axis=-(list_ndim - depth))
        if isinstance(part, Tensor):
            return part.reshape((1,) * (result_ndim - part.ndim) + part.shape) if part.ndim < result_ndim else part
        return Tensor(const_node(np.array(part, copy=None, ndmin=result_ndim)))

    result = joined(arrays, 0)
    return Tensor(result.node) if list_ndim == 0 else result  # a lone array: NumPy's copy


def delete(arr, obj, axis=None):
    if isinstance(obj, Tensor):
        raise NotImplementedError("np.delete: traced positions (they decide the result's shape)")
    x = _tensor(arr)
    positions = np.delete(_positions(x), obj, axis)
    kept = gathered(x.node, positions)
    # laid out as NumPy's own delete lays out its result from an array laid out as x (an index array
    # along an axis gives its advanced indexing's layout)
    if layout.known(x.node):
        numpys = np.delete(_stand_in_laid_out(x), obj, axis)
        return Tensor(P.laid_out(kept.node, tuple(s // numpys.itemsize for s in numpys.strides)))
    return Tensor(P.layout_unknown(kept.node))


def insert(arr, obj, values, axis=None):
    """The values as NumPy converts them (the array's dtype, at least its ndim), then placed as NumPy's
    insert places them: positions past the array's own stand for the values."""
    if isinstance(obj, Tensor):
        raise NotImplementedError("np.insert: traced positions (they decide where the values go)")
    x = _tensor(arr)
    ndim = 1 if axis is None else x.ndim  # NumPy flattens the array when axis is None
    if isinstance(values, Tensor):
        v = values.astype(x.dtype)
        v = Tensor(P.reshape(v.node, (1,) * (ndim - v.ndim) + v.shape)) if v.ndim < ndim else v
    else:
        v = Tensor(const_node(np.array(values, ndmin=ndim, dtype=x.dtype)))
    codes = x.size + np.arange(v.size, dtype=np.intp).reshape(v.shape)
    positions = np.insert(_positions(x), obj, codes, axis)
    source = P.concat([P.reshape(x.node, (x.size,)), P.reshape(v.node, (v.size,))], 0)
    return gathered(source, positions)


def resize(a, new_shape):
    x = _tensor(a)
    positions = np.resize(_positions(x), new_shape)
    if x.size == 0:  # NumPy's zeros of the new shape
        return Tensor(const_node(np.zeros(positions.shape, x.dtype)))
    return gathered(x.node, positions)


def compress(condition, a, axis=None, out=None):
    if out is not None and not isinstance(condition, Tensor):
        return _computed_into_out("compress", out, lambda o: np.compress(condition, _stand_in(a), axis, o),
                                  lambda _: compress(condition, a, axis))
    if isinstance(condition, Tensor):
        raise NotImplementedError("np.compress: a traced condition (it decides the result's shape)")
    x = _tensor(a)
    return gathered(x.node, np.compress(condition, _positions(x), axis))


def choose(a, choices, out=None, mode="raise"):
    """Each element of the choices picked by ``a`` (the choices and ``a`` broadcast together, in their
    common type); an index out of range is NumPy's ValueError (mode 'raise', checked by the kernel as it
    runs), wrapped or clipped with the other modes."""
    # (a choice that is a list holding traced values is the array NumPy makes of it)
    choices = [array_of_sequence(c) if isinstance(c, (list, tuple)) and _holds_tensor(c) else c for c in choices]
    if out is not None:
        return _computed_into_out("choose", out, lambda o: np.choose(_stand_in(a), [_stand_in(c) for c in choices],
                                                                     o, mode), lambda _: choose(a, choices, mode=mode))
    if mode not in ("raise", "wrap", "clip"):
        raise ValueError(f"mode must be one of 'clip', 'raise', or 'wrap' (got {mode!r})")
    options = [c if isinstance(c, Tensor) else np.asarray(c) for c in choices]
    if not options:  # NumPy's first check, before the index's type
        raise ValueError("0-length sequence.")
    index = _tensor(a)
    if not np.can_cast(index.dtype, np.intp, "safe"):
        raise TypeError(f"Cannot cast array data from {index.dtype!r} to {np.dtype(np.intp)!r} according to the rule "
                        "'safe'")
    dtype = np.result_type(*map(_dtype_stand_in, options))
    shape = np.broadcast_shapes(index.shape, *(np.shape(c) for c in options))
    n = len(options)
    stacked = stack([broadcast_to(np.asarray(c, dtype) if isinstance(c, np.ndarray) else c.astype(dtype), shape)
                     for c in options])
    k = broadcast_to(index.astype(np.intp), shape)
    if mode == "wrap":
        k = k % n
    elif mode == "clip":
        k = np.clip(k, 0, n - 1)
    else:
        checked = P.check_at_run_time(k.node, ((k < 0) | (k >= n)).node, "first", ValueError,
                                      lambda _: "invalid entry in choice array")
        if checked is None:
            raise NotImplementedError("np.choose outside a compiled function")
        k = Tensor(checked)
    flat = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.intp).reshape(shape)
    picked = P.gather_in_range(P.reshape(stacked.node, (stacked.size,)), (k * max(flat.size, 1) + flat).node, 0)
    return Tensor(picked, scalar=True)


# 1-d correlation and convolution: the full correlation is a gather of the sliding windows of the
# zero-padded first operand times the second (a matmul); 'same' and 'valid' are slices of it, at the
# offsets NumPy's correlate takes (for 'same' they depend on which operand is longer)


def _correlation(x: Tensor, w: Tensor, mode) -> Tensor:
    n, m = x.shape[0], w.shape[0]
    dtype = np.result_type(x.dtype, w.dtype)
    x, w = x.astype(dtype), w.astype(dtype)
    kind = {"v": 0, "s": 1, "f": 2}[mode.lower()[0]] if isinstance(mode, str) else operator.index(mode)
    if dtype in _BLAS_TYPES:  # NumPy's _pyarray_correlate: the longer operand first, the result reversed then
        (a, v), inverted = ((w, x), True) if n < m else ((x, w), False)
        short = min(n, m)
        n_left, n_right = {0: (0, 0), 1: (short // 2, short - short // 2 - 1), 2: (short - 1, short - 1)}[kind]
        out = Tensor(P.window_dots(a.node, v.node, n_left, n_right))
        return out[::-1].copy() if inverted else out
    zeros = const_node(np.zeros(m - 1, dtype))
    padded = P.concat([zeros, x.node, zeros], 0) if m > 1 else x.node
    positions = np.arange(n + m - 1)[:, None] + np.arange(m)[None, :]
    windows = P.gather(padded, const_node(positions), 0)
    if dtype.kind == "f" and m > 1:
        # NumPy adds only the products of overlapping elements (a padding zero times an inf or NaN of the
        # other operand is no term of its sum): each window's products, those past an end left out
        # float16's: NumPy's half dot adds them in turn from 0 in float32 (a running sum; + 0.0 as its start)
        inside = (positions >= m - 1) & (positions < n + m - 1)
        products = Tensor(windows).astype(np.float32) * w.astype(np.float32)[None, :]
        full = (cumsum(where(inside, products, 0), axis=1)[:, -1] + np.float32(0)).astype(dtype).node
    else:
        full = P.reshape(P.matmul(windows, P.reshape(w.node, (m, 1))), (n + m - 1,))
    if kind == 2:
        return Tensor(full)
    start, length = (min(n, m) - 1, max(n, m) - min(n, m) + 1) if kind == 0 else \
        ((m - 1) // 2 if n >= m else n // 2, max(n, m))
    return Tensor(full)[start:start + length].copy()  # a fresh array, not a view of one


def correlate(a, v, mode="valid"):
    np.correlate(np.ones(1), np.ones(1), mode)  # NumPy's own check of the mode, and its error
    x, w = _tensor(a), _tensor(v)
    if x.ndim == 0 or w.ndim == 0:
        raise ValueError("object of too small depth for desired array")
    if x.ndim > 1 or w.ndim > 1:
        raise ValueError("object too deep for desired array")
    if x.shape[0] == 0:
        raise ValueError("first array argument cannot be empty")
    if w.shape[0] == 0:
        raise ValueError("second array argument cannot be empty")
    return _correlation(x, w, mode)


def convolve(a, v, mode="full"):
    np.convolve(np.ones(1), np.ones(1), mode)
    x, w = atleast_1d(_tensor(a)), atleast_1d(_tensor(v))
    if x.ndim > 1 or w.ndim > 1:
        raise ValueError("object too deep for desired array")
    if w.shape[0] > x.shape[0]:
        x, w = w, x
    if x.shape[0] == 0:
        raise ValueError("a cannot be empty")
    if w.shape[0] == 0:
        raise ValueError("v cannot be empty")
    return _correlation(x, w[::-1], mode)


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """NumPy's np.cross, product for product: components in the operands' promoted dtype, each a product
    or a difference of two (2-vectors are NumPy's deprecated case, warned about as NumPy does)."""
    if axis is not None:
        axisa, axisb, axisc = (axis,) * 3
    x, y = _tensor(a), _tensor(b)
    if x.ndim < 1 or y.ndim < 1:
        raise ValueError("At least one array has zero dimension")
    normalize = np.lib.array_utils.normalize_axis_index
    x = moveaxis(x, normalize(axisa, x.ndim, msg_prefix="axisa"), -1)
    y = moveaxis(y, normalize(axisb, y.ndim, msg_prefix="axisb"), -1)
    n, m = x.shape[-1], y.shape[-1]
    if n not in (2, 3) or m not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")
    if n == 2 or m == 2:
        warnings.warn("Arrays of 2-dimensional vectors are deprecated. Use arrays of 3-dimensional vectors instead. "
                      "(deprecated in NumPy 2.0)", DeprecationWarning, stacklevel=3)
    shape = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
    dtype = np.promote_types(x.dtype, y.dtype)
    x, y = x.astype(dtype), y.astype(dtype)
    a0, a1, b0, b1 = x[..., 0], x[..., 1], y[..., 0], y[..., 1]
    # NumPy writes the components into an array it allocates C-contiguously (np.empty), whatever the operands'
    # layouts (fuzz seed 1254: the product of a reversed view came back Fortran-ordered)
    if n == 2 and m == 2:
        return Tensor(_fresh(a0 * b1 - a1 * b0).node)  # NumPy's result is an array, even a 0-d one
    axisc = normalize(axisc, len(shape) + 1, msg_prefix="axisc")
    last = a0 * b1 - a1 * b0
    if n == 3 and m == 3:
        a2, b2 = x[..., 2], y[..., 2]
        parts = [a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, last]
    elif n == 2:
        b2 = y[..., 2]
        parts = [a1 * b2, -(a0 * b2), last]
    else:
        a2 = x[..., 2]
        parts = [-(a2 * b1), a2 * b0, last]
    stacked = _fresh(Tensor(P.concat([P.reshape(p.node, shape + (1,)) for p in parts], len(shape)))).node
    order = list(range(len(shape)))
    order.insert(axisc, len(shape))
    return Tensor(P.transpose(stacked, order))


def kron(a, b):
    """The Kronecker product: each operand spread over interleaved axes (the shorter shape padded with
    leading ones) and multiplied, then each pair of axes merged -- one product per element, as NumPy's."""
    x, y = _tensor(a), _tensor(b)
    nd = max(x.ndim, y.ndim)
    xs, ys = (1,) * (nd - x.ndim) + x.shape, (1,) * (nd - y.ndim) + y.shape
    spread_x = x.reshape(tuple(d for n in xs for d in (n, 1)))
    spread_y = y.reshape(tuple(d for n in ys for d in (1, n)))
    product = spread_x * spread_y
    return Tensor(P.reshape(product.node, tuple(m * n for m, n in zip(xs, ys))), scalar=nd == 0)


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """NumPy's np.trapezoid, line for line, on traced arrays."""
    y = _tensor(y)
    if x is None:
        d = dx
    else:
        x = _tensor(x)
        if x.ndim == 1:
            d = diff(x)
            shape = [1] * y.ndim
            shape[axis] = d.shape[0]
            d = d.reshape(shape)
        else:
            d = diff(x, axis=axis)
    later = [slice(None)] * y.ndim
    earlier = [slice(None)] * y.ndim
    later[axis] = slice(1, None)
    earlier[axis] = slice(None, -1)
    return (d * (y[tuple(later)] + y[tuple(earlier)]) / 2.0).sum(axis)


# NumPy 2's array-API functions (np.concat and np.permute_dims are np.concatenate and np.transpose
# themselves) and its vector/matrix gufuncs


def matrix_transpose(x):
    t = _tensor(x)
    if t.ndim < 2:
        raise ValueError(f"Input array must be at least 2-dimensional, but it is {t.ndim}")
    return swapaxes(t, -1, -2)


def astype(x, dtype, /, *, copy=True, device=None):
    if device not in (None, "cpu"):
        raise ValueError(f"Device not understood. Only \"cpu\" is allowed, but received: {device}")
    return _tensor(x).astype(dtype, copy=copy)


def unstack(x, /, *, axis=0):
    t = _tensor(x)
    if t.ndim == 0:
        raise ValueError("Input array must be at least 1-d.")
    moved = moveaxis(t, axis, 0)
    return tuple(moved[i] for i in range(moved.shape[0]))


def _cumulative(ufunc, x, axis, dtype, out, include_initial):
    """NumPy's _cumulative_func: ufunc.accumulate, the identity prepended with ``include_initial``; into
    ``out=`` the accumulation into out past the first element along the axis, the identity assigned there."""
    t = atleast_1d(_tensor(x))
    if axis is None:
        if t.ndim >= 2:
            raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
        axis = 0
    if out is not None:
        if not include_initial:
            return ufunc.accumulate(t, axis=axis, dtype=dtype, out=out)
        target = _writable_target(out, f"np.cumulative_{'sum' if ufunc is np.add else 'prod'}(..., out=...)")
        item = [slice(None)] * t.ndim
        item[axis] = slice(1, None)
        ufunc.accumulate(t, axis=axis, dtype=dtype, out=target[tuple(item)])
        item[axis] = 0
        target[tuple(item)] = ufunc.identity
        return target
    result = ufunc.accumulate(t, axis=axis, dtype=dtype)
    if include_initial:
        axis = np.lib.array_utils.normalize_axis_index(axis, t.ndim)
        # NumPy's np.concat of np.full_like(res, identity, shape=...) and res: laid out as those are
        first = full_like(result, ufunc.identity, shape=t.shape[:axis] + (1,) + t.shape[axis + 1:])
        result = concatenate([first, result], axis)
    return result


def cumulative_sum(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative(np.add, x, axis, dtype, out, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, out=None, include_initial=False):
    return _cumulative(np.multiply, x, axis, dtype, out, include_initial)


_GUFUNC_CORES = {"vecdot": (1, 1), "matvec": (2, 1), "vecmat": (1, 2)}  # core dimensions of each operand


_CORE_PLACEMENT = ("axes", "axis", "keepdims")  # a gufunc's keywords that place its core dimensions


def _is_vector_gufunc(ufunc) -> bool:
    return ufunc is np.matmul or ufunc.__name__ in _GUFUNC_CORES and ufunc is getattr(np, ufunc.__name__)


def _gufunc_placed(ufunc, inputs, placement: dict, loop: dict):
    """np.matmul, np.vecdot, np.matvec or np.vecmat with ``axes=``, ``axis=`` or ``keepdims=``: each
    operand's core axes moved last, the gufunc, and its result's core axes moved to where the output's
    entry puts them (``keepdims``: vecdot's reduced axis kept with size 1). NumPy's own call on stand-ins
    of the operands checks the arguments (its errors are raised as they are) and lays the result out."""
    operands = [_tensor(x) for x in inputs]
    stand_ins = [_stand_in_laid_out(t) if layout.known(t.node) else np.zeros(t.shape, t.dtype) for t in operands]
    with np.errstate(all="ignore"):
        expected = ufunc(*stand_ins, **placement)
    if ufunc is np.matmul:  # a 1-d operand has one core dimension (its missing one is no axis of the result)
        cores = tuple(min(t.ndim, 2) for t in operands)
        out_core = sum(t.ndim >= 2 for t in operands)
    else:
        cores, out_core = _GUFUNC_CORES[ufunc.__name__], 0 if ufunc is np.vecdot else 1
    keepdims = bool(placement.get("keepdims", False))
    if "axes" in placement:
        entries = list(placement["axes"])
    else:
        axis = placement.get("axis", -1)
        entries = [axis] * len(operands) + [axis]
    if keepdims:
        out_core = cores[0]  # (NumPy allows keepdims only where every input has as many core axes, the output none)
    if len(entries) <= len(operands):  # the output's entry left out: its core axes last
        entries.append(tuple(range(-out_core, 0)))
    entries = [_core_axes_entry(e) for e in entries]
    moved = [moveaxis(t, entry, tuple(range(-core, 0))) if core else t
             for t, entry, core in zip(operands, entries, cores)]
    result = _ufunc_results(ufunc, moved, **loop)
    if keepdims:
        result = Tensor(P.reshape(result.node, result.shape + (1,) * out_core))
    if out_core:
        result = moveaxis(result, tuple(range(-out_core, 0)), entries[len(operands)])
    if not result.ndim:
        return result
    if all(layout.known(t.node) for t in operands):
        return Tensor(P.laid_out(result.node, tuple(s // expected.itemsize for s in expected.strides)))
    return Tensor(P.layout_unknown(result.node))


def _core_axes_entry(entry) -> tuple:
    """An entry of a gufunc's ``axes=`` (or its ``axis=``), which NumPy has accepted: one axis (anything NumPy
    reads as an integer, a 0-d integer array among them) or a tuple of them."""
    try:
        return (operator.index(entry),)
    except TypeError:
        return tuple(operator.index(axis) for axis in entry)


def _vector_gufunc(name: str, x1, x2) -> Tensor:
    """np.vecdot, np.matvec and np.vecmat as matmuls of a vector made a row or column (their loop
    dimensions broadcast as matmul's do); NumPy's errors for missing or mismatched core dimensions."""
    a, b = _node(x1), _node(x2)
    signature = getattr(np, name).signature
    for k, (node, need) in enumerate(zip((a, b), _GUFUNC_CORES[name])):
        if node.ndim < need:
            raise ValueError(f"{name}: Input operand {k} does not have enough dimensions (has {node.ndim}, gufunc "
                             f"core with signature {signature} requires {need})")
    n_a, n_b = a.shape[-1], b.shape[-2] if name == "vecmat" else b.shape[-1]
    if n_a != n_b:
        raise ValueError(f"{name}: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature "
                         f"{signature} (size {n_b} is different from {n_a})")
    if name == "vecdot":
        product = P.matmul(P.reshape(a, a.shape[:-1] + (1, n_a)), P.reshape(b, b.shape + (1,)), gufunc=True)
        return Tensor(P.reshape(product, product.shape[:-2]), scalar=True)
    if not _gemv_of_vector_gufunc(name, a, b):
        # NumPy's loop takes its type's dot for each output element (BLAS's ?dot at the two increments, or a
        # running sum where one is not positive): the vector and each row (column) of the matrix made a vecdot
        matrix, vector = (a, b) if name == "matvec" else (P.transpose(b, _swap_last(b.ndim)), a)
        rows = P.reshape(matrix, matrix.shape[:-1] + (1, n_a))
        column = P.reshape(vector, vector.shape[:-1] + (1, n_a, 1))
        product = P.matmul(rows, column, gufunc=True)  # (the products commute: x[i] * y[i] either way)
        return Tensor(P.reshape(product, product.shape[:-2]), scalar=True)
    if name == "matvec":
        product = P.matmul(a, P.reshape(b, b.shape + (1,)), gufunc=True)
        return Tensor(P.reshape(product, product.shape[:-1]), scalar=True)
    product = P.matmul(P.reshape(a, a.shape[:-1] + (1, n_a)), b, gufunc=True)
    return Tensor(P.reshape(product, product.shape[:-2] + product.shape[-1:]), scalar=True)


def _swap_last(ndim: int) -> list:
    return list(range(ndim - 2)) + [ndim - 1, ndim - 2]


def _gemv_of_vector_gufunc(name: str, a: P.Node, b: P.Node) -> bool:
    """Whether NumPy's matvec (vecmat) loop multiplies by BLAS's gemv (matmul.c.src): for float32 and float64, a
    matrix BLAS reads as it lies (unit steps along one axis, a leading dimension at least the other's extent),
    a vector at a positive step, both core dimensions above 1. Else it takes a dot per output element, which
    the matmul's plan for a vector does not (it runs matmul's own loop there). A layout the model only guesses
    is taken as a gemv's."""
    dtype = np.result_type(a.dtype, b.dtype)
    matrix, vector = (a, b) if name == "matvec" else (b, a)
    if dtype not in _BLAS_TYPES or not (layout.known(matrix) and layout.known(vector)):
        return True

    def core_strides(x: P.Node) -> tuple:  # (an operand of another type: the loop's C-contiguous copy)
        return layout.contiguous_strides(x.shape) if x.dtype != dtype else layout.strides_of(x)

    (rows, cols), (row_step, col_step) = matrix.shape[-2:], core_strides(matrix)[-2:]
    if name == "vecmat":  # the matrix is (n, m): its rows' axis is the one summed
        rows, cols, row_step, col_step = cols, rows, col_step, row_step
    readable = layout.blas_readable(row_step, col_step, cols) or layout.blas_readable(col_step, row_step, rows)
    return readable and core_strides(vector)[-1] >= 1 and rows > 1 and cols > 1


def linalg_vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    """NumPy's np.linalg.vector_norm: several axes moved first and flattened into one, then norm."""
    t = _tensor(x)
    shape = list(t.shape)
    if axis is None:
        flat, along = ravel(t), 0
    elif isinstance(axis, tuple):
        axes = np.lib.array_utils.normalize_axis_tuple(axis, t.ndim)
        rest = tuple(i for i in range(t.ndim) if i not in axes)
        moved = transpose(t, axes + rest)
        flat = moved.reshape((int(np.prod([t.shape[i] for i in axes], dtype=int)), *[t.shape[i] for i in rest]))
        along = 0
    else:
        flat, along = t, axis
    result = linalg_norm(flat, axis=along, ord=ord)
    if keepdims:
        axes = range(t.ndim) if axis is None else np.lib.array_utils.normalize_axis_tuple(axis, t.ndim)
        for i in axes:
            shape[i] = 1
        result = result.reshape(tuple(shape))
    return result


def linalg_matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return linalg_norm(x, axis=(-2, -1), keepdims=keepdims, ord=ord)


def linalg_vecdot(x1, x2, /, *, axis=-1):
    a, b = _tensor(x1), _tensor(x2)
    return _vector_gufunc("vecdot", moveaxis(a, axis, -1) if a.ndim else a, moveaxis(b, axis, -1) if b.ndim else b)


def linalg_outer(x1, x2, /):
    a, b = _tensor(x1), _tensor(x2)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={a.ndim} and x2.ndim={b.ndim}.")
    return outer(a, b)


# NumPy's NaN-ignoring reductions (numpy/lib/_nanfunctions_impl.py): a float array's NaNs replaced by
# the reduction's identity (its _replace_nan), integers and bools reduced as they are


def _given(**kwargs) -> dict:
    """The keyword arguments the caller gave (NumPy's functions leave np._NoValue ones out)."""
    return {k: v for k, v in kwargs.items() if v is not np._NoValue}


def _nan_replaced(a, value):
    x = _tensor(a)
    if x.dtype.kind != "f":
        return (Tensor(x.node) if x.numpy_scalar else x), None  # NumPy's asanyarray: a 0-d array
    mask = np.isnan(x)
    # NumPy writes the value into a copy of a where a is NaN: the copy's layout ('K', after a), which sums follow
    replaced = np.where(mask, np.asarray(value, x.dtype), x)
    return Tensor(P.laid_out_as(replaced.node, x.copy(order="K").node)), mask


def _inexact_dtype(dtype):
    if dtype is not None and np.dtype(dtype).kind != "f":
        raise TypeError("If a is inexact, then dtype must be inexact")


def nansum(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, initial=np._NoValue, where=np._NoValue):
    return sum_(_nan_replaced(a, 0)[0], axis, dtype, out, **_given(keepdims=keepdims, initial=initial, where=where))


def nanprod(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, initial=np._NoValue, where=np._NoValue):
    return prod(_nan_replaced(a, 1)[0], axis, dtype, out, **_given(keepdims=keepdims, initial=initial, where=where))


def nancumsum(a, axis=None, dtype=None, out=None):
    return cumsum(_nan_replaced(a, 0)[0], axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    return cumprod(_nan_replaced(a, 1)[0], axis, dtype, out)


def _nan_extremum(kind: str, a, axis, out, keepdims, initial, where, what: str | None = None) -> Tensor:
    """What np.fmax.reduce (fmin) computes for an ndarray: NaNs skipped, a slice of nothing but NaNs
    NaN -- or ``initial``, where fmax starts. np.nanmax (``what`` None) warns of an all-NaN slice as
    well; the ufunc's own reduce does not."""
    x = _tensor(a)
    given = _given(keepdims=keepdims, initial=initial, where=where)
    if where is not np._NoValue and where is not True and initial is np._NoValue:  # (True: no mask, to NumPy)
        raise ValueError(f"reduction operation 'f{kind}' does not have an identity, so to use a where mask one has "
                         "to specify 'initial'")
    axes = P.normalize_axes(axis, x.ndim, what or f"np.nan{kind}", zero_d=True)
    if initial is np._NoValue and any(x.shape[i] == 0 for i in axes):
        raise ValueError(f"{what or f'np.nan{kind}'}: zero-size array to reduction operation f{kind} which has no "
                         "identity")
    reduce = amax if kind == "max" else amin
    if x.dtype.kind != "f":  # fmax's loop and maximum's are one for integers, into out= too
        return reduce(x, axis, out, **given)
    mask = np.isnan(x)
    identity = np.asarray(-np.inf if kind == "max" else np.inf, x.dtype)
    numbers = np.where(mask, identity, x)
    if initial is np._NoValue:
        result = reduce(numbers, axis, **given)
        all_nan = all_(mask, axis, keepdims=given.get("keepdims", False))
        result = Tensor(P.where(all_nan.node, const_node(np.asarray(np.nan, x.dtype)), result.node), scalar=True)
    elif np.isnan(initial):  # fmax(NaN, v) is v: a NaN start is skipped like the NaN elements
        result = reduce(numbers, axis, **{**given, "initial": identity})
        counted = ~mask if where is np._NoValue else ~mask & where
        nothing = ~any_(counted, axis, keepdims=given.get("keepdims", False))
        result = Tensor(P.where(nothing.node, const_node(np.asarray(np.nan, x.dtype)), result.node), scalar=True)
    else:
        result = reduce(numbers, axis, **given)
    if what is None:
        P.warn_at_run_time(np.isnan(result).node, RuntimeWarning, "All-NaN slice encountered")  # NumPy's, after fmax
    if out is None:
        return result
    ufunc = np.fmax if kind == "max" else np.fmin
    stand_in_given = {k: _stand_in(v) for k, v in given.items()}
    name = what[3:] if what else f"nan{kind}"
    return _into_reduction_out(name, _reduction_target(out, f"np.{name}"), lambda o: ufunc.reduce(
        _stand_in(x), axis=axis, out=o, **stand_in_given), result)


def nanmax(a, axis=None, out=None, keepdims=np._NoValue, initial=np._NoValue, where=np._NoValue):
    return _nan_extremum("max", a, axis, out, keepdims, initial, where)


def nanmin(a, axis=None, out=None, keepdims=np._NoValue, initial=np._NoValue, where=np._NoValue):
    return _nan_extremum("min", a, axis, out, keepdims, initial, where)


def _sorts_before(x: Tensor, y: Tensor) -> Tensor:
    """NumPy's sort order, NaNs last: x < y, or y is NaN and x is not."""
    if x.dtype.kind != "f":
        return x < y
    return (x < y) | (np.isnan(y) & ~np.isnan(x))


def _permuted_by_sorter(x: Tensor, sorter) -> Tensor:
    s = _tensor(sorter)
    if s.dtype.kind not in "iu":
        raise TypeError("sorter must only contain integers")
    if s.ndim != 1:
        raise TypeError("could not parse sorter argument")
    if s.size != x.size:
        raise ValueError("sorter.size must equal a.size")
    if not isinstance(sorter, Tensor) and ((np.asarray(sorter) < 0) | (np.asarray(sorter) >= x.size)).any():
        # NumPy raises this only for the entries its binary search happens to read
        raise ValueError("Sorter index out of range.")
    return take(x, s)  # a computed sorter out of range: the kernel's index check


def searchsorted(a, v, side="left", sorter=None):
    """Where v would go in the sorted 1-d ``a``: the first place whose element does not sort before v
    (side 'left') or sorts after it ('right'), in NumPy's order (NaNs last) and in the dtype NumPy compares
    in (``a``'s and v's as an array: a Python float against float16 compares in float64). A bisection of
    bit_length(len(a)) steps, as NumPy's binary search: for a sorted ``a`` exactly its answer."""
    if not isinstance(side, (str, bytes)):
        raise TypeError(f"search side must be str, not {type(side).__name__}")
    side = side.decode() if isinstance(side, bytes) else side
    if side not in ("left", "right"):
        raise ValueError(f"search side must be 'left' or 'right' (got {side!r})")
    x, values = _tensor(a), _tensor(v)
    if x.ndim != 1:
        raise ValueError("object of too small depth for desired array" if x.ndim == 0 else "object too deep for desired array")
    if sorter is not None:
        x = _permuted_by_sorter(x, sorter)
    common = np.result_type(x.dtype, values.dtype)
    x, probe = x.astype(common), values.astype(common)
    return _bisection(x, probe, side)


def _counted_places(x: Tensor, probe: Tensor, side: str) -> Tensor:
    """searchsorted's places by counting (the elements of the 1-d ``x`` that sort before each probe value,
    or not after it), which needs no sorted ``x``: len(x) x probe.size comparisons."""
    common = np.result_type(x.dtype, probe.dtype)
    x, probe = x.astype(common), probe.astype(common)[..., None]
    if side == "left":
        return sum_(_sorts_before(x, probe), axis=-1, dtype=np.intp)
    return x.shape[0] - sum_(_sorts_before(probe, x), axis=-1, dtype=np.intp)


def _bisection(x: Tensor, probe: Tensor, side: str) -> Tensor:
    """For each probe value, the first place in the sorted 1-d ``x`` whose element does not sort before it
    ('left') or sorts after it ('right'): [lo, hi) halves bit_length(n) times, each step gathering the
    midpoint's element (in range: the midpoint is clipped, and the bounds move only while lo < hi)."""
    n = x.shape[0]
    lo = Tensor(const_node(np.zeros(probe.shape, np.intp)), scalar=True)
    if n == 0:
        return lo
    hi = Tensor(const_node(np.full(probe.shape, n, np.intp)))
    for _ in range(n.bit_length()):
        mid = (lo + hi) // 2
        element = Tensor(P.gather_in_range(x.node, np.minimum(mid, n - 1).node, 0))
        right = _sorts_before(element, probe) if side == "left" else ~_sorts_before(probe, element)
        open_ = lo < hi
        lo, hi = np.where(open_ & right, mid + 1, lo), np.where(open_ & ~right, mid, hi)
    return Tensor(lo.node, scalar=True)


def digitize(x, bins, right=False):
    """NumPy's definition: searchsorted on the bins, reversed when they decrease. The bins must be a
    constant: NumPy refuses bins that are not monotonic, which depends on their values."""
    if isinstance(bins, Tensor):
        raise NotImplementedError("np.digitize: traced bins are not supported (NumPy checks that they are monotonic, "
                                  "which depends on their values); pass the bins as a NumPy array, or use np.searchsorted")
    bins = np.asarray(bins)
    mono = np.lib._function_base_impl._monotonicity(bins)  # NumPy's own check (it raises for bins not 1-d)
    if mono == 0:
        raise ValueError("bins must be monotonically increasing or decreasing")
    side = "left" if right else "right"
    if mono == -1:
        return len(bins) - searchsorted(bins[::-1], x, side=side)
    return searchsorted(bins, x, side=side)


def _interp_samples(v) -> Tensor:
    t = _tensor(v).astype(np.float64)
    if t.ndim != 1:
        raise ValueError("object of too small depth for desired array" if t.ndim == 0 else "object too deep for desired array")
    return t


def _interp_bound(v) -> Tensor:
    """``left``/``right`` as NumPy's C code reads them (PyFloat_AsDouble): a real number or a 0-d array."""
    if isinstance(v, Tensor):
        if v.ndim:
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        return v.astype(np.float64)
    if isinstance(v, (str, bytes)):
        raise TypeError(f"must be real number, not {type(v).__name__}")
    return _tensor(np.float64(float(v)))


def _periodic_samples(x, xp, fp, period):
    """NumPy's np.interp for a period: everything taken modulo the period, the sample points sorted and
    extended by one period's wrap-around at each end. (Equal points modulo the period keep their order
    here; NumPy's default argsort need not.)"""
    if isinstance(period, Tensor):
        raise NotImplementedError("np.interp: a traced period is not supported (NumPy refuses a zero one, which "
                                  "depends on its value); pass a number")
    if period == 0:
        raise ValueError("period must be a non-zero value")
    period = abs(period)
    x, xp, fp = (_tensor(v).astype(np.float64) for v in (x, xp, fp))
    if xp.ndim != 1 or fp.ndim != 1:
        raise ValueError("Data points must be 1-D sequences")
    if xp.shape[0] != fp.shape[0]:
        raise ValueError("fp and xp are not of the same length")
    x, xp = x % period, xp % period
    order = argsort(xp, kind="stable")
    xp, fp = (Tensor(P.gather_in_range(t.node, order.node, 0)) for t in (xp, fp))  # a permutation: in range
    return x, concatenate((xp[-1:] - period, xp, xp[0:1] + period)), concatenate((fp[-1:], fp, fp[0:1]))


def interp(x, xp, fp, left=None, right=None, period=None):
    """NumPy's compiled_interp, in float64: x's sample interval is the last ``xp[j] <= x`` (what its search
    finds in a sorted xp), then slope * (x - xp[j]) + fp[j] with the slope computed as NumPy computes it,
    the retry from the interval's other end where that gives NaN, fp[j] where x is a sample point, fp[-1]
    at the last one, ``left``/``right`` outside, NaN for a NaN x (and NumPy's rules for one sample point)."""
    if period is not None:
        x, xp, fp = _periodic_samples(x, xp, fp, period)
        left = right = None
    ys, xs = _interp_samples(fp), _interp_samples(xp)
    points = _tensor(x).astype(np.float64)
    n = xs.shape[0]
    if n == 0:
        raise ValueError("array of sample points is empty")
    if ys.shape[0] != n:
        raise ValueError("fp and xp are not of the same length.")
    lval = ys[0] if left is None else _interp_bound(left)
    rval = ys[-1] if right is None else _interp_bound(right)
    if n == 1:
        result = np.where(points < xs[0], lval, np.where(points > xs[0], rval, ys[0]))
        return Tensor(result.node, scalar=True)
    j = _bisection(xs, points, "right") - 1  # the last sample point at or below x (NumPy's search)
    lo = np.clip(j, 0, n - 2)
    x_lo, x_hi, y_lo, y_hi = (Tensor(P.gather_in_range(t.node, i.node, 0)) for t in (xs, ys) for i in (lo, lo + 1))
    slope = (y_hi - y_lo) / (x_hi - x_lo)
    result = slope * (points - x_lo) + y_lo
    result = np.where(np.isnan(result), slope * (points - x_hi) + y_hi, result)
    result = np.where(np.isnan(result) & (y_lo == y_hi), y_lo, result)
    # NumPy's cases in reverse order of precedence, each overriding the ones before
    result = np.where(x_lo == points, y_lo, result)
    result = np.where(j == n - 1, ys[n - 1], result)
    result = np.where(points < xs[0], lval, result)
    result = np.where(points > xs[n - 1], rval, result)
    result = np.where(np.isnan(points), points, result)
    return Tensor(result.node, scalar=True)


def histogram(a, bins=10, range=None, density=None, weights=None, *, _edges_only=False):
    """np.histogram with edges known at trace time: ``bins`` an array of edges, or a count with ``range=``.
    The edges (and NumPy's checks of them) are NumPy's own, from its _get_bin_edges; each bin counts the
    elements NumPy puts there: equal bins by its range test in the array's dtype and the bin's edges in
    the edges' dtype (the last bin closed), given edges by NumPy's sorted-search counts. With ``weights``,
    each bin holds its weights' total as NumPy computes it (see _bin_totals)."""
    if isinstance(bins, Tensor) or isinstance(range, Tensor) or _holds_tensor([range] if range is not None else []):
        raise NotImplementedError("np.histogram: traced bins or range are not supported (they decide the edges, "
                                  "which NumPy checks); pass constants")
    x = _tensor(a)
    if x.dtype == np.bool_:
        warnings.warn("Converting input from bool to <class 'numpy.uint8'> for compatibility.", RuntimeWarning,
                      stacklevel=3)
        x = x.astype(np.uint8)
    w = None if weights is None else _tensor(weights)
    if w is not None and w.shape != x.shape:
        raise ValueError("weights should have the same shape as a.")
    x, w = ravel(x), None if w is None else ravel(w)
    if not isinstance(bins, str) and np.ndim(bins) == 0 and range is None:
        np.histogram(np.zeros(0), bins)  # NumPy's errors for a count that is not one
        if x.size:
            return _histogram_of_data_range(x, w, operator.index(bins), density, _edges_only)
    if isinstance(bins, str):
        raise NotImplementedError(f"np.histogram: bins={bins!r} estimates the bins from the data, which decides their "
                                  "number; pass a count and range=, or an array of edges")
    # NumPy's own edges and checks, on a stand-in of the array's dtype and size (only those are read)
    edges, uniform = np.lib._histograms_impl._get_bin_edges(np.broadcast_to(np.zeros((), x.dtype), x.shape), bins,
                                                           range, None)
    kept = None
    if uniform is not None:
        first, last, _ = uniform
        kept = (x >= first) & (x <= last)
    return _histogram_result(_bin_totals(x, w, kept, _tensor(edges)), Tensor(const_node(edges)), density)


def _bin_totals(x: Tensor, w: Tensor | None, kept, edges: Tensor) -> Tensor:
    """Each bin's count (intp), or its weights' total in the weights' dtype, by NumPy's two algorithms.
    Equal bins (``kept``: the elements in range, True for all) with weights a double can hold: np.bincount's
    float64 sums in the data's order. Otherwise NumPy's cumulative histogram: the weights sorted by value,
    their running sums (np.cumsum's type), read at the edges' sorted-search places and differenced (where
    values tie, NumPy's unstable argsort may sum them in another order: equal within rounding). NumPy works
    in blocks of 65,536 elements, so beyond that its float totals are rounded per block."""
    simple = w is None or np.can_cast(w.dtype, np.double) or np.can_cast(w.dtype, complex)
    if kept is not None and simple:
        return _equal_bin_totals(x, kept, edges, w)
    places = concatenate([_counted_places(x, edges[:-1], "left"), _counted_places(x, edges[-1:], "right")])
    if w is None:
        return np.diff(places)
    running = cumsum(take(w, argsort(x, kind="stable")))
    prefix = concatenate([Tensor(const_node(np.zeros(1, w.dtype))), running])
    if x.size:  # NumPy's cum_n += cw[...], once per block of data: its error where that cast is not same_kind
        stand_in = np.zeros(1, w.dtype)
        stand_in += np.zeros(1, prefix.dtype)
    at_edges = Tensor(P.gather_in_range(prefix.node, places.node, 0))
    return np.diff((Tensor(const_node(np.zeros(places.shape, w.dtype))) + at_edges).astype(w.dtype))


def _equal_bin_totals(x: Tensor, kept, edges: Tensor, w: Tensor | None) -> Tensor:
    """NumPy's equal-bin path: each kept element in the bin whose edges (in the edges' dtype) hold it, the
    last bin closed (its index arithmetic, corrected against the edges, lands there)."""
    values = x.astype(edges.dtype)[None, :]
    upper = concatenate([values < edges[1:-1, None], values <= edges[-1:, None]])
    inside = (values >= edges[:-1, None]) & upper
    inside = inside if kept is True else kept[None, :] & inside
    if w is None:
        return sum_(inside, axis=1, dtype=np.intp)
    weighted = where(inside, w.astype(np.float64)[None, :], 0.0)
    # NumPy's loop: n = zeros(w.dtype); n += np.bincount(block's bins, block's weights).astype(w.dtype) per block
    totals = None
    for i in range(0, weighted.shape[1], HISTOGRAM_BLOCK):
        block = _bincount_sums(weighted[:, i:i + HISTOGRAM_BLOCK]).astype(w.dtype)
        totals = block if totals is None else totals + block
    return Tensor(const_node(np.zeros(weighted.shape[0], w.dtype))) if totals is None else totals


HISTOGRAM_BLOCK = 65536  # np.histogram's BLOCK: it bins the data, and sums the weights, a block at a time


def _bincount_sums(weighted: Tensor) -> Tensor:
    """Each row's float64 sum as np.bincount's weighted loop makes it: from 0.0, adding each element in turn
    (the last of a running sum: np.cumsum adds in turn too; + 0.0 for bincount's start, so that a row of -0.0
    sums to +0.0). An element outside the bin is 0.0 there, which changes no sum but a -0.0."""
    if weighted.shape[1] == 0:
        return Tensor(const_node(np.zeros(weighted.shape[0], np.float64)))
    return cumsum(weighted, axis=1)[:, -1] + 0.0


def _histogram_result(counts: Tensor, edges: Tensor, density):
    if density:
        widths = np.diff(edges).astype(float)
        return counts / widths / sum_(counts), edges
    return counts, edges


def _data_range(x: Tensor, what: str) -> tuple[Tensor, Tensor, np.dtype]:
    """NumPy's _get_outer_edges of the data: its min and max (in NumPy's bin type: float64 for integers and
    bools), widened by one half when equal; a range that is not finite is NumPy's ValueError, checked as the
    kernel runs."""
    first, last = amin(x), amax(x)
    kind = np.result_type(x.dtype, float) if x.dtype.kind in "iub" else x.dtype
    _raise_at_run_time(~(np.isfinite(first) & np.isfinite(last)), "autodetected range of the data is not finite", what)
    same = first == last
    lo = np.where(same, first.astype(kind) - 0.5, first.astype(kind)).astype(kind)
    hi = np.where(same, last.astype(kind) + 0.5, last.astype(kind)).astype(kind)
    return Tensor(lo.node, scalar=True), Tensor(hi.node, scalar=True), kind


def _histogram_of_data_range(x: Tensor, w: Tensor | None, count: int, density, edges_only: bool = False):
    """bins as a count, the range the data's: the edges are computed in the kernel by np.linspace's steps,
    and NumPy's data-dependent errors (a range that is not finite, too many bins for it) are checked as the
    kernel runs. (A float16 range wider than float16 holds makes linspace's first edge NaN: for one bin,
    np.histogram then indexes its edges with that NaN converted to np.intp, where np.histogram_bin_edges
    returns them.)"""
    lo, hi, kind = _data_range(x, "np.histogram")
    edges = linspace(lo, hi, count + 1, dtype=kind)
    _raise_at_run_time(np.any(edges[:-1] >= edges[1:]),
                       f"Too many bins for data range. Cannot create {count} finite-sized bins.", "np.histogram")
    if count == 1 and not edges_only:
        _raise_at_run_time(np.isnan(edges[0]), f"index {np.iinfo(np.intp).min} is out of bounds for axis 0 with "
                           "size 2", "np.histogram", IndexError)
    return _histogram_result(_bin_totals(x, w, True, edges), edges, density)


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """NumPy's np.histogramdd: per dimension the edges (a count over the given range or the data's, the
    edges then np.linspace's, computed in the kernel for the data's; or an array of edges, checked as NumPy
    checks them), each sample's bin by NumPy's searchsorted(edges, v, 'right') with the last edge closed,
    outliers dropped; each bin's count, or its weights' float64 sum in the samples' order (np.bincount's),
    as float64. NumPy's argument checks are its own, on stand-ins."""
    if isinstance(bins, Tensor) or _holds_tensor([bins]) or (range is not None and _holds_tensor(list(range))):
        raise NotImplementedError("np.histogramdd: traced bins or range are not supported (they decide the edges)")
    if hasattr(sample, "shape") and np.ndim(sample) > 2:  # NumPy's (N, D) = atleast_2d(sample).T.shape fails
        raise ValueError(f"np.histogramdd of a {np.ndim(sample)}-d array: it takes an (N, D) array of N points "
                         "or a sequence of D coordinate arrays (too many values to unpack)")
    if hasattr(sample, "shape") and np.ndim(sample) == 2:  # an (N, D) array; anything else: D arrays of N
        points = _tensor(sample)
        columns = [points[:, i] for i in builtins.range(points.shape[1])]
    elif hasattr(sample, "shape"):  # a 0-d or 1-d array: points of one dimension
        columns = [ravel(_tensor(sample))]
    else:  # NumPy stacks them into one array (its own error for ragged ones), of their common dtype
        stacked = np.array([np.zeros(np.shape(c)) for c in sample]).shape
        if len(stacked) > 2:
            raise ValueError(f"np.histogramdd of {stacked[0]} coordinate arrays of {len(stacked) - 1} dimensions: "
                             "each must be 1-d (too many values to unpack)")
        # D scalars are one dimension's D points (NumPy's atleast_2d(sample).T), else D arrays of N
        columns = [stack(list(sample))] if len(stacked) == 1 else [_tensor(c) for c in sample]
        common = np.result_type(*[np.empty(0, c.dtype) for c in columns]) if columns else np.dtype(np.float64)
        columns = [c.astype(common) for c in columns]
    count = len(columns)
    stand_in = np.zeros((columns[0].shape[0] if columns else 0, count))
    np.histogramdd(stand_in, bins, range, weights=None if weights is None else np.zeros(np.shape(weights)))
    try:  # NumPy's reading of bins: one per dimension, or one for all
        bins = list(bins) if len(bins) == count else bins
    except TypeError:
        bins = [bins] * count
    ranges = [None] * count if range is None else list(range)
    w = None if weights is None else _tensor(weights).astype(np.float64)
    edges, sizes = [], []
    for column, b, r in zip(columns, bins, ranges):
        if np.ndim(b) == 0:
            if r is None and column.size:
                lo, hi, _ = _data_range(column, "np.histogramdd")
                e = linspace(lo, hi, operator.index(b) + 1)
            else:
                lo, hi = np.lib._histograms_impl._get_outer_edges(np.zeros(0, column.dtype) if r is None else
                                                                  np.zeros(1, column.dtype), r)
                e = _tensor(np.linspace(lo, hi, operator.index(b) + 1))
        else:
            e = _tensor(np.asarray(b))
        edges.append(e)
        sizes.append(e.shape[0] - 1)
    # each sample's core bin per dimension (0 .. n-1; outliers -1 or n), combined into one flat index: NumPy's
    # searchsorted(edges, v, 'right'), less one on the last edge. Its binary search is also NumPy's answer
    # for edges that are not sorted: float16 data whose range overflows float16 gives np.linspace's
    # [nan, inf, .., max], where the maximum lands before the first bin and NumPy's ravel_multi_index raises
    flat, outside, invalid = None, None, None
    for column, e, n in zip(columns, edges, sizes):
        common = np.result_type(column.dtype, e.dtype)
        v, ee = column.astype(common), e.astype(common)
        found = _bisection(ee, v, "right") - (v == ee[-1]).astype(np.intp)
        invalid = found < 0 if invalid is None else invalid | (found < 0)
        place = found - 1
        out = (place < 0) | (place >= n)
        outside = out if outside is None else outside | out
        flat = place if flat is None else flat * n + place
    if invalid is not None and invalid.size:
        _raise_at_run_time(any_(invalid), "invalid entry in coordinates array", "np.histogramdd")
    total = int(np.prod(sizes, dtype=np.int64))
    bin_ids = np.arange(total, dtype=np.intp)[:, None]
    hit = (flat[None, :] == bin_ids) & ~outside[None, :]
    if w is None:
        hist = sum_(hit, axis=1, dtype=np.intp).astype(np.float64)
    else:
        hist = _bincount_sums(where(hit, w[None, :], 0.0))
    # NumPy counts into an array with an outlier bin at each end of every axis and returns the view of its
    # core, whose strides (``layout``) skip the outlier bins; the padding's zeros are never read
    hist = np.pad(reshape(hist, tuple(sizes)), 1)[(slice(1, -1),) * count]
    if density:
        s = sum_(hist)
        for i, e in enumerate(edges):
            shape = [1] * count
            shape[i] = sizes[i]
            hist = hist / reshape(np.diff(e).astype(np.float64) if e.dtype.kind != "f" else np.diff(e), shape)
        hist = hist / s
    return hist, edges


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """NumPy's np.cov restated on traced arrays: rows (or columns) centred on their (weighted) average,
    the product with their transpose (a matmul) scaled by 1 / (degrees of freedom). The weights must be
    constants (NumPy checks their values); the checks and the normalization are NumPy's own."""
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    if isinstance(fweights, Tensor) or isinstance(aweights, Tensor):
        raise NotImplementedError("np.cov: traced fweights/aweights are not supported (NumPy checks their values: "
                                  "integers, not negative); pass constants")
    x = _tensor(m)
    if x.ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    other = None if y is None else _tensor(y)
    if other is not None and other.ndim > 2:
        raise ValueError("y has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(x.dtype, np.float64) if other is None else np.result_type(x.dtype, other.dtype, np.float64)
    rows = atleast_2d(x.astype(dtype))
    if not rowvar and x.ndim != 1:
        rows = rows.T
    if rows.shape[0] == 0:
        return Tensor(const_node(np.array([]).reshape(0, 0)))
    if other is not None:
        more = atleast_2d(other.astype(dtype))
        if not rowvar and more.shape[0] != 1:
            more = more.T
        rows = concatenate((rows, more), axis=0)
    if ddof is None:
        ddof = 1 if bias == 0 else 0
    w = None
    if fweights is not None or aweights is not None:
        # NumPy's own checks of the weights, on stand-in data of the same shape
        np.cov(np.zeros(rows.shape), fweights=fweights, aweights=aweights)
        w = np.asarray(fweights, dtype=float) if fweights is not None else None
        if aweights is not None:
            w = np.asarray(aweights, dtype=float) if w is None else w * np.asarray(aweights, dtype=float)
    avg = average(rows, axis=1, weights=w)
    if w is None:
        fact = rows.shape[1] - ddof
    else:
        w_sum = w.sum(dtype=np.result_type(rows.dtype, w.dtype))
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = w_sum - ddof
        else:
            fact = w_sum - ddof * sum(w * np.asarray(aweights, dtype=float)) / w_sum  # Python's sum, as NumPy's
    if fact <= 0:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=3)
        fact = 0.0
    centred = Tensor(rows.node)
    centred -= avg[:, None]
    c = dot(centred, (centred if w is None else centred * w).T)
    with np.errstate(divide="ignore"):
        c *= np.true_divide(1, fact)
    return c.squeeze()


def corrcoef(x, y=None, rowvar=True, bias=np._NoValue, ddof=np._NoValue, *, dtype=None):
    """NumPy's np.corrcoef: the covariance over the outer product of the standard deviations, clipped
    to [-1, 1]."""
    if bias is not np._NoValue or ddof is not np._NoValue:
        warnings.warn("bias and ddof have no effect and are deprecated", DeprecationWarning, stacklevel=3)
    c = cov(x, y, rowvar, dtype=dtype)
    if c.ndim == 0:
        return c / c  # NaN for a variance that is NaN, infinite or 0, else 1
    deviation = np.sqrt(diag(c))
    c = Tensor(c.node)
    c /= deviation[:, None]
    c /= deviation[None, :]
    return np.clip(c, -1, 1)


def lexsort(keys, axis=-1):
    """NumPy's np.lexsort as stable sorts from the first key to the last (the primary): each sort keeps the
    order the previous ones made among its ties, so the result is NumPy's order exactly."""
    if isinstance(keys, Tensor):
        if keys.ndim == 0:
            raise TypeError("need sequence of keys with len > 0 in lexsort")
        keys = [keys[i] for i in range(keys.shape[0])]
    keys = [_tensor(k) for k in keys]
    if not keys:
        raise TypeError("need sequence of keys with len > 0 in lexsort")
    if any(k.shape != keys[0].shape for k in keys):
        raise ValueError("all keys need to be the same shape")
    axis = operator.index(axis)  # (NumPy's C int argument: a bool is one to it)
    if keys[0].ndim == 0:  # NumPy's answer for 0-d keys, its axis read as of one dimension
        np.lib.array_utils.normalize_axis_index(axis, 1)
        return Tensor(const_node(np.zeros((), np.intp)), scalar=True)
    axis = np.lib.array_utils.normalize_axis_index(axis, keys[0].ndim)
    order = argsort(keys[0], axis, kind="stable")
    for key in keys[1:]:
        order = take_along_axis(order, argsort(take_along_axis(key, order, axis), axis, kind="stable"), axis)
    return order


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *, device=None):
    """NumPy's np.linspace on traced endpoints, step for step: the ramp 0..num-1 times (stop - start) / div
    (or divided by div, then times the difference, where a step is 0), plus start, the last sample set to
    stop, computed in NumPy's type for the endpoints; NumPy answers the type, shape and errors itself."""
    shaped = np.linspace(_stand_in(start), _stand_in(stop), num, endpoint, False, dtype, axis, device=device)
    calc = np.linspace(_stand_in(start), _stand_in(stop), 0).dtype  # the endpoints' inexact type
    num = operator.index(num)
    div = (num - 1) if endpoint else num
    # NumPy's _array_converter keeps a Python scalar endpoint as it is (weak) beside an array
    python = [type(v) in (int, float) for v in (start, stop)]
    start, stop = (v if weak and not all(python) else _tensor(v) for v, weak in zip((start, stop), python))
    hi = _tensor(stop).astype(calc)
    # in the endpoints' memory as they lie (np.subtract's dtype= loop), not a converted copy's
    delta = np.subtract(stop, start, dtype=calc)
    ramp = np.arange(0, num, dtype=calc).reshape((-1,) + (1,) * delta.ndim)
    if div > 0:
        step = delta / div
        samples = np.where(np.any(step == 0), ramp / div * delta, ramp * step)  # NumPy's care for subnormal steps
    else:
        step = np.nan
        samples = ramp * delta
    # NumPy adds start and sets the last sample in place: the samples keep the memory y * step was given
    samples = Tensor(P.laid_out_as((samples + start).astype(calc).node, samples.node))
    if endpoint and num > 1:
        ended = concatenate([samples[:-1], np.broadcast_to(hi, samples.shape[1:])[None]])
        samples = Tensor(P.laid_out_as(ended.node, samples.node))
    if axis != 0:
        samples = np.moveaxis(samples, 0, axis)
    if np.issubdtype(shaped.dtype, np.integer):
        samples = np.floor(samples)
    samples = Tensor(samples.astype(shaped.dtype).node)
    assert samples.shape == shaped.shape, (samples.shape, shaped.shape)
    return (samples, step) if retstep else samples


def _nan_arg_extremum(kind: str, a, axis, out, keepdims) -> Tensor:
    """NumPy's nanargmax (nanargmin): argmax with NaNs read as -inf (+inf). A slice of nothing but NaNs
    is NumPy's ValueError, which only the data can tell: the kernel checks for one as it runs, and the
    call raises NumPy's error (its results discarded). Into ``out=``: NumPy checks the NaN slices first, then
    writes argmax's answer into out."""
    x, mask = _nan_replaced(a, -np.inf if kind == "max" else np.inf)
    given = _given(keepdims=keepdims)
    # (NumPy's np.all of the mask comes first: its errors for the axis before argmax's)
    all_nan = all_(mask, axis, keepdims=given.get("keepdims", False)) if mask is not None and mask.size else None
    result = (argmax if kind == "max" else argmin)(x, axis, **given)
    if all_nan is not None:
        result = _no_all_nan_slice(kind, result, all_nan)
    if out is None:
        return result
    target = _reduction_target(out, f"np.nanarg{kind}")
    check = lambda o: getattr(np, f"arg{kind}")(_stand_in(x), axis, o, **given)  # noqa: E731
    return _into_reduction_out(f"nanarg{kind}", target, check, result)


def _no_all_nan_slice(kind: str, result: Tensor, all_nan: Tensor) -> Tensor:
    """``result`` with the kernel's check that no slice is all NaN (NumPy's ValueError)."""
    line = P.user_location().short()
    checked = P.check_at_run_time(result.node, all_nan.node, "first", ValueError,
                                  lambda _: f"All-NaN slice encountered (np.nanarg{kind} at {line}, checked as the "
                                            "kernel ran)")
    if checked is None:
        raise NotImplementedError(f"np.nanarg{kind} outside a traced function: its all-NaN check needs a kernel")
    return Tensor(checked, scalar=True)


def nanargmax(a, axis=None, out=None, *, keepdims=np._NoValue):
    return _nan_arg_extremum("max", a, axis, out, keepdims)


def nanargmin(a, axis=None, out=None, *, keepdims=np._NoValue):
    return _nan_arg_extremum("min", a, axis, out, keepdims)


def _divided_by_count(total: Tensor, count: Tensor) -> P.Node:
    """NumPy's _divide_by_count: ``divide(total, count, out=total, casting='unsafe')`` (in total's memory)."""
    return P.laid_out_as(P.cast(P.elementwise("divide", [total.node, _operand(count)]), total.dtype), total.node)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=np._NoValue, *, where=np._NoValue):
    """The sum of the non-NaN elements (in ``dtype``) over their count (an empty count gives NaN)."""
    x, mask = _nan_replaced(a, 0)
    given = _given(keepdims=keepdims, where=where)
    if mask is None:
        return mean(x, axis, dtype, out, **given)
    _inexact_dtype(dtype)
    count = sum_(~mask, axis, np.intp, **given)
    P.warn_at_run_time((count == 0).node, RuntimeWarning, "Mean of empty slice")
    if out is not None:  # NumPy's order: the sum into out, then divide(out, count, out=out, casting='unsafe')
        total = sum_(x, axis, dtype, out, **given)
        return np.divide(total, count, out=total, casting="unsafe")
    return Tensor(_divided_by_count(sum_(x, axis, dtype, **given), count), scalar=True)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=np._NoValue, *, where=np._NoValue,
           mean=np._NoValue, correction=np._NoValue):
    """NumPy's nanvar: the mean of the non-NaN elements (keepdims), the deviations stored in the array's
    own dtype (its ``subtract(out=arr, casting='unsafe')``) with NaNs' set to 0, squared, summed, divided
    by count - ddof; NaN where that is <= 0 (np.var gives inf or NaN there)."""
    x, mask = _nan_replaced(a, 0)
    if mask is None:
        return var(x, axis, dtype, out, ddof, **_given(keepdims=keepdims, where=where, mean=mean, correction=correction))
    _inexact_dtype(dtype)
    if correction is not np._NoValue:
        if ddof != 0:
            raise ValueError("ddof and correction can't be provided simultaneously.")
        ddof = correction
    masked = _given(where=where)
    if mean is np._NoValue:
        centre = _divided_by_count(sum_(x, axis, dtype, keepdims=True, **masked),
                                   sum_(~mask, axis, np.intp, keepdims=True, **masked))
    else:
        centre = _operand(mean)
    deviation = P.cast(P.elementwise("subtract", [x.node, centre]), x.dtype)
    deviation = Tensor(P.where(mask.node, const_node(np.zeros((), x.dtype)), deviation))
    # (NumPy subtracts, zeroes the NaNs' places and squares in arr's own memory: its layout, which the sum follows)
    squares = P.laid_out_as((deviation * deviation).node, x.node)
    keep = _given(keepdims=keepdims)
    total = sum_(Tensor(squares), axis, dtype, out, **keep, **masked)  # an array, as NumPy's
    dof = sum_(~mask, axis, np.intp, **keep, **masked) - ddof
    P.warn_at_run_time((dof <= 0).node, RuntimeWarning, "Degrees of freedom <= 0 for slice.")
    if out is not None:  # NumPy's: divide in place into out, then _copyto(out, nan, dof <= 0) 'unsafe'
        np.divide(total, dof, out=total, casting="unsafe")
        np.copyto(total, np.nan, where=dof <= 0, casting="unsafe")
        return total
    quotient = _divided_by_count(total, dof)  # (NaN copied into its memory where dof <= 0: its layout)
    return Tensor(P.laid_out_as(P.where((dof <= 0).node, const_node(np.asarray(np.nan, total.dtype)), quotient),
                                quotient), scalar=True)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=np._NoValue, *, where=np._NoValue,
           mean=np._NoValue, correction=np._NoValue):
    given = _given(keepdims=keepdims, where=where, mean=mean, correction=correction)
    if _tensor(a).dtype.kind != "f":  # np.var of an array without NaNs, then sqrt as np.std takes it
        return std(a, axis, dtype, out, ddof, **given)
    v = nanvar(a, axis, dtype, out, ddof, **given)
    if out is not None:
        return np.sqrt(v, out=v)  # NumPy's sqrt(var, out=var)
    return Tensor(P.cast(P.elementwise("sqrt", [v.node]), v.dtype), scalar=True)


def shape(a):
    return _node(a).shape


def ndim(a):
    return _node(a).ndim


def size(a, axis=None):
    x = _node(a)
    return x.size if axis is None else x.shape[axis]


def packbits(a, /, axis=None, bitorder="big"):
    """np.packbits: each group of 8 elements along the axis (zero-padded at the end; the array raveled for
    axis None) one uint8, nonzero elements its one bits, the first element the high bit ('big') or the low
    one ('little'). NumPy's own call on a stand-in checks the dtype, axis and bitorder."""
    x = _tensor(a)
    expected = np.packbits(np.zeros(x.shape, x.dtype), axis=axis, bitorder=bitorder)
    big = np.packbits(np.ones(1, np.uint8), bitorder=bitorder)[0] == 128  # as NumPy reads the bitorder
    if axis is None or x.ndim == 0:
        x, axis = ravel(x), 0
    axis = np.lib.array_utils.normalize_axis_index(axis, x.ndim)
    bits = np.moveaxis((x != 0).astype(np.uint8), axis, -1)
    n = bits.shape[-1]
    pad_to = n + -n % 8
    bits = np.pad(bits, [(0, 0)] * (bits.ndim - 1) + [(0, pad_to - n)])
    groups = reshape(bits, bits.shape[:-1] + (pad_to // 8, 8))
    weights = (2 ** np.arange(7, -1, -1) if big else 2 ** np.arange(8)).astype(np.uint8)
    packed = sum_(groups * weights, axis=-1, dtype=np.uint8)  # distinct bits: the sum is their OR
    result = _fresh(np.moveaxis(packed, -1, axis))
    assert result.shape == expected.shape, (result.shape, expected.shape)
    return result


def unpackbits(a, /, axis=None, count=None, bitorder="big"):
    """np.unpackbits: each uint8 along the axis as its 8 bits (0 or 1), high bit first ('big') or low bit
    first ('little'), the axis then cut or zero-padded to ``count`` (a negative one drops that many). NumPy's
    own call on a stand-in checks the dtype, axis, count and bitorder and gives the result's shape."""
    x = _tensor(a)
    expected = np.unpackbits(np.zeros(x.shape, x.dtype), axis=axis, count=count, bitorder=bitorder)
    big = np.unpackbits(np.ones(1, np.uint8), bitorder=bitorder)[-1] == 1
    if axis is None or x.ndim == 0:
        x, axis = ravel(x), 0
    axis = np.lib.array_utils.normalize_axis_index(axis, x.ndim)
    moved = np.moveaxis(x, axis, -1)
    shifts = (np.arange(7, -1, -1) if big else np.arange(8)).astype(np.uint8)
    bits = (moved[..., None] >> shifts) & np.uint8(1)
    bits = reshape(bits, moved.shape[:-1] + (moved.shape[-1] * 8,))
    length = expected.shape[axis]
    bits = np.pad(bits[..., :length], [(0, 0)] * (bits.ndim - 1) + [(0, max(0, length - bits.shape[-1]))])
    result = _fresh(np.moveaxis(bits, -1, axis))
    assert result.shape == expected.shape, (result.shape, expected.shape)
    return result


# --------------------------------------------------------------------------- small functions

# NumPy functions whose own Python code needs nothing but what the compiler traces (ufuncs, supported
# functions, shapes and dtypes): that code itself runs on the traced arrays, so it is NumPy's definition
# exactly, not a restatement. (Functions that call np.asarray on their argument cannot be among them.)
_NUMPYS_OWN = (np.fix, np.isposinf, np.isneginf, np.logspace, np.rollaxis, np.polyadd, np.polysub,
               np.diag_indices_from, np.tril_indices_from, np.triu_indices_from, np.common_type)


def angle(z, deg=False):
    """np.angle of a real array: arctan2(0, z) (0 or pi by z's sign bit), in degrees by NumPy's factor."""
    a = np.arctan2(0, _tensor(z))  # a Python 0: the array's float type, float16 for int8 as in NumPy
    return a * (180 / np.pi) if deg else a


def real_if_close(a, tol=100):
    """A real array is returned as it is (NumPy returns the same object)."""
    return _tensor(a)


def diagflat(v, k=0):
    """The flattened input on the k-th diagonal of a square of zeros (np.diag of it raveled)."""
    return diag(ravel(v), k)


def polyder(p, m=1):
    """NumPy's polyder: m times, the coefficients but the constant term times their powers (n, ..., 1)."""
    m = int(m)  # NumPy's reading: a float order is truncated
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    c = _tensor(p)
    if c.ndim == 0:
        raise TypeError("len() of unsized object")
    # NumPy's recursion forms the product once more at order 0 and returns its input, so a 2-d p whose last
    # product does not broadcast is its error too; the unused product costs nothing in the graph.
    for step in range(m + 1):
        product = c[:-1] * np.arange(c.shape[0] - 1, 0, -1)
        c = product if step < m else c
    return c


def polyint(p, m=1, k=None):
    """NumPy's polyint: m times, the coefficients divided by their new powers (n+1, ..., 1) and the next
    integration constant appended (k: zeros by default, one scalar for every step, or one per step)."""
    m = int(m)  # NumPy's reading: a float order is truncated
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    constants = np.zeros(m, float) if k is None else k
    constants = atleast_1d(constants) if isinstance(constants, Tensor) else np.atleast_1d(constants)
    if len(constants) == 1 and m > 1:
        constants = constants[0] * np.ones(m, float)
    if len(constants) < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    c = _tensor(p)
    if c.ndim == 0 and m > 0:
        raise TypeError("len() of unsized object")
    if c.scalar:
        c = Tensor(c.node)  # NumPy's asarray of a NumPy scalar: a 0-d array (returned as is at order 0)
    for step in range(m):
        first = constants[step]
        c = concatenate([c / np.arange(c.shape[0], 0, -1), first[None] if isinstance(first, Tensor) else [first]])
    return c


def poly(seq_of_zeros):
    """NumPy's poly of roots (a 1-d array): the product of (x - root), one np.convolve per root, in NumPy's
    type for the roots (float32 stays, other types become float64); a matrix's characteristic polynomial
    needs its eigenvalues, which the compiler does not compute."""
    roots = atleast_1d(_tensor(seq_of_zeros))
    if roots.ndim == 2 and roots.shape[0] == roots.shape[1] and roots.shape[0] != 0:
        raise NotImplementedError("np.poly of a matrix needs its eigenvalues, which the compiler does not compute")
    if roots.ndim != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    roots = roots.astype(np.mintypecode(roots.dtype.char))
    if roots.shape[0] == 0:
        return 1.0
    a = Tensor(const_node(np.ones(1, roots.dtype)))
    for zero in roots:
        a = convolve(a, stack([Tensor(const_node(np.ones((), roots.dtype))), -zero]), mode="full")
    return a


def polymul(a1, a2):
    """NumPy's polymul: np.convolve of the two coefficient arrays, each first stripped of its leading zeros by
    np.poly1d. A constant one is stripped as NumPy strips it; a traced one's leading zeros only its values
    tell, and they would change the result's length, so a traced coefficient array (of two or more) that
    starts with a zero is refused as the kernel runs. A lone coefficient stays, zero or not (NumPy's too)."""
    if isinstance(a1, np.poly1d) or isinstance(a2, np.poly1d):
        raise NotImplementedError("np.polymul of a np.poly1d: NumPy returns a poly1d, which cannot hold traced "
                                  "coefficients (pass its .coeffs)")
    factors = []
    for a in (a1, a2):
        if not isinstance(a, Tensor):
            factors.append(np.poly1d(a).coeffs)  # NumPy's own stripping (and its error for more than 1-d)
            continue
        c = atleast_1d(a)
        if c.ndim > 1:
            raise ValueError("Polynomial must be 1d only.")
        if c.shape[0] > 1:
            _raise_at_run_time(c[0] == 0, "np.polymul: a coefficient array starts with a zero, which NumPy strips, "
                               "so its result is shorter than the compiled function's", "np.polymul",
                               NotImplementedError)
        factors.append(c)
    return convolve(*factors)


def einsum_path(subscripts, *operands, optimize="greedy", einsum_call=False):
    """NumPy's own einsum_path on stand-ins of the operands' shapes: the contraction order depends on
    nothing else, so the path and its report are NumPy's. In the interleaved form (operand, sublist, ...) the
    first operand arrives as `subscripts`, so it is stood in too."""
    stand_ins = [np.broadcast_to(np.zeros((), o.dtype), o.shape) if isinstance(o, Tensor) else o
                 for o in (subscripts, *operands)]
    return np.einsum_path(*stand_ins, optimize=optimize, einsum_call=einsum_call)


def min_scalar_type(a, /):
    """An array of one or more dimensions: its own dtype, as NumPy's; a 0-d one's answer is the smallest type
    that holds its value, which only the kernel knows."""
    t = _tensor(a)
    if t.ndim == 0 and t.dtype != np.bool_:
        raise NotImplementedError("np.min_scalar_type of a traced 0-d array: NumPy's answer is the smallest type "
                                  "that holds its value, known only as the kernel runs")
    return t.dtype


def linalg_cross(x1, x2, /, *, axis=-1):
    """np.linalg.cross: np.cross of 3-vectors only (NumPy's error for any other length)."""
    a, b = _tensor(x1), _tensor(x2)
    if a.shape[axis] != 3 or b.shape[axis] != 3:
        raise ValueError(f"Both input arrays must be (arrays of) 3-dimensional vectors, but they are "
                         f"{a.shape[axis]} and {b.shape[axis]} dimensional instead.")
    return cross(a, b, axis=axis)


def linalg_tensorsolve(a, b, axes=None):
    """NumPy's tensorsolve: the given axes moved last, the tensor reshaped to a square matrix, solved."""
    x, y = _tensor(a), _tensor(b)
    if axes is not None:  # each given axis moved last, in turn (NumPy's list.remove: a negative one is an error)
        order = list(range(x.ndim))
        for ax in axes:
            order.remove(ax)
            order.append(ax)
        x = transpose(x, order)
    old_shape = x.shape[-(x.ndim - y.ndim):]
    prod = int(np.prod(old_shape, dtype=np.int64))
    if x.size != prod ** 2:
        raise np.linalg.LinAlgError("Input arrays must satisfy the requirement prod(a.shape[b.ndim:]) == "
                                    "prod(a.shape[:b.ndim])")
    solution = linalg_solve(reshape(x, (prod, prod)), ravel(y))
    return reshape(solution, old_shape)


def linalg_tensorinv(a, ind=2):
    """NumPy's tensorinv: the first ``ind`` axes against the rest as a square matrix, inverted, reshaped."""
    x = _tensor(a)
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    old_shape = x.shape
    prod = int(np.prod(old_shape[:ind], dtype=np.int64))
    inverse_shape = old_shape[ind:] + old_shape[:ind]
    if x.size != prod * int(np.prod(old_shape[ind:], dtype=np.int64)) or prod ** 2 != x.size:
        raise np.linalg.LinAlgError("Last 2 dimensions of the array must be square")
    return reshape(linalg_inv(reshape(x, (prod, -1))), inverse_shape)


def sliding_window_view(x, window_shape, axis=None, *, subok=False, writeable=False):
    """NumPy's sliding_window_view: a read-only view whose elements NumPy's own function picks from the
    array of x's positions (its checks and shape rules included); writeable=True is refused, since the
    windows overlap (NumPy warns that writing into them is unsafe)."""
    t = _tensor(x)
    if writeable:
        raise NotImplementedError("np.lib.stride_tricks.sliding_window_view(writeable=True): the windows share "
                                  "memory, so a write shows in several of them")
    windows = lambda p: np.lib.stride_tricks.sliding_window_view(p, window_shape, axis)  # noqa: E731
    positions = windows(np.arange(t.size, dtype=np.intp).reshape(t.shape))
    return view(gathered(t.node, np.ascontiguousarray(positions)).node, x, read_only=True, positions=windows)


def ix_(*args):
    """NumPy's open mesh: the k-th 1-d index array shaped to broadcast along axis k (boolean ones would
    be their nonzero positions, whose number the data decide)."""
    out = []
    for k, new in enumerate(args):
        new = _tensor(new) if isinstance(new, Tensor) else np.asarray(new)
        if new.size == 0 and not isinstance(new, Tensor):
            new = new.astype(np.intp)
        if new.ndim != 1:
            raise ValueError("Cross index must be 1 dimensional")
        if new.dtype == np.bool_:
            if isinstance(new, Tensor):
                raise NotImplementedError("np.ix_ of a traced boolean array (its nonzero positions decide the shape)")
            new = new.nonzero()[0]
        shape = (1,) * k + (new.size,) + (1,) * (len(args) - k - 1)
        out.append(reshape(new, shape) if isinstance(new, Tensor) else new.reshape(shape))
    return tuple(out)


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """np.histogram's edges (its checks, and its errors for a range taken from the data)."""
    return histogram(a, bins, range, weights=weights, _edges_only=True)[1]


def _stand_in_laid_out(t: Tensor, fill: int = 0) -> np.ndarray:
    """``fill`` in ``t``'s shape and dtype, laid out in memory as the model says NumPy's array is."""
    return _laid_out_array(t.shape, t.dtype, layout.strides_of(t.node), fill)


def _laid_out_array(shape: tuple, dtype: np.dtype, strides: tuple, fill: int = 0) -> np.ndarray:
    """A writable array of ``fill`` laid out with ``strides`` (in elements; where they are 0 or overlap,
    elements share memory)."""
    if 0 in shape:
        return np.zeros(shape, dtype)
    start = sum((n - 1) * -s for n, s in zip(shape, strides) if s < 0)
    span = start + sum((n - 1) * s for n, s in zip(shape, strides) if s > 0) + 1
    return np.ndarray(shape, dtype, np.full(span, fill, dtype), start * dtype.itemsize,
                      tuple(s * dtype.itemsize for s in strides))


def _solve_laid_out_as_given(a, b):
    """np.linalg.solve of identity matrices laid out as ``a`` is (the zeros a stand-in holds are singular)
    against ``b``: the layout NumPy's gufunc gives the solution, whose loop axes follow its operands'."""
    a = np.asarray(a)
    identities = _laid_out_array(a.shape, a.dtype, tuple(s // a.itemsize for s in a.strides))
    identities[...] = np.eye(a.shape[-1], dtype=a.dtype)  # (the same values where a's memory is shared)
    return np.linalg.solve(identities, b)


def _laid_out_by_numpy(impl, numpy_fn):
    """``impl`` whose results are laid out as NumPy's own ``numpy_fn`` lays out its results, which it is
    asked for on zeros laid out as the arguments are (for functions whose layout follows rules of
    their own: a diagonal's view, apply_along_axis's buffer, einsum's iterator); a result whose
    arguments' layouts the model does not know is marked so (``layout.known``)."""
    def stand_in(value, fill):
        if isinstance(value, Tensor):
            return _stand_in_laid_out(value, fill)
        if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
            return type(value)(stand_in(v, fill) for v in value)
        return value

    def tensors(value):
        return [value] if isinstance(value, Tensor) else \
            [t for v in value for t in tensors(v)] if isinstance(value, (list, tuple)) else []

    def laid_out(*args, **kwargs):
        result = impl(*args, **kwargs)
        results = _flatten_leaves(result)
        numpys = [None] * len(results)  # (unknown, unless NumPy says)
        if all(layout.known(t.node) for t in tensors(list(args) + list(kwargs.values()))):
            for fill in (0, 1):  # (ones where zeros are no valid argument: weights that sum to 0)
                with np.errstate(all="ignore"), warnings.catch_warnings(), contextlib.suppress(Exception):
                    warnings.simplefilter("ignore")  # (impl has given NumPy's errors and warnings already)
                    numpys = _flatten_leaves(numpy_fn(*stand_in(args, fill),
                                                      **{k: stand_in(v, fill) for k, v in kwargs.items()}))
                    break
        given = tensors(list(args) + list(kwargs.values()))
        for t, n in zip(results, numpys):
            if not isinstance(t, Tensor) or not t.ndim or any(t is g for g in given):
                continue  # (an out= array returned keeps its own layout)
            if isinstance(n, np.ndarray) and n.shape == t.shape and not any(s % n.itemsize for s in n.strides):
                t.node = P.laid_out(t.node, tuple(s // n.itemsize for s in n.strides))
            else:
                t.node = P.layout_unknown(t.node)
        return result
    laid_out.__name__, laid_out.__doc__ = impl.__name__, impl.__doc__
    return laid_out


def _flatten_leaves(value) -> list:
    return [v for item in value for v in _flatten_leaves(item)] if isinstance(value, (list, tuple)) else [value]


diagonal = _laid_out_by_numpy(diagonal, np.diagonal)
diag = _laid_out_by_numpy(diag, np.diag)
einsum = _laid_out_by_numpy(einsum, np.einsum)
nanmedian = _laid_out_by_numpy(nanmedian, np.nanmedian)
nanquantile = _laid_out_by_numpy(nanquantile, np.nanquantile)
nanpercentile = _laid_out_by_numpy(nanpercentile, np.nanpercentile)
unravel_index = _laid_out_by_numpy(unravel_index, np.unravel_index)
ravel_multi_index = _laid_out_by_numpy(ravel_multi_index, np.ravel_multi_index)
linalg_vecdot = _laid_out_by_numpy(linalg_vecdot, np.linalg.vecdot)  # (np.vecdot, its axis moved last)
sliding_window_view = _laid_out_by_numpy(sliding_window_view, np.lib.stride_tricks.sliding_window_view)
median = _laid_out_by_numpy(median, np.median)
quantile = _laid_out_by_numpy(quantile, np.quantile)
percentile = _laid_out_by_numpy(percentile, np.percentile)
# NumPy's concatenate allocates its result in the order its operands lie in memory where they agree
concatenate = _laid_out_by_numpy(concatenate, np.concatenate)
stack = _laid_out_by_numpy(stack, np.stack)
hstack = _laid_out_by_numpy(hstack, np.hstack)
vstack = _laid_out_by_numpy(vstack, np.vstack)
dstack = _laid_out_by_numpy(dstack, np.dstack)
column_stack = _laid_out_by_numpy(column_stack, np.column_stack)
block = _laid_out_by_numpy(block, np.block)
append = _laid_out_by_numpy(append, np.append)
linalg_solve = _laid_out_by_numpy(linalg_solve, _solve_laid_out_as_given)
# functions whose NumPy code fills a fresh array allocated after its argument's layout
nan_to_num = _allocated(nan_to_num, "K")  # np.array(x, copy=True), the replacements written into it
gradient = _allocated(gradient, "K")  # np.empty_like(f)
unwrap = _allocated(unwrap, "K")  # np.array(p, copy=True)
piecewise = _allocated(piecewise, "K")  # np.zeros_like(x)
pad = _allocated(pad, "A")  # np.empty(..., order='F' if array.flags.fnc else 'C')
insert = _allocated(insert, "A")  # (the same)
packbits = _allocated(packbits, "A")  # (C: a Fortran result for a Fortran-contiguous array)
unpackbits = _allocated(unpackbits, "A")
interp = _allocated(interp, "C")  # (NumPy's C loop fills a new C-contiguous array)


FUNCTIONS = {
    **{f: f._implementation for f in _NUMPYS_OWN},
    np.angle: angle, np.real_if_close: real_if_close, np.diagflat: diagflat, np.polyder: polyder, np.polyint: polyint,
    np.poly: poly, np.linalg.cross: linalg_cross, np.linalg.tensorsolve: linalg_tensorsolve,
    np.linalg.tensorinv: linalg_tensorinv, np.lib.stride_tricks.sliding_window_view: sliding_window_view, np.ix_: ix_,
    np.histogram_bin_edges: histogram_bin_edges, np.putmask: putmask, np.ravel_multi_index: ravel_multi_index,
    np.geomspace: geomspace, np.packbits: packbits, np.unpackbits: unpackbits, np.linalg.cond: linalg_cond,
    np.histogramdd: histogramdd, np.histogram2d: np.histogram2d._implementation,
    np.sum: sum_, np.prod: prod, np.max: amax, np.amax: amax, np.min: amin, np.amin: amin, np.argmax: argmax, np.argmin: argmin, np.mean: mean, np.var: var, np.std: std, np.cumsum: cumsum, np.cumprod: cumprod, np.linalg.norm: linalg_norm,
    np.flip: flip, np.fliplr: fliplr, np.flipud: flipud, np.roll: roll, np.fft.fftshift: fftshift,
    np.fft.ifftshift: ifftshift, np.repeat: repeat, np.tile: tile, np.diff: diff,
    np.pad: pad, np.nan_to_num: nan_to_num, np.moveaxis: moveaxis, np.atleast_1d: atleast_1d,
    np.atleast_2d: atleast_2d, np.atleast_3d: atleast_3d, np.column_stack: column_stack, np.dstack: dstack,
    np.diagonal: diagonal, np.trace: trace, np.diag: diag, np.take_along_axis: take_along_axis, np.ptp: ptp,
    np.count_nonzero: count_nonzero, np.isclose: isclose, np.allclose: allclose, np.array_equal: array_equal,
    np.array_equiv: array_equiv, np.gradient: gradient, np.i0: i0, np.unwrap: unwrap,
    np.apply_along_axis: apply_along_axis, np.apply_over_axes: apply_over_axes,
    np.linalg.det: linalg_det, np.linalg.slogdet: linalg_slogdet, np.linalg.solve: linalg_solve,
    np.linalg.inv: linalg_inv, np.linalg.cholesky: linalg_cholesky, np.linalg.matrix_power: linalg_matrix_power,
    np.linalg.multi_dot: linalg_multi_dot, np.linalg.qr: linalg_qr,
    np.sinc: sinc, np.nansum: nansum, np.nanprod: nanprod,
    np.nancumsum: nancumsum, np.nancumprod: nancumprod, np.nanmax: nanmax, np.nanmin: nanmin, np.nanmean: nanmean,
    np.nanvar: nanvar, np.nanstd: nanstd, np.matrix_transpose: matrix_transpose, np.astype: astype,
    np.unstack: unstack, np.correlate: correlate, np.convolve: convolve, np.polymul: polymul, np.einsum_path: einsum_path,
    np.min_scalar_type: min_scalar_type, np.cross: cross, np.kron: kron, np.trapezoid: trapezoid, np.cumulative_sum: cumulative_sum, np.cumulative_prod: cumulative_prod,
    np.linalg.vector_norm: linalg_vector_norm, np.linalg.matrix_norm: linalg_matrix_norm, np.linalg.vecdot: linalg_vecdot,
    np.linalg.outer: linalg_outer, np.linalg.matmul: lambda x1, x2, /: np.matmul(x1, x2),
    np.linalg.matrix_transpose: matrix_transpose, np.linalg.tensordot: tensordot,
    np.linalg.diagonal: lambda x, /, *, offset=0: diagonal(x, offset, -2, -1),
    np.linalg.trace: lambda x, /, *, offset=0, dtype=None: trace(x, offset, -2, -1, dtype), np.sort: sort, np.argsort: argsort, np.nanargmax: nanargmax, np.nanargmin: nanargmin, np.searchsorted: searchsorted, np.digitize: digitize, np.interp: interp, np.histogram: histogram, np.linspace: linspace, np.lexsort: lexsort, np.cov: cov, np.corrcoef: corrcoef, np.median: median, np.average: average, np.quantile: quantile, np.percentile: percentile, np.nanmedian: nanmedian, np.nanquantile: nanquantile, np.nanpercentile: nanpercentile, np.rot90: rot90, np.append: append, np.array_split: array_split, np.hsplit: hsplit, np.vsplit: vsplit, np.dsplit: dsplit, np.broadcast_arrays: broadcast_arrays, np.meshgrid: meshgrid, np.ediff1d: ediff1d, np.polyval: polyval, np.vander: vander, np.select: select, np.piecewise: piecewise, np.isin: isin, np.unravel_index: unravel_index, np.result_type: result_type, np.can_cast: can_cast, np.iscomplexobj: iscomplexobj, np.isrealobj: isrealobj, np.iscomplex: iscomplex, np.isreal: isreal, np.real: real, np.imag: imag, np.block: block, np.delete: delete, np.insert: insert, np.resize: resize, np.compress: compress, np.choose: choose, np.round: round_, np.around: round_,
    np.any: any_, np.all: all_, np.clip: clip,
    np.reshape: reshape, np.transpose: transpose, np.swapaxes: swapaxes, np.expand_dims: expand_dims,
    np.squeeze: squeeze, np.ravel: ravel, np.broadcast_to: broadcast_to, np.concatenate: concatenate, np.hstack: hstack,
    np.vstack: vstack, np.stack: stack, np.split: split, np.where: where, np.triu: triu, np.tril: tril,
    np.ones_like: _like(1), np.zeros_like: _like(0), np.empty_like: _like(0), np.full_like: full_like, np.take: take,
    np.dot: dot, np.tensordot: tensordot, np.inner: inner, np.outer: outer, np.vdot: vdot, np.einsum: einsum,
    np.shape: shape, np.ndim: ndim, np.size: size, np.copy: copy,
    np.copyto: copyto, np.put: put, np.place: place, np.put_along_axis: put_along_axis, np.fill_diagonal: fill_diagonal,
}


_OUR_DTYPES = "and the compiler's dtypes are bool, integers and real floats"
_DATA_DEPENDENT = "the length of its result depends on the values, which a trace does not know"
_ITERATIVE = ("LAPACK's iterative eigenvalue and singular value algorithms run until they converge, and the compiler "
              "unrolls only factorizations of a fixed number of steps (solve, inv, det, cholesky, qr)")
_COMPLEX = f"its result is complex, {_OUR_DTYPES}"
_VALUES = "a traced array's values are known only as the kernel runs: return the array and use the result"
# why the functions that NumPy dispatches to a traced array but the compiler does not trace are refused
_REFUSED = {
    **dict.fromkeys((np.argwhere, np.nonzero, np.flatnonzero, np.extract, np.unique, np.unique_all, np.unique_counts,
                     np.unique_inverse, np.unique_values, np.intersect1d, np.setdiff1d, np.setxor1d, np.union1d,
                     np.trim_zeros, np.polydiv), _DATA_DEPENDENT),
    np.bincount: "the length of its result is the largest value plus one, which a trace does not know "
                 "(where the values are known to lie below n, (x[:, None] == np.arange(n)).sum(axis=0) counts them)",
    **dict.fromkeys((np.linalg.eig, np.linalg.eigh, np.linalg.eigvals, np.linalg.eigvalsh, np.linalg.svd,
                     np.linalg.svdvals, np.linalg.pinv, np.linalg.matrix_rank, np.linalg.lstsq, np.polyfit,
                     np.roots), _ITERATIVE),
    **dict.fromkeys((np.fft.fft, np.fft.fft2, np.fft.fftn, np.fft.ifft, np.fft.ifft2, np.fft.ifftn, np.fft.rfft,
                     np.fft.rfft2, np.fft.rfftn, np.fft.irfft, np.fft.irfft2, np.fft.irfftn, np.fft.hfft,
                     np.fft.ihfft, np.sort_complex), _COMPLEX),
    **dict.fromkeys((np.partition, np.argpartition),
                    "NumPy's introselect leaves the elements other than the k-th in an order of its own "
                    "(np.sort gives the k-th element in its place and a defined order around it)"),
    **dict.fromkeys((np.array2string, np.array_repr, np.array_str, np.printoptions, np.save, np.savetxt, np.savez,
                     np.savez_compressed), _VALUES),
    **dict.fromkeys((np.may_share_memory, np.shares_memory),
                    "a compiled function's arrays have values, not a memory layout NumPy code could inspect"),
    **dict.fromkeys((np.busday_count, np.busday_offset, np.is_busday, np.datetime_as_string),
                    "datetime64 is not among the compiler's dtypes"),
}

# ... and whole modules of them, by the module NumPy names as theirs
_REFUSED_MODULES = {
    "numpy.lib.scimath": "its result is complex where an argument lies outside the real function's domain, so the "
                         "values decide its dtype (np.sqrt, np.log, np.power, ... are the real functions)",
    "numpy.char": f"it works on string arrays, {_OUR_DTYPES}",
    "numpy.strings": f"it works on string arrays, {_OUR_DTYPES}",
    "numpy.lib.recfunctions": f"it works on structured arrays, {_OUR_DTYPES}",
    "numpy.polynomial.polynomial": "NumPy's own code converts its arguments with np.asanyarray, which a traced array "
                                   "cannot pass through",
}


def apply_function(func, args, kwargs):
    if func in _CREATION_FUNCTIONS:  # (reached only through like=)
        return _created_like(func, args, kwargs)
    impl = FUNCTIONS.get(func)
    if impl is None:
        why = _REFUSED.get(func) or _REFUSED_MODULES.get(getattr(func, "__module__", None))
        raise NotImplementedError(f"{_public_name(func)} is not supported by the compiler" + (f": {why}" if why else ""))
    return call_library_function(impl, *args, **kwargs)


def _public_name(func) -> str:
    """``np.linalg.norm`` rather than ``np.norm``: the name as the user wrote it."""
    module = getattr(func, "__module__", None) or "numpy"
    if module.startswith("numpy._core") or module == "numpy":
        module = "numpy"
    return f"{module.replace('numpy', 'np', 1)}.{getattr(func, '__name__', func)}"


# --------------------------------------------------------------------------- indexing


def _holds_tensor(seq) -> bool:
    return any(isinstance(v, Tensor) or (isinstance(v, (list, tuple)) and _holds_tensor(v)) for v in seq)


def array_of_sequence(seq) -> Tensor:
    """NumPy's array of a (nested) list or tuple that holds traced values: the elements stacked, inner lists
    first, Python numbers converted as NumPy converts them (int64, float64: not weak), into a fresh
    C-contiguous array (np.array's layout, whatever its elements')."""
    return _fresh(stack([array_of_sequence(v) if isinstance(v, (list, tuple)) else v for v in seq]))


# NumPy's creation functions hand a call to the compiler only through ``like=`` a traced array (np.zeros(n, like=x):
# code written for any array type). Like an ndarray NumPy makes its own array; like a traced one, the result is a
# traced array: a constant the trace can write into, or the conversion of a traced value.


def _array_of(obj, dtype=None, *, copy=True, order="K", subok=False, ndmin=0, device=None, what="np.array"):
    """np.array of a traced value (or a list holding some): NumPy's own call on a stand-in laid out as it is
    decides whether the result is the array itself (or a view with leading axes, ``ndmin``) or a copy, and the
    copy's layout; its errors (``copy=False`` where a copy is needed, a bad order) are NumPy's."""
    if isinstance(dtype, Tensor):
        dtype_argument(dtype, what)
    listed = isinstance(obj, (list, tuple))
    t = array_of_sequence(obj) if listed else _tensor(obj)
    if dtype is not None:
        dt.check_supported(np.dtype(dtype), what)
    if listed and copy is False:  # NumPy makes an array of the list
        raise ValueError("Unable to avoid copy while creating an array as requested.")
    if not layout.known(t.node):
        raise NotImplementedError(f"{what} of an array whose memory layout the compiler only guesses (whether "
                                  "NumPy copies depends on it)")
    stand_in = t.dtype.type(0) if t.numpy_scalar else _stand_in_laid_out(t)  # (a NumPy scalar is always copied)
    if device is None:
        made = np.array(stand_in, dtype=dtype, copy=copy, order=order, subok=subok, ndmin=ndmin)
    else:  # (np.asarray's own argument; np.array takes none)
        made = np.asarray(stand_in, dtype=dtype, order=order, device=device, copy=copy)
    if np.shares_memory(made, stand_in):
        return t if made.ndim == t.ndim else t[(None,) * (made.ndim - t.ndim)]
    converted = P.reshape(P.cast(t.node, made.dtype), made.shape)
    return Tensor(P.laid_out(converted, tuple(s // made.itemsize for s in made.strides)) if made.ndim else converted)


def _converter_like(func):
    """np.asarray, np.asanyarray, np.ascontiguousarray or np.asfortranarray of a traced value, as np.array."""
    def converted(a, dtype=None, order=None, *, device=None, copy=None):
        name = f"np.{func.__name__}"
        if func in (np.ascontiguousarray, np.asfortranarray):  # (dtype only: their order, at least one axis)
            return _array_of(a, dtype, copy=None, order="C" if func is np.ascontiguousarray else "F", ndmin=1,
                             what=name)
        return _array_of(a, dtype, copy=copy, order=order, device=device, what=name)
    return converted


def _created_like(func, args, kwargs):
    """``func`` (a creation function with ``like=``) called with like= a traced array."""
    if _holds_tensor(list(args) + list(kwargs.values())):
        if func in _CONVERTERS_LIKE:
            return _CONVERTERS_LIKE[func](*args, **kwargs)
        if func is np.full:
            return _full_of_traced(*args, **kwargs)
        why = _CREATED_FROM_TRACED.get(func, "its arguments decide the result's shape, which a trace must know")
        raise NotImplementedError(f"np.{func.__name__}(..., like=...) of traced arguments: {why}")
    made = func(*args, **kwargs)  # NumPy's own array, a constant of the trace
    if not isinstance(made, np.ndarray):
        return made
    return Tensor(layout.user_array_node(made), aliases=None if made.flags.writeable else READ_ONLY)


def _full_of_traced(shape, fill_value, dtype=None, order="C", *, device=None):
    """np.full with a traced fill value: NumPy's empty array of the fill value's dtype (unless told), then its
    np.copyto of the fill value into it, 'unsafe'."""
    fill = array_of_sequence(fill_value) if isinstance(fill_value, (list, tuple)) else _tensor(fill_value)
    made = np.empty(shape, fill.dtype if dtype is None else dtype, order, device=device)
    result = Tensor(layout.user_array_node(np.zeros_like(made)))
    copyto(result, fill, casting="unsafe")
    return result


_CONVERTERS_LIKE = {np.array: _array_of, **{f: _converter_like(f) for f in (
    np.asarray, np.asanyarray, np.ascontiguousarray, np.asfortranarray)}}
_CREATED_FROM_TRACED = {
    np.arange: _DATA_DEPENDENT,
    np.require: "its requirements ask NumPy's flags of the array (writeable, owns its data), which the compiler does "
                "not model; np.asarray(x, dtype, order=..., like=x) or x.copy(order=...) say what is wanted",
}
_CREATION_FUNCTIONS = (np.zeros, np.ones, np.empty, np.full, np.arange, np.array, np.asarray, np.asanyarray,
                       np.ascontiguousarray, np.asfortranarray, np.eye, np.identity, np.tri, np.fromfunction,
                       np.frombuffer, np.fromiter, np.fromstring, np.loadtxt, np.genfromtxt, np.require)


def _index_node(idx):
    if isinstance(idx, list) and _holds_tensor(idx):  # t[[np.argmax(y), 0]]: NumPy makes an array of it
        idx = array_of_sequence(idx)
    if isinstance(idx, Tensor):
        if idx.dtype.kind == "b":
            raise NotImplementedError(
                "boolean mask indexing has a data-dependent shape and is not supported by the compiler (a mask of "
                "the leading axes can be assigned through: x[mask] = v, x[mask] += v; else write np.where(mask, v, x))")
        return idx.node
    arr = np.asarray(idx)
    if arr.size == 0 and not isinstance(idx, np.ndarray):
        arr = arr.astype(np.intp)  # NumPy reads an empty list as an (empty) integer index
    if arr.dtype.kind == "b":
        raise NotImplementedError("boolean mask indexing has a data-dependent shape and is not supported by the compiler")
    if arr.dtype.kind not in "iu":
        raise IndexError(f"arrays used as indices must be of integer type, got {arr.dtype}")
    return layout.user_array_node(arr)


def setitem(t: Tensor, key, value) -> None:
    """``x[key] = value``: NumPy itself indexes the array of x's flat positions with ``key`` (its rules
    and errors; where a position repeats, its last write wins) and assigns the value to a stand-in of
    the indexed shape (its broadcasting, conversions and errors); x's new value is then gathered from
    its elements and the value's, and written into its memory as NumPy would (update_in_place: the
    views of that memory see it; refused into a caller's argument)."""
    if t.numpy_scalar:
        raise TypeError(f"'numpy.{t.dtype}' object does not support item assignment")
    if t.aliases == READ_ONLY:
        raise ValueError("assignment destination is read-only")
    masked = _mask_key(key)
    if isinstance(value, MaskedRead) and masked is not None:
        np.empty(t.shape, np.bool_)[_selected_stand_in(*masked, 0)]  # NumPy's check of the mask's shape first
        value.follows_into(masked[0], 0)
        _copy_where_masked(t, *masked, value.values)  # x[m] = f(y[m]), x[m] op= v: f(y) where the mask holds
        return
    if masked is not None:  # x[mask] = v, x[mask, ...] = v, x[mask, :] = v
        _assign_where_masked(t, masked[0], value, masked[1])
        return
    if any(isinstance(k, Tensor) and k.dtype.kind == "b" for k in (key if isinstance(key, tuple) else (key,))):
        _assign_through_inner_mask(t, key, value)
        return
    if isinstance(value, MaskedRead):
        value.refuse()
    parts = key if isinstance(key, tuple) else (key,)
    if _holds_tensor(parts):
        _assign_at_traced_positions(t, key, value)
        return
    positions = _positions(t)
    target = positions[key].shape
    v = _assigned_values(t, target, value, _basic_key(key))
    count = int(np.prod(target, dtype=np.int64))
    if not count:
        return
    codes = positions.copy()
    codes[key] = t.size + np.arange(count, dtype=np.intp).reshape(target)
    updated = gathered(P.concat([P.reshape(t.node, (t.size,)), P.reshape(v, (count,))], 0), codes).node
    update_in_place(t, updated, "item assignment (x[...] = v)",
                    "build the result instead (np.where(mask, v, x), np.concatenate, ...)")


def _assigned_values(t: Tensor, target: tuple, value, basic: bool) -> P.Node:
    """``value`` as NumPy's item assignment makes it for ``target``, the indexed shape of ``t``: NumPy's own
    assignment to a stand-in checks the broadcasting and converts a constant (its overflow and NaN errors); a
    traced value loses its leading unit axes, and by a ``basic`` key a NumPy scalar is converted as NumPy's
    setitem converts one; then cast to t's dtype and broadcast."""
    stand_in = np.zeros(target, t.dtype)
    if not isinstance(value, Tensor):
        stand_in[...] = value
        return const_node(stand_in)
    stand_in[...] = np.zeros(value.shape, value.dtype)  # NumPy's broadcasting check, and its message
    v = _leading_units_dropped(value.node, len(target))
    if basic:  # (empty slices too)
        v = _packed(Tensor(v, scalar=value.numpy_scalar), t.dtype, "item assignment (x[...] = v)")
    return P.broadcast_to(P.cast(v, t.dtype), target)


def _assign_at_traced_positions(t: Tensor, key, value) -> None:
    """``x[key] = value`` where the key holds traced integers (an index array, np.argmax's NumPy integer, a list
    of them): NumPy's positions are x's flat positions indexed with the key -- a traced gather, with NumPy's
    broadcasting, negative positions and IndexError (checked as the kernel runs) --, and each element of x takes
    the last value assigned to it in the key's C order (NumPy's last write wins), else keeps its own: the
    kernel writes them in turn (``P.scatter``)."""
    parts = key if isinstance(key, tuple) else (key,)
    positions = getitem(Tensor(const_node(_positions(t))), key)
    basic = all(not _is_advanced(k) or isinstance(k, Tensor) and k.numpy_scalar and k.dtype.kind in "iu"
                for k in parts)
    v = _assigned_values(t, positions.shape, value, basic)
    _written_at_flat_positions(t, positions, v, "item assignment (x[...] = v)")


def _written_at_flat_positions(t: Tensor, positions: Tensor, v: P.Node, what: str) -> None:
    """Each element of ``t`` (C order) takes the last of the values ``v`` whose flat position (``positions``,
    traced, in range, shaped as v) is its own, else keeps its own value; written into t's memory."""
    n, k = t.size, positions.size
    if not n or not k:
        return
    flat = P.reshape(t.node, (n, 1))  # its values (a view would block the update)
    index = P.reshape(P.cast(positions.node, np.int64), (k,))
    updated = P.scatter(flat, index, P.reshape(v, (k, 1)))
    update_in_place(t, P.reshape(updated, t.shape), what,
                    "build the result instead (np.where(mask, v, x), np.concatenate, ...)")


def _mask_key(key) -> tuple[Tensor, tuple] | None:
    """A key that is a traced boolean mask, alone or before whole slices and an ellipsis: the mask and those."""
    parts = key if isinstance(key, tuple) else (key,)
    if parts and isinstance(parts[0], Tensor) and parts[0].dtype.kind == "b" and \
            all(k is Ellipsis or (isinstance(k, slice) and k == slice(None)) for k in parts[1:]):
        return parts[0], parts[1:]
    return None


def _shape_text(shape) -> str:
    return "(" + ",".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"  # as NumPy's messages print one


def _value_rows(shape: tuple, rest: tuple, strip: bool) -> tuple[tuple, int | None]:
    """How a value of ``shape`` meets the elements a mask selects (each shaped ``rest``): its shape once
    broadcast to one of them, and its number of rows where it has one per selected element (None: one row
    for all). ``strip``: NumPy's assignment drops a value's leading unit axes first."""
    while strip and len(shape) > len(rest) + 1 and shape[0] == 1:
        shape = shape[1:]
    if len(shape) == len(rest) + 1:
        return (shape, shape[0]) if shape[0] != 1 else (shape[1:], None)
    return shape, None


def _at_selected(full: tuple, mask: Tensor, v: P.Node, rows: int | None, problem, what: str) -> P.Node | None:
    """``v`` (its rows, where it has one per selected element, else broadcast) at every element of an array
    of shape ``full`` the mask selects: the k-th selected element in C order takes row k, by a running count of
    the mask, and the kernel checks the count is the rows' (``problem(count)``: NumPy's message otherwise). None
    where nothing is to be written."""
    if mask.size == 0:
        return None
    rest, empty = full[mask.ndim:], math.prod(full) == 0
    if rows is not None:
        selected = ravel(mask)
        count = Tensor(P.reduce("sum", P.cast(selected.node, np.dtype(np.int64)), 0, False, what))
        line = P.user_location().short()
        if P.check_at_run_time(count.node, (count != rows).node, "first", ValueError,
                               lambda n: f"{problem(n)} ({what} at {line}, checked as the kernel ran)") is None:
            raise NotImplementedError(f"{what} outside a traced function: its check of the mask's count needs a kernel")
        if rows == 0 or empty:
            return None  # (the mask must select nothing)
        running = (cumsum(selected.astype(np.intp)) - 1) % rows  # the value's row at each selected element
        return P.gather_in_range(P.broadcast_to(v, (rows,) + rest), reshape(running, mask.shape).node, 0)
    return None if empty else P.broadcast_to(v, full)


def _mask_over(mask: Tensor, shape: tuple) -> Tensor:
    """The mask of the leading axes broadcast over an array of ``shape`` (its trailing axes)."""
    return np.broadcast_to(reshape(mask, mask.shape + (1,) * (len(shape) - mask.ndim)), shape)


def _selected_stand_in(mask: Tensor, trailing: tuple, rows: int | None) -> tuple:
    """A key for NumPy's own checks on stand-ins: the mask's shape, selecting as many elements as the value
    has rows (one where it has one for all), then the key's trailing whole slices."""
    chooses = np.zeros(mask.shape, np.bool_)
    chooses.reshape(-1)[:min(1 if rows is None else rows, mask.size)] = True
    return (chooses,) + trailing


def _assign_where_masked(t: Tensor, mask: Tensor, value, trailing: tuple = (), problem=None) -> None:
    """``x[mask] = v`` with a traced boolean mask over x's leading axes: x where the mask is false, the value
    where it holds -- a value without a row per selected element broadcast to each, one with such rows (as many
    as the mask selects, which only the data tells: NumPy's error otherwise, checked as the kernel runs) taken
    in C order by a running count of the mask. NumPy itself assigns the value on stand-ins that select as many
    elements as the value has rows, for its checks of the mask's shape, of the value's and of its conversion
    (its errors, as they are, but for the count a broadcasting message names: the stand-in's); the result is
    written into x's memory (update_in_place). ``trailing``: the key's whole slices and ellipsis after the mask;
    ``problem``: the message for a count that differs from the value's rows (a function of the count)."""
    rest = t.shape[mask.ndim:]
    fast = mask.ndim == t.ndim and not trailing  # NumPy's own path for a lone mask of every axis: 0 or 1-d values
    given = tuple(value.shape) if isinstance(value, Tensor) else np.shape(value)
    shape, rows = _value_rows(given, rest, strip=not fast)
    stand_in = np.zeros(value.shape, value.dtype) if isinstance(value, Tensor) else value
    np.zeros(t.shape, t.dtype)[_selected_stand_in(mask, trailing, rows)] = stand_in  # NumPy's checks
    if isinstance(value, Tensor):
        v = value.node
    else:  # NumPy's conversion (an out-of-range Python int is its OverflowError, already raised above)
        v = const_node(value.astype(t.dtype) if isinstance(value, np.ndarray) else np.asarray(value, dtype=t.dtype))
    problem = problem or (lambda n: f"NumPy boolean array indexing assignment cannot assign {rows} input values to "
                          f"the {n} output values where the mask is true") if fast else \
        problem or (lambda n: f"shape mismatch: value array of shape {_shape_text(given)} could not be broadcast to "
                    f"indexing result of shape {_shape_text((n,) + rest)}")
    v = _at_selected(t.shape, mask, P.cast(P.reshape(v, shape), t.dtype), rows, problem, "x[mask] = v")
    if v is not None:
        _write_where(t, v, _mask_over(mask, t.shape), "item assignment (x[mask] = v)",
                     "build the result instead (np.where(mask, v, x))")


def _integer_key(k) -> bool:
    return isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))


def _inner_mask_view(t: Tensor, key) -> tuple[Tensor, Tensor, int] | None:
    """A key holding one traced boolean mask beside slices, an ellipsis and integers (x[:, mask], x[..., mask, ::2],
    x[0, mask]): the sliced view with the mask's axes moved to its front (x[:, mask] is x.T[mask] for a matrix),
    the mask, and how many axes come before its selection in NumPy's result. Integers beside an
    array are advanced indices to NumPy, broadcast with the mask's positions: they take their axes away, and where
    they and the mask stand apart in the key (x[0, :, mask]) NumPy puts the selection first. None for any other
    key."""
    if not isinstance(key, tuple) or sum(isinstance(k, Tensor) for k in key) != 1 or \
            not all(isinstance(k, slice) or k is Ellipsis or _integer_key(k) or
                    isinstance(k, Tensor) and k.dtype == np.bool_ for k in key) or sum(k is Ellipsis for k in key) > 1:
        return None
    at = next(i for i, k in enumerate(key) if isinstance(k, Tensor))
    mask = key[at]
    integers = [i for i, k in enumerate(key) if _integer_key(k)]
    if integers:
        np.empty(t.shape, np.bool_)[_inner_stand_in_key(key, 0)]  # NumPy's checks of the integers and the mask
        advanced = integers + [at]
        basic = getitem(t, tuple(s for i, k in enumerate(key) for s in (  # the integers taken, every other axis kept
            (slice(None),) * mask.ndim if i == at else (k,) if _integer_key(k) or k is Ellipsis else (slice(None),))))
        moved, mask, lead = _inner_mask_view(basic, tuple(k for k in key if not _integer_key(k)))
        return moved, mask, lead if max(advanced) - min(advanced) < len(advanced) else 0
    consumed = sum(1 for k in key if isinstance(k, slice)) + mask.ndim
    if consumed > t.ndim:
        raise IndexError(f"too many indices for array: array is {t.ndim}-dimensional, but {consumed} were indexed")
    whole = [slice(None)] * (t.ndim - consumed)
    expand = lambda parts: [s for k in parts for s in (whole if k is Ellipsis else [k])]  # noqa: E731
    before, after = expand(key[:at]), expand(key[at + 1:])
    if Ellipsis not in key:
        after += whole
    lead = len(before)
    view = getitem(t, tuple(before) + (slice(None),) * mask.ndim + tuple(after))
    moved = view.transpose(tuple(range(lead, lead + mask.ndim)) + tuple(range(lead)) +
                           tuple(range(lead + mask.ndim, view.ndim)))
    return moved, mask, lead


def _inner_stand_in_key(key: tuple, rows: int | None) -> tuple:
    """``key`` with its traced mask replaced by one of its shape selecting as many elements as a value has rows
    (one where it has one for all): for NumPy's own checks on stand-ins."""
    return tuple(_selected_stand_in(k, (), rows)[0] if isinstance(k, Tensor) else k for k in key)


def _assign_through_inner_mask(t: Tensor, key: tuple, value) -> None:
    """``x[:, mask] = v``, ``x[..., mask] = v``, ``x[1:, mask, ::2] = v``: a traced boolean mask beside slices
    and an ellipsis. NumPy's own assignment on stand-ins (a mask selecting as many elements as the value has
    rows) checks the key and the value; then the value is assigned through the sliced view with the mask's axes
    moved to its front (``_inner_mask_view``), as a leading mask, the value's row axis moved alike. A selection
    through the same key (x[:, m] = f(y[:, m]), x[:, m] += v) is copied where the mask holds."""
    inner = _inner_mask_view(t, key)
    if inner is None:
        raise NotImplementedError(
            "item assignment through a traced boolean mask beside index arrays or new axes (x[i, mask] = v) is not "
            "supported by the compiler; beside slices, integers and an ellipsis it is (x[0, :, mask] = v), or write "
            "np.where(mask, v, x)")
    moved, mask, lead = inner
    if isinstance(value, MaskedRead):
        np.empty(t.shape, np.bool_)[_inner_stand_in_key(key, 0)]  # NumPy's check of the mask's shape first
        value.follows_into(mask, lead)
        count = min(2, mask.size)  # (as many as a stand-in mask of its size selects)
        np.zeros(t.shape, t.dtype)[_inner_stand_in_key(key, count)] = \
            np.zeros(value.rest[:lead] + (count,) + value.rest[lead:], value.dtype)  # NumPy's errors
        if len(value.rest) != moved.ndim - mask.ndim:  # (fewer axes would broadcast against the leading ones)
            value.refuse()
        _copy_where_masked(moved, mask, (), value.values)
        return
    rest_ndim = moved.ndim - lead - mask.ndim
    given = tuple(value.shape) if isinstance(value, Tensor) else np.shape(value)
    stripped = given
    while len(stripped) > lead + 1 + rest_ndim and stripped[0] == 1:  # NumPy drops a value's leading unit axes
        stripped = stripped[1:]
    row_axis = len(stripped) - 1 - rest_ndim  # where the value meets the selected elements, if it reaches them
    rows = stripped[row_axis] if row_axis >= 0 and stripped[row_axis] != 1 else None
    stand_in = np.zeros(given, value.dtype) if isinstance(value, Tensor) else value
    np.zeros(t.shape, t.dtype)[_inner_stand_in_key(key, rows)] = stand_in  # NumPy's checks and messages
    if row_axis >= 0:  # the value's row axis first, its missing leading axes as units after it
        v = value if isinstance(value, Tensor) else np.asarray(value)
        v = moveaxis(reshape(v, stripped) if isinstance(v, Tensor) else v.reshape(stripped), row_axis, 0)
        value = reshape(v, v.shape[:1] + (1,) * (lead - row_axis) + v.shape[1:]) if isinstance(v, Tensor) \
            else v.reshape(v.shape[:1] + (1,) * (lead - row_axis) + v.shape[1:])
    _assign_where_masked(moved, mask, value, problem=lambda n: (
        f"shape mismatch: value array of shape {_shape_text(given)} could not be broadcast to indexing result of "
        f"shape {_shape_text(moved.shape[mask.ndim:mask.ndim + lead] + (n,) + moved.shape[mask.ndim + lead:])}"))


def _extreme_of(dtype: np.dtype, lowest: bool):
    """The dtype's smallest (``lowest``) or largest value, a NumPy scalar: where a max or min starts."""
    if dtype.kind == "f":
        value = -np.inf if lowest else np.inf
    elif dtype.kind == "b":
        value = not lowest
    else:
        value = np.iinfo(dtype).min if lowest else np.iinfo(dtype).max
    return np.asarray(value, dtype)[()]


class MaskedRead:
    """``x[mask]`` with a traced boolean mask over x's leading axes. How many elements it holds is the data's,
    so the compiler follows a selection only where its count never shows: its dtype and ndim, astype, elementwise
    ufuncs and operators of selections through the same mask object (with scalars, and arrays that broadcast to
    one selected element or hold a row per selected element), in place or not, and an assignment back through
    that mask (``z[m] = f(y[m])``, ``x[m] += v``, which Python runs as a read, the operator in place and a write
    of the key).
    ``values`` is a full-shape array whose elements where the mask holds are the selection's: x itself, then
    the ufuncs of such arrays. Any other use is refused, naming the line that read it. A mask beside slices
    (x[:, mask], ``lead`` axes before it) selects from the sliced view with the mask's axes moved to its front
    (``_inner_mask_view``); NumPy's selection has those ``lead`` axes before its row axis, so the arrays that
    combine with it must not reach past the axes after the mask."""

    __slots__ = ("values", "mask", "line", "selected", "lead")

    def __init__(self, values: Tensor, mask: Tensor, line: str, selected=None, lead: int = 0):
        # the values as they were read (an update of x after the read does not reach NumPy's copy), and the
        # mask's value that selected them
        self.values, self.mask, self.line, self.lead = Tensor(values.node), mask, line, lead
        self.selected = mask.node if selected is None else selected

    def follows_into(self, mask: Tensor, lead: int) -> None:
        """Refuses an assignment of this selection through another key than the one it was read through: another
        mask object, the mask written to since, or other axes before it."""
        if self.mask is not mask or self.selected is not mask.node:  # one mask, named and unchanged
            raise NotImplementedError(
                f"x[mask] = y[mask] (y[mask] read at {self.line}) through two masks (or a mask written to since the "
                "read): the compiler follows a selection only into an assignment through the same mask object "
                "(m = y > 0; x[m] = y[m]; x[m] += 1)")
        if self.lead != lead:
            raise NotImplementedError(
                f"x[..., mask] = y[mask] (y's selection read at {self.line}) with {lead} axes before the mask in the "
                f"assignment and {self.lead} in the read: the compiler follows a selection into an assignment through "
                "the same key (x[:, m] = y[:, m] * 2)")

    def refuse(self, *args, **kwargs):
        raise NotImplementedError(
            f"boolean mask indexing (x[mask] at {self.line}) has a data-dependent shape and is not supported by the "
            "compiler but for elementwise functions of selections, assigning them through the mask (x[m] = v, "
            "x[m] += v, x[m] = np.exp(y[m])) and reducing a selection over its first axis (x[m].sum(), "
            "np.max(x[m], axis=0)); "
            "write np.where(mask, f(x), x), or reduce with where=mask (np.sum(x, axis=0, where=mask))")

    def __getattr__(self, name):
        self.refuse()

    __hash__ = None

    @property
    def rest(self) -> tuple:
        return self.values.shape[self.mask.ndim:]

    # what the data does not decide: the selection's type and number of axes, and a conversion of each element
    dtype = property(lambda self: self.values.dtype)
    itemsize = property(lambda self: self.values.dtype.itemsize)
    ndim = property(lambda self: len(self.rest) + 1)

    def _compacted(self) -> tuple[Tensor, Tensor, Tensor]:
        """The selection as NumPy holds it, a fresh C array: ``mask.size`` rows of the values, the selected ones
        first in C order (the k-th found where the mask's running count first reaches k + 1; the rows past them
        repeat the last one), a C array of its shape marking the rows that are the selection's (the first count),
        and the count. A reduction of a C array over its first axis (and any others) agrees with NumPy's
        reduction of a longer one under a where= mask of its first rows (NumPy's masked loop takes them as the
        same runs)."""
        n, rest = self.mask.size, self.rest
        if not n:
            return (Tensor(const_node(np.zeros((0,) + rest, self.dtype))),
                    Tensor(const_node(np.zeros((0,) + rest, np.bool_))), Tensor(const_node(np.zeros((), np.intp))))
        counted = np.cumsum(ravel(self.mask), dtype=np.intp)
        count = counted[n - 1]
        nth = np.minimum(np.searchsorted(counted, np.arange(1, n + 1)), n - 1)
        rows = np.take(reshape(self.values, (n,) + rest), nth, axis=0)
        kept = np.broadcast_to(reshape(np.arange(n) < count, (n,) + (1,) * len(rest)), (n,) + rest).copy(order="C")
        return rows, kept, count

    def _reduced(self, name: str, axis, keepdims: bool, out, where, **kwargs):
        """``x[mask].<name>(axis)`` over axes that include the selection's first (its length the data's, the
        result's shape not): NumPy's reduction of the compacted selection (``_compacted``), its rows beyond the
        selection masked out. ``max``/``min`` without ``initial=`` start from the dtype's extreme, and where NumPy
        would reduce nothing, its ValueError (as the kernel runs where only the count decides). Over the other
        axes only, with out= or where=, or beside axes before the mask, refused."""
        axes = tuple(range(self.ndim)) if axis is None else \
            tuple(sorted(P.normalize_axes(axis, self.ndim, f"x[mask].{name}")))
        if out is not None or where is not np._NoValue or self.lead or 0 not in axes:
            self.refuse()
        kwargs = {k: v for k, v in kwargs.items() if v is not np._NoValue}
        reduce = lambda a, **more: getattr(np, name)(a, axis=axes, keepdims=keepdims, **kwargs, **more)  # noqa: E731
        if 0 in self.rest:  # no element whatever the count: a sum's or product's result is the identity's
            if name in ("sum", "prod", "any", "all"):
                return reduce(Tensor(const_node(np.zeros((1,) + self.rest, self.dtype))))
            raise NotImplementedError(  # (NumPy's errors and warnings still follow the count)
                f"x[mask].{name}() of a selection whose rows have no element ({self.rest}) is not supported by the "
                "compiler: reduce x itself with where=mask")
        if not layout.known(self.values.node) or \
                not layout.dense(self.values.shape, layout.strides_of(self.values.node)):
            raise NotImplementedError(  # (NumPy lays x[mask] out after x, and its reduction follows that layout)
                f"x[mask].{name}() of an array NumPy lays out otherwise than C-contiguously (x.T[m], a Fortran array) "
                "is not supported by the compiler: reduce x itself with where=mask, or take x.copy(order='C') first")
        rows, kept, count = self._compacted()
        if name in ("max", "min") and "initial" not in kwargs:
            stand_in = np.zeros((1,) + self.rest, self.dtype)
            reduce(stand_in)  # NumPy's ValueError where even one selected row leaves nothing to reduce
            try:
                reduce(stand_in[:0])
                message = None
            except ValueError as error:  # only an empty selection fails: the kernel checks the count
                message = str(error)
            if message is not None:
                line = P.user_location().short()
                if P.check_at_run_time(count.node, (count == 0).node, "first", ValueError,
                                       lambda n: f"{message} (x[mask].{name}() at {line}, checked as the kernel ran)") is None:
                    raise NotImplementedError(f"x[mask].{name}() outside a traced function: its check of an empty "
                                              "selection needs a kernel")
            kwargs["initial"] = _extreme_of(self.dtype, lowest=name == "max")
        return reduce(rows, where=kept)

    def sum(self, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
        return self._reduced("sum", axis, keepdims, out, where, dtype=dtype, initial=initial)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
        return self._reduced("prod", axis, keepdims, out, where, dtype=dtype, initial=initial)

    def max(self, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
        return self._reduced("max", axis, keepdims, out, where, initial=initial)

    def min(self, axis=None, out=None, keepdims=False, initial=np._NoValue, where=np._NoValue):
        return self._reduced("min", axis, keepdims, out, where, initial=initial)

    def any(self, axis=None, out=None, keepdims=False, *, where=np._NoValue):
        return self._reduced("any", axis, keepdims, out, where)

    def all(self, axis=None, out=None, keepdims=False, *, where=np._NoValue):
        return self._reduced("all", axis, keepdims, out, where)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, where=np._NoValue):
        return self._reduced("mean", axis, keepdims, out, where, dtype=dtype)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue, mean=np._NoValue,
            correction=np._NoValue):
        if mean is not np._NoValue or correction is not np._NoValue:
            self.refuse()
        return self._reduced("var", axis, keepdims, out, where, dtype=dtype, ddof=ddof)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=np._NoValue, mean=np._NoValue,
            correction=np._NoValue):
        if mean is not np._NoValue or correction is not np._NoValue:
            self.refuse()
        return self._reduced("std", axis, keepdims, out, where, dtype=dtype, ddof=ddof)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        return MaskedRead(self.values.astype(dtype, order, casting, subok, copy), self.mask, self.line, self.selected,
                          self.lead)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method != "__call__" or "out" in kwargs or "where" in kwargs or ufunc.signature is not None:
            self.refuse()
        return _selection_ufunc(self, ufunc, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func not in _SELECTION_REDUCTIONS:
            self.refuse()
        return func._implementation(*args, **kwargs)  # (NumPy's own: it calls the selection's method)


# NumPy's reductions that call an array-like's method of their name (np.sum(x[m]) is x[m].sum())
_SELECTION_REDUCTIONS = {np.sum, np.prod, np.max, np.min, np.amax, np.amin, np.any, np.all, np.mean, np.var, np.std}


def _selection_rows(shape: tuple, rest: tuple, lead: int) -> int | None:
    """How many rows a value of ``shape`` has along the axis of a selection's elements (NumPy's selection is
    ``rest[:lead]``, the selected elements, ``rest[lead:]``); None where it has no such axis or a unit one (one
    value for every selected element)."""
    axis = len(shape) - (len(rest) - lead) - 1
    return shape[axis] if 0 <= axis and len(shape) <= len(rest) + 1 and shape[axis] != 1 else None


def _spread_over_selection(v: Tensor, mask: Tensor, rest: tuple, lead: int, problem, what: str) -> P.Node | None:
    """A value broadcast against NumPy's selection through ``mask`` (``rest[:lead]``, the selected elements,
    ``rest[lead:]``) laid out as the full arrays selections are followed in (the mask's axes, then ``rest``): a
    value with a row per selected element gives the k-th selected element its row k (``_at_selected``: the
    kernel checks the count, ``problem(count)`` otherwise); any other is broadcast to every element. None where
    nothing is written (no element selected, or none to select)."""
    rows = _selection_rows(v.shape, rest, lead)
    v = broadcast_to(reshape(v, (1,) * (len(rest) + 1 - v.ndim) + v.shape),
                     rest[:lead] + (1 if rows is None else rows,) + rest[lead:])
    v = moveaxis(v, lead, 0)  # the selected elements' axis first, as the mask's axes are
    return _at_selected(mask.shape + rest, mask, P.reshape(v.node, v.shape if rows is not None else v.shape[1:]), rows,
                        problem, what)


def _selection_ufunc(read: MaskedRead, ufunc, inputs, kwargs=None) -> MaskedRead | tuple:
    """An elementwise ufunc of selections through one mask (``read``'s), as NumPy computes it on the selected
    elements: on the full arrays the selections came from, which hold them where the mask holds (the other
    elements are never written back). NumPy's own call on stand-ins of as many selected elements as an operand
    has rows (else two) gives its errors, the result's dtype and whether it is still one value per element."""
    mask, rest, lead = read.mask, read.rest, read.lead
    counts = [_selection_rows(np.shape(v), rest, lead) for v in inputs
              if not isinstance(v, MaskedRead) and isinstance(v, (Tensor, np.ndarray, list, tuple))]
    count = next((c for c in counts if c is not None), 2)  # selected elements, as the stand-ins have them
    stand_ins, operands = [], []
    for v in inputs:
        if isinstance(v, MaskedRead):
            if v.mask is not mask or v.selected is not read.selected:
                raise NotImplementedError(f"a ufunc of selections through two masks (x[mask] read at {read.line} and "
                                          f"{v.line}; or a mask written to between the reads): the compiler follows "
                                          "selections through the same mask object only (m = y > 0; z[m] = y[m] + x[m])")
            if len(v.rest) != len(rest) or v.lead != read.lead:
                read.refuse()
            stand_ins.append(np.zeros(v.rest[:lead] + (count,) + v.rest[lead:], v.values.dtype))
        elif isinstance(v, Tensor):
            stand_ins.append(np.zeros(v.shape, v.dtype))
        else:  # a constant array as NumPy converts it; a Python or NumPy scalar as it is
            v = np.asarray(v) if isinstance(v, (list, tuple)) else v
            stand_ins.append(v)
        operands.append(v)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = ufunc(*stand_ins, **(kwargs or {}))  # NumPy's errors, as they are
    expected = expected if isinstance(expected, tuple) else (expected,)
    if any(np.ndim(e) != len(rest) + 1 or np.shape(e)[lead] != count for e in expected):
        read.refuse()  # a result that is no longer one value per selected element
    integers = all(np.asarray(e).dtype.kind in "iu" for e in expected)
    for i, v in enumerate(operands):
        if isinstance(v, MaskedRead):
            operands[i] = v.values
            if ufunc is np.power and i == 1 and integers:  # an unselected negative exponent is none of NumPy's errors
                operands[i] = where(_mask_over(mask, v.values.shape), v.values, 0)
        elif np.ndim(v):
            given = np.shape(v)
            problem = (lambda n: "operands could not be broadcast together with shapes "
                                 f"{_shape_text(rest[:lead] + (n,) + rest[lead:])} {_shape_text(given)}")
            node = _spread_over_selection(v if isinstance(v, Tensor) else Tensor(const_node(v)), mask, rest, lead,
                                          problem, "a ufunc of x[mask]")
            operands[i] = Tensor(const_node(np.zeros(mask.shape + rest, v.dtype)) if node is None else node)
            # (nothing selected: any value will do)
    results = ufunc(*operands, **(kwargs or {}))
    if ufunc.nout > 1:
        return tuple(MaskedRead(r, mask, read.line, read.selected, read.lead) for r in results)
    return MaskedRead(results, mask, read.line, read.selected, read.lead)


def _selection_operator(ufunc, reflected: bool = False):
    def op(self: MaskedRead, other):
        return ufunc(other, self) if reflected else ufunc(self, other)
    return op


def _selection_in_place(ufunc):
    """``s op= v`` of a selection: NumPy computes in place in the selection (a copy of x's elements: every name
    of it sees the update, x does not), its 'same_kind' cast back into the selection's type (NumPy's own error
    otherwise)."""
    def op(self: MaskedRead, other):
        result = ufunc(self, other)
        target = self.values.dtype
        if not np.can_cast(result.values.dtype, target, casting="same_kind"):
            with np.errstate(all="ignore"):  # NumPy's own error, as it is
                ufunc(np.zeros(2, target), np.zeros(2, result.values.dtype), out=np.zeros(2, target))
        self.values = result.values.astype(target)
        return self
    return op


_SELECTION_OPERATORS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "truediv": np.true_divide,
                        "floordiv": np.floor_divide, "mod": np.remainder, "pow": np.power, "and": np.bitwise_and,
                        "or": np.bitwise_or, "xor": np.bitwise_xor, "lshift": np.left_shift, "rshift": np.right_shift}
for _name, _ufunc in _SELECTION_OPERATORS.items():
    setattr(MaskedRead, f"__{_name}__", _selection_operator(_ufunc))
    setattr(MaskedRead, f"__r{_name}__", _selection_operator(_ufunc, reflected=True))
    setattr(MaskedRead, f"__i{_name}__", _selection_in_place(_ufunc))
for _name, _ufunc in {"lt": np.less, "le": np.less_equal, "gt": np.greater, "ge": np.greater_equal, "eq": np.equal,
                      "ne": np.not_equal, "divmod": np.divmod}.items():
    setattr(MaskedRead, f"__{_name}__", _selection_operator(_ufunc))
setattr(MaskedRead, "__rdivmod__", _selection_operator(np.divmod, reflected=True))
for _name, _ufunc in {"neg": np.negative, "pos": np.positive, "abs": np.absolute, "invert": np.invert}.items():
    setattr(MaskedRead, f"__{_name}__", lambda self, _ufunc=_ufunc: _ufunc(self))
for _name in ("matmul", "rmatmul", "imatmul", "len", "iter", "bool", "float", "int", "index", "getitem", "setitem",
              "array"):
    setattr(MaskedRead, f"__{_name}__", MaskedRead.refuse)
del _name, _ufunc


def _copy_where_masked(t: Tensor, mask: Tensor, trailing: tuple, source: Tensor) -> None:
    """``x[mask] = s``, ``s`` a selection through the same mask (y[mask], or ufuncs of such; ``source`` the full
    array holding it where the mask holds): source's element (broadcast over x's trailing axes) wherever the mask
    holds, as NumPy copies one selection into the other -- as many rows as elements selected. NumPy's own
    assignment of a stand-in selection to one of x checks the shapes; x's dtype, cast as assignment casts."""
    chooses = _selected_stand_in(mask, trailing, 2)
    np.zeros(t.shape, t.dtype)[chooses] = np.zeros(source.shape, source.dtype)[chooses]  # NumPy's errors
    rest, given = t.shape[mask.ndim:], source.shape[mask.ndim:]
    if len(given) > len(rest):
        raise NotImplementedError(f"x[mask] = y[mask] with y of more axes than x ({source.shape} into {t.shape})")
    if mask.size == 0 or t.size == 0:
        return
    v = P.broadcast_to(P.reshape(source.node, mask.shape + (1,) * (len(rest) - len(given)) + given), t.shape)
    _write_where(t, P.cast(v, t.dtype), _mask_over(mask, t.shape), "item assignment (x[mask] = y[mask])",
                 "build the result instead (np.where(mask, y, x))")


def _constant_masks_as_indices(shape: tuple, key):
    """``key`` with each boolean mask known at trace time (a bool array, or a list NumPy reads as one) replaced by
    the integer arrays of its nonzero positions: NumPy's own reading of a mask (x[m] is x[m.nonzero()], its layout
    too), after NumPy's indexing of a stand-in of ``shape`` checks the key (a mask's shape against the axes it
    covers; a traced index array stands in as zeros of its shape). A key without such masks, or with a traced mask
    or a list of traced values beside one, comes back as it is."""
    parts = key if isinstance(key, tuple) else (key,)

    def mask_of(k):
        if isinstance(k, list):
            try:
                k = np.asarray(k)
            except ValueError:  # ragged: NumPy's own error, from the indexing below
                return None
        return k if isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim else None

    masks = [None if isinstance(k, Tensor) or isinstance(k, (list, tuple)) and _holds_tensor(k) else mask_of(k)
             for k in parts]
    if all(m is None for m in masks):
        return key
    if any(isinstance(k, Tensor) and k.dtype == np.bool_ for k in parts) or \
            any(isinstance(k, (list, tuple)) and _holds_tensor(k) for k in parts):
        return key  # (a traced mask beside it, or a list of traced values: refused or read where they are met)
    # NumPy's checks of the key, a traced index array standing in as zeros of its shape (a position in range)
    np.broadcast_to(np.zeros((), np.bool_), shape)[tuple(_zeros_stand_in(k) for k in parts)]
    return tuple(i for k, m in zip(parts, masks) for i in (np.nonzero(m) if m is not None else (k,)))


def _bool_scalars_as_new_axes(t: Tensor, key):
    """NumPy's reading of a boolean scalar in an index (True, False, a 0-d bool array): an advanced index of
    one (True) or no (False) position on a new axis of length 1 where it stands -- x[True, 0] is
    x[None][[0], 0], its layout too. Returns (the array with those axes, the key) or None where there is none."""
    parts = key if isinstance(key, tuple) else (key,)

    def is_bool_scalar(k):
        return isinstance(k, (bool, np.bool_)) or isinstance(k, np.ndarray) and k.dtype == np.bool_ and not k.ndim

    def axes_taken(k):  # (a mask takes as many axes as it has)
        if k is None or k is Ellipsis or is_bool_scalar(k):
            return 0
        if isinstance(k, (Tensor, np.ndarray)) and k.dtype == np.bool_:
            return k.ndim
        if isinstance(k, list):
            with contextlib.suppress(ValueError, TypeError):  # (ragged; holding traced values: an index array)
                as_array = np.asarray(k)
                return as_array.ndim if as_array.dtype == np.bool_ else 1
        return 1
    if not any(is_bool_scalar(k) for k in parts):
        return None
    consumed = sum(axes_taken(k) for k in parts)
    if consumed > t.ndim:
        raise IndexError(f"too many indices for array: array is {t.ndim}-dimensional, but {consumed} were indexed")
    widened = t[tuple(entry for k in parts for entry in
                      ((None,) if is_bool_scalar(k) else (k,) if k is Ellipsis else (slice(None),) * axes_taken(k)))]
    return widened, tuple(np.zeros(int(bool(k)), np.intp) if is_bool_scalar(k) else k for k in parts)


def getitem(t: Tensor, key):
    widened = _bool_scalars_as_new_axes(t, key)
    if widened is not None:
        return getitem(*widened)
    key = _constant_masks_as_indices(t.shape, key)
    masked = _mask_key(key)
    if masked is not None:  # its shape is the data's: only an assignment through the same key is followed
        np.empty(t.shape, np.bool_)[_selected_stand_in(*masked, 0)]  # NumPy's check of the mask's shape
        return MaskedRead(t, masked[0], P.user_location().short())
    inner = _inner_mask_view(t, key)
    if inner is not None:  # x[:, mask]: the selection from the view with the mask's axes first
        np.empty(t.shape, np.bool_)[_inner_stand_in_key(key, 0)]  # NumPy's check of the mask's shape
        return MaskedRead(inner[0], inner[1], P.user_location().short(), lead=inner[2])
    x = t.node
    index = key
    key = key if isinstance(key, tuple) else (key,)
    # an element (every axis taken by an integer) is a NumPy scalar; with an ellipsis, a 0-d array
    element = not any(k is Ellipsis for k in key if not isinstance(k, (np.ndarray, Tensor)))
    if sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    consumed = sum(1 for k in key if k is not None and k is not Ellipsis)
    if consumed > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {consumed} were indexed")
    if Ellipsis in [k for k in key if not isinstance(k, (np.ndarray, Tensor))]:
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        # an ellipsis standing for no axis still separates advanced indices, for NumPy's placement
        filler = (slice(None),) * (x.ndim - consumed) or (_NO_AXIS,)
        key = key[:i] + filler + key[i + 1:]
    else:
        key = key + (slice(None),) * (x.ndim - consumed)

    starts, sizes, steps = [], [], []
    gathers = []      # (dim, positions, step): negative-step slices
    advanced = []     # (dim, index node)
    out_shape = []
    dim = 0
    for k in key:
        if k is None:
            out_shape.append(("new", None))
            continue
        if k is _NO_AXIS:
            out_shape.append(("gap", None))
            continue
        n = x.shape[dim]
        if isinstance(k, (int, np.integer)):
            i = int(k)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            starts.append(i % n), sizes.append(1), steps.append(1)
            out_shape.append(("drop", None))
        elif isinstance(k, slice):
            lo, hi, st = k.indices(n)
            count = len(range(lo, hi, st))
            if st > 0:
                starts.append(lo if count else 0), sizes.append(count), steps.append(st)
            else:
                starts.append(0), sizes.append(n), steps.append(1)
                gathers.append((dim, np.arange(n)[k], st))
            out_shape.append(("keep", dim))
        else:
            idx = _index_node(k)
            starts.append(0), sizes.append(n), steps.append(1)
            advanced.append((dim, idx))
            out_shape.append(("adv", idx.shape))
        dim += 1
    y = P.slice_(x, starts, sizes, steps)
    for d, positions, st in gathers:
        y = P.reversed_slice(y, d, positions, st)
    if not advanced:
        y = P.reshape(y, tuple(1 if kind == "new" else y.shape[axis]
                               for axis, (kind, _) in _axes(out_shape) if kind != "drop"))
        if element and y.ndim == 0:
            return Tensor(y, scalar=True)  # an element is a NumPy scalar, a copy
        return view(y, t, positions=lambda p: p[index])
    result = Tensor(_advanced_index(y, out_shape, advanced), scalar=element)
    if all(isinstance(k, Tensor) and k.numpy_scalar for k in key if _is_advanced(k)) and \
            not (element and result.ndim == 0):
        # NumPy indexes by a NumPy integer (a traced one here) as by an int: the result is a view, at
        # positions only the kernel knows, so it keeps the array from being updated while it lives; it
        # strides as the sliced array does along the axes it keeps (``layout``)
        if not layout.known(y):
            return view(P.layout_unknown(result.node), t)
        strides = tuple(layout.strides_of(y)[axis] if kind == "keep" else 0
                        for axis, (kind, _) in _axes(out_shape) if kind in ("keep", "new"))
        return view(P.laid_out(result.node, strides), t)
    return result


def _advanced_index_laid_out_by_numpy(z: P.Node, y: P.Node, out_shape, indices) -> P.Node:
    """``z``, the advanced indexing of ``y`` that ``out_shape`` describes, laid out as NumPy lays out its own
    indexing of zeros laid out as ``y`` by zeros laid out as the index arrays (the layout follows the
    operands' strides, not their values); unknown where an index array's layout is."""
    if not all(layout.known(i) for i in indices):
        return P.layout_unknown(z)
    arrays = iter([_laid_out_array(i.shape, i.dtype, layout.strides_of(i)) for i in indices])
    entry = {"new": lambda: None, "keep": lambda: slice(None), "drop": lambda: 0, "gap": lambda: Ellipsis,
             "adv": lambda: next(arrays)}
    indexed = _laid_out_array(y.shape, y.dtype, layout.strides_of(y))[tuple(entry[kind]() for kind, _ in out_shape)]
    return P.laid_out(z, tuple(s // indexed.itemsize for s in indexed.strides))


def _is_advanced(k) -> bool:
    return not (k is None or k is Ellipsis or k is _NO_AXIS or isinstance(k, (int, np.integer, slice)))


_NO_AXIS = object()  # an ellipsis that expands to no axis: "gap" in the index entries


def _axes(out_shape):
    """(axis of the sliced array or None, entry) for each index entry, a new axis taking none;
    gaps (an ellipsis of no axis) are skipped."""
    axis = 0
    for kind, extra in out_shape:
        if kind == "gap":
            continue
        yield (None if kind == "new" else axis), (kind, extra)
        axis += kind != "new"


def _advanced_index(y, out_shape, advanced):
    """NumPy's integer-array indexing of the sliced ``y`` (integer-indexed axes kept as size 1): one
    gather over the indexed axes, made adjacent first. The broadcast axes go where the advanced
    indices (arrays and integers) were when those are adjacent, else first, as NumPy does."""
    dims, indices = [d for d, _ in advanced], [idx for _, idx in advanced]
    if dims == list(range(dims[0], dims[-1] + 1)):
        z = P.gather(y, indices, dims[0])
        order = list(range(dims[0])) + ["B"] + list(range(dims[-1] + 1, y.ndim))
    else:
        others = [d for d in range(y.ndim) if d not in dims]
        z = P.gather(P.transpose(y, dims + others), indices, 0)
        order = ["B"] + others
    # z's axes labelled by the axis of y they come from, "B" for the broadcast index axes
    n_b = z.ndim - (y.ndim - len(dims))
    labels = [label for item in order for label in (["B"] * n_b if item == "B" else [item])]
    b_shape = [z.shape[i] for i, label in enumerate(labels) if label == "B"]
    kinds = [kind for kind, _ in out_shape if kind not in ("new", "gap")]
    positions = [i for i, (kind, _) in enumerate(out_shape) if kind in ("adv", "drop")]
    adjacent = positions[-1] - positions[0] + 1 == len(positions)
    want, final = ([], []) if adjacent else (["B"], list(b_shape))
    for axis, (kind, _) in _axes(out_shape):
        if kind == "new":
            final.append(1)
        elif kind == "keep":
            want.append(axis)
            final.append(y.shape[axis])
        elif "B" not in want:
            want.append("B")
            final.extend(b_shape)
    kept = [i for i, label in enumerate(labels) if label == "B" or kinds[label] != "drop"]
    z = P.reshape(z, tuple(z.shape[i] for i in kept))  # the integer-indexed axes have size 1
    labels = [labels[i] for i in kept]
    perm = [i for item in want for i, label in enumerate(labels) if label == item]
    if perm != list(range(len(perm))):
        z = P.transpose(z, perm)
    z = P.reshape(z, tuple(final))
    # NumPy fills a fresh array of the broadcast index axes, then the kept ones in the order they lie in
    # memory ("K"), and moves the index axes into place: that is its layout (``layout``), whatever the
    # steps above imply (modelled where no kept axis of the operand is broadcast: NumPy's iterator orders
    # those by rules of its own, which NumPy is asked for)
    if not layout.known(y):
        return P.layout_unknown(z)
    if any(s == 0 and n > 1 for s, n in zip(layout.strides_of(y), y.shape)):
        return _advanced_index_laid_out_by_numpy(z, y, out_shape, indices)
    final_axes = ([] if adjacent else ["B"] * len(b_shape))  # what each axis of the result is
    for axis, (kind, _) in _axes(out_shape):
        if kind in ("new", "keep"):
            final_axes.append(axis if kind == "keep" else "new")
        elif "B" not in final_axes:
            final_axes += ["B"] * len(b_shape)
    memory = [d for d in layout.iteration_order(y.shape, [layout.strides_of(y)]) if d in final_axes]
    # the index axes in C order, or, where no axis of the operand is kept, in the order NumPy's iterator
    # visits the index arrays (an F-ordered index's result is then F-ordered)
    arrays = [idx for idx in indices if idx.ndim]
    b_order = list(range(len(b_shape)))
    if not memory:
        if not all(layout.known(idx) for idx in arrays):
            return P.layout_unknown(z)
        b_order = layout.iteration_order(tuple(b_shape), [layout.broadcast_strides(idx, tuple(b_shape))
                                                          for idx in arrays])
    b_positions = [i for i, a in enumerate(final_axes) if a == "B"]
    order = [b_positions[j] for j in b_order] + [final_axes.index(d) for d in memory] + \
        [i for i, a in enumerate(final_axes) if a == "new"]
    return P.laid_out(z, layout.contiguous_strides(z.shape, tuple(order)))

