"""CLI subcommands: each module has `register(subparsers)` that sets the handler as `func`."""
