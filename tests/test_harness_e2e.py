"""End to end on a tiny checkpoint: the bundled reference committed to a git
repository and reached through its file:// URL (clone -> pin -> env ->
capture), the real compiler in subgraph and fused modes, and a fault injected
into the compiler that the harness must catch and localize to the right step,
tensor and op."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from harness import cli
from harness.schema import validate_report
from harness.verify import DEFAULT_PROMPT, DEFAULT_TOKENS, VerifyOptions, exit_code, verify

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("harness-e2e")]

PROMPT = "Alan Turing theorized that computers would one day become"
TOKENS = 3


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A private cache (compiled kernels, reference checkout and env), a tiny model
    and the bundled reference as a one-commit git repository."""
    from reference_env.bundle import materialize_bundled
    from reference_env.testing import write_tiny_checkpoint

    root = tmp_path_factory.mktemp("harness-e2e")
    saved = os.environ.get("PARITY_CACHE")
    os.environ["PARITY_CACHE"] = str(root / "cache")
    try:
        model = write_tiny_checkpoint(root / "model")
        url, revision = materialize_bundled(root / "tiny-gpt2")
        yield {"root": root, "model": model, "url": url, "revision": revision}
    finally:
        if saved is None:
            os.environ.pop("PARITY_CACHE", None)
        else:
            os.environ["PARITY_CACHE"] = saved


def _options(world, **overrides):
    options = VerifyOptions(model=str(world["model"]), reference=world["url"], reference_rev=world["revision"],
                            prompt=PROMPT, tokens=TOKENS, captures_dir=str(world["root"] / "captures"))
    for key, value in overrides.items():
        setattr(options, key, value)
    return options


def test_tiny_model_passes_in_both_modes(world):
    report = verify(_options(world))
    validate_report(report)
    assert report["reference"]["url"] == world["url"] and report["reference"]["revision"] == world["revision"]
    assert report["input_ids"] == [36235, 39141, 18765, 1143, 326, 9061, 561, 530, 1110, 1716]
    for name in ("subgraph", "fused"):
        mode = report["modes"][name]
        assert mode["status"] == "pass", mode["reason"]
        assert mode["tokens"]["agree"] and mode["forced_tokens"]["agree"]
        assert all(c["dtype_match"] for c in mode["checks"])
        assert mode["max_abs_error"] < 3e-4
    assert len(report["modes"]["subgraph"]["checks"]) == TOKENS * (2 + 2 * 2)  # embedding, 2 blocks x 2, logits
    assert exit_code(report) == 0


def test_injected_tanh_fault_is_caught_and_localized(world):
    from compiler.testing import inject_fault

    with inject_fault(op="tanh", factor=1.05):
        report = verify(_options(world))
    sub = report["modes"]["subgraph"]
    assert sub["status"] == "diverged" and exit_code(report) == 1
    fd = sub["first_divergence"]
    # tanh only occurs in GELU, inside the first block's feed-forward sublayer
    assert (fd["step"], fd["tensor"], fd["op"]) == (0, "h.0.output", "tanh")
    assert fd["source"] and fd["source"].split(":")[0].endswith("ops.py")
    assert "tanh" in (fd["source_text"] or "")
    # everything upstream of the fault still agrees at step 0
    upstream = {c["tensor"]: c["passed"] for c in sub["checks"] if c["step"] == 0}
    assert upstream["embedding"] and upstream["h.0.attention"]
    fused = report["modes"]["fused"]
    assert fused["status"] == "diverged"
    assert (fused["first_divergence"]["step"], fused["first_divergence"]["tensor"]) == (0, "logits")


def test_injected_sqrt_fault_lands_in_the_attention_sublayer(world):
    from compiler.testing import inject_fault

    with inject_fault(op="sqrt", factor=1.05):
        report = verify(_options(world, modes=["subgraph"]))
    fd = report["modes"]["subgraph"]["first_divergence"]
    # layer_norm's sqrt runs first in the attention sublayer (ln_1)
    assert (fd["step"], fd["tensor"], fd["op"]) == (0, "h.0.attention", "sqrt")


def test_exp_fault_survives_softmax_only_as_an_offset(world):
    """A scaled exp cancels in softmax (nothing diverges); an offset exp does not, and is localized to exp."""
    from compiler.testing import inject_fault

    with inject_fault(op="exp", factor=1.05):
        assert verify(_options(world, modes=["subgraph"]))["modes"]["subgraph"]["status"] == "pass"
    with inject_fault(op="exp", factor=1.0, offset=0.01):
        report = verify(_options(world, modes=["subgraph"]))
    fd = report["modes"]["subgraph"]["first_divergence"]
    assert (fd["step"], fd["tensor"], fd["op"]) == (0, "h.0.attention", "exp")
    assert "np.exp" in (fd["source_text"] or "")


def test_cli_end_to_end_writes_reports_and_exits_zero(world, capsys):
    paths = {kind: world["root"] / f"cli.{kind}" for kind in ("json", "xml", "html")}
    code = cli.main(["verify", "--model", str(world["model"]), "--reference", world["url"],
                     "--reference-rev", world["revision"], "--tokens", str(TOKENS),
                     "--captures-dir", str(world["root"] / "captures"), "--json", str(paths["json"]),
                     "--junit", str(paths["xml"]), "--html", str(paths["html"])])
    assert code == 0, capsys.readouterr().out
    validate_report(json.loads(paths["json"].read_text()))
    assert ET.parse(paths["xml"]).getroot().get("failures") == "0"
    assert 'class="heatmap"' in paths["html"].read_text()


def test_verify_against_a_given_capture_file_without_the_reference(world, monkeypatch):
    """--capture: a capture made elsewhere (e.g. for an offline GPU machine) stands in for the reference run."""
    verify(_options(world, modes=["fused"]))  # makes (or reuses) the capture
    captures = sorted((world["root"] / "captures").glob("capture-*.json"))
    assert captures

    def no_reference(*args, **kwargs):
        raise AssertionError("the reference must not be resolved or run with --capture")

    monkeypatch.setattr("reference_env.captures.resolve_reference", no_reference)
    monkeypatch.setattr("reference_env.captures.capture", no_reference)
    report = verify(_options(world, modes=["fused"], reference="unused", capture=str(captures[0])))
    assert report["modes"]["fused"]["status"] == "pass"
    # the reference as the capture recorded it: the file:// repository counts as a "path" reference
    assert report["reference"]["kind"] == "path" and report["reference"]["revision"] == world["revision"]
    validate_report(report)
    from harness.verify import VerifyError

    with pytest.raises(VerifyError, match="decoding steps"):
        verify(_options(world, modes=["fused"], tokens=TOKENS + 1, capture=str(captures[0])))
    with pytest.raises(VerifyError, match="prompt"):
        verify(_options(world, modes=["fused"], prompt="something else", capture=str(captures[0])))
    with pytest.raises(VerifyError) as both:  # every mismatch in one message, not one per run
        verify(_options(world, modes=["fused"], prompt="other", tokens=TOKENS + 1, capture=str(captures[0])))
    assert f"the prompt {PROMPT!r}, not 'other'" in str(both.value)
    assert f"it has {TOKENS} decoding steps, not {TOKENS + 1}" in str(both.value)


def test_a_given_capture_supplies_the_prompt_and_step_count(world):
    other_prompt = "Hello there"
    assert other_prompt != DEFAULT_PROMPT and TOKENS != DEFAULT_TOKENS
    made = verify(_options(world, modes=["fused"], prompt=other_prompt))
    given = [p for p in (world["root"] / "captures").glob("capture-*.json")
             if json.loads(p.read_text())["key"]["prompt"] == other_prompt]
    assert len(given) == 1
    report = verify(_options(world, modes=["fused"], reference="unused", prompt=None, tokens=None,
                             capture=str(given[0])))
    assert report["prompt"] == other_prompt and report["input_ids"] == made["input_ids"]
    assert len(report["modes"]["fused"]["tokens"]["expected"]) == TOKENS
    assert report["modes"]["fused"]["status"] == "pass"


def _given_capture_file(world) -> str:
    verify(_options(world, modes=["fused"]))  # makes (or reuses) the capture
    return str(sorted((world["root"] / "captures").glob("capture-*.json"))[0])


def test_a_capture_of_another_config_is_another_model_not_a_divergence(world, tmp_path, capsys):
    """Same weights, another n_head in config.json: exit 2 naming the model, not a compiler divergence."""
    import shutil

    given = _given_capture_file(world)
    other = tmp_path / "other-heads"
    shutil.copytree(world["model"], other)
    config = json.loads((other / "config.json").read_text())
    config["n_head"] = config["n_head"] // 2
    (other / "config.json").write_text(json.dumps(config))
    from harness.verify import VerifyError

    with pytest.raises(VerifyError) as info:
        verify(_options(world, modes=["fused"], model=str(other), capture=given))
    message = str(info.value)
    assert message.startswith(f"the capture {given} is of another model than {other} — config.json sha256 ")
    assert message.endswith(f"here; pass the matching --model (it was made from {world['model']}), "
                            "or make a capture of this model")
    assert "delete" not in message
    code = cli.main(["verify", "--modes", "fused", "--model", str(other), "--capture", given, "--tokens", str(TOKENS),
                     "--json", str(tmp_path / "r.json")])
    assert code == 2 and not (tmp_path / "r.json").exists()
    assert "is of another model" in capsys.readouterr().err


def test_a_malformed_given_capture_says_to_remake_it_where_the_reference_runs(world, tmp_path):
    import shutil

    given = Path(_given_capture_file(world))
    copy = tmp_path / given.name
    shutil.copyfile(given, copy)
    shutil.copyfile(given.with_suffix(".npz"), copy.with_suffix(".npz"))
    meta = json.loads(copy.read_text())
    meta["key"] = "abc"
    copy.write_text(json.dumps(meta))
    from harness.verify import VerifyError

    with pytest.raises(VerifyError) as info:
        verify(_options(world, modes=["fused"], capture=str(copy)))
    assert str(info.value) == (
        f"cannot use --capture {copy}: capture {copy} is corrupt or incomplete (malformed metadata: its key is str "
        "'abc', not an object); make it again with `parity verify` on a machine that runs the reference (it writes "
        "captures/capture-*.json and .npz) and copy both files")


def test_a_capture_of_other_weights_is_another_model(world, tmp_path):
    from harness.verify import VerifyError
    from reference_env.testing import write_tiny_checkpoint

    given = _given_capture_file(world)
    other = write_tiny_checkpoint(tmp_path / "other-weights", seed=5)
    with pytest.raises(VerifyError) as info:
        verify(_options(world, modes=["fused"], model=str(other), capture=given))
    assert str(info.value).startswith(f"the capture {given} is of another model than {other} — "
                                      "model.safetensors sha256 ")
    assert "config.json" not in str(info.value)


def test_a_model_whose_vocabulary_reads_the_prompt_differently_is_refused(world, tmp_path):
    """The compiler is fed the reference's token ids; a model with another vocab.json (same weights,
    same config) must not pass on an input its users would never give it."""
    import shutil

    from harness.verify import VerifyError

    from compiler.gpt2.tokenizer import bundled_tokenizer_files

    given = _given_capture_file(world)
    other = tmp_path / "swapped-vocab"
    shutil.copytree(world["model"], other)
    files = bundled_tokenizer_files()  # GPT-2's own, which the tiny checkpoint uses when it has none
    shutil.copyfile(files.merges, other / "merges.txt")
    vocab = json.loads(Path(files.vocab).read_text())
    vocab["Alan"], vocab["\u0120Turing"] = vocab["\u0120Turing"], vocab["Alan"]
    (other / "vocab.json").write_text(json.dumps(vocab))
    with pytest.raises(VerifyError) as info:
        verify(_options(world, modes=["fused"], model=str(other), capture=given))
    message = str(info.value)
    assert message.startswith(f"the model's tokenizer ({other}: vocab.json, merges.txt) reads the prompt as "
                              "[39141, 36235, 18765")
    assert "the reference as [36235, 39141, 18765" in message


def test_an_injected_fault_is_caught_localized_and_announced(world):
    report = verify(_options(world, modes=["subgraph"], inject_fault=("tanh", 1.0, 1e-3)))
    validate_report(report)
    mode = report["modes"]["subgraph"]
    assert mode["status"] == "diverged" and exit_code(report) == 1
    assert mode["first_divergence"]["op"] == "tanh"
    assert mode["first_divergence"]["source"].startswith("compiler/ops.py:")
    # the line is gelu's; its callers say which of the model's uses of it diverged
    assert mode["first_divergence"]["function"] == "gelu"
    called_from = mode["first_divergence"]["called_from"]
    assert [c.split(" ")[1] for c in called_from] == ["(feedforward)", "(feedforward_sublayer)"]
    assert called_from[0].startswith("compiler/ops.py:") and called_from[1].startswith("compiler/gpt2/model.py:")
    assert "(gelu)" in mode["reason"]
    # the fault is in the lowering: wrong before any optional pipeline step runs
    assert mode["first_divergence"]["introduced_by"] == "the lowering (no optional pipeline step)"
    assert mode["first_divergence"]["pass_bisection"].startswith("pass bisection of h.0.output: wrong already with no "
                                                                 "optional pipeline step")
    assert report["injected_fault"] == {"op": "tanh", "factor": 1.0, "offset": 1e-3}
    assert report["banner"].startswith("A fault was injected: every tanh result y became y*1+0.001")
    # the fault lives only inside the run: the same verify without it passes
    assert verify(_options(world, modes=["subgraph"]))["modes"]["subgraph"]["status"] == "pass"


def test_a_fault_in_no_primitive_is_refused(world):
    from harness.verify import VerifyError

    with pytest.raises(VerifyError, match=r"--inject-fault: cannot inject a fault into 'tanhh': no primitive of "
                                          r"that name \(did you mean tanh, tan, arctanh\?\)"):
        verify(_options(world, modes=["subgraph"], inject_fault=("tanhh", 1.0, 1e-3)))


@pytest.mark.parametrize("text", ["", "exp:x", "exp:1:2:3"])
def test_a_malformed_inject_fault_is_a_usage_error(text, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["verify", "--inject-fault", text])
    assert info.value.code == 2
    assert "--inject-fault" in capsys.readouterr().err


def test_a_miscompile_that_yields_inf_still_gets_a_report(world):
    """The worst miscompiles make NaN/inf where NumPy's values are finite: the op's own error is
    then undefined (null, said in words), and the report is still valid and written."""
    report = verify(_options(world, modes=["subgraph"], inject_fault=("exp", 1.0, float("inf"))))
    validate_report(report)
    fd = report["modes"]["subgraph"]["first_divergence"]
    assert report["modes"]["subgraph"]["status"] == "diverged"
    assert fd["op"] == "exp" and fd["source"].startswith("compiler/ops.py:")
    assert fd["op_max_abs_error"] is None
    assert "the op's own error is undefined" in fd["localization"]
    assert report["injected_fault"] == {"op": "exp", "factor": 1.0, "offset": "inf"}


@pytest.mark.parametrize("mode", ["subgraph", "fused"])
def test_the_op_audit_finds_a_miscompile_the_tolerance_cannot_see(world, mode):
    """A pure scale of exp cancels in softmax's normalization, so every tensor passes; held to its own
    rounding, exp does not. --audit-ops makes that a divergence, named like any other."""
    fault = ("exp", 1.001, 0.0)
    unaudited = verify(_options(world, modes=[mode], inject_fault=fault))
    assert unaudited["modes"][mode]["status"] == "pass"
    report = verify(_options(world, modes=[mode], inject_fault=fault, audit_ops=True))
    validate_report(report)
    entry = report["modes"][mode]
    assert entry["status"] == "diverged" and exit_code(report) == 1
    assert all(c["passed"] for c in entry["checks"])
    fd = entry["first_divergence"]
    assert fd["step"] == 0 and fd["op"] == "exp" and fd["source"].startswith("compiler/")
    assert fd["sublayer"] == "h.0.attention"
    assert fd["localization"].startswith("op audit (--audit-ops): every tensor is within tolerance")
    assert "exp" in entry["reason"]


def test_the_op_audit_passes_a_correct_compiler(world):
    report = verify(_options(world, audit_ops=True))
    assert [m["status"] for m in report["modes"].values()] == ["pass", "pass"]


def _broken_lowering():
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "support"))
    import broken_lowering
    return broken_lowering


def test_a_kernel_mlir_refuses_is_a_located_finding(world):
    """A compiler bug that makes invalid IR is a finding like a divergence (exit 1), named by the
    graph op, source line, function and callers, at the first step and tensor it stops; the
    tensors computed before it are still checked, and every report format says it."""
    from harness.render_html import render_html
    from harness.report import render_junit, verdict

    with _broken_lowering().concat_past_the_end():
        report = verify(_options(world, modes=["subgraph"]))
    validate_report(report)
    mode = report["modes"]["subgraph"]
    assert mode["status"] == "compile_error" and exit_code(report) == 1
    assert [(c["step"], c["tensor"], c["passed"]) for c in mode["checks"]] == [(0, "embedding", True)]
    fd = mode["first_divergence"]
    # np.hstack of the heads in multi_head_attention is the model's only concatenate
    assert (fd["step"], fd["tensor"], fd["op"], fd["sublayer"]) == (0, "h.0.attention", "concat", "h.0.attention")
    assert fd["function"] == "multi_head_attention" and fd["source"].startswith("compiler/gpt2/model.py:")
    assert "np.hstack(out)" in fd["source_text"]
    assert [c.split(" ")[1] for c in fd["called_from"]] == ["(attention_sublayer)"]
    assert fd["mlir_op"] == "tensor.insert_slice" and fd["max_abs_error"] is None
    assert fd["reason"].startswith("the compiler's code for h.0.attention does not compile: slice along dimension 1 "
                                   "runs out-of-bounds")
    assert "tensor.insert_slice" in fd["mlir_diagnostic"]
    assert verdict(report).line().startswith("FAIL: MLIR refused the compiler's code in subgraph (does not compile: "
                                             "step 0 h.0.attention · op concat)")
    junit = ET.fromstring(render_junit(report))
    failure = junit.find(".//testcase[@name='compile']/failure")
    assert failure is not None and "op concat at" in failure.get("message")
    assert "First divergence (does not compile)" in render_html(report)


def test_a_fused_kernel_mlir_refuses_names_the_sublayer_of_its_op(world):
    with _broken_lowering().reversed_permutation():
        report = verify(_options(world, modes=["fused"]))
    validate_report(report)
    mode = report["modes"]["fused"]
    assert mode["status"] == "compile_error" and exit_code(report) == 1
    fd = mode["first_divergence"]
    # the first 3-D transpose of the pass is block 0's query heads
    assert (fd["step"], fd["tensor"], fd["op"], fd["sublayer"]) == (0, "logits", "transpose", "h.0.attention")
    assert fd["function"] == "gpt2_fused" and "q.reshape(T, n_head, d).transpose(1, 0, 2)" in fd["source_text"]
    assert fd["called_from"] == []  # the sublayer-marking wrapper is machinery, not a caller
    assert fd["mlir_op"] == "linalg.transpose"


def test_an_audit_kernel_mlir_refuses_is_a_compile_error_finding(world):
    """The op-by-op kernel of --audit-ops materializes the 2-D transposes the forward pass folds into
    its matmuls: refused there, it is still a compiler bug, reported like one (exit 1)."""
    with _broken_lowering().reversed_permutation():
        report = verify(_options(world, modes=["subgraph"], audit_ops=True))
    validate_report(report)
    mode = report["modes"]["subgraph"]
    assert mode["status"] == "compile_error" and exit_code(report) == 1
    assert all(c["passed"] for c in mode["checks"]) and mode["tokens"]["agree"]
    fd = mode["first_divergence"]
    assert (fd["step"], fd["tensor"], fd["op"], fd["mlir_op"]) == (0, "h.0.attention", "transpose", "linalg.transpose")
    assert fd["reason"].startswith("the op-by-op kernel of h.0.attention (--audit-ops) does not compile: "
                                   "'linalg.transpose' op")
    assert mode["reason"].startswith("every tensor passed, but the op-by-op kernel of h.0.attention")
    assert "kh.T" in fd["source_text"]


def test_a_miscompile_made_by_the_blas_substitution_is_traced_to_it(world, monkeypatch):
    """A gemm call with alpha 1.01 (a bug in the BLAS shim, after every MLIR pass): the pass
    bisection finds the sublayer right through every tensor pass and wrong once BLAS is substituted."""
    from compiler import backend

    shim = backend._GEMM_SHIM
    broken = shim.replace("%ldc = arith.index_cast %cs0 : index to i64",
                          "%ldc = arith.index_cast %cs0 : index to i64\n    %alpha = arith.constant 1.01 : {t}")
    broken = broken.replace("%tb, %m, %n, %k, %one, %pa", "%tb, %m, %n, %k, %alpha, %pa")  # the gemm call
    assert broken.count("%alpha") == 2
    monkeypatch.setattr(backend, "_GEMM_SHIM", broken)
    monkeypatch.setenv("PARITY_NO_DISK_CACHE", "1")  # the cache key knows the shim by its source file
    report = verify(_options(world, modes=["subgraph"], tokens=1))
    validate_report(report)
    fd = report["modes"]["subgraph"]["first_divergence"]
    assert (fd["step"], fd["tensor"], fd["op"]) == (0, "h.0.attention", "matmul")
    assert fd["introduced_by"] == "BLAS substitution"
    assert fd["pass_bisection"] == ("pass bisection of h.0.attention: right up to and including cse (tensor pass 5 "
                                    "of 5), wrong once BLAS substitution runs: that step makes the error")
