"""Compares an engine's signature table with `stallwatch report --json`.

    python3 compare.py REPORT.json ENGINE_OUTPUT.jsonl

Exits 0 when both list the same signatures in the same order with the same stall and trace
counts, total and max time (to the microsecond) and percentiles; else prints the differences
and exits 1.
"""
import json
import sys


def main(report_path, engine_path):
    report = json.load(open(report_path))
    rows = [json.loads(line) for line in open(engine_path) if line.strip()]
    expected = report["signatures"]
    problems = []
    if len(rows) != len(expected):
        problems.append(f"{len(rows)} engine rows, {len(expected)} report signatures")
    for index, (signature, row) in enumerate(zip(expected, rows)):
        name = signature["category"] + ": " + " \u2190 ".join(signature["frames"])
        checks = [
            ("signature", name, row["signature"]),
            ("stalls", signature["count"], int(row["stalls"])),
            ("traces", signature["traces"], int(row["traces"])),
        ]
        for key, report_key in [("total_ms", "totalMs"), ("max_ms", "maxMs"), ("p50_ms", "p50Ms"), ("p95_ms", "p95Ms")]:
            checks.append((key, round(signature[report_key], 3), round(float(row[key]), 3)))
        for key, want, got in checks:
            close = abs(want - got) <= 0.0015 if isinstance(want, float) else want == got
            if not close:
                problems.append(f"#{index + 1} {key}: report {want!r}, engine {got!r}")
    for problem in problems:
        print(problem)
    print("mismatch" if problems else f"all {len(expected)} signatures agree")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
