"""Matmuls on the GPU target: ``linalg.matmul``/``batch_matmul`` on buffers are
replaced by calls to a tiled kernel written here in MLIR. Each block computes a
TILE x TILE tile of the output (one batch entry per grid z); the K dimension is
walked in TILE-wide steps, staging A and B tiles in workgroup (shared) memory so
every global element is read once per block rather than once per output."""

from __future__ import annotations

from .backend import _strided, _transposed_operands, append_functions, as_dynamic_operand, find_ops

TILE = 16

_KERNEL = """
  func.func private @{name}(%a: {A}, %b: {B}, %c: {C}) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %tile = arith.constant {T} : index
    %m = memref.dim %a, %c{dm} : {A}
    %k = memref.dim %a, %c{dk} : {A}
    %n = memref.dim %b, %c{dk} : {B}
    %nb = {batch}
    %gx = arith.ceildivui %n, %tile : index
    %gy = arith.ceildivui %m, %tile : index
    %kt = arith.ceildivui %k, %tile : index
    gpu.launch blocks(%bx, %by, %bz) in (%sgx = %gx, %sgy = %gy, %sgz = %nb)
               threads(%tx, %ty, %tz) in (%stx = %tile, %sty = %tile, %stz = %c1)
               workgroup(%as : {W}, %bs : {W}) {{
      %zero = arith.constant 0.0 : {tc}
      %row0 = arith.muli %by, %tile : index
      %row = arith.addi %row0, %ty : index
      %col0 = arith.muli %bx, %tile : index
      %col = arith.addi %col0, %tx : index
      %row_ok = arith.cmpi ult, %row, %m : index
      %col_ok = arith.cmpi ult, %col, %n : index
      %acc = scf.for %t = %c0 to %kt step %c1 iter_args(%sum = %zero) -> ({tc}) {{
        %kbase = arith.muli %t, %tile : index
        %ka = arith.addi %kbase, %tx : index
        %kb = arith.addi %kbase, %ty : index
        %ka_ok = arith.cmpi ult, %ka, %k : index
        %a_ok = arith.andi %row_ok, %ka_ok : i1
        %va = scf.if %a_ok -> ({tc}) {{
          %x = memref.load %a[{z}%row, %ka] : {A}
          {cast_a}
        }} else {{
          scf.yield %zero : {tc}
        }}
        memref.store %va, %as[%ty, %tx] : {W}
        %kb_ok = arith.cmpi ult, %kb, %k : index
        %b_ok = arith.andi %kb_ok, %col_ok : i1
        %vb = scf.if %b_ok -> ({tc}) {{
          %x = memref.load %b[{z}%kb, %col] : {B}
          {cast_b}
        }} else {{
          scf.yield %zero : {tc}
        }}
        memref.store %vb, %bs[%ty, %tx] : {W}
        gpu.barrier
        %part = scf.for %i = %c0 to %tile step %c1 iter_args(%s = %sum) -> ({tc}) {{
          %x = memref.load %as[%ty, %i] : {W}
          %y = memref.load %bs[%i, %tx] : {W}
          %p = arith.mulf %x, %y : {tc}
          %q = arith.addf %s, %p : {tc}
          scf.yield %q : {tc}
        }}
        gpu.barrier
        scf.yield %part : {tc}
      }}
      %ok = arith.andi %row_ok, %col_ok : i1
      scf.if %ok {{
        %old = memref.load %c[{z}%row, %col] : {C}
        %new = arith.addf %old, %acc : {tc}
        memref.store %new, %c[{z}%row, %col] : {C}
      }}
      gpu.terminator
    }}
    return
  }}
"""

_WIDTH = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def _cast(src: str, dst: str) -> str:
    """Convert the loaded %x from ``src`` to the accumulator type, as linalg.matmul does, and yield it."""
    if src == dst:
        return f"scf.yield %x : {dst}"
    op = "arith.extf" if _WIDTH[src] < _WIDTH[dst] else "arith.truncf"
    return f"%xc = {op} %x : {src} to {dst}\n          scf.yield %xc : {dst}"


def kernel_name(rank: int, ta: str, tb: str, tc: str) -> str:
    return f"parity_gpu_matmul{rank}d_{ta}_{tb}_{tc}"


def kernel_text(rank: int, ta: str, tb: str, tc: str) -> str:
    return _KERNEL.format(
        name=kernel_name(rank, ta, tb, tc), A=_strided(rank, ta), B=_strided(rank, tb), C=_strided(rank, tc),
        W=f"memref<{TILE}x{TILE}x{tc}, #gpu.address_space<workgroup>>", T=TILE, tc=tc,
        dm=rank - 2, dk=rank - 1, batch="memref.dim %a, %c0 : " + _strided(rank, ta) if rank == 3 else "arith.constant 1 : index",
        z="%bz, " if rank == 3 else "", cast_a=_cast(ta, tc), cast_b=_cast(tb, tc))


def substitute_matmuls(module) -> int:
    """Replace float ``linalg.matmul``/``batch_matmul`` on buffers with calls to the tiled kernel;
    other matmuls (integers) stay and become plain parallel loops. Returns how many were replaced."""
    from mlir import ir
    from mlir.dialects import func

    needed = {}
    for op in find_ops(module.operation, "linalg.matmul", "linalg.batch_matmul"):
        types = [str(ir.MemRefType(v.type).element_type) for v in op.operands]
        if any(t not in _WIDTH for t in types):
            continue
        rank = 3 if op.name == "linalg.batch_matmul" else 2
        name = kernel_name(rank, *types)
        needed[name] = kernel_text(rank, *types)
        transposed = _transposed_operands(op)
        with ir.InsertionPoint(op), op.location:
            # A folded ``.T`` (see lowering.foldable_transpose) becomes a transposed view: the kernel
            # indexes through strides, so nothing is copied.
            operands = [as_dynamic_operand(v, rank, t) for v, t in zip(op.operands, transposed)]
            func.CallOp([], ir.FlatSymbolRefAttr.get(name), operands)
        op.erase()
    if needed:
        append_functions(module, "".join(needed.values()))
    return len(needed)
