"""A module MLIR refuses is a compiler bug, and ``CompileError`` says where in the user's code
it comes from: the graph op whose lowering emitted the refused MLIR op, its source line,
function and callers, the MLIR op and MLIR's own message. The lowering is broken on purpose
here (one emitted line edited) to make IR that MLIR's verifier or parser refuses."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

import compiler
from compiler import CompileError
from compiler.backend import kernel_key, strip_locations
from compiler.errors import from_mlir_error, located_compile_errors
from compiler.lowering import LoweredModule

sys.path.insert(0, str(Path(__file__).parent / "support"))
from broken_lowering import concat_past_the_end, edited_lowering  # noqa: E402

X = np.arange(6, dtype=np.float32).reshape(2, 3)
Y = np.arange(4, dtype=np.float32).reshape(2, 2)


def line_of(marker: str) -> int:
    """The line of this file carrying ``# marker``: an independent account of where an op is."""
    with open(__file__, encoding="utf-8") as f:
        return next(i for i, text in enumerate(f, 1) if text.rstrip().endswith(f"# {marker}"))


def joined(x, y):
    return np.concatenate([np.tanh(x), y], axis=1) * 2  # concat-line


def helper_concat(x, y):
    return np.concatenate([x, y], axis=1)  # helper-line


def calls_helper(x, y):
    return helper_concat(x, y) + 1  # caller-line


def operand_type_mismatch(text: str) -> str:
    """The inserted value declared with a type it does not have (the parser refuses, at a position
    in the module text rather than at a located op)."""
    return text.replace(": tensor<2x2xf32> into", ": tensor<2x7xf32> into")


def test_refused_ir_names_the_graph_op_its_line_and_the_mlir_op():
    with concat_past_the_end(), pytest.raises(CompileError) as info:
        compiler.jit(joined)(X, Y)
    error = info.value
    assert error.origin is not None and error.origin.op == "concat"
    assert error.origin.loc.file == __file__ and error.origin.loc.line == line_of("concat-line")
    assert error.origin.loc.function == "joined"
    assert error.mlir_op == "tensor.insert_slice"
    # offset 4 + size 2 along an axis of 5: MLIR names the last index the slice would touch
    assert error.detail == "slice along dimension 1 runs out-of-bounds: 5 >= 5"
    assert error.stage == "Unable to parse module assembly"
    assert type(error.__cause__).__name__ == "MLIRError"
    assert f"op concat at {error.origin.loc.short()} in joined" in str(error)


def test_a_type_error_located_in_the_module_text_is_traced_through_that_line():
    with edited_lowering("concat", "tensor.insert_slice", operand_type_mismatch), pytest.raises(CompileError) as info:
        compiler.jit(joined)(X, Y)
    error = info.value
    assert "expects different type than prior uses" in error.detail
    assert error.origin is not None and error.origin.op == "concat"
    assert error.origin.loc.line == line_of("concat-line")


def test_the_callers_of_the_refused_op_are_named():
    with concat_past_the_end(), pytest.raises(CompileError) as info:
        compiler.jit(calls_helper)(X, Y)
    loc = info.value.origin.loc
    assert (loc.line, loc.function) == (line_of("helper-line"), "helper_concat")
    assert loc.callers == ((__file__, line_of("caller-line"), "calls_helper"),)


def test_emit_and_ahead_of_time_builds_raise_it_too():
    with concat_past_the_end():
        with pytest.raises(CompileError, match="op concat at"):
            compiler.emit(joined, X, Y, stage="optimized")
        with pytest.raises(CompileError, match="op concat at"), compiler.build_only():
            compiler.jit(joined)(X, Y)


def test_the_lowered_ir_names_each_op_deterministically():
    """Tags number ops in lowering order, not by graph node id: the same function gives the same
    text in every trace (diffable emit output), and each tag stands for its op."""
    first = compiler.jit(joined).lower(X, Y)
    second = compiler.jit(joined).lower(X, Y)
    assert first.text == second.text
    line = line_of("concat-line")
    for tag, op in (("tanh#0", "tanh"), ("concat#1", "concat"), ("multiply#2", "multiply")):
        assert f'loc("{tag}"("{__file__}":{line}:0))' in first.text
        assert first.origins[tag].op == op and first.origins[tag].loc.line == line
    # (tanh's private function, NumPy's loop on the CPU, stands for the tanh that made it)
    assert set(first.origins) == {"tanh#0", "concat#1", "multiply#2", "parity_numpy_ufunc_0"}
    assert first.origins["parity_numpy_ufunc_0"] == first.origins["tanh#0"]


def test_tags_do_not_reach_the_kernel_cache_key():
    """A tag is part of a location, which never changes the compiled code."""
    assert strip_locations('%v1 = tensor.empty() : tensor<2xf32> loc("concat#1"("/a \\"b\\"/x.py":3:0))\n') == \
        "%v1 = tensor.empty() : tensor<2xf32>\n"
    lowered = compiler.jit(joined).lower(X, Y)
    untagged = re.sub(r'loc\("[a-z_]+#\d+"\(("[^"]*":\d+:0)\)\)', r"loc(\1)", lowered.text)
    assert untagged != lowered.text
    assert kernel_key(untagged, "cpu") == kernel_key(lowered.text, "cpu")


def test_a_diagnostic_at_no_tagged_op_still_says_what_mlir_refused():
    from mlir import ir

    text = 'module {\n  func.func @main() {\n    %c = arith.constant 1 : i32 loc("/x.py":3:0)\n    return\n  }\n}\n'
    bad = text.replace("arith.constant 1 : i32", "arith.constant 1.5 : i32")
    with pytest.raises(Exception) as info:
        with ir.Context():
            ir.Module.parse(bad)
    error = from_mlir_error(info.value, LoweredModule(bad, "main"))
    assert error is not None and error.origin is None
    assert "MLIR rejected the compiled module (Unable to parse module assembly)" in str(error)


def test_other_exceptions_pass_unchanged():
    lowered = LoweredModule("module {}", "main")
    with pytest.raises(ValueError, match="not MLIR"), located_compile_errors(lowered):
        raise ValueError("not MLIR")
    assert from_mlir_error(RuntimeError("Failure while creating the ExecutionEngine"), lowered) is None


def sqrt_only(x):
    return np.sqrt(x)  # sqrt-line


def tanh_only(x):
    return np.tanh(x)  # tanh-line


def product(a, b):
    return a @ b  # matmul-line


def test_a_parse_error_on_an_ops_unlocated_first_line_is_traced_to_that_op():
    """A ``linalg.generic``'s header line carries no location (its region and closing line do)."""
    wrong_input = lambda text: text.replace("ins(%arg0 : tensor<2x3xf32>)", "ins(%arg0 : tensor<2x4xf32>)")
    with edited_lowering("_generic", "linalg.generic", wrong_input), pytest.raises(CompileError) as info:
        compiler.jit(sqrt_only)(X)
    assert "expects different type than prior uses" in info.value.detail
    assert info.value.origin is not None and info.value.origin.op == "sqrt"
    assert info.value.origin.loc.line == line_of("sqrt-line")


def test_an_error_inside_a_shared_matmul_function_names_the_matmul_that_made_it():
    from compiler.lowering import Emitter

    original = Emitter.matmul

    def operands_swapped(self, node, operands):
        result = original(self, node, operands)
        self.extra_functions[-1] = self.extra_functions[-1].replace("ins(%a, %b", "ins(%b, %a")
        return result

    Emitter.matmul = operands_swapped
    try:
        with pytest.raises(CompileError) as info:
            compiler.jit(product)(X, np.ones((3, 4), np.float32))
    finally:
        Emitter.matmul = original
    assert info.value.origin is not None and info.value.origin.op == "matmul"
    assert info.value.origin.loc.line == line_of("matmul-line")


def test_a_failed_translation_to_llvm_is_located_too():
    """MLIR reports it as printed diagnostics plus a bare RuntimeError; the backend keeps them."""
    untranslatable = lambda text: text.replace("math.sqrt", "math.erf")  # no lowering to LLVM here
    with edited_lowering("_generic", "math.sqrt", untranslatable), pytest.raises(CompileError) as info:
        compiler.jit(sqrt_only)(X)
    error = info.value
    assert error.stage == "lowering to native code" and error.mlir_op == "math.erf"
    assert "cannot be converted to LLVM IR" in error.detail and "loc(" not in error.detail
    assert (error.origin.op, error.origin.loc.line) == ("sqrt", line_of("sqrt-line"))


def test_an_error_inside_a_numpy_loop_function_names_the_op_that_made_it():
    """tanh is a private function the CPU replaces by NumPy's loop: MLIR refusing its text is traced to the tanh."""
    from compiler.lowering import Emitter

    original = Emitter._numpy_ufunc_function

    def mistyped(self, node, *args):
        callee = original(self, node, *args)
        self.extra_functions[-1] = self.extra_functions[-1].replace("math.tanh %x0", "math.tanh %x9")
        return callee

    Emitter._numpy_ufunc_function = mistyped
    try:
        with pytest.raises(CompileError) as info:
            compiler.jit(tanh_only)(X)
    finally:
        Emitter._numpy_ufunc_function = original
    assert info.value.origin is not None and info.value.origin.op == "tanh"
    assert info.value.origin.loc.line == line_of("tanh-line")


def test_a_compile_error_survives_pickling():
    import pickle

    with concat_past_the_end(), pytest.raises(CompileError) as info:
        compiler.jit(joined)(X, Y)
    again = pickle.loads(pickle.dumps(info.value))
    assert (str(again), again.origin, again.mlir_op) == (str(info.value), info.value.origin, info.value.mlir_op)


def test_an_unrelated_class_named_mlir_error_is_not_taken_for_one():
    class MLIRError(Exception):
        error_diagnostics: list = []

    assert from_mlir_error(MLIRError("no tags here"), LoweredModule("module {}", "main")) is None
