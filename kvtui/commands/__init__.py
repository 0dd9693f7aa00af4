"""One module per ``kvtui`` subcommand. Each exposes ``register(subparsers)``, which adds its parser and
sets ``func(args) -> int`` as the parser default. Command modules import heavy things (Mooncake, Textual)
inside ``func`` so that ``kvtui --help`` stays fast and works without the Mooncake wheel."""

COMMANDS = ("watch", "run", "bench", "replay", "report", "export", "keys", "trace_stats", "traces", "layout", "sweep",
            "compare", "serve", "soak", "worker", "doctor")
