"""Wall time of the conformance run (`pytest conformance negative -n 2`) against its floor.

The floor is what the run cannot go below on this machine: the harness starts it needs, times each harness's
cheapest start in the same run, divided over the workers, plus every record without a harness at the cheapest
such record. The starts it needs are the fewest the batching rules allow (`agentbox.testing.batch.fewest_starts`):
a vector with a plan of its own starts its harness for its attack, and for its control when the attack is expected
blocked and the control runs a harness; a plan shared by many vectors, one session for their attacks and one for
their controls, however many they are. A harness's cheapest start is its cheapest record that made one start (an
escape, run alone). Ratio = wall / floor: what the suite adds on top of the starts it needs (fixed waits, per-test
probes and compiles, an idle worker, starts the batching did not save). Also printed: harness starts per
harness-layer record (a batched record counts its share of its batch's starts), and the fewest the rules allow.
Targets (issue 27): the run within 10 min on a 2-core machine, at most 0.2 starts per record. `-- --agentbox-batch`
runs it with batched sessions.

Usage: python benchmarks/conformance.py [--matrix matrices/default.yaml] [--workers 2] [--evidence DIR]
           [--log FILE] [-- PYTEST-ARGS...]
           (--evidence keeps the run's records there: its claims table; --log keeps pytest's output, to follow
           the run's progress with `tail -f` and read its failures)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from agentbox.prove.vectors import load_catalogue
from agentbox.testing.batch import fewest_starts

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", default="matrices/default.yaml")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--evidence", metavar="DIR", help="keep the run's evidence here (default: a temporary folder)")
    ap.add_argument("--log", metavar="FILE", help="write pytest's output here (default: discarded)")
    ap.add_argument(
        "--records",
        metavar="DIR",
        help="read the records of a run already made (its --evidence folder) instead of running: the floor and the "
        "starts, with no wall time",
    )
    ap.add_argument("extra", nargs="*")
    args = ap.parse_args()
    if args.records:
        records = _read(Path(args.records))
        if not records:
            print(f"no records in {args.records}: give the folder a run's --evidence wrote", file=sys.stderr)
            return 2
        _report(records, args.workers, None, None)
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        evidence = args.evidence or scratch
        argv = [
            sys.executable,
            "-m",
            "pytest",
            "conformance",
            "negative",
            "-q",
            "-n",
            str(args.workers),
            "--agentbox-matrix",
            args.matrix,
            "--agentbox-require-harnesses",
            "--agentbox-evidence-dir",
            evidence,
            *args.extra,
        ]
        start = time.perf_counter()
        with open(args.log or "/dev/null", "w") as log:
            done = subprocess.run(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        wall = time.perf_counter() - start
        records = _read(Path(evidence))
    _report(records, args.workers, wall, done.returncode)
    return 0


def _read(evidence: Path) -> list[dict]:
    return [json.loads(line) for path in evidence.glob("*.jsonl") for line in path.open()]


def _report(records: list[dict], workers: int, wall: float | None, exit_code: int | None) -> None:
    """Print the floor, the starts and (for a run made here) the wall time against the targets."""
    floor, needed = _floor(records)
    floor /= workers
    starts = [_starts(r) for r in records if r["layer"] in ("harness", "composed")]
    print(
        f"pytest exit {exit_code}; {len(records)} vector records"
        if exit_code is not None
        else f"{len(records)} vector records"
    )
    for (harness, layer), (count, fewest, cost) in sorted(needed.items()):
        print(f"  {harness:<12} {layer:<9} {count:>4} records, fewest starts {fewest:>4}, cheapest start {cost:6.2f}s")
    shown = f"floor {floor / 60:.1f} min (fewest starts x cheapest start / {workers} workers)"
    if wall is None:
        print(shown)
    elif floor:
        print(f"wall {wall / 60:.1f} min; {shown}; ratio {wall / floor:.2f}")
    else:
        print(f"wall {wall / 60:.1f} min; no records")
    if starts:
        per = sum(starts) / len(starts)
        least = sum(fewest for (harness, _), (_, fewest, _) in needed.items() if harness != "-")
        print(
            f"harness starts per harness-layer record {per:.2f} ({sum(starts):.0f} starts, {len(starts)} records; "
            f"target <= 0.2: {'met' if per <= 0.2 else 'NOT met'}; the fewest the batching rules allow: "
            f"{least / len(starts):.2f})"
            + ("" if wall is None else f"; wall target <= 10 min: {'met' if wall <= 600 else 'NOT met'}")
        )
    alone = [_why_alone(r) for r in records if "(run alone: " in (r.get("observation") or "")]
    if any(_BATCHED.search(r.get("observation") or "") for r in records) or alone:
        batched = sum(1 for r in records if _BATCHED.search(r.get("observation") or ""))
        kinds = sorted({k: alone.count(k) for k in alone}.items(), key=lambda kv: -kv[1])
        print(
            f"batched records {batched}; run alone after all {len(alone)} (their voided sessions' starts are not "
            f"counted above): " + "; ".join(f"{n} {kind}" for kind, n in kinds)
        )


# why a member of a batch ran alone, as its record's observation says, by kind
_WHY = (
    ("was still running", "a process outlived its turn"),
    ("shell's folder", "the shell's folder moved"),
    ("changed ", "a shared path changed"),
    ("attack escaped", "a member escaped"),
    ("could not be judged", "a member could not be judged"),
    ("were not played", "steps not played as asked"),
    ("run failed", "the session's run failed"),
    ("no other vector", "alone in its plan"),
    ("refusal was not read", "its refusal not in its own results"),
    ("control did not show", "its control did not show the effect"),
    ("batch failed", "the batch failed"),
)


def _why_alone(record: dict) -> str:
    said = record["observation"].split("(run alone: ", 1)[1]
    return next((kind for words, kind in _WHY if words in said), said[:60])


def _floor(records: list[dict]) -> tuple[float, dict[tuple, tuple[int, int, float]]]:
    """The run's floor in worker-seconds, and per harness and layer: its records, the fewest harness starts the
    batching rules allow for them (`fewest_starts`, for the vectors recorded, in the build and mode recorded) and the
    cheapest start. A record without a harness (the sandbox and acp layers) costs the cheapest such record."""
    catalogue = {v.id: v for v in load_catalogue(ROOT / "agentbox" / "data" / "vectors").vectors}
    ran: dict[tuple, list[dict]] = defaultdict(list)
    for r in records:
        info = r["run_info"]
        ran[(info.get("harness") or "-", info.get("version"), info.get("mode"), r["layer"])].append(r)
    cost = _cheapest_start(records)
    floor = 0.0
    needed: dict[tuple, tuple[int, int, float]] = {}
    for (harness, version, mode, layer), mine in ran.items():
        if harness == "-":
            each = min(r["duration"] for r in mine)
            fewest, spent = 0, each * len(mine)
        else:
            vectors = [catalogue[r["vector_id"]] for r in mine if r["vector_id"] in catalogue]
            each = cost.get(harness, 0.0)  # no record made one start or two: nothing to price a start by
            fewest = fewest_starts(vectors, layer, harness, version, mode or "headless")
            spent = fewest * each
        count, before, _ = needed.get((harness, layer), (0, 0, each))
        needed[(harness, layer)] = (count + len(mine), before + fewest, each)
        floor += spent
    return floor, needed


def _cheapest_start(records: list[dict]) -> dict[str, float]:
    """Each harness's cheapest start: its cheapest record that made one start (an escape run alone, which needs no
    control), or else half its cheapest record that made two (an attack and its control, run alone)."""
    one: dict[str, float] = {}
    two: dict[str, float] = {}
    for r in records:
        harness = r["run_info"].get("harness")
        if harness is None or _BATCHED.search(r.get("observation") or ""):
            continue
        if r["outcome"] == "escaped":
            one[harness] = min(one.get(harness, float("inf")), r["duration"])
        elif r.get("control_outcome") == "passed":
            two[harness] = min(two.get(harness, float("inf")), r["duration"] / 2)
    return {**two, **one}


_BATCHED = re.compile(r"\(batched: one harness start with (\d+) other vector")


def _starts(record: dict) -> float:
    """The harness starts a record cost: its attack's, and its control's when one ran (a record of a batched session
    its share of the two starts its batch made; a control on the host is counted as a start too, an upper bound)."""
    batched = _BATCHED.search(record.get("observation") or "")
    if batched:
        return 2 / (int(batched.group(1)) + 1)
    return 1 + (record.get("control_outcome") not in (None, "not_run"))


if __name__ == "__main__":
    sys.exit(main())
