"""`parity fuzz`: differential fuzzing of the compiler against NumPy — every op in
the registry, then random whole programs — with a rich (or one-line JSON) summary;
failures are shrunk and written to the corpus. Exit 1 when anything failed, 2 when the run
could not happen (a budget that tests nothing, an unwritable corpus, a corpus file that is
not a replayable entry)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
from pathlib import Path


DEFAULT_CORPUS = Path("tests") / "fuzz_corpus"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", choices=("quick", "long"), default="quick", help="budget preset (default quick)")
    parser.add_argument("--examples", type=int, default=None, help="examples per op (overrides the profile)")
    parser.add_argument("--graph-examples", type=int, default=None, help="random programs to run (overrides the profile)")
    parser.add_argument("--seconds", type=float, default=None, help="wall-clock budget (overrides the profile)")
    parser.add_argument("--seed", type=int, default=0, help="base seed; the same seed reproduces the same run")
    parser.add_argument("--ops", default=None, help="comma-separated registry op names (default: all)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                        help=f"where shrunk failures are written (default {DEFAULT_CORPUS})")
    parser.add_argument("--no-corpus", action="store_true", help="do not write failures anywhere")
    parser.add_argument("--replay", type=Path, nargs="+", default=None, metavar="FILE",
                        help="replay corpus files (or directories of them) instead of fuzzing")
    parser.add_argument("--list-ops", action="store_true",
                        help="list the registry and exit (with --json: one JSON line, a list of objects)")
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the rich summary")


def _error(message: str) -> int:
    """One plain line on stderr (rich would wrap a long path at 80 columns when piped) and exit 2, "could not run"."""
    print(f"parity fuzz: error: {message}", file=sys.stderr)
    return 2


def _profile(args):
    """The profile with the command line's overrides; ``ValueError`` for a budget that would test nothing."""
    from harness.fuzzing.engine import PROFILES
    profile = PROFILES[args.profile]
    changes = {k: v for k, v in (("examples_per_op", args.examples), ("graph_examples", args.graph_examples),
                                 ("seconds", args.seconds)) if v is not None}
    for name, value in changes.items():
        if value < 0:
            raise ValueError(f"--{name.replace('_per_op', '').replace('_', '-')} must not be negative, got {value}")
    if args.seconds is not None and not (math.isfinite(args.seconds) and args.seconds > 0):
        raise ValueError(f"--seconds must be a positive number of seconds, got {args.seconds:g}")
    profile = dataclasses.replace(profile, **changes)
    if profile.examples_per_op == 0 and profile.graph_examples == 0:
        raise ValueError("--examples 0 and --graph-examples 0 leave nothing to test")
    return profile


def _selected_ops(args, oi) -> list[str] | None:
    """The --ops names (None: every op); ``ValueError`` for an empty list or a name the registry lacks."""
    if args.ops is None:
        return None
    ops = [o.strip() for o in args.ops.split(",") if o.strip()]
    if not ops:
        raise ValueError(f"--ops {args.ops!r} names no op; leave it out to fuzz every op")
    unknown = [o for o in ops if o not in oi.REGISTRY]
    if unknown:
        raise ValueError(f"unknown op(s) {', '.join(unknown)}; see `parity fuzz --list-ops`")
    return ops


def _corpus(args) -> Path | None:
    """Where findings go, checked writable now: a finding written after an hour of fuzzing must not be what fails."""
    if args.no_corpus:
        return None
    from harness.report import unwritable_reason

    reason = unwritable_reason(args.corpus, directory=True)
    if reason:
        raise ValueError(f"--corpus {args.corpus}: {reason} (or pass --no-corpus)")
    return args.corpus


def run(args, *, console=None) -> int:
    from compiler import opinfo as oi
    from harness import terminal
    from harness.fuzzing.engine import CorpusError

    console = console or terminal.console()
    if args.list_ops:
        return _list_ops(console, oi, args.json)
    try:
        if args.replay:
            return _replay(args, console)
        ops = _selected_ops(args, oi)
        profile = _profile(args)
        corpus = _corpus(args)
    except (ValueError, CorpusError) as exc:
        return _error(str(exc))
    from harness.fuzzing.engine import fuzz
    from harness.terminal import plural

    if args.json:
        summary = fuzz(profile, args.seed, corpus, ops)
        print(json.dumps(summary.as_json()))
    else:
        with console.status("fuzzing…") as status:
            def progress(s):
                status.update(f"fuzzing… {plural(len(s.ops_covered), 'op')}, {plural(s.examples, 'op example')}, "
                              f"{plural(s.graph_examples, 'graph example')}, {plural(len(s.failures), 'failure')}")
            summary = fuzz(profile, args.seed, corpus, ops, progress=progress)
        _render(console, summary, profile, args, ops or list(oi.REGISTRY))
    return 1 if summary.failures else 0


def _render(console, summary, profile, args, selected: list[str]) -> None:
    """``selected``: the ops this run was asked to fuzz (``--ops``, else the whole registry)."""
    from rich.markup import escape
    from rich.panel import Panel
    from rich.table import Table

    stats = Table.grid(padding=(0, 2))
    stats.add_row("ops covered", f"{len(summary.ops_covered)} of {len(selected)}" + ("" if args.ops is None else " selected"))
    stats.add_row("op examples", str(summary.examples))
    stats.add_row("graph examples", str(summary.graph_examples))
    stats.add_row("failures", f"[bold red]{len(summary.failures)}[/]" if summary.failures else "[green]0[/]")
    stats.add_row("time", f"{summary.seconds:.1f} s" + (" (time budget reached)" if summary.stopped_by_time else ""))
    stats.add_row("profile", f"{args.profile}, seed {args.seed}, {profile.examples_per_op}/op, "
                             f"{profile.graph_examples} graphs, {profile.seconds:g} s")
    title = "[bold red]parity fuzz: failures[/]" if summary.failures else "[bold green]parity fuzz: no failures[/]"
    console.print(Panel(stats, title=title, expand=False))
    missing = [n for n in selected if n not in summary.ops_covered]
    if missing:
        console.print(f"[yellow]not reached in this budget:[/] {', '.join(missing)}", highlight=False)
    if summary.failures:
        table = Table(title="failures (shrunk)", show_lines=True)
        table.add_column("op / graph")
        table.add_column("message", overflow="fold")
        table.add_column("reproducer", overflow="fold")
        for f in summary.failures:
            repro = f.reproducer if len(f.reproducer) < 300 else f.reproducer[:300] + "…"
            table.add_row(escape(f.op_or_graph), escape(f.message), escape(repro))
        console.print(table)
        console.print("replay with: parity fuzz --replay FILE")


def op_rows(oi) -> list[dict]:
    """The registry as JSON-ready rows: what the --list-ops table shows, with numbers kept numbers."""
    def bound(v):
        return v if v is None or math.isfinite(v) else None  # JSON has no infinities; None means unbounded

    return [{"name": o.name, "numpy": o.numpy_name, "family": o.family, "arity": o.arity,
             "dtypes": [str(d) for d in o.dtypes],
             "domains": [{"lo": bound(d.lo), "hi": bound(d.hi), "finite_only": not d.special} for d in o.domains],
             "tolerance_ulps": o.tolerance.ulps,
             "cpu_tolerance_ulps": 0.0 if o.exact_on_cpu else o.tolerance.ulps}  # (NumPy's loop, BLAS call or order)
            for o in oi.REGISTRY.values()]


def _list_ops(console, oi, as_json: bool) -> int:
    if as_json:
        print(json.dumps(op_rows(oi), allow_nan=False))
        return 0
    header = ("name", "NumPy", "family", "arity", "dtypes", "domain", "tolerance")
    rows = []
    for o in oi.REGISTRY.values():
        dom = ", ".join(f"[{d.lo if d.lo is not None else '-'}, {d.hi if d.hi is not None else '+'}]"
                        + ("" if d.special else " finite") for d in o.domains)
        rows.append((o.name, o.numpy_name, o.family, str(o.arity), oi.describe_dtypes(o.dtypes), dom,
                     ("exact" if o.tolerance.ulps == 0 else f"{o.tolerance.ulps:g} ulp")
                     + (" (CPU: exact)" if o.exact_on_cpu and o.tolerance.ulps else "")))
    if not console.is_terminal:
        # piped: rich would wrap the table to 80 columns and cut names short; tab-separated lines never are
        for row in (header, *rows):
            print("\t".join(row), file=console.file)
        return 0
    from rich.table import Table
    table = Table(title=f"op registry ({len(oi.REGISTRY)} ops)")
    for col in header:
        table.add_column(col, no_wrap=col == "name")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    return 0


def _replay_files(paths) -> list[tuple[Path, dict]]:
    """(file, checked entry) for every file given or inside a directory given, all read before any runs."""
    from harness.fuzzing.engine import load_corpus, read_corpus_entry

    entries = []
    for p in paths:
        if p.is_dir():
            entries += load_corpus(p)
        elif p.is_file():
            entries.append((p, read_corpus_entry(p)))
        else:
            raise ValueError(f"no such corpus file or directory: {p}")
    return entries


def _replay(args, console) -> int:
    from rich.markup import escape

    from harness.fuzzing.isolate import IsolatedRunner

    entries = _replay_files(args.replay)
    failures = []
    with IsolatedRunner() as runner:
        for f, entry in entries:
            outcome = runner.run(entry["case"])
            if outcome.failed:
                failures.append({"op_or_graph": entry.get("op_or_graph", "?"), "reproducer": str(f),
                                 "message": f"[{outcome.status}] {outcome.message}"})
            if not args.json:
                mark = "[red]FAIL[/]" if outcome.failed else "[green]pass[/]"
                console.print(f"{mark} {f}  {escape(entry.get('description', ''))}", highlight=False)
                if outcome.failed:
                    console.print(f"     {escape(outcome.message)}", highlight=False)
    if args.json:
        print(json.dumps({"ops_covered": 0, "examples": len(entries), "graph_examples": 0, "failures": failures}))
    return 1 if failures else 0
