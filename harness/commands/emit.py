"""``parity emit FUNCTION``: print the IR of one of the compiler's library formulas
(``compiler.ops``) specialized on example inputs of a chosen shape and dtype, at one
pipeline stage — tensor, optimized, lowered, or (GPU target) kernels and PTX. The inputs
are placeholders laid out as fresh C arrays but backed by one element (tracing reads shapes, dtypes and
strides, never values), so any --shape is cheap.
Exit 0 with the IR, else 2 ("could not run") with the reason."""

from __future__ import annotations

import argparse
import re
import sys


CPU_STAGES = ("tensor", "optimized", "lowered")
GPU_STAGES = ("tensor", "optimized", "kernels", "lowered", "ptx")
DEFAULT_SHAPE = (4, 64)
DTYPES = ("float16", "float32", "float64")


def placeholder(shape: tuple[int, ...], dtype):
    """A read-only array of ``shape`` with a fresh C array's strides over one element, so a huge --shape costs no
    memory: tracing and lowering read shapes, dtypes and strides, never values (``compiler.jit.trace``). The strides
    are a caller's fresh array's because NumPy's layout decides what the IR computes (the order of float sums, the
    form in which BLAS reads a matmul's operands: a broadcast's zero strides would show another kernel)."""
    import numpy as np

    one = np.zeros(1, dtype)
    strides = tuple(one.itemsize * int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))
    return np.lib.stride_tricks.as_strided(one, shape, strides, writeable=False)


def example_inputs(name: str, shape: tuple[int, ...], dtype):
    """(function, arguments) for a library formula: ``x`` of ``shape``; weights shaped to its last axis."""
    from compiler import ops

    def array(*dims):
        return placeholder(dims, dtype)

    width = shape[-1]
    if name in ("gelu", "softmax"):
        return getattr(ops, name), (array(*shape),)
    if name == "layer_norm":
        return ops.layer_norm, (array(*shape), array(width), array(width))
    if name == "linear":
        return ops.linear, (array(*shape), array(width, width), array(width))
    if name == "feedforward":
        return ops.feedforward, (array(*shape), array(width, 4 * width), array(4 * width), array(4 * width, width), array(width))
    if name == "attention":
        if len(shape) != 2:
            raise ValueError("attention takes a 2-d --shape TxD (sequence length x head width)")
        t = shape[0]
        return ops.attention, (array(*shape), array(*shape), array(*shape), array(t, t))  # the mask is an argument too
    raise AssertionError(name)


FUNCTIONS = ("gelu", "softmax", "layer_norm", "linear", "attention", "feedforward")


def parse_shape(text: str) -> tuple[int, ...]:
    if not re.fullmatch(r"[1-9]\d*(x[1-9]\d*)*", text):
        raise argparse.ArgumentTypeError(f"shape {text!r} must look like 4x64 (positive sizes joined by 'x')")
    return tuple(int(d) for d in text.split("x"))


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("function", choices=FUNCTIONS, metavar="FUNCTION", help=f"one of: {', '.join(FUNCTIONS)}")
    parser.add_argument("--stage", default="optimized", choices=sorted(set(CPU_STAGES + GPU_STAGES), key=GPU_STAGES.index),
                        help="tensor (as traced), optimized (fused linalg on tensors), lowered (LLVM dialect), "
                             "kernels and ptx (GPU target only); default optimized")
    parser.add_argument("--target", default="cpu", choices=("cpu", "gpu"), help="compilation target (default cpu)")
    parser.add_argument("--shape", type=parse_shape, default=DEFAULT_SHAPE,
                        help="shape of the main input x, e.g. 4x64 (default); weights are shaped to match its last axis")
    parser.add_argument("--dtype", default="float32", choices=DTYPES, help="dtype of every example input (default float32)")
    parser.add_argument("--chip", default=None, help="NVIDIA architecture for --target gpu (default sm_90)")


def stage_text(args: argparse.Namespace) -> str:
    """The requested stage's IR; raises ValueError with a message for the user."""
    import numpy as np

    from compiler import JitFunction, get_target, located_compile_errors

    if args.stage in ("ptx", "kernels") and args.target != "gpu":
        raise ValueError(f"--stage {args.stage} needs --target gpu")
    if args.chip is not None and args.target != "gpu":
        raise ValueError("--chip applies only to --target gpu")
    # the chip is checked for every stage, before tracing: a bad name must not pass just because --stage tensor
    # never reaches code generation
    target = gpu_target(args.chip) if args.target == "gpu" else get_target("cpu")
    fn, inputs = example_inputs(args.function, args.shape, np.dtype(args.dtype))
    lowered = JitFunction(fn, args.target).lower(*inputs)
    if args.stage == "tensor":
        return lowered.text
    with located_compile_errors(lowered):  # a refused op is named by its source line, not MLIR's dump
        return target.stages(lowered)[args.stage]


def gpu_target(chip: str | None):
    try:
        from compiler.gpu import GpuTarget
    except ImportError as err:
        raise ValueError(f"the GPU target is not available in this build of the compiler ({err})") from None
    target = GpuTarget(chip)
    target.chip  # validates the name (or PARITY_GPU_CHIP) now, with a clear message
    return target


def run(args: argparse.Namespace) -> int:
    # emit has no "failures found" outcome: whatever stops it printing the IR is exit 2, "could not run"
    try:
        text = stage_text(args)
    except ValueError as err:
        print(f"parity emit: error: {err}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"parity emit: error: out of memory building {args.function} at stage {args.stage} for --shape "
              f"{'x'.join(map(str, args.shape))}; try a smaller --shape", file=sys.stderr)
        return 2
    except Exception as err:  # a missing CUDA toolchain, a pass failure: say what failed, not a traceback
        kind = type(err).__name__
        print(f"parity emit: error: could not build {args.function} at stage {args.stage} for {args.target}: "
              f"{kind}: {err}", file=sys.stderr)
        return 2
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return 0
