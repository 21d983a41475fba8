"""The fuzzing machinery itself: NaN-aware comparison, JSON round trips, the checker
catching a miscompiled op (fault injection), graph generation validity, shrinking to
a minimal corpus entry, crash isolation, and the `parity fuzz` command."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from compiler import opinfo as oi
from compiler.primitives import NUMPY_LOOP_UFUNCS
from compiler.testing import inject_fault
from harness.commands import fuzz as fuzz_cmd
from harness.fuzzing import check, engine
from harness.fuzzing.cases import decode_operand, encode_operand, sample_op_case
from harness.fuzzing.check import SELF_TEST_CRASH, Mismatch, check_case, compare_layout, compare_values, numpy_eval
from harness.fuzzing.graphs import _magnification, exactness, graph_case_parts, run_program, sample_graph_case
from harness.fuzzing.isolate import IsolatedRunner, Outcome


def test_compare_values_is_nan_aware_and_strict_on_dtype_and_shape():
    e = np.array([1.0, np.nan, np.inf, -np.inf, 0.0], np.float32)
    assert compare_values(e, e.copy(), 0.0, 0.0, "r") == []
    assert compare_values(e, e.astype(np.float64), 0.0, 0.0, "r")[0].startswith("r: dtype float64")
    assert "shape" in compare_values(e, e[:4], 0.0, 0.0, "r")[0]
    for i, wrong in [(1, 1.0), (2, -np.inf), (3, np.nan), (0, np.inf), (0, 1.001)]:
        g = e.copy()
        g[i] = wrong
        assert compare_values(e, g, 1e-4, 0.0, "r"), (i, wrong)
    g = e.copy()
    g[0] = 1.00001
    assert compare_values(e, g, 1e-4, 0.0, "r") == []
    assert compare_values(np.array([3], np.int8), np.array([4], np.int8), 1.0, 1.0, "r")  # ints: exact


def test_compare_layout_holds_a_result_laid_out_otherwise_than_c_to_numpys_strides():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    assert compare_layout(a.T, np.ascontiguousarray(a.T), "r") == []  # C-ordered: claims nothing
    assert compare_layout(np.ascontiguousarray(a.T), a.T, "r") == ["r: compiled result laid out with strides (1, 4) "
                                                                  "(elements, unit axes aside), NumPy's (3, 1)"]
    assert compare_layout(a.T * 2, np.ascontiguousarray(a).T, "r") == []
    assert compare_layout(a[None].transpose(2, 0, 1), np.ascontiguousarray(a.T)[:, None], "r") == []  # unit axis aside
    assert compare_layout(np.float32(2), np.ones((2, 2), np.float32).T, "r")[0].endswith("none (not an array)")


def test_compare_values_tells_a_numpy_scalar_from_a_zero_d_array():
    assert compare_values(np.float64(2.0), np.float64(2.0), 0.0, 0.0, "r") == []
    assert compare_values(np.array(2.0), np.array(2.0), 0.0, 0.0, "r") == []
    assert compare_values(np.float64(2.0), np.array(2.0), 0.0, 0.0, "r") == [
        "r: compiled result is a 0-d array, NumPy gives a NumPy scalar (float64)"]
    assert compare_values(np.array(2.0), np.float64(2.0), 0.0, 0.0, "r") == [
        "r: compiled result is a NumPy scalar (float64), NumPy gives a 0-d array"]
    assert compare_values(np.float64(2.0), np.float64(3.0), 0.0, 0.0, "r")  # values still compared


def test_compare_values_checks_the_sign_of_zero_only_when_asked():
    e = np.array([0.0, -0.0, 1.0], np.float64)
    flipped = np.array([-0.0, -0.0, 1.0], np.float64)
    assert compare_values(e, flipped, 0.0, 0.0, "r") == []
    problems = compare_values(e, flipped, 0.0, 0.0, "r", zero_sign=True)
    assert problems and "first at (0,)" in problems[0]
    assert compare_values(e, e.copy(), 0.0, 0.0, "r", zero_sign=True) == []


def test_exact_elementwise_ops_check_the_sign_of_zero_but_reductions_do_not():
    from harness.fuzzing.check import _defines_zero_sign
    assert _defines_zero_sign(oi.REGISTRY["maximum"]) and _defines_zero_sign(oi.REGISTRY["floor"])
    assert not _defines_zero_sign(oi.REGISTRY["max"]) and not _defines_zero_sign(oi.REGISTRY["logaddexp"])
    assert not _defines_zero_sign(oi.REGISTRY["sort"])
    # NumPy's own loop on the CPU (sin(-0.0) is -0.0 there); libm-grade on other targets
    assert _defines_zero_sign(oi.REGISTRY["sin"]) and oi.REGISTRY["sin"].numpy_loop


def test_ops_computed_by_numpys_loop_are_exact_on_the_cpu_only():
    """exp, power, ... call NumPy's own loop on the CPU (backend.substitute_numpy_loops), so the fuzzer wants
    NumPy's bits there; the GPU (libdevice) keeps the libm-grade tolerance."""
    x = np.linspace(-3, 3, 7)
    exact = check.op_tolerance(oi.REGISTRY["exp"], [x], {}, np.float64)
    assert exact == oi.EXACT.for_dtype(np.float64) and exact[0] == 0.0
    assert check.op_tolerance(oi.REGISTRY["exp"], [x], {}, np.float64, target="gpu") == oi.TRANSCENDENTAL.for_dtype(np.float64)
    assert check.op_tolerance(oi.REGISTRY["logaddexp"], [x, x], {}, np.float64) == oi.TRANSCENDENTAL.for_dtype(np.float64)
    assert ({n for n, i in oi.REGISTRY.items() if i.numpy_loop}
            == set(NUMPY_LOOP_UFUNCS) | {"operator.pow", "power_int", "at.library"})


def test_products_computed_by_numpys_blas_calls_are_exact_on_the_cpu_only():
    """matmul, dot, vecdot, ... make NumPy's own BLAS calls on the CPU (backend._GEMM_SHIM), so the op fuzzer
    wants NumPy's bits there; other targets keep the matmul tolerance, and einsum (NumPy's own unrolled loops,
    which the compiler does not repeat) keeps it everywhere."""
    a, b = np.ones((3, 4)), np.ones((4, 2))
    exact = check.op_tolerance(oi.REGISTRY["matmul"], [a, b], {}, np.float64)
    assert exact == oi.EXACT.for_dtype(np.float64) and exact[0] == 0.0
    rtol, atol = check.op_tolerance(oi.REGISTRY["matmul"], [a, b], {}, np.float64, target="gpu")
    assert rtol == oi.REGISTRY["matmul"].tolerance.for_dtype(np.float64)[0] > 0 and np.all(np.asarray(atol) > 0)
    assert not oi.REGISTRY["einsum"].exact_on_cpu
    assert {n for n, i in oi.REGISTRY.items() if i.numpy_blas} == {
        "matmul", "operator.matmul", "dot", "method.dot", "tensordot", "inner", "vdot", "vecdot", "matvec", "vecmat",
        "vecdot_axis", "correlate", "convolve"}


def test_graph_values_whose_zero_sign_numpy_leaves_open_are_not_exact():
    """A float max (or sort) of +0.0 and -0.0 is not bit-exact, so no sign-reading op (signbit, a
    comparison) is given it; an integer max is exact."""
    x = np.array([[0.0, -0.0], [-0.0, 0.0]])
    case = {"kind": "graph", "inputs": [encode_operand(x)["array"], encode_operand(x.astype(np.int8))["array"]],
            "outputs": [1, 3], "nodes": [
                {"op": "max", "args": [{"input": 0}], "params": {"axis": 1, "keepdims": False}, "item": None},
                {"op": "negative", "args": [{"node": 0}], "params": {}, "item": None},
                {"op": "max", "args": [{"input": 1}], "params": {"axis": 1, "keepdims": False}, "item": None},
                {"op": "negative", "args": [{"node": 2}], "params": {}, "item": None}]}
    from harness.fuzzing.cases import decode_array
    values = numpy_eval(lambda: run_program(case, [decode_array(a) for a in case["inputs"]]))
    assert exactness(case, values) == [False, False, True, True]


def test_graph_values_holding_an_invalid_operations_nan_are_not_exact():
    """0/0 of exact operands is a NaN whose sign IEEE leaves open (x86's -nan, MLIR's folded +nan: seed 1234), so
    no sign-reading op is given it; 1/1 of the same operands stays exact."""
    x = np.arange(4, dtype=np.int32)
    case = {"kind": "graph", "inputs": [encode_operand(x)["array"]], "outputs": [2, 4], "nodes": [
        {"op": "not_equal", "args": [{"input": 0}, {"input": 0}], "params": {}, "item": None},
        {"op": "operator.truediv", "args": [{"node": 0}, {"python": "bool", "value": False}], "params": {}, "item": None},
        {"op": "negative", "args": [{"node": 1}], "params": {}, "item": None},
        {"op": "logical_not", "args": [{"node": 0}], "params": {}, "item": None},
        {"op": "operator.truediv", "args": [{"node": 3}, {"python": "bool", "value": True}], "params": {}, "item": None}]}
    from harness.fuzzing.cases import decode_array
    values = numpy_eval(lambda: run_program(case, [decode_array(a) for a in case["inputs"]]))
    assert np.isnan(values[2]).all() and (values[4] == 1.0).all()
    assert exactness(case, values) == [True, False, False, True, True]


@pytest.mark.parametrize("value", [np.float32(-0.0), np.float64(np.nan), np.uint64(2**64 - 1), 1.5, -7, True,
                                   float("inf"), np.array([[np.nan, -0.0]], np.float32), np.array([True, False])])
def test_operands_round_trip_through_json(value):
    back = decode_operand(json.loads(json.dumps(encode_operand(value))))
    assert type(back) is type(value) or (isinstance(value, np.ndarray) and isinstance(back, np.ndarray))
    a, b = np.asarray(value), np.asarray(back)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("layout, strides", [
    ({"order": [1, 0], "steps": [1, 1]}, (1, 3)),        # a transpose's memory: Fortran order
    ({"order": [0, 1], "steps": [-1, 2]}, (-4, 2)),      # rows from the end, every other column
    ({"order": [1, 0], "steps": [3, -2]}, (3, -18)),
])
def test_an_array_is_decoded_laid_out_as_its_case_says(layout, strides):
    """A case may hand its arrays over as views (``cases.laid_out``): the values and dtype are the encoded
    ones, the strides (in elements) those of NumPy's own transpose and slices of that memory."""
    a = np.arange(6, dtype=np.int16).reshape(3, 2) - 2
    back = decode_operand(json.loads(json.dumps(encode_operand(a, layout))))
    assert back.dtype == np.int16 and back.shape == (3, 2) and (back == a).all()
    assert tuple(s // back.itemsize for s in back.strides) == strides
    memory = np.empty([(3, 2)[i] * abs(layout["steps"][i]) for i in layout["order"]], np.int16)
    numpys = memory.transpose(np.argsort(layout["order"]))[::layout["steps"][0], ::layout["steps"][1]]
    assert back.strides == numpys.strides
    with pytest.raises(ValueError, match="does not fit an array of 2 axes"):
        decode_operand(encode_operand(a, {"order": [0], "steps": [1]}))


def test_fuzz_cases_hand_over_views_as_well_as_fresh_arrays():
    """Op and graph cases draw a layout for each array operand they pass as an argument (not for folded
    ones, which are constants of the trace and C-contiguous), and the checkers compute NumPy's values and
    the compiled ones from those views: a NumPy sum of a transposed float32 array adds in memory order."""
    from harness.fuzzing.cases import decode_array
    op_layouts, graph_layouts = set(), set()
    for seed in range(40):
        case = sample_op_case(oi.RandomChooser(seed), oi.REGISTRY["sum"])
        for operand in map(decode_operand, case["operands"]):
            if isinstance(operand, np.ndarray) and operand.ndim:
                op_layouts.add(operand.flags.c_contiguous)
        case = sample_graph_case(oi.RandomChooser(seed), 2, 6)
        for a in case["inputs"]:
            x = decode_array(a)
            if x.ndim:
                graph_layouts.add((bool(case.get("folded")), x.flags.c_contiguous))
    assert op_layouts == {True, False}
    assert graph_layouts == {(False, True), (False, False), (True, True)}
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((2000, 3)) * 1e4).astype(np.float32)
    case = {"kind": "op", "op": "sum", "params": {"axis": 0, "dtype": None, "keepdims": False},
            "operands": [encode_operand(x, {"order": [1, 0], "steps": [1, 1]})]}
    transposed = np.ascontiguousarray(x.T).T
    assert not (np.sum(transposed, axis=0) == np.sum(x, axis=0)).all()  # the layout decides NumPy's bits
    fn, arguments, problems_of = check.op_case_parts(case)
    assert arguments[0].strides == transposed.strides
    assert not problems_of(np.sum(transposed, axis=0)) and problems_of(np.sum(x, axis=0))
    check_case(case)


def test_checker_catches_a_miscompiled_op():
    case = sample_op_case(oi.RandomChooser(0), oi.REGISTRY["exp"])
    case["operands"] = [encode_operand(np.linspace(-2, 2, 7, dtype=np.float32))]
    check_case(case)
    with inject_fault("exp", 1.001):
        with pytest.raises(Mismatch, match="elements differ"):
            check_case(case)


def test_graphs_are_valid_by_construction():
    for s in range(12):
        case = sample_graph_case(oi.RandomChooser(s), 2, 30)
        assert 1 <= len(case["nodes"]) <= 30
        json.loads(json.dumps(case))  # JSON-able as it is
        from harness.fuzzing.cases import decode_array
        values = numpy_eval(lambda: run_program(case, [decode_array(a) for a in case["inputs"]]))
        assert len(values) == len(case["nodes"]) and case["outputs"]
        assert len(exactness(case, values)) == len(case["nodes"])


def test_graphs_never_take_the_truth_value_of_an_inexact_float():
    """logical_or(e, e) of a cancelling float difference is e != 0: NumPy's 0.0 may be an ulp in the
    compiled program (seed 1209: sinh of two equal constants, one folded by MLIR, one computed as the
    kernel ran), so the logical ops, like comparisons, only take exact operands."""
    from harness.fuzzing.cases import decode_array
    from harness.fuzzing.graphs import DISCONTINUOUS
    logical = {"logical_and", "logical_or", "logical_xor", "logical_not"}
    assert logical <= DISCONTINUOUS
    seen = 0
    for s in range(300):
        case = sample_graph_case(oi.RandomChooser(2000 + s), 2, 30)
        values = numpy_eval(lambda: run_program(case, [decode_array(a) for a in case["inputs"]]))
        exact = exactness(case, values)
        for node in case["nodes"]:
            if node["op"] not in logical:
                continue
            seen += 1
            for ref in node["args"]:
                if "node" in ref and np.asarray(values[ref["node"]]).dtype.kind == "f":
                    assert exact[ref["node"]], node
    assert seen > 10


def test_graphs_never_convert_a_float_to_an_integer_dtype_inside_an_op():
    """sum(x, dtype=int64) of a computed float is astype(int64) of it: undefined for NaN and infinities,
    and a last-ulp difference moves it across an integer, so the builder does not propose it (a graph of
    seed 1112 failed on one)."""
    from harness.fuzzing.cases import decode_array
    seen = 0
    for s in range(150):
        case = sample_graph_case(oi.RandomChooser(1000 + s), 2, 30)
        values = numpy_eval(lambda: run_program(case, [decode_array(a) for a in case["inputs"]]))
        for node in case["nodes"]:
            dtype = node["params"].get("dtype")
            if dtype is None or not node["args"] or "input" not in node["args"][0] and "node" not in node["args"][0]:
                continue
            ref = node["args"][0]
            src = decode_array(case["inputs"][ref["input"]]) if "input" in ref else values[ref["node"]]
            if isinstance(src, (list, tuple)):
                continue
            seen += 1
            assert not (np.asarray(src).dtype.kind == "f" and np.dtype(dtype).kind in "iu"), node
    assert seen > 20


def test_graph_checker_catches_a_fault_inside_a_fused_chain():
    x = np.linspace(-1, 1, 12, dtype=np.float64).reshape(3, 4)
    case = {"kind": "graph", "inputs": [encode_operand(x)["array"]], "outputs": [2], "nodes": [
        {"op": "tanh", "args": [{"input": 0}], "params": {}, "item": None},
        {"op": "multiply", "args": [{"node": 0}, {"python": "float", "value": "2.0"}], "params": {}, "item": None},
        {"op": "sum", "args": [{"node": 1}], "params": {"axis": 1, "keepdims": True}, "item": None},
    ]}
    check_case(case)
    with inject_fault("tanh", 1.01):
        with pytest.raises(Mismatch, match="node 2"):
            check_case(case)


def test_graph_checker_forgives_order_dependent_overflow_downstream_but_not_finite_errors():
    """Fuzzer finding: a float32 sum near 3.4e38 overflows to inf or NaN (inf + -inf) depending on
    NumPy's pairwise order, and that reaches a float64 add downstream; only non-finite elements
    there are forgiven, a finite difference is still caught."""
    big = np.float32(3.0e38)
    x = np.array([[big, big, 1], [big, -big, 2], [-big, -big, 3]], np.float32)  # column sums: inf/nan-prone, finite
    y = np.zeros(3, np.float64)
    case = {"kind": "graph", "inputs": [encode_operand(x)["array"], encode_operand(y)["array"]], "outputs": [1], "nodes": [
        {"op": "sum", "args": [{"input": 0}], "params": {"axis": 0, "keepdims": False}, "item": None},
        {"op": "add", "args": [{"node": 0}, {"input": 1}], "params": {}, "item": None},
    ]}
    check_case(case)
    with inject_fault("add", 2.0):  # finite results off by a factor of two
        with pytest.raises(Mismatch, match="node 1"):
            check_case(case)


def test_magnification_is_the_ops_condition_beyond_the_magnitudes_involved():
    assert 180 < _magnification("tan", np.array([0.3, 1.5626])) < 200  # 1.5626 is 0.008 from tan's pole
    assert _magnification("tan", np.array([0.3, -1.0])) < 2.5  # (1 + tan(1)**2) / tan(1)
    assert _magnification("exp", np.array([-2.0, 30.0])) == pytest.approx(30.0)
    assert _magnification("arcsin", np.array([0.5, 1.0])) == np.inf
    assert _magnification("sin", np.array([1.0e3])) == 1.0  # not magnifying: not in the table
    assert _magnification("tan", np.array([1, 2], np.int64)) == 1.0


def test_graph_tolerance_follows_tan_near_its_pole_but_still_catches_a_fault():
    """Seed 1136: tan of a matmul's 1.5626 (0.008 from the pole) magnified the matmul's last-ulp difference from
    BLAS 190-fold, past a tolerance that assumed no magnification. (A matmul is NumPy's BLAS call, exact, since;
    logaddexp's rounded value stands in for it here.) The tolerance is scaled by the magnification, and only
    there: a 1e-6 relative fault in that tan is still caught."""
    a = np.array([[1.5626 - np.log(2.0)]])  # logaddexp(a, a) = a + log 2 = 1.5626, rounded
    case = {"kind": "graph", "inputs": [encode_operand(a)["array"]], "outputs": [1, 2],
            "nodes": [{"op": "logaddexp", "args": [{"input": 0}, {"input": 0}], "params": {}, "item": None},
                      {"op": "tan", "args": [{"node": 0}], "params": {}, "item": None},
                      {"op": "sin", "args": [{"node": 0}], "params": {}, "item": None}]}
    _, inputs, problems_of = graph_case_parts(case)
    near_pole = np.logaddexp(a, a)
    want = [np.tan(near_pole), np.sin(near_pole)]
    ulp_off = near_pole * (1 + 2 * np.finfo(np.float64).eps)  # logaddexp two ulps off, as another libm may be
    assert not problems_of([np.tan(ulp_off), np.sin(ulp_off)])
    assert problems_of([want[0] * (1 + 1e-6), want[1]])
    assert problems_of([want[0], want[1] * (1 + 1e-11)])  # sin's tolerance is not widened
    check_case(case)
    with inject_fault("tan", 1 + 1e-6):
        with pytest.raises(Mismatch, match="node 1"):
            check_case(case)


def test_folded_cases_are_drawn_for_elementwise_ops_only_and_fold_to_constants():
    """A folded case gives every array operand as one value repeated, as a constant of the trace, so MLIR
    computes the op at compile time: the optimized kernel has no math op left, only the folded value. (But
    for the ufuncs whose values are NumPy's loop's on the CPU, primitives.NUMPY_LOOP_UFUNCS: a call of
    that loop, which no folder sees.)"""
    import compiler
    from harness.fuzzing.cases import FOLDABLE_FAMILIES
    from harness.fuzzing.check import _case_function
    profiles = {}
    for seed in range(300):
        for name in ("arctan2", "sum"):
            case = sample_op_case(oi.RandomChooser(seed), oi.REGISTRY[name])
            profiles.setdefault(name, set()).add(bool(case.get("folded")))
            if case.get("folded"):
                operands = [decode_operand(o) for o in case["operands"]]
                assert all(np.ndim(x) == 0 or np.size(x) == 0 or x.tobytes() == np.full_like(x, x.flat[0]).tobytes()
                           for x in operands)  # one value repeated, bit for bit
    assert profiles == {"arctan2": {False, True}, "sum": {False}}
    assert oi.REGISTRY["arctan2"].family in FOLDABLE_FAMILIES
    case = {"kind": "op", "op": "logaddexp", "params": {}, "folded": True,
            "operands": [encode_operand(np.zeros(3)), encode_operand(np.full(3, -0.0))]}
    fn, arguments = _case_function(case, oi.REGISTRY["logaddexp"], [decode_operand(o) for o in case["operands"]], {})
    optimized = compiler.emit(fn, *arguments, stage="optimized")
    assert "math." not in optimized and "func.call" not in optimized
    assert "arith.constant 0.69314718055994529 : f64" in optimized, optimized  # log(2)
    check_case(case)
    case = {"kind": "op", "op": "arctan2", "params": {}, "folded": True,
            "operands": [encode_operand(np.zeros(3)), encode_operand(np.full(3, -0.0))]}
    fn, arguments = _case_function(case, oi.REGISTRY["arctan2"], [decode_operand(o) for o in case["operands"]], {})
    optimized = compiler.emit(fn, *arguments, stage="optimized")
    assert "call @parity_numpy_ufunc_" in optimized and 'parity.numpy_loop = "arctan2/float64"' in optimized
    check_case(case)  # C's atan2(+0, -0) = pi; MLIR's folder once made it NaN (seed 1136)


def test_graph_tolerance_of_a_variance_is_the_magnitude_of_what_it_sums():
    """Seed 1140: the variance of sixteen equal int64 values near 3.2e18 is 0 in NumPy (its pairwise sum is
    exact), 512**2 from a sequential sum (the mean one ulp off). The CPU sums in NumPy's order, so of exact
    inputs the variance is held to NumPy's bits; of inexact ones (logaddexp's: x + log 2, rounded) a node's atol
    scales with its registry scale (the squares a variance sums), not only the magnitudes on its path."""
    x = np.full((4, 4), 3158848179424609119, np.int64)
    var = {"op": "method.var", "args": [{"input": 0}], "params": {"axis": None, "dtype": None, "keepdims": True},
           "item": None}
    case = {"kind": "graph", "inputs": [encode_operand(x)["array"]], "outputs": [0], "nodes": [var]}
    _, _, problems_of = graph_case_parts(case)
    assert problems_of([np.array([[512.0**2]])]) and not problems_of([np.array([[0.0]])])
    check_case(case)
    inexact = {"kind": "graph", "inputs": [encode_operand(x.astype(np.float64))["array"]], "outputs": [1], "nodes": [
        {"op": "logaddexp", "args": [{"input": 0}, {"input": 0}], "params": {}, "item": None},
        {**var, "args": [{"node": 0}]}]}
    _, _, problems_of = graph_case_parts(inexact)
    assert not problems_of([np.array([[512.0**2]])])
    assert problems_of([np.array([[1e26]])])  # far beyond rounding of squares near 1e37
    check_case(inexact)


def test_folded_programs_take_their_inputs_as_constants():
    """Some random programs are drawn folded: each input one value repeated, given as a constant, so MLIR
    folds the program where it can (seed 1136's bug, atan2 of x ^ x: the xor folds away, and atan2 of the
    folded zeros is NumPy's loop on the CPU, primitives.NUMPY_LOOP_UFUNCS)."""
    import compiler
    cases = [sample_graph_case(oi.RandomChooser(seed), 2, 6) for seed in range(60)]
    folded = [case for case in cases if case.get("folded")]
    assert 0 < len(folded) < len(cases)
    for case in folded:
        for x in map(decode_operand, ({"array": a} for a in case["inputs"])):
            assert x.size == 0 or x.tobytes() == np.full_like(x, x.flat[0]).tobytes()
    case = {"kind": "graph", "folded": True, "inputs": [encode_operand(np.full(3, -7, np.int64))["array"]],
            "outputs": [1], "nodes": [
                {"op": "bitwise_xor", "args": [{"input": 0}, {"input": 0}], "params": {}, "item": None},
                {"op": "arctan2", "args": [{"node": 0}, {"node": 0}], "params": {}, "item": None}]}
    fn, arguments, problems_of = graph_case_parts(case)
    optimized = compiler.emit(fn, *arguments, stage="optimized")
    assert "arith.xori" not in optimized and "call @parity_numpy_ufunc_" in optimized
    check_case(case)


class _FakeRunner:
    """Fails op cases whose first operand has a last axis of 3 or more."""

    def __init__(self):
        self.runs = 0

    def run(self, case):
        self.runs += 1
        if case["kind"] == "op":
            a = decode_operand(case["operands"][0])
            if np.ndim(a) >= 1 and np.shape(a)[-1] >= 3:
                return Outcome("fail", "last axis too long")
        return Outcome("pass")


def test_failures_are_shrunk_and_written_to_the_corpus(tmp_path):
    profile = engine.Profile(examples_per_op=30, graph_examples=0, seconds=60, shrink_seconds=30)
    summary = engine.fuzz(profile, base_seed=4, corpus=tmp_path, ops=["negative"], runner=_FakeRunner())
    assert len(summary.failures) == 1
    f = summary.failures[0]
    entry = json.loads(open(f.reproducer).read())
    assert entry["op_or_graph"] == "negative" and entry["message"] == "last axis too long"
    shrunk = decode_operand(entry["case"]["operands"][0])
    assert shrunk.shape == (3,)  # minimal: one axis of exactly 3
    assert not list(tmp_path.glob(".*"))  # written atomically: no temporary left


def test_a_native_crash_is_a_finding_and_the_runner_goes_on():
    with IsolatedRunner(timeout=120) as runner:
        crash = runner.run({"kind": SELF_TEST_CRASH})
        assert crash.status == "crash" and "SIGSEGV" in crash.message
        ok = runner.run(sample_op_case(oi.RandomChooser(1), oi.REGISTRY["add"]))
        assert ok.status == "pass", ok.message


def _args(**kw):
    parser = argparse.ArgumentParser()
    fuzz_cmd.configure(parser)
    argv = []
    for k, v in kw.items():
        flag = "--" + k.replace("_", "-")
        argv += [flag] if v is True else [flag, str(v)]
    return parser.parse_args(argv)


def test_fuzz_command_json_line(capsys, tmp_path):
    rc = fuzz_cmd.run(_args(ops="add,sum", examples=2, graph_examples=2, seconds=120, json=True, corpus=tmp_path))
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0
    assert set(out) == {"ops_covered", "examples", "graph_examples", "failures"}
    assert out["ops_covered"] == 2 and out["examples"] == 4 and out["graph_examples"] == 2 and out["failures"] == []


def test_the_summary_counts_coverage_against_the_selected_ops(monkeypatch):
    from rich.console import Console

    def fake_fuzz(profile, seed, corpus, ops, progress=None):
        return engine.Summary(ops_covered=["add"], examples=3)  # sum: not reached

    monkeypatch.setattr(engine, "fuzz", fake_fuzz)
    console = Console(record=True, width=200, force_terminal=False)
    assert fuzz_cmd.run(_args(ops="add,sum"), console=console) == 0
    text = console.export_text()
    assert "ops covered     1 of 2 selected" in text
    assert "not reached in this budget: sum\n" in text


def test_fuzz_command_exits_1_on_failures(capsys, monkeypatch):
    def fake_fuzz(profile, seed, corpus, ops, progress=None):
        s = engine.Summary(ops_covered=["add"], examples=1)
        s.failures.append(engine.Finding("add", "tests/fuzz_corpus/x.json", "[fail] differs", "fail"))
        return s
    monkeypatch.setattr(engine, "fuzz", fake_fuzz)
    assert fuzz_cmd.run(_args(json=True)) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["failures"] == [{"op_or_graph": "add", "reproducer": "tests/fuzz_corpus/x.json", "message": "[fail] differs"}]


def test_fuzz_command_rejects_unknown_ops_and_replays_files(capsys, tmp_path):
    assert fuzz_cmd.run(_args(ops="nope")) == 2
    assert "unknown op" in capsys.readouterr().err
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"op_or_graph": "add", "case": sample_op_case(oi.RandomChooser(2), oi.REGISTRY["add"])}))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"op_or_graph": "crash", "case": {"kind": SELF_TEST_CRASH}}))
    assert fuzz_cmd.run(_args(replay=good, json=True)) == 0
    capsys.readouterr()
    assert fuzz_cmd.run(_args(replay=bad, json=True)) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["failures"][0]["message"].startswith("[crash]")


# ------------------------------------------------------------------ corpus robustness

def _write(path, text):
    path.write_text(text)
    return path


def test_corpus_temporaries_are_never_entries_and_stale_ones_are_swept(tmp_path):
    import os
    import time

    good = _write(tmp_path / "op-add-1.json", json.dumps({"case": {"kind": "op", "op": "add"}}))
    stale = _write(tmp_path / ".tmp-abcd.json", '{"ca')  # a writer killed mid-write, under the old naming
    live = _write(tmp_path / ".op-add-2.json.x1y2.tmp", "")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    assert engine.corpus_files(tmp_path) == [good]
    assert [p for p, _ in engine.load_corpus(tmp_path)] == [good]
    assert engine.sweep_stale_corpus_temporaries(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".op-add-2.json.x1y2.tmp", "op-add-1.json"]
    assert live.exists()


def test_corpus_entries_respect_the_umask(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        path = engine.write_corpus_entry(tmp_path, {"kind": "op", "op": "add", "params": {}, "operands": []},
                                         "add", Outcome("fail", "differs"), "test")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left


BAD_ENTRIES = {
    "truncated": ('{"case": {"kind": "op", "op"', "not valid JSON (Expecting ':' delimiter: line 1 column 29 (char 28)); "
                                                 "truncated or not a corpus file"),
    "garbage": ("\x00\x01garbage", "not valid JSON (Expecting value: line 1 column 1 (char 0)); truncated or not a corpus file"),
    "empty-object": ("{}", "not a corpus entry: no 'case' object with a 'kind'"),
    "list": ("[1]", "not a corpus entry (a JSON object with a 'case'), got a JSON list"),
    "unknown-op": ('{"op_or_graph": "nosuch", "case": {"kind": "op", "op": "nosuch", "params": {}, "operands": []}}',
                   "corpus entry names unknown op 'nosuch'; see `parity fuzz --list-ops`"),
    "unknown-graph-op": ('{"case": {"kind": "graph", "inputs": [], "nodes": [{"op": "add"}, {"op": "nosuch"}]}}',
                         "corpus entry names unknown op 'nosuch'; see `parity fuzz --list-ops`"),
}


@pytest.mark.parametrize("kind", list(BAD_ENTRIES))
@pytest.mark.parametrize("given", ["file", "directory"])
def test_a_bad_corpus_file_could_not_run_and_is_named(kind, given, tmp_path, capsys, monkeypatch):
    text, reason = BAD_ENTRIES[kind]
    bad = _write(tmp_path / f"{kind}.json", text)

    class NoRunner:  # nothing may run: a bad entry is found before any case
        def __init__(self, *a, **kw):
            raise AssertionError("a case ran")

    monkeypatch.setattr("harness.fuzzing.isolate.IsolatedRunner", NoRunner)
    assert fuzz_cmd.run(_args(replay=bad if given == "file" else tmp_path, json=True)) == 2
    captured = capsys.readouterr()
    assert captured.err == f"parity fuzz: error: {bad}: {reason}\n" and captured.out == ""


def _fuzz_must_not_start(monkeypatch):
    def fuzz(*args, **kwargs):
        raise AssertionError("fuzzing started")
    monkeypatch.setattr(engine, "fuzz", fuzz)


def test_an_unusable_corpus_is_refused_before_fuzzing(tmp_path, capsys, monkeypatch):
    _fuzz_must_not_start(monkeypatch)
    plain = _write(tmp_path / "plain", "")
    assert fuzz_cmd.run(_args(corpus=plain, ops="add", json=True)) == 2
    assert capsys.readouterr().err == f"parity fuzz: error: --corpus {plain}: {plain} is not a directory (or pass --no-corpus)\n"
    assert fuzz_cmd.run(_args(corpus=plain / "sub", ops="add", json=True)) == 2
    assert capsys.readouterr().err == (f"parity fuzz: error: --corpus {plain / 'sub'}: cannot write into {plain / 'sub'}: "
                                       "Not a directory (or pass --no-corpus)\n")


@pytest.mark.parametrize("argv, message", [
    ({"seconds": 0}, "--seconds must be a positive number of seconds, got 0"),
    ({"seconds": "nan"}, "--seconds must be a positive number of seconds, got nan"),
    ({"seconds": "inf"}, "--seconds must be a positive number of seconds, got inf"),
    ({"examples": 0, "graph_examples": 0}, "--examples 0 and --graph-examples 0 leave nothing to test"),
    ({"ops": ","}, "--ops ',' names no op; leave it out to fuzz every op"),
    ({"ops": " , "}, "--ops ' , ' names no op; leave it out to fuzz every op"),
])
def test_a_run_that_would_test_nothing_is_refused(argv, message, capsys, monkeypatch):
    _fuzz_must_not_start(monkeypatch)
    assert fuzz_cmd.run(_args(no_corpus=True, json=True, **argv)) == 2
    assert capsys.readouterr().err == f"parity fuzz: error: {message}\n"


def test_list_ops_json_is_one_line_of_registry_rows(capsys):
    assert fuzz_cmd.run(_args(list_ops=True, json=True)) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    rows = json.loads(out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
    assert [r["name"] for r in rows] == list(oi.REGISTRY)
    add = next(r for r in rows if r["name"] == "add")
    assert add == {"name": "add", "numpy": oi.REGISTRY["add"].numpy_name, "family": oi.REGISTRY["add"].family,
                   "arity": 2, "dtypes": [str(d) for d in oi.REGISTRY["add"].dtypes],
                   "domains": [{"lo": None, "hi": None, "finite_only": False}] * len(oi.REGISTRY["add"].domains),
                   "tolerance_ulps": oi.REGISTRY["add"].tolerance.ulps, "cpu_tolerance_ulps": oi.REGISTRY["add"].tolerance.ulps}
    exp = next(r for r in rows if r["name"] == "exp")  # NumPy's own loop on the CPU: exact there
    assert exp["tolerance_ulps"] == oi.TRANSCENDENTAL.ulps and exp["cpu_tolerance_ulps"] == 0.0


def test_list_ops_piped_never_truncates_names(capsys):
    import io

    from rich.console import Console

    narrow = Console(file=io.StringIO(), width=40)  # not a terminal, as when piped
    assert fuzz_cmd.run(_args(list_ops=True), console=narrow) == 0
    lines = narrow.file.getvalue().splitlines()
    assert lines[0] == "name\tNumPy\tfamily\tarity\tdtypes\tdomain\ttolerance"
    assert [line.split("\t")[0] for line in lines[1:]] == list(oi.REGISTRY)
    assert lines[1].split("\t")[1] == oi.REGISTRY[lines[1].split("\t")[0]].numpy_name


def test_a_failing_case_is_explained_by_the_pipeline_step_that_makes_it_wrong():
    from compiler.diagnose import NO_OPTIONAL_STEP
    from harness.fuzzing.check import explain_case

    case = sample_op_case(oi.RandomChooser(0), oi.REGISTRY["exp"])
    case["operands"] = [encode_operand(np.linspace(-2, 2, 7, dtype=np.float32))]
    assert explain_case(case) is None  # right in every configuration
    with inject_fault("exp", 1.001):
        assert explain_case(case) == NO_OPTIONAL_STEP
    graph = {"kind": "graph", "inputs": [encode_operand(np.linspace(-1, 1, 6).reshape(2, 3))["array"]], "outputs": [1],
             "nodes": [{"op": "tanh", "args": [{"input": 0}], "params": {}, "item": None},
                       {"op": "sum", "args": [{"node": 0}], "params": {"axis": 1, "keepdims": False}, "item": None}]}
    assert explain_case(graph) is None
    with inject_fault("tanh", 1.01):
        assert explain_case(graph) == NO_OPTIONAL_STEP


def test_a_finding_carries_its_explanation_from_the_worker(tmp_path):
    case = sample_op_case(oi.RandomChooser(0), oi.REGISTRY["exp"])

    class Explaining:
        def explain(self, given):
            assert given is case
            return "linalg-fuse-elementwise-ops (tensor pass 3 of 5)"

    found = engine._finding(case, "exp", Outcome("fail", "result: 3 of 7 elements differ"), tmp_path, 0, Explaining())
    assert found.message == ("[fail] result: 3 of 7 elements differ — introduced by: linalg-fuse-elementwise-ops "
                             "(tensor pass 3 of 5)")
    assert json.loads(open(found.reproducer).read())["message"].endswith("introduced by: linalg-fuse-elementwise-ops "
                                                                         "(tensor pass 3 of 5)")
    crashed = engine._finding(case, "exp", Outcome("crash", "signal"), None, 0, Explaining())
    assert crashed.message == "[crash] signal"  # only a value mismatch is bisected
    with IsolatedRunner(timeout=120) as runner:  # the worker side of the protocol: a clean case has nothing to explain
        assert runner.explain(case) is None and runner.run(case).status == "pass"


@pytest.mark.parametrize("status, words", [("crash", "crashed"), ("timeout", "timed out"), ("fail", "failed")])
def test_a_pass_bisection_that_breaks_down_says_so_in_the_finding(monkeypatch, status, words):
    runner = IsolatedRunner()
    monkeypatch.setattr(runner, "run", lambda case: Outcome(status, "what happened"))
    assert runner.explain({"kind": "op"}) == f"unknown: the pass bisection {words} (what happened)"


def test_value_problems_are_told_from_dtype_problems():
    """explain_case bisects only values (a dtype comes from tracing, before any pipeline step runs):
    it tells them apart by VALUES_DIFFER."""
    from harness.fuzzing import check

    case = sample_op_case(oi.RandomChooser(0), oi.REGISTRY["exp"])
    case["operands"] = [encode_operand(np.linspace(-2, 2, 7, dtype=np.float32))]
    case.pop("folded", None)  # the operand as the argument
    fn, inputs, problems_of = check.op_case_parts(case)
    assert problems_of([np.exp(inputs[0]).astype(np.float64)])[0].startswith("result: dtype float64")
    assert check.VALUES_DIFFER in problems_of([np.exp(inputs[0]) * np.float32(2)])[0]


def test_compare_values_holds_floats_to_atol_plus_rtol_times_the_magnitude_of_numpys_value():
    """|got - expected| <= atol + rtol*|expected|, as numpy.isclose(got, expected): the bound uses
    NumPy's value by magnitude (negatives too), and the boundary itself is inside."""
    e = np.array([-4.0, 8.0, 0.0], np.float64)
    # allowed: 0.5 + 0.25*4 = 1.5, 0.5 + 0.25*8 = 2.5, 0.5 (all exact in binary)
    at_bound = np.array([-5.5, 10.5, -0.5])
    assert compare_values(e, at_bound, 0.25, 0.5, "r") == []
    assert np.isclose(at_bound, e, rtol=0.25, atol=0.5).all()
    for i, wrong in [(0, -5.625), (1, 10.625), (2, 0.625)]:
        g = at_bound.copy()
        g[i] = wrong
        problems = compare_values(e, g, 0.25, 0.5, "r")
        assert problems and f"first at ({i},)" in problems[0], (i, wrong)
        assert not np.isclose(g, e, rtol=0.25, atol=0.5)[i]


def test_compare_values_is_exact_on_every_element_of_integers_and_on_shape_with_the_same_size():
    e = np.array([1, 2, 3], np.int32)
    problems = compare_values(e, np.array([1, 5, 3], np.int32), 1.0, 1.0, "r")
    assert len(problems) == 1 and problems[0].startswith("r: 1 of 3 elements differ; first at (1,)")
    square = np.arange(6.0).reshape(2, 3)
    assert compare_values(square, square.reshape(3, 2), 0.0, 0.0, "r") == ["r: shape (3, 2), NumPy gives (2, 3)"]


def test_the_sign_of_zero_is_only_checked_where_both_sides_are_zero():
    """With a tolerance a tiny negative value where NumPy gives +0.0 is an in-tolerance value, not a sign error."""
    e = np.array([0.0, 1.0], np.float64)
    assert compare_values(e, np.array([-1e-30, 1.0]), 0.0, 1e-20, "r", zero_sign=True) == []
    assert compare_values(e, np.array([-0.0, 1.0]), 0.0, 1e-20, "r", zero_sign=True)


def test_a_float16_reduction_is_judged_against_numpy_and_against_float32_accumulation():
    """NumPy's float16 sum along axis 0 rounds after every addition (4,096 ones: 2048); the compiler
    accumulates in float32 and rounds once (4096), NumPy's own answer in float32. Both are accepted
    (the second only through that second reference);
    a value neither gives is not, and an elementwise op gets no second reference."""
    from harness.fuzzing import check

    case = sample_op_case(oi.RandomChooser(0), oi.REGISTRY["sum"])
    case["params"] = {"axis": 0, "keepdims": False, "dtype": None}
    case["operands"] = [encode_operand(np.ones((4096, 2), np.float16))]
    fn, inputs, problems_of = check.op_case_parts(case)
    assert np.sum(inputs[0], axis=0)[0] == 2048
    assert problems_of(np.full(2, 2048, np.float16)) == [] and problems_of(np.full(2, 4096, np.float16)) == []
    assert check.VALUES_DIFFER in problems_of(np.full(2, 8192, np.float16))[0]
    assert check.VALUES_DIFFER in check.compare_values(np.full(2, 2048, np.float16), np.full(2, 4096, np.float16),
                                                       *check.op_tolerance(oi.REGISTRY["sum"], inputs, case["params"],
                                                                           np.float16), "beyond NumPy's tolerance")[0]
    check.check_op_case(case)  # the compiled sum (4096) passes
    x = [np.array([-20.0, 0.0, 11.0], np.float16)]
    assert check._float32_accumulation(oi.REGISTRY["exp"], x, {}, np.exp(x[0])) is None
    assert check._float32_accumulation(oi.REGISTRY["sum"], [x[0].astype(np.float32)], case["params"], np.float32(0)) is None


class _FlipFlopRunner:
    """Fails a case the first time it sees it and passes it after: a compiler whose answer is not stable."""

    def __init__(self):
        self.seen = set()

    def run(self, case):
        key = json.dumps(case, sort_keys=True)
        first = key not in self.seen
        self.seen.add(key)
        return Outcome("fail", "wrong answer") if first else Outcome("pass")


class _FailFromRunner:
    """Fails every case at or above a threshold, as a real bug does."""

    def run(self, case):
        return Outcome("fail", f"n={case['n']}") if case["n"] >= 7 else Outcome("pass")


def _cases():
    from hypothesis import strategies as st
    return st.builds(lambda n: {"kind": "op", "op": "negative", "n": n}, st.integers(0, 1000))


def test_a_case_that_fails_then_passes_is_reported_flaky_not_an_internal_error():
    runs, case, outcome = engine.search(_cases(), 50, 1, _FlipFlopRunner(), deadline=float("inf"), shrink_seconds=60)
    assert case is not None and outcome.failed
    assert outcome.message == "wrong answer (then passed when run again: flaky)"


@pytest.mark.parametrize("shrink_seconds", [0.0, 60.0])
def test_search_out_of_shrinking_time_still_fails_every_case_seen_failing(shrink_seconds):
    # past the shrinking time only failures already seen fail, so Hypothesis's final replay of its smallest
    # one fails again whichever failure was seen last
    runs, case, outcome = engine.search(_cases(), 200, 3, _FailFromRunner(), deadline=float("inf"),
                                        shrink_seconds=shrink_seconds)
    assert case is not None and case["n"] >= 7 and outcome.message == f"n={case['n']}"
    if shrink_seconds:
        assert case["n"] == 7  # shrunk to the threshold
