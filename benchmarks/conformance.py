"""Wall time of the conformance run (`pytest conformance negative -n 2`) against its floor.

The floor is what the run cannot go below on this machine: every harness start it makes, at the cheapest
start seen for that harness and layer in the same run, divided over the workers. A vector's record holds its
attack and, when the attack saw nothing, its control: one start or two. Every record costs at least the cheapest
record of its (harness, layer), so that times the records, over the workers, is the floor. Ratio = wall / floor:
what the suite adds on top of starting harnesses (fixed waits, per-test probes and compiles, an idle worker, the
second start of a blocked record). Also printed: harness starts per harness-layer record (a batched record counts
its share of its batch's starts). Targets (issue 27): the run within 10 min on a 2-core machine, at most 0.2
starts per record. `-- --agentbox-batch` runs it with batched sessions.

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

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", default="matrices/default.yaml")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--evidence", metavar="DIR", help="keep the run's evidence here (default: a temporary folder)")
    ap.add_argument("--log", metavar="FILE", help="write pytest's output here (default: discarded)")
    ap.add_argument("extra", nargs="*")
    args = ap.parse_args()
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
        records = [json.loads(line) for path in Path(evidence).glob("*.jsonl") for line in path.open()]
    cheapest: dict[tuple, float] = {}
    runs: dict[tuple, int] = defaultdict(int)
    for r in records:
        key = (r["run_info"].get("harness") or "-", r["layer"])
        cheapest[key] = min(cheapest.get(key, float("inf")), r["duration"])
        runs[key] += 1
    floor = sum(cheapest[k] * runs[k] for k in runs) / args.workers
    starts = [_starts(r) for r in records if r["layer"] in ("harness", "composed")]
    print(f"pytest exit {done.returncode}; {len(records)} vector records")
    for key in sorted(runs):
        print(f"  {key[0]:<12} {key[1]:<9} {runs[key]:>4} records, cheapest {cheapest[key]:6.2f}s")
    print(
        f"wall {wall / 60:.1f} min; floor {floor / 60:.1f} min (cheapest start x records / {args.workers} workers); "
        f"ratio {wall / floor:.2f}"
        if floor
        else f"wall {wall / 60:.1f} min; no records"
    )
    if starts:
        per = sum(starts) / len(starts)
        print(
            f"harness starts per harness-layer record {per:.2f} ({sum(starts):.0f} starts, {len(starts)} records; "
            f"target <= 0.2: {'met' if per <= 0.2 else 'NOT met'}); "
            f"wall target <= 10 min: {'met' if wall <= 600 else 'NOT met'}"
        )
    alone = [_why_alone(r) for r in records if "(run alone: " in (r.get("observation") or "")]
    if any(_BATCHED.search(r.get("observation") or "") for r in records) or alone:
        batched = sum(1 for r in records if _BATCHED.search(r.get("observation") or ""))
        kinds = sorted({k: alone.count(k) for k in alone}.items(), key=lambda kv: -kv[1])
        print(
            f"batched records {batched}; run alone after all {len(alone)} (their voided sessions' starts are not "
            f"counted above): " + "; ".join(f"{n} {kind}" for kind, n in kinds)
        )
    return 0


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
