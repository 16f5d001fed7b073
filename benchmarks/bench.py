#!/usr/bin/env python3
"""Benchmark ``kvrecords validate`` against check-jsonschema, its peer as a schema pre-commit hook.

For each dataset size N the script builds, in a temporary folder, a dataset made of a copy of
the repository's schema/, models/ and hardware/ plus N valid records generated from the seed
record, checks that ``kvrecords validate`` passes it, then times both tools as subprocesses in
alternating runs (ours, peer, ours, peer, ...) and reads each child's peak memory from its own
``os.wait4`` rusage. On the largest dataset it also times the one-changed-file case the way
pre-commit runs it. ``--profile`` adds ``-X importtime`` and cProfile reports for the engineers.

Standard library only; see benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

SEED_RELATIVE = "records/kv-efficiency/vllm-qwen38-27b-apc-150k-rtx5090.yaml"
RECORD_DIR = "records/kv-efficiency"
SCHEMA_FILE = "schema/record.schema.json"
COPIED_DIRS = ("schema", "models", "hardware")

ONE_FILE_TARGET = 0.45  # one changed file: ours/peer at most this
FULL_TARGET = 0.25  # whole dataset of FULL_TARGET_N records: ours/peer at most this
FULL_TARGET_N = 10_000
MEMORY_TARGET_MIB = 150.0  # peak memory of ours on the FULL_TARGET_N dataset: below this
LINEAR_TOLERANCE = 1.5  # marginal cost per record may grow at most this much between steps

# The seed's context (150,000 tokens) and the figures that follow from it. Generated records
# cycle through CONTEXTS and recompute every one of them, so the dataset has real variation.
# Each context is a multiple of 200 (so hit_rate 0.935 x context is a whole number of tokens)
# and large enough that the all-layers counterfactual still does not fit a 32 GB card, as the
# prose says.
SEED_CONTEXT = 150_000
CONTEXTS = (150_000, 144_000, 136_000, 128_000)
BYTES_PER_TOKEN = 65_536  # full-attention layers of qwen3-8-27b in bf16
ALL_LAYERS_BYTES_PER_TOKEN = 262_144
HIT_RATE = Decimal("0.935")
GIB = Decimal(2**30)


# ---- locating things ----------------------------------------------------------------------


def find_repo_root() -> Path:
    """The repository holding this script: the nearest folder above it with the seed record."""
    here = Path(__file__).resolve().parent
    for folder in (here, *here.parents):
        if (folder / SCHEMA_FILE).is_file() and (folder / SEED_RELATIVE).is_file():
            return folder
    sys.exit(f"bench: no repository with {SEED_RELATIVE} above {here}")


def find_executable(given: str | None, name: str, fallbacks: list[Path], hint: str) -> Path:
    """``given`` (a path or a name on PATH), else ``name`` on PATH, else the first fallback."""
    candidates: list[str | None] = [given] if given else [shutil.which(name)]
    if not given:
        candidates += [str(p) for p in fallbacks if p.is_file() and os.access(p, os.X_OK)]
    for candidate in candidates:
        if candidate is None:
            continue
        resolved = shutil.which(candidate) or (candidate if Path(candidate).is_file() else None)
        if resolved:
            return Path(resolved).absolute()
    where = f"{given!r} is not an executable" if given else f"{name} is not on PATH"
    sys.exit(f"bench: {where}. {hint}")


def python_of(script: Path) -> Path:
    """The interpreter of a console script (from its #! line), to import kvrecords in-process."""
    with script.open("rb") as handle:
        first = handle.readline().decode("utf-8", errors="replace").strip()
    if first.startswith("#!"):
        interpreter = Path(first[2:].split()[0])
        if interpreter.name.startswith("python") and interpreter.is_file():
            return interpreter
    return Path(sys.executable)


def version_of(executable: Path) -> str:
    done = subprocess.run(
        [str(executable), "--version"], capture_output=True, text=True, check=False
    )
    return (done.stdout or done.stderr).strip() or f"unknown (exit {done.returncode})"


def machine_info(kvrecords: Path, peer: Path, kv_python: Path) -> dict[str, Any]:
    cpu_model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu_model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    kv_python_version = subprocess.run(
        [str(kv_python), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model,
        "platform": platform.platform(),
        "python_bench": platform.python_version(),
        "python_kvrecords": kv_python_version,
        "kvrecords": str(kvrecords),
        "kvrecords_version": version_of(kvrecords),
        "check_jsonschema": str(peer),
        "check_jsonschema_version": version_of(peer),
    }


def source_fingerprint(kv_python: Path) -> str:
    """A hash of the installed kvrecords package's source files.

    Other engineers edit the validator while a run goes on, and an editable install picks their
    edits up in the next child; comparing the fingerprint before and after shows when a run
    mixed versions.
    """
    done = subprocess.run(
        [str(kv_python), "-c", "import kvrecords, os; print(os.path.dirname(kvrecords.__file__))"],
        capture_output=True,
        text=True,
        check=False,
    )
    package = Path(done.stdout.strip())
    digest = hashlib.sha256()
    for source in sorted(package.rglob("*.py")):
        digest.update(source.relative_to(package).as_posix().encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()[:12]


def repository_state(repo: Path) -> str:
    """The commit checked out, and whether the validator or the schemas have uncommitted edits."""
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if not head:
        return "not a git checkout"
    dirty = subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain", "--", "validator", "schema"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return f"{head}" + (" with uncommitted edits in validator/ or schema/" if dirty else "")


# ---- the generated dataset ----------------------------------------------------------------


def _round_half_up(value: Decimal, decimals: int) -> str:
    return str(value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))


def _gib(exact_bytes: int, decimals: int) -> str:
    return f"{_round_half_up(Decimal(exact_bytes) / GIB, decimals)} GiB"


def _figures(context: int) -> dict[str, str]:
    """Every figure in the seed that depends on the context, as the seed writes it."""
    tokens_not_recomputed = int(HIT_RATE * context)
    assert tokens_not_recomputed == HIT_RATE * context, context
    return {
        "context": f"{context:,}",
        "context_plain": str(context),
        "short": f"{context // 1000}K",
        "kv_at_context": _gib(BYTES_PER_TOKEN * context, 2),
        "all_layers_at_context": _gib(ALL_LAYERS_BYTES_PER_TOKEN * context, 1),
        "tokens_not_recomputed": f"{tokens_not_recomputed:,}",
        "tokens_not_recomputed_plain": str(tokens_not_recomputed),
        "bytes_not_recomputed": _gib(tokens_not_recomputed * BYTES_PER_TOKEN, 2),
    }


def context_variants(seed_text: str) -> dict[int, str] | None:
    """The seed rewritten for each of CONTEXTS, or None when the seed no longer has the figures.

    Every replaced text must occur in the seed; if another engineer changed the seed so that one
    does not, the records are generated with the seed's figures unchanged (still valid).
    """
    seed = _figures(SEED_CONTEXT)
    if any(written not in seed_text for written in seed.values()):
        return None
    # One pass over the text, longest first, so a new figure is never replaced again.
    pattern = re.compile("|".join(map(re.escape, sorted(seed.values(), key=len, reverse=True))))
    variants = {}
    for context in CONTEXTS:
        new = {seed[key]: value for key, value in _figures(context).items()}
        variants[context] = _replace_all(pattern, new, seed_text)
    return variants


def _replace_all(pattern: re.Pattern[str], replacements: dict[str, str], text: str) -> str:
    return pattern.sub(lambda match: replacements[match[0]], text)


@dataclass
class Dataset:
    root: Path
    n: int
    record_paths: list[str]  # relative to root, sorted
    varied: bool
    mean_record_bytes: float


def build_dataset(repo: Path, folder: Path, n: int) -> Dataset:
    """A copy of schema/, models/ and hardware/, and N generated records, under ``folder``."""
    folder.mkdir(parents=True)
    for name in COPIED_DIRS:
        shutil.copytree(repo / name, folder / name)
    records = folder / RECORD_DIR
    records.mkdir(parents=True)
    seed_text = (repo / SEED_RELATIVE).read_text(encoding="utf-8")
    seed_stem = Path(SEED_RELATIVE).stem
    variants = context_variants(seed_text)
    id_line = re.compile(r"^id: .*$", re.MULTILINE)
    if id_line.search(seed_text) is None:
        sys.exit(f"bench: the seed {SEED_RELATIVE} has no top-level 'id:' line")
    paths = []
    total_bytes = 0
    for index in range(n):
        context = CONTEXTS[index % len(CONTEXTS)]
        text = variants[context] if variants else seed_text
        stem = seed_stem.replace("150k", f"{context // 1000}k") if variants else seed_stem
        slug = f"bench-{index:05d}-{stem}"
        text = id_line.sub(f"id: kv-efficiency/{slug}", text, count=1)
        relative = f"{RECORD_DIR}/{slug}.yaml"
        (folder / relative).write_text(text, encoding="utf-8")
        paths.append(relative)
        total_bytes += len(text.encode("utf-8"))
    return Dataset(folder, n, sorted(paths), variants is not None, total_bytes / max(n, 1))


# ---- running a child and measuring it -----------------------------------------------------


@dataclass
class Run:
    seconds: float  # wall clock, Popen to reaped
    peak_kib: int  # this child's own ru_maxrss (KiB on Linux)
    exit_code: int


def run_child(argv: list[str], cwd: Path) -> tuple[Run, str]:
    """Run ``argv`` once; its wall time, its own peak RSS from os.wait4, and its output."""
    with tempfile.TemporaryFile() as output:
        start = time.perf_counter()
        process = subprocess.Popen(
            argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT
        )
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        output.seek(0)
        text = output.read().decode("utf-8", errors="replace")
    return Run(seconds, usage.ru_maxrss, process.returncode), text


def check_arg_length(argv: list[str]) -> None:
    """Fail clearly, not with E2BIG, when the peer's file list exceeds the kernel's limit."""
    size = sum(len(a) + 1 for a in argv) + sum(len(k) + len(v) + 2 for k, v in os.environ.items())
    limit = os.sysconf("SC_ARG_MAX")
    if size >= limit:
        sys.exit(
            f"bench: the check-jsonschema command line is {size:,} bytes; the limit is {limit:,}"
        )


@dataclass
class Stats:
    median: float
    minimum: float
    maximum: float
    peak_mib: float  # the largest peak over the runs
    exit_codes: list[int]
    samples: list[float]

    @classmethod
    def of(cls, runs: list[Run]) -> Stats:
        times = [r.seconds for r in runs]
        return cls(
            statistics.median(times),
            min(times),
            max(times),
            max(r.peak_kib for r in runs) / 1024,
            sorted({r.exit_code for r in runs}),
            times,
        )

    def shown(self) -> str:
        return f"{self.median:.3f} ({self.minimum:.3f}-{self.maximum:.3f})"


@dataclass
class Case:
    label: str
    n: int  # records in the dataset
    files_given: int  # files on the command line (0: ours on the whole dataset)
    ours: Stats
    peer: Stats
    target: str = "-"
    result: str = "-"

    @property
    def ratio(self) -> float:
        return self.ours.median / self.peer.median


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def measure(
    label: str, ours: list[str], peer: list[str], cwd: Path, repeats: int
) -> tuple[Stats, Stats]:
    """``repeats`` alternating runs of each command: ours, peer, ours, peer, ..."""
    check_arg_length(peer)
    our_runs: list[Run] = []
    peer_runs: list[Run] = []
    for repeat in range(1, repeats + 1):
        for command, runs, name in (
            (ours, our_runs, "kvrecords"),
            (peer, peer_runs, "check-jsonschema"),
        ):
            run, output = run_child(command, cwd)
            runs.append(run)
            progress(
                f"  {label} run {repeat}/{repeats} {name}: {run.seconds:.3f} s, "
                f"{run.peak_kib / 1024:.1f} MiB, exit {run.exit_code}"
            )
            if run.exit_code != 0:
                progress(f"  warning: {name} exited {run.exit_code}:\n{output[-2000:]}")
    return Stats.of(our_runs), Stats.of(peer_runs)


def assert_valid(kvrecords: Path, peer: Path, dataset: Dataset) -> None:
    """The generated dataset must validate clean before anything is timed (and warms caches)."""
    run, output = run_child([str(kvrecords), "validate"], dataset.root)
    if run.exit_code != 0:
        sys.exit(
            f"bench: the generated N={dataset.n} dataset in {dataset.root} does not validate "
            f"(kvrecords exit {run.exit_code}); refusing to time it:\n{output[-4000:]}"
        )
    progress(f"  kvrecords validate: exit 0 in {run.seconds:.2f} s ({output.strip()})")
    argv = [str(peer), "--schemafile", SCHEMA_FILE, *dataset.record_paths]
    check_arg_length(argv)
    run, output = run_child(argv, dataset.root)
    if run.exit_code != 0:
        progress(
            f"  warning: check-jsonschema exit {run.exit_code} on the generated records:\n"
            f"{output[-2000:]}"
        )
    else:
        progress(f"  check-jsonschema: exit 0 in {run.seconds:.2f} s (warm-up)")


# ---- the report ---------------------------------------------------------------------------


def judge(cases: list[Case], largest: int) -> None:
    """Fill in the target and PASS/FAIL of the two targeted rows."""
    for case in cases:
        if case.files_given == 1:
            case.target = f"<= {ONE_FILE_TARGET}x"
            case.result = "PASS" if case.ratio <= ONE_FILE_TARGET else "FAIL"
        elif case.n == FULL_TARGET_N and case.files_given == 0:
            case.target = f"<= {FULL_TARGET}x, < {MEMORY_TARGET_MIB:.0f} MiB"
            fast = case.ratio <= FULL_TARGET
            small = case.ours.peak_mib < MEMORY_TARGET_MIB
            case.result = "PASS" if fast and small else "FAIL"
            if not (fast or small):
                case.result += " (time, memory)"
            elif not fast:
                case.result += " (time)"
            elif not small:
                case.result += " (memory)"
    if largest != FULL_TARGET_N:
        progress(f"note: N={FULL_TARGET_N:,} was not run, so its target is not judged")


def per_record(full: list[Case]) -> list[dict[str, Any]]:
    """Cost per record at each N, and the marginal cost per added record since the size before."""
    rows = []
    previous: Case | None = None
    for case in full:
        row: dict[str, Any] = {
            "n": case.n,
            "ours_ms_per_record": 1000 * case.ours.median / case.n,
            "peer_ms_per_record": 1000 * case.peer.median / case.n,
            "ours_marginal_ms_per_record": None,
            "peer_marginal_ms_per_record": None,
        }
        if previous is not None and case.n > previous.n:
            added = case.n - previous.n
            row["ours_marginal_ms_per_record"] = (
                1000 * (case.ours.median - previous.ours.median) / added
            )
            row["peer_marginal_ms_per_record"] = (
                1000 * (case.peer.median - previous.peer.median) / added
            )
        rows.append(row)
        previous = case
    return rows


def linearity(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Linear when the marginal cost of the last size step is at most LINEAR_TOLERANCE x the step before."""
    steps = [r for r in rows if r["ours_marginal_ms_per_record"] is not None]
    if len(steps) < 2:
        return {"result": "n/a (needs 3 sizes)", "growth": None}
    before, last = (
        steps[-2]["ours_marginal_ms_per_record"],
        steps[-1]["ours_marginal_ms_per_record"],
    )
    if before <= 0:
        return {"result": "n/a (no measurable growth in the step before)", "growth": None}
    growth = last / before
    return {
        "result": "PASS" if growth <= LINEAR_TOLERANCE else "FAIL",
        "growth": growth,
        "steps": [steps[-2]["n"], steps[-1]["n"]],
    }


def table(headers: list[str], rows: list[list[str]]) -> str:
    """Left-aligned columns separated by two spaces."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def report(result: dict[str, Any], cases: list[Case], per: list[dict[str, Any]]) -> str:
    machine = result["machine"]
    out = [
        "kvrecords validate vs check-jsonschema (wall clock of the whole command, seconds; "
        f"{result['repeats']} alternating runs each, {result['one_file_repeats']} for one file)",
        f"records: generated from {SEED_RELATIVE}, ~{result['record_bytes']:.0f} bytes each, "
        + (
            "context_tokens cycling over " + ", ".join(f"{c:,}" for c in CONTEXTS)
            if result["varied"]
            else "figures identical to the seed"
        ),
        "",
    ]
    rows = []
    for case in cases:
        flags = "" if case.ours.exit_codes == [0] and case.peer.exit_codes == [0] else " !"
        rows.append(
            [
                case.label,
                case.ours.shown(),
                case.peer.shown(),
                f"{case.ratio:.2f}x{flags}",
                f"{case.ours.peak_mib:.1f} / {case.peer.peak_mib:.1f}",
                case.target,
                case.result,
            ]
        )
    out.append(
        table(
            [
                "case",
                "ours median (min-max) s",
                "peer median (min-max) s",
                "ours/peer",
                "peak MiB ours / peer",
                "target",
                "result",
            ],
            rows,
        )
    )
    if any(r[3].endswith("!") for r in rows):
        out.append("! a run exited non-zero; see the warnings above")
    out += [
        "",
        "cost per record (median / N) and marginal cost per added record since the size before, ms",
    ]
    out.append(
        table(
            ["N", "ours /rec", "peer /rec", "ours marginal /rec", "peer marginal /rec"],
            [
                [
                    f"{r['n']:,}",
                    _ms(r["ours_ms_per_record"]),
                    _ms(r["peer_ms_per_record"]),
                    _ms(r["ours_marginal_ms_per_record"]),
                    _ms(r["peer_marginal_ms_per_record"]),
                ]
                for r in per
            ],
        )
    )
    lin = result["linearity"]
    if lin["growth"] is None:
        out.append(f"linear in N (ours): {lin['result']}")
    else:
        a, b = lin["steps"]
        out.append(
            f"linear in N (ours): {lin['result']}: the marginal cost per record up to N={b:,} is "
            f"{lin['growth']:.2f}x that up to N={a:,} (at most {LINEAR_TOLERANCE}x counts as linear)"
        )
    out += [
        "",
        f"machine: {machine['cpu_count']} CPUs, {machine['cpu_model']}, {machine['platform']}",
        f"python: {machine['python_bench']} (bench), {machine['python_kvrecords']} (kvrecords)",
        f"{machine['kvrecords_version']} ({machine['kvrecords']})",
        f"{machine['check_jsonschema_version']} ({machine['check_jsonschema']})",
        f"repository: {machine['repository']}; kvrecords source {machine['kvrecords_source']}",
    ]
    if "changed" in machine["kvrecords_source"]:
        out.append(
            "warning: the validator's source changed during the run; rerun for clean figures"
        )
    return "\n".join(out)


# ---- profiling ----------------------------------------------------------------------------

# Runs inside the kvrecords interpreter, in the dataset's folder: profiles validate(root) (with
# the paths given as arguments, if any) and prints every function's figures as JSON.
_CPROFILE_CHILD = r"""
import cProfile, json, pstats, sys
from pathlib import Path
from kvrecords.runner.validate import validate

def short(path):
    parts = Path(path).parts
    return "/".join(parts[-2:]) if len(parts) > 1 else path

paths = [Path(p) for p in sys.argv[1:]] or None
profiler = cProfile.Profile()
profiler.enable()
outcome = validate(Path.cwd(), paths)
profiler.disable()
rows = []
for (path, line, name), (_, calls, self_s, cumulative_s, _) in pstats.Stats(profiler).stats.items():
    where = name if path == "~" else f"{short(path)}:{line}({name})"
    rows.append({"function": where, "calls": calls, "self_s": self_s, "cumulative_s": cumulative_s})
print(json.dumps({"files_checked": outcome.files_checked, "problems": len(outcome.problems),
                  "total_s": sum(r["self_s"] for r in rows), "rows": rows}))
"""


def import_times(kv_python: Path, arguments: list[str], cwd: Path) -> list[dict[str, Any]]:
    """``-X importtime`` of a command (second run, so .pyc files exist), by cumulative time."""
    argv = [str(kv_python), "-X", "importtime", *arguments]
    subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    rows = []
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)", line)
        if match:
            rows.append(
                {
                    "module": match[4],
                    "self_ms": int(match[1]) / 1000,
                    "cumulative_ms": int(match[2]) / 1000,
                    "depth": (len(match[3]) - 1) // 2,
                }
            )
    return sorted(rows, key=lambda r: r["cumulative_ms"], reverse=True)


def cprofile(kv_python: Path, dataset: Dataset, paths: list[str]) -> dict[str, Any]:
    """Every function's calls, self and cumulative time in an in-process validate() run."""
    done = subprocess.run(
        [str(kv_python), "-c", _CPROFILE_CHILD, *paths],
        cwd=dataset.root,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(f"bench: the cProfile run failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _import_table(rows: list[dict[str, Any]]) -> str:
    return table(
        ["cumulative", "self", "module"],
        [
            [f"{r['cumulative_ms']:.1f}", f"{r['self_ms']:.1f}", "  " * r["depth"] + r["module"]]
            for r in rows
        ],
    )


def _top(profile: dict[str, Any], key: str, count: int) -> list[dict[str, Any]]:
    return sorted(profile["rows"], key=lambda r: r[key], reverse=True)[:count]


def run_profile(kv_python: Path, dataset: Dataset) -> tuple[dict[str, Any], str]:
    """Import costs and cProfile hot spots, for the engineers making kvrecords faster."""
    progress(f"profiling: -X importtime, and cProfile of validate() on N={dataset.n:,}")
    one = dataset.record_paths[len(dataset.record_paths) // 2]
    imports = {
        "import kvrecords.cli.app": import_times(
            kv_python, ["-c", "import kvrecords.cli.app"], dataset.root
        ),
        f"python -m kvrecords validate {one}": import_times(
            kv_python, ["-m", "kvrecords", "validate", one], dataset.root
        ),
    }
    full = cprofile(kv_python, dataset, [])
    single = cprofile(kv_python, dataset, [one])
    headers = ["cumulative s", "self s", "calls", "function"]

    out = []
    for label, rows in imports.items():
        out += ["", f"top 15 cumulative import costs, -X importtime ({label}), ms"]
        out.append(_import_table(rows[:15]))
    for title, profile, count in (
        (f"validate(root), N={dataset.n:,} records", full, 25),
        (f"validate(root, [one file]), N={dataset.n:,} records", single, 15),
    ):
        out += [
            "",
            f"cProfile of kvrecords.runner.validate.{title} in-process "
            f"({profile['files_checked']} files checked, {profile['problems']} problems, "
            f"{profile['total_s']:.3f} s profiled)",
            f"top {count} by cumulative time",
            table(headers, _profile_rows(_top(profile, "cumulative_s", count))),
            "",
            "top 15 by self time",
            table(headers, _profile_rows(_top(profile, "self_s", 15))),
        ]
    data = {
        "imports": {label: rows[:15] for label, rows in imports.items()},
        "cprofile_full": {k: v for k, v in full.items() if k != "rows"}
        | {"top_cumulative": _top(full, "cumulative_s", 25), "top_self": _top(full, "self_s", 15)},
        "cprofile_one_file": {k: v for k, v in single.items() if k != "rows"}
        | {
            "file": one,
            "top_cumulative": _top(single, "cumulative_s", 15),
            "top_self": _top(single, "self_s", 15),
        },
    }
    return data, "\n".join(out)


def _profile_rows(rows: list[dict[str, Any]]) -> list[list[str]]:
    return [
        [f"{r['cumulative_s']:.3f}", f"{r['self_s']:.3f}", f"{r['calls']:,}", r["function"]]
        for r in rows
    ]


# ---- main ---------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="1,100,1000,10000",
        help="record counts N, comma-separated (default: %(default)s)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=5,
        help="timed runs of each tool per case (default: %(default)s)",
    )
    parser.add_argument(
        "--one-file-repeats",
        type=int,
        default=21,
        help="timed runs of each tool for the one-file case, a tenth of a second each and the "
        "noisiest (default: %(default)s)",
    )
    parser.add_argument(
        "--kvrecords",
        help="the kvrecords executable (default: kvrecords on PATH, else .venv/bin/kvrecords)",
    )
    parser.add_argument(
        "--check-jsonschema", dest="peer", help="the check-jsonschema executable (default: on PATH)"
    )
    parser.add_argument("--out", type=Path, help="also write the results as JSON to this file")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="after the timings, print -X importtime and a cProfile of validate() on N=1,000",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the generated datasets and print where"
    )
    args = parser.parse_args(argv)
    try:
        args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    except ValueError:
        parser.error("--sizes takes whole numbers separated by commas, e.g. 1,100,1000")
    if not args.sizes or args.sizes[0] < 1:
        parser.error("--sizes needs at least one N >= 1")
    if args.repeats < 1 or args.one_file_repeats < 1:
        parser.error("--repeats and --one-file-repeats must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    repo = find_repo_root()
    kvrecords = find_executable(
        args.kvrecords,
        "kvrecords",
        [repo / ".venv" / "bin" / "kvrecords", Path(sys.executable).parent / "kvrecords"],
        "Install the validator (make validate, or pip install -e .) or pass --kvrecords PATH.",
    )
    peer = find_executable(
        args.peer,
        "check-jsonschema",
        [Path(sys.executable).parent / "check-jsonschema"],
        "Install it, e.g. python3 -m venv /tmp/benchvenv && /tmp/benchvenv/bin/pip install "
        "check-jsonschema, then pass --check-jsonschema /tmp/benchvenv/bin/check-jsonschema.",
    )
    kv_python = python_of(kvrecords)
    machine = machine_info(kvrecords, peer, kv_python)
    machine["repository"] = repository_state(repo)
    machine["kvrecords_source"] = source_fingerprint(kv_python)
    progress(
        f"kvrecords: {kvrecords} ({machine['kvrecords_version']}); peer: {peer} ({machine['check_jsonschema_version']})"
    )

    work = Path(tempfile.mkdtemp(prefix="kvrecords-bench-"))
    try:
        cases: list[Case] = []
        datasets: dict[int, Dataset] = {}
        sizes = list(args.sizes)
        # --profile needs the N=1,000 dataset even when it is not timed.
        sizes_to_build = sorted({*sizes, 1000}) if args.profile else sizes
        for n in sizes_to_build:
            start = time.perf_counter()
            dataset = build_dataset(repo, work / f"n{n}", n)
            datasets[n] = dataset
            progress(f"N={n:,}: built in {time.perf_counter() - start:.1f} s at {dataset.root}")
            assert_valid(kvrecords, peer, dataset)
            if n not in sizes:
                continue
            ours, theirs = measure(
                f"N={n:,}",
                [str(kvrecords), "validate"],
                [str(peer), "--schemafile", SCHEMA_FILE, *dataset.record_paths],
                dataset.root,
                args.repeats,
            )
            cases.append(Case(f"N={n:,} (whole dataset)", n, 0, ours, theirs))

        largest = datasets[sizes[-1]]
        one = largest.record_paths[len(largest.record_paths) // 2]
        ours, theirs = measure(
            f"1 file of N={largest.n:,}",
            [str(kvrecords), "validate", one],
            [str(peer), "--schemafile", SCHEMA_FILE, one],
            largest.root,
            args.one_file_repeats,
        )
        cases.append(Case(f"1 file of N={largest.n:,}", largest.n, 1, ours, theirs))

        judge(cases, largest.n)
        full = [c for c in cases if c.files_given == 0]
        per = per_record(full)
        result: dict[str, Any] = {
            "machine": machine,
            "repeats": args.repeats,
            "one_file_repeats": args.one_file_repeats,
            "sizes": sizes,
            "varied": largest.varied,
            "record_bytes": largest.mean_record_bytes,
            "one_file": one,
            "targets": {
                "one_file_ratio": ONE_FILE_TARGET,
                "full_ratio": FULL_TARGET,
                "full_n": FULL_TARGET_N,
                "memory_mib": MEMORY_TARGET_MIB,
                "linear_tolerance": LINEAR_TOLERANCE,
            },
            "cases": [asdict(c) | {"ratio": c.ratio} for c in cases],
            "per_record": per,
            "linearity": linearity(per),
        }
        after = source_fingerprint(kv_python)
        if after != machine["kvrecords_source"]:
            machine["kvrecords_source"] += f" -> {after} (changed during the run)"
        print(report(result, cases, per), flush=True)

        if args.profile:
            profile_data, profile_text = run_profile(kv_python, datasets[1000])
            result["profile"] = profile_data
            print(profile_text, flush=True)

        if args.out:
            args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
            progress(f"wrote {args.out}")
    finally:
        if args.keep:
            progress(f"kept the datasets in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
