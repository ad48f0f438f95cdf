#!/bin/sh
# The remedies, measured: builds the remedy samples in release mode, runs each one blocking and
# fixed under `stallwatch record`, reads every trace with `stallwatch report --json` and prints
# a before/after table (100 columns), then each run's own result lines.
#   scripts/samples.sh [--seconds S]      (default 2 s per run; traces kept in $SAMPLES_OUT)
set -eu
cd "$(dirname "$0")/.."
seconds=2
if [ "${1:-}" = "--seconds" ] && [ -n "${2:-}" ]; then seconds=$2; fi
samples="FeedScreen BlockingMain GalleryScroll AsyncRender"
out=${SAMPLES_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/samples.XXXXXX")}
mkdir -p "$out"
scripts/install-deps.sh >/dev/null
for product in stallwatch $samples; do
    swift build -c release --product "$product" 2>&1 | grep -E "error|warning:" >&2 || true
    [ -x ".build/release/$product" ] || { echo "samples.sh: building $product failed" >&2; exit 1; }
done
runs=""
for sample in $samples; do
    for variant in blocking fixed; do
        flag=""
        [ "$variant" = fixed ] && flag="--fixed"
        trace="$out/$sample-$variant.swtrace"
        # shellcheck disable=SC2086
        .build/release/stallwatch record -o "$trace" -- ".build/release/$sample" $flag --seconds "$seconds" \
            >"$out/$sample-$variant.txt"
        .build/release/stallwatch report "$trace" --json >"$out/$sample-$variant.json"
        runs="$runs $sample:$variant"
    done
done
python3 - "$out" $runs <<'PY'
import json, sys
out, runs = sys.argv[1], [r.split(":") for r in sys.argv[2:]]
order = ["compute", "io", "lockWait", "database", "other"]
print(f"{'sample':<14}{'variant':<9}{'stalls':>6}{'stall ms':>9}{'dropped':>8}{'fps':>6}{'hitch ms/s':>11} dominant categories")
print("-" * 100)
previous = None
for sample, variant in runs:
    report = json.load(open(f"{out}/{sample}-{variant}.json"))
    stalls, frames = report["stalls"], report["frames"] or {"dropped": 0, "fps": 0.0}
    counts = stalls["byCategory"]
    ranked = sorted((name for name in order if counts.get(name)), key=lambda name: -counts[name])
    categories = " ".join(f"{name}:{counts[name]}" for name in ranked) or "none"
    name = sample if sample != previous else ""
    previous = sample
    print(f"{name:<14}{variant:<9}{stalls['total']:>6}{stalls['totalMs']:>9.1f}{frames['dropped']:>8}"
          f"{frames['fps']:>6.1f}{report['hitchRatioMsPerSecond']:>11.1f} {categories}")
print()
print("stall ms: every stall's duration added up; dropped, fps: the trace's frame-clock summaries;")
print("hitch ms/s: stall time beyond the 16.7 ms budget per second of run time. The samples' own lines:")
for sample, variant in runs:
    lines = open(f"{out}/{sample}-{variant}.txt").read().splitlines()
    # The summary's own results follow its "frames" line (the sample's notes).
    start = next((i + 1 for i, line in enumerate(lines) if line.startswith("  frames")), len(lines))
    print(f"{sample} {variant}")
    for line in lines[start:]:
        print(line if line.startswith("  ") else "  " + line)
PY
echo "traces and reports: $out"
