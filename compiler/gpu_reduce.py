"""Reductions on the GPU target: one block of threads (32 to 256, by the reduced count) per
output element, each thread folding a strided share and the block combining the partials in a
shared-memory tree, instead of one thread per output walking the reduced elements alone (or a
host loop of launches for a leading axis). ``linalg.reduce`` whose body is an optional widening
plus one combiner with a known identity becomes a call to a kernel written here in MLIR; a
``linalg.generic`` with reduction iterators (fusion's form of a reduction of a computed value,
such as a variance) is first split into a parallel op that writes the folded values and that
reduction. Anything else keeps the parallel-loop lowering."""

from __future__ import annotations

import re

from .backend import _strided, append_functions, find_ops

MAX_THREADS, MIN_THREADS = 256, 32  # per block: up to 256, down to one warp for short reductions

_CONVERSIONS = ("arith.extf", "arith.extsi", "arith.extui", "arith.sitofp", "arith.uitofp")


_INFINITIES = {  # (+inf, -inf) as exact bit patterns
    "f16": ("0x7C00", "0xFC00"), "bf16": ("0x7F80", "0xFF80"),
    "f32": ("0x7F800000", "0xFF800000"), "f64": ("0x7FF0000000000000", "0xFFF0000000000000"),
}


def _identity(combiner: str, t: str) -> str | None:
    """The combiner's identity as an ``arith.constant`` literal of type ``t`` (None: not handled).
    -0.0 for float sums: -0.0 + x is x for every x, -0.0 included."""
    if t in _INFINITIES:
        pos, neg = _INFINITIES[t]
        return {"arith.addf": "-0.0", "arith.mulf": "1.0", "arith.maximumf": neg, "arith.minimumf": pos}.get(combiner)
    if not re.fullmatch(r"i\d+", t):
        return None
    bits = int(t[1:])
    return {"arith.addi": "0", "arith.muli": "1", "arith.ori": "0", "arith.maxui": "0", "arith.andi": "-1",
            "arith.minui": "-1",
            "arith.maxsi": str(-(1 << (bits - 1))), "arith.minsi": str((1 << (bits - 1)) - 1)}.get(combiner)


def _delinearize(lines: list[str], flat: str, dims: list[int], prefix: str) -> dict[int, str]:
    """SSA names of the coordinates along ``dims`` of the flat index ``flat`` (the last dim fastest)."""
    coords, rest = {}, flat
    for j, d in enumerate(reversed(dims)):
        coords[d] = f"%{prefix}{d}"
        if j == len(dims) - 1:
            lines.append(f"{coords[d]} = arith.addi {rest}, %c0 : index")
            break
        lines.append(f"{coords[d]} = arith.remui {rest}, %e{d} : index")
        lines.append(f"%{prefix}rest{d} = arith.divui {rest}, %e{d} : index")
        rest = f"%{prefix}rest{d}"
    return coords


def threads_for(reduced: int) -> int:
    """Threads per block: the reduced count's next power of two, within [MIN_THREADS, MAX_THREADS]."""
    return max(MIN_THREADS, min(MAX_THREADS, 1 << max(reduced - 1, 0).bit_length()))


def kernel_name(rank: int, dims: tuple, ti: str, ta: str, conversion: str | None, combiner: str, threads: int) -> str:
    conv = conversion.split(".")[1] if conversion else "none"
    return (f"parity_gpu_reduce{rank}d_{'_'.join(map(str, dims))}_{ti}_{ta}_{conv}_{combiner.split('.')[1]}"
            f"_t{threads}")


def kernel_text(rank: int, dims: tuple, ti: str, ta: str, conversion: str | None, combiner: str,
                threads: int = MAX_THREADS) -> str:
    kept = [d for d in range(rank) if d not in dims]
    IN, OUT = _strided(rank, ti), _strided(len(kept), ta)
    W = f"memref<{threads}x{ta}, #gpu.address_space<workgroup>>"
    identity = _identity(combiner, ta)
    head = ["%c0 = arith.constant 0 : index", "%c1 = arith.constant 1 : index",
            f"%threads = arith.constant {threads} : index"]
    head += [f"%d{d} = arith.constant {d} : index" for d in range(rank)]
    head += [f"%e{d} = memref.dim %in, %d{d} : {IN}" for d in range(rank)]

    def product(name, ds):
        out, acc = [], "%c1"
        for d in ds:
            out.append(f"%{name}{d} = arith.muli {acc}, %e{d} : index")
            acc = f"%{name}{d}"
        out.append(f"%{name} = arith.addi {acc}, %c0 : index")
        return out

    head += product("rows", kept) + product("n", dims)
    body = []
    row = _delinearize(body, "%bx", kept, "r")
    loop = []
    red = _delinearize(loop, "%i", list(dims), "k")
    index = ", ".join(row.get(d) or red[d] for d in range(rank))
    out_index = ", ".join(row[d] for d in kept)
    loop.append(f"%x = memref.load %in[{index}] : {IN}")
    if conversion:
        loop.append(f"%xc = {conversion} %x : {ti} to {ta}")
    loop += [f"%y = {combiner} {'%xc' if conversion else '%x'}, %a : {ta}", f"scf.yield %y : {ta}"]
    body += [f"%id = arith.constant {identity} : {ta}",
             f"%acc = scf.for %i = %tx to %n step %threads iter_args(%a = %id) -> ({ta}) {{", *loop, "}",
             f"memref.store %acc, %partial[%tx] : {W}", "gpu.barrier"]
    step = threads // 2
    while step:
        body += [f"%s{step} = arith.constant {step} : index",
                 f"%low{step} = arith.cmpi ult, %tx, %s{step} : index",
                 f"scf.if %low{step} {{",
                 f"%hi{step} = arith.addi %tx, %s{step} : index",
                 f"%u{step} = memref.load %partial[%tx] : {W}",
                 f"%v{step} = memref.load %partial[%hi{step}] : {W}",
                 f"%w{step} = {combiner} %u{step}, %v{step} : {ta}",
                 f"memref.store %w{step}, %partial[%tx] : {W}", "}", "gpu.barrier"]
        step //= 2
    body += ["%first = arith.cmpi eq, %tx, %c0 : index", "scf.if %first {",
             f"%total = memref.load %partial[%c0] : {W}",
             f"%init = memref.load %out[{out_index}] : {OUT}",
             f"%result = {combiner} %total, %init : {ta}",
             f"memref.store %result, %out[{out_index}] : {OUT}", "}", "gpu.terminator"]
    lines = [f"func.func private @{kernel_name(rank, dims, ti, ta, conversion, combiner, threads)}(%in: {IN}, %out: {OUT}) {{",
             *head,
             "%some = arith.cmpi ugt, %rows, %c0 : index",
             "scf.if %some {",  # a launch of zero blocks is an error
             "gpu.launch blocks(%bx, %by, %bz) in (%gx = %rows, %gy = %c1, %gz = %c1)"
             " threads(%tx, %ty, %tz) in (%sx = %threads, %sy = %c1, %sz = %c1)"
             f" workgroup(%partial : {W}) {{",
             *body, "}", "}", "return", "}"]
    return "\n".join(lines)


def _template_combiner(combine, t: str) -> bool:
    """Whether the kernel can fold with ``combine`` in type ``t``: a known identity, and no fastmath
    flags (the template would drop them)."""
    if "fastmath" in combine.attributes and str(combine.attributes["fastmath"]) != "#arith.fastmath<none>":
        return False
    return _identity(combine.name, t) is not None


def _reduction_form(op):
    """(input type, accumulator type, conversion or None, combiner) when ``op`` is a handled
    ``linalg.reduce``, else None."""
    from mlir import ir

    if len(op.operands) != 2:
        return None
    block = op.regions[0].blocks[0]
    in_arg, init_arg = block.arguments[0], block.arguments[1]
    ops = [o.operation for o in block.operations]
    *work, yield_op = ops
    conversion = None
    if len(work) == 2 and work[0].name in _CONVERSIONS and work[0].operands[0] == in_arg:
        conversion, element = work[0].name, work[0].results[0]
    elif len(work) == 1:
        element = in_arg
    else:
        return None
    combine = work[-1]
    operands = list(combine.operands)
    if not (len(operands) == 2 and ((operands[0] == element and operands[1] == init_arg)
                                    or (operands[0] == init_arg and operands[1] == element))
            and len(yield_op.operands) == 1 and yield_op.operands[0] == combine.results[0]):
        return None
    ti = str(ir.MemRefType(op.operands[0].type).element_type)
    ta = str(ir.MemRefType(op.operands[1].type).element_type)
    if not _template_combiner(combine, ta):
        return None
    return ti, ta, conversion, combine.name


def _generic_reduction_form(op):
    """For a ``linalg.generic`` on buffers that folds a computed value into its one output over some
    reduction dimensions: (loop ranges, reduction dims, combiner op). None when it is anything else."""
    from mlir import ir

    iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    n_loops = len(iterators)
    dims = tuple(i for i, t in enumerate(iterators) if "reduction" in t)
    operands = list(op.operands)
    if not dims or len(op.results) or len(maps) != len(operands) or len(operands) < 2:
        return None
    parallel = [i for i in range(n_loops) if i not in dims]
    # the output: one buffer indexed by the parallel dimensions in order, as linalg.reduce's init is
    if str(maps[-1]) != str(ir.AffineMap.get(n_loops, 0, [ir.AffineDimExpr.get(i) for i in parallel])):
        return None
    ranges = [None] * n_loops
    for value, m in zip(operands, maps):
        shape = ir.MemRefType(value.type).shape
        for j, expr in enumerate(m.results):
            expr = expr.maybe_downcast()
            if isinstance(expr, ir.AffineDimExpr) and shape[j] >= 0:
                ranges[expr.position] = shape[j]
    if any(r is None for r in ranges):
        return None  # a dynamic or underivable loop range
    block = op.regions[0].blocks[0]
    out_arg = block.arguments[len(operands) - 1]
    *work, yield_op = [o.operation for o in block.operations]
    if not work:
        return None
    combine = work[-1]
    args = list(combine.operands)
    if not (len(args) == 2 and len(yield_op.operands) == 1 and yield_op.operands[0] == combine.results[0]
            and sum(a == out_arg for a in args) == 1 and len(list(out_arg.uses)) == 1):
        return None
    if not _template_combiner(combine, str(out_arg.type)):
        return None
    return ranges, dims, combine


def _split_generic_reduction(op, ranges, combine):
    """Turn the reduction ``op`` into a parallel ``linalg.generic`` that writes each folded value
    into a new buffer over the whole loop domain (the body's own ops, moved), and return that buffer:
    the caller reduces it with the kernel."""
    from mlir import ir
    from mlir.dialects import linalg, memref

    operands = list(op.operands)
    maps = list(ir.ArrayAttr(op.attributes["indexing_maps"]))
    block = op.regions[0].blocks[0]
    out_arg = block.arguments[len(operands) - 1]
    value = [a for a in combine.operands if a != out_arg][0]
    n_loops = len(ranges)
    with ir.InsertionPoint(op), op.location:
        folded = memref.AllocOp(ir.MemRefType.get(ranges, value.type), [], []).result
        identity = ir.AffineMapAttr.get(ir.AffineMap.get_identity(n_loops))
        parallel = ir.Attribute.parse("#linalg.iterator_type<parallel>")
        split = linalg.GenericOp([], operands[:-1], [folded], ir.ArrayAttr.get(maps[:-1] + [identity]),
                                 ir.ArrayAttr.get([parallel] * n_loops))
        types = [ir.MemRefType(v.type).element_type for v in operands[:-1]] + [value.type]
        body = split.regions[0].blocks.append(*types)
    with ir.InsertionPoint(body), op.location:
        new_yield = linalg.YieldOp([value])
    for old, new in zip(block.arguments, body.arguments):
        if old != out_arg:
            old.replace_all_uses_with(new)
    for moved in [o.operation for o in block.operations][:-2]:  # all but the combiner and the yield
        moved.move_before(new_yield.operation)
    return folded


def _kernel_call(op, needed, source, out, dims, ti, ta, conversion, combiner) -> None:
    """Replace ``op`` by a call of the reduction kernel over ``source`` into ``out``."""
    from mlir import ir
    from mlir.dialects import func, memref

    source_type = ir.MemRefType(source.type)
    rank, shape = source_type.rank, source_type.shape
    reduced = 1
    for d in dims:
        reduced *= shape[d] if shape[d] >= 0 else MAX_THREADS  # dynamic: assume long
    threads = threads_for(reduced)
    name = kernel_name(rank, dims, ti, ta, conversion, combiner, threads)
    needed[name] = kernel_text(rank, dims, ti, ta, conversion, combiner, threads)
    with ir.InsertionPoint(op), op.location:
        casts = [memref.CastOp(ir.Type.parse(_strided(r, t)), v).result
                 for v, r, t in zip((source, out), (rank, rank - len(dims)), (ti, ta))]
        func.CallOp([], ir.FlatSymbolRefAttr.get(name), casts)
    op.erase()


def substitute_reductions(module) -> int:
    """Replace handled reductions on buffers — ``linalg.reduce``, and ``linalg.generic`` ops with
    reduction iterators (what elementwise fusion makes of a reduction of a computed value, such as a
    variance), split into a parallel op plus the kernel — with block-per-output kernels.
    Returns how many kernel kinds were added."""
    from mlir import ir

    needed = {}
    for op in find_ops(module.operation, "linalg.reduce", "linalg.generic"):
        if op.name == "linalg.reduce":
            form = _reduction_form(op)
            dims = tuple(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
            if form is not None and dims:
                _kernel_call(op, needed, op.operands[0], op.operands[1], dims, *form)
            continue
        generic = _generic_reduction_form(op)
        if generic is None:
            continue
        ranges, dims, combine = generic
        combiner, out = combine.name, op.operands[len(op.operands) - 1]
        ta = str(ir.MemRefType(out.type).element_type)
        folded = _split_generic_reduction(op, ranges, combine)
        _kernel_call(op, needed, folded, out, dims, ta, ta, None, combiner)
    if needed:
        append_functions(module, "\n".join(needed.values()))
    return len(needed)
