"""GPT-2 on the compiler: both modes against the same formulas run by NumPy itself,
trace names and dtypes, decoding, input validation and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from compiler.gpt2 import compile_model, load_model
from compiler.gpt2.model import (
    attention_sublayer, embedding, feedforward_sublayer, final_projection, gpt2_fused, numpy_forward, padded_length,
)
from compiler.gpt2.synth import synthesize_checkpoint

PROMPT = "Alan Turing theorized that computers would one day become"
PROMPT_IDS = [36235, 39141, 18765, 1143, 326, 9061, 561, 530, 1110, 1716]
TOL = dict(rtol=3e-4, atol=3e-4)

pytestmark = pytest.mark.xdist_group("gpt2-tiny")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny") / "model"
    synthesize_checkpoint(d, config="tiny", seed=3)
    return load_model(d)


@pytest.fixture(scope="module")
def runners(tiny):
    return {mode: compile_model(tiny, mode) for mode in ("subgraph", "fused")}


def numpy_trace(model, ids):
    """The sublayer formulas evaluated by NumPy alone, unpadded, with the checkpoint's float32 weights."""
    p, n_head = model.params, model.config.n_head
    ids = np.asarray(ids, np.int64)
    trace = {"embedding": embedding(p.wte, p.wpe, ids)}
    x = trace["embedding"]
    for i, b in enumerate(p.blocks):
        x = attention_sublayer(x, b.ln_1.g, b.ln_1.b, b.attn_c_attn.w, b.attn_c_attn.b, b.attn_c_proj.w, b.attn_c_proj.b, n_head)
        trace[f"h.{i}.attention"] = x
        x = feedforward_sublayer(x, b.ln_2.g, b.ln_2.b, b.mlp_c_fc.w, b.mlp_c_fc.b, b.mlp_c_proj.w, b.mlp_c_proj.b)
        trace[f"h.{i}.output"] = x
    trace["logits"] = final_projection(x, np.array([ids.size - 1]), p.ln_f.g, p.ln_f.b, p.wte)[0]
    return trace


def test_tokenizer_gives_the_known_prompt_ids(tiny):
    assert tiny.tokenizer.encode(PROMPT) == PROMPT_IDS


def test_subgraph_trace_matches_numpy_names_dtypes_and_values(tiny, runners):
    expected = numpy_trace(tiny, PROMPT_IDS)
    got = {}
    logits = runners["subgraph"].forward(PROMPT_IDS, trace=got)
    names = ["embedding"] + [f"h.{i}.{k}" for i in range(tiny.config.n_layer) for k in ("attention", "output")] + ["logits"]
    assert list(got) == names
    assert got["embedding"].dtype == np.float32 and expected["embedding"].dtype == np.float32
    for name in names:
        assert got[name].dtype == expected[name].dtype, name
        assert got[name].shape == expected[name].shape, name
        np.testing.assert_allclose(got[name], expected[name], err_msg=name, **TOL)
    assert expected["h.0.attention"].dtype == np.float64  # promotion by the float64 np.sqrt scalar
    np.testing.assert_array_equal(logits, got["logits"])


def test_fused_matches_numpy_forward(tiny, runners):
    trace = {}
    logits = runners["fused"].forward(PROMPT_IDS, trace=trace)
    expected = numpy_forward(tiny, PROMPT_IDS)
    assert list(trace) == ["logits"]
    assert logits.dtype == expected.dtype == np.float64
    assert logits.shape == (tiny.config.vocab_size,)
    np.testing.assert_allclose(logits, expected, **TOL)


def test_fused_function_runs_under_numpy_and_agrees_with_its_compilation(tiny, runners):
    """The traced function is plain NumPy: running it unchanged on arrays gives what the compiled module gives."""
    ids = np.asarray(PROMPT_IDS, np.int64)
    under_numpy = gpt2_fused(ids, np.array([ids.size - 1]), tiny.params, tiny.params.wte, tiny.config.n_head)[0]
    assert under_numpy.dtype == np.float64
    np.testing.assert_allclose(runners["fused"].forward(PROMPT_IDS), under_numpy, **TOL)
    # and the padded form computes the same real row (the causal mask hides the padding)
    padded = np.zeros(padded_length(ids.size, tiny.config.n_ctx), np.int64)
    padded[: ids.size] = ids
    padded_numpy = gpt2_fused(padded, np.array([ids.size - 1]), tiny.params, tiny.params.wte, tiny.config.n_head)[0]
    np.testing.assert_allclose(padded_numpy, under_numpy, **TOL)


def test_both_modes_decode_the_same_tokens_as_numpy(tiny, runners):
    seq = list(PROMPT_IDS)
    expected = []
    for _ in range(4):
        token = int(np.argmax(numpy_forward(tiny, seq)))
        expected.append(token)
        seq.append(token)
    for mode, runner in runners.items():
        assert runner.generate(PROMPT_IDS, 4) == expected, mode


def test_decoding_compiles_a_handful_of_kernels(tiny, runners):
    fused = runners["fused"]
    before = fused.fused_fn.compile_count
    fused.generate(PROMPT_IDS[:3], 10)  # lengths 3..12 -> padded 8 and 16
    assert fused.fused_fn.compile_count - before <= 2


def test_generate_always_produces_the_requested_count(tiny, runners):
    assert len(runners["subgraph"].generate([50256], 5)) == 5
    assert runners["subgraph"].generate([50256], 0) == []


def test_generation_may_fill_the_whole_context(tiny, runners):
    """The reference's bound: prompt + tokens - 1 positions, since the last new token is only
    returned. So a 60-token prompt may get 5 new tokens in a 64-token context, and a full context
    one more."""
    n_ctx = tiny.config.n_ctx
    for runner in runners.values():
        assert len(runner.generate([1] * 60, n_ctx - 60 + 1)) == n_ctx - 60 + 1
        assert len(runner.generate([1] * n_ctx, 1)) == 1


@pytest.mark.parametrize("ids, n, message", [
    ([], 1, "prompt is empty"),
    ([50257], 1, "outside the vocabulary"),
    ([-1], 1, "outside the vocabulary"),
    ([1] * 60, 6, "60 \\+ 6 - 1 = 65 positions .* exceeds the context length 64"),
    ([1] * 65, 0, "exceeds the context length 64"),
    ([1], -1, ">= 0"),
    ([[1, 2]], 1, "1-d"),
])
def test_validation_errors(runners, ids, n, message):
    for runner in runners.values():
        with pytest.raises(ValueError, match=message):
            runner.generate(ids, n)


def test_localize_finds_nothing_in_a_correct_sublayer(tiny, runners):
    runner = runners["subgraph"]
    trace = numpy_trace(tiny, PROMPT_IDS)
    assert runner.localize("h.1.attention", PROMPT_IDS, trace["h.0.output"]) is None


def test_localize_reruns_a_sublayer_at_the_padded_length_the_forward_ran_it_at(tiny, runners):
    """A miscompile that depends on the shape (a square operand, a BLAS path taken by size) must
    show in the re-run as in the forward, which runs every sublayer at the padded length."""
    runner = runners["subgraph"]
    trace = numpy_trace(tiny, PROMPT_IDS)
    rows = padded_length(len(PROMPT_IDS), tiny.config.n_ctx)
    assert rows > len(PROMPT_IDS)
    _, args, _ = runner.sublayer_call("embedding", PROMPT_IDS, None)
    np.testing.assert_array_equal(args[2], PROMPT_IDS + [0] * (rows - len(PROMPT_IDS)))
    for tensor, upstream in (("h.0.attention", "embedding"), ("h.1.output", "h.1.attention"), ("logits", "h.1.output")):
        _, args, _ = runner.sublayer_call(tensor, PROMPT_IDS, trace[upstream])
        assert args[0].shape == (rows, tiny.config.n_embd) and args[0].dtype == trace[upstream].dtype
        np.testing.assert_array_equal(args[0][: len(PROMPT_IDS)], trace[upstream])
        assert not args[0][len(PROMPT_IDS):].any()


def test_rerun_runs_a_sublayers_own_kernel_on_a_given_input(tiny, runners):
    runner = runners["subgraph"]
    trace = numpy_trace(tiny, PROMPT_IDS)
    for tensor, upstream in (("embedding", None), ("h.0.attention", "embedding"), ("h.1.output", "h.1.attention"),
                             ("logits", "h.1.output")):
        got = runner.rerun(tensor, PROMPT_IDS, None if upstream is None else trace[upstream])
        assert got.shape == trace[tensor].shape and got.dtype == trace[tensor].dtype, tensor
        np.testing.assert_allclose(got, trace[tensor], **TOL)


def test_localize_names_the_injected_op_and_its_source_line(tiny, runners):
    from compiler.testing import inject_fault

    runner = compile_model(tiny, "subgraph")
    trace = numpy_trace(tiny, PROMPT_IDS)
    with inject_fault("exp", 1.05):
        found = runner.localize("h.1.attention", PROMPT_IDS, trace["h.0.output"])
    assert found is not None and found["op"] == "exp"
    assert found["source"].endswith("compiler/ops.py:" + str(_line_of("compiler/ops.py", "exp_x = np.exp(")))


@pytest.mark.parametrize("op, needle", [("divide", "np.mean(x, axis=-1, keepdims=True)"), ("reduce_sum", "np.mean(x, axis=-1, keepdims=True)"),
                                        ("matmul", "    return x @ w + b")])
def test_localize_pins_an_offset_far_below_the_tensor_tolerance(tiny, runners, op, needle):
    """An offset of 1e-6 (the harness's tensor tolerance is 3e-4) is still many ulps for the op
    that makes it: each op is held to its own rounding, so the op and its line are named (the first
    faulted op in source order: np.mean divides before layer_norm does), and a
    fault-free sublayer names nothing (sums and matrix products get their length-scaled bound)."""
    from compiler.testing import inject_fault

    runner = compile_model(tiny, "subgraph")
    trace = numpy_trace(tiny, PROMPT_IDS)
    assert runner.localize("h.1.output", PROMPT_IDS, trace["h.1.attention"]) is None
    with inject_fault(op, 1.0, 1e-6):
        found = runner.localize("h.1.output", PROMPT_IDS, trace["h.1.attention"])
    assert found is not None and found["op"] == op
    assert found["source"].endswith("compiler/ops.py:" + str(_line_of("compiler/ops.py", needle)))
    assert found["max_abs_error"] == pytest.approx(1e-6, rel=0.05)


def test_localize_names_an_implicit_cast_with_its_dtypes():
    """The promotion inside concatenate is a cast the source line does not show: its name says it."""
    from compiler.diagnose import localize
    from compiler.testing import inject_fault

    x, y = np.arange(4, dtype=np.float32), np.arange(3, dtype=np.float64)
    with inject_fault("cast", 1.0, 1e-3):
        found = localize(lambda a, b: np.concatenate([a, b]) * 2, (x, y))
    assert (found.op, found.shape, found.dtype) == ("cast float32->float64", (4,), "float64")
    assert found.max_abs_error == pytest.approx(1e-3)


def test_fused_localize_reruns_the_whole_pass_and_names_fused_only_ops(tiny, runners):
    """Fused mode has no sublayers to re-run: its localizer re-runs the whole pass from the token ids,
    so an op only the fused graph has (the heads' 3-d transposes) is named with its line."""
    from compiler.testing import inject_fault

    fused = runners["fused"]
    assert fused.localize("logits", PROMPT_IDS) is None
    with inject_fault("transpose", 1.0, 1e-4):
        found = fused.localize("logits", PROMPT_IDS)
    assert found is not None and found["op"] == "transpose" and len(found["shape"]) == 3
    assert found["sublayer"] == "h.0.attention"  # the first block's heads are the first transposes
    assert found["source"].endswith("compiler/gpt2/model.py:" + str(_line_of("compiler/gpt2/model.py", "q = q.reshape(T, n_head, d).transpose(1, 0, 2)")))
    with pytest.raises(ValueError, match="only the logits"):
        fused.localize("h.0.attention", PROMPT_IDS)


def _line_of(path, needle):
    import compiler
    from pathlib import Path

    text = (Path(compiler.__file__).parent.parent / path).read_text().splitlines()
    return next(i + 1 for i, line in enumerate(text) if needle in line)


def test_generate_cli_json(tiny):
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "generate", PROMPT, "--tokens", "3", "--mode", "fused",
         "--model", str(tiny.checkpoint.path), "--json"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    line = json.loads(out.stdout.strip().splitlines()[-1])
    assert line["input_ids"] == PROMPT_IDS and len(line["output_ids"]) == 3 and line["mode"] == "fused"
    assert line["checkpoint"] == {"name": tiny.checkpoint.name, "sha256": tiny.checkpoint.sha256}
    assert line["completion"] == tiny.tokenizer.decode(line["output_ids"])


def test_build_only_warms_the_disk_cache_for_every_decoding_step(tiny, tmp_path, monkeypatch):
    import compiler

    monkeypatch.setenv("PARITY_CACHE", str(tmp_path))
    runner = compile_model(tiny, "subgraph")
    with compiler.build_only() as log:
        out = runner.generate(PROMPT_IDS, 7)  # sequences of 10..16 tokens: all padded to 16
    assert out == [0] * 7, "nothing ran: every result was zeros, so every greedy pick was token 0"
    # the attention sublayer specializes twice: block 0 meets float32 activations, later blocks float64
    assert [(k.function, k.built) for k in log.kernels] == [
        ("embedding", True), ("attention_sublayer", True), ("feedforward_sublayer", True),
        ("attention_sublayer", True), ("final_projection", True)]
    fresh = compile_model(tiny, "subgraph")
    logits = fresh.forward(PROMPT_IDS)
    functions = (fresh.embed_fn, fresh.attention_fn, fresh.feedforward_fn, fresh.projection_fn)
    kernels = [spec.kernel for fn in functions for spec in fn._cache.values()]
    assert len(kernels) == 5 and all(k.from_disk_cache for k in kernels)
    expected = numpy_forward(tiny, PROMPT_IDS)
    assert logits.dtype == expected.dtype == np.float64
    np.testing.assert_allclose(logits, expected, **TOL)


def test_generate_cli_build_only_reports_what_it_built(tiny, tmp_path):
    def run():
        out = subprocess.run(
            [sys.executable, "-m", "harness.cli", "generate", PROMPT, "--tokens", "3", "--mode", "fused", "--build-only",
             "--model", str(tiny.checkpoint.path), "--json"],
            capture_output=True, text=True, timeout=600, env={**os.environ, "PARITY_CACHE": str(tmp_path)})
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout.strip().splitlines()[-1])

    first = run()
    assert (first["built"], first["already_cached"], first["kernel_cache"]) == (1, 0, str(tmp_path / "kernels"))
    assert [k["function"] for k in first["kernels"]] == ["gpt2_fused"]
    assert run()["already_cached"] == 1


def test_generate_cli_rejects_overlong_requests(tiny):
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "generate", PROMPT, "--tokens", "100", "--model", str(tiny.checkpoint.path)],
        capture_output=True, text=True, timeout=600)
    assert out.returncode == 2 and "context length" in out.stderr


@pytest.mark.slow
def test_gpt2_small_shaped_synthetic_run_in_subgraph_mode():
    """One run at GPT-2-small shapes (12 x 768, 12 heads, vocab 50257): every trace tensor against NumPy."""
    from compiler.gpt2 import resolve_model_dir

    model = load_model(resolve_model_dir(None))
    c = model.config
    assert (c.n_layer, c.n_embd, c.n_head, c.vocab_size, c.n_ctx) == (12, 768, 12, 50257, 1024)
    ids = PROMPT_IDS[:6]
    expected = numpy_trace(model, ids)
    got = {}
    compile_model(model, "subgraph").forward(ids, trace=got)
    assert list(got) == list(expected)
    for name in expected:
        assert got[name].dtype == expected[name].dtype, name
        np.testing.assert_allclose(got[name], expected[name], err_msg=name, **TOL)


def test_localize_checks_gather_indices_before_native_code(tiny):
    from compiler.diagnose import localize

    p = tiny.params
    with pytest.raises(ValueError, match="out of range"):
        localize(embedding, (p.wte, p.wpe, np.array([0, tiny.config.vocab_size])))


def test_fused_ops_are_attributed_to_the_sublayer_whose_weights_they_read(tiny):
    """The marks taken while the fused pass is traced put every op that reads a block's weights in
    that block's sublayer, as the input's own path names it (ln_1/attn_* -> attention, ln_2/mlp_* ->
    the feed-forward, whose tensor is h.{i}.output), the embedding's gathers before them and the
    final layer norm and projection after them."""
    import re

    from compiler.graph import topological
    from compiler.jit import trace
    from compiler.gpt2.model import marking_sublayers, prepared_params, sublayer_of

    params, wte_out = prepared_params(tiny.params)
    fn, marks = marking_sublayers()
    ids = np.array(PROMPT_IDS + [0] * 6, np.int64)
    _, outputs, _, _ = trace(fn, (ids, np.array([len(PROMPT_IDS) - 1]), params, wte_out),
                             {"n_head": tiny.config.n_head})
    expected_by_input = []
    for node in topological(outputs):
        if node.op in ("input", "const"):
            continue
        for name in {inp.name for inp in node.inputs if inp.op == "input"}:
            block = re.match(r"params\.blocks\[(\d+)\]\.(\w+)\.", name)
            if block:
                part = "attention" if block.group(2) in ("ln_1", "attn_c_attn", "attn_c_proj") else "output"
                want = f"h.{block.group(1)}.{part}"
            elif name.startswith(("params.wte", "params.wpe")):
                want = "embedding"
            elif name.startswith(("params.ln_f", "wte_out")):
                want = "logits"
            else:
                continue
            expected_by_input.append((node.op, want, sublayer_of(node.id, marks)))
    seen = {want for _, want, _ in expected_by_input}
    assert seen == {"embedding", "logits"} | {f"h.{i}.{p}" for i in range(tiny.config.n_layer)
                                              for p in ("attention", "output")}
    assert [(op, want) for op, want, got in expected_by_input if got != want] == []
