"""One module per ``parity`` subcommand. Each exposes ``HELP`` (one line),
``configure(parser)`` to declare its arguments and ``run(args) -> int`` that
returns the process exit code."""
