"""The `parity` dispatcher's exit statuses for what no subcommand handles
(an unexpected exception is "could not run", 2, never the divergence status 1)
and argument checks shared by the subcommands."""

from __future__ import annotations

import pytest

from harness import cli


# ------------------------------------------------------------------ unexpected exceptions

def _explode(args, **kwargs):
    raise ValueError("bad\nvalue")


def test_an_unexpected_exception_exits_two_with_one_line(monkeypatch, capsys):
    import harness.commands.report as report_module

    monkeypatch.delenv("PARITY_DEBUG", raising=False)
    monkeypatch.setattr(report_module, "run", _explode)
    assert cli.main(["report", "whatever.json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("parity report: internal error: ValueError at test_harness_cli.py:")
    assert "bad value (exit 2: could not run; set PARITY_DEBUG=1 for the traceback)" in err


def test_parity_debug_adds_the_traceback(monkeypatch, capsys):
    import harness.commands.report as report_module

    monkeypatch.setenv("PARITY_DEBUG", "1")
    monkeypatch.setattr(report_module, "run", _explode)
    assert cli.main(["report", "whatever.json"]) == 2
    err = capsys.readouterr().err
    assert "internal error: ValueError" in err.splitlines()[0]
    assert "Traceback (most recent call last)" in err and 'raise ValueError("bad\\nvalue")' in err


@pytest.mark.parametrize("count", ["0", "-3"])
def test_bench_refuses_a_token_count_below_one(count, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["bench", "--tokens", count])
    assert info.value.code == 2
    assert f"argument --tokens: '{count}' must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize("count", ["-1", "x"])
def test_generate_refuses_a_negative_or_non_integer_token_count_in_argparse_words(count, capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["generate", "Hi", "--tokens", count])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert (f"argument --tokens: '{count}' must be at least 0" if count == "-1"
            else f"argument --tokens: '{count}' is not an integer") in err


# ------------------------------------------------------------------ a reader that closes stdout

def test_a_closed_stdout_ends_quietly_with_141(tmp_path):
    import subprocess
    import sys

    script = ("import sys\n"
              "import harness.commands.report as report\n"
              "def chatty(args):\n"
              "    for _ in range(100000):\n"
              "        print('x' * 100)\n"
              "report.run = chatty\n"
              "from harness.cli import main\n"
              "sys.exit(main(['report', 'whatever.json']))\n")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(300) == b"x" * 100 + b"\n" + b"x" * 100 + b"\n" + b"x" * 98
    proc.stdout.close()  # as `| head -c 300` does
    assert proc.wait(timeout=120) == 141
    assert proc.stderr.read() == b""


def test_a_closed_stdout_under_rich_is_141_and_the_report_files_are_written(tmp_path):
    """Rich's own answer to a closed stdout is SystemExit(1), the divergence status; and the report
    files must not depend on anyone reading the terminal."""
    import json
    import subprocess
    import sys

    from test_harness_reports import make_report  # tests/ is on sys.path (pytest prepends it)

    report = tmp_path / "r.json"
    big = make_report()
    big["modes"]["subgraph"]["checks"] *= 400  # terminal output far beyond a pipe's buffer
    report.write_text(json.dumps(big))
    html, junit = tmp_path / "r.html", tmp_path / "r.xml"
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "report", str(report), "--html", str(html),
                             "--junit", str(junit), "--exit-code"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout.read(10)
    proc.stdout.close()
    assert proc.wait(timeout=120) == 141
    assert proc.stderr.read() == b""
    assert "<html" in html.read_text() and "<testsuites" in junit.read_text()


# ------------------------------------------------------------------ prompts and models checked up front

@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from compiler.gpt2.synth import synthesize_checkpoint

    path = tmp_path_factory.mktemp("cli") / "tiny"
    synthesize_checkpoint(path, config="tiny", seed=0)
    return path


@pytest.fixture
def no_timing(monkeypatch):
    """Bench must refuse before it times anything (the reference decode comes first)."""
    import harness.commands.bench as bench

    def reference_decode(*args):
        raise AssertionError("timing started")
    monkeypatch.setattr(bench, "reference_decode", reference_decode)


def test_bench_refuses_an_empty_prompt(tiny_model, no_timing, capsys):
    assert cli.main(["bench", "--model", str(tiny_model), "--prompt", ""]) == 2
    assert capsys.readouterr().err == "parity bench: error: the prompt is empty: at least one token is needed\n"


def test_bench_refuses_a_prompt_beyond_the_context(tiny_model, no_timing, capsys):
    prompt = "hello " * 60  # 61 tokens; the tiny model's context is 64
    assert cli.main(["bench", "--model", str(tiny_model), "--prompt", prompt, "--tokens", "10"]) == 2
    assert capsys.readouterr().err == (
        "parity bench: error: prompt (61 tokens) + 10 new tokens needs 61 + 10 - 1 = 70 positions "
        "(the last new token is not fed back), which exceeds the context length 64\n")


def test_bench_without_a_gpu_stops_before_loading_the_model(monkeypatch, no_timing, capsys):
    import compiler.gpt2
    import compiler.gpu

    monkeypatch.setattr(compiler.gpu, "device_available", lambda: (False, "no CUDA driver (test)"))

    def resolve_model_dir(*args, **kwargs):
        raise AssertionError("the model was loaded")
    monkeypatch.setattr(compiler.gpt2, "resolve_model_dir", resolve_model_dir)
    assert cli.main(["bench", "--target", "gpu"]) == 2
    assert capsys.readouterr().err == "parity bench: error: no GPU device: no CUDA driver (test)\n"


@pytest.mark.parametrize("command", ["generate", "bench", "verify"])
def test_a_prompt_that_is_not_utf8_is_refused(command, tiny_model, no_timing, capsys, tmp_path):
    prompt = b"ab\xff".decode("utf-8", "surrogateescape")  # how Python hands over such command-line bytes
    argv = [command, prompt] if command == "generate" else [command, "--prompt", prompt]
    if command == "verify":  # refused before any reference runs, not reported as the reference's failure
        argv += ["--json", str(tmp_path / "r.json")]
    assert cli.main([*argv, "--model", str(tiny_model)]) == 2
    err = capsys.readouterr().err
    assert err.endswith("the prompt is not valid UTF-8 (byte 0xff at character 2)\n")
    if command != "verify":
        assert err == f"parity {command}: error: the prompt is not valid UTF-8 (byte 0xff at character 2)\n"


def test_a_model_that_is_a_file_is_not_a_directory(tiny_model, capsys, monkeypatch):
    weights = tiny_model / "model.safetensors"
    assert cli.main(["generate", "hi", "--model", str(weights)]) == 2
    assert capsys.readouterr().err == (
        f"parity generate: error: model directory {weights} is not a directory (a checkpoint is a directory)\n")
    monkeypatch.setenv("PARITY_MODEL", str(weights))
    assert cli.main(["generate", "hi"]) == 2
    assert capsys.readouterr().err == (
        f"parity generate: error: $PARITY_MODEL points at {weights}, which is not a directory (a checkpoint is a directory)\n")


# ------------------------------------------------------------------ help

def test_every_command_and_option_has_help_and_top_level_help_imports_no_command(capsys):
    import argparse
    import subprocess
    import sys

    for name in cli.SUBCOMMANDS:
        parser = cli.build_parser([name])
        (commands,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        undocumented = [a.option_strings or a.dest for a in commands.choices[name]._actions if not a.help]
        assert undocumented == [], name
    probe = ("import sys\nfrom harness import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in sys.modules if m.startswith('harness.commands.')), file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    help_text = " ".join(out.stdout.split())  # argparse wraps lines
    for name, (_, summary) in cli.SUBCOMMANDS.items():
        assert f"{name} {summary}" in help_text
    assert out.stderr.strip() == "[]"


@pytest.mark.parametrize("count, start", [(1, "1 kernel for fused mode on cpu: 1 built, 0 already cached"),
                                          (2, "2 kernels for fused mode on cpu: 2 built, 0 already cached")])
def test_build_only_summary_counts_kernels_in_agreement(capsys, count, start):
    import argparse
    import types

    from harness.commands import generate

    log = types.SimpleNamespace(kernels=[types.SimpleNamespace(function=f"f{i}", built=True, seconds=0.5)
                                         for i in range(count)])
    args = argparse.Namespace(mode="fused", target="cpu", json=False)
    assert generate.report_build(log, args) == 0
    assert capsys.readouterr().out.startswith(start)


def test_the_readme_command_table_names_every_subcommand_and_flag():
    """The README's table is where users look up a flag: one the CLI has and the table lacks has drifted."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    rows = {m.group(1): re.split(r"(?<!\\)\|", line)[1]
            for line in readme.splitlines() if (m := re.match(r"^\| `parity (\S+)", line))}
    parser = cli.build_parser([])
    commands = parser._subparsers._group_actions[0].choices
    assert set(rows) == set(commands)
    for name, sub in commands.items():
        flags = {o for action in sub._actions for o in action.option_strings if o.startswith("--") and o != "--help"}
        assert not [f for f in sorted(flags) if f not in rows[name]], name
