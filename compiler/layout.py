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

from dataclasses import dataclass

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
    strides are no whole number of elements (NumPy copies that through its buffer anyway). A one-element
    array of one axis is C-contiguous to NumPy whatever its stride, yet a ufunc's loop is called with that
    stride (``_one_element_steps``): such a stride is kept too."""
    if not isinstance(array, np.ndarray) or any(s % array.itemsize for s in array.strides):
        return None
    if array.flags.c_contiguous and not (array.shape == (1,) and array.strides[0] != array.itemsize):
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


def blas_readable(outer: int, inner: int, inner_extent: int) -> bool:
    """NumPy's ``is_blasable2d`` (matmul.c.src), in elements: whether BLAS reads a matrix of these steps as it
    lies, with unit steps along its inner axis and a leading dimension at least that axis' extent."""
    return inner == 1 and outer >= inner_extent


def copied_for_cblas(shape: tuple, strides: tuple) -> bool:
    """NumPy's ``_bad_strides`` (cblasfuncs.c): whether np.dot's BLAS path first copies an operand of these
    strides C-contiguously (a negative step, or a zero one along an axis of more than one element)."""
    return any(s < 0 or s == 0 and d > 1 for s, d in zip(strides, shape))


def memory_start(node: Node) -> tuple:
    """Where NumPy's array ``node`` starts: (the id of the node whose memory it views, the element offset of its
    first element there). Transposes, slices (negative steps too), broadcasts and copy-free reshapes view their
    operand's memory; any other value is an array of its own, so two values share a start only through such
    views (NumPy's matmul tells a matrix times its own transpose by its operands' pointers)."""
    offset = 0
    while _is_view(node):
        src = node.inputs[0]
        if node.op == "slice":
            offset += sum(start * stride for start, stride in zip(node.attrs["starts"], strides_of(src)))
        elif node.op == "gather" and node.inputs[1].value.size:  # a negative-step slice: from its first position
            offset += int(node.inputs[1].value[0]) * strides_of(src)[node.attrs["axis"]]
        node = src
    return node.id, offset


def _is_view(node: Node) -> bool:
    if node.op == "reshape":
        src = node.inputs[0]
        return bool(node.attrs.get("loop_axes")) or _reshape_view(src, strides_of(src), node.shape) is not None
    return node.op in ("transpose", "slice", "broadcast_to") or node.op == "gather" and "view_step" in node.attrs


def _reshape_view(src: Node, src_strides: tuple, shape: tuple) -> tuple | None:
    """The strides of NumPy's reshape of ``src`` to ``shape`` as a view of it, or None where it is an array of
    its own (NumPy copies; an empty array the model takes as fresh)."""
    return _reshaped(src.shape, src_strides, shape) if src.size else None


NUMPY_BUFSIZE = 8192  # elements: NumPy's default ufunc buffer (np.getbufsize())


@dataclass(frozen=True)
class LoopSteps:
    """How NumPy's strided loop sees a ufunc's operands (``loop_steps``): ``steps[i]`` is operand i's step in
    every inner-loop call, in elements (negative: read backwards; 0: the same element throughout a call; 1:
    contiguous, as a buffer is), ``result`` the step the result is written at, and ``row_axes`` the axes one
    call covers at most, along which a step-0 operand does not vary."""
    steps: tuple
    row_axes: tuple
    result: int = 1


def loop_steps(node: Node, loop: np.dtype) -> LoopSteps:
    """The steps NumPy's ufunc loop (of dtype ``loop``) is called with for ``node``'s operands, from their
    layouts: a port of NumPy 2.4's ufunc call (ufunc_object.c's ``check_for_trivial_loop``, which converts short
    inputs first, ``_converted_first``), then its iterator construction (nditer_constr.c: the axes ordered by
    stride; where the result is allocated, it is laid out in that order and no stride is flipped, where it is
    written into ``out=`` (``numpy_out``, and ``where=``'s mask, ``numpy_where``: the strides and whether the
    loop converts) an axis every operand steps backwards along is flipped; axes coalesced; then
    ``npyiter_find_buffering_setup``'s choice of how many axes one call covers). Its SIMD loops take other
    paths, with other roundings, by these steps (float32's and float64's by their signs, float16's by whether
    they are 1): an operand read backwards (``np.arctan(x[:, ::-1])`` of long
    rows; of short ones NumPy buffers the operand and reads the buffer forwards), an exponent at step 0
    (``x ** e[:, None]`` of long rows squares where ``e`` is 2). An operand the loop converts to or from its
    dtype goes through a buffer: forwards, or at step 0 where it is one element throughout. Checked against
    ``np.nditer``'s inner strides under the ufunc's flags in tests/test_numpy_loops.py."""
    shape, nin = node.shape, len(node.inputs)
    if int(np.prod(shape, dtype=np.int64)) == 1:
        return _one_element_steps(node, loop)
    if 0 in shape:
        return LoopSteps((1,) * nin, ())
    # (strides in elements, as every operand's here: NumPy compares an operand's strides only with its own)
    strides = [_unit_axes_zero(_broadcast(op, as_read(op), shape), shape) for op in node.inputs]
    casts = [_loop_operand(op).dtype != loop for op in node.inputs]
    if not node.attrs.get("numpy_where"):  # (a masked call goes to the iterator directly)
        _converted_first(node, strides, casts)
    written = node.attrs.get("numpy_out")
    if written is None:  # the result, allocated in the order the iterator visits the axes
        order = iteration_order(shape, strides)
        strides.append(_unit_axes_zero(contiguous_strides(shape, order), shape))
        casts.append(False)
    else:
        extra = [written] + ([node.attrs["numpy_where"]] if node.attrs.get("numpy_where") else [])
        strides += [_unit_axes_zero(s, shape) for s, _ in extra]
        casts += [converted for _, converted in extra]
        order = iteration_order(shape, strides)
        flips = _flips(strides)
        if _written_over_an_operand(node, written[0], node.attrs["numpy_out_start"]):
            # NumPy writes into a fresh array laid out in the order it iterates (the flips decided by the out=
            # array's strides: it walks the fresh one backwards there), and copies that back after
            strides[nin] = _unit_axes_zero(contiguous_strides(shape, order), shape)
            casts[nin] = False
        strides = [tuple(-x if flip else x for x, flip in zip(s, flips)) for s in strides]
    dims = _coalesced([(shape[d], [s[d] for s in strides], (d,)) for d in reversed(order)])
    best_dim, single = _buffering_setup(dims, casts)
    steps = []
    for i in range(nin + 1):
        inner = dims[0][1][i]
        buffered = casts[i] or single[i] <= best_dim
        steps.append(int(inner) if not buffered or (single[i] > best_dim and inner == 0) else 1)
    rows = tuple(sorted(d for _, _, axes in dims[:best_dim + 1] for d in axes if shape[d] != 1))
    return LoopSteps(tuple(steps[:nin]), rows, steps[nin])


def _one_element_steps(node: Node, loop: np.dtype) -> LoopSteps:
    """A call of one element. NumPy's ufunc tries its trivial loop first (ufunc_object.c's
    ``try_trivial_single_output_loop``, after ``check_for_trivial_loop`` has copied converted inputs): where
    every input of an axis has the result's shape, it passes an input of one axis at its own stride (so one
    element read through ``x[::-1]`` is read backwards, and float32's and float64's loops leave their SIMD path
    for it: ``np.sinh`` differs in the last bit), an input of more axes at its item size, a 0-d one at 0, and
    out= of one axis at its stride too. Where it cannot (a mask, a converted input of several axes or cast
    unsafely, inputs of other shapes, an out= that is converted, overlaps an input or steps backwards), NumPy's
    iterator passes stride 0 to every operand (so power takes its fast paths, as ``primitives.scalar_to_loop``
    has it, and float16's loops compute element by element)."""
    nin, shape = len(node.inputs), node.shape
    iterator = LoopSteps((0,) * nin, (), 0)
    written = node.attrs.get("numpy_out")
    if node.attrs.get("numpy_where") or written is not None and (
            written[1] or len(shape) == 1 and written[0][0] < 0
            or _written_over_an_operand(node, written[0], node.attrs["numpy_out_start"])):
        return iterator
    steps = []
    for operand in node.inputs:
        source = _loop_operand(operand)
        if source.ndim and source.shape != shape:
            return iterator
        if source.dtype != loop:  # copied into a fresh array of the loop's type first, where it may be
            if source.ndim > 1 or not np.can_cast(source.dtype, loop, "safe"):
                return iterator
            steps.append(source.ndim)
        else:
            steps.append(as_read(operand)[0] if source.ndim == 1 else int(source.ndim > 0))
    result = written[0][0] if written is not None and len(shape) == 1 else 1
    return LoopSteps(tuple(steps), (), result)


def _converted_first(node: Node, strides: list, casts: list) -> None:
    """NumPy's ``check_for_trivial_loop`` (ufunc_object.c), before any iterator: an input the loop converts that
    has no axis, or one of at most a buffer's elements, is converted into a fresh contiguous array first (which
    the iterator then reads as it lies, unconverted); it goes through the inputs in order and stops at the first
    converted one it cannot copy so. Updates ``strides`` and ``casts`` in place."""
    for i, operand in enumerate(node.inputs):
        if not casts[i]:
            continue
        source = _loop_operand(operand)
        if source.ndim > 1 or source.ndim == 1 and source.shape[0] > NUMPY_BUFSIZE:
            return
        strides[i] = _unit_axes_zero(_broadcast(source, contiguous_strides(source.shape), node.shape), node.shape)
        casts[i] = False


def _written_over_an_operand(node: Node, out_strides: tuple, out_start: tuple) -> bool:
    """Whether the out= array (its strides and ``memory_start``) of the ufunc ``node`` shares memory with an
    operand it reads, other than being that very array: NumPy's iterator (COPY_IF_OVERLAP) then writes into a
    temporary. NumPy asks ``solve_may_share_memory`` with max_work=1, which answers exactly where the arrays'
    spans do not meet or its first step settles it; the model answers exactly always (where NumPy's solver gives
    up on arrays that interleave without sharing an element, NumPy copies and the model does not)."""
    def span(shape, strides, start):
        ends = [(n - 1) * s for n, s in zip(shape, strides) if n > 1]
        return start + sum(e for e in ends if e < 0), start + sum(e for e in ends if e > 0)

    def elements(shape, strides, start):
        offsets = np.array(start, dtype=np.int64)
        for n, stride in zip(shape, strides):
            offsets = np.add.outer(offsets, np.arange(n, dtype=np.int64) * stride)
        return offsets.ravel()

    base, offset = out_start
    low, high = span(node.shape, out_strides, offset)
    for operand in map(_loop_operand, node.inputs):
        their_base, their_offset = memory_start(operand)
        if their_base != base or not operand.size:
            continue
        strides = strides_of(operand)
        identical = (their_offset == offset and operand.shape == node.shape and strides == out_strides
                     and not any(s == 0 for s, n in zip(strides, operand.shape) if n > 1))
        their_low, their_high = span(operand.shape, strides, their_offset)
        if not identical and their_low <= high and low <= their_high and np.intersect1d(
                elements(node.shape, out_strides, offset), elements(operand.shape, strides, their_offset)).size:
            return True
    return False


def _unit_axes_zero(strides: tuple, shape: tuple) -> tuple:
    """Strides as NumPy's iterator holds them: 0 along unit axes."""
    return tuple(0 if n == 1 else s for s, n in zip(strides, shape))


def _flips(strides: list) -> list[bool]:
    """NumPy's ``npyiter_flip_negative_strides`` (only where no operand is allocated): the axes along which some
    operand steps backwards and none forwards, which it walks from their other end."""
    return [any(s[d] < 0 for s in strides) and not any(s[d] > 0 for s in strides) for d in range(len(strides[0]))]


def _loop_operand(operand: Node) -> Node:
    """The array a ufunc's loop reads for ``operand``: a cast the loop makes as it reads is its operand."""
    while operand.op == "cast" and not operand.attrs.get("buffered"):
        operand = operand.inputs[0]
    return operand


def _coalesced(dims: list) -> list:
    """NumPy's ``npyiter_coalesce_axes`` on (size, strides per operand, axes) innermost first: an axis joins
    the one inside it where every operand steps through both with one stride (a unit axis at stride 0 joins
    anything)."""
    merged = [dims[0]]
    for size, strides, axes in dims[1:]:
        inner_size, inner_strides, inner_axes = merged[-1]
        if all((inner_size == 1 and a == 0) or (size == 1 and b == 0) or a * inner_size == b
               for a, b in zip(inner_strides, strides)):
            merged[-1] = (inner_size * size, [b if a == 0 else a for a, b in zip(inner_strides, strides)],
                          inner_axes + axes)
        else:
            merged.append((size, list(strides), axes))
    return merged


def _buffering_setup(dims: list, casts: list) -> tuple[int, list]:
    """NumPy's ``npyiter_find_buffering_setup`` without reductions, under GROWINNER: how many coalesced axes
    (from the innermost, ``best_dim`` + 1) one call covers, and for each operand how many it steps through with
    one stride (an operand that cannot step through all of them is buffered). A call grows over an axis while
    its cost, (1 + operands buffered) per element, does not outweigh the larger call (capped at the buffer's
    size once anything is buffered)."""
    cost = 1 + sum(casts)
    single = [1] * len(casts)
    size = best_size = dims[0][0]
    best_dim, best_cost = 0, cost
    for idim in range(1, len(dims)):
        if size >= NUMPY_BUFSIZE and cost > 1:
            break
        inner_size, inner_strides, _ = dims[idim - 1]
        for i, stride in enumerate(dims[idim][1]):
            if single[i] == idim:
                if inner_strides[i] * inner_size == stride:
                    single[i] += 1
                elif not casts[i]:
                    cost += 1
        size *= dims[idim][0]
        if size == 0:
            break
        capped = NUMPY_BUFSIZE if size > NUMPY_BUFSIZE and cost > 1 else size
        if cost * best_size <= best_cost * capped:
            best_dim, best_cost, best_size = idim, cost, size
    return best_dim, single


def as_read(operand: Node) -> tuple:
    """The strides a NumPy loop (a ufunc's, a scan's; a copy's of its prototype) reads ``operand`` with: a
    cast to the loop's type is no array NumPy allocates but a conversion as the loop reads, so the cast's
    operand as it lies (a broadcast's zero strides included, which decide nothing). Alone, as a result,
    a cast is a unary ufunc's array (``_strides_of``); folded to a constant, it keeps both."""
    operand = _loop_operand(operand)
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
