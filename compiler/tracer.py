"""The tracing tensor: a placeholder that records operations into the graph.

``Tensor`` supports Python operators and methods directly and joins NumPy's array
protocols (``__array_ufunc__``, ``__array_function__``), so unmodified NumPy code
traces; the NumPy functions it understands live in ``numpy_api``."""

from __future__ import annotations

import numpy as np

from . import dtypes as dt
from . import primitives as P
from .graph import Node, const_node


class Tensor:
    """A traced value of static shape and dtype."""

    __array_priority__ = 1000
    __slots__ = ("node",)

    def __init__(self, node: Node):
        self.node = node

    # -- metadata
    shape = property(lambda self: self.node.shape)
    dtype = property(lambda self: self.node.dtype)
    ndim = property(lambda self: self.node.ndim)
    size = property(lambda self: self.node.size)
    T = property(lambda self: self.transpose())

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={self.dtype}, op={self.node.op})"

    # -- values cannot escape a trace
    def __array__(self, dtype=None, copy=None):
        raise TypeError(
            "a traced Tensor has no value yet: it cannot be converted to a NumPy array inside a compiled function "
            "(a NumPy function that is not supported by the compiler may have tried to)")

    def __bool__(self):
        raise TypeError("the truth value of a traced Tensor is not known at trace time (data-dependent control flow is not supported)")

    def __float__(self):
        raise TypeError("a traced Tensor cannot be converted to float inside a compiled function")

    def __int__(self):
        raise TypeError("a traced Tensor cannot be converted to int inside a compiled function")

    def __index__(self):
        raise TypeError("a traced Tensor cannot be used as a Python index inside a compiled function")

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # -- operators
    def _bin(name, reflected=False):
        def op(self, other):
            other = as_operand(other)
            if other is NotImplemented:
                return NotImplemented
            args = [other, self.node] if reflected else [self.node, other]
            return Tensor(P.elementwise(name, args))
        op.__name__ = name
        return op

    __add__, __radd__ = _bin("add"), _bin("add", True)
    __sub__, __rsub__ = _bin("subtract"), _bin("subtract", True)
    __mul__, __rmul__ = _bin("multiply"), _bin("multiply", True)
    __truediv__, __rtruediv__ = _bin("divide"), _bin("divide", True)
    __floordiv__, __rfloordiv__ = _bin("floor_divide"), _bin("floor_divide", True)
    __mod__, __rmod__ = _bin("remainder"), _bin("remainder", True)
    __pow__, __rpow__ = _bin("power"), _bin("power", True)
    __gt__, __ge__ = _bin("greater"), _bin("greater_equal")
    __lt__, __le__ = _bin("less"), _bin("less_equal")
    __eq__, __ne__ = _bin("equal"), _bin("not_equal")
    __hash__ = object.__hash__
    del _bin

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self

    def __neg__(self):
        return Tensor(P.elementwise("negative", [self.node]))

    def __pos__(self):
        return self

    def __abs__(self):
        return Tensor(P.elementwise("absolute", [self.node]))

    def __matmul__(self, other):
        other = as_node(other)
        return Tensor(P.matmul(self.node, other))

    def __rmatmul__(self, other):
        return Tensor(P.matmul(as_node(other), self.node))

    # -- methods
    def reshape(self, *shape, order="C"):
        if order != "C":
            raise NotImplementedError("reshape: only order='C' is supported")
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return Tensor(P.reshape(self.node, shape))

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        return Tensor(P.transpose(self.node, axes or None))

    def astype(self, dtype):
        return Tensor(P.cast(self.node, dtype))

    def sum(self, axis=None, dtype=None, keepdims=False):
        from .numpy_api import sum_
        return sum_(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def max(self, axis=None, keepdims=False):
        return Tensor(P.reduce("max", self.node, axis, keepdims, "max"))

    def min(self, axis=None, keepdims=False):
        return Tensor(P.reduce("min", self.node, axis, keepdims, "min"))

    def argmax(self, axis=None, keepdims=False):
        return Tensor(P.arg_reduce("argmax", self.node, axis, keepdims, "argmax"))

    def argmin(self, axis=None, keepdims=False):
        return Tensor(P.arg_reduce("argmin", self.node, axis, keepdims, "argmin"))

    def mean(self, axis=None, dtype=None, keepdims=False):
        from .numpy_api import mean
        return mean(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def var(self, axis=None, dtype=None, ddof=0, keepdims=False):
        from .numpy_api import var
        return var(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)

    def __getitem__(self, key):
        from .numpy_api import getitem
        return getitem(self, key)

    # -- NumPy protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from .numpy_api import apply_ufunc
        return apply_ufunc(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        from .numpy_api import apply_function
        return apply_function(func, args, kwargs)


def as_operand(x):
    """A Node for tensors and NumPy values (strong), ``Weak`` for Python scalars."""
    if isinstance(x, Tensor):
        return x.node
    if isinstance(x, bool):
        # NEP 50: only int, float and complex are weak; a Python bool is a NumPy bool
        return const_node(np.asarray(x))
    if dt.is_python_scalar(x):
        return dt.Weak(x)
    if isinstance(x, (np.ndarray, np.generic, list, tuple)):
        arr = np.asarray(x)
        dt.check_supported(arr.dtype, "constant operand")
        return const_node(arr)
    return NotImplemented


def as_node(x) -> Node:
    """Like ``as_operand`` but Python scalars become concrete constants (NumPy's default dtypes)."""
    op = as_operand(x)
    if op is NotImplemented:
        raise TypeError(f"unsupported operand of type {type(x).__name__}")
    if isinstance(op, dt.Weak):
        arr = np.asarray(op.value)
        dt.check_supported(arr.dtype, "constant operand")
        return const_node(arr)
    return op


def wrap(node: Node) -> Tensor:
    return Tensor(node)
