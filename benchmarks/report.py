"""Time and size of `agent-box report` on a large synthetic matrix, against json.dumps of the same data.

The evidence is 4 harnesses x 10 versions x 40 vectors x 3 layers (4,800 records, one run per
harness version, as the negative suite writes them), in a store on disk. Timed, each the median of
--runs repetitions: reading the store, building the report model, rendering the HTML, the whole
`generate` (read + build + render + write HTML and JSON); the baseline, measured in the same run,
is `json.dumps` of the report's content, the least any renderer embedding it must spend.

Targets: the whole report in under 1 s, the HTML under 2 MB. Exit 1 when one is missed.
Usage: python benchmarks/report.py [--runs N] [--harnesses N] [--versions N] [--vectors N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

# the builders of synthetic records live with the tests (tests/support): they never ship
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

TARGET_SECONDS = 1.0
TARGET_BYTES = 2 * 1024 * 1024


def median_time(fn, runs: int) -> tuple[float, object]:
    samples, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples), result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--harnesses", type=int, default=4)
    ap.add_argument("--versions", type=int, default=10)
    ap.add_argument("--vectors", type=int, default=40)
    args = ap.parse_args()

    from agentbox.prove.evidence import append
    from agentbox.prove.evidence_merge import collect
    from agentbox.report import generate
    from agentbox.report.build import build_report
    from agentbox.report.html import render_html
    import synthetic_matrix

    with tempfile.TemporaryDirectory() as tmp:
        harnesses = [f"harness-{i}" for i in range(args.harnesses)]
        versions = [f"1.{n}.0" for n in range(args.versions)]
        catalogue = synthetic_matrix.write_catalogue(os.path.join(tmp, "vectors"), vectors=args.vectors)
        source = synthetic_matrix.declarations(harnesses)
        records = synthetic_matrix.records(catalogue, source, harnesses, versions)
        append(os.path.join(tmp, "ev"), records)

        read_s, collected = median_time(lambda: collect([os.path.join(tmp, "ev")]), args.runs)
        build_s, report = median_time(lambda: build_report(collected.records, catalogue, source), args.runs)
        render_s, _ = median_time(lambda: render_html(report), args.runs)
        content = report.model_dump(mode="json")
        base_s, _ = median_time(lambda: json.dumps(content), args.runs)
        out = os.path.join(tmp, "report.html")
        total_s, _ = median_time(
            lambda: generate(
                [os.path.join(tmp, "ev")],
                out,
                json_path=os.path.join(tmp, "r.json"),
                catalogue_dir=os.path.join(tmp, "vectors"),
                declarations=source,
            ),
            args.runs,
        )
        size = os.path.getsize(out)

    print(
        f"evidence: {len(records)} records ({args.harnesses} harnesses x {args.versions} versions x "
        f"{args.vectors} vectors x 3 layers); report: {len(report.columns)} columns, {len(report.cells)} cells, "
        f"{len(report.observations)} records shown; median of {args.runs} runs"
    )
    print(f"{'phase':<36} {'ms':>8} {'x json.dumps':>13}")
    for name, seconds in (
        ("json.dumps of the report (baseline)", base_s),
        ("read the store", read_s),
        ("build the report model", build_s),
        ("render the HTML", render_s),
        ("whole report (read+build+render+write)", total_s),
    ):
        print(f"{name:<36} {seconds * 1000:>8.1f} {seconds / base_s:>13.1f}")
    print(
        f"HTML size: {size / 1024 / 1024:.2f} MB, of which the embedded data {len(report.model_dump_json()) / size:.0%}"
    )
    ok_time, ok_size = total_s < TARGET_SECONDS, size < TARGET_BYTES
    print(
        f"target whole report < {TARGET_SECONDS:.0f} s: {'met' if ok_time else 'MISSED'}; "
        f"HTML < {TARGET_BYTES // 1024 // 1024} MB: {'met' if ok_size else 'MISSED'}"
    )
    return 0 if ok_time and ok_size else 1


if __name__ == "__main__":
    sys.exit(main())
