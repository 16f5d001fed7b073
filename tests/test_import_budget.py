"""The speed decisions on the pre-commit path, guarded.

A one-file ``kvrecords validate`` (what pre-commit runs on every commit) is mostly import time.
It runs without click (about 32 ms to import), dataclasses (which loads inspect, about 10 ms),
jsonschema (about 83 ms) and ruamel.yaml (about 25 ms): the schema check is compiled, and the
other commands load what they need. This test fails when an import brings one of them back.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SEED = "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
OUTSIDE_THE_BUDGET = ("click", "dataclasses", "jsonschema", "ruamel")

# The console script's own body, then the loaded modules that are outside the budget.
PROBE = f"""
import sys
from kvrecords.cli.main import main
code = main()
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {OUTSIDE_THE_BUDGET!r})
print(code, loaded)
"""


def test_a_clean_one_file_validate_loads_none_of_the_heavy_modules(fixture_root: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "validate", SEED],
        cwd=fixture_root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.stdout.splitlines() == ["1 file checked, no problems", "0 []"], done.stderr
