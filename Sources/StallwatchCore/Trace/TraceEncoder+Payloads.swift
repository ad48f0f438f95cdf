// The payloads of the cold record kinds (definitions, stall boundaries, summaries); field
// order is the one `docs/trace-format.md` lists.

extension TraceEncoder {
    static func writePayload(of record: TraceRecord, to writer: inout TraceByteWriter) {
        switch record {
        case .header(let header):
            writer.string(header.processName)
            writer.varint(UInt64(header.pid))
            writer.varint(header.wallClockStart)
            writer.varint(header.clockBase)
            writer.byte(header.mode.rawValue)
            writer.varint(header.thresholds.budget.nanoseconds)
            writer.varint(header.thresholds.microHang.nanoseconds)
            writer.varint(header.thresholds.hang.nanoseconds)
            writer.varint(header.thresholds.severe.nanoseconds)
            writer.varint(header.sampleInterval.nanoseconds)
        case .module(let module):
            writer.varint(UInt64(module.index))
            writer.varint(module.loadAddress)
            writer.string(module.path)
            module.buildID.withUnsafeBytes { writer.lengthPrefixed($0) }
        case .callSite(let site):
            writer.varint(site.id)
            writer.byte(site.kind.rawValue)
            writer.varint(UInt64(site.line))
            writer.optionalString(site.label)
            writer.string(site.file)
        case .modeName(let mode):
            writer.varint(UInt64(mode.id))
            writer.string(mode.name)
        case .annotation(let definition):
            writer.varint(definition.id)
            writer.byte(definition.annotation.category.map(TraceCodes.code(of:)) ?? 0)
            writer.string(definition.annotation.label)
        case .symbol(let symbol):
            writer.varint(symbol.address)
            writer.varint(UInt64(symbol.module))
            writer.varint(UInt64(symbol.line ?? 0))
            writer.optionalString(symbol.name)
            writer.optionalString(symbol.file)
        case .stallBegan(let began):
            writer.varint(began.id)
            writer.varint(began.start)
            writer.varint(began.site)
            writer.varint(UInt64(began.mode))
            writer.byte(began.phase.rawValue)
            writer.byte(TraceCodes.code(of: began.tier))
        case .stallEnded(let ended):
            writer.varint(ended.id)
            writer.varint(ended.end)
            writer.byte(ended.flags.rawValue)
        case .stallRetimed(let retimed):
            writer.varint(retimed.id)
            writer.varint(retimed.start)
            writer.varint(retimed.end)
        case .stallContext(let context):
            writer.varint(context.id)
            writer.optionalString(context.expected)
            let kept = TraceRecord.StallContext.keptPairs(of: context.state)
            let cut = context.state.count - kept
            writer.varint(UInt64(kept + (cut > 0 ? 1 : 0)))
            for pair in context.state[..<kept] {
                writer.string(pair.key)
                writer.string(pair.value)
            }
            if cut > 0 {
                writer.string(TraceRecord.StallContext.cutKey)
                writer.string("\(cut) more keys left out: a stall's app state holds at most 512 KiB")
            }
        case .congestion(let congestion):
            writer.varint(congestion.intervalStart)
            writer.varint(congestion.intervalLength)
            writer.varint(congestion.count)
        case .frameClock(let clock):
            writer.varint(clock.intervalStart)
            writer.varint(clock.intervalLength)
            writer.varint(clock.expected)
            writer.varint(clock.delivered)
            writer.varint(clock.dropped)
        case .latencyHistogram(let histogram):
            writer.varint(histogram.intervalStart)
            writer.varint(histogram.intervalLength)
            // Zero counts are left out and indices must rise, as the decoder insists.
            let buckets = histogram.buckets.filter {
                $0.count > 0 && Int($0.index) < LatencyBuckets.count
            }
            .sorted { $0.index < $1.index }
            var kept: [LatencyBuckets.Bucket] = []
            for bucket in buckets {
                if let last = kept.last, last.index == bucket.index {
                    kept[kept.count - 1].count &+= bucket.count
                } else {
                    kept.append(bucket)
                }
            }
            writer.varint(UInt64(kept.count))
            var next = 0
            for bucket in kept {
                writer.varint(UInt64(Int(bucket.index) - next))
                writer.varint(bucket.count)
                next = Int(bucket.index) + 1
            }
        case .lostRecords(let lost):
            writer.varint(lost.time)
            writer.varint(lost.count)
        case .recordedUntil(let time):
            writer.varint(time)
        case .stopped(let from, let length):
            writer.varint(from)
            writer.varint(length)
        case .watched(let watched):
            writer.varint(watched.since)
            writer.varint(UInt64(watched.tid))
            writer.string(watched.how)
            writer.string(watched.label)
        case .platform(let platform):
            writer.string(platform.architecture)
        case .origin(let origin):
            origin.traceID.withUnsafeBytes { writer.lengthPrefixed($0) }
            writer.string(origin.host)
            writer.string(origin.executable)
            origin.buildID.withUnsafeBytes { writer.lengthPrefixed($0) }
            writer.optionalString(origin.appVersion)
        case .sampleAsyncChain(let chain):
            writer.varint(chain.stall)
            writer.varint(chain.sample)
            writer.varint(chain.firstAsync)
            writer.byte(chain.end.rawValue)
        case .sampleProvenance(let provenance):
            writer.varint(provenance.stall)
            writer.varint(provenance.sample)
            writer.byte(provenance.source.rawValue)
        case .congestedIteration(let iteration):
            writer.varint(iteration.start)
            writer.varint(iteration.duration)
            writer.varint(iteration.callouts)
            writeTriples(iteration.sites.map { ($0.site, $0.count, $0.nanos) }, to: &writer)
        case .stallLeadUp(let leadUp):
            writer.varint(leadUp.id)
            writer.varint(leadUp.window)
            writer.varint(leadUp.callouts)
            writer.varint(leadUp.busy)
            writer.varint(leadUp.lost)
            writeTriples(leadUp.sites.map { ($0.site, $0.count, $0.nanos) }, to: &writer)
            writeTriples(leadUp.recent.map { ($0.site, $0.before, $0.duration) }, to: &writer)
        case .sampleCounters(let counters):
            writeCounters(counters, to: &writer)
        case .sampleWait(let wait):
            writeWait(wait, to: &writer)
        case .sync, .callout, .sample:
            preconditionFailure("encoded by TraceEncoder.encode")
        }
    }

    /// A count, then three varints per item (a site's count and time, a recent callout).
    private static func writeTriples(_ triples: [(UInt64, UInt64, UInt64)], to writer: inout TraceByteWriter) {
        writer.varint(UInt64(triples.count))
        for (first, second, third) in triples {
            writer.varint(first)
            writer.varint(second)
            writer.varint(third)
        }
    }
}

/// The bytes that stand for the model's enums whose raw values are not already bytes.
package enum TraceCodes {
    static func code(of tier: Tier) -> UInt8 {
        switch tier {
        case .hitch: 1
        case .microHang: 2
        case .hang: 3
        case .severe: 4
        }
    }

    package static func tier(_ code: UInt8) -> Tier? {
        switch code {
        case 1: .hitch
        case 2: .microHang
        case 3: .hang
        case 4: .severe
        default: nil
        }
    }

    static func code(of category: StallCategory) -> UInt8 {
        switch category {
        case .compute: 1
        case .io: 2
        case .lockWait: 3
        case .database: 4
        case .other: 5
        }
    }

    package static func category(_ code: UInt8) -> StallCategory? {
        switch code {
        case 1: .compute
        case 2: .io
        case 3: .lockWait
        case 4: .database
        case 5: .other
        default: nil
        }
    }
}
