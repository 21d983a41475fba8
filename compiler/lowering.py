"""Lowering of a traced graph to one MLIR module of ``linalg`` on tensors.

Inputs become read-only tensor arguments, results are written into caller-owned
memrefs (destination-passing), small constants are inlined and large ones become
hidden arguments. Every op carries the user's source location as ``loc(file:line)``, named
by the graph op that made it (``loc("concat#7"(file:line))``), so the IR, everything derived
from it and MLIR's own diagnostics point back at user code (see ``errors``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import prod

import numpy as np

from . import dtypes as dt
from . import layout, pairwise
from .errors import OpOrigin
from .graph import Node, SourceLoc, topological
from .primitives import (PRIMITIVES, bitcast_scalar, cast_scalar, computed_by_numpy_loop, elementwise_scalar,
                         numpy_constant_clip, numpy_loop_spec, numpy_scalar_power, scalar_const, scalar_to_loop, UFUNCS)

INLINE_CONST_LIMIT = 16  # elements; larger constants are passed as hidden arguments


@dataclass
class LoweredModule:
    text: str
    func_name: str
    hidden: list[np.ndarray] = field(default_factory=list)   # appended after user inputs
    out_specs: list[tuple] = field(default_factory=list)      # (shape, dtype) per output
    origins: dict[str, OpOrigin] = field(default_factory=dict)  # location tag -> the graph op it names


class _Region:
    """Collects the scalar ops of one linalg region."""

    def __init__(self, em: "Emitter"):
        self.em, self.lines = em, []

    def op(self, text: str) -> str:
        name = self.em.fresh("s")
        self.lines.append(f"{name} = {text}")
        return name


def _loc(loc: SourceLoc, tag: str | None = None) -> str:
    f = loc.file.replace("\\", "\\\\").replace('"', '\\"')
    return f'loc("{tag}"("{f}":{loc.line}:0))' if tag else f'loc("{f}":{loc.line}:0)'


def _extreme(dtype: np.dtype, lowest: bool):
    """The lowest (or highest) value of ``dtype``: the identity of max (or min), -inf/+inf for floats."""
    if dtype.kind == "f":
        return -np.inf if lowest else np.inf
    if dtype.kind == "b":
        return not lowest
    info = np.iinfo(dtype)
    return info.min if lowest else info.max


def _dims(n: int) -> str:
    return ", ".join(f"d{i}" for i in range(n))


def _map(n: int, results: list[str]) -> str:
    return f"affine_map<({_dims(n)}) -> ({', '.join(results)})>"


def _loop_operand_indices(operand_shape: tuple, shape: tuple, axes: list, backwards: bool) -> list[str]:
    """The indices into an operand of ``operand_shape`` (broadcast onto ``shape``) of the element at the index
    ``d0, d1, ...`` of a tensor whose axes are ``shape``'s ``axes``, read last to first if ``backwards``: an axis
    the tensor lacks (a row's, for an operand that does not vary along it) or the operand stretches reads 0."""
    lead = len(shape) - len(operand_shape)
    indices = []
    for e, n in enumerate(operand_shape):
        if n == 1 or lead + e not in axes:
            indices.append("0")
        else:
            j = axes.index(lead + e)
            indices.append(f"-d{j} + {shape[lead + e] - 1}" if backwards else f"d{j}")
    return indices


def _reassociation(groups: list[list[int]]) -> str:
    """A collapse_shape/expand_shape reassociation: which dims of the larger shape form each of the other's."""
    return "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"


def is_splat(value: np.ndarray) -> bool:
    """All elements identical, bit for bit (so 0.0 and -0.0, or two NaNs, are told apart)."""
    flat = np.ascontiguousarray(value).reshape(-1)
    if flat.size == 0:
        return False
    if flat.dtype.kind == "f":
        flat = flat.view(f"u{flat.dtype.itemsize}")
    return bool((flat == flat[0]).all())


def _const_text(value: np.ndarray) -> str:
    value = np.asarray(value)
    dtype = value.dtype
    flat = value.reshape(-1)
    if is_splat(value):
        v = flat[0]
        if dtype.kind == "f":
            bits = np.asarray(v, dtype).view(f"u{dtype.itemsize}")
            return f"0x{int(bits):0{dtype.itemsize * 2}X}"
        if dtype.kind == "b":
            return "true" if bool(v) else "false"
        return str(int(np.asarray(v).astype(f"i{dtype.itemsize}")))
    if dtype.kind == "b":
        def nest(a):
            if a.ndim == 0:
                return "true" if bool(a) else "false"
            return "[" + ", ".join(nest(x) for x in a) + "]"
        return nest(value)
    return '"0x' + np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<")).tobytes().hex().upper() + '"'


class Emitter:
    def __init__(self, func_name: str, inputs: list[Node], faults: dict | None = None, scan_loops: bool = True,
                 numpy_sum_order: bool = True, numpy_loops: bool = True):
        self.func_name = func_name
        self.scan_loops = scan_loops  # see ``scan``
        self.numpy_sum_order = numpy_sum_order  # see ``_pairwise_sum``
        self.numpy_loops = numpy_loops  # see ``_numpy_ufunc``
        self.strides: dict[int, tuple] = {}  # NumPy's layout of each value (``layout``), for its sums
        self.inputs = inputs
        self.faults = faults or {}
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.hidden: list[np.ndarray] = []
        self.hidden_types: list[str] = []
        self.counter = 0
        self.matmul_functions: dict[tuple, str] = {}
        self.extra_functions: list[str] = []
        self.current: Node | None = None   # the graph op being lowered: what its MLIR ops' locations name
        self.origins: dict[str, OpOrigin] = {}
        self.tags: dict[int, str] = {}

    # -- basics
    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"%{prefix}{self.counter}"

    def located(self, loc: SourceLoc) -> str:
        """``loc`` as MLIR location text, named by the graph op being lowered. Tags are numbered in
        lowering order, not by node id, so one graph gives the same text in every process."""
        node = self.current
        if node is None:
            return _loc(loc)
        tag = self.tags.get(node.id)
        if tag is None:
            tag = self.tags[node.id] = f"{node.op}#{len(self.tags)}"
            self.origins[tag] = OpOrigin(node.op, node.loc, node.id)
        return _loc(loc, tag)

    def line(self, text: str, loc: SourceLoc | None = None) -> None:
        self.lines.append(f"    {text} " + (self.located(loc) if loc else "loc(unknown)"))

    def assign(self, text: str, loc: SourceLoc | None = None) -> str:
        name = self.fresh()
        self.line(f"{name} = {text}", loc)
        return name

    def empty(self, shape, dtype, loc: SourceLoc | None = None) -> str:
        return self.assign(f"tensor.empty() : {dt.tensor_type(shape, dtype)}", loc)

    def filled(self, shape, dtype, value, loc) -> str:
        empty = self.empty(shape, dtype, loc)
        stored = np.dtype(np.uint8) if dt.is_bool(dtype) else dtype  # bool tensors hold i8
        t = dt.mlir_type(stored)
        region = _Region(self)
        c = scalar_const(region, value, stored)
        for ln in region.lines:
            self.line(ln, loc)
        return self.assign(f"linalg.fill ins({c} : {t}) outs({empty} : {dt.tensor_type(shape, dtype)}) -> {dt.tensor_type(shape, dtype)}", loc)

    # -- values
    def value(self, node: Node) -> str:
        if node.id in self.names:
            return self.names[node.id]
        outer, self.current = self.current, node
        try:
            name = self._value(node)
        finally:
            self.current = outer
        self.names[node.id] = name
        return name

    def _value(self, node: Node) -> str:
        if node.op == "input":
            name = f"%arg{node.index}"
        elif node.op == "const":
            name = self._constant(node)
        elif node.size == 0:
            # nothing to compute; and the ops that make an empty result (a slice past an axis'
            # end, say) can carry offsets that MLIR's verifier refuses on an empty dimension
            name = self.empty(node.shape, node.dtype, node.loc)
        else:
            name = PRIMITIVES[node.op].lower(self, node, _Operands(self, node))
            name = self._maybe_fault(node, name)
        return name

    def _constant(self, node: Node) -> str:
        t = dt.tensor_type(node.shape, node.dtype)
        value = node.value.astype(np.uint8) if dt.is_bool(node.dtype) else node.value  # stored as i8
        return self._array(value, t, node.size <= INLINE_CONST_LIMIT or is_splat(value), node.loc)

    def _table(self, values: np.ndarray, loc) -> str:
        """An integer table of the lowering's own (a pairwise tree's): in the IR while small, past
        LARGE_TABLE entries a hidden argument, so the IR does not grow with a long row's leaves."""
        return self._array(values, dt.tensor_type(values.shape, values.dtype), values.size <= LARGE_TABLE, loc)

    def _array(self, value: np.ndarray, t: str, inline: bool, loc) -> str:
        """A constant array of type ``t``: written into the IR when ``inline``, else a hidden argument."""
        if inline:
            return self.assign(f"arith.constant dense<{_const_text(value)}> : {t}", loc)
        self.hidden.append(np.ascontiguousarray(value))
        self.hidden_types.append(t)
        return f"%hidden{len(self.hidden) - 1}"

    def _maybe_fault(self, node: Node, name: str) -> str:
        fault = self.faults.get(node.op)
        if fault is None or node.dtype.kind != "f":
            return name
        factor, offset = fault
        t = dt.mlir_type(node.dtype)

        def body(rb, args):
            scaled = rb.op(f"arith.mulf {args[0]}, {scalar_const(rb, factor, node.dtype)} : {t}")
            return rb.op(f"arith.addf {scaled}, {scalar_const(rb, offset, node.dtype)} : {t}")

        return self._generic(node.shape, node.dtype, [(name, node.shape)], body, node.loc)

    # -- broadcasting: drop the size-1 dims an operand is broadcast along (collapse_shape),
    # so every indexing map is a projected permutation, the form fusion handles best.
    def broadcast_operand(self, name: str, shape: tuple, dtype, out_shape: tuple, loc):
        rank, offset = len(out_shape), len(out_shape) - len(shape)
        keep = [i for i, d in enumerate(shape) if d != 1 or out_shape[offset + i] == 1]
        if len(keep) != len(shape):
            if keep:
                groups, current = [], []
                for i in range(len(shape)):
                    current.append(i)
                    if i in keep:
                        groups.append(current)
                        current = []
                if current:
                    groups[-1].extend(current)
            else:
                groups = []
            reassoc = _reassociation(groups)
            new_shape = tuple(shape[i] for i in keep)
            name = self.assign(
                f"tensor.collapse_shape {name} {reassoc} : {dt.tensor_type(shape, dtype)} into {dt.tensor_type(new_shape, dtype)}", loc)
            shape = new_shape
        return name, shape, _map(rank, [f"d{offset + i}" for i in keep])

    def _generic(self, out_shape, out_dtype, operands, body, loc):
        """A parallel linalg.generic; operands are (name, shape[, dtype[, indexing map]]), broadcast
        to out_shape unless their map is given."""
        rank = len(out_shape)
        names, types, maps, elem = [], [], [], []
        for operand in operands:
            name, shape = operand[0], operand[1]
            dtype = operand[2] if len(operand) > 2 else out_dtype
            amap = operand[3] if len(operand) > 3 else None
            if amap is None:
                name, shape, amap = self.broadcast_operand(name, shape, dtype, out_shape, loc)
            names.append(name)
            types.append(dt.tensor_type(shape, dtype))
            maps.append(amap)
            elem.append(dtype)
        out_t = dt.tensor_type(out_shape, out_dtype)
        init = self.empty(out_shape, out_dtype, loc)
        maps.append(_map(rank, [f"d{i}" for i in range(rank)]))
        region = _Region(self)
        raw = [self.fresh("in") for _ in names]
        # bool elements are stored as i8 and computed with as i1
        args = [region.op(f"arith.trunci {a} : i8 to i1") if dt.is_bool(e) else a for a, e in zip(raw, elem)]
        res = body(region, args)
        if dt.is_bool(out_dtype):
            res = region.op(f"arith.extui {res} : i1 to i8")
        its = ", ".join(['"parallel"'] * rank)
        ins = f"ins({', '.join(names)} : {', '.join(types)}) " if names else ""
        head = (f"linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{its}]}} "
                f"{ins}outs({init} : {out_t}) {{")
        result = self.fresh()
        self.lines.append(f"    {result} = {head}")
        here = self.located(loc)  # region arguments and scalar ops carry the expression's location too
        bb = ", ".join([f"{a}: {dt.storage_type(e)} {here}" for a, e in zip(raw, elem)] + [f"{self.fresh('o')}: {dt.storage_type(out_dtype)} {here}"])
        self.lines.append(f"    ^bb0({bb}):")
        for ln in region.lines:
            self.lines.append(f"      {_region_line(ln, here)}")
        self.lines.append(f"      linalg.yield {res} : {dt.storage_type(out_dtype)} {here}")
        self.lines.append(f"    }} -> {out_t} {self.located(loc)}")
        return result

    # -- primitive lowerings
    def elementwise(self, node: Node, operands) -> str:
        compute = node.attrs["compute"]
        numpy_loop = self.numpy_loops and computed_by_numpy_loop(node.op, compute)
        # ufunc.at's updates (``per_update``): NumPy calls its loop on each element, at stride 0
        per_element = numpy_loop and node.attrs.get("per_update", False)
        if numpy_loop and not per_element:
            return self._numpy_ufunc(node, operands)
        tensor_ops, scalars = [], {}
        for i, inp in enumerate(node.inputs):
            if inp.is_const() and inp.size == 1:
                scalars[i] = inp.value.reshape(())
            else:
                tensor_ops.append((i, operands[i], inp.shape, inp.dtype))

        direct = node.op in ("cast", "broadcast_to", "bitcast")
        # operands are converted to the loop's dtypes as NumPy converts them, then float16 ones widened
        # to the type the loop computes in (see ``dt.arithmetic_type``); a cast is one conversion
        wide = compute if direct else tuple(dt.arithmetic_type(c) for c in compute)
        out = node.dtype if direct else dt.arithmetic_type(node.dtype)

        def body(rb, args):
            vals, k = [], 0
            for i, inp in enumerate(node.inputs):
                if i in scalars:
                    v = scalars[i].astype(compute[i]).astype(wide[i])
                    vals.append(scalar_const(rb, v, wide[i]))
                else:
                    v = cast_scalar(rb, args[k], inp.dtype, compute[i])
                    vals.append(cast_scalar(rb, v, compute[i], wide[i]))
                    k += 1
            if node.op == "bitcast":
                return bitcast_scalar(rb, vals[0], compute[0], node.dtype)
            if direct:
                return cast_scalar(rb, vals[0], compute[0], node.dtype)
            if per_element:
                result = self._numpy_element(rb, node, node.op, vals, np.dtype(wide[-1]), np.dtype(compute[-1]))
            elif node.attrs.get("scalar_exponent"):
                result = numpy_scalar_power(rb, vals[0], vals[1], np.dtype(wide[-1]))
            elif node.attrs.get("scalar_bounds"):
                result = numpy_constant_clip(rb, *vals, np.dtype(wide[-1]))
            else:
                result = elementwise_scalar(rb, node.op, vals, np.dtype(wide[-1]), out, operand_dtypes=wide,
                                            half=np.dtype(compute[-1]) == np.float16)
            return cast_scalar(rb, result, out, node.dtype)

        return self._generic(node.shape, node.dtype, [(n, s, d) for _, n, s, d in tensor_ops], body, node.loc)

    def _numpy_ufunc(self, node: Node, operands) -> str:
        """A ufunc whose values are its library's (``primitives.NUMPY_LOOP_UFUNCS``) over whole arrays, as a
        call of a private function ``parity_numpy_ufunc_<n>(operands..., %init)`` whose generic computes it and
        which the CPU target replaces by calls of NumPy's own loop (``backend.substitute_numpy_loops``), at
        steps of the signs NumPy's iterator calls it with (``layout.loop_steps``), since its SIMD loops round
        otherwise at other steps: an operand it reads backwards is passed reversed, last element first, and read
        from its end; one it sees at step 0 throughout the call is passed 0-d (``primitives.scalar_to_loop``: x ** 2.0
        is x * x there, x ** 0.5 a square root, where its SIMD pow differs by an ulp); one it sees at step 0 along
        each row of the iteration (``x ** e[:, None]`` of long rows) is passed one element per row, the others
        with the rows' axes last, and the loop is called row by row; a result NumPy writes backwards (into an
        out= view such as ``o[::-1]``) is written from the end of the call's destination and reversed after.
        Operands are in the loop's dtype; the result is cast to the node's dtype after."""
        compute, shape = node.attrs["compute"], node.shape
        loop = np.dtype(compute[0])
        # (a guessed layout: read forwards, as a fresh C array)
        steps = layout.loop_steps(node, loop) if all(layout.known(inp) for inp in node.inputs) else None
        # float16's loops take their SIMD path only where every step is 1 and else compute element by element,
        # whatever the steps: a step other than 1 is passed as a backwards one (float32's and float64's loops
        # round the same at any positive step)
        backwards = (lambda step: step < 0 or step > 1) if loop == np.float16 else (lambda step: step < 0)
        kinds = []
        for i, inp in enumerate(node.inputs):
            step = 1 if steps is None else steps.steps[i]
            if len(node.inputs) == 2 and scalar_to_loop(inp, [node.inputs[1 - i]], shape):
                kinds.append("scalar")
            elif step == 0 and inp.size > 1:
                kinds.append("row")
            elif step == 0:  # one element the loop reads at stride 0 (a one-element call through NumPy's iterator)
                kinds.append("scalar")
            else:
                kinds.append("back" if backwards(step) else "fwd")
        # with rows, the rows' axes last (in order: which element a call meets first changes no value)
        row_axes = steps.row_axes if "row" in kinds else ()
        axes = [d for d in range(len(shape)) if d not in row_axes] + list(row_axes)
        outer = axes[:len(axes) - len(row_axes)]
        call_shape = tuple(shape[d] for d in axes)
        written_back = steps is not None and backwards(steps.result)
        args, shapes = [], []
        for inp, operand, c, kind in zip(node.inputs, operands, compute, kinds):
            at = () if kind == "scalar" else call_shape[:len(outer)] if kind == "row" else call_shape
            if kind == "scalar" and inp.is_const():
                args.append(self.filled((), loop, inp.value.reshape(()).astype(c), node.loc))
            elif kind == "fwd" and inp.dtype == loop and inp.shape == shape and axes == sorted(axes):
                args.append(operand)
            else:
                read = outer if kind == "row" else axes
                amap = _map(len(at), _loop_operand_indices(inp.shape, shape, read, kind == "back"))
                args.append(self._generic(at, loop, [(operand, inp.shape, inp.dtype, amap)],
                                          lambda rb, a, d=inp.dtype, c=c: a[0] if d == loop else
                                          cast_scalar(rb, cast_scalar(rb, a[0], d, c), c, loop), node.loc))
            shapes.append(at)
        types = [dt.tensor_type(at, loop) for at in shapes]
        out_t = dt.tensor_type(call_shape, loop)
        callee = self._numpy_ufunc_function(node, loop, shapes, types, out_t, kinds, written_back)
        init = self.filled(call_shape, loop, -0.0, node.loc)
        result = self.assign(f"func.call @{callee}({', '.join(args + [init])}) : ({', '.join(types + [out_t])}) -> {out_t}",
                             node.loc)
        if axes != sorted(axes) or written_back:  # back to the result's axes, first element first
            indices = [f"-d{d} + {shape[d] - 1}" if written_back else f"d{d}" for d in axes]
            result = self._generic(shape, loop, [(result, call_shape, loop, _map(len(shape), indices))],
                                   lambda rb, a: a[0], node.loc)
        if node.dtype == loop:
            return result
        return self._generic(shape, node.dtype, [(result, shape, loop)],
                             lambda rb, a: cast_scalar(rb, a[0], loop, node.dtype), node.loc)

    def _numpy_element(self, rb: "_Region", node: Node, name: str, values: list[str], wide: np.dtype,
                       loop: np.dtype) -> str:
        """One element of ufunc ``name`` as NumPy's ufunc.at computes it, its loop (dtype ``loop``) called on
        the one element at stride 0 (so its power takes its fast paths: np.power.at(y, i, 2.0) squares):
        a call of the private function ``parity_numpy_element_<n>(x...) -> x`` marked ``parity.numpy_loop``,
        whose body computes it with the target's math functions and which the CPU target replaces by that call
        (``backend.substitute_numpy_loops``). ``values`` and the result are in the arithmetic type ``wide``
        (float32 for float16's loop, whose operands are float16 values)."""
        t = dt.mlir_type(loop)
        callee = self._private_function(("numpy_element", name, loop.name), "parity_numpy_element", node,
                                        lambda callee, here: self._numpy_element_text(name, loop, len(values), callee, here))
        args = [cast_scalar(rb, v, wide, loop) for v in values]
        result = rb.op(f"func.call @{callee}({', '.join(args)}) : ({', '.join([t] * len(args))}) -> {t}")
        return cast_scalar(rb, result, loop, wide)

    def _numpy_loop_region(self, name: str, loop: np.dtype, arity: int) -> tuple["_Region", list[str], str]:
        """The scalar ops of ufunc ``name`` on ``%x0``... of dtype ``loop`` with the target's math functions
        (the body both NumPy-loop function forms keep where NumPy's loop does not replace it): the region,
        the operands' names and the value, of dtype ``loop``."""
        wide = dt.arithmetic_type(loop)
        region = _Region(self)
        xs = [f"%x{i}" for i in range(arity)]
        value = elementwise_scalar(region, name, [cast_scalar(region, x, loop, wide) for x in xs], np.dtype(wide),
                                   np.dtype(wide), operand_dtypes=[wide] * arity, half=loop == np.float16)
        return region, xs, cast_scalar(region, value, wide, loop)

    def _numpy_element_text(self, name: str, loop: np.dtype, arity: int, callee: str, here: str) -> str:
        t = dt.mlir_type(loop)
        region, xs, value = self._numpy_loop_region(name, loop, arity)
        body = "\n".join(f"    {_region_line(ln, here)}" for ln in region.lines)
        return (f"  func.func private @{callee}({', '.join(f'{x}: {t} {here}' for x in xs)}) -> {t} attributes "
                f"{{parity.numpy_loop = \"{numpy_loop_spec(name, loop)}\"}} {{\n{body}\n"
                f"    return {value} : {t} {here}\n  }} {here}\n")

    def _numpy_ufunc_function(self, node: Node, loop: np.dtype, shapes: list, types: list, out_t: str,
                              kinds: list, written_back: bool = False) -> str:
        """The name of the private function ``(%a0, ..., %init) -> %r`` computing ``node``'s ufunc in ``loop`` from
        operands of ``shapes`` (the call's, one element per row, or 0-d; ``kinds``, ``_numpy_ufunc``'s): one
        generic computing it with the target's math functions, the function marked ``parity.numpy_loop`` with its
        NumPy loop (``_private_function``). An operand read backwards holds its elements last to first; the NumPy
        loop's calls read it from its end at a negative step (``parity.numpy_loop_backwards``: the operands'
        positions, the destination's last, where ``written_back``: it then holds the result last element first);
        with operands of one element per row (``parity.numpy_loop_per_row``), the loop is called row by row,
        the rows being the call's last axes."""
        return self._private_function(("numpy_ufunc", node.op, tuple(types), out_t, tuple(kinds), written_back),
                                      "parity_numpy_ufunc", node, lambda callee, here: self._numpy_ufunc_text(
                                          node, loop, shapes, types, out_t, kinds, written_back, callee, here))

    def _numpy_ufunc_text(self, node: Node, loop: np.dtype, shapes: list, types: list, out_t: str, kinds: list,
                          written_back: bool, callee: str, here: str) -> str:
        rank = len(node.shape)
        dims = [f"d{i}" for i in range(rank)]
        # each operand read where its element of the destination's lies: a destination written backwards holds
        # element k of the call at k's mirror, so there the operands held forwards are read mirrored
        maps = [_map(rank, dims[:len(at)]) if (kind == "back") == written_back or kind == "scalar" else
                _map(rank, [f"-{d} + {n - 1}" for d, n in zip(dims, at)]) for at, kind in zip(shapes, kinds)]
        maps.append(_map(rank, dims))
        backwards = [i for i, k in enumerate(kinds + ["back" if written_back else "fwd"]) if k == "back"]
        per_row = [i for i, k in enumerate(kinds) if k == "row"]
        marked = "".join(f", {attr} = [{', '.join(f'{i} : i64' for i in positions)}]"
                         for positions, attr in ((backwards, NUMPY_LOOP_BACKWARDS_ATTR), (per_row, NUMPY_LOOP_PER_ROW_ATTR))
                         if positions)
        region, xs, value = self._numpy_loop_region(node.op, loop, len(shapes))
        t = dt.mlir_type(loop)
        # the destination (-0.0, from the caller) added: a generic that reads its destination writes the
        # caller's buffer, so the function returns nothing after bufferization (x + -0.0 is x, NaNs and
        # -0.0 included; the CPU target replaces the whole body anyway)
        value = region.op(f"arith.addf {value}, %o : {t}")
        ins = ", ".join(f"%a{i}" for i in range(len(shapes)))
        body = "\n".join(f"      {_region_line(ln, here)}" for ln in region.lines)
        its = ", ".join(['"parallel"'] * rank)
        return (f"  func.func private @{callee}({', '.join(f'%a{i}: {ty} {here}' for i, ty in enumerate(types))}, "
                f"%init: {out_t} {here}) -> {out_t} attributes {{parity.numpy_loop = "
                f"\"{numpy_loop_spec(node.op, loop)}\"{marked}}} {{\n"
                f"    %r = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = "
                f"[{its}]}} ins({ins} : {', '.join(types)}) outs(%init : {out_t}) {{\n"
                f"    ^bb0({', '.join(f'{x}: {t} {here}' for x in xs)}, %o: {t} {here}):\n{body}\n"
                f"      linalg.yield {value} : {t} {here}\n    }} -> {out_t} {here}\n"
                f"    return %r : {out_t} {here}\n  }} {here}\n")

    def reduce(self, node: Node, x: str, start: str | None = None) -> str:
        return self._reduce_node(node, x, start=start)

    def masked_sum(self, node: Node, ops: list[str]) -> str:
        """np.sum(x, where=mask) of floats (``primitives.masked_sum``): in NumPy's order on the CPU, each
        run of selected elements in an inner loop summed pairwise (``_masked_pairwise_sum``); where that
        order is not NumPy's pairwise one (inner loops along a kept axis, which add element by element) or
        the target has its own, the excluded elements become -0.0, which changes no sum, and are summed
        as the unmasked array would be."""
        return self._reduce_node(node, ops[0], ops[1])

    def _reduce_node(self, node: Node, x: str, mask: str | None = None, start: str | None = None) -> str:
        src, axes, op = node.inputs[0], node.attrs["axes"], "reduce_sum" if mask is not None else node.op
        # where the output starts: NumPy's initial=, or a start per output element (initial=None's first ones)
        initial = node.attrs.get("initial") if start is None else _Start(start, node.shape, node.dtype)
        strides = masked = None  # for a float sum in NumPy's order: NumPy's layout of the operand (``layout``)
        if op in ("reduce_sum", "reduce_prod") and node.dtype.kind == "f" and self.numpy_sum_order:
            strides = self.strides[src.id]
            memory = layout.sum_order(src.shape, strides)
            if mask is not None:  # the iterator orders the axes by both operands' strides
                masked = (mask, self.strides[node.inputs[1].id])
                memory = layout.iteration_order(src.shape, [strides, masked[1]])
            sized = [d for d in memory if src.shape[d] != 1]  # where unit axes lie changes no order
            if sized != sorted(sized):
                return self._sum_in_memory_order(node, op, x, strides, memory, initial, masked)
        if mask is not None and masked is None:
            x = self._masked_out(x, mask, src.shape, node.dtype, node.loc)
        return self._reduction(op, x, src.shape, axes, node.dtype, node.shape, node.loc, strides, _buffered_cast(src),
                               initial, mask=masked)

    def _start_filled(self, shape: tuple, dtype, initial, default, loc) -> str:
        """Each output's start as a tensor of ``shape`` (the output's elements, unit axes aside) and
        ``dtype``: ``default`` (the identity), the number ``initial``, or a ``_Start``'s values."""
        if not isinstance(initial, _Start):
            return self.filled(shape, dtype, default if initial is None else initial, loc)
        values = initial.name
        if initial.shape != shape:
            values = self._reshaped(values, initial.shape, initial.dtype, shape, loc)
        if initial.dtype != dtype:
            values = self._generic(shape, dtype, [(values, shape, initial.dtype)],
                                   lambda rb, args: cast_scalar(rb, args[0], initial.dtype, dtype), loc)
        return values

    def _masked_out(self, x: str, mask: str, shape: tuple, dtype, loc) -> str:
        """``x`` with -0.0 where ``mask`` is False (-0.0 + v is v, for every v)."""
        return self._generic(shape, dtype, [(x, shape, dtype), (mask, shape, np.dtype(bool))],
                             lambda rb, args: rb.op(f"arith.select {args[1]}, {args[0]}, "
                                                    f"{scalar_const(rb, -0.0, dtype)} : {dt.storage_type(dtype)}"), loc)

    def row_sum_from(self, node: Node, ops: list[str]) -> str:
        """``start`` plus each row's sum (``primitives.row_sum_from``): NumPy's pairwise tree over the
        whole row, added to the start value (the row is the inner loop, whatever the memory order);
        on a target with sums of its own order, a reduction into the start values."""
        (x, start), src = ops, node.inputs[0]
        if self.numpy_sum_order:
            plan = pairwise.SumPlan(src.ndim - 1, src.shape[-1], ())
            return self._pairwise_sum(x, src.shape, node.dtype, plan, node.shape, node.loc,
                                      initial=_Start(start, node.shape, node.dtype))
        return self._reduction("reduce_sum", x, src.shape, (src.ndim - 1,), node.dtype, node.shape, node.loc, None,
                               initial=_Start(start, node.shape, node.dtype))

    def _sum_in_memory_order(self, node: Node, op: str, x: str, strides: tuple, memory: tuple, initial,
                             masked: tuple | None = None) -> str:
        """A float sum or product of an operand NumPy lays out in another order than C's (a transpose's
        view, or what a ufunc makes of one): NumPy's iterator visits memory in order, so the operand (and
        a sum's mask) is laid out in that order, reduced as a C-ordered one, and the result's axes put back."""
        src, axes = node.inputs[0], node.attrs["axes"]
        shape = tuple(src.shape[d] for d in memory)
        x = self._permuted(x, src.shape, node.dtype, memory, node.loc)
        if masked is not None:
            masked = (self._permuted(masked[0], src.shape, np.dtype(bool), memory, node.loc),
                      tuple(masked[1][d] for d in memory))
        kept = [d for d in memory if d not in axes]
        kept_shape = tuple(src.shape[d] for d in kept)
        if isinstance(initial, _Start):  # its axes in the order the sum gives them
            order = tuple(sorted(kept).index(d) for d in kept)
            initial = _Start(self._permuted(initial.name, initial.shape, initial.dtype, order, node.loc), kept_shape,
                             initial.dtype)
        summed = self._reduction(op, x, shape, tuple(sorted(memory.index(a) for a in axes)), node.dtype,
                                 kept_shape, node.loc, tuple(strides[d] for d in memory),
                                 _buffered_cast(src), initial, mask=masked)
        back = tuple(kept.index(d) for d in sorted(kept))
        if back == tuple(range(len(back))):
            return summed
        return self._permuted(summed, tuple(src.shape[d] for d in kept), node.dtype, back, node.loc)

    def _reduction(self, op_name: str, x: str, src_shape: tuple, axes: tuple, dtype, out_shape: tuple, loc,
                   strides: tuple | None, cast: bool = False, initial=None, mask: tuple | None = None) -> str:
        """``op_name`` (reduce_*) of ``x`` over ``axes``. ``strides``: for a float sum or product in
        NumPy's order, NumPy's layout of the operand (its axes in C order); None for the target's own
        order. ``cast``: NumPy casts the operand as it reduces it (through its buffer). ``initial``:
        a sum's or product's start (NumPy's ``initial=``), where the accumulator starts instead of
        the identity, or a ``_Start``: a tensor of such starts, one per output element.
        ``mask``: a float sum's where= mask (its tensor and NumPy's strides of it, in ``x``'s axis order):
        only the selected elements are summed, in NumPy's masked order where that is pairwise."""
        t = dt.storage_type(dtype)  # bool max is arith.ori on stored i8 0/1
        kind = dtype.kind
        numpy_order = strides is not None
        if numpy_order and op_name == "reduce_prod" and dtype == np.float16:
            return self._half_product(x, src_shape, axes, out_shape, loc, strides, cast, initial)
        if numpy_order and op_name == "reduce_sum":
            plan = pairwise.numpy_sum_plan(src_shape, axes)
            if plan is not None:
                run = layout.inner_run(src_shape, strides, plan.row_from)
                if mask is not None:  # NumPy's inner loop steps through both with one stride each
                    run = min(run, layout.inner_run(src_shape, mask[1], plan.row_from))
                chunk = pairwise.buffer_chunk(plan.row, run, cast)
                if pairwise.emitted(plan, chunk):
                    if mask is not None:
                        return self._masked_pairwise_sum(x, mask[0], src_shape, dtype, plan, chunk, out_shape, loc,
                                                         initial)
                    if chunk is None:
                        return self._pairwise_sum(x, src_shape, dtype, plan, out_shape, loc, initial=initial)
                    return self._buffered_sum(x, src_shape, dtype, plan, chunk, out_shape, loc, initial)
        if mask is not None:  # (added element by element, or in the target's order: an excluded one adds -0.0)
            x = self._masked_out(x, mask[0], src_shape, dtype, loc)
        if op_name == "reduce_sum":
            identity, op = 0, {"f": "arith.addf", "i": "arith.addi", "u": "arith.addi", "b": "arith.ori"}[kind]
        elif op_name == "reduce_prod":  # in the result's own dtype, in order, as NumPy multiplies
            identity, op = 1, {"f": "arith.mulf", "i": "arith.muli", "u": "arith.muli", "b": "arith.andi"}[kind]
        elif op_name in ("reduce_any", "reduce_all"):  # of bools (stored 0/1)
            identity, op = (False, "arith.ori") if op_name == "reduce_any" else (True, "arith.andi")
        elif op_name == "reduce_max":
            identity = _extreme(dtype, lowest=True)
            op = {"f": "arith.maximumf", "i": "arith.maxsi", "u": "arith.maxui", "b": "arith.ori"}[kind]
        else:  # reduce_min; arith.minimumf propagates NaN, as np.min does
            identity = _extreme(dtype, lowest=False)
            op = {"f": "arith.minimumf", "i": "arith.minsi", "u": "arith.minui", "b": "arith.andi"}[kind]
        # Where NumPy adds whole slices in order (its inner loop along a kept axis), so does the loop,
        # rounding to the dtype after every step as NumPy does. Other float32 sums (rows or bufferfuls
        # longer than the pairwise tree is emitted for: ``pairwise.emitted``; the GPU) accumulate in
        # float64: NumPy sums those pairwise, which a sequential float32 loop cannot match (errors grow
        # with the row length); a wider accumulator stays within NumPy's own rounding of the exact
        # sum. float16 sums there (and float16 products on the GPU) accumulate in float32, rounded once
        # at the end, as NumPy's reduction along a contiguous axis does.
        in_order = numpy_order and pairwise.adds_in_order(src_shape, axes)
        acc_dtype = dtype
        if op_name == "reduce_sum" and dtype == np.float32 and not in_order:
            acc_dtype = np.dtype(np.float64)
        elif op_name in ("reduce_sum", "reduce_prod") and dtype == np.float16 and not in_order:
            acc_dtype = np.dtype(np.float32)
        ta = dt.storage_type(acc_dtype)
        init = self._start_filled(out_shape, acc_dtype, initial, identity, loc)
        region = _Region(self)
        a, b = self.fresh("in"), self.fresh("acc")
        wide = region.op(f"arith.extf {a} : {t} to {ta}") if acc_dtype != dtype else a
        result = self._linalg_reduce((x, dt.tensor_type(src_shape, dtype)), (init, dt.tensor_type(out_shape, acc_dtype)),
                                     axes, [(a, t), (b, ta)], region, (region.op(f"{op} {wide}, {b} : {ta}"), ta), loc)
        if acc_dtype != dtype:
            return self._generic(out_shape, dtype, [(result, out_shape, acc_dtype)],
                                 lambda rb, args: cast_scalar(rb, args[0], acc_dtype, dtype), loc)
        return result

    def _half_product(self, x: str, src_shape: tuple, axes: tuple, out_shape: tuple, loc, strides: tuple,
                      cast: bool, initial=None) -> str:
        """A float16 product in NumPy's order (``x`` in memory order). NumPy's half loop multiplies in
        float32 along its inner loop, from the output's float16 value, and rounds to float16 as the
        loop ends: so once per row (the trailing reduced axes, merged), or per bufferful where NumPy
        buffers the row (``pairwise.buffer_chunk``), and after every step where the inner loop runs
        along a kept axis. One generic carries both the float16 output and the float32 running
        product; the row position says where an inner loop starts and ends."""
        plan = pairwise.numpy_sum_plan(src_shape, axes)
        if plan is None:  # every step is an inner loop of its own
            shape, reduced, period, piece = src_shape, axes, 1, 1
        else:
            p, run = plan.row_from, layout.inner_run(src_shape, strides, plan.row_from)
            chunk = pairwise.buffer_chunk(plan.row, run, cast)
            x = self._collapsed_row(x, src_shape, np.dtype(np.float16), p, loc)
            shape, reduced = src_shape[:p] + (plan.row,), tuple(a for a in axes if a < p) + (p,)
            # an inner loop is a ``piece`` of a ``period`` (its last piece maybe shorter)
            period, piece = (run, pairwise.BUFFER) if chunk == pairwise.UNEVEN else (plan.row, chunk or plan.row)
        rank = len(shape)
        kept = [f"d{d}" for d in range(rank) if d not in reduced]
        region = _Region(self)
        a, held, running = self.fresh("in"), self.fresh("acc"), self.fresh("run")
        if piece == 1:
            first = last = region.op("arith.constant true")
        else:
            q = region.op(f"linalg.index {rank - 1} : index")
            if period != shape[-1]:
                q = region.op(f"arith.remui {q}, {region.op(f'arith.constant {period} : index')} : index")
            r = q if piece == period else region.op(f"arith.remui {q}, {region.op(f'arith.constant {piece} : index')} : index")
            first = region.op(f"arith.cmpi eq, {r}, {region.op('arith.constant 0 : index')} : index")
            last = region.op(f"arith.cmpi eq, {r}, {region.op(f'arith.constant {piece - 1} : index')} : index")
            if period % piece:  # the period's last piece is shorter
                ends = region.op(f"arith.cmpi eq, {q}, {region.op(f'arith.constant {period - 1} : index')} : index")
                last = region.op(f"arith.ori {last}, {ends} : i1")
        start = region.op(f"arith.select {first}, {region.op(f'arith.extf {held} : f16 to f32')}, {running} : f32")
        product = region.op(f"arith.mulf {start}, {region.op(f'arith.extf {a} : f16 to f32')} : f32")
        rounded = region.op(f"arith.select {last}, {region.op(f'arith.truncf {product} : f32 to f16')}, {held} : f16")
        its = ", ".join('"reduction"' if d in reduced else '"parallel"' for d in range(rank))
        out_map, half = _map(rank, kept), np.dtype(np.float16)
        kept_shape = tuple(n for d, n in enumerate(shape) if d not in reduced)
        result = self._region_generic(
            [_map(rank, [f"d{d}" for d in range(rank)]), out_map, out_map], its, [(x, dt.tensor_type(shape, half))],
            [(self._start_filled(kept_shape, half, initial, 1.0, loc), dt.tensor_type(kept_shape, half)),
             (self.filled(kept_shape, np.dtype(np.float32), 1.0, loc), dt.tensor_type(kept_shape, np.dtype(np.float32)))],
            [(a, "f16"), (held, "f16"), (running, "f32")], region, [(rounded, "f16"), (product, "f32")], loc)
        if kept_shape != out_shape:  # kept unit axes after the row's start
            return self._reshaped(f"{result}#0", kept_shape, half, out_shape, loc)
        return f"{result}#0"

    def _linalg_reduce(self, operand, init, dims, args, region, yielded, loc) -> str:
        """A linalg.reduce of ``operand`` (value, tensor type) over ``dims`` into ``init`` (value, tensor
        type), its block's arguments ``args`` (name, element type), body ``region`` yielding ``yielded``."""
        result, here = self.fresh(), self.located(loc)
        self.lines.append(f"    {result} = linalg.reduce ins({operand[0]} : {operand[1]}) outs({init[0]} : {init[1]}) "
                          f"dimensions = [{', '.join(map(str, dims))}]")
        self.lines.append(f"      ({', '.join(f'{a}: {ty} {here}' for a, ty in args)}) {{")
        self.lines.extend(f"        {ln} {here}" for ln in region.lines)
        self.lines.append(f"        linalg.yield {yielded[0]} : {yielded[1]} {here}")
        self.lines.append(f"      }} {here}")
        return result

    def _buffered_sum(self, x: str, src_shape: tuple, dtype, plan: pairwise.SumPlan, chunk: int, out_shape: tuple,
                      loc, initial=None) -> str:
        """A float sum whose rows NumPy copies through its buffer (``pairwise.buffer_chunk``): each row in
        bufferfuls of ``chunk`` elements, each summed pairwise and added to the output in order, a last
        shorter one after the rest (only where no reduced axis lies before the row)."""
        p = plan.row_from
        prefix = src_shape[:p]
        whole, rest = divmod(plan.row, chunk)
        x = self._collapsed_row(x, src_shape, dtype, p, loc)
        head = self._row_slice(x, prefix, plan.row, 0, whole * chunk, dtype, loc) if rest else x
        head = self._split_row(head, prefix, whole, chunk, dtype, loc)
        head_plan = pairwise.SumPlan(p + 1, chunk, plan.outer_reduced + (p,))
        if not rest:
            return self._pairwise_sum(head, prefix + (whole, chunk), dtype, head_plan, out_shape, loc, initial=initial)
        summed = self._pairwise_sum(head, prefix + (whole, chunk), dtype, head_plan, prefix, loc, initial=initial)
        tail = self._row_slice(x, prefix, plan.row, whole * chunk, rest, dtype, loc)
        return self._pairwise_sum(tail, prefix + (rest,), dtype, pairwise.SumPlan(p, rest, ()), out_shape, loc,
                                  initial=_Start(summed, prefix, dtype))

    def _collapsed_row(self, x: str, shape: tuple, dtype, row_from: int, loc) -> str:
        """``x`` with its axes from ``row_from`` collapsed into one."""
        if row_from >= len(shape) - 1:
            return x
        groups = [[d] for d in range(row_from)] + [list(range(row_from, len(shape)))]
        collapsed = dt.tensor_type(shape[:row_from] + (prod(shape[row_from:]),), dtype)
        return self.assign(f"tensor.collapse_shape {x} {_reassociation(groups)} : {dt.tensor_type(shape, dtype)} into {collapsed}",
                           loc)

    def _row_slice(self, x: str, prefix: tuple, row: int, offset: int, size: int, dtype, loc) -> str:
        """Elements [offset, offset + size) of each row of ``x`` (prefix + (row,))."""
        p = len(prefix)
        return self.assign(
            f"tensor.extract_slice {x}[{', '.join(['0'] * p + [str(offset)])}] [{', '.join(map(str, prefix + (size,)))}] "
            f"[{', '.join(['1'] * (p + 1))}] : {dt.tensor_type(prefix + (row,), dtype)} to "
            f"{dt.tensor_type(prefix + (size,), dtype)}", loc)

    def _split_row(self, x: str, prefix: tuple, parts: int, length: int, dtype, loc) -> str:
        """``x`` (prefix + (parts * length,)) as prefix + (parts, length)."""
        p = len(prefix)
        reassoc = _reassociation([[d] for d in range(p)] + [[p, p + 1]])
        return self.assign(
            f"tensor.expand_shape {x} {reassoc} output_shape [{', '.join(map(str, prefix + (parts, length)))}] : "
            f"{dt.tensor_type(prefix + (parts * length,), dtype)} into {dt.tensor_type(prefix + (parts, length), dtype)}", loc)

    def _pairwise_sum(self, x: str, src_shape: tuple, dtype, plan: pairwise.SumPlan, out_shape: tuple, loc,
                      initial=None) -> str:
        """A float sum in NumPy's pairwise order (see ``pairwise``). The operand's axes from
        ``plan.row_from`` are collapsed into one row. Every leaf of the tree starts at a multiple of 8,
        so the row's whole blocks of 8 are its lanes: one generic sums each leaf's blocks in order
        (a table names the blocks, so leaves of any lengths share it), one combines each leaf's 8
        lanes as NumPy does, and one evaluates the tree (the last leaf gains the row's remainder
        first), adding the result to 0.0, NumPy's start. Reduced axes before the row then add row
        sums in order. float16 is summed in float32 and rounded as it enters the float16 result,
        as NumPy's half loop does. ``initial``: the output's value before this sum (default 0.0): NumPy's
        ``initial=``, or a ``_Start`` per output element (where an earlier bufferful left it, say)."""
        acc = np.dtype(np.float32) if dtype == np.float16 else dtype
        t, ta = dt.storage_type(dtype), dt.mlir_type(acc)
        prefix = src_shape[:plan.row_from]
        p, row_shape = len(prefix), prefix + (plan.row,)
        start = None  # a tensor of per-element starts (prefix-shaped), read where no reduced axis precedes the row
        if isinstance(initial, _Start) and not plan.outer_reduced:
            start, initial = self._start_filled(prefix, dtype, initial, 0.0, loc), None
        row_t = dt.tensor_type(row_shape, dtype)
        x = self._collapsed_row(x, src_shape, dtype, plan.row_from, loc)

        def widened(region, v):
            return region.op(f"arith.extf {v} : {t} to {ta}") if acc != dtype else v

        def add(region, a, b):
            return region.op(f"arith.addf {a}, {b} : {ta}")

        tree = pairwise.tree(0, plan.row)
        leaves = pairwise.leaves(tree)
        lanes = pairwise.LANES
        whole = plan.row - plan.row % lanes
        leaf_sums = self._leaf_sums(x, prefix, dtype, acc, plan.row, leaves, widened, add, loc) if whole else None
        region = _Region(self)
        at = [region.op(f"linalg.index {d} : index") for d in range(p)]

        def element(tensor, tensor_t, position):
            return _element(region, tensor, tensor_t, at, position)

        if len(leaves) > pairwise.UNROLLED_LEAVES:
            totals = self._tree_by_levels(x, prefix, dtype, acc, plan.row, tree, leaves, leaf_sums, widened, add, loc)

            def evaluate(_):
                return region.op(f"tensor.extract {totals}[{', '.join(at)}] : {dt.tensor_type(prefix, acc)}")
        else:
            if whole:
                values = [element(leaf_sums, dt.tensor_type(prefix + (len(leaves),), acc), k) for k in range(len(leaves))]
            else:  # a row shorter than 8: in order from -0.0
                values = [scalar_const(region, -0.0, acc)]
            values[-1] = _with_remainder(region, values[-1], x, row_t, at, whole, plan.row, widened, add)
            value_of = {leaf.offset: v for leaf, v in zip(leaves, values)}

            def evaluate(n):
                if isinstance(n, pairwise.Leaf):
                    return value_of[n.offset]
                return add(region, evaluate(n[0]), evaluate(n[1]))

        def into_result(region, row_sum, so_far):
            """NumPy's output gaining one row sum (float16: its float32 sum, rounded once)."""
            total = add(region, widened(region, so_far), row_sum)
            return region.op(f"arith.truncf {total} : {ta} to {t}") if acc != dtype else total

        total = evaluate(tree)
        if not plan.outer_reduced:  # the output starts at 0.0, or where an earlier bufferful left it
            so_far = (region.op(f"tensor.extract {start}[{', '.join(at)}] : {dt.tensor_type(prefix, dtype)}")
                      if start is not None else scalar_const(region, 0.0 if initial is None else initial, dtype))
            total = into_result(region, total, so_far)
        row_dtype = acc if plan.outer_reduced else dtype
        rows_t = dt.tensor_type(prefix, row_dtype)
        rows = self._region_generic(
            [_map(p, [f"d{i}" for i in range(p)])], ", ".join(['"parallel"'] * p), [],
            [(self.empty(prefix, row_dtype, loc), rows_t)], [(self.fresh("o"), dt.storage_type(row_dtype))], region,
            [(total, dt.storage_type(row_dtype))], loc)
        shape = prefix
        if plan.outer_reduced:  # the output, from 0.0 (or initial), gains each row's sum in order
            shape = tuple(n for d, n in enumerate(prefix) if d not in plan.outer_reduced)
            region = _Region(self)
            a, b = self.fresh("in"), self.fresh("acc")
            summed = into_result(region, a, b)
            init = self._start_filled(shape, dtype, initial, 0.0, loc)
            rows = self._linalg_reduce((rows, rows_t), (init, dt.tensor_type(shape, dtype)),
                                       plan.outer_reduced, [(a, ta), (b, t)], region, (summed, t), loc)
        if shape != out_shape:  # kept unit axes after the row's start
            rows = self._reshaped(rows, shape, dtype, out_shape, loc)
        return rows

    def _masked_pairwise_sum(self, x: str, mask: str, src_shape: tuple, dtype, plan: pairwise.SumPlan,
                             chunk: int | None, out_shape: tuple, loc, initial=None) -> str:
        """A float sum under a where= mask in NumPy's order. NumPy's masked inner loop hands the sum loop
        each run of selected elements within an inner loop (a row, or a bufferful of it: ``chunk``), which
        it sums pairwise and adds to the output; the output starts at 0.0 (or initial) and gains the runs
        of each row in order, rows in index order. float16 runs are summed in float32 and each added to the
        output and rounded, as NumPy's half loop does per call. Which elements form a run only the data
        say, so one generic over the output elements walks its rows, finding runs and summing each with
        NumPy's tree for its length (``_dynamic_pairwise``)."""
        acc = np.dtype(np.float32) if dtype == np.float16 else dtype
        t, ta = dt.storage_type(dtype), dt.mlir_type(acc)
        p, row = plan.row_from, plan.row
        prefix = src_shape[:p]
        x = self._collapsed_row(x, src_shape, dtype, p, loc)
        mask = self._collapsed_row(mask, src_shape, np.dtype(bool), p, loc)
        row_t, mask_t = dt.tensor_type(prefix + (row,), dtype), dt.tensor_type(prefix + (row,), np.dtype(bool))
        kept = [d for d in range(p) if d not in plan.outer_reduced]
        kept_shape = tuple(prefix[d] for d in kept)
        piece = chunk or row
        r = _Region(self)

        def index(v):
            return r.op(f"arith.constant {v} : index")

        at = {d: r.op(f"linalg.index {k} : index") for k, d in enumerate(kept)}
        c0, c1 = index(0), index(1)
        true = r.op("arith.constant true")
        outer = plan.outer_reduced
        rows_count, chunks = index(prod(prefix[d] for d in outer)), index(-(-row // piece))
        piece_c, row_c = index(piece), index(row)
        total, q, so_far = self.fresh("total"), self.fresh("q"), self.fresh("o")
        if isinstance(initial, _Start):
            raise ValueError("a masked sum starts from a number")  # (NumPy's where= needs an identity or initial)
        start = scalar_const(r, 0.0 if initial is None else initial, dtype)
        r.lines.append(f"{total} = scf.for {q} = {c0} to {rows_count} step {c1} iter_args({so_far} = {start}) -> ({t}) {{")
        rest = q  # the reduced axes before the row, in index order
        for d in reversed(outer):
            at[d] = r.op(f"arith.remui {rest}, {index(prefix[d])} : index")
            rest = r.op(f"arith.divui {rest}, {index(prefix[d])} : index")
        lead = [at[d] for d in range(p)]

        def read(position):
            v = r.op(f"tensor.extract {x}[{', '.join(lead + [position])}] : {row_t}")
            return r.op(f"arith.extf {v} : {t} to {ta}") if acc != dtype else v

        in_rows, c, in_chunks = self.fresh("rows"), self.fresh("c"), self.fresh("o")
        r.lines.append(f"{in_rows} = scf.for {c} = {c0} to {chunks} step {c1} iter_args({in_chunks} = {so_far}) -> ({t}) {{")
        first = r.op(f"arith.muli {c}, {piece_c} : index")
        end = r.op(f"arith.minui {r.op(f'arith.addi {first}, {piece_c} : index')}, {row_c} : index")
        last = r.op(f"arith.subi {end}, {c1} : index")
        past = r.op(f"arith.addi {end}, {c1} : index")
        # one step past the bufferful's end, where every run ends
        walk, i, running, run_start, in_run = (self.fresh(n) for n in ("walk", "i", "o", "from", "in"))
        r.lines.append(f"{walk}:3 = scf.for {i} = {first} to {past} step {c1} iter_args({running} = {in_chunks}, "
                       f"{run_start} = {first}, {in_run} = {r.op('arith.constant false')}) -> ({t}, index, i1) {{")
        inside = r.op(f"arith.cmpi ult, {i}, {end} : index")
        selected = r.op(f"tensor.extract {mask}[{', '.join(lead + [r.op(f'arith.minui {i}, {last} : index')])}] : {mask_t}")
        selected = r.op(f"arith.andi {r.op(f'arith.trunci {selected} : i8 to i1')}, {inside} : i1")
        ends = r.op(f"arith.andi {in_run}, {r.op(f'arith.xori {selected}, {true} : i1')} : i1")
        added = self.fresh("o")
        r.lines.append(f"{added} = scf.if {ends} -> ({t}) {{")
        run_sum = self._dynamic_pairwise(r, read, run_start, r.op(f"arith.subi {i}, {run_start} : index"), acc, piece)
        if acc != dtype:
            widened = r.op(f"arith.extf {running} : {t} to {ta}")
            new = r.op(f"arith.truncf {r.op(f'arith.addf {widened}, {run_sum} : {ta}')} : {ta} to {t}")
        else:
            new = r.op(f"arith.addf {running}, {run_sum} : {t}")
        r.lines += [f"scf.yield {new} : {t}", "} else {", f"scf.yield {running} : {t}", "}"]
        begins = r.op(f"arith.andi {selected}, {r.op(f'arith.xori {in_run}, {true} : i1')} : i1")
        moved = r.op(f"arith.select {begins}, {i}, {run_start} : index")
        r.lines += [f"scf.yield {added}, {moved}, {selected} : {t}, index, i1", "}",
                    f"scf.yield {walk}#0 : {t}", "}", f"scf.yield {in_rows} : {t}", "}"]
        kept_t = dt.tensor_type(kept_shape, dtype)
        summed = self._region_generic([_map(len(kept), [f"d{k}" for k in range(len(kept))])],
                                      ", ".join(['"parallel"'] * len(kept)), [], [(self.empty(kept_shape, dtype, loc), kept_t)],
                                      [(self.fresh("o"), t)], r, [(total, t)], loc)
        if kept_shape != out_shape:  # kept unit axes after the row's start
            summed = self._reshaped(summed, kept_shape, dtype, out_shape, loc)
        return summed

    def _dynamic_pairwise(self, r: _Region, read, start: str, n: str, acc, longest: int) -> str:
        """NumPy's pairwise sum of the ``n`` elements from ``start`` (``read(position)`` gives one, in
        ``acc``), for a length only the data decide (at most ``longest``), emitted into ``r``. NumPy's tree
        has every leaf at depth D (the halvings of n down to 128 along its leftmost path) or one below,
        and above depth D it is a perfect binary tree: so each of the 2**D nodes at depth D (found by
        descending D halvings) is summed (one leaf, or two), and the nodes are combined in order as a
        binary counter combines them, slot k holding a finished subtree of 2**k nodes."""
        ta = dt.mlir_type(acc)
        depths = pairwise.min_leaf_depth(pairwise.tree(0, longest)) + 1
        const = {v: r.op(f"arith.constant {v} : index") for v in (0, 1, 8, 128)}

        def half(length):  # NumPy's split: half the length, down to a multiple of 8
            h = r.op(f"arith.divui {length}, {r.op('arith.constant 2 : index')} : index")
            return r.op(f"arith.subi {h}, {r.op(f'arith.remui {h}, {const[8]} : index')} : index")

        def longer(length):
            return r.op(f"arith.cmpi ugt, {length}, {const[128]} : index")

        depth, length = const[0], n
        for _ in range(depths - 1):
            deeper = longer(length)
            depth = r.op(f"arith.select {deeper}, {r.op(f'arith.addi {depth}, {const[1]} : index')}, {depth} : index")
            length = r.op(f"arith.select {deeper}, {half(length)}, {length} : index")
        nodes = r.op(f"arith.shli {const[1]}, {depth} : index")
        zero = scalar_const(r, -0.0, acc)
        slots = [self.fresh("slot") for _ in range(depths)]
        node, combined = self.fresh("node"), self.fresh("tree")
        r.lines.append(f"{combined}:{depths} = scf.for {node} = {const[0]} to {nodes} step {const[1]} "
                       f"iter_args({', '.join(f'{s_} = {zero}' for s_ in slots)}) -> ({', '.join([ta] * depths)}) {{")
        offset, length = start, n
        for level in range(depths - 1):  # descend from the root: bit D-1-level of the node's index says right
            active = r.op(f"arith.cmpi ult, {r.op(f'arith.constant {level} : index')}, {depth} : index")
            top = r.op(f"arith.subi {depth}, {const[1]} : index")
            shift = r.op(f"arith.subi {top}, {r.op(f'arith.constant {level} : index')} : index")
            shift = r.op(f"arith.select {active}, {shift}, {const[0]} : index")
            bit = r.op(f"arith.andi {r.op(f'arith.shrui {node}, {shift} : index')}, {const[1]} : index")
            right = r.op(f"arith.andi {active}, {r.op(f'arith.cmpi eq, {bit}, {const[1]} : index')} : i1")
            h = half(length)
            offset = r.op(f"arith.select {right}, {r.op(f'arith.addi {offset}, {h} : index')}, {offset} : index")
            chosen = r.op(f"arith.select {right}, {r.op(f'arith.subi {length}, {h} : index')}, {h} : index")
            length = r.op(f"arith.select {active}, {chosen}, {length} : index")
        pair = longer(length)  # a node at depth D is a leaf, or a pair of leaves
        h = half(length)
        first_length = r.op(f"arith.select {pair}, {h}, {length} : index")
        second_length = r.op(f"arith.select {pair}, {r.op(f'arith.subi {length}, {h} : index')}, {const[0]} : index")
        value = self._dynamic_leaf(r, read, offset, first_length, acc, const)
        second = self._dynamic_leaf(r, read, r.op(f"arith.addi {offset}, {first_length} : index"), second_length, acc,
                                    const)
        value = r.op(f"arith.select {pair}, {r.op(f'arith.addf {value}, {second} : {ta}')}, {value} : {ta}")
        carry, updated = r.op("arith.constant true"), []
        for level, slot in enumerate(slots):  # the node's trailing one bits merge finished subtrees
            shifted = r.op(f"arith.shrui {node}, {r.op(f'arith.constant {level} : index')} : index")
            bit = r.op(f"arith.andi {shifted}, {const[1]} : index")
            one = r.op(f"arith.cmpi eq, {bit}, {const[1]} : index")
            zero_bit = r.op(f"arith.xori {one}, {r.op('arith.constant true')} : i1")
            store = r.op(f"arith.andi {carry}, {zero_bit} : i1")
            updated.append(r.op(f"arith.select {store}, {value}, {slot} : {ta}"))
            merge = r.op(f"arith.andi {carry}, {one} : i1")
            value = r.op(f"arith.select {merge}, {r.op(f'arith.addf {slot}, {value} : {ta}')}, {value} : {ta}")
            carry = merge
        r.lines += [f"scf.yield {', '.join(updated)} : {', '.join([ta] * depths)}", "}"]
        result = f"{combined}#0"
        for level in range(1, depths):  # the root: slot D
            at_depth = r.op(f"arith.cmpi eq, {depth}, {r.op(f'arith.constant {level} : index')} : index")
            result = r.op(f"arith.select {at_depth}, {combined}#{level}, {result} : {ta}")
        return result

    def _dynamic_leaf(self, r: _Region, read, start: str, n: str, acc, const: dict) -> str:
        """NumPy's sum of one leaf (``n`` at most 128 elements from ``start``): fewer than 8 in order from
        -0.0; else 8 lanes started at the first 8 elements, each gaining every 8th after, combined as
        ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), then the elements past the last whole 8 in order."""
        ta = dt.mlir_type(acc)
        zero = scalar_const(r, -0.0, acc)
        leaf = self.fresh("leaf")
        r.lines.append(f"{leaf} = scf.if {r.op(f'arith.cmpi ult, {n}, {const[8]} : index')} -> ({ta}) {{")
        in_order, k, so_far = self.fresh("few"), self.fresh("k"), self.fresh("a")
        r.lines.append(f"{in_order} = scf.for {k} = {const[0]} to {n} step {const[1]} iter_args({so_far} = {zero}) -> ({ta}) {{")
        element = read(r.op(f"arith.addi {start}, {k} : index"))
        r.lines += [f"scf.yield {r.op(f'arith.addf {so_far}, {element} : {ta}')} : {ta}",
                    "}", f"scf.yield {in_order} : {ta}", "} else {"]
        lanes = [read(r.op(f"arith.addi {start}, {r.op(f'arith.constant {j} : index')} : index")) for j in range(8)]
        blocks = r.op(f"arith.divui {n}, {const[8]} : index")
        summed, b, held = self.fresh("lanes"), self.fresh("b"), [self.fresh("l") for _ in range(8)]
        r.lines.append(f"{summed}:8 = scf.for {b} = {const[1]} to {blocks} step {const[1]} "
                       f"iter_args({', '.join(f'{h_} = {v}' for h_, v in zip(held, lanes))}) -> ({', '.join([ta] * 8)}) {{")
        base = r.op(f"arith.addi {start}, {r.op(f'arith.muli {b}, {const[8]} : index')} : index")
        gained = []
        for j, h_ in enumerate(held):
            element = read(r.op(f"arith.addi {base}, {r.op(f'arith.constant {j} : index')} : index"))
            gained.append(r.op(f"arith.addf {h_}, {element} : {ta}"))
        r.lines += [f"scf.yield {', '.join(gained)} : {', '.join([ta] * 8)}", "}"]
        l_ = [f"{summed}#{j}" for j in range(8)]

        def add(a, b_):
            return r.op(f"arith.addf {a}, {b_} : {ta}")

        combined = add(add(add(l_[0], l_[1]), add(l_[2], l_[3])), add(add(l_[4], l_[5]), add(l_[6], l_[7])))
        whole = r.op(f"arith.muli {blocks}, {const[8]} : index")
        tail, k2, so_far2 = self.fresh("tail"), self.fresh("k"), self.fresh("a")
        r.lines.append(f"{tail} = scf.for {k2} = {whole} to {n} step {const[1]} iter_args({so_far2} = {combined}) -> ({ta}) {{")
        r.lines += [f"scf.yield {add(so_far2, read(r.op(f'arith.addi {start}, {k2} : index')))} : {ta}", "}",
                    f"scf.yield {tail} : {ta}", "}"]
        return leaf

    def _leaf_sums(self, x: str, prefix: tuple, dtype, acc, row: int, leaves, widened, add, loc) -> str:
        """Each leaf's 8 lanes combined as NumPy combines them (prefix + (leaves,), in ``acc``), its
        remainder not included. The lanes: the row's blocks of 8 (prefix + (blocks, 8)) summed in
        order from -0.0 over the blocks a (leaves, most blocks) table names, -1 padding a shorter
        leaf (its lanes gain -0.0 there, which changes no sum)."""
        p, lanes = len(prefix), pairwise.LANES
        ta = dt.mlir_type(acc)
        blocks = row // lanes
        blocks_x = self._row_slice(x, prefix, row, 0, blocks * lanes, dtype, loc) if blocks * lanes != row else x
        blocks_t = dt.tensor_type(prefix + (blocks, lanes), dtype)
        blocks_x = self._split_row(blocks_x, prefix, blocks, lanes, dtype, loc)
        counts = [min(leaf.offset + leaf.length, blocks * lanes) // lanes - leaf.offset // lanes for leaf in leaves]
        table_v, table_t = self._block_table([leaf.offset // lanes for leaf in leaves], counts, loc)
        lanes_shape = prefix + (len(leaves), lanes)
        lanes_t = dt.tensor_type(lanes_shape, acc)
        rank, dims = p + 3, [f"d{i}" for i in range(p)]
        region = _Region(self)
        block, so_far = self.fresh("block"), self.fresh("acc")
        zero = region.op("arith.constant 0 : i64")
        valid = region.op(f"arith.cmpi sge, {block}, {zero} : i64")
        safe = region.op(f"arith.index_cast {region.op(f'arith.maxsi {block}, {zero} : i64')} : i64 to index")
        at = [region.op(f"linalg.index {d} : index") for d in range(p)] + [safe, region.op(f"linalg.index {p + 2} : index")]
        element = widened(region, region.op(f"tensor.extract {blocks_x}[{', '.join(at)}] : {blocks_t}"))
        element = region.op(f"arith.select {valid}, {element}, {scalar_const(region, -0.0, acc)} : {ta}")
        summed = add(region, so_far, element)
        lane_sums = self._region_generic(
            [_map(rank, [f"d{p}", f"d{p + 1}"]), _map(rank, dims + [f"d{p}", f"d{p + 2}"])],
            ", ".join(['"parallel"'] * (p + 1) + ['"reduction"', '"parallel"']),
            [(table_v, table_t)], [(self.filled(lanes_shape, acc, -0.0, loc), lanes_t)],
            [(block, "i64"), (so_far, ta)], region, [(summed, ta)], loc)
        region = _Region(self)
        args = [self.fresh("lane") for _ in range(lanes)]
        r = args
        while len(r) > 1:
            r = [add(region, r[k], r[k + 1]) for k in range(0, len(r), 2)]
        sums_shape = prefix + (len(leaves),)
        return self._region_generic(
            [_map(p + 1, dims + [f"d{p}", str(c)]) for c in range(lanes)] + [_map(p + 1, dims + [f"d{p}"])],
            ", ".join(['"parallel"'] * (p + 1)), [(lane_sums, lanes_t)] * lanes,
            [(self.empty(sums_shape, acc, loc), dt.tensor_type(sums_shape, acc))],
            [(a, ta) for a in args] + [(self.fresh("o"), ta)], region, [(r[0], ta)], loc)

    def _block_table(self, starts: list, counts: list, loc) -> tuple[str, str]:
        """The (leaves, most blocks) table of the blocks each leaf sums (-1 past a shorter leaf's end):
        a constant, or for a long row (more than LARGE_TABLE entries) computed from each leaf's first
        block and count, so the IR holds two numbers per leaf, not sixteen."""
        table_t = dt.tensor_type((len(starts), max(counts)), np.dtype(np.int64))
        if len(starts) * max(counts) <= LARGE_TABLE:
            table = np.full((len(starts), max(counts)), -1, np.int64)
            for k, (first, count) in enumerate(zip(starts, counts)):
                table[k, :count] = np.arange(count) + first
            return self._table(table, loc), table_t
        column_t = dt.tensor_type((len(starts),), np.dtype(np.int64))
        first_v, count_v = self._table(np.array(starts, np.int64), loc), self._table(np.array(counts, np.int64), loc)
        region = _Region(self)
        first, count = self.fresh("first"), self.fresh("count")
        j = region.op(f"arith.index_cast {region.op('linalg.index 1 : index')} : index to i64")
        inside = region.op(f"arith.cmpi slt, {j}, {count} : i64")
        block = region.op(f"arith.select {inside}, {region.op(f'arith.addi {first}, {j} : i64')}, "
                          f"{region.op('arith.constant -1 : i64')} : i64")
        table_v = self._region_generic(
            [_map(2, ["d0"]), _map(2, ["d0"]), _map(2, ["d0", "d1"])], '"parallel", "parallel"',
            [(first_v, column_t), (count_v, column_t)], [(self.empty((len(starts), max(counts)), np.dtype(np.int64), loc), table_t)],
            [(first, "i64"), (count, "i64"), (self.fresh("o"), "i64")], region, [(block, "i64")], loc)
        return table_v, table_t

    def _tree_by_levels(self, x: str, prefix: tuple, dtype, acc, row: int, tree, leaves, leaf_sums: str, widened, add,
                        loc) -> str:
        """The pairwise tree of a long row evaluated level by level (prefix-shaped, in ``acc``): NumPy's
        tree has every leaf at depth D or D + 1, so its nodes at depth D (2**D of them) are each a leaf
        or a pair of leaves, and above them it is a perfect binary tree. One generic evaluates the depth-D
        nodes (the last leaf gains the row's remainder first), then one per level adds pairs."""
        p, lanes = len(prefix), pairwise.LANES
        ta = dt.mlir_type(acc)
        depth = pairwise.min_leaf_depth(tree)
        nodes = pairwise.nodes_at(tree, depth)
        index_of = {leaf.offset: k for k, leaf in enumerate(leaves)}
        first = np.array([index_of[(n if isinstance(n, pairwise.Leaf) else n[0]).offset] for n in nodes], np.int64)
        paired = np.array([not isinstance(n, pairwise.Leaf) for n in nodes], np.int64)
        column_t = dt.tensor_type((len(nodes),), np.dtype(np.int64))
        first_v, paired_v = self._table(first, loc), self._table(paired, loc)
        sums_t = dt.tensor_type(prefix + (len(leaves),), acc)
        row_t = dt.tensor_type(prefix + (row,), dtype)
        region = _Region(self)
        a, pair = self.fresh("first"), self.fresh("pair")
        at = [region.op(f"linalg.index {d} : index") for d in range(p)]
        whole = row - row % lanes
        last_index = region.op(f"arith.constant {len(leaves) - 1} : i64")
        if whole != row:  # the last leaf gains the row's remainder, once; a node naming it takes that value
            last = _with_remainder(region, _element(region, leaf_sums, sums_t, at, len(leaves) - 1), x, row_t, at, whole,
                                   row, widened, add)

        def leaf_value(k64):
            k = region.op(f"arith.index_cast {k64} : i64 to index")
            value = region.op(f"tensor.extract {leaf_sums}[{', '.join(at + [k])}] : {sums_t}")
            if whole == row:
                return value
            is_last = region.op(f"arith.cmpi eq, {k64}, {last_index} : i64")
            return region.op(f"arith.select {is_last}, {last}, {value} : {ta}")

        one = region.op("arith.constant 1 : i64")
        second = region.op(f"arith.minsi {region.op(f'arith.addi {a}, {one} : i64')}, {last_index} : i64")
        left, right = leaf_value(a), leaf_value(second)
        is_pair = region.op(f"arith.cmpi eq, {pair}, {one} : i64")
        value = region.op(f"arith.select {is_pair}, {add(region, left, right)}, {left} : {ta}")
        dims = [f"d{i}" for i in range(p)]
        level_shape = prefix + (len(nodes),)
        level = self._region_generic(
            [_map(p + 1, [f"d{p}"]), _map(p + 1, [f"d{p}"]), _map(p + 1, dims + [f"d{p}"])],
            ", ".join(['"parallel"'] * (p + 1)), [(first_v, column_t), (paired_v, column_t)],
            [(self.empty(level_shape, acc, loc), dt.tensor_type(level_shape, acc))],
            [(a, "i64"), (pair, "i64"), (self.fresh("o"), ta)], region, [(value, ta)], loc)
        width = len(nodes)
        while width > 1:
            width //= 2
            pairs = self._split_row(level, prefix, width, 2, acc, loc)
            region = _Region(self)
            l, r = self.fresh("l"), self.fresh("r")
            level_shape = prefix + (width,)
            level = self._region_generic(
                [_map(p + 1, dims + [f"d{p}", "0"]), _map(p + 1, dims + [f"d{p}", "1"]), _map(p + 1, dims + [f"d{p}"])],
                ", ".join(['"parallel"'] * (p + 1)), [(pairs, dt.tensor_type(prefix + (width, 2), acc))] * 2,
                [(self.empty(level_shape, acc, loc), dt.tensor_type(level_shape, acc))],
                [(l, ta), (r, ta), (self.fresh("o"), ta)], region, [(add(region, l, r), ta)], loc)
        return self._reshaped(level, prefix + (1,), acc, prefix, loc)

    def arg_reduce(self, node: Node, x: str) -> str:
        """argmax/argmin over one axis: a reduction carrying (best value, its index). A later element
        wins only if strictly better, or NaN where the best so far is not: NumPy's first-occurrence rule,
        with the first NaN winning."""
        src, axis = node.inputs[0], node.attrs["axis"]
        dtype, kind = src.dtype, src.dtype.kind
        t = dt.storage_type(dtype)
        is_max = node.op == "argmax"
        best = self.filled(node.shape, dtype, _extreme(dtype, lowest=is_max), node.loc)
        index = self.filled(node.shape, np.dtype(np.int64), 0, node.loc)
        # loops: the kept axes in order, then the reduced one innermost (so parallel loops never
        # nest inside the sequential one, which the GPU mapping needs)
        rank = src.ndim
        loop_of = {d: i for i, d in enumerate([d for d in range(rank) if d != axis] + [axis])}
        kept = [f"d{i}" for i in range(rank - 1)]
        maps = [_map(rank, [f"d{loop_of[d]}" for d in range(rank)]), _map(rank, kept), _map(rank, kept)]
        its = ", ".join(['"parallel"'] * (rank - 1) + ['"reduction"'])
        out_t, idx_t = dt.tensor_type(node.shape, dtype), dt.tensor_type(node.shape, np.dtype(np.int64))
        region = _Region(self)
        a, b, j = self.fresh("in"), self.fresh("best"), self.fresh("at")
        if kind == "f":
            better = region.op(f"arith.cmpf {'ogt' if is_max else 'olt'}, {a}, {b} : {t}")
            a_nan = region.op(f"arith.cmpf uno, {a}, {a} : {t}")
            b_num = region.op(f"arith.cmpf ord, {b}, {b} : {t}")
            first_nan = region.op(f"arith.andi {a_nan}, {b_num} : i1")
            take = region.op(f"arith.ori {better}, {first_nan} : i1")
        else:
            pred = ("sgt" if is_max else "slt") if kind == "i" else ("ugt" if is_max else "ult")
            take = region.op(f"arith.cmpi {pred}, {a}, {b} : {t}")
        here = region.op(f"linalg.index {rank - 1} : index")
        here = region.op(f"arith.index_cast {here} : index to i64")
        new_best = region.op(f"arith.select {take}, {a}, {b} : {t}")
        new_index = region.op(f"arith.select {take}, {here}, {j} : i64")
        values = self._region_generic(maps, its, [(x, dt.tensor_type(src.shape, dtype))],
                                      [(best, out_t), (index, idx_t)], [(a, t), (b, t), (j, "i64")], region,
                                      [(new_best, t), (new_index, "i64")], node.loc)
        return f"{values}#1"

    def _region_generic(self, maps, its, ins, outs, args, region, yields, loc) -> str:
        """A linalg.generic over the iterators ``its`` whose body is ``region``: ``ins`` and ``outs`` are
        (value, tensor type), ``args`` the block's (name, element type), ``yields`` (value, element type).
        Returns the result's name (``name#k`` is the k-th of several)."""
        result, here = self.fresh(), self.located(loc)
        out_types = [ty for _, ty in outs]
        count = f":{len(outs)}" if len(outs) > 1 else ""
        ins_text = f"ins({', '.join(v for v, _ in ins)} : {', '.join(ty for _, ty in ins)}) " if ins else ""
        self.lines.append(
            f"    {result}{count} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{its}]}} "
            f"{ins_text}outs({', '.join(v for v, _ in outs)} : {', '.join(out_types)}) {{")
        self.lines.append(f"    ^bb0({', '.join(f'{a}: {ty} {here}' for a, ty in args)}):")
        for ln in region.lines:
            self.lines.append(f"      {_region_line(ln, here)}")
        self.lines.append(f"      linalg.yield {', '.join(v for v, _ in yields)} : {', '.join(ty for _, ty in yields)} {here}")
        self.lines.append(f"    }} -> {out_types[0] if len(outs) == 1 else '(' + ', '.join(out_types) + ')'} {here}")
        return result

    def iota(self, node: Node) -> str:
        return self._positions(node.shape, node.dtype, node.attrs["axis"], node.loc)

    def _positions(self, shape, dtype, axis: int, loc) -> str:
        def body(rb, args):
            index = rb.op(f"linalg.index {axis} : index")
            return rb.op(f"arith.index_cast {index} : index to {dt.mlir_type(dtype)}")
        return self._generic(shape, dtype, [], body, loc)

    def sort_permutation(self, node: Node, x: str) -> str:
        """The stable argsort along the last axis. With ``scan_loops`` (the CPU) a bitonic sorting network
        over the positions, padded to a power of two: log2(N)(log2(N) + 1) / 2 passes of one parallel
        generic each, in loops, so n log^2 n work and an IR whose size does not grow with n. Otherwise
        (the GPU) by counting: each element's place is the number of elements before it, and the
        permutation is the inverse of the places (n^2 comparisons, every output element its own thread).
        Both order by (key, NaNs last; then position), a strict total order, so both give exactly the
        stable order."""
        if self.scan_loops:
            return self._bitonic_permutation(node, x)
        return self._counting_permutation(node, x)

    @staticmethod
    def _precedes(rb: "_Region", dtype, ka: str, kb: str, ia: str, ib: str, position_t: str) -> str:
        """i1: the element of key ``ka`` at position ``ia`` comes strictly before that of key ``kb`` at
        ``ib`` in the stable sort order (NaNs after every number, equal keys by position)."""
        earlier = rb.op(f"arith.cmpi slt, {ia}, {ib} : {position_t}")
        if dtype.kind == "f":
            if dtype == np.float16:  # compared widened (exact): f16 comparisons are not everywhere native
                ka, kb = (rb.op(f"arith.extf {k} : f16 to f32") for k in (ka, kb))
            t = "f32" if dtype == np.float16 else dt.mlir_type(dtype)
            less = rb.op(f"arith.cmpf olt, {ka}, {kb} : {t}")
            same = rb.op(f"arith.cmpf oeq, {ka}, {kb} : {t}")
            nan_a = rb.op(f"arith.cmpf uno, {ka}, {ka} : {t}")
            nan_b = rb.op(f"arith.cmpf uno, {kb}, {kb} : {t}")
            number_a = rb.op(f"arith.xori {nan_a}, {rb.op('arith.constant true')} : i1")
            less = rb.op(f"arith.ori {less}, {rb.op(f'arith.andi {nan_b}, {number_a} : i1')} : i1")
            same = rb.op(f"arith.ori {same}, {rb.op(f'arith.andi {nan_a}, {nan_b} : i1')} : i1")
        else:
            t = dt.storage_type(dtype)
            less = rb.op(f"arith.cmpi {'slt' if dtype.kind == 'i' else 'ult'}, {ka}, {kb} : {t}")
            same = rb.op(f"arith.cmpi eq, {ka}, {kb} : {t}")
        tie_first = rb.op(f"arith.andi {same}, {earlier} : i1")
        return rb.op(f"arith.ori {less}, {tie_first} : i1")

    def _counting_permutation(self, node: Node, x: str) -> str:
        src = node.inputs[0]
        rank = node.ndim
        key_t, i64 = dt.storage_type(src.dtype), "i64"
        batch = [f"d{d}" for d in range(rank - 1)]
        all_par = ", ".join(['"parallel"'] * rank + ['"reduction"'])
        # places[..., i] = the number of j that come before i
        zeros = self.filled(node.shape, node.dtype, 0, node.loc)
        region = _Region(self)
        kj, ki, acc = self.fresh("kj"), self.fresh("ki"), self.fresh("acc")
        i = region.op(f"arith.index_cast {region.op(f'linalg.index {rank - 1} : index')} : index to i64")
        j = region.op(f"arith.index_cast {region.op(f'linalg.index {rank} : index')} : index to i64")
        before = self._precedes(region, src.dtype, kj, ki, j, i, i64)
        one = region.op(f"arith.extui {before} : i1 to i64")
        count = region.op(f"arith.addi {acc}, {one} : i64")
        src_t, out_t = dt.tensor_type(src.shape, src.dtype), dt.tensor_type(node.shape, node.dtype)
        places = self._region_generic(
            [_map(rank + 1, batch + [f"d{rank}"]), _map(rank + 1, batch + [f"d{rank - 1}"]),
             _map(rank + 1, batch + [f"d{rank - 1}"])], all_par,
            [(x, src_t), (x, src_t)], [(zeros, out_t)], [(kj, key_t), (ki, key_t), (acc, i64)], region,
            [(count, i64)], node.loc)
        # permutation[..., k] = the i whose place is k
        zeros = self.filled(node.shape, node.dtype, 0, node.loc)
        region = _Region(self)
        place, acc = self.fresh("place"), self.fresh("acc")
        k = region.op(f"arith.index_cast {region.op(f'linalg.index {rank - 1} : index')} : index to i64")
        i = region.op(f"arith.index_cast {region.op(f'linalg.index {rank} : index')} : index to i64")
        hit = region.op(f"arith.cmpi eq, {place}, {k} : i64")
        zero = region.op("arith.constant 0 : i64")
        found = region.op(f"arith.addi {acc}, {region.op(f'arith.select {hit}, {i}, {zero} : i64')} : i64")
        return self._region_generic(
            [_map(rank + 1, batch + [f"d{rank}"]), _map(rank + 1, batch + [f"d{rank - 1}"])], all_par,
            [(places, out_t)], [(zeros, out_t)], [(place, i64), (acc, i64)], region, [(found, i64)], node.loc)

    def _bitonic_permutation(self, node: Node, x: str) -> str:
        src = node.inputs[0]
        rank, n = node.ndim, node.shape[-1]
        width = 1 << (n - 1).bit_length()  # n padded to a power of two; padding sorts last
        shape = node.shape[:-1] + (width,)
        state_t, src_t = dt.tensor_type(shape, node.dtype), dt.tensor_type(src.shape, src.dtype)
        # the passes write the order in place, so it starts in a buffer of its own: an allocation (which CSE
        # never merges) the positions are copied into; two sorts of one shape otherwise start from one iota
        # (CSE merges the generics), and bufferization cannot write both orders into it
        own = self.assign(f"bufferization.alloc_tensor() : {state_t}", node.loc)
        positions = self.assign(f"bufferization.materialize_in_destination "
                                f"{self._positions(shape, node.dtype, rank - 1, node.loc)} in {own} : "
                                f"({state_t}, {state_t}) -> {state_t}", node.loc)
        identity = _map(rank, [f"d{d}" for d in range(rank)])
        c = {v: self.assign(f"arith.constant {v} : index", node.loc) for v in (0, 1)}
        stages = self.assign(f"arith.constant {width.bit_length() - 1} : index", node.loc)
        last = self.assign(f"arith.constant {n - 1} : index", node.loc)
        real = self.assign(f"arith.constant {n} : i64", node.loc)
        p, q, cur, cur2 = self.fresh("p"), self.fresh("q"), self.fresh("order"), self.fresh("order")
        outer, inner = self.fresh("merge"), self.fresh("pass")
        # merge p joins sorted runs of 2^p into runs of 2^(p+1) (its direction alternating by block, so
        # the next merge sees bitonic sequences); its passes compare elements 2^(p-q) apart. A pass reads
        # the order and writes a new one, copied back into the loop's buffer (materialize_in_destination,
        # which no pass folds away): one-shot bufferization refuses a loop that returns another buffer.
        self.lines.append(f"    {outer} = scf.for {p} = {c[0]} to {stages} step {c[1]} "
                          f"iter_args({cur} = {positions}) -> ({state_t}) {{")
        p1 = self.assign(f"arith.addi {p}, {c[1]} : index", node.loc)
        block = self.assign(f"arith.shli {c[1]}, {p1} : index", node.loc)
        self.lines.append(f"    {inner} = scf.for {q} = {c[0]} to {p1} step {c[1]} "
                          f"iter_args({cur2} = {cur}) -> ({state_t}) {{")
        distance = self.assign(f"arith.shli {c[1]}, {self.assign(f'arith.subi {p}, {q} : index', node.loc)} : index",
                               node.loc)
        region = _Region(self)
        coords = [region.op(f"linalg.index {d} : index") for d in range(rank)]
        i = coords[-1]
        partner = region.op(f"arith.xori {i}, {distance} : index")  # < width: both below a power of two

        def element(at: str) -> tuple[str, str]:
            position = region.op(f"tensor.extract {cur2}[{', '.join(coords[:-1] + [at])}] : {state_t}")
            where_ = region.op(f"arith.minui {region.op(f'arith.index_cast {position} : i64 to index')}, {last} : index")
            key = region.op(f"tensor.extract {x}[{', '.join(coords[:-1] + [where_])}] : {src_t}")
            return position, key

        mine, key_mine = element(i)
        theirs, key_theirs = element(partner)
        first = self._precedes(region, src.dtype, key_mine, key_theirs, mine, theirs, "i64")
        # padding (positions >= n) after every element, and among itself by position
        pad_mine = region.op(f"arith.cmpi sge, {mine}, {real} : i64")
        pad_theirs = region.op(f"arith.cmpi sge, {theirs}, {real} : i64")
        earlier = region.op(f"arith.cmpi slt, {mine}, {theirs} : i64")
        true = region.op("arith.constant true")
        real_mine = region.op(f"arith.xori {pad_mine}, {true} : i1")
        first = region.op(f"arith.select {pad_theirs}, {region.op(f'arith.ori {real_mine}, {earlier} : i1')}, "
                          f"{region.op(f'arith.andi {real_mine}, {first} : i1')} : i1")
        zero = c[0]
        ascending = region.op(f"arith.cmpi eq, {region.op(f'arith.andi {i}, {block} : index')}, {zero} : index")
        lower = region.op(f"arith.cmpi eq, {region.op(f'arith.andi {i}, {distance} : index')}, {zero} : index")
        keep_first = region.op(f"arith.cmpi eq, {ascending}, {lower} : i1")  # this slot takes the pair's first
        take_mine = region.op(f"arith.cmpi eq, {first}, {keep_first} : i1")
        chosen = region.op(f"arith.select {take_mine}, {mine}, {theirs} : i64")
        parallel = ", ".join(['"parallel"'] * rank)
        passed = self._region_generic([identity], parallel, [], [(self.empty(shape, node.dtype, node.loc), state_t)],
                                      [(self.fresh("o"), "i64")], region, [(chosen, "i64")], node.loc)
        copied = self.assign(f"bufferization.materialize_in_destination {passed} in {cur2} : "
                             f"({state_t}, {state_t}) -> {state_t}", node.loc)
        self.line(f"scf.yield {copied} : {state_t}", node.loc)
        self.line("}", node.loc)
        self.line(f"scf.yield {inner} : {state_t}", node.loc)
        self.line("}", node.loc)
        out_t = dt.tensor_type(node.shape, node.dtype)
        offsets = ", ".join("0" for _ in shape)
        sizes = ", ".join(str(d) for d in node.shape)
        return self.assign(f"tensor.extract_slice {outer}[{offsets}] [{sizes}] [{', '.join('1' for _ in shape)}] : "
                           f"{state_t} to {out_t}", node.loc)

    def scan(self, node: Node, x: str) -> str:
        """cumsum/cumprod: output i folds input j for j <= i, in order, each step rounded to the result
        dtype, so every element is NumPy's own. With ``scan_loops`` (the CPU) an ``scf.for`` walks the
        scanned axis carrying the running slice, linear in its length; otherwise (the GPU, where host
        code may not loop over device data) one generic with a trailing reduction index j over the
        axis, quadratic in its length but with every output element its own thread."""
        if self.scan_loops:
            return self._scan_loop(node, x)
        axis, rank, dtype = node.attrs["axis"], node.ndim, node.dtype
        t = dt.storage_type(dtype)
        init = self.filled(node.shape, dtype, self._scan_identity(node), node.loc)
        in_map = _map(rank + 1, [f"d{rank if d == axis else d}" for d in range(rank)])
        out_map = _map(rank + 1, [f"d{d}" for d in range(rank)])
        its = ", ".join(['"parallel"'] * rank + ['"reduction"'])
        region = _Region(self)
        a, acc = self.fresh("in"), self.fresh("acc")
        i = region.op(f"linalg.index {axis} : index")
        j = region.op(f"linalg.index {rank} : index")
        take = region.op(f"arith.cmpi ule, {j}, {i} : index")
        step = self._scan_step(region, node, acc, a)
        if node.op == "accumulate":  # no identity to start from: the first element itself
            zero = region.op("arith.constant 0 : index")
            step = region.op(f"arith.select {region.op(f'arith.cmpi eq, {j}, {zero} : index')}, {a}, {step} : {t}")
        new = region.op(f"arith.select {take}, {step}, {acc} : {t}")
        return self._region_generic([in_map, out_map], its, [(x, dt.tensor_type(node.inputs[0].shape, dtype))],
                                    [(init, dt.tensor_type(node.shape, dtype))], [(a, t), (acc, t)], region,
                                    [(new, t)], node.loc)

    def _scan_loop(self, node: Node, x: str) -> str:
        """The scan as a loop over the scanned axis: the running slice (the axis cut to length 1) starts at
        the identity, each iteration folds in the input's slice i and writes the result's slice i. (The
        slices keep the axis: a rank-reducing slice beside other unit dimensions is ambiguous, and MLIR's
        canonicalizer has read one as dropping another dimension.)"""
        axis, dtype, shape = node.attrs["axis"], node.dtype, node.shape
        t = dt.storage_type(dtype)
        lane_shape = shape[:axis] + (1,) + shape[axis + 1:]
        full_t, lane_t = dt.tensor_type(shape, dtype), dt.tensor_type(lane_shape, dtype)
        running = self.filled(lane_shape, dtype, self._scan_identity(node), node.loc)
        result = self.empty(shape, dtype, node.loc)
        zero, one = self.assign("arith.constant 0 : index", node.loc), self.assign("arith.constant 1 : index", node.loc)
        length = self.assign(f"arith.constant {shape[axis]} : index", node.loc)
        # (not "out": the function's result arguments are %out0, %out1, ...)
        loop, i, out, run = self.fresh("scan"), self.fresh("i"), self.fresh("scanned"), self.fresh("run")
        self.lines.append(f"    {loop}:2 = scf.for {i} = {zero} to {length} step {one} "
                          f"iter_args({out} = {result}, {run} = {running}) -> ({full_t}, {lane_t}) {{")
        offsets = ", ".join(i if d == axis else "0" for d in range(len(shape)))
        sizes = ", ".join("1" if d == axis else str(n) for d, n in enumerate(shape))
        where = f"[{offsets}] [{sizes}] [{', '.join('1' for _ in shape)}]"
        lane = self.assign(f"tensor.extract_slice {x}{where} : {full_t} to {lane_t}", node.loc)
        identity = _map(len(lane_shape), [f"d{d}" for d in range(len(lane_shape))])
        if node.op == "accumulate":
            first = self.assign(f"arith.cmpi eq, {i}, {zero} : index", node.loc)
        region = _Region(self)
        a, acc, unused = self.fresh("in"), self.fresh("acc"), self.fresh("old")
        step = self._scan_step(region, node, acc, a)
        if node.op == "accumulate":  # no identity to start from: the first element itself
            step = region.op(f"arith.select {first}, {a}, {step} : {t}")
        # the running slice is read as an input into a fresh slice, not through the result's block
        # argument: MLIR's elementwise fusion maps a producer's result argument onto its consumer's, so
        # a scan of one step (the loop folded away) fused into a broadcast accumulated across the
        # broadcast. The fresh slice is copied back into the running one (materialize_in_destination):
        # one-shot bufferization refuses a loop that yields another buffer.
        folded = self._region_generic([identity, identity, identity], ", ".join(['"parallel"'] * len(lane_shape)),
                                      [(lane, lane_t), (run, lane_t)], [(self.empty(lane_shape, dtype, node.loc), lane_t)],
                                      [(a, t), (acc, t), (unused, t)], region, [(step, t)], node.loc)
        written = self.assign(f"tensor.insert_slice {folded} into {out}{where} : {lane_t} into {full_t}", node.loc)
        carried = self.assign(f"bufferization.materialize_in_destination {folded} in {run} : "
                              f"({lane_t}, {lane_t}) -> {lane_t}", node.loc)
        self.line(f"scf.yield {written}, {carried} : {full_t}, {lane_t}", node.loc)
        self.line("}", node.loc)
        return f"{loop}#0"

    @staticmethod
    def _scan_identity(node: Node):
        if node.op == "cumsum":
            return -0.0 if node.dtype.kind == "f" else 0  # -0.0 + x is x for every x
        return 1 if node.op == "cumprod" else 0  # accumulate starts from its first element instead

    @staticmethod
    def _scan_step(region: "_Region", node: Node, acc: str, a: str) -> str:
        """``acc`` combined with ``a``, computed in the dtype's arithmetic type and rounded back."""
        dtype = node.dtype
        if node.op == "accumulate":  # the ufunc's own element, as the elementwise lowering computes it
            return Emitter._ufunc_step(region, node.attrs["ufunc"], dtype, acc, a)
        if dt.is_bool(dtype):  # NumPy's bool add is OR and its multiply AND, on the stored 0/1 bytes
            return region.op(f"arith.{'ori' if node.op == 'cumsum' else 'andi'} {acc}, {a} : i8")
        wide = dt.arithmetic_type(dtype)
        combine = f"arith.{'add' if node.op == 'cumsum' else 'mul'}{'f' if dtype.kind == 'f' else 'i'}"
        folded = region.op(f"{combine} {cast_scalar(region, acc, dtype, wide)}, {cast_scalar(region, a, dtype, wide)} "
                           f": {dt.mlir_type(wide)}")
        return cast_scalar(region, folded, wide, dtype)

    @staticmethod
    def _ufunc_step(region: "_Region", name: str, dtype, acc: str, a: str | None, a_dtype=None,
                    per_update: Node | None = None) -> str:
        """ufunc ``name`` of a ``dtype`` value and ``a`` (of ``a_dtype``, default ``dtype``; none for a unary
        ufunc), stored form (bool as i8), as the elementwise lowering computes its element: in the loop's
        arithmetic type, its result cast back to ``dtype``. ``per_update`` (the node, ufunc.at's): NumPy
        computes it with its elementwise loop, per element (``_numpy_element``), not the scalar loop it takes
        for overlapping operands (accumulate, reduceat): see ``primitives.NUMPY_LOOP_UFUNCS``."""
        operands = [dtype] + ([] if a is None else [dtype if a_dtype is None else a_dtype])
        compute, result = dt.resolve_ufunc(UFUNCS[name], operands)
        wide = [dt.arithmetic_type(c) for c in compute]
        values = []
        for v, d, c, w in zip((acc, a), operands, compute, wide):
            if dt.is_bool(d):  # stored as i8
                v = region.op(f"arith.trunci {v} : i8 to i1")
            values.append(cast_scalar(region, cast_scalar(region, v, d, c), c, w))
        out = dt.arithmetic_type(result)
        if per_update is not None and computed_by_numpy_loop(name, compute):
            value = region.em._numpy_element(region, per_update, name, values, np.dtype(wide[-1]), np.dtype(compute[-1]))
        else:
            value = elementwise_scalar(region, name, values, np.dtype(wide[-1]), out, operand_dtypes=wide,
                                       half=compute[-1] == np.float16)
        value = cast_scalar(region, cast_scalar(region, value, out, result), result, dtype)
        return region.op(f"arith.extui {value} : i1 to i8") if dt.is_bool(dtype) else value

    def scatter(self, node: Node, ops: list[str]) -> str:
        """Rows written at computed positions in turn (``primitives.scatter``). With ``scan_loops`` (the
        CPU) an ``scf.for`` over the updates writes each into the rows in place, linear in their number;
        otherwise (the GPU, where host code may not loop over device data) each element of the result
        is a thread that folds every update in order, taking those whose position is its row."""
        x, positions = ops[0], ops[1]
        updates = ops[2] if len(node.inputs) > 2 else None
        name, dtype = node.attrs["ufunc"], node.dtype
        (n, row), k = node.shape, node.inputs[1].shape[0]
        u_dtype = node.inputs[2].dtype if updates is not None else None
        t, x_t = dt.storage_type(dtype), dt.tensor_type(node.shape, dtype)
        idx_t = dt.tensor_type((k,), np.dtype(np.int64))
        u_t = dt.tensor_type((k, row), u_dtype) if updates is not None else None
        here = self.located(node.loc)
        r = _Region(self)

        def index(v: int) -> str:
            return r.op(f"arith.constant {v} : index")

        zero, one = index(0), index(1)

        def written(j: str, element: str, old: str) -> str:
            """update j's value for an element of its row now holding ``old``"""
            u = None if updates is None else r.op(f"tensor.extract {updates}[{j}, {element}] : {u_t}")
            return u if name is None else self._ufunc_step(r, name, dtype, old, u, u_dtype,
                                                             per_update=node if self.numpy_loops else None)

        def position(j: str) -> str:  # clamped: native code never reads past the rows
            p = r.op(f"arith.index_cast {r.op(f'tensor.extract {positions}[{j}] : {idx_t}')} : i64 to index")
            return r.op(f"arith.minui {p}, {index(n - 1)} : index")

        if self.scan_loops:
            loop, j, rows, inner, c, held = (self.fresh(p) for p in ("scatter", "j", "rows", "row", "c", "held"))
            r.lines.append(f"{loop} = scf.for {j} = {zero} to {index(k)} step {one} iter_args({rows} = {x}) -> ({x_t}) {{")
            p = position(j)
            r.lines.append(f"{inner} = scf.for {c} = {zero} to {index(row)} step {one} iter_args({held} = {rows}) "
                           f"-> ({x_t}) {{")
            old = r.op(f"tensor.extract {held}[{p}, {c}] : {x_t}") if name is not None else None
            new = r.op(f"tensor.insert {written(j, c, old)} into {held}[{p}, {c}] : {x_t}")
            r.lines += [f"scf.yield {new} : {x_t}", "}", f"scf.yield {inner} : {x_t}", "}"]
            for ln in r.lines:
                self.lines.append(f"    {_region_line(ln, here)}")
            return loop
        e, c = r.op("linalg.index 0 : index"), r.op("linalg.index 1 : index")
        folded, j, acc = self.fresh("fold"), self.fresh("j"), self.fresh("acc")
        start = r.op(f"tensor.extract {x}[{e}, {c}] : {x_t}")
        r.lines.append(f"{folded} = scf.for {j} = {zero} to {index(k)} step {one} iter_args({acc} = {start}) -> ({t}) {{")
        hit = r.op(f"arith.cmpi eq, {position(j)}, {e} : index")
        r.lines += [f"scf.yield {r.op(f'arith.select {hit}, {written(j, c, acc)}, {acc} : {t}')} : {t}", "}"]
        return self._region_generic([_map(2, ["d0", "d1"])], '"parallel", "parallel"', [],
                                    [(self.empty(node.shape, dtype, node.loc), x_t)], [(self.fresh("o"), t)], r,
                                    [(folded, t)], node.loc)

    def reduceat_at(self, node: Node, ops: list[str]) -> str:
        """``ufunc.reduceat`` along the last axis at computed indices (``primitives.reduceat_at``, already
        in range): each output element reads its segment's bounds, then NumPy's reduction loop from the
        segment's first element over the rest: a float add sums the rest with NumPy's tree for its length
        (``_dynamic_pairwise``) and adds it, other ufuncs fold in order; float16 add, subtract, multiply and
        divide keep float32 while the loop runs and round once."""
        (x, idx), src = ops, node.inputs[0]
        name, dtype = node.attrs["ufunc"], node.dtype
        n, k, outer = src.shape[-1], node.shape[-1], node.shape[:-1]
        running = np.dtype(np.float32) if dtype == np.float16 and name in ("add", "subtract", "multiply", "divide") \
            else dtype
        t, tr = dt.storage_type(dtype), dt.storage_type(running)
        x_t, idx_t = dt.tensor_type(src.shape, dtype), dt.tensor_type((k,), np.dtype(np.int64))
        r = _Region(self)

        def index(v):
            return r.op(f"arith.constant {v} : index")

        at = [r.op(f"linalg.index {d} : index") for d in range(len(outer) + 1)]
        lead, i = at[:-1], at[-1]

        def read(position):
            v = r.op(f"tensor.extract {x}[{', '.join(lead + [position])}] : {x_t}")
            return r.op(f"arith.extf {v} : {t} to {tr}") if running != dtype else v

        def bound(position):
            return r.op(f"arith.index_cast {r.op(f'tensor.extract {idx}[{position}] : {idx_t}')} : i64 to index")

        one, last_n = index(1), index(n)
        start = r.op(f"arith.minui {bound(i)}, {index(n - 1)} : index")
        following = r.op(f"arith.addi {i}, {one} : index")
        has_next = r.op(f"arith.cmpi ult, {following}, {index(k)} : index")
        end = r.op(f"arith.select {has_next}, {bound(r.op(f'arith.minui {following}, {index(k - 1)} : index'))}, "
                   f"{last_n} : index")
        after = r.op(f"arith.addi {start}, {one} : index")
        longer = r.op(f"arith.cmpi ugt, {r.op(f'arith.minui {end}, {last_n} : index')}, {after} : index")
        count = r.op(f"arith.select {longer}, {r.op(f'arith.subi {end}, {after} : index')}, {index(0)} : index")
        first = read(start)
        if name == "add" and dtype.kind == "f":
            acc = np.dtype(np.float32) if dtype == np.float16 else dtype
            total = r.op(f"arith.addf {first}, {self._dynamic_pairwise(r, read, after, count, acc, max(n - 1, 1))} : {tr}")
        else:
            total, j, held = self.fresh("fold"), self.fresh("j"), self.fresh("acc")
            r.lines.append(f"{total} = scf.for {j} = {after} to {r.op(f'arith.addi {after}, {count} : index')} "
                           f"step {one} iter_args({held} = {first}) -> ({tr}) {{")
            r.lines += [f"scf.yield {self._ufunc_step(r, name, running, held, read(j))} : {tr}", "}"]
        result = r.op(f"arith.truncf {total} : {tr} to {t}") if running != dtype else total
        rank = len(node.shape)
        out_t = dt.tensor_type(node.shape, dtype)
        return self._region_generic([_map(rank, [f"d{d}" for d in range(rank)])], ", ".join(['"parallel"'] * rank), [],
                                    [(self.empty(node.shape, dtype, node.loc), out_t)], [(self.fresh("o"), t)], r,
                                    [(result, t)], node.loc)

    def matmul(self, node: Node, operands) -> str:
        # A 2-d transpose feeding a matmul is folded into its indexing maps, so ``x @ w.T``
        # never materializes the transposed weight (BLAS reads it transposed instead).
        # float16 operands are widened to float32 (exactly) and their products accumulated there, rounded
        # once at the end, as NumPy's float16 matmul does: on the CPU in NumPy's order too (its half loop
        # adds each product in turn, no BLAS), elsewhere as a float32 matmul
        # NumPy's own loop, or the form in which its BLAS call reads each operand (CPU: ``_numpy_matmul_plan``)
        acc = dt.arithmetic_type(node.dtype)
        strides = [self.strides[inp.id] for inp in node.inputs] if self.numpy_sum_order else None
        planned = self.numpy_sum_order and node.dtype.kind == "f" and node.dtype != np.float16 and \
            all(layout.known(inp) for inp in node.inputs)  # (a guessed layout: as a fresh C array)
        dot_rule = bool(planned and node.attrs.get("cblas") and _cblas_rule(node))
        if dot_rule:
            plan, strides, syrk = _numpy_dot_plan(node, strides)
        else:
            plan = _numpy_matmul_plan(node, strides) if planned else None
            # NumPy's syrk (a matrix times its own transpose, one memory): the kernel hands both operands as one
            # tensor
            syrk = plan not in (None, "loop") and _numpy_syrk(node, strides)
        in_order = self.numpy_sum_order and (node.dtype == np.float16 or plan == "loop")
        swapped = (1, 0) if node.ndim == 2 else (0, 2, 1)
        names, types, folded, views = [], [], [], []
        padded = {}  # (operand, view) -> its copy at NumPy's steps: a syrk's one memory stays one
        for i, inp in enumerate(node.inputs):
            transpose = foldable_transpose(node, inp) and "transpose" not in self.faults  # a faulted one is computed
            column_major = transpose if plan in (None, "loop") or plan[i] is None else plan[i] == "F"
            folded.append(column_major)
            other = node.inputs[1 - i]
            if column_major and syrk:  # read as its row-major partner lies: the same memory, transposed
                shape, name = other.shape, operands[1 - i]
            elif column_major and transpose:
                shape, name = inp.inputs[0].shape, self.value(inp.inputs[0])
            elif column_major:  # BLAS reads NumPy's operand transposed: the kernel's copy is laid out so too
                shape = tuple(inp.shape[p] for p in swapped)
                name = self._permuted(operands[i], inp.shape, inp.dtype, swapped, node.loc)
            else:
                shape, name = inp.shape, operands[i]
            steps = tuple(strides[i][-2:]) if plan not in (None, "loop") else None
            view = _blas_view(shape, inp.dtype, steps[::-1] if column_major else steps) if steps else None
            if view is not None:
                if (name, view) not in padded:
                    padded[name, view] = self._spread(name, view, node.loc)
                name = padded[name, view]
            views.append(view)
            dtype = dt.arithmetic_type(inp.dtype)
            if dtype != inp.dtype:
                name = self._generic(shape, dtype, [(name, shape, inp.dtype)],
                                     lambda rb, args, d=inp.dtype, w=dtype: cast_scalar(rb, args[0], d, w), node.loc)
            names.append(name)
            types.append(dt.tensor_type(shape, dtype))
        out_t = dt.tensor_type(node.shape, acc)
        op = "linalg.matmul" if node.ndim == 2 else "linalg.batch_matmul"
        maps = ""
        if any(folded):
            dims = ", ".join(f"d{i}" for i in range(node.ndim + 1))
            maps = " indexing_maps = [" + ", ".join(f"affine_map<({dims}) -> {m}>" for m in _matmul_maps(node.ndim, folded)) + "]"
        arg_types = [t if v is None else v.spread_type for t, v in zip(types, views)]
        if plan is None and self.numpy_sum_order and not in_order:  # (a guessed layout: NumPy's syrk where the
            syrk = names[0] == names[1] and folded[0] != folded[1]      # operands are one array, as the trace has it)
        signature = (op, maps, *arg_types, out_t, in_order, *views, syrk, dot_rule)  # (``_contraction_function``)
        callee = self._contraction_function(signature, "parity_matmul", node, types, out_t, lambda here: (
            _sequential_matmul(node.ndim, folded, types, out_t, here, dt.mlir_type(acc)) if in_order else
            f"    %r = {op}{maps} ins(%a, %b : {types[0]}, {types[1]}) outs(%init : {out_t}) -> {out_t} {here}\n"),
            views, ", ".join(a for a, on in ((SYRK_ATTR, syrk), (DOT_RULE_ATTR, dot_rule)) if on) or None)
        init = self.filled(node.shape, acc, 0, node.loc)
        result = self.assign(
            f"func.call @{callee}({names[0]}, {names[1]}, {init}) : ({arg_types[0]}, {arg_types[1]}, {out_t}) -> {out_t}",
            node.loc)
        if acc == node.dtype:
            return result
        return self._generic(node.shape, node.dtype, [(result, node.shape, acc)],
                             lambda rb, args: cast_scalar(rb, args[0], acc, node.dtype), node.loc)

    def _contraction_function(self, signature: tuple, prefix: str, node: Node, types: list, out_t: str, body,
                              views: list = (None, None), marked: str | None = None) -> str:
        """The name of a private function ``(%a, %b, %init) -> %r`` of ``types`` and ``out_t`` whose text is
        ``body(here)``, emitted once per ``signature``, named ``<prefix>_<n>``, carrying the unit attribute
        ``marked`` if given; an operand with a ``view``
        (``_blas_view``) is passed spread out (``_spread``) and read as its strided slice, so that after
        bufferization the BLAS shim sees the steps NumPy passed. In a function of its own a
        contraction is safe from elementwise fusion (with its reshape propagation), which would rewrite it into a
        generic of fused producers that the BLAS substitution no longer finds. Destination-passing: the caller
        owns the zero-filled result buffer, so the callee returns nothing after bufferization
        (drop-equivalent-buffer-results). Shared by every op of the signature, it is located by its own name,
        and a diagnostic inside it is traced to the first op that uses it."""
        params = [f"%{name}: {t}" if view is None else f"%{name}_spread: {view.spread_type}"
                  for name, t, view in zip("ab", types, views)]
        attributes = f" attributes {{{marked}}}" if marked else ""

        def slices(here: str) -> str:
            return "".join(f"    %{name} = {view.slice(f'%{name}_spread')} {here}\n"
                           for name, view in zip("ab", views) if view is not None)

        return self._private_function(signature, prefix, node, lambda callee, here: (
            f"  func.func private @{callee}({params[0]} {here}, {params[1]} {here}, %init: {out_t} {here}) -> {out_t}"
            f"{attributes} {{\n{slices(here)}{body(here)}    return %r : {out_t} {here}\n  }} {here}\n"))

    def _spread(self, x: str, view: "BlasView", loc) -> str:
        """``x`` written into a zero-filled tensor of ``view``'s spread shape at its steps."""
        zeros = self.filled(view.spread_shape, view.dtype, 0, loc)
        return self.assign(f"tensor.insert_slice {x} into {zeros}{view.placement} : {view.tensor_type} into "
                           f"{view.spread_type}", loc)

    def _private_function(self, signature: tuple, prefix: str, node: Node, text) -> str:
        """The name of a private function ``<prefix>_<n>`` whose text is ``text(name, location)``, emitted once per
        ``signature``; located by its own name, which stands for the first ``node`` that uses it."""
        callee = self.matmul_functions.get(signature)
        if callee is None:
            callee = f"{prefix}_{len(self.matmul_functions)}"
            self.matmul_functions[signature] = callee
            self.origins[callee] = OpOrigin(node.op, node.loc, node.id)
            self.extra_functions.append(text(callee, f'loc("{callee}")'))
        return callee

    def row_dots(self, node: Node, operands) -> str:
        """``primitives.row_dots``: NumPy's np.dot of operands of more than two axes calls BLAS's dot once per
        output element, at the operands' strides. On the CPU, a generic adding each product in turn in a
        private function named for the mode, ``parity_row_dots_<mode>_<n>``: for "unit" and "strided" the BLAS
        substitution (``backend.substitute_blas``) replaces it with ?dot calls, one per element, at unit
        increments or at increments of 2 (the rows copied to every other element of a scratch buffer, so that
        OpenBLAS takes its kernel for other strides, as NumPy's call did); "loop" is NumPy's own running sum.
        On a target with its own sum order, one matmul reading y transposed."""
        (x, y), mode = operands, node.attrs["mode"]
        (m, k), n, t = node.inputs[0].shape, node.inputs[1].shape[0], dt.mlir_type(node.dtype)
        a_t, b_t = dt.tensor_type((m, k), node.dtype), dt.tensor_type((n, k), node.dtype)
        out_t = dt.tensor_type((m, n), node.dtype)
        maps = ", ".join(f"affine_map<(d0, d1, d2) -> {m_}>" for m_ in _matmul_maps(2, [False, True]))
        callee = self._contraction_function(
            ("row_dots", self.numpy_sum_order, mode, a_t, b_t), f"parity_row_dots_{mode}", node, [a_t, b_t], out_t,
            lambda here: _sequential_matmul(2, [False, True], [a_t, b_t], out_t, here, t) if self.numpy_sum_order else
            f"    %r = linalg.matmul indexing_maps = [{maps}] ins(%a, %b : {a_t}, {b_t}) outs(%init : {out_t}) -> {out_t} "
            f"{here}\n")
        init = self.filled(node.shape, node.dtype, 0, node.loc)
        return self.assign(f"func.call @{callee}({x}, {y}, {init}) : ({a_t}, {b_t}, {out_t}) -> {out_t}", node.loc)

    def window_dots(self, node: Node, operands) -> str:
        """``primitives.window_dots`` (np.correlate, np.convolve): a private function named
        ``parity_window_dots_<n_left>_<n>`` whose generic adds each output's overlapping products in turn (the
        order of NumPy's small_correlate, and the fallback where no BLAS is substituted); on the CPU the BLAS
        substitution replaces it with NumPy's calls of ?dot per output (``backend._WINDOW_DOTS_SHIM``)."""
        (x, w), n1, n2 = operands, node.inputs[0].shape[0], node.inputs[1].shape[0]
        n_left, t, length = node.attrs["n_left"], dt.mlir_type(node.dtype), node.shape[0]
        x_t, w_t, out_t = (dt.tensor_type((d,), node.dtype) for d in (n1, n2, length))

        def body(h):
            lines = "\n".join(f"      {line} {h}" for line in (
                "%i = linalg.index 0 : index", "%j = linalg.index 1 : index", "%c0 = arith.constant 0 : index",
                f"%left = arith.constant {n_left} : index", f"%n1 = arith.constant {n1} : index",
                f"%n2 = arith.constant {n2} : index", f"%x_last = arith.constant {n1 - 1} : index",
                f"%w_last = arith.constant {n2 - 1} : index",
                "%x_from = arith.subi %i, %left : index", "%xs = arith.maxsi %x_from, %c0 : index",
                "%w_from = arith.subi %left, %i : index", "%ws = arith.maxsi %w_from, %c0 : index",
                "%w_room = arith.subi %n2, %ws : index", "%x_room = arith.subi %n1, %xs : index",
                "%overlap = arith.minsi %w_room, %x_room : index", "%inside = arith.cmpi slt, %j, %overlap : index",
                "%xj = arith.addi %xs, %j : index", "%wj = arith.addi %ws, %j : index",
                "%xk = arith.minsi %xj, %x_last : index", "%wk = arith.minsi %wj, %w_last : index",  # (never past an end)
                f"%x = tensor.extract %a[%xk] : {x_t}", f"%y = tensor.extract %b[%wk] : {w_t}",
                f"%p = arith.mulf %x, %y : {t}", f"%s = arith.addf %sum, %p : {t}",
                f"%next = arith.select %inside, %s, %sum : {t}", f"linalg.yield %next : {t}"))
            return (f"    %r = linalg.generic {{indexing_maps = [affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0)>], "
                    f'iterator_types = ["parallel", "reduction"]}} ins(%b : {w_t}) outs(%init : {out_t}) {{\n'
                    f"    ^bb0(%unused: {t} {h}, %sum: {t} {h}):\n{lines}\n    }} -> {out_t} {h}\n")

        callee = self._contraction_function(("window_dots", n_left, x_t, w_t, out_t), f"parity_window_dots_{n_left}",
                                            node, [x_t, w_t], out_t, body)
        init = self.filled(node.shape, node.dtype, 0, node.loc)
        return self.assign(f"func.call @{callee}({x}, {w}, {init}) : ({x_t}, {w_t}, {out_t}) -> {out_t}", node.loc)

    def reshape(self, x: str, src: Node, shape: tuple, loc) -> str:
        return self._reshaped(x, src.shape, src.dtype, shape, loc)

    def _reshaped(self, x: str, cur_shape: tuple, dtype, shape: tuple, loc) -> str:
        if len(cur_shape) > 1 or (len(cur_shape) == 1 and len(shape) == 0):
            flat = (prod(cur_shape),) if shape else ()
            groups = _reassociation([list(range(len(cur_shape)))] if flat else [])
            x = self.assign(f"tensor.collapse_shape {x} {groups} : {dt.tensor_type(cur_shape, dtype)} into {dt.tensor_type(flat, dtype)}", loc)
            cur_shape = flat
        if len(cur_shape) == 0 and shape:
            x = self.assign(f"tensor.expand_shape {x} [] output_shape [1] : {dt.tensor_type((), dtype)} into {dt.tensor_type((1,), dtype)}", loc)
            cur_shape = (1,)
        if len(shape) > 1:
            groups = _reassociation([list(range(len(shape)))])
            out = ", ".join(str(d) for d in shape)
            x = self.assign(f"tensor.expand_shape {x} {groups} output_shape [{out}] : {dt.tensor_type(cur_shape, dtype)} into {dt.tensor_type(shape, dtype)}", loc)
        return x

    def transpose(self, node: Node, x: str) -> str:
        return self._permuted(x, node.inputs[0].shape, node.dtype, node.attrs["perm"], node.loc)

    def _permuted(self, x: str, shape: tuple, dtype, perm: tuple, loc) -> str:
        """``x`` (of ``shape``) with its axes in the order ``perm``, as np.transpose."""
        out_shape = tuple(shape[p] for p in perm)
        init = self.empty(out_shape, dtype, loc)
        result = self.fresh()
        self.lines.append(
            f"    {result} = linalg.transpose ins({x} : {dt.tensor_type(shape, dtype)}) outs({init} : {dt.tensor_type(out_shape, dtype)}) "
            f"permutation = [{', '.join(map(str, perm))}] {self.located(loc)}")
        return result

    def slice(self, node: Node, x: str) -> str:
        src = node.inputs[0]
        fmt = lambda xs: "[" + ", ".join(str(v) for v in xs) + "]"
        return self.assign(
            f"tensor.extract_slice {x}{fmt(node.attrs['starts'])}{fmt(node.shape)}{fmt(node.attrs['steps'])} : "
            f"{dt.tensor_type(src.shape, src.dtype)} to {dt.tensor_type(node.shape, node.dtype)}", node.loc)

    def gather(self, node: Node, operands) -> str:
        x, *indices = node.inputs
        axis, k = node.attrs["axis"], indices[0].ndim  # the indices share one (broadcast) shape
        table = operands[0]
        src_t = dt.tensor_type(x.shape, x.dtype)

        def coordinate(rb, value, idx, n):
            it = dt.mlir_type(idx.dtype)
            cast_op = "arith.index_castui" if idx.dtype.kind == "u" else "arith.index_cast"
            i = rb.op(f"{cast_op} {value} : {it} to index")
            if idx.dtype.kind == "i":  # negative indices count from the end, as in NumPy
                zero, size = rb.op("arith.constant 0 : index"), rb.op(f"arith.constant {n} : index")
                neg = rb.op(f"arith.cmpi slt, {i}, {zero} : index")
                wrapped = rb.op(f"arith.addi {i}, {size} : index")
                i = rb.op(f"arith.select {neg}, {wrapped}, {i} : index")
            return i

        def body(rb, args):
            coords = [rb.op(f"linalg.index {d} : index") for d in range(axis)]
            coords += [coordinate(rb, a, idx, x.shape[axis + j]) for j, (a, idx) in enumerate(zip(args, indices))]
            coords += [rb.op(f"linalg.index {d} : index") for d in range(axis + k, node.ndim)]
            return rb.op(f"tensor.extract {table}[{', '.join(coords)}] : {src_t}")

        def compute_body(rb, args):
            stored = body(rb, args)  # the table's stored element; _generic re-stores bools
            return rb.op(f"arith.trunci {stored} : i8 to i1") if dt.is_bool(node.dtype) else stored

        index_map = _map(node.ndim, [f"d{axis + j}" for j in range(k)])
        ins = [(operands[1 + j], idx.shape, idx.dtype, index_map) for j, idx in enumerate(indices)]
        return self._generic(node.shape, node.dtype, ins, compute_body, node.loc)

    def concat(self, node: Node, operands) -> str:
        axis = node.attrs["axis"]
        acc = self.empty(node.shape, node.dtype, node.loc)
        out_t = dt.tensor_type(node.shape, node.dtype)
        offset = 0
        for i, part in enumerate(node.inputs):
            if part.size == 0:
                continue  # an empty part's offset may equal the axis' size, which insert_slice refuses
            offs = [0] * node.ndim
            offs[axis] = offset
            fmt = lambda xs: "[" + ", ".join(str(v) for v in xs) + "]"
            acc = self.assign(
                f"tensor.insert_slice {operands[i]} into {acc}{fmt(offs)}{fmt(part.shape)}{fmt([1] * node.ndim)} : "
                f"{dt.tensor_type(part.shape, part.dtype)} into {out_t}", node.loc)
            offset += part.shape[axis]
        return acc


@dataclass(frozen=True)
class _Start:
    """A reduction's start per output element (a tensor ``name`` of ``shape`` and ``dtype``), where the
    accumulator begins instead of the identity or a number."""
    name: str
    shape: tuple
    dtype: np.dtype


def _region_line(ln: str, here: str) -> str:
    """A region's line with its location: an op's line, or the ``}`` that closes a nested op (scf.for,
    scf.if), whose location goes there; a line that opens a nested region takes none."""
    return ln if ln.endswith("{") else f"{ln} {here}"


def _element(region: _Region, tensor: str, tensor_t: str, at: list, position: int) -> str:
    """``tensor[at..., position]`` read in a region (``at``: the leading indices)."""
    return region.op(f"tensor.extract {tensor}[{', '.join(at + [region.op(f'arith.constant {position} : index')])}] : {tensor_t}")


def _with_remainder(region: _Region, value: str, x: str, row_t: str, at: list, whole: int, row: int, widened, add) -> str:
    """``value`` (the last leaf's lanes) gaining the row's elements past its whole blocks of 8, in order."""
    for position in range(whole, row):
        value = add(region, value, widened(region, _element(region, x, row_t, at, position)))
    return value


def _matmul_maps(rank: int, folded: list) -> list[str]:
    """A matmul's indexing maps (batch axis first when ``rank`` is 3, k last): an operand whose transpose
    is ``folded`` is read with its two matrix axes swapped."""
    batch = "d0, " if rank == 3 else ""
    m, n, k = (f"d{rank - 2}", f"d{rank - 1}", f"d{rank}")
    a = f"({batch}{k}, {m})" if folded[0] else f"({batch}{m}, {k})"
    b = f"({batch}{n}, {k})" if folded[1] else f"({batch}{k}, {n})"
    return [a, b, f"({batch}{m}, {n})"]


def _sequential_matmul(rank: int, folded: list, types: list, out_t: str, here: str, t: str = "f32") -> str:
    """A matmul of element type ``t`` (``%r`` of ``%a``, ``%b`` into ``%init``) as a generic whose reduction adds
    each product in turn, k innermost (NumPy's float16 loop, and its dot loop at strides BLAS cannot take): a
    generic, so no BLAS call replaces it."""
    its = ", ".join(['"parallel"'] * rank + ['"reduction"'])
    dims = ", ".join(f"d{i}" for i in range(rank + 1))
    indexing = ", ".join(f"affine_map<({dims}) -> {m}>" for m in _matmul_maps(rank, folded))
    return (f"    %r = linalg.generic {{indexing_maps = [{indexing}], iterator_types = [{its}]}} "
            f"ins(%a, %b : {types[0]}, {types[1]}) outs(%init : {out_t}) {{\n"
            f"    ^bb0(%x: {t} {here}, %y: {t} {here}, %sum: {t} {here}):\n"
            f"      %p = arith.mulf %x, %y : {t} {here}\n"
            f"      %s = arith.addf %sum, %p : {t} {here}\n"
            f"      linalg.yield %s : {t} {here}\n"
            f"    }} -> {out_t} {here}\n")


@dataclass(frozen=True)
class BlasView:
    """A matmul operand of ``shape`` (as the kernel reads it) at the element steps NumPy hands its BLAS call,
    which the kernel's own contiguous copy does not have: a matrix with gaps between its rows (its leading
    dimension), a vector at a step other than one (its increment). OpenBLAS sums otherwise for these (float32
    gemv kernels by the leading dimension, gemv and dot kernels by the increment), so the operand is copied into
    a larger zero-filled tensor at those steps, and the matmul reads the strided slice of it."""
    shape: tuple
    dtype: np.dtype
    spread_shape: tuple
    steps: tuple  # along the matrix axes, in the spread tensor

    @property
    def tensor_type(self) -> str:
        return dt.tensor_type(self.shape, self.dtype)

    @property
    def spread_type(self) -> str:
        return dt.tensor_type(self.spread_shape, self.dtype)

    @property
    def placement(self) -> str:
        rank = len(self.shape)
        return (f"[{', '.join(['0'] * rank)}] [{', '.join(map(str, self.shape))}] "
                f"[{', '.join(['1'] * (rank - 2) + [str(s) for s in self.steps])}]")

    def slice(self, spread: str) -> str:
        return f"tensor.extract_slice {spread}{self.placement} : {self.spread_type} to {self.tensor_type}"


def _blas_view(shape: tuple, dtype, steps: tuple) -> BlasView | None:
    """The ``BlasView`` of an operand of ``shape`` that NumPy's BLAS call reads as it lies at ``steps`` (the
    element strides of its two matrix axes, as the kernel reads it), or None where a contiguous copy has
    NumPy's steps (or NumPy hands BLAS a contiguous copy of its own)."""
    (rows, cols), (row_step, col_step), batch = shape[-2:], steps, tuple(shape[:-2])
    if rows > 1 and cols > 1 and col_step == 1 and row_step > cols:  # a leading dimension beyond the row
        return BlasView(tuple(shape), np.dtype(dtype), batch + (rows, row_step), (1, 1))
    if rows == 1 and cols > 1 and col_step > 1:  # a row vector at its increment
        return BlasView(tuple(shape), np.dtype(dtype), batch + (1, (cols - 1) * col_step + 1), (1, col_step))
    if cols == 1 and rows > 1 and row_step > 1:  # a column vector
        return BlasView(tuple(shape), np.dtype(dtype), batch + ((rows - 1) * row_step + 1, 1), (row_step, 1))
    return None


def _numpy_matmul_plan(node: Node, strides: list):
    """How NumPy's matmul multiplies ``node``'s float matrices, by its rule (NumPy 2's ``matmul.c.src``) on the
    operands' strides (elements, as ``layout`` gives them): "loop" where it runs its own loop (each output a
    running sum from 0, k innermost: ``_sequential_matmul``), else per operand the form its BLAS call reads:
    "C" (as it lies, row-major), "F" (transposed) or None (a vector, read at its steps). A matrix BLAS can read
    has unit steps along one axis and a leading dimension at least the other's extent; a gemm's operand it
    cannot read (a broadcast, a reversal, gaps along both axes) NumPy copies, transposed where the step along
    its rows is the smaller; a dot or a gemv it cannot read takes the loop. The kernel hands its BLAS shim
    (``backend.substitute_blas``, which picks the routine as NumPy does) copies laid out in these forms, at
    NumPy's leading dimensions and increments where those are not a contiguous copy's (``_blas_view``)."""
    (dm, dn), dp = node.inputs[0].shape[-2:], node.shape[-1]
    (a_m, a_n), (b_n, b_p) = strides[0][-2:], strides[1][-2:]
    a_c, a_f, b_c, b_f = _readable_forms(node, strides)
    if 0 in (dm, dn, dp) or dn == 1:
        return "loop"
    if dm == 1 and dp == 1:  # its dot: BLAS at positive steps
        return (None, None) if a_n > 0 and b_n > 0 else "loop"
    if dm == 1:  # vector @ matrix: a gemv, column-major where it can be
        return (None, "F" if b_f else "C") if (b_c or b_f) and a_n >= 1 else "loop"
    if dp == 1:
        return ("C" if a_c else "F", None) if (a_c or a_f) and b_n >= 1 else "loop"
    return ("C" if a_c else "F" if a_f or abs(a_m) < abs(a_n) else "C",
            "C" if b_c else "F" if b_f or abs(b_n) < abs(b_p) else "C")


def _cblas_rule(node: Node) -> bool:
    """Whether np.dot's BLAS rule decides ``node`` (an np.dot-made matmul of matrices (m, k) @ (k, n)): where
    nothing is empty (a one-element operand is ``numpy_api._axpy_product``'s, so k = 1 comes with m, n > 1)."""
    (m, k), n = node.inputs[0].shape, node.shape[-1]
    return k > 0 and m > 0 and n > 0


def _numpy_dot_plan(node: Node, strides: list) -> tuple:
    """How np.dot multiplies ``node``'s float matrices (m, k) @ (k, n), by cblasfuncs.c's
    ``cblas_matrixproduct`` (which np.inner and np.tensordot reach too), on the operands' strides (elements): an
    operand with a negative step, or a zero one along an axis of more than one element, is first copied
    C-contiguously; then a row times a column is its type's dot at the two increments; a matrix times a vector
    a gemv, and two matrices a gemm (a syrk where they are one memory read as a matrix and its transpose); a
    matrix is read as it lies where it is C- or Fortran-contiguous, and is else copied C-contiguously (np.dot
    gives BLAS no leading dimension beyond a row, and runs no loop of its own, unlike matmul). Returns the
    forms (as ``_numpy_matmul_plan``'s), the strides BLAS reads each operand at, and whether it is a syrk."""
    (m, k), n = node.inputs[0].shape, node.shape[-1]
    shapes = [(m, k), (k, n)]

    def c_order(shape):
        return (shape[1], 1)

    def lies(shape, steps, wanted) -> bool:
        return all(s == w for s, w, d in zip(steps, wanted, shape) if d > 1)

    read, copied = [], []
    for shape, steps in zip(shapes, strides):
        steps = tuple(steps[-2:])
        bad = layout.copied_for_cblas(shape, steps)
        read.append(c_order(shape) if bad else steps)
        copied.append(bad)
    if m == 1 and n == 1:
        return (None, None), read, False
    forms = []
    for i, (shape, matrix) in enumerate(zip(shapes, (m > 1, n > 1))):
        if not matrix:  # the vector of a gemv, at its increment
            forms.append(None)
            continue
        if not lies(shape, read[i], c_order(shape)) and not lies(shape, read[i], (1, shape[0])):
            read[i], copied[i] = c_order(shape), True
        # NumPy asks Fortran order last, so a matrix both ways contiguous (one column, K = 1) is read transposed
        forms.append("F" if lies(shape, read[i], (1, shape[0])) else "C")
    syrk = (None not in forms and forms[0] != forms[1] and not any(copied) and m == n
            and read[0] == read[1][::-1] and layout.memory_start(node.inputs[0]) == layout.memory_start(node.inputs[1]))
    return tuple(forms), read, syrk


def _readable_forms(node: Node, strides: list) -> tuple:
    """Whether BLAS can read each matmul operand of ``node`` at NumPy's ``strides`` as it lies, row-major and
    column-major: (a_c, a_f, b_c, b_f), NumPy's is_blasable2d (unit steps along one axis, a leading dimension
    at least the other's extent)."""
    (dm, dn), dp = node.inputs[0].shape[-2:], node.shape[-1]
    (a_m, a_n), (b_n, b_p) = strides[0][-2:], strides[1][-2:]
    readable = layout.blas_readable
    return readable(a_m, a_n, dn), readable(a_n, a_m, dm), readable(b_n, b_p, dp), readable(b_p, b_n, dn)


def _numpy_syrk(node: Node, strides: list) -> bool:
    """Whether NumPy's matmul computes ``node`` as a matrix times its own transpose (?syrk, its upper triangle
    mirrored): a matrix product of operands BLAS reads as they lie, one row-major and one column-major, from
    one pointer with mirrored strides (matmul.c.src). Its pointers are the arrays' starts
    (``layout.memory_start``), the same for every matrix of a batch where the batch strides agree."""
    (dm, dn), dp = node.inputs[0].shape[-2:], node.shape[-1]
    a, b = strides[0], strides[1]
    a_c, a_f, b_c, b_f = _readable_forms(node, strides)
    return (min(dm, dn, dp) > 1 and dm == dp and (a_c or a_f) and (b_c or b_f) and a_c != b_c
            and a[-2:] == b[-2:][::-1] and _batch_strides(node.inputs[0]) == _batch_strides(node.inputs[1])
            and layout.memory_start(node.inputs[0]) == layout.memory_start(node.inputs[1]))


def _batch_strides(operand: Node) -> tuple:
    """The strides NumPy's matmul loop steps through ``operand``'s batch axes with, before the trace made them
    one (``primitives._loop_axes_flattened``)."""
    if operand.op == "reshape" and operand.attrs.get("loop_axes"):
        operand = operand.inputs[0]
    return layout.strides_of(operand)[:-2]


def _buffered_cast(node: Node) -> bool:
    return node.op == "cast" and bool(node.attrs.get("buffered"))


def foldable_transpose(user: Node, inp: Node) -> bool:
    """Whether ``inp`` is a transpose of a matrix (of each matrix of a batch) that the matmul ``user``
    reads through its indexing maps instead (BLAS then reads the operand transposed, as NumPy does)."""
    swapped = {2: (1, 0), 3: (0, 2, 1)}.get(user.ndim)
    return user.op == "matmul" and inp.op == "transpose" and inp.attrs["perm"] == swapped


class _Operands:
    """Operand names, emitted on first use (a scalar constant inlined into a region never is)."""

    def __init__(self, em: Emitter, node: Node):
        self.em, self.node = em, node

    def __getitem__(self, i: int) -> str:
        return self.em.value(self.node.inputs[i])

    def __iter__(self):
        return (self[i] for i in range(len(self.node.inputs)))


def _name_loc(name) -> str:
    text = str(name or "argument").replace("\\", "\\\\").replace('"', '\\"')
    return f'loc("{text}")'


DEVICE_RESIDENT_ATTR = "parity.device_resident"
# on a NumPy-loop function: the operands it holds last element first, which the loop's call reads backwards
NUMPY_LOOP_BACKWARDS_ATTR = "parity.numpy_loop_backwards"
# on a NumPy-loop function: the operands it holds one element of per row, which the loop's calls, one a row, read
# at step 0 (the rows are the result's last axes, as many elements each as it has over that operand's)
NUMPY_LOOP_PER_ROW_ATTR = "parity.numpy_loop_per_row"
# on a matmul's private function: NumPy computes it as a matrix times its own transpose (?syrk), and the kernel
# passes both operands as one tensor; the BLAS shim calls syrk only there (``backend._GEMM_SHIM``)
SYRK_ATTR = "parity.syrk"
# on a matmul's private function: np.dot's BLAS rule decides it (cblasfuncs.c), which makes a gemm of two matrices
# (m, 1) @ (1, n) where matmul's rule runs its own loop (``backend._GEMM_SHIM``)
DOT_RULE_ATTR = "parity.dot_rule"
# a pairwise sum's block table with more entries than this is computed from two numbers per leaf,
# and a table this long is passed as a hidden argument rather than written into the IR
LARGE_TABLE = 1 << 14


def _resident(node: Node) -> str:
    # in the IR text, hence in the kernel-cache key: a resident argument compiles to other host code
    return f", {DEVICE_RESIDENT_ATTR}" if node.attrs.get("device_resident") else ""


def build_module(inputs: list[Node], outputs: list[Node], func_name: str = "main", faults: dict | None = None,
                 device_outputs: bool = False, scan_loops: bool = True, numpy_sum_order: bool = True,
                 numpy_loops: bool = True) -> LoweredModule:
    """The tensor-level module of ``outputs`` over ``inputs``. ``device_outputs``: the results are
    written into caller-provided device memory (marked device-resident, like DeviceArray inputs);
    ``scan_loops``: the target's form of cumsum/cumprod (see ``Emitter.scan``); ``numpy_sum_order``:
    float sums in NumPy's pairwise order (see ``Emitter._pairwise_sum``), else one loop each; ``numpy_loops``:
    the library-valued ufuncs over whole arrays as calls the target replaces by NumPy's loops (``Emitter._numpy_ufunc``)."""
    em = Emitter(func_name, inputs, faults, scan_loops, numpy_sum_order, numpy_loops)
    order = topological(outputs)
    if numpy_sum_order:
        em.strides = layout.numpy_strides(order)
    users: dict[int, list[Node]] = {}
    for node in order:
        for inp in node.inputs:
            users.setdefault(inp.id, []).append(node)
    output_ids = {o.id for o in outputs}
    for node in order:
        if node.op in ("input", "const"):
            continue
        if node.op == "transpose" and node.id not in output_ids and node.op not in (faults or {}) and \
                all(foldable_transpose(u, node) for u in users.get(node.id, [])):
            continue  # emitted only if something needs it materialized
        em.value(node)
    results = [em.value(o) for o in outputs]
    for k, (o, r) in enumerate(zip(outputs, results)):
        t = dt.tensor_type(o.shape, o.dtype)
        m = "memref<" + "".join(f"{d}x" for d in o.shape) + dt.storage_type(o.dtype) + ">"
        em.line(f"bufferization.materialize_in_destination {r} in restrict writable %out{k} : ({t}, {m}) -> ()", o.loc)
    em.line("return")
    # arguments are located by name (an MLIR NameLoc), so nothing points at the IR text itself
    args = [f"%arg{n.index}: {dt.tensor_type(n.shape, n.dtype)} {{bufferization.writable = false{_resident(n)}}} {_name_loc(n.name)}"
            for n in inputs]
    args += [f"%hidden{i}: {t} {{bufferization.writable = false}} loc(\"constant\")" for i, t in enumerate(em.hidden_types)]
    out_attrs = f" {{{DEVICE_RESIDENT_ATTR}}}" if device_outputs else ""
    args += [f"%out{k}: memref<{''.join(f'{d}x' for d in o.shape)}{dt.storage_type(o.dtype)}>{out_attrs} loc(\"result\")"
             for k, o in enumerate(outputs)]
    header = f"  func.func @{func_name}({', '.join(args)}) attributes {{llvm.emit_c_interface}} {{"
    text = "module {\n" + header + "\n" + "\n".join(em.lines) + "\n  } loc(unknown)\n" + "".join(em.extra_functions) + "} loc(unknown)\n"
    return LoweredModule(text, func_name, em.hidden, [(o.shape, o.dtype) for o in outputs], em.origins)
