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
