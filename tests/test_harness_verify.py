"""Lockstep verification, localization, statuses and `parity verify` exit codes,
driven through the run_verification / verify_fn seams with a fake reference
capture and fake compiler runners (no reference env, no compiler)."""

from __future__ import annotations

import html
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from rich.console import Console

from harness import cli
from harness.commands import verify as verify_command
from harness.compare import Tolerance, top_margin
from harness.schema import validate_report
from harness.verify import (
    DEFAULT_PROMPT,
    ModePlan,
    ReferenceInconsistency,
    VerifyError,
    exit_code,
    plan_modes,
    run_verification,
)

PROMPT_IDS = [3, 1, 4, 1]
N_LAYER, N_EMBD, VOCAB, STEPS = 2, 8, 16, 3
CHECKPOINT = {"name": "fake-tiny", "sha256": "ab" * 32}
REFERENCE = {"kind": "upstream", "url": "file:///tmp/ref.git", "revision": "f" * 40, "numpy_version": "2.4.6"}


class FakeCapture:
    """A reference capture with the real capture's attributes, built from a seed.
    Logits are arranged so the greedy pick at `near_tie_step` wins by `tie_margin`."""

    def __init__(self, seed=0, near_tie_step=None, tie_margin=1e-5, meta=None):
        rng = np.random.default_rng(seed)
        self.input_ids = list(PROMPT_IDS)
        self.meta = dict(meta or {})
        self.reference = dict(REFERENCE)
        self.completion = "fake completion"
        self.tensor_names = ["embedding"] + [f"h.{i}.{p}" for i in range(N_LAYER) for p in ("attention", "output")] + ["logits"]
        self._tensors = {}
        self.output_ids = []
        for step in range(STEPS):
            t = len(PROMPT_IDS) + step
            self._tensors[step, "embedding"] = rng.standard_normal((t, N_EMBD)).astype(np.float32)
            for name in self.tensor_names[1:-1]:
                self._tensors[step, name] = rng.standard_normal((t, N_EMBD))
            logits = rng.standard_normal(VOCAB)
            top = int(np.argmax(logits))
            if step == near_tie_step:
                runner_up = (top + 1) % VOCAB
                logits[runner_up] = logits[top] - tie_margin
            self._tensors[step, "logits"] = logits
            self.output_ids.append(top)
        self.margins = [top_margin(self._tensors[s, "logits"]) for s in range(STEPS)]
        self.steps = STEPS

    def tensor(self, step, name):
        return self._tensors[step, name]


class FakeRunner:
    """Returns the capture's tensors, optionally perturbed: faults maps
    (step, tensor) -> additive delta. Records the ids it is fed."""

    def __init__(self, capture, kind, faults=None, dtype_override=None, generated=None, fail_forward=False,
                 localized=None):
        self.capture, self.kind = capture, kind
        self.faults = faults or {}
        self.dtype_override = dtype_override or {}
        self.generated = generated
        self.fail_forward = fail_forward
        self.localized = localized if localized is not None else {"op": "exp", "source": "compiler/ops.py:1", "max_abs_error": 0.5}
        self.fed, self.localize_calls = [], []

    def forward(self, ids, trace=None):
        if self.fail_forward:
            raise RuntimeError("kernel exploded")
        self.fed.append(list(ids))
        step = len(ids) - len(PROMPT_IDS)
        names = self.capture.tensor_names if self.kind == "subgraph" else ["logits"]
        values = {}
        for name in names:
            value = self.capture.tensor(step, name).copy()
            delta = self.faults.get((step, name))
            if delta is not None:
                value.flat[0] += delta
            if name in self.dtype_override:
                value = value.astype(self.dtype_override[name])
            values[name] = value
        if trace is not None:
            trace.update(values)
        return values["logits"]

    def generate(self, ids, n_tokens):
        return list(self.generated if self.generated is not None else self.capture.output_ids[:n_tokens])

    def localize(self, tensor, ids, upstream=None):
        self.localize_calls.append((tensor, list(ids), None if upstream is None else upstream.copy()))
        return self.localized


def factory(capture, runners=None, raise_for=(), **kwargs):
    runners = runners if runners is not None else {}

    def make(kind, target):
        if kind in raise_for:
            raise ValueError(f"cannot compile {kind}")
        runner = FakeRunner(capture, kind, **kwargs)
        runners[(kind, target)] = runner
        return runner
    return make


def verify_fake(capture, make, plans=None, **kwargs):
    plans = plans or plan_modes(["subgraph", "fused"])
    kwargs.setdefault("device_check", lambda: (False, "no CUDA driver"))
    return run_verification(capture, make, plans, Tolerance(), checkpoint=CHECKPOINT, prompt="p", **kwargs)


# ------------------------------------------------------------------ planning

def test_plan_modes_expands_gpu_and_names_gpu_targets():
    assert plan_modes(["subgraph", "fused"]) == [ModePlan("subgraph", "subgraph", "cpu"), ModePlan("fused", "fused", "cpu")]
    assert plan_modes(["gpu"]) == [ModePlan("gpu-subgraph", "subgraph", "gpu"), ModePlan("gpu-fused", "fused", "gpu")]
    assert plan_modes(["fused", "subgraph"], "gpu") == [ModePlan("gpu-fused", "fused", "gpu"),
                                                        ModePlan("gpu-subgraph", "subgraph", "gpu")]
    assert plan_modes(["fused", "fused"]) == [ModePlan("fused", "fused", "cpu")]


@pytest.mark.parametrize("modes, target", [(["banana"], "cpu"), ([], "cpu"), (["fused"], "tpu")])
def test_plan_modes_rejects_bad_input(modes, target):
    with pytest.raises(VerifyError):
        plan_modes(modes, target)


# ------------------------------------------------------------------ lockstep verification

def test_clean_run_passes_every_mode_and_feeds_the_reference_sequence():
    capture = FakeCapture()
    runners = {}
    report = verify_fake(capture, factory(capture, runners))
    assert exit_code(report) == 0
    sub, fused = report["modes"]["subgraph"], report["modes"]["fused"]
    assert sub["status"] == fused["status"] == "pass"
    assert len(sub["checks"]) == STEPS * (2 * N_LAYER + 2)
    assert len(fused["checks"]) == STEPS and {c["tensor"] for c in fused["checks"]} == {"logits"}
    assert sub["max_abs_error"] == 0.0 and sub["first_divergence"] is None
    assert sub["tokens"] == {"expected": capture.output_ids, "actual": capture.output_ids, "agree": True}
    assert sub["forced_tokens"]["actual"] == capture.output_ids
    expected_feed = [PROMPT_IDS + capture.output_ids[:s] for s in range(STEPS)]
    assert runners[("subgraph", "cpu")].fed == expected_feed
    assert runners[("fused", "cpu")].fed == expected_feed
    assert report["reference"] == REFERENCE and report["checkpoint"] == CHECKPOINT


def test_fault_is_reported_at_its_step_and_tensor_and_localized_on_the_reference_input():
    capture = FakeCapture()
    runners = {}
    # a later fault and an in-tolerance wobble must not mask the earliest real one
    faults = {(1, "h.1.attention"): 1e-2, (2, "h.0.output"): 1.0, (0, "h.0.output"): 1e-5}
    report = verify_fake(capture, factory(capture, runners, faults=faults), plans=plan_modes(["subgraph"]))
    mode = report["modes"]["subgraph"]
    assert mode["status"] == "diverged" and exit_code(report) == 1
    fd = mode["first_divergence"]
    assert (fd["step"], fd["tensor"], fd["op"], fd["source"]) == (1, "h.1.attention", "exp", "compiler/ops.py:1")
    assert fd["max_abs_error"] == pytest.approx(1e-2, rel=1e-9)
    # the op was found re-running the diverging tensor's own sublayer; the fault is at flat[0]
    assert fd["sublayer"] == "h.1.attention"
    assert fd["worst_index"] == [0] * capture.tensor(1, "h.1.attention").ndim
    failing = sorted((c["step"], c["tensor"]) for c in mode["checks"] if not c["passed"])
    assert failing == [(1, "h.1.attention"), (2, "h.0.output")]
    (tensor, ids, upstream), = runners[("subgraph", "cpu")].localize_calls
    assert tensor == "h.1.attention" and ids == PROMPT_IDS + capture.output_ids[:1]
    np.testing.assert_array_equal(upstream, capture.tensor(1, "h.0.output"))
    assert mode["max_abs_error"] == pytest.approx(1.0)
    # the tokens still agree: the fault did not move an argmax
    assert mode["tokens"]["agree"] and "step 1 in h.1.attention" in mode["reason"]


def test_an_error_born_upstream_is_localized_in_the_earlier_sublayer():
    """When every op producing the failing tensor is within its rounding, the sublayers before it
    at that step are re-run in model order and the first op off its rounding there is named."""
    capture = FakeCapture()
    make = factory(capture, faults={(0, "logits"): 5.0})
    runners = []

    def make_upstream(kind, target):
        runner = make(kind, target)
        found = {"op": "divide", "source": "compiler/ops.py:23", "max_abs_error": 1e-4}
        calls = runner.localize_calls

        def localize(tensor, ids, upstream):
            calls.append((tensor, list(ids), upstream))
            return found if tensor == "h.1.attention" else None
        runner.localize = localize
        runners.append(runner)
        return runner

    report = verify_fake(capture, make_upstream, plans=plan_modes(["subgraph"]))
    fd = report["modes"]["subgraph"]["first_divergence"]
    assert (fd["tensor"], fd["op"], fd["source"], fd["op_max_abs_error"]) == ("logits", "divide", "compiler/ops.py:23", 1e-4)
    assert "starts upstream" in fd["localization"] and "in h.1.attention" in fd["localization"]
    assert fd["sublayer"] == "h.1.attention"  # structurally, not only in the sentence
    assert "op divide in h.1.attention at compiler/ops.py:23" in report["modes"]["subgraph"]["reason"]
    tried = [c[0] for c in runners[0].localize_calls]
    assert tried == ["logits", "embedding", "h.0.attention", "h.0.output", "h.1.attention"]
    np.testing.assert_array_equal(runners[0].localize_calls[-1][2], capture.tensor(0, "h.0.output"))


def test_localize_finding_nothing_is_explained_in_both_modes():
    capture = FakeCapture()
    runners = {}
    make = factory(capture, runners, faults={(0, "logits"): 5.0}, localized=None)
    # localized=None in FakeRunner means "use the default"; force a None result instead
    report_runners = {}

    def make_none(kind, target):
        runner = make(kind, target)
        runner.localized = None
        report_runners[kind] = runner
        return runner

    report = verify_fake(capture, make_none)
    sub = report["modes"]["subgraph"]["first_divergence"]
    assert sub["tensor"] == "logits" and sub["op"] is None and "agrees with NumPy" in sub["localization"]
    np.testing.assert_array_equal(report_runners["subgraph"].localize_calls[0][2], capture.tensor(0, f"h.{N_LAYER - 1}.output"))
    fused = report["modes"]["fused"]["first_divergence"]
    assert fused["tensor"] == "logits" and fused["op"] is None and "fused pass agrees with NumPy" in fused["localization"]
    # fused mode re-runs the whole pass from the step's token ids: no upstream tensor
    assert report_runners["fused"].localize_calls == [("logits", PROMPT_IDS, None)]


def test_fused_mode_is_localized_from_the_token_ids():
    capture = FakeCapture()
    runners = {}
    report = verify_fake(capture, factory(capture, runners, faults={(1, "logits"): 5.0}), plans=plan_modes(["fused"]))
    fd = report["modes"]["fused"]["first_divergence"]
    assert (fd["step"], fd["tensor"], fd["op"], fd["source"]) == (1, "logits", "exp", "compiler/ops.py:1")
    assert "fused forward pass op by op from the token ids of step 1" in fd["localization"]
    assert runners[("fused", "cpu")].localize_calls == [("logits", PROMPT_IDS + capture.output_ids[:1], None)]
    assert fd["sublayer"] is None  # this runner does not say which block the op is in


def test_fused_mode_records_the_sublayer_its_runner_attributes_the_op_to():
    capture = FakeCapture()
    found = {"op": "tanh", "source": "compiler/ops.py:12", "max_abs_error": 0.5, "sublayer": "h.1.output"}
    report = verify_fake(capture, factory(capture, faults={(0, "logits"): 5.0}, localized=found),
                         plans=plan_modes(["fused"]))
    validate_report(report)
    fd = report["modes"]["fused"]["first_divergence"]
    assert (fd["op"], fd["sublayer"], fd["worst_index"]) == ("tanh", "h.1.output", [0])
    assert "first op off its rounding is tanh in h.1.output" in fd["localization"]


@pytest.mark.parametrize("run_in, given, recorded", [
    ("project", "compiler/ops.py:17", "compiler/ops.py:17"),
    ("elsewhere", "{root}/compiler/ops.py:17", "compiler/ops.py:17"),
    ("elsewhere", "kernels/k.py:3", "{tmp}/kernels/k.py:3"),
    ("elsewhere", "<unknown>", "<unknown>"),
])
def test_divergence_source_does_not_depend_on_the_working_directory(monkeypatch, tmp_path, run_in, given, recorded):
    from harness.verify import PROJECT_ROOT

    monkeypatch.chdir(PROJECT_ROOT if run_in == "project" else tmp_path)
    fill = {"root": PROJECT_ROOT, "tmp": tmp_path.resolve()}
    capture = FakeCapture()
    make = factory(capture, faults={(0, "embedding"): 1.0},
                   localized={"op": "exp", "source": given.format(**fill), "max_abs_error": 0.5})
    report = verify_fake(capture, make, plans=plan_modes(["subgraph"]))
    assert report["modes"]["subgraph"]["first_divergence"]["source"] == recorded.format(**fill)


def test_dtype_mismatch_fails_even_with_equal_values():
    capture = FakeCapture()
    report = verify_fake(capture, factory(capture, dtype_override={"h.0.attention": np.float32}),
                         plans=plan_modes(["subgraph"]))
    mode = report["modes"]["subgraph"]
    bad = [c for c in mode["checks"] if c["tensor"] == "h.0.attention"]
    assert all(not c["dtype_match"] and not c["passed"] for c in bad)
    assert mode["first_divergence"]["tensor"] == "h.0.attention" and mode["first_divergence"]["step"] == 0
    assert "dtype float32 != reference float64" in mode["first_divergence"]["reason"]


def test_free_running_mismatch_on_a_near_tie_is_a_labelled_failure():
    capture = FakeCapture(near_tie_step=2, tie_margin=1e-5)
    assert capture.margins[2] == pytest.approx(1e-5, rel=1e-6)
    generated = capture.output_ids[:2] + [(capture.output_ids[2] + 1) % VOCAB]
    report = verify_fake(capture, factory(capture, generated=generated), plans=plan_modes(["fused"]))
    mode = report["modes"]["fused"]
    assert mode["status"] == "diverged" and exit_code(report) == 1
    assert mode["forced_tokens"]["agree"] and not mode["tokens"]["agree"]
    assert mode["first_divergence"] is None
    top1, top2 = np.sort(capture.tensor(2, "logits"))[::-1][:2]
    bound = 2 * 3e-4 + 3e-4 * (abs(top1) + abs(top2))
    assert mode["near_ties"] == [{"kind": "tokens", "step": 2, "expected": capture.output_ids[2],
                                  "actual": generated[2], "margin": pytest.approx(1e-5, rel=1e-6),
                                  "bound": pytest.approx(bound, rel=1e-12)}]
    assert "near-tie" in mode["reason"]


def test_token_mismatch_with_a_clear_margin_is_not_a_near_tie():
    capture = FakeCapture()
    assert min(capture.margins) > 3e-4
    generated = [(t + 1) % VOCAB for t in capture.output_ids]
    report = verify_fake(capture, factory(capture, generated=generated), plans=plan_modes(["fused"]))
    mode = report["modes"]["fused"]
    assert mode["status"] == "diverged" and mode["near_ties"] == []
    assert "free-running tokens differ from step 0" in mode["reason"] and "near-tie" not in mode["reason"]


def test_a_mode_that_raises_is_an_error_and_the_others_still_run():
    capture = FakeCapture()
    report = verify_fake(capture, factory(capture, raise_for=("fused",)))
    assert report["modes"]["subgraph"]["status"] == "pass"
    fused = report["modes"]["fused"]
    assert fused["status"] == "error" and "cannot compile fused" in fused["reason"]
    assert exit_code(report) == 2


def test_forward_raising_is_an_error():
    capture = FakeCapture()
    report = verify_fake(capture, factory(capture, fail_forward=True), plans=plan_modes(["subgraph"]))
    assert report["modes"]["subgraph"]["status"] == "error"
    assert "RuntimeError: kernel exploded" in report["modes"]["subgraph"]["reason"]


def test_a_mode_failing_midway_keeps_the_checks_and_tokens_it_computed():
    capture = FakeCapture()

    class FailsAtStepTwo(FakeRunner):
        def forward(self, ids, trace=None):
            if len(ids) - len(PROMPT_IDS) == 2:
                raise RuntimeError("out of positions")
            return super().forward(ids, trace)

    def make(kind, target):
        return FailsAtStepTwo(capture, kind, faults={(1, "logits"): 5e-3})

    report = verify_fake(capture, make, plans=plan_modes(["fused"]))
    mode = report["modes"]["fused"]
    assert mode["status"] == "error" and exit_code(report) == 2
    assert "RuntimeError: out of positions" in mode["reason"]
    assert [(c["step"], c["passed"]) for c in mode["checks"]] == [(0, True), (1, False)]
    assert mode["forced_tokens"] == {"expected": capture.output_ids, "actual": capture.output_ids[:2], "agree": False}
    assert mode["max_abs_error"] == pytest.approx(5e-3)
    fd = mode["first_divergence"]
    assert (fd["step"], fd["tensor"], fd["op"]) == (1, "logits", None)
    assert fd["localization"] == "not localized: the mode failed before finishing"
    from harness.schema import validate_report
    validate_report(report)


def test_gpu_modes_skip_with_the_reason_without_a_device():
    capture = FakeCapture()
    built = {}
    report = verify_fake(capture, factory(capture, built), plans=plan_modes(["gpu"]),
                         device_check=lambda: (False, "no CUDA driver found"))
    assert set(report["modes"]) == {"gpu-subgraph", "gpu-fused"}
    for mode in report["modes"].values():
        assert mode["status"] == "skipped" and "no CUDA driver found" in mode["reason"]
    assert built == {} and exit_code(report) == 0


def test_gpu_modes_run_when_a_device_is_available():
    capture = FakeCapture()
    built = {}
    report = verify_fake(capture, factory(capture, built), plans=plan_modes(["subgraph", "fused"], "gpu"),
                         device_check=lambda: (True, "H200"))
    assert set(built) == {("subgraph", "gpu"), ("fused", "gpu")}
    assert all(m["status"] == "pass" for m in report["modes"].values())


def test_reference_inconsistency_is_not_a_compiler_divergence():
    found = [{"function": "gpt2_minimal.gpt2", "status": "inconsistent", "reason": "step 2: max abs diff 3.000e-01"}]
    capture = FakeCapture(meta={"reference_inconsistency": found})
    with pytest.raises(ReferenceInconsistency, match="not a compiler divergence") as info:
        verify_fake(capture, factory(capture))
    assert "gpt2_minimal.gpt2: step 2: max abs diff 3.000e-01" in str(info.value)


def test_baseline_regression_fails_even_inside_tolerance():
    capture = FakeCapture()
    baseline = verify_fake(capture, factory(capture))  # every error exactly 0
    report = verify_fake(capture, factory(capture, faults={(0, "embedding"): 1e-6}), baseline=baseline)
    assert all(m["status"] == "pass" for m in report["modes"].values())
    assert [(r["mode"], r["step"], r["tensor"]) for r in report["regressions"]] == [("subgraph", 0, "embedding")]
    assert exit_code(report) == 1
    same = verify_fake(capture, factory(capture), baseline=baseline)
    assert same["regressions"] == [] and exit_code(same) == 0


# ------------------------------------------------------------------ CLI exit codes

def _cli_args(*argv):
    return cli.build_parser(["verify", *argv]).parse_args(["verify", *argv])


def _seam(capture, **kwargs):
    def verify_fn(options, progress):
        plans = plan_modes(options.modes, options.target)
        return run_verification(capture, factory(capture, **kwargs), plans, Tolerance(options.rtol, options.atol),
                                checkpoint=CHECKPOINT, prompt=options.prompt or DEFAULT_PROMPT,  # None: the default
                                device_check=lambda: (False, "no device"))
    return verify_fn


def test_cli_exit_zero_and_default_timestamped_reports(tmp_path):
    args = _cli_args("--reports-dir", str(tmp_path / "reports"))
    assert verify_command.run(args, verify_fn=_seam(FakeCapture())) == 0
    written = sorted(p.suffix for p in (tmp_path / "reports").iterdir())
    assert written == [".html", ".json"]
    assert not list((tmp_path / "reports").glob(".*tmp"))


def test_cli_exit_one_on_divergence_and_writes_requested_reports(tmp_path):
    capture = FakeCapture()
    args = _cli_args("--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"),
                     "--reports-dir", str(tmp_path / "unused"))
    assert verify_command.run(args, verify_fn=_seam(capture, faults={(0, "logits"): 1.0})) == 1
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["modes"]["fused"]["status"] == "diverged"
    assert (tmp_path / "r.xml").exists() and not (tmp_path / "unused").exists()


def test_cli_exit_one_on_regression_against_a_baseline_file(tmp_path):
    capture = FakeCapture()
    base = tmp_path / "base.json"
    assert verify_command.run(_cli_args("--json", str(base)), verify_fn=_seam(capture)) == 0

    def verify_fn(options, progress):
        from harness.verify import load_report
        plans = plan_modes(options.modes, options.target)
        return run_verification(capture, factory(capture, faults={(1, "h.0.output"): 1e-5}), plans, Tolerance(),
                                checkpoint=CHECKPOINT, prompt=options.prompt or DEFAULT_PROMPT, baseline=load_report(options.baseline))

    args = _cli_args("--baseline", str(base), "--json", str(tmp_path / "new.json"), "--html", str(tmp_path / "new.html"))
    console = Console(record=True, width=400)
    assert verify_command.run(args, verify_fn=verify_fn, console=console) == 1
    new = json.loads((tmp_path / "new.json").read_text())
    assert [(r["step"], r["tensor"]) for r in new["regressions"]] == [(1, "h.0.output")]
    # both modes are within tolerance, yet the run fails: the page must say so as the terminal does
    assert {m["status"] for m in new["modes"].values()} == {"pass"}
    terminal_verdict = [line for line in console.export_text().rstrip().splitlines()
                        if not line.startswith("report written:")][-1]
    page = (tmp_path / "new.html").read_text()
    start = page.index('<div class="verdict')
    page_verdict = html.unescape(re.sub(r"<[^>]+>", "", page[start:page.index("</div>", start)]))
    assert terminal_verdict == page_verdict and terminal_verdict.startswith("FAIL: error-budget regression")
    assert terminal_verdict.endswith("(exit 1)")


def test_cli_exit_two_on_mode_error_and_on_verify_error(tmp_path):
    capture = FakeCapture()
    assert verify_command.run(_cli_args("--json", str(tmp_path / "e.json")),
                              verify_fn=_seam(capture, raise_for=("subgraph",))) == 2

    def broken(options, progress):
        raise VerifyError("reference set-up failed: no uv")
    assert verify_command.run(_cli_args("--json", str(tmp_path / "x.json")), verify_fn=broken) == 2
    assert not (tmp_path / "x.json").exists()


def _parity(*argv, cwd):
    return subprocess.run([sys.executable, "-m", "harness.cli", *argv], capture_output=True, text=True, cwd=cwd,
                          timeout=120)


@pytest.mark.parametrize("argv, message", [
    (["--modes", "banana"], "unknown mode 'banana'"),
    (["--tokens", "0"], "must be at least 1"),
    (["--rtol", "nan"], "must be a finite number"),
    (["--target", "tpu"], "invalid choice"),
    (["--baseline", "does-not-exist.json"], "does not exist"),
])
def test_real_cli_bad_arguments_exit_two_with_a_message(tmp_path, argv, message):
    proc = _parity("verify", *argv, "--reports-dir", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------ verify() glue, with the real pieces faked

class FakeResolved:
    kind, url, revision, banner = "bundled", "file:///tmp/bundled.git", "e" * 40, "BUNDLED REFERENCE IN USE"


@pytest.fixture
def glue(monkeypatch, tmp_path):
    """Replace the compiler and reference entry points verify() imports with fakes."""
    import types

    from reference_env.errors import ReferenceSetupError

    state = {"capture": FakeCapture(meta={"checkpoint_sha256": CHECKPOINT["sha256"]}), "captured": 0,
             "device": (False, "no CUDA driver"), "resolve_error": None, "model_error": None,
             "captures_dir": tmp_path / "captures"}

    class Model:
        checkpoint = types.SimpleNamespace(**CHECKPOINT, path=tmp_path / "model")
        # reads every prompt as the capture's ids (verify refuses a model that reads it otherwise)
        tokenizer = types.SimpleNamespace(encode=lambda text: list(state["capture"].input_ids))

    def load_model(path):
        if state["model_error"]:
            raise state["model_error"]
        return Model()

    def resolve_reference(spec, revision=None, strict=False, progress=None):
        if state["resolve_error"]:
            raise state["resolve_error"]
        return FakeResolved()

    def capture(resolved, model_dir, prompt, tokens, captures_dir=None, progress=None):
        state["captured"] += 1
        return state["capture"]

    def compile_model(model, mode, target):
        return FakeRunner(state["capture"], mode)

    import compiler.gpt2
    monkeypatch.setattr(compiler.gpt2, "load_model", load_model, raising=False)
    monkeypatch.setattr(compiler.gpt2, "resolve_model_dir", lambda d: d or "default-model", raising=False)
    monkeypatch.setattr(compiler.gpt2, "compile_model", compile_model, raising=False)
    monkeypatch.setitem(sys.modules, "reference_env.captures",
                        types.SimpleNamespace(capture=capture, resolve_reference=resolve_reference,
                                              default_captures_dir=lambda: state["captures_dir"]))
    monkeypatch.setitem(sys.modules, "compiler.gpu",
                        types.SimpleNamespace(device_available=lambda: state["device"]))
    state["setup_error"] = ReferenceSetupError
    return state


def test_verify_glue_passes_and_records_the_banner(glue):
    from harness.verify import VerifyOptions, verify
    report = verify(VerifyOptions(tokens=STEPS))
    assert exit_code(report) == 0 and report["banner"] == "BUNDLED REFERENCE IN USE"
    # the run's resolved reference wins over what a reused capture recorded; NumPy comes from the capture
    assert report["reference"] == {"kind": "bundled", "url": FakeResolved.url, "revision": FakeResolved.revision,
                                   "numpy_version": REFERENCE["numpy_version"]}
    assert report["checkpoint"] == CHECKPOINT and glue["captured"] == 1


def test_verify_glue_gpu_without_device_skips_without_capturing(glue):
    from harness.verify import VerifyOptions, verify
    report = verify(VerifyOptions(modes=["gpu"], target="gpu"))
    assert {m: e["status"] for m, e in report["modes"].items()} == {"gpu-subgraph": "skipped", "gpu-fused": "skipped"}
    assert "no CUDA driver" in report["modes"]["gpu-fused"]["reason"]
    assert glue["captured"] == 0 and exit_code(report) == 0
    assert report["reference"]["kind"] == "bundled"
    # the prompt's ids from the model's tokenizer; no reference ran, so no NumPy version
    prompt = report["prompt"]
    assert report["input_ids"] == list(glue["capture"].input_ids) and report["input_ids"] and prompt
    assert report["reference"]["numpy_version"] is None
    from harness.schema import validate_report
    validate_report(report)


def test_verify_glue_errors_say_what_to_do(glue):
    from harness.verify import VerifyOptions, verify
    glue["resolve_error"] = glue["setup_error"]("strict mode: upstream unreachable; drop --strict-reference")
    with pytest.raises(VerifyError, match="reference set-up failed: strict mode"):
        verify(VerifyOptions())
    glue["resolve_error"] = None
    glue["model_error"] = FileNotFoundError("no config.json in /nowhere")
    with pytest.raises(VerifyError, match="parity synth-model"):
        verify(VerifyOptions())
    glue["model_error"] = None
    glue["capture"].meta["checkpoint_sha256"] = "99" * 32
    with pytest.raises(VerifyError, match="delete the stale capture"):
        verify(VerifyOptions())


# ------------------------------------------------------------------ report outputs

def test_an_unwritable_report_path_is_refused_before_the_run(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    ran = []

    def verify_fn(options, progress):
        ran.append(options)
        return _seam(FakeCapture())(options, progress)

    args = _cli_args("--json", str(tmp_path / "ok.json"), "--html", str(blocker / "r.html"))
    assert verify_command.run(args, verify_fn=verify_fn) == 2
    assert ran == [] and not (tmp_path / "ok.json").exists()
    err = " ".join(capsys.readouterr().err.split())
    assert f"cannot write the html report to {blocker / 'r.html'} ({blocker} is not a directory); pass another path or --reports-dir" in err


@pytest.mark.parametrize("faults, expected_code", [({}, 2), ({(0, "logits"): 1.0}, 1)])
def test_a_report_that_fails_to_write_keeps_a_divergence_at_one(tmp_path, monkeypatch, capsys, faults, expected_code):
    from harness import report as reports

    def disk_full(report, path):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(reports, "write_html", disk_full)
    args = _cli_args("--json", str(tmp_path / "r.json"), "--html", str(tmp_path / "r.html"))
    assert verify_command.run(args, verify_fn=_seam(FakeCapture(), faults=faults)) == expected_code
    assert json.loads((tmp_path / "r.json").read_text())["modes"]  # the other report is still written
    captured = capsys.readouterr()
    err, out = " ".join(captured.err.split()), " ".join(captured.out.split())
    why = f"could not write the html report {tmp_path / 'r.html'}: [Errno 28] No space left on device"
    assert why in err
    # the verdict line counts the missing report, and states the exit code the command returns
    if expected_code == 2:
        assert f"ERROR: every mode agrees with the reference, but 1 report could not be written ({why}) (exit 2)" in out
    else:
        assert f"; also 1 report could not be written ({why}) (exit 1)" in out and "FAIL: divergence in" in out


def test_a_report_that_breaks_the_schema_is_not_written(tmp_path, capsys):
    def verify_fn(options, progress):
        report = _seam(FakeCapture())(options, progress)
        report["reference"]["kind"] = None
        return report

    assert verify_command.run(_cli_args("--json", str(tmp_path / "r.json")), verify_fn=verify_fn) == 2
    assert list(tmp_path.iterdir()) == []
    err = " ".join(capsys.readouterr().err.split())
    assert "internal error: the report does not follow the report schema ($.reference.kind: None is not one of" in err


@pytest.mark.parametrize("under", ["file", "file/captures"])
def test_an_unusable_captures_dir_is_a_path_error_before_the_reference_runs(glue, tmp_path, under):
    from harness.verify import VerifyOptions, verify

    (tmp_path / "file").write_text("")
    resolved = []
    glue["resolve_error"] = None

    def must_not_resolve(*args, **kwargs):
        resolved.append(args)

    sys.modules["reference_env.captures"].resolve_reference = must_not_resolve
    folder = tmp_path / under
    with pytest.raises(VerifyError) as info:
        verify(VerifyOptions(tokens=STEPS, captures_dir=str(folder)))
    why = f"{tmp_path / 'file'} is not a directory" if under == "file" else \
        f"cannot write into {folder}: Not a directory"
    assert str(info.value) == (f"cannot use the captures directory {folder} ({why}); "
                               "pass --captures-dir DIR in a place you can write")
    assert resolved == [] and glue["captured"] == 0


# ------------------------------------------------------------------ baselines of another run

@pytest.mark.parametrize("edit, difference", [
    (lambda b: b.update(prompt="other"), "prompt 'other' (this run: 'p')"),
    (lambda b: b.update(input_ids=[9, 9]), "input ids [9, 9] (this run: [3, 1, 4, 1])"),
    (lambda b: b["checkpoint"].update(sha256="12" * 32), "checkpoint sha256 121212121212… (this run: abababababab…)"),
    (lambda b: b.update(output_ids=[1, 2]), "2 tokens (this run: 3)"),
    (lambda b: b.update(output_ids=[1, 2, 3, 4]), "4 tokens (this run: 3)"),  # longer is no more comparable
    (lambda b: b.update(injected_fault={"op": "exp", "factor": 1.01, "offset": 0.0}),
     "an injected fault (exp: y*1.01+0; a harness self-test, not the compiler's errors)"),
])
def test_a_baseline_of_another_run_is_refused_naming_the_difference(edit, difference):
    capture = FakeCapture()
    baseline = verify_fake(capture, factory(capture))
    edit(baseline)
    with pytest.raises(VerifyError) as info:
        verify_fake(capture, factory(capture), baseline=baseline, baseline_source={"path": "b.json", "sha256": "0"})
    assert str(info.value) == (f"the baseline b.json is of another run — {difference}; its errors are not "
                               "comparable. Pass a baseline made with the same --prompt, --tokens and model, "
                               "without --inject-fault")


def test_verify_records_which_baseline_file_it_used(glue, tmp_path):
    import hashlib

    from harness.report import write_json
    from harness.verify import VerifyOptions, verify

    first = verify(VerifyOptions(tokens=STEPS))
    path = write_json(first, tmp_path / "base.json")
    report = verify(VerifyOptions(tokens=STEPS, baseline=str(path)))
    assert report["baseline"] == {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                                  "created": first["created"]}
    other = verify(VerifyOptions(tokens=STEPS, prompt="another prompt"))
    write_json(other, path)
    with pytest.raises(VerifyError, match=f"the baseline {path} is of another run — prompt 'another prompt'"):
        verify(VerifyOptions(tokens=STEPS, baseline=str(path)))
    assert exit_code(report) == 0
    from harness.schema import validate_report
    validate_report(report)


def test_cli_prints_the_reference_banner_once_on_a_terminal(glue, tmp_path, monkeypatch):
    """The bundled reference's banner heads the report; the set-up must not print it again above
    the progress bar (nor make its title the spinner's label)."""
    from harness import terminal

    banner = FakeResolved.banner
    seen_progress = []

    def resolve_reference(spec, revision=None, strict=False, progress=None):
        if progress is not None:  # what the real resolver does on falling back
            progress(banner)
        return FakeResolved()

    sys.modules["reference_env.captures"].resolve_reference = resolve_reference
    glue["capture"] = FakeCapture(meta={"checkpoint_sha256": CHECKPOINT["sha256"]})
    out = Console(record=True, width=300, force_terminal=True)
    err = Console(record=True, width=300, force_terminal=True)
    monkeypatch.setattr(terminal, "console", lambda stderr=False, **_: err if stderr else out)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)

    def verify_fn(options, progress):
        def spy(message, completed=None, total=None):
            seen_progress.append(message)
            progress(message, completed, total)
        from harness.verify import verify
        return verify(options, spy)

    args = _cli_args("--tokens", str(STEPS), "--json", str(tmp_path / "r.json"))
    assert verify_command.run(args, verify_fn=verify_fn) == 0
    printed = out.export_text() + err.export_text()
    assert printed.count(banner) == 1
    assert banner not in seen_progress  # so it never became the bar's label either
    assert any("bundled, not the pinned upstream" in m for m in seen_progress)


def test_callers_are_made_stable_even_with_spaces_in_the_path():
    from harness.verify import PROJECT_ROOT, _stable_caller

    inside = PROJECT_ROOT / "my dir" / "model.py"
    assert _stable_caller(f"{inside}:12 (attention)") == "my dir/model.py:12 (attention)"
    assert _stable_caller("/elsewhere/x y.py:3 (f)") == "/elsewhere/x y.py:3 (f)"


@pytest.mark.parametrize("own_kernel_delta, expected", [
    (5.0, "yet the sublayer's own kernel diverges on the same input: the miscompile depends on how the kernel is fused"),
    (0.0, "and so does the sublayer's own kernel on the reference's input (the error comes from the compiler's upstream"),
])
def test_nothing_localized_says_whether_the_sublayers_own_kernel_reproduces_it(own_kernel_delta, expected):
    """No op off its rounding in the op-by-op re-run: either the ordinary kernel diverges on the
    reference's input too (a fusion-dependent miscompile the instrumented re-run hides) or it does
    not (the error accumulated upstream)."""
    capture = FakeCapture()
    make = factory(capture, faults={(0, "h.1.output"): 5.0})
    reruns = []

    def make_rerunnable(kind, target):
        runner = make(kind, target)
        runner.localized = None

        def rerun(tensor, ids, upstream):
            reruns.append((tensor, upstream))
            value = capture.tensor(len(ids) - len(PROMPT_IDS), tensor).copy()
            value.flat[0] += own_kernel_delta
            return value
        runner.rerun = rerun
        return runner

    report = verify_fake(capture, make_rerunnable, plans=plan_modes(["subgraph"]))
    fd = report["modes"]["subgraph"]["first_divergence"]
    assert fd["tensor"] == "h.1.output" and fd["op"] is None
    assert expected in fd["localization"]
    assert [t for t, _ in reruns] == ["h.1.output"]
    np.testing.assert_array_equal(reruns[0][1], capture.tensor(0, "h.1.attention"))


# ------------------------------------------------------------------ kernels MLIR refuses

def _refused(op: str = "transpose") -> Exception:
    from compiler import CompileError
    from compiler.errors import OpOrigin
    from compiler.graph import SourceLoc

    origin = OpOrigin(op, SourceLoc("/x/model.py", 12, "heads", (("/x/model.py", 30, "block"),)), 7)
    return CompileError("Unable to parse module assembly", "'linalg.transpose' op dim(result, 0) = 2 doesn't match",
                        origin, "linalg.transpose")


class RefusingRunner(FakeRunner):
    """A fake runner whose attention kernel MLIR refuses at step ``refuse_at`` (the embedding ran
    first), or whose free-running decode hits a refused kernel."""

    def __init__(self, *args, refuse_at=None, refuse_in_generate=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.refuse_at, self.refuse_in_generate = refuse_at, refuse_in_generate

    def forward(self, ids, trace=None):
        step = len(ids) - len(PROMPT_IDS)
        if step == self.refuse_at:
            if trace is not None and self.kind == "subgraph":
                trace["embedding"] = self.capture.tensor(step, "embedding")
            raise _refused()
        return super().forward(ids, trace)

    def generate(self, ids, n_tokens):
        if self.refuse_in_generate:
            raise _refused()
        return super().generate(ids, n_tokens)


def _refusing(capture, **kwargs):
    return lambda kind, target: RefusingRunner(capture, kind, **{k: v for k, v in kwargs.items()})


def test_a_kernel_mlir_refuses_is_a_compile_error_finding_at_its_step_and_tensor():
    capture = FakeCapture()
    report = verify_fake(capture, _refusing(capture, refuse_at=1), plans=plan_modes(["subgraph"]))
    validate_report(report)
    mode = report["modes"]["subgraph"]
    assert mode["status"] == "compile_error" and exit_code(report) == 1
    # step 0 in full, then what step 1 computed before its attention kernel
    assert [(c["step"], c["tensor"]) for c in mode["checks"]] == \
        [(0, name) for name in capture.tensor_names] + [(1, "embedding")]
    assert all(c["passed"] for c in mode["checks"])
    assert mode["forced_tokens"]["actual"] == capture.output_ids[:1]
    fd = mode["first_divergence"]
    assert (fd["step"], fd["tensor"], fd["op"], fd["sublayer"]) == (1, "h.0.attention", "transpose", "h.0.attention")
    assert (fd["source"], fd["function"], fd["called_from"]) == ("/x/model.py:12", "heads", ["/x/model.py:30 (block)"])
    assert fd["max_abs_error"] is None and fd["mlir_op"] == "linalg.transpose"
    assert fd["reason"] == ("the compiler's code for h.0.attention does not compile: 'linalg.transpose' op "
                            "dim(result, 0) = 2 doesn't match")
    assert mode["reason"].startswith("step 1, h.0.attention does not compile: MLIR rejected the compiled module")


def test_a_divergence_before_a_refused_kernel_stays_the_first_and_no_token_is_claimed():
    capture = FakeCapture()
    make = _refusing(capture, refuse_at=1, faults={(0, "h.1.output"): 1.0})
    mode = verify_fake(capture, make, plans=plan_modes(["subgraph"]))["modes"]["subgraph"]
    assert mode["status"] == "diverged"
    assert (mode["first_divergence"]["step"], mode["first_divergence"]["tensor"]) == (0, "h.1.output")
    assert "then step 1, h.0.attention does not compile: MLIR rejected" in mode["reason"]
    assert "tokens differ" not in mode["reason"]  # the tokens after step 0 were never computed


def test_a_kernel_refused_in_the_free_running_decode_says_so():
    capture = FakeCapture()
    mode = verify_fake(capture, _refusing(capture, refuse_in_generate=True),
                       plans=plan_modes(["fused"]))["modes"]["fused"]
    assert mode["status"] == "compile_error"
    assert mode["reason"].startswith("the free-running decode does not compile:")
    assert mode["first_divergence"]["reason"].startswith("the free-running decode's code does not compile:")
    assert [c["step"] for c in mode["checks"]] == list(range(STEPS))  # every forced step was checked


def test_a_fused_kernel_refused_is_placed_in_the_sublayer_the_runner_names():
    """One fused kernel computes every sublayer: the runner says which one made the refused op."""
    capture = FakeCapture()

    class Marking(RefusingRunner):
        def sublayer_of_node(self, node_id):
            return {7: "h.1.attention"}.get(node_id)

    mode = verify_fake(capture, lambda kind, target: Marking(capture, kind, refuse_at=0),
                       plans=plan_modes(["fused"]))["modes"]["fused"]
    fd = mode["first_divergence"]
    assert (fd["tensor"], fd["sublayer"], fd["op"]) == ("logits", "h.1.attention", "transpose")


def test_a_tensor_the_compiler_did_not_produce_is_a_divergence():
    capture = FakeCapture()

    class Dropping(FakeRunner):
        def forward(self, ids, trace=None):
            logits = super().forward(ids, trace)
            if trace is not None:
                trace.pop("h.1.output")
            return logits

    report = verify_fake(capture, lambda kind, target: Dropping(capture, kind), plans=plan_modes(["subgraph"]))
    validate_report(report)
    mode = report["modes"]["subgraph"]
    assert mode["status"] == "diverged" and exit_code(report) == 1
    fd = mode["first_divergence"]
    assert (fd["step"], fd["tensor"]) == (0, "h.1.output")
    assert "the compiler produced no 'h.1.output' tensor" in fd["reason"]


def test_lockstep_tokens_that_differ_fail_even_when_free_running_agrees():
    """The forced (lockstep) pick at a near-tie flips while the free-running decode agrees: still a
    divergence, named as the forced tokens'."""
    capture = FakeCapture(near_tie_step=1, tie_margin=1e-5)

    class Flipping(FakeRunner):
        def forward(self, ids, trace=None):
            logits = super().forward(ids, trace).copy()  # the traced logits stay the reference's
            if len(ids) - len(PROMPT_IDS) == 1:
                logits[(int(np.argmax(logits)) + 1) % VOCAB] += 1e-4
            return logits

    report = verify_fake(capture, lambda kind, target: Flipping(capture, kind), plans=plan_modes(["fused"]))
    mode = report["modes"]["fused"]
    assert not mode["forced_tokens"]["agree"] and mode["tokens"]["agree"]
    assert mode["status"] == "diverged" and exit_code(report) == 1
    assert "forced tokens differ from step 1" in mode["reason"]


def test_a_forced_token_that_differs_only_at_the_last_step_is_a_divergence():
    """Every lockstep step counts, the last one too: the compiler's pick flips at step STEPS-1 only."""
    last = STEPS - 1
    capture = FakeCapture(near_tie_step=last, tie_margin=1e-5)

    class FlippingLast(FakeRunner):
        def forward(self, ids, trace=None):
            logits = super().forward(ids, trace).copy()  # the traced logits stay the reference's
            if len(ids) - len(PROMPT_IDS) == last:
                logits[(int(np.argmax(logits)) + 1) % VOCAB] += 1e-4
            return logits

    report = verify_fake(capture, lambda kind, target: FlippingLast(capture, kind), plans=plan_modes(["fused"]))
    mode = report["modes"]["fused"]
    flipped = (capture.output_ids[last] + 1) % VOCAB
    assert mode["forced_tokens"] == {"expected": capture.output_ids,
                                     "actual": capture.output_ids[:last] + [flipped], "agree": False}
    assert mode["status"] == "diverged" and exit_code(report) == 1
    assert f"forced tokens differ from step {last}" in mode["reason"]


def test_a_kernel_refused_in_the_free_running_decode_is_placed_at_the_last_step():
    """The decode runs after every lockstep step passed: its record names the last step there is
    (steps count from 0), never one past the end."""
    capture = FakeCapture()
    mode = verify_fake(capture, _refusing(capture, refuse_in_generate=True),
                       plans=plan_modes(["fused"]))["modes"]["fused"]
    fd = mode["first_divergence"]
    assert (fd["step"], fd["tensor"]) == (STEPS - 1, "logits")
