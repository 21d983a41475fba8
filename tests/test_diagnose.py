"""compiler.diagnose.localize on small functions against NumPy: each op held to its own
rounding allowance, so a fault of a hundred ulps in one op is named with its source line, and
values NumPy also gives (NaN where it gives NaN, infinities) are not divergences."""

from __future__ import annotations

import numpy as np
import pytest

from compiler.diagnose import localize
from compiler.testing import inject_fault


def scaled_sum(x, y):
    z = x * y
    return z + 1.0


def test_a_fault_of_a_hundred_ulps_is_named_with_its_line():
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal(64).astype(np.float32) for _ in range(2))
    assert localize(scaled_sum, (x, y)) is None
    with inject_fault("multiply", 1 + 1e-5):  # about 100 ulps of float32, far below any tensor tolerance
        found = localize(scaled_sum, (x, y))
    assert found is not None and found.op == "multiply"
    assert found.source.endswith(f"tests/test_diagnose.py:{scaled_sum.__code__.co_firstlineno + 1}")


def masked_segments(x, mask):
    runs = np.sum(x * 2, axis=1, where=mask)
    return runs, np.add.reduceat(x, [0, 5, 100], axis=1)


@pytest.mark.parametrize("op", ["masked_sum", "row_sum_from"])
def test_a_fault_in_a_masked_or_segmented_sum_is_named_with_its_line(op):
    # the sums NumPy orders by a mask's runs or reduceat's segments are new primitives: a fault in one (a
    # tenth of a percent: past a sum's length-scaled allowance) is found at its op and line
    rng = np.random.default_rng(4)
    x, mask = rng.standard_normal((8, 300)).astype(np.float32), rng.random((8, 300)) < 0.7
    assert localize(masked_segments, (x, mask)) is None
    with inject_fault(op, 1 + 1e-3):
        found = localize(masked_segments, (x, mask))
    assert found is not None and found.op == op
    line = masked_segments.__code__.co_firstlineno + (1 if op == "masked_sum" else 2)
    assert found.source.endswith(f"tests/test_diagnose.py:{line}")


def test_nan_and_infinities_numpy_also_gives_are_not_divergences():
    x = np.array([-1.0, 0.0, 1.0, np.inf], np.float32)
    with np.errstate(all="ignore"):
        expected = np.log(x) * 2
    assert np.isnan(expected[0]) and np.isinf(expected[1])
    assert localize(lambda v: np.log(v) * 2, (x,)) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_and_matmuls_get_a_length_scaled_allowance(dtype):
    """Order-dependent rounding of a long reduction is not a fault (no false localization)."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((16, 768)) * 100).astype(dtype)
    b = rng.standard_normal((768, 32)).astype(dtype)
    assert localize(lambda p, q: (p @ q).sum(axis=0) + p.sum(), (a, b)) is None


def test_a_fault_that_would_change_nothing_is_refused():
    from compiler.testing import NEVER_FLOAT, check_fault

    for op in ("tanhh", "greater", "argmax", "reduce_any", "isnan"):
        with pytest.raises(ValueError, match=f"cannot inject a fault into {op!r}"):
            check_fault(op)
    check_fault("exp")
    # NumPy's own loops say these ufuncs never return floating point
    for name in NEVER_FLOAT & {n for n in dir(np) if isinstance(getattr(np, n), np.ufunc)}:
        outputs = [t.split("->")[1] for t in getattr(np, name).types]
        assert not any(c in "efdgFDG" for out in outputs for c in out), name


# --------------------------------------------------------------------------- pass bisection

def projected(x, w):
    return np.tanh(x @ w) * 2.0


def _bisection_inputs():
    rng = np.random.default_rng(11)
    x, w = rng.standard_normal((4, 8)).astype(np.float32), rng.standard_normal((8, 5)).astype(np.float32)
    expected = np.tanh(x @ w) * np.float32(2.0)
    return (x, w), lambda out: not np.allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_when_production_is_right_no_step_is_blamed_and_nothing_else_compiles():
    """A result right in production's configuration needs no bisection, even if a configuration
    without BLAS (loops that sum in another order) would land on the other side of a tolerance."""
    from compiler.diagnose import BLAS_STEP, RIGHT, bisect_passes

    args, is_wrong = _bisection_inputs()
    found = bisect_passes(projected, args, is_wrong=is_wrong)
    assert found.steps == [(BLAS_STEP, RIGHT)] and found.introduced_by is None and found.outcome is None


def test_a_fault_in_the_lowering_is_wrong_before_any_optional_step():
    from compiler.diagnose import BLAS_STEP, NO_OPTIONAL_STEP, WRONG, bisect_passes

    args, is_wrong = _bisection_inputs()
    with inject_fault("tanh", 1.01):
        found = bisect_passes(projected, args, is_wrong=is_wrong)
    assert found.steps == [(NO_OPTIONAL_STEP, WRONG), (BLAS_STEP, WRONG)]
    assert (found.introduced_by, found.outcome) == (NO_OPTIONAL_STEP, WRONG)


def test_a_configuration_that_does_not_compile_is_where_the_error_starts():
    """A step whose addition makes MLIR refuse the module introduces a compiler bug too."""
    import sys
    from pathlib import Path
    from compiler.backend import TENSOR_PASSES
    from compiler.diagnose import NO_COMPILE, NO_OPTIONAL_STEP, RIGHT, bisect_passes, pipeline_steps

    sys.path.insert(0, str(Path(__file__).parent / "support"))
    from broken_lowering import concat_past_the_end

    def joined(x, y):
        return np.concatenate([x, y], axis=1)

    x, y = np.ones((2, 3), np.float32), np.ones((2, 2), np.float32)
    with concat_past_the_end():
        found = bisect_passes(joined, (x, y), is_wrong=lambda out: False)
    assert found.steps[0] == (NO_OPTIONAL_STEP, NO_COMPILE) and found.outcome == NO_COMPILE
    assert [step for step, _ in pipeline_steps()][1] == f"{TENSOR_PASSES[0]} (tensor pass 1 of 5)"
    assert RIGHT not in [outcome for _, outcome in found.steps]


def test_a_fault_in_the_blas_substitution_is_found_there(monkeypatch):
    from compiler import backend
    from compiler.diagnose import BLAS_STEP, bisect_passes

    broken = backend._GEMM_SHIM.replace("%one = arith.constant 1.0 : {t}",
                                        "%one = arith.constant 1.0 : {t}\n      %alpha = arith.constant 1.01 : {t}")
    monkeypatch.setattr(backend, "_GEMM_SHIM", broken.replace("%k, %one, %pa", "%k, %alpha, %pa"))
    monkeypatch.setenv("PARITY_NO_DISK_CACHE", "1")  # the cache key knows the shim by its source file
    args, is_wrong = _bisection_inputs()
    found = bisect_passes(projected, args, is_wrong=is_wrong)
    assert found.introduced_by == BLAS_STEP and len(found.steps) == 7
    assert [outcome for _, outcome in found.steps] == ["right"] * 6 + ["wrong"]


def test_each_pipeline_configuration_has_its_own_kernel_cache_key():
    from compiler.backend import CpuPipeline, CpuTarget
    from compiler.diagnose import pipeline_steps
    from compiler.jit import JitFunction

    lowered = JitFunction(projected).lower(*_bisection_inputs()[0])
    keys = [CpuTarget(pipeline).cache_key(lowered) for _, pipeline in pipeline_steps()]
    assert len(set(keys)) == len(keys)
    assert pipeline_steps()[-1][1] == CpuPipeline() and keys[-1] == CpuTarget().cache_key(lowered)


def softened(x):
    return np.tanh(x) * 0.5  # tanh-line


def test_ops_computed_by_numpys_loop_are_held_to_exact_rounding_on_the_cpu():
    """tanh calls NumPy's own loop on the CPU, so a fault of eight ulps (half the C library's sixteen-ulp
    allowance for a transcendental function) is named; without NumPy's loops it is within the allowance."""
    from compiler import backend

    x = np.random.default_rng(6).standard_normal(256).astype(np.float32)
    assert localize(softened, (x,)) is None
    with inject_fault("tanh", 1 + 8 * float(np.finfo(np.float32).eps)):
        found = localize(softened, (x,))
        assert found is not None and found.op == "tanh"
        assert found.source.endswith(f"tests/test_diagnose.py:{softened.__code__.co_firstlineno + 1}")
        backend.numpy_loops_available.cache_clear()
        try:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv(backend.NUMPY_LOOPS_ENV, "0")
                assert localize(softened, (x,)) is None
        finally:
            backend.numpy_loops_available.cache_clear()


def rooted(x):
    y = x.copy()
    np.power.at(y, y > 0.25, 0.5)  # power-at-line
    return y * 0.5


def test_ufunc_at_updates_are_evaluated_per_element_and_held_to_exact_rounding():
    """ufunc.at through a traced mask calls NumPy's loop on each element at stride 0, where its power takes
    its fast paths (x ** 0.5 a square root, within an ulp of its SIMD pow over an array): the localizer
    evaluates the updates so too, and holds them exact on the CPU, so an 8-ulp fault in them is named."""
    x = np.random.default_rng(7).uniform(0.0, 4.0, 512)
    assert localize(rooted, (x,)) is None
    with inject_fault("power", 1 + 8 * float(np.finfo(np.float64).eps)):
        found = localize(rooted, (x,))
    assert found is not None and found.op == "power"
    assert found.source.endswith(f"tests/test_diagnose.py:{rooted.__code__.co_firstlineno + 2}")


def test_the_evaluator_computes_ufunc_at_updates_per_element_as_numpy_does():
    """The localizer's NumPy value of ufunc.at's updates is NumPy's at: each element at stride 0 (x ** 0.5 a
    square root), not its power over the array (its SIMD pow, an ulp off in some elements): the same bits as
    the kernel's, which calls NumPy's loop so."""
    from compiler.diagnose import per_op_values
    from compiler.primitives import PRIMITIVES

    x = np.random.default_rng(7).uniform(0.0, 4.0, 512)
    ops, results, arrays = per_op_values(rooted, (x,))
    values = {n.id: r for n, r in zip(ops, results)}
    node = next(n for n in ops if n.op == "power")
    inputs = [arrays[i.index] if i.op == "input" else i.value if i.op == "const" else values[i.id] for i in node.inputs]
    evaluated = np.asarray(PRIMITIVES["power"].evaluate(node, inputs))
    assert evaluated.dtype == values[node.id].dtype == np.float64
    assert np.array_equal(evaluated.view(np.int64), values[node.id].view(np.int64))
    with np.errstate(all="ignore"):
        assert not np.array_equal(np.power(*inputs).view(np.int64), evaluated.view(np.int64))
