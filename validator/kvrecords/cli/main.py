"""The ``kvrecords`` entry point: one exit point, and pre-commit's call without click.

``kvrecords validate FILE...`` is what pre-commit runs on every commit, so it runs here without
importing click (about a seventh of that run). Every other command line, including any option
or ``--help``, goes through click in ``app.py``. Exit codes: 0 clean, 1 problems found,
2 usage or internal error; never a traceback.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from kvrecords.cli.common import run_validate


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line (``sys.argv`` when ``argv`` is None); its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["validate"] and not any(arg.startswith("-") for arg in args[1:]):
            return run_validate([Path(arg) for arg in args[1:]])
        from kvrecords.cli.app import run_click

        return run_click(args)
    except SystemExit as stop:  # commands and usage failures stop with their exit code
        return stop.code if isinstance(stop.code, int) else 2
    except KeyboardInterrupt:
        return 2
    except BrokenPipeError:
        # the reader stopped early (kvrecords validate | head): nothing is left to say, and the
        # interpreter's last flush must not fail on the closed pipe either
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as error:
        print(f"kvrecords: internal error: {type(error).__name__}: {error}", file=sys.stderr)
        return 2
