"""NumPy's memory layout of every value a traced function computes: the strides (in elements, negative
along a reversed view) NumPy's own arrays would have had, where the function ran on NumPy arrays. A
trace keeps no layout (every value it lowers is a fresh row-major tensor), but NumPy's float sums
follow memory order, so the CPU lowering asks this module how NumPy lays out an operand before it
repeats NumPy's order (see ``pairwise``). The model: arguments are laid out as the caller's arrays
are, constants C-contiguously;
transposes, basic slices (reversed ones too), broadcasts and reshapes that NumPy can do without
copying are views of their operand; ufunc and reduction results are allocated in the order NumPy's
iterator chooses from its operands' strides; casts, copies and np.zeros_like-style arrays as they
ask ("K": like the operand); anything else is a fresh C-contiguous array."""

from __future__ import annotations

import numpy as np

from .graph import Node, const_node
from .primitives import UFUNCS

# ops whose results NumPy allocates with an iterator over their operands, in its "K" order
_ITERATED = {"where", "frexp_mantissa", "frexp_exponent"}
# ops whose layout the model derives from their operand's (views, "K" copies and casts)
_DERIVED = {"copy", "cast", "transpose", "slice", "broadcast_to", "bitcast", "reshape"}
_SCANS = {"cumsum", "cumprod", "accumulate"}
_REDUCTIONS = {"reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_any", "reduce_all", "masked_sum"}


def contiguous_strides(shape: tuple, order: tuple | None = None) -> tuple:
    """The strides of a fresh array of ``shape`` whose axes lie in memory in ``order`` (outermost first;
    default C's)."""
    order = tuple(range(len(shape))) if order is None else order
    if 0 in shape:  # NumPy gives an array it allocates empty zero strides: it has no layout
        return (0,) * len(shape)
    strides, step = [0] * len(shape), 1
    for axis in reversed(order):
        strides[axis] = step
        step *= shape[axis]
    return tuple(strides)


def iteration_order(shape: tuple, operand_strides: list[tuple]) -> tuple:
    """The axes, outermost first, in the order NumPy's iterator visits them for operands of these strides
    (broadcast onto ``shape``). NumPy sorts axes by insertion from the innermost outward; an axis moves
    inward past another only when every operand that strides along both (stride nonzero) has the larger
    stride on the axis that is further in; where none does, the comparison decides nothing and the
    axis looks further in; so ties and disagreements keep C order. A unit axis strides nowhere (NumPy
    gives it stride 0), so it decides nothing."""
    ndim = len(shape)
    operand_strides = [tuple(0 if n == 1 else s for s, n in zip(strides, shape)) for strides in operand_strides]
    inner_first = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        moving, settle = inner_first[i], i
        for j in range(i - 1, -1, -1):
            other = inner_first[j]
            votes = [abs(s[other]) > abs(s[moving]) for s in operand_strides if s[moving] != 0 and s[other] != 0]
            if not votes:
                continue
            if all(votes):
                settle = j
            else:
                break
        if settle != i:
            inner_first.insert(settle, inner_first.pop(i))
    return tuple(reversed(inner_first))


def inner_run(shape: tuple, strides: tuple, start: int) -> int:
    """How many elements of axes ``start`` onwards NumPy's iterator steps through with a single stride
    from the innermost axis outward (unit axes aside): it merges an axis into the run while the axis'
    stride is the run's length times the run's stride (so a strided slice's elements, or a
    broadcast's zeros, still run on)."""
    sized = [d for d in range(start, len(shape)) if shape[d] != 1]
    if not sized:
        return 1
    run, inner = shape[sized[-1]], sized[-1]
    for axis in reversed(sized[:-1]):
        if strides[axis] != strides[inner] * run:
            break
        run *= shape[axis]
    return run


def dense(shape: tuple, strides: tuple, order: tuple | None = None) -> bool:
    """Whether ``strides`` are a fresh array's in ``order`` (C's by default), unit axes aside."""
    return all(s == c for s, c, n in zip(strides, contiguous_strides(shape, order), shape) if n != 1)


def memory_axes(shape: tuple, strides: tuple) -> tuple | None:
    """The axes, outermost first, in which a fresh (dense, positively strided) array of ``strides`` lies
    in memory, where that is not C's order (unit axes stay where they are); None for a C-ordered
    array and for a view that is no fresh array (a slice's gaps, a broadcast's or a reversal's strides)."""
    sized = [d for d, n in enumerate(shape) if n != 1]
    order = sorted(sized, key=lambda d: -strides[d])
    if order == sized or any(s <= 0 for d, s in enumerate(strides) if d in sized):
        return None
    axes = iter(order)
    perm = tuple(next(axes) if shape[d] != 1 else d for d in range(len(shape)))
    return perm if dense(shape, strides, perm) else None


def _like(shape: tuple, strides: tuple) -> tuple:
    """A fresh array laid out like one of ``strides`` (NumPy's astype and copy in "K" order): axes by
    decreasing stride, ties (a broadcast's 0s among them, which so go innermost) in C order."""
    return contiguous_strides(shape, tuple(sorted(range(len(shape)), key=lambda d: (-abs(strides[d]), d))))


def contiguous(shape: tuple, strides: tuple, fortran: bool = False) -> bool:
    """NumPy's ``flags.c_contiguous`` (``f_contiguous``) of an array laid out with ``strides``: unit axes
    aside, and an empty array is both."""
    return 0 in shape or dense(shape, strides, tuple(reversed(range(len(shape)))) if fortran else None)


def fortran_only(shape: tuple, strides: tuple) -> bool:
    """Whether an array of ``strides`` is Fortran-contiguous and not C-contiguous (NumPy's ``flags.fnc``, which
    its "A" order reads), unit axes aside."""
    return contiguous(shape, strides, fortran=True) and not contiguous(shape, strides)


def ordered(shape: tuple, order: str, like_shape: tuple, like_strides: tuple) -> tuple:
    """The strides of a fresh array of ``shape`` made in NumPy's ``order`` ("C", "F", "A" or "K") after a
    prototype of ``like_shape`` laid out with ``like_strides`` (a copy; np.zeros_like and the like):
    "A" is Fortran's where the prototype is Fortran-contiguous and not C-contiguous, "K" the
    prototype's own order (C's where a new shape has another number of axes; C's or Fortran's for a
    prototype contiguous so, whatever strides its unit axes have, which matters where one grows:
    np.zeros_like(x, shape=...))."""
    fortran = tuple(reversed(range(len(shape))))
    if order == "A":
        order = "F" if fortran_only(like_shape, like_strides) else "C"
    if order == "K" and (len(shape) != len(like_shape) or contiguous(like_shape, like_strides)):
        order = "C"
    if order == "K" and fortran_only(like_shape, like_strides):
        order = "F"
    if order == "K":
        return _like(shape, like_strides)
    return contiguous_strides(shape, fortran if order == "F" else None)


def argument_strides(array) -> tuple | None:
    """The strides, in elements, of an argument NumPy holds otherwise than C-contiguously (a view the
    caller passes), for its input node; None for a C-contiguous one, a device array, or one whose
    strides are no whole number of elements (NumPy copies that through its buffer anyway)."""
    if not isinstance(array, np.ndarray) or array.flags.c_contiguous or any(s % array.itemsize for s in array.strides):
        return None
    return tuple(s // array.itemsize for s in array.strides)


def with_strides(node: Node, strides: tuple) -> Node:
    """A node with no inputs (a constant) marked laid out with ``strides`` where those are not C's."""
    if tuple(strides) != contiguous_strides(node.shape):
        node.attrs["strides"] = tuple(strides)
    return node


def user_array_node(array) -> Node:
    """A constant the user's code handed the trace (a closure's array, an index array): modelled laid out as that
    NumPy array lies, as an argument is (a constant the compiler computes is C-ordered, whatever its value's
    memory)."""
    node = const_node(array)
    strides = argument_strides(array)
    return node if strides is None else with_strides(node, strides)


def broadcast_strides(operand: Node, shape: tuple) -> tuple:
    """``operand``'s NumPy strides broadcast onto ``shape``."""
    return _broadcast(operand, strides_of(operand), shape)


def _broadcast(operand: Node, strides: tuple, shape: tuple) -> tuple:
    """An operand's strides broadcast onto ``shape``: 0 along new axes and stretched unit axes."""
    lead = len(shape) - operand.ndim
    return tuple(0 if d < lead or (operand.shape[d - lead] == 1 and n != 1) else strides[d - lead]
                 for d, n in enumerate(shape))


def _reshaped(src_shape: tuple, strides: tuple, shape: tuple) -> tuple | None:
    """The strides of a view of an array of ``src_shape`` reshaped to ``shape``, or None where NumPy must copy:
    every run of source axes that becomes a run of result axes must be contiguous within itself (unit axes
    aside)."""
    old = [(n, s) for n, s in zip(src_shape, strides) if n != 1]
    new_axes = [d for d, n in enumerate(shape) if n != 1]
    result = list(contiguous_strides(shape))
    i = j = 0
    while i < len(old) and j < len(new_axes):
        old_group, new_group = [old[i]], [new_axes[j]]
        old_size, new_size = old[i][0], shape[new_axes[j]]
        while old_size != new_size:
            if old_size < new_size:
                i += 1
                old_group.append(old[i])
                old_size *= old[i][0]
            else:
                j += 1
                new_group.append(new_axes[j])
                new_size *= shape[new_axes[j]]
        if any(outer[1] != inner[1] * inner[0] for outer, inner in zip(old_group, old_group[1:])):
            return None
        step = old_group[-1][1]
        for axis in reversed(new_group):
            result[axis] = step
            step *= shape[axis]
        i, j = i + 1, j + 1
    return tuple(result)


def reshape_copies(shape: tuple, strides: tuple, new_shape: tuple, order: str = "C") -> bool:
    """Whether NumPy's reshape of an array laid out with ``strides`` to ``new_shape``, in C's or Fortran's index
    order, copies it (its strides allow no view; NumPy's _attempt_nocopy_reshape, mirrored for Fortran's; an
    empty array never copies)."""
    if 0 in shape:
        return False
    if order == "F":
        shape, strides, new_shape = shape[::-1], strides[::-1], new_shape[::-1]
    return _reshaped(shape, strides, new_shape) is None


def ravel_is_view(shape: tuple, strides: tuple, order: str) -> bool:
    """Whether NumPy's ravel in ``order`` of an array laid out with ``strides`` is a view (PyArray_Ravel),
    which is stricter than a reshape: C order of a C-contiguous array, Fortran's of a Fortran-contiguous
    one, "A" of either, "K" of either or of one whose strides, sorted, are a contiguous array's (none
    negative); anything else is a copy (NumPy's flatten)."""
    c, f = contiguous(shape, strides), contiguous(shape, strides, fortran=True)
    if order == "K" and not (c or f):
        step = 1
        for axis in sorted((a for a, n in enumerate(shape) if n != 1), key=lambda a: abs(strides[a])):
            if strides[axis] != step:
                return False
            step *= shape[axis]
        return True
    return {"C": c, "F": f, "A": c or f, "K": True}[order]


def _remembered(node: Node, name: str, compute):
    """``compute(n, {input id: its value})`` of ``node``, from its ancestors', each remembered on its node
    under ``name`` (a node never changes, and a trace that writes in a loop asks again after every write)."""
    stack = [(node, False)]
    while stack:  # post-order over the ancestors not yet done, so every one comes after its inputs
        n, expanded = stack.pop()
        if name in n.__dict__:
            continue
        if expanded:
            n.__dict__[name] = compute(n, {i.id: i.__dict__[name] for i in n.inputs})
            continue
        stack.append((n, True))
        stack.extend((i, False) for i in n.inputs if name not in i.__dict__)
    return node.__dict__[name]


def strides_of(node: Node) -> tuple:
    """The NumPy strides of one node, worked out from its ancestors'."""
    return _remembered(node, "_numpy_strides", _strides_of)


def known(node: Node) -> bool:
    """Whether the model knows NumPy's layout of ``node``, not only a guess: false for a value marked so
    (a view NumPy makes that the trace gathers, such as a diagonal; einsum's result) and for what is
    laid out after such a value (its views, its ufunc results, its sums); a fresh C array is known."""
    return _remembered(node, "_numpy_layout_known", _known)


def _known(node: Node, inputs: dict) -> bool:
    if node.attrs.get("layout_unknown"):
        return False
    fresh = node.op == "copy" and ("strides" in node.attrs or node.attrs["order"] in ("C", "F"))
    derived = (node.op in _DERIVED or node.op in _REDUCTIONS or node.op in _SCANS or node.op in _ITERATED
               or node.op in UFUNCS
               or node.op == "gather" and "view_step" in node.attrs)
    return fresh or not derived or all(inputs.values())


def numpy_strides(nodes: list[Node]) -> dict[int, tuple]:
    """The NumPy strides of each node (by id) of ``nodes`` (``strides_of``)."""
    return {node.id: strides_of(node) for node in nodes}


def _strides_of(node: Node, known: dict[int, tuple]) -> tuple:
    fresh = contiguous_strides(node.shape)
    if not node.inputs:  # an argument passed as a view, or what np.zeros_like (and the like) made, says so
        return node.attrs.get("strides", fresh)
    src, src_strides = node.inputs[0], known[node.inputs[0].id]
    if node.op == "copy" and "strides" in node.attrs:  # written into an array's memory: laid out as it was
        return node.attrs["strides"]
    if node.op == "copy":  # (astype's: a copy of the array it converts, which is the prototype)
        return ordered(node.shape, node.attrs["order"], src.shape, as_read(src))
    if node.op == "cast" and node.attrs.get("buffered"):  # read where it lies, through NumPy's buffer
        return src_strides
    if node.op == "cast":  # (as a result: a unary ufunc's, whose loop converts as it reads; see as_read)
        return contiguous_strides(node.shape, iteration_order(node.shape, [src_strides]))
    if node.op == "transpose":
        return tuple(src_strides[p] for p in node.attrs["perm"])
    if node.op == "slice":
        return tuple(s * step for s, step in zip(src_strides, node.attrs["steps"]))
    if node.op == "gather" and "view_step" in node.attrs:  # a negative-step slice: NumPy's view
        axis = node.attrs["axis"]
        return src_strides[:axis] + (src_strides[axis] * node.attrs["view_step"],) + src_strides[axis + 1:]
    if node.op == "broadcast_to":  # (NumPy's broadcast_to gives every unit axis stride 0, as its iterator does)
        return tuple(0 if n == 1 else s for s, n in zip(_broadcast(src, src_strides, node.shape), node.shape))
    if node.op == "bitcast":
        return _broadcast(src, src_strides, node.shape)
    if node.op == "reshape":
        view = _reshape_view(src, src_strides, node.shape)
        if view is None and node.attrs.get("loop_axes"):  # a matmul's batch axes, which NumPy's loop steps through
            return fresh[:1] + src_strides[-2:]           # one by one: each matrix keeps its strides
        return fresh if view is None else view
    if node.op in _SCANS:  # ufunc.accumulate's result: allocated by its iterator over the operand
        return contiguous_strides(node.shape, iteration_order(node.shape, [as_read(src)]))
    if node.op == "masked_sum":  # allocated by the iterator over the operand and the mask
        joint = contiguous_strides(src.shape, iteration_order(src.shape, [src_strides, known[node.inputs[1].id]]))
        return reduced(src.shape, joint, node.attrs["axes"])
    if node.op in _REDUCTIONS:
        return reduced(src.shape, src_strides, node.attrs["axes"])
    if node.op in _ITERATED or node.op in UFUNCS:
        operands = [_broadcast(n, as_read(n), node.shape) for n in node.inputs if n.ndim]
        return contiguous_strides(node.shape, iteration_order(node.shape, operands))
    return fresh


def memory_start(node: Node) -> tuple:
    """Where NumPy's array ``node`` starts: (the id of the node whose memory it views, the element offset of its
    first element there). Transposes, slices, broadcasts and copy-free reshapes view their operand's memory;
    any other value is an array of its own, so two values share a start only through such views (NumPy's
    matmul tells a matrix times its own transpose by its operands' pointers)."""
    offset = 0
    while _is_view(node):
        src = node.inputs[0]
        if node.op == "slice":
            offset += sum(start * stride for start, stride in zip(node.attrs["starts"], strides_of(src)))
        node = src
    return node.id, offset


def _is_view(node: Node) -> bool:
    if node.op == "reshape":
        src = node.inputs[0]
        return bool(node.attrs.get("loop_axes")) or _reshape_view(src, strides_of(src), node.shape) is not None
    return node.op in ("transpose", "slice", "broadcast_to")


def _reshape_view(src: Node, src_strides: tuple, shape: tuple) -> tuple | None:
    """The strides of NumPy's reshape of ``src`` to ``shape`` as a view of it, or None where it is an array of
    its own (NumPy copies; an empty array the model takes as fresh)."""
    return _reshaped(src.shape, src_strides, shape) if src.size else None


def read_backwards(node: Node) -> list[bool]:
    """Which operands of the ufunc ``node`` NumPy's loop reads at a negative step while it writes the result it
    allocates forwards, which sends its SIMD loops (exp, arctan, power, ...) down another path with other
    roundings: where the whole call is one inner loop (every non-unit axis coalesces, in the iterator's order,
    for every operand), an operand laid out reversed along it (``x[::-1]``, a fully reversed array). An operand
    NumPy converts to the loop's type is read through its buffer, forwards. Where NumPy's iterator runs several
    axes it flips negative strides and, below its buffer's size, may buffer, by rules the model does not follow:
    there every operand counts as read forwards (README)."""
    shape = node.shape
    strides = [tuple(0 if n == 1 else s for s, n in zip(_broadcast(op, as_read(op), shape), shape))
               for op in node.inputs]
    order = [d for d in iteration_order(shape, strides) if shape[d] != 1]
    if not order or not all(s[outer] == s[inner] * shape[inner] for s in strides
                            for outer, inner in zip(order, order[1:])):
        return [False] * len(node.inputs)
    return [s[order[-1]] < 0 and op.op != "cast" for s, op in zip(strides, node.inputs)]


def as_read(operand: Node) -> tuple:
    """The strides a NumPy loop (a ufunc's, a scan's; a copy's of its prototype) reads ``operand`` with: a
    cast to the loop's type is no array NumPy allocates but a conversion as the loop reads, so the cast's
    operand as it lies (a broadcast's zero strides included, which decide nothing). Alone, as a result,
    a cast is a unary ufunc's array (``_strides_of``); folded to a constant, it keeps both."""
    while operand.op == "cast" and not operand.attrs.get("buffered"):
        operand = operand.inputs[0]
    return operand.attrs.get("read_strides") or strides_of(operand)


def reduced(shape: tuple, strides: tuple, axes) -> tuple:
    """The strides of the result NumPy's reduction over ``axes`` allocates for an operand of ``shape`` laid
    out with ``strides`` (the kept axes, keepdims aside, in the order its iterator visits them)."""
    order = sum_order(shape, strides)
    kept = [d for d in range(len(shape)) if d not in axes]
    position = {d: k for k, d in enumerate(kept)}
    return contiguous_strides(tuple(shape[d] for d in kept), tuple(position[d] for d in order if d in position))


def sum_bufferful(shape: tuple, strides: tuple, axes: tuple, cast: bool) -> int | None:
    """How many elements of each row NumPy sums at a time when it reduces an operand of ``shape`` laid out
    with ``strides`` over ``axes`` (``cast``: converting as it reads), as the CPU lowering repeats it: None
    where a row is one inner loop (or the reduction adds in order, or nothing), else the bufferful
    (``pairwise.buffer_chunk``)."""
    from . import pairwise
    memory = sum_order(shape, strides)
    shape_m, strides_m = tuple(shape[d] for d in memory), tuple(strides[d] for d in memory)
    plan = pairwise.numpy_sum_plan(shape_m, tuple(sorted(memory.index(a) for a in axes)))
    if plan is None:
        return None
    return pairwise.buffer_chunk(plan.row, inner_run(shape_m, strides_m, plan.row_from), cast)


def sum_order(shape: tuple, strides: tuple) -> tuple:
    """The order, outermost axis first, in which NumPy's reduction visits an operand laid out with
    ``strides`` (its result is allocated, so the operand alone decides)."""
    return iteration_order(shape, [strides])
