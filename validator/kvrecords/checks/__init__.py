"""The checks: one module per family, each a set of small functions of parsed data that yield
problems. Imports ``kv``, ``dataset`` and ``problems``; never the runner, the tools or the CLI."""
