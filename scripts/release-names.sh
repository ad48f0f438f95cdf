#!/bin/sh
# Names in release builds: builds the CLI and the demo in release mode (as scripts/demo.sh
# does), records the demo and checks that every signature is titled by the app's function —
# not a specialisation, a forwarder, a thunk or Stallwatch's own loop — and that app frames
# keep their source lines (issue: a release build named its signatures after
# `function signature specialization <…> of Stallwatch.MainLoop…`). Exits non-zero, naming
# what is wrong, otherwise prints the signatures it checked.
set -eu
cd "$(dirname "$0")/.."
swift build -c release --product stallwatch
swift build -c release --product Demo
directory=$(mktemp -d "${TMPDIR:-/tmp}/stallwatch-release-names.XXXXXX")
trap 'rm -rf "$directory"' EXIT
.build/release/stallwatch record --mode full -o "$directory/demo.swtrace" -- .build/release/Demo >/dev/null
.build/release/stallwatch report "$directory/demo.swtrace" --json >"$directory/report.json"
python3 - "$directory/report.json" <<'PYTHON'
import json, sys

report = json.load(open(sys.argv[1]))
wrappers = ("specialization", "partial apply", "merged ", "thunk", "outlined ")
expected = {
    "fnv1a(_:seed:)", "PostsDatabase.search(minimum:)", "DocumentStore.loadAndSave(minimum:)",
    "LockedSettings.value(_:)",
}
problems = []
titles = []
for signature in report["signatures"]:
    frames = signature["frames"]
    titles.append(f'{signature["category"]}: {" <- ".join(frames)}')
    for name in frames:
        if any(word in name for word in wrappers) or name.startswith("MainLoop."):
            problems.append(f"signature frame {name!r} is not the app's function")
    for frame in signature["stack"]:
        if frame["name"] in expected and not frame["source"]:
            problems.append(f"{frame['name']} has no source line")
missing = expected - {signature["frames"][0] for signature in report["signatures"] if signature["frames"]}
if missing:
    problems.append(f"no signature is titled by {sorted(missing)}")
print("release-build signatures:")
for title in titles:
    print("  " + title)
for problem in problems:
    print("release-names: " + problem, file=sys.stderr)
sys.exit(1 if problems else 0)
PYTHON
