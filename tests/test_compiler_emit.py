"""Emitted IR: source locations point at the user's lines, and ``parity emit``
prints every stage of the library formulas (softmax's optimized form is fused)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import compiler
from harness.cli import main as parity

# --------------------------------------------------------------------------- source locations


def located(x, y):
    scaled = x * 2.0
    return np.tanh(scaled) + y.sum(axis=-1, keepdims=True)


LINE_MUL = located.__code__.co_firstlineno + 1
LINE_TANH = located.__code__.co_firstlineno + 2

# a location names the op that made it: loc("tanh#3"("file":LINE:0)); the name is optional here
GENERIC = re.compile(r"= linalg\.generic .*?\n(.*?)\n    \} -> \S+ loc\((?:\"[\w#]+\"\()?\"([^\"]+)\":(\d+):0\)", re.S)


def generic_ops(text: str) -> list[tuple[str, str, int]]:
    """(region body, file, line) of each linalg.generic in tensor-stage IR."""
    return [(body, f, int(line)) for body, f, line in GENERIC.findall(text)]


def test_tensor_ir_carries_user_source_lines():
    x = np.ones((2, 3), np.float32)
    text = compiler.emit(located, x, x, stage="tensor")
    here = __file__
    ops = generic_ops(text)
    assert ops, text
    mul = [(f, line) for body, f, line in ops if "arith.mulf" in body and "math.tanh" not in body]
    assert mul == [(here, LINE_MUL)], text
    # tanh is a call of a private function, NumPy's loop on the CPU (backend.substitute_numpy_loops), on its line
    tanh = re.findall(r'= func\.call @(parity_numpy_ufunc_\d+)\(.*loc\("tanh#\d+"\("([^"]+)":(\d+):0\)\)', text)
    assert [(f, int(line)) for _, f, line in tanh] == [(here, LINE_TANH)], text
    function = text.split(f"func.func private @{tanh[0][0]}")[1]
    assert 'attributes {parity.numpy_loop = "tanh/float32"}' in function and "math.tanh %x0 :" in function
    # the sum (generics in NumPy's pairwise order) is located on its line, every op of it
    sum_locs = set(re.findall(r'loc\("reduce_sum#\d+"\("([^"]+)":(\d+):0\)\)', text))
    assert sum_locs == {(here, str(LINE_TANH))}, text
    assert f'loc("{here}":{LINE_TANH}:0)' in text.split("bufferization.materialize_in_destination")[1]


def test_optimized_ir_keeps_user_source_lines():
    x = np.ones((2, 3), np.float32)
    text = compiler.emit(located, x, x, stage="optimized")
    # after fusion, the fused op's location still points at this file
    assert f'loc("{__file__}":{LINE_TANH}:0)' in text or f'"{__file__}":{LINE_TANH}:0' in text


def test_library_formula_locations_point_at_ops_py():
    import compiler.ops as ops_module

    text = compiler.emit(ops_module.softmax, np.ones((2, 4), np.float32), stage="tensor")
    first = ops_module.softmax.__code__.co_firstlineno
    lines = {int(m) for m in re.findall(rf'loc\((?:"[\w#]+"\()?"{re.escape(ops_module.__file__)}":(\d+):0\)', text)}
    # the max/exp line and the division line of the formula, nothing else
    assert lines == {first + 2, first + 3}, lines


# --------------------------------------------------------------------------- parity emit


def emit(capsys, *argv) -> tuple[int, str, str]:
    code = parity(["emit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_softmax_optimized_is_fused(capsys):
    code, out, err = emit(capsys, "softmax", "--stage", "optimized")
    assert code == 0, err
    generics = re.findall(r"linalg\.generic (.*?)\n(.*?)linalg\.yield", out, re.S)
    bodies = [body for _, body in generics]
    # x - max is one elementwise op, and exp a call of a private function whose generic the CPU target
    # replaces by NumPy's own loop (backend.substitute_numpy_loops)
    assert any("arith.subf" in body for body in bodies), out
    assert re.search(r"call @parity_numpy_ufunc_0\(", out), out
    function = out.split("func.func private @parity_numpy_ufunc_0")[1]
    assert 'attributes {parity.numpy_loop = "exp/float32"}' in function and "math.exp %in :" in function
    # the max is a linalg.reduce from -inf (0xFF800000)
    reduces = re.findall(r"linalg\.reduce .*?\n(.*?)linalg\.yield", out, re.S)
    assert len(reduces) == 1 and "arith.maximumf" in reduces[0], out
    assert re.search(r"arith\.constant 0xFF800000 : f32", out)
    # the sum is NumPy's pairwise one, in float32: 8 lanes summed in order from -0.0 (0x80000000) by a
    # generic with a reduction loop, combined as a tree of 7 additions; the division reads the tree's
    # result (+0.0, NumPy's start, added in it)
    lanes = [body for head, body in generics if '"reduction"' in head]
    assert len(lanes) == 1 and "tensor.extract" in lanes[0] and "arith.addf" in lanes[0], out
    assert re.search(r"arith\.constant -0\.0+e\+00 : f32|arith\.constant 0x80000000 : f32", out), out
    assert any(body.count("arith.addf") == 7 for body in bodies), out
    assert any("arith.divf" in body and "tensor.extract" in body for body in bodies), out
    assert "f64" not in out  # no wider accumulator
    assert len(generics) == 5, out  # x - max, exp's (in its function), the lanes, the tree, the division
    assert "tensor<4x64xf32>" in out  # the default example shape


def test_tensor_stage_is_unfused(capsys):
    code, out, _ = emit(capsys, "softmax", "--stage", "tensor")
    assert code == 0
    assert len(re.findall(r"linalg\.generic", out)) > 2
    assert re.search(r"math\.exp", out) and "linalg.reduce" in out


@pytest.mark.parametrize("function", ["gelu", "softmax", "layer_norm", "linear", "attention", "feedforward"])
def test_every_stage_prints(capsys, function):
    texts = {}
    for stage in ("tensor", "optimized", "lowered"):
        code, out, err = emit(capsys, function, "--stage", stage)
        assert code == 0, err
        texts[stage] = out
    assert "func.func @main" in texts["tensor"] and "linalg." in texts["tensor"]
    assert "linalg." in texts["optimized"]
    assert "llvm.func" in texts["lowered"] and "linalg." not in texts["lowered"]
    # tensor types survive only as the type of a global constant's value (a sum's table of blocks)
    assert all("tensor<" not in line or line.lstrip().startswith("llvm.mlir.global") for line in texts["lowered"].splitlines())


def test_shape_and_dtype_options(capsys):
    code, out, _ = emit(capsys, "gelu", "--stage", "tensor", "--shape", "2x3x8", "--dtype", "float64")
    assert code == 0
    assert "%arg0: tensor<2x3x8xf64>" in out
    code, out, _ = emit(capsys, "softmax", "--stage", "tensor", "--dtype", "float16")
    assert code == 0
    assert "%arg0: tensor<4x64xf16>" in out and "arith.extf" in out  # float16 computed in float32
    code, out, _ = emit(capsys, "feedforward", "--stage", "tensor", "--shape", "5x16")
    assert code == 0
    assert "tensor<16x64xf32>" in out and "tensor<64x16xf32>" in out  # weights follow the width
    # gelu's np.sqrt(2 / np.pi) promotes float32 to float64: the output buffer says so
    code, out, _ = emit(capsys, "gelu", "--stage", "tensor")
    assert re.search(r"%out0: memref<4x64xf64>", out)


def test_ptx_needs_the_gpu_target(capsys):
    code, out, err = emit(capsys, "softmax", "--stage", "ptx")
    assert code == 2 and out == ""
    assert "--stage ptx needs --target gpu" in err


def test_chip_needs_the_gpu_target(capsys):
    code, _, err = emit(capsys, "softmax", "--chip", "sm_80")
    assert code == 2 and "--chip applies only to --target gpu" in err


@pytest.mark.parametrize("bad", ["4x", "0x3", "axb", "-4"])
def test_bad_shape_is_a_usage_error(capsys, bad):
    with pytest.raises(SystemExit) as exit_info:
        parity(["emit", "softmax", f"--shape={bad}"])
    assert exit_info.value.code == 2
    assert "must look like 4x64" in capsys.readouterr().err


def test_attention_needs_a_2d_shape(capsys):
    code, _, err = emit(capsys, "attention", "--shape", "2x4x8")
    assert code == 2 and "attention takes a 2-d --shape" in err


def test_unknown_function_is_a_usage_error(capsys):
    with pytest.raises(SystemExit):
        parity(["emit", "conv2d"])
    assert "invalid choice" in capsys.readouterr().err


def _gpu_toolchain_reason() -> str | None:
    try:
        from compiler.gpu_toolchain import find_toolchain
        find_toolchain()
    except Exception as err:  # no ptxas/libdevice on this machine
        return f"no CUDA toolchain: {err}"
    return None


@pytest.mark.skipif(_gpu_toolchain_reason() is not None, reason=str(_gpu_toolchain_reason()))
def test_ptx_stage_for_a_chip(capsys):
    code, out, err = emit(capsys, "softmax", "--stage", "ptx", "--target", "gpu", "--chip", "sm_80")
    assert code == 0, err
    assert ".target sm_80" in out and ".entry" in out
    code, _, err = emit(capsys, "gelu", "--stage", "ptx", "--target", "gpu", "--chip", "gpu9000")
    assert code == 2 and err.startswith("parity emit: error: GPU chip 'gpu9000' is not an NVIDIA architecture LLVM knows")


@pytest.mark.parametrize("function", ["softmax", "feedforward", "attention"])
def test_every_op_is_located(capsys, function):
    """No op, region argument or function argument falls back to a position in the IR text itself."""
    for stage in ("tensor", "optimized"):
        code, out, err = emit(capsys, function, "--stage", stage)
        assert code == 0, err
        assert '"-":' not in out, stage
        if stage == "tensor":  # every op the tracer emitted, up to the return, names a source line
            body = out.split("func.func @main", 1)[1].split("    return", 1)[0]
            assert "loc(unknown)" not in body


# --------------------------------------------------------------------------- could not run: exit 2


@pytest.mark.parametrize("stage", ["tensor", "optimized", "kernels", "lowered", "ptx"])
def test_an_unknown_chip_is_refused_at_every_gpu_stage(capsys, monkeypatch, stage):
    from compiler.gpu import NVPTX_CHIPS

    monkeypatch.delenv("PARITY_GPU_CHIP", raising=False)
    code, out, err = emit(capsys, "gelu", "--target", "gpu", "--stage", stage, "--chip", "sm_999")
    assert (code, out) == (2, "")
    assert err == (f"parity emit: error: GPU chip 'sm_999' is not an NVIDIA architecture LLVM knows; "
                   f"choose one of {', '.join(NVPTX_CHIPS)}\n")
    monkeypatch.setenv("PARITY_GPU_CHIP", "sm_999")
    code, out, err = emit(capsys, "gelu", "--target", "gpu", "--stage", stage)
    assert (code, out) == (2, "")
    assert err.startswith("parity emit: error: PARITY_GPU_CHIP 'sm_999' is not an NVIDIA architecture LLVM knows;")


def test_a_missing_cuda_toolchain_could_not_run(capsys, monkeypatch):
    from compiler import gpu_toolchain

    monkeypatch.setenv("PARITY_LIBDEVICE", "/nonexistent")
    gpu_toolchain._cached.cache_clear()
    try:
        code, out, err = emit(capsys, "gelu", "--target", "gpu", "--stage", "ptx")
    finally:
        gpu_toolchain._cached.cache_clear()
    assert (code, out) == (2, "")
    assert err == ("parity emit: error: could not build gelu at stage ptx for gpu: ToolchainError: "
                   "PARITY_LIBDEVICE=/nonexistent: no such file (it should name libdevice.10.bc)\n")


def test_out_of_memory_could_not_run(capsys, monkeypatch):
    def exhausted(self, *args):
        raise MemoryError()

    monkeypatch.setattr(compiler.JitFunction, "lower", exhausted)
    code, out, err = emit(capsys, "feedforward", "--shape", "300x7", "--stage", "tensor")
    assert (code, out) == (2, "")
    assert err == ("parity emit: error: out of memory building feedforward at stage tensor for --shape 300x7; "
                   "try a smaller --shape\n")


def test_a_huge_shape_prints_ir_without_allocating_it():
    """x alone would be 40 GB: tracing reads shapes and strides, never values, so emit passes placeholders backed by
    one element."""
    import subprocess
    import sys

    script = ("import resource, sys\n"
              "from harness.cli import main\n"
              "code = main(['emit', 'feedforward', '--shape', '100000x100000', '--stage', 'tensor'])\n"
              "print('maxrss_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, 'code', code)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "tensor<100000x100000xf32>" in proc.stdout and "tensor<100000x400000xf32>" in proc.stdout
    maxrss_kb, code = re.search(r"maxrss_kb (\d+) code (\d+)\n\Z", proc.stdout).groups()
    assert code == "0" and int(maxrss_kb) < 1_000_000, f"peak RSS {int(maxrss_kb) // 1024} MB"
