"""The tracing tensor: a placeholder that records operations into the graph.

``Tensor`` supports Python operators and methods directly and joins NumPy's array
protocols (``__array_ufunc__``, ``__array_function__``), so unmodified NumPy code
traces; the NumPy functions it understands live in ``numpy_api``."""

from __future__ import annotations

import builtins
import dis
import inspect
import linecache
import os
import re
import sys
import weakref

import numpy as np

from . import dtypes as dt
from . import primitives as P
from . import layout
from .graph import Node, const_node


def memory_order(order, default: str) -> str:
    """A NumPy ``order=`` argument ("C", "F", "A", "K", either case; None is ``default``), as NumPy checks it."""
    if order is None:
        return default
    if not isinstance(order, str):
        raise TypeError(f"order must be str, not {type(order).__name__}")
    if order.upper() not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    return order.upper()


class Tensor:
    """A traced value of static shape and dtype."""

    __array_priority__ = 1000
    __slots__ = ("node", "aliases", "scalar", "bases", "positions", "views", "__weakref__")

    def __init__(self, node: Node, aliases: str | None = None, scalar: bool = False, bases: tuple = ()):
        self.node = node
        # what NumPy's array here would share memory with ("the argument x", "a view"), or None
        # for a fresh array (see update_in_place for what may be updated in place)
        self.aliases = aliases
        # for a view, the Tensors whose memory it looks at (its base, that one's base...); the last is
        # the root, the array that owns the memory
        self.bases = bases
        # for a view NumPy makes whatever the memory's layout (basic indexing, transposes, squeezes,
        # splits): the root's flat position of each element, so updates can be written through; else None
        self.positions = None
        # on a root: weak references to the views taken of it, which an update must refresh
        self.views = None
        # NumPy returns this value as a NumPy scalar when it is 0-d (a ufunc's or reduction's
        # result, an element taken by integer indices), not as a 0-d array; so does the compiled function
        self.scalar = scalar

    # -- metadata
    def _set_in_place(name: str, instead: str):
        def refuse(self, value):
            raise AttributeError(f"setting x.{name} of a traced array: NumPy changes the array object itself in place, "
                                 f"which the compiler does not follow; {instead}")
        return refuse

    shape = property(lambda self: self.node.shape, _set_in_place("shape", "write x = x.reshape(shape), a view of "
                                                                  "the same memory as NumPy's in-place reshape"))
    dtype = property(lambda self: self.node.dtype, _set_in_place("dtype", "write x = x.view(dtype)"))
    del _set_in_place
    ndim = property(lambda self: self.node.ndim)
    size = property(lambda self: self.node.size)
    T = property(lambda self: self.transpose())
    # what NumPy returns here is a NumPy scalar (immutable, no memory to share), not a 0-d array
    numpy_scalar = property(lambda self: self.scalar and self.ndim == 0)
    real = property(lambda self: self)  # NumPy's real part of a real array: the array itself

    @real.setter
    def real(self, value):  # so x.real = v is x[...] = v
        self[...] = value
    itemsize = property(lambda self: self.node.dtype.itemsize)
    nbytes = property(lambda self: self.node.size * self.node.dtype.itemsize)
    device = property(lambda self: "cpu")  # NumPy's only array-API device

    @property
    def mT(self):
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        from .numpy_api import matrix_transpose
        return matrix_transpose(self)

    def to_device(self, device, /, *, stream=None):
        if device != "cpu":
            raise ValueError(f"Unsupported device: {device}. Only 'cpu' is accepted.")
        return self

    def __getattr__(self, name):
        # only reached for names Tensor lacks: an ndarray attribute gets a message saying why, as an
        # AttributeError still (hasattr keeps working)
        if not name.startswith("_") and hasattr(np.ndarray, name):
            why = _UNTRACEABLE_ATTRIBUTES.get(name, "not supported by the compiler")
            raise AttributeError(f"x.{name} of a traced array: {why}")
        raise AttributeError(f"'Tensor' object has no attribute {name!r}")

    @property
    def imag(self):
        from .numpy_api import imag
        return imag(self)

    @imag.setter
    def imag(self, value):
        raise TypeError("array does not have imaginary part to set")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, dtype={self.dtype}, op={self.node.op})"

    # -- values cannot escape a trace
    def __array__(self, dtype=None, copy=None):
        entry, function = numpy_entry_point()
        if entry and _traced_function(function):  # np.sum([x[0], x[1]]): NumPy dispatched on the list, not on x
            who = f"{entry} was handed it in an argument NumPy's dispatch does not look at"
            hint = _NESTED_HINT
        elif entry:
            who = f"{entry} tried to: the compiler does not trace that function"
            hint = (_VECTORIZE_HINT if entry.startswith("vectorize") else FULL_HINT if function is np.full
                    else _INTO_NUMPY)
        else:  # NumPy's C code, called from this line
            where, text, instruction = _converting_line()
            who = f"at {where}: {text}"
            if instruction == "BINARY_SUBSCR":  # np.eye(n)[i]
                hint = _INDEXED_HINT
            elif instruction == "STORE_SUBSCR":  # out[i] = x, out[i] = 1
                hint = _STORED_HINT
            else:
                hint = _CONVERTER_HINT if _CONVERTERS.search(text) else _INTO_NUMPY + _OR_NESTED
        raise TypeError(
            f"a traced Tensor has no value yet: it cannot be converted to a NumPy array inside a compiled function ({who})"
            + hint)

    def __round__(self, ndigits=None):
        # NumPy's scalars define round() (np.round's NumPy scalar with ndigits, a Python int without); its arrays
        # and its bool do not
        if not self.numpy_scalar or self.dtype == np.bool_:
            raise TypeError(f"type numpy.{'ndarray' if not self.numpy_scalar else 'bool'} doesn't define __round__ "
                            "method")
        if ndigits is None:
            raise TypeError("round() of a traced NumPy scalar without ndigits is a Python int, whose value the trace "
                            "does not know: np.round(x) is the NumPy scalar")
        return np.round(self, ndigits)

    def __contains__(self, value):
        raise TypeError("`value in x` is NumPy's (x == value).any() as a Python bool, whose value the trace does not "
                        "know: use np.any(x == value), a traced bool")

    def __format__(self, spec):
        if spec:
            raise TypeError(f"format(x, {spec!r}) of a traced value: it has no value until the kernel runs; format "
                            "the compiled function's result")
        return object.__format__(self, spec)

    def __array_namespace__(self, *, api_version=None):
        """NumPy itself, as ndarray answers (array-API code: ``xp = x.__array_namespace__()``; ``xp.sum(x)`` is
        then traced as np.sum is); NumPy's own answer checks the version asked."""
        return np.empty(0).__array_namespace__(api_version=api_version)

    # np.from_dlpack(x) (torch's too) asks x for its memory rather than handing the compiler a call
    def __dlpack__(self, *args, **kwargs):
        raise _no_dlpack()

    def __dlpack_device__(self):
        raise _no_dlpack()

    def __bool__(self):
        raise TypeError("the truth value of a traced Tensor is not known at trace time (data-dependent control flow is not supported)")

    def __float__(self):
        raise TypeError("a traced Tensor cannot be converted to float inside a compiled function" + _INTO_NUMPY)

    def __complex__(self):
        raise TypeError("a traced Tensor cannot be converted to complex inside a compiled function" + _INTO_NUMPY)

    def __int__(self):
        raise TypeError("a traced Tensor cannot be converted to int inside a compiled function" + _INTO_NUMPY)

    def __index__(self):
        raise TypeError("a traced Tensor cannot be used as a Python index inside a compiled function")

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    # -- operators
    def _bin(name, reflected=False):
        def op(self, other):
            if name in ("equal", "not_equal") and (other is None or isinstance(other, (str, bytes))):
                return self._compared_with_no_number(other, name == "not_equal")
            other = as_operand(other)
            if other is NotImplemented:
                return NotImplemented
            args = [other, self.node] if reflected else [self.node, other]
            return Tensor(P.elementwise(name, args), scalar=True)
        op.__name__ = name
        return op

    def _compared_with_no_number(self, other, unequal: bool):
        """NumPy's == and != with None or a string, known at trace time: an array compares elementwise over object
        dtype (all False, or all True for !=); a NumPy scalar gives Python's answer for None and a NumPy bool for a
        string."""
        if self.numpy_scalar:
            return unequal if other is None else np.bool_(unequal)
        return Tensor(const_node(np.full(self.shape, unequal)))

    __add__, __radd__ = _bin("add"), _bin("add", True)
    __sub__, __rsub__ = _bin("subtract"), _bin("subtract", True)
    __mul__, __rmul__ = _bin("multiply"), _bin("multiply", True)
    __truediv__, __rtruediv__ = _bin("divide"), _bin("divide", True)
    __floordiv__, __rfloordiv__ = _bin("floor_divide"), _bin("floor_divide", True)
    __mod__, __rmod__ = _bin("remainder"), _bin("remainder", True)
    __rpow__ = _bin("power", True)
    _power = _bin("power")

    def _fast_power(self, other) -> str | None:
        """The ufunc NumPy's ndarray ** calls in place of np.power (its fast_scalar_power), if any: np.sqrt for an
        exact Python float 0.5 on a float array, np.square for an exact Python int 2 on a bool one (int8, where
        np.power gives int64). np.power itself takes sqrt only in some loops (``P.elementwise``)."""
        if type(other) is float and other == 0.5 and self.dtype.kind == "f":
            return "sqrt"
        if type(other) is int and other == 2 and self.dtype == np.bool_ and not self.numpy_scalar:
            return "square"
        return None

    def __pow__(self, other):
        fast = self._fast_power(other)
        return getattr(np, fast)(self) if fast else self._power(other)
    __gt__, __ge__ = _bin("greater"), _bin("greater_equal")
    __lt__, __le__ = _bin("less"), _bin("less_equal")
    __eq__, __ne__ = _bin("equal"), _bin("not_equal")
    __and__, __rand__ = _bin("bitwise_and"), _bin("bitwise_and", True)
    __or__, __ror__ = _bin("bitwise_or"), _bin("bitwise_or", True)
    __xor__, __rxor__ = _bin("bitwise_xor"), _bin("bitwise_xor", True)
    __lshift__, __rlshift__ = _bin("left_shift"), _bin("left_shift", True)
    __rshift__, __rrshift__ = _bin("right_shift"), _bin("right_shift", True)
    del _bin

    def __hash__(self):
        # NumPy's arrays are unhashable (a set of them, np.typename of one: its TypeError); its scalars hash by
        # value, which a trace does not know: a traced NumPy scalar hashes by identity
        if not self.numpy_scalar:
            raise TypeError("unhashable type: 'numpy.ndarray'")
        return object.__hash__(self)

    # -- in-place operators: NumPy's ``ufunc(x, y, out=x)``. The result is cast back to x's dtype
    # under 'same_kind' and must keep x's shape. The Tensor object itself is updated, so every
    # name bound to it sees the change, as in NumPy, and so does every view of the same memory
    # (update_in_place). A NumPy scalar is immutable: there ``x += y`` is ``x = x + y``.
    def _inplace(name, symbol, binary):
        def op(self, other):
            if self.numpy_scalar:
                return getattr(self, binary)(other)
            if self.aliases == READ_ONLY:
                raise ValueError("output array is read-only")
            fast = self._fast_power(other) if name == "power" else None
            raise_numpys_type_error(getattr(np, fast or name), [self] if fast else [self, other], [self],
                                    f"in-place '{symbol}'")  # before shapes
            if name in ("matmul", "power"):  # power: NumPy's in-place ** takes the same fast path as **
                result = getattr(self, binary)(other)
                if result is NotImplemented:
                    return NotImplemented
            else:
                operand = as_operand(other)
                if operand is NotImplemented:
                    return NotImplemented
                result = Tensor(P.elementwise(name, [self.node, operand]), scalar=True)
            if not np.can_cast(result.dtype, self.dtype, casting="same_kind"):
                raise TypeError(f"Cannot cast ufunc '{name}' output from {result.dtype} to {self.dtype} with casting "
                                f"rule 'same_kind' (in-place '{symbol}')")
            if result.shape != self.shape:
                raise ValueError(f"non-broadcastable output operand with shape {self.shape} doesn't match the "
                                 f"broadcast shape {result.shape} (in-place '{symbol}')")
            update_in_place(self, P.cast(result.node, self.dtype), f"in-place '{symbol}'",
                            f"write `x = x {symbol[:-1]} y` (a new array) instead")
            return self
        op.__name__ = f"__i{name}__"
        return op

    __iadd__, __isub__ = _inplace("add", "+=", "__add__"), _inplace("subtract", "-=", "__sub__")
    __imul__, __itruediv__ = _inplace("multiply", "*=", "__mul__"), _inplace("divide", "/=", "__truediv__")
    __ifloordiv__, __imod__ = _inplace("floor_divide", "//=", "__floordiv__"), _inplace("remainder", "%=", "__mod__")
    __ipow__, __imatmul__ = _inplace("power", "**=", "__pow__"), _inplace("matmul", "@=", "__matmul__")
    __iand__, __ior__ = _inplace("bitwise_and", "&=", "__and__"), _inplace("bitwise_or", "|=", "__or__")
    __ixor__ = _inplace("bitwise_xor", "^=", "__xor__")
    __ilshift__, __irshift__ = _inplace("left_shift", "<<=", "__lshift__"), _inplace("right_shift", ">>=", "__rshift__")
    del _inplace

    def __divmod__(self, other):
        return self // other, self % other

    def __rdivmod__(self, other):
        return other // self, other % self

    def __neg__(self):
        return Tensor(P.elementwise("negative", [self.node]), scalar=True)

    def __pos__(self):
        from .numpy_api import apply_ufunc
        return apply_ufunc(np.positive, "__call__", (self,), {})

    def __invert__(self):
        return Tensor(P.elementwise("invert", [self.node]), scalar=True)


    def __abs__(self):
        return Tensor(P.elementwise("absolute", [self.node]), scalar=True)

    def __matmul__(self, other):
        other = as_node(other)
        return Tensor(P.matmul(self.node, other, gufunc=True), scalar=True)

    def __rmatmul__(self, other):
        return Tensor(P.matmul(as_node(other), self.node, gufunc=True), scalar=True)

    # -- methods
    def reshape(self, *shape, order="C", copy=None):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        order = memory_order(order, "C")
        if order == "K":
            raise ValueError("order 'K' is not permitted for reshaping")
        if order == "C" or order == "A" and self._read_axes("A", "reshape") == tuple(range(self.ndim)):
            node = P.reshape(self.node, shape)
            return self._reshaped(node, lambda p: p.reshape(node.shape), "C", copy)
        # Fortran's index order: the reversed axes read, and written, C's way
        node = P.transpose(P.reshape(P.transpose(self.node, None), tuple(shape)[::-1]), None)
        return self._reshaped(node, lambda p: p.reshape(node.shape, order="F"), "F", copy)

    def _reshaped(self, node: Node, positions, order: str, copy) -> Tensor:
        """NumPy's reshape to ``node``'s shape: a view where this array's strides allow one (NumPy's
        _attempt_nocopy_reshape, as ``layout.reshape_copies`` repeats it), which updates write through at ``positions``;
        a fresh array where NumPy copies, or where ``copy=True`` asks (laid out in the reshape's ``order``,
        as NumPy copies before it reshapes). Where the model only guesses the layout, a view whose updates
        are refused, since whether NumPy's memory is shared is not known. A NumPy scalar stays one
        (np.float64(1).reshape(())); an array of one element becomes a 0-d array."""
        scalar = self.numpy_scalar
        if copy:
            axes = tuple(range(node.ndim))
            return Tensor(P.laid_out(node, layout.contiguous_strides(node.shape, axes if order == "C" else axes[::-1])),
                          scalar=scalar)
        if not layout.known(self.node):
            if copy is not None:
                raise NotImplementedError("reshape(..., copy=False) of an array whose memory layout the compiler "
                                          "only guesses: whether NumPy must copy is not known")
            return view(node, self, scalar=scalar)
        if layout.reshape_copies(self.shape, layout.strides_of(self.node), node.shape, order):
            if copy is not None:
                raise ValueError("Unable to avoid creating a copy while reshaping.")
            return Tensor(node, scalar=scalar)
        return view(node, self, scalar=scalar, positions=positions)

    def _read_axes(self, order: str, what: str) -> tuple:
        """The axes, outermost first, in which NumPy's ravel, flatten and reshape read the elements in
        ``order``: C's; Fortran's (reversed); for "A" Fortran's where the array is Fortran- and not
        C-contiguous, else C's; for "K" the order NumPy's iterator visits the array in (by decreasing
        stride size; an axis with a negative stride is still read forwards, as NumPy's ravel does)."""
        axes = tuple(range(self.ndim))
        if order in ("C", "F"):
            return axes if order == "C" else axes[::-1]
        if not layout.known(self.node):
            raise NotImplementedError(f"{what} with order={order!r} of an array whose memory layout the compiler only "
                                      "guesses (NumPy's own call on stand-ins of it failed): use 'C' or 'F'")
        strides = layout.strides_of(self.node)
        if order == "K":  # NumPy's iterator's order (a broadcast's zero strides decide nothing)
            return layout.iteration_order(self.shape, [strides])
        return axes[::-1] if layout.fortran_only(self.shape, strides) else axes

    def _laid_out_in(self, order: str) -> bool:
        """Whether NumPy's array is laid out as ``order`` asks of a copy-free astype: any layout for "K";
        C- or Fortran-contiguous for "A"; C-contiguous for "C", Fortran-contiguous for "F" (a layout the
        model only guesses is taken to be so)."""
        if order == "K" or not layout.known(self.node):
            return True
        strides = layout.strides_of(self.node)
        c, f = layout.contiguous(self.shape, strides), layout.contiguous(self.shape, strides, fortran=True)
        return {"A": c or f, "C": c, "F": f}[order]

    def _read_flat(self, order: str, what: str) -> Node:
        """The elements in one axis, in the order ``order`` reads them."""
        axes = self._read_axes(memory_order(order, "C"), what)
        read = self.node if axes == tuple(range(self.ndim)) else P.transpose(self.node, axes)
        return P.reshape(read, (self.size,))

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        elif len(axes) == 1 and isinstance(axes[0], np.ndarray) and axes[0].ndim == 1:
            axes = tuple(axes[0])  # NumPy reads an array of axes as the sequence of its elements
        return view(P.transpose(self.node, axes or None), self, scalar=self.numpy_scalar,
                    positions=lambda p: np.transpose(p, axes or None))

    def copy(self, order="C"):
        """A fresh array of the same values (so it may be updated in place), laid out in ``order`` as
        NumPy's copy is (``layout`` works out what "K" and "A" make of the operand's layout)."""
        order = memory_order(order, "C")
        if self.ndim:  # (a 1-d copy of a reversed view runs forward again)
            return Tensor(P.copy(self.node, order), scalar=self.scalar)
        return Tensor(self.node, scalar=self.scalar)

    def astype(self, dtype, order="K", casting="unsafe", subok=True, copy=True):
        dtype = dtype_argument(dtype, "x.astype(dtype)")
        if not np.can_cast(self.dtype, dtype, casting=casting):
            raise TypeError(f"Cannot cast array data from {self.dtype!r} to {np.dtype(dtype)!r} according to the "
                            f"rule {casting!r}")
        order = memory_order(order, "K")
        if np.dtype(dtype) == self.dtype:  # NumPy returns the array itself where it may (not copy, laid out as
            # ``order`` asks), or copies it
            return self if not copy and self._laid_out_in(order) else self.copy(order)
        # an array NumPy allocates (a copy in ``order``), not a cast a loop makes as it reads: its layout decides
        # the layout of a ufunc over it (a broadcast operand's astype lays the broadcast axis innermost)
        return Tensor(P.cast(self.node, dtype), scalar=self.scalar).copy(order)

    # methods that are NumPy functions of the array (their signatures, positional out included): one
    # definition each in numpy_api
    def _function_method(name, function_name=None):
        def method(self, *args, **kwargs):
            from . import numpy_api
            return call_library_function(getattr(numpy_api, function_name or name), self, *args, **kwargs)
        method.__name__ = name
        return method

    sum, prod = _function_method("sum", "sum_"), _function_method("prod")

    def _logical_method(name, function_name):
        # ndarray.any/all are NumPy's _methods._any/_all, whose second parameter is dtype (np.any's is out): the
        # dtype of logical_or/logical_and.reduce, which has a bool loop only
        def method(self, axis=None, dtype=None, out=None, keepdims=False, *, where=True):
            from . import numpy_api
            if dtype is not None:
                if isinstance(dtype, Tensor):
                    dtype_argument(dtype, f"x.{name}(..., dtype=...)")
                {"any": np.logical_or, "all": np.logical_and}[name].reduce(np.zeros(1, self.dtype), dtype=dtype)
            return call_library_function(getattr(numpy_api, function_name), self, axis, out, keepdims, where=where)
        method.__name__ = name
        return method
    any, all = _logical_method("any", "any_"), _logical_method("all", "all_")
    max, min = _function_method("max", "amax"), _function_method("min", "amin")
    argmax, argmin = _function_method("argmax"), _function_method("argmin")
    mean, var, std, round = _function_method("mean"), _function_method("var"), _function_method("std"), \
        _function_method("round", "round_")
    take, squeeze, swapaxes, ravel = (_function_method("take"), _function_method("squeeze"),
                                      _function_method("swapaxes"), _function_method("ravel"))
    dot, cumsum, cumprod = _function_method("dot"), _function_method("cumsum"), _function_method("cumprod")
    repeat, diagonal, trace = _function_method("repeat"), _function_method("diagonal"), _function_method("trace")
    argsort, searchsorted = _function_method("argsort"), _function_method("searchsorted")

    def choose(self, *choices, out=None, mode="raise"):
        """ndarray.choose: more than one positional argument are the choices themselves (NumPy's C method reads
        them so); out and mode are keywords only."""
        from .numpy_api import choose
        if not choices:
            raise TypeError("choose() takes exactly 1 argument (0 given)")
        return call_library_function(choose, self, choices[0] if len(choices) == 1 else choices, out, mode)

    def compress(self, condition, axis=None, out=None):
        from .numpy_api import compress
        return call_library_function(compress, condition, self, axis, out)

    def conj(self, out=None):
        """NumPy's ndarray.conj of a real array runs no ufunc: it is the array itself (a bool one stays bool,
        where np.conjugate gives int8), or copied into ``out`` as np.copyto copies."""
        if out is None:
            return self
        np.copyto(out, self)
        return out

    conjugate = conj
    del _function_method

    def flatten(self, order="C"):
        """A copy, unlike ``ravel``'s view (so it may be updated in place)."""
        return Tensor(self._read_flat(order, "flatten"))

    def view(self, dtype=None, type=None):
        """A view of the same memory: of the same dtype, the same elements (written through as any view); of
        another dtype of the same itemsize, the same bits read as that dtype (writes through such a view are
        refused: they would be bits of another type). Another itemsize
        changes the last axis's length by the memory's layout, which a traced array does not have."""
        if type is not None or (isinstance(dtype, builtins.type) and issubclass(dtype, np.ndarray)):
            raise NotImplementedError("x.view(type=...): ndarray subclasses are not supported by the compiler")
        dtype = None if dtype is None else dtype_argument(dtype, "x.view(dtype)")
        if dtype is None or dtype == self.dtype:  # the same elements: writable as any view
            return view(self.node, self, scalar=self.numpy_scalar, positions=lambda p: p)
        if dtype.itemsize != self.dtype.itemsize:
            if self.ndim == 0:
                raise ValueError("Changing the dtype of a 0d array is only supported if the itemsize is unchanged")
            raise NotImplementedError(f"x.view({dtype}) of {self.dtype}: another itemsize regroups the bytes of the "
                                      "last axis by the memory's layout, which a traced array does not have")
        return view(P.bitcast(self.node, dtype), self, scalar=self.numpy_scalar)

    def fill(self, value):
        """In place: every element the value, converted as NumPy's fill converts it (its errors)."""
        from .numpy_api import fill
        fill(self, value)

    @property
    def flat(self):
        # a NumPy scalar's flatiter runs over a 0-d array copied from it: writes change only that copy
        return FlatIterator(Tensor(self.node) if self.numpy_scalar else self)

    @flat.setter
    def flat(self, value):
        if self.numpy_scalar:
            raise AttributeError("attribute 'flat' of 'numpy.generic' objects is not writable")
        FlatIterator(self)[...] = value  # NumPy's x.flat = value: every element, a short value repeated

    def put(self, indices, values, mode="raise"):
        from .numpy_api import put
        put(self, indices, values, mode)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """In place, as NumPy's: the Tensor itself is updated, and the views of its memory with it (as for
        the in-place operators)."""
        from .numpy_api import sort
        update_in_place(self, call_library_function(sort, self, axis, kind, order, stable=stable).node, "x.sort()",
                        "use np.sort(x) (a sorted copy) instead")

    def clip(self, min=None, max=None, out=None, **kwargs):
        from .numpy_api import clip
        return clip(self, min, max, out, **kwargs)

    def __setitem__(self, key, value):
        from .numpy_api import setitem
        setitem(self, key, value)

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


def raise_numpys_type_error(ufunc, inputs, outs, what: str, **loop) -> None:
    """Raise NumPy's own TypeError (a UFuncTypeError subclass where a result cannot be cast to its out
    array, with NumPy's message) for ``ufunc(*inputs, out=outs, **loop)``, if NumPy gives one: the ufunc
    run on one-element stand-ins of the same dtypes and numbers of axes (a Python number as it is, weak;
    a NumPy scalar as one), the error noted with ``what``. NumPy resolves and checks the loop's types
    before it looks at shapes, so this comes first. Any other outcome returns: the caller's checks stand."""
    unknown = object()

    def stand_in(v):
        if isinstance(v, Tensor):
            return v.dtype.type(0) if v.numpy_scalar else np.zeros((1,) * v.ndim, v.dtype)
        if isinstance(v, np.ndarray):
            return np.zeros((1,) * v.ndim, v.dtype)
        return v if v is None or isinstance(v, (bool, int, float, np.generic)) else unknown

    operands, targets = [stand_in(v) for v in inputs], tuple(stand_in(o) for o in outs)
    if any(v is unknown for v in operands + list(targets)):
        return
    try:
        with np.errstate(all="ignore"):
            ufunc(*operands, out=targets, **loop)
    except TypeError as error:
        error.add_note(f"({what})")
        raise error.with_traceback(None) from None
    except Exception:  # (a Python int out of the array's range, a negative integer power: the caller's to say)
        return


def as_operand(x):
    """A Node for tensors and NumPy values (strong), ``Weak`` for Python scalars."""
    if isinstance(x, Tensor):
        return x.node
    if isinstance(x, bool):
        # NEP 50: only int, float and complex are weak; a Python bool is a NumPy bool
        return const_node(np.asarray(x))
    if dt.is_python_scalar(x):
        return dt.Weak(x)
    if isinstance(x, (list, tuple)):
        from .numpy_api import _holds_tensor, array_of_sequence
        if _holds_tensor(x):  # a + [y[0], 1]: NumPy makes an array of the list
            return array_of_sequence(x).node
    if isinstance(x, (np.ndarray, np.generic, list, tuple)):
        arr = np.asarray(x)
        dt.check_supported(arr.dtype, "constant operand")
        return layout.user_array_node(arr)
    return NotImplemented


def as_node(x) -> Node:
    """Like ``as_operand`` but Python scalars become concrete constants (NumPy's default dtypes)."""
    op = as_operand(x)
    if op is NotImplemented:
        from .numpy_api import MaskedRead
        if isinstance(x, MaskedRead):
            x.refuse()  # y[mask] where only elementwise functions of it are followed
        raise TypeError(f"unsupported operand of type {type(x).__name__}")
    if isinstance(op, dt.Weak):
        arr = np.asarray(op.value)
        dt.check_supported(arr.dtype, "constant operand")
        return const_node(arr)
    return op


def wrap(node: Node) -> Tensor:
    return Tensor(node)


# the likeliest way a traced value meets a NumPy array's own code: ``out = np.zeros(n); out[i] = x``
def numpy_entry_point() -> tuple[str | None, object]:
    """The NumPy function user code called that is now converting a Tensor to an array (NumPy's outermost
    Python frame on the stack, with the user's line that called it), and the module-level object of that
    function's name; (None, None) when no NumPy Python code is on the stack (np.asarray and other C functions
    called directly)."""
    frame, entry = sys._getframe(2), None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if module == "numpy" or module.startswith("numpy."):
            entry = frame
        elif entry is not None:
            break
        frame = frame.f_back
    if entry is None:
        return None, None
    name = getattr(entry.f_code, "co_qualname", entry.f_code.co_name)  # 3.11+: Class.method
    where = f", called at {os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}" if frame is not None else ""
    return f"{name} (in {entry.f_globals['__name__']}){where}", entry.f_globals.get(entry.f_code.co_name)


def _traced_function(function) -> bool:
    """Whether the NumPy function the user called is one the compiler traces (it reached NumPy's own code only
    because the traced value was hidden from NumPy's dispatch)."""
    from .numpy_api import FUNCTIONS
    try:
        return function in FUNCTIONS
    except TypeError:  # an unhashable module attribute
        return False


def _converting_line(depth: int = 2) -> tuple[str, str, str | None]:
    """``file:LINE``, the source text of the line that made NumPy's C code convert a Tensor (np.asarray,
    np.array, ... leave no Python frame of their own) and the name of the bytecode instruction that did
    (BINARY_SUBSCR where a NumPy array was indexed, STORE_SUBSCR where one was assigned into, CALL...)."""
    frame = sys._getframe(depth)  # (depth 2: this function's caller is __array__, and its caller the converting line)
    instruction = next((i.opname for i in dis.get_instructions(frame.f_code) if i.offset == frame.f_lasti), None)
    return (*_source_line(frame.f_code.co_filename, frame.f_lineno), instruction)


def _no_dlpack() -> TypeError:
    """The error for a DLPack export of a Tensor, naming the user's line (Tensor.__dlpack__'s caller)."""
    where, text, _ = _converting_line(3)
    return TypeError(f"a traced Tensor has no memory to share through DLPack inside a compiled function (at {where}: "
                     f"{text}): its values exist only as the kernel runs; use the traced value as it is, or np.copy(x) "
                     "where a copy was meant")


def _source_line(filename: str, line: int) -> tuple[str, str]:
    """``file:LINE`` and the line's source text, for an error message."""
    text = linecache.getline(filename, line).strip() or "(source not available)"
    return f"{os.path.basename(filename)}:{line}", text


def element_assignment_error(error: ValueError) -> ValueError | None:
    """NumPy's own "setting an array element with a sequence." where a user's line assigned (a traced value,
    NumPy's C code cannot tell) into an element of a NumPy array: the same error, naming the line and what
    to write instead; None for any other error."""
    if str(error) != "setting an array element with a sequence.":
        return None
    tb = error.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None or tb.tb_frame.f_globals.get("__name__", "").split(".")[0] in ("numpy", "compiler"):
        return None
    where, text = _source_line(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
    return ValueError(f"{error} (at {where}: {text})" + _INTO_NUMPY)


class FlatIterator:
    """``x.flat`` of a traced array: NumPy's flatiter, indexed as one axis in C order. Reading takes a copy
    (an element a NumPy scalar), assigning writes into x's memory (a short value repeated), both by
    NumPy's own flatiter rules (see ``numpy_api.flat_getitem``); NumPy functions and ufuncs take it as
    NumPy converts a flatiter, a 1-d copy. Its iteration state (``index``, ``coords``) is not kept."""

    __array_priority__ = 1000
    __slots__ = ("base",)

    def __init__(self, base: Tensor):
        self.base = base

    def __len__(self) -> int:
        return self.base.size

    def __iter__(self):
        return (self[i] for i in range(self.base.size))

    def __getitem__(self, key):
        from .numpy_api import flat_getitem
        return flat_getitem(self.base, key)

    def __setitem__(self, key, value):
        from .numpy_api import flat_setitem
        flat_setitem(self.base, key, value)

    def copy(self) -> Tensor:
        """The elements in C order, a fresh 1-d array (a reshape, where x.flat[...] would gather)."""
        return Tensor(P.reshape(self.base.node, (self.base.size,)))

    def __array__(self, dtype=None, copy=None):
        return self.copy().__array__(dtype, copy)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return getattr(ufunc, method)(*_flat_copies(inputs), **_flat_copies(kwargs))

    def __array_function__(self, func, types, args, kwargs):
        return func(*_flat_copies(args), **_flat_copies(kwargs))

    def __getattr__(self, name):
        if hasattr(np.flatiter, name):
            raise AttributeError(f"x.flat.{name} of a traced array: the compiler keeps no iteration state "
                                 "(index x.flat, or iterate over it)")
        raise AttributeError(f"'FlatIterator' object has no attribute {name!r}")


def _flat_copies(value):
    """Arguments with every x.flat in them (lists and tuples searched, as NumPy's dispatchers search them)
    replaced by its 1-d copy."""
    if isinstance(value, FlatIterator):
        return value.copy()
    if type(value) in (list, tuple):
        return type(value)(_flat_copies(v) for v in value)
    if type(value) is dict:
        return {k: _flat_copies(v) for k, v in value.items()}
    return value


_CONVERTERS = re.compile(r"\b(asarray|asanyarray|ascontiguousarray|asfortranarray|asarray_chkfinite|require|array)\s*\(")
_CONVERTER_HINT = ("; NumPy's array constructors (np.asarray, np.array, np.ascontiguousarray, ...) are C functions that "
                   "hand the compiler no traced call: a traced value is already an array, so use it as it is, or "
                   "np.copy(x) / x.astype(dtype) / x.copy(order=...) where a copy, a dtype or a layout was asked for; "
                   "a list of traced values is np.stack([...]) of them. Called with like= a traced array "
                   "(np.asarray(v, like=x)), NumPy hands them to the compiler, which traces them")
_NESTED_HINT = ("; NumPy hands a function to the compiler only for traced arrays among its array arguments, not for "
                "elements of a list or tuple nor for arguments such as np.take's indices: make one array of a list's "
                "elements first (np.stack([...])), and gather with np.take_along_axis, which NumPy dispatches on "
                "its indices")
_INDEXED_HINT = ("; a NumPy array indexed by a traced value is NumPy's own indexing, which cannot be traced: pass the "
                 "array to the compiled function as an argument, or gather from it with a function NumPy dispatches "
                 "on the index (np.take_along_axis(table, i[:, None], axis=0) is table[i] for a 1-d i)")
_STORED_HINT = ("; a NumPy array cannot take a traced value or index in an assignment: make that array from a traced "
                "one -- np.zeros_like(x, shape=n) -- and the assignment is traced")
_OR_NESTED = ("; if it was inside a list or tuple handed to a NumPy function with no traced array among its "
              "arguments, NumPy converted the list itself: make one array of its elements first (np.stack([...]))")
FULL_HINT = ("; np.full is NumPy's own code, which NumPy's dispatch does not hand the compiler (it makes an array "
              "of the fill value): write np.full_like(x, value, shape=..., dtype=...) with a traced array x, which is "
              "traced")
_VECTORIZE_HINT = ("; np.vectorize calls its function once per element on NumPy values: call the function on the "
                   "traced array itself (one made of NumPy's ufuncs and operators traces elementwise as it is)")
_DATA = "its values are only known as the kernel runs (return the array, or compute with it)"
_LAYOUT = "a compiled function's arrays have values, not a memory layout NumPy code could inspect"
_UNTRACEABLE_ATTRIBUTES = {
    "nonzero": "the result's shape depends on the data", "partition": "NumPy's introselect leaves an order of its own",
    "argpartition": "NumPy's introselect leaves an order of its own", "item": _DATA, "tolist": _DATA,
    "tobytes": _DATA, "tofile": _DATA, "dump": _DATA, "dumps": _DATA,
    "resize": "NumPy resizes the array's own memory in place (np.resize returns a copy)",
    "base": _LAYOUT, "flags": _LAYOUT, "strides": _LAYOUT, "ctypes": _LAYOUT, "data": _LAYOUT,
    "setflags": _LAYOUT, "getfield": _LAYOUT, "setfield": _LAYOUT, "byteswap": _LAYOUT,
}
_INTO_NUMPY = ("; if a traced value was assigned into a NumPy array (out = np.zeros(n); out[i] = x), make that array "
               "from a traced one -- np.zeros_like(x, shape=n) -- and the assignment is traced")
VIEWED = "an array a view was taken of (NumPy's view would see the update)"
A_VIEW = "a view (NumPy's slicing, reshape, transpose, squeeze, split and broadcast_to share memory)"
READ_ONLY = "a read-only array (np.imag of a real array, np.broadcast_to, np.diagonal)"
# the views an update cannot be written through: a reshape's sharing depends on the memory's layout, which the
# layout model may only guess; np.broadcast_arrays' views repeat elements; a dtype view's are other bits
UNFOLLOWED = "a reshape, ravel, np.broadcast_arrays or x.view(dtype), whose sharing the trace does not follow"


def view(node: Node, of, scalar: bool = False, positions=None, read_only: bool = False) -> Tensor:
    """A Tensor standing for what NumPy returns as a view of ``of`` (basic indexing, reshape,
    transpose...). In NumPy the two share memory, so an update of either shows in the other.
    ``positions`` is given where NumPy makes a view whatever the memory's layout (basic indexing,
    transposes, squeezes, splits): the same NumPy operation, applied to the array of ``of``'s
    positions in its root, gives the view's, and update_in_place writes through them. A view
    without them (a reshape of a layout the model only guesses, np.broadcast_arrays') keeps every
    array of that memory from being updated. A ``read_only`` view (NumPy's broadcast_to, diagonal), or any view of a
    read-only array, refuses updates itself, as NumPy does, but still sees its root's."""
    if not isinstance(of, Tensor):
        return Tensor(node, aliases=READ_ONLY if read_only else A_VIEW, scalar=scalar)
    if of.numpy_scalar:  # NumPy views a fresh 0-d array of the (immutable) scalar: a write never reaches it
        of = Tensor(of.node)
    if of.aliases is None:
        of.aliases = VIEWED
    read_only = read_only or of.aliases == READ_ONLY
    v = Tensor(node, aliases=READ_ONLY if read_only else A_VIEW, scalar=scalar, bases=(of, *of.bases))
    origin = of.positions if of.bases else np.arange(of.size, dtype=np.intp).reshape(of.shape)
    if positions is not None and origin is not None:
        v.positions = np.asarray(positions(origin))
        assert v.positions.shape == v.shape, (v.positions.shape, v.shape)
    root = v.bases[-1]
    root.views = [r for r in root.views or () if r() is not None] + [weakref.ref(v)]
    return v


def gathered(source: Node, positions: np.ndarray) -> Tensor:
    """The elements of ``source`` at the given flat positions (a constant array, of the result's shape)."""
    if positions.size == 0:
        return Tensor(const_node(np.zeros(positions.shape, source.dtype)))
    flat = P.reshape(source, (source.size,))
    return Tensor(P.gather_in_range(flat, const_node(positions.astype(np.intp)), 0))


def update_in_place(t: Tensor, node: Node, what: str, instead: str) -> None:
    """Give ``t`` the value ``node`` (its shape and dtype) as NumPy's update of its memory would: the
    root that owns the memory gets the new elements at ``t``'s positions, and every live view of it is
    gathered afresh. Refused, naming ``what`` was tried and what to write ``instead``, where the trace
    cannot follow NumPy's write: into a caller's argument, or a memory with a view whose positions are
    not known."""
    if t.aliases is None:
        t.node = P.laid_out_as(node, t.node)
        return
    root = t.bases[-1] if t.bases else t
    if READ_ONLY in (t.aliases, root.aliases):
        raise ValueError(f"{what}: the destination is read-only ({READ_ONLY})")
    views = [v for v in (r() for r in root.views or ()) if v is not None]
    if root.aliases not in (None, VIEWED) or not t.bases and t.aliases != VIEWED:
        shared = t.aliases if t is root or not t.bases else f"a view of {root.aliases}"
    elif t is not root and t.positions is None:
        shared = f"a view made by {UNFOLLOWED}"
    elif any(v.positions is None for v in views):
        shared = (f"{'an array' if t is root else 'a view of an array'} a view was taken of by {UNFOLLOWED} "
                  "(NumPy's view may see the update)")
    else:
        if t is root:
            root.node = P.laid_out_as(node, root.node)
        else:
            codes = np.arange(root.size, dtype=np.intp)
            codes[t.positions.ravel()] = root.size + np.arange(t.size, dtype=np.intp)
            joined = P.concat([P.reshape(root.node, (root.size,)), P.reshape(node, (t.size,))], 0)
            root.node = P.laid_out_as(gathered(joined, codes.reshape(root.shape)).node, root.node)
        for v in views:  # (each keeps the layout its view of the memory had)
            v.node = P.laid_out_as(node if v is t else gathered(root.node, v.positions).node, v.node)
        return
    raise NotImplementedError(f"{what} on {shared}: NumPy writes into the memory it shares, which a compiled "
                              f"function cannot do here; {instead}")


def _tensors(value):
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


def dtype_argument(dtype, where: str) -> np.dtype:
    """A ``dtype=`` argument read as NumPy reads it, with NumPy's refusal of an array: np.dtype would take a
    traced array's ``.dtype`` attribute (it refuses only ndarrays), silently reading ``x.astype(y)`` as
    ``x.astype(y.dtype)``."""
    if isinstance(dtype, Tensor):
        raise TypeError(f"Cannot construct a dtype from an array: the dtype of {where} is a traced array "
                        "(pass its .dtype)")
    return np.dtype(dtype)


_DTYPE_POSITIONS: dict = {}


def _positional_dtype(impl, args):
    """The ``dtype`` a library function was given by position (np.zeros_like(a, dtype), x.sum(axis, dtype)),
    or None: its parameter's position, read once from its signature."""
    if impl not in _DTYPE_POSITIONS:
        try:
            names = [p.name for p in inspect.signature(impl).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            names = []
        _DTYPE_POSITIONS[impl] = names.index("dtype") if "dtype" in names else None
    position = _DTYPE_POSITIONS[impl]
    return args[position] if position is not None and position < len(args) else None


def call_library_function(impl, *args, **kwargs):
    """Call a NumPy function's definition on traced arrays. The views it takes of its arguments for its
    own work (np.median's moveaxis, np.diff's slices) die with the call in NumPy, so they must not keep
    the caller from updating those arrays in place afterwards. Only a result that is a view of an
    argument (np.transpose; np.split's parts) still shares its memory, and then every mark stays. A
    result that is a view of the function's own temporary (np.argsort's moveaxis of the permutation it
    computed) shares nothing the caller can reach, unless another result looks at the same memory."""
    for dtype in (kwargs.get("dtype"), _positional_dtype(impl, args)):
        if isinstance(dtype, Tensor):
            dtype_argument(dtype, f"{impl.__name__.rstrip('_')}(..., dtype=...)")
    arguments = list(_tensors((args, kwargs)))
    unshared = [t for t in arguments if t.aliases is None]
    result = impl(*args, **kwargs)
    results = list(_tensors(result))
    if any(a is b for r in results for b in r.bases for a in arguments):
        return result
    for t in unshared:
        if t.aliases == VIEWED:
            t.aliases = None
    for r in results:
        if any(r is a for a in arguments):
            continue
        others = [o for o in results if o is not r]
        # identity only: == on Tensors traces a comparison
        if r.bases and not any(b is o or any(b is c for c in o.bases) for o in others for b in r.bases):
            r.aliases, r.bases, r.positions = None, (), None
    return result
