#!/usr/bin/env bash
# The folders of Sources/Stallwatch are layers (docs/layout.md): a file may use the types of its
# own layer and those below it, never one declared in a higher layer. Prints each use against the
# layers, beyond the ones layout.md lists, and exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/../Sources/Stallwatch"

layers=("Loop" "Monitor" "Recorder")  # above the base (the root, Annotations, Symbolication, Sampling, Diagnosis)
base=(*.swift Annotations Symbolication Sampling Diagnosis)

# The uses layout.md names, as file:type.
allowed=(
    "Sampling/PerfSampler.swift:StallMonitor" "Sampling/SelfSampler.swift:StallMonitor"
    "Sampling/SelfSampler.swift:MonitorConfiguration" "Sampling/ThreadSampler.swift:MonitorConfiguration"
    "Sampling/ThreadSampler.swift:MonitorStatistics" "Sampling/StackCapture.swift:MonitorStatistics"
    "Loop/MainLoop+Run.swift:TraceRecorder" "Monitor/StallMonitor.swift:TraceRecorder"
    "Sampling/SelfSampler.swift:CalloutSnapshot" "Sampling/SelfSampler.swift:CalloutDescriptor"
    "Annotations/Annotations.swift:CalloutSite"
)

types_in() {
    grep -rhoE '^(public |package |private |fileprivate |final |@[A-Za-z_]+ )*(struct|enum|class|protocol|actor) [A-Za-z_]+' "$@" |
        awk '{print $NF}' | sort -u
}

found=0
check() {  # $1: the files' folders (a bash array name), $2...: the higher layers
    local -n files=$1
    shift
    local names
    names=$(types_in "$@" | paste -sd'|')
    [ -z "$names" ] && return
    while IFS=: read -r file _ text; do
        for name in $(grep -owE "$names" <<<"$text" | sort -u); do
            local key="$file:$name" ok=0
            for a in "${allowed[@]}"; do [ "$a" = "$key" ] && ok=1; done
            if [ $ok = 0 ]; then
                echo "check-layers: $file uses $name, declared in a higher layer"
                found=1
            fi
        done
    done < <(grep -rnwE "$names" "${files[@]}" --include='*.swift' | grep -vE '^[^:]*:[0-9]+:\s*//')
}

check base "${layers[@]}"
loop=(Loop) && check loop Monitor Recorder
monitor=(Monitor) && check monitor Recorder
exit $found
