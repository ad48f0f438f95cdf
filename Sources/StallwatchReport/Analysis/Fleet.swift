import StallwatchCore

// Fleet facts: where each trace comes from (host, build, app version) and what a signature's
// stalls look like across many traces (traces affected, percentiles, first and last seen,
// split by build and host).

/// Where one trace comes from, from its `origin` record (older traces have none and get the
/// trace's header facts only).
///
/// A plain value; use it on any thread.
package struct TraceFacts: Sendable, Hashable {
    /// The trace id as 32 lowercase hex digits: the origin's, else one derived from the
    /// header (process, pid, start time), so old traces get a stable id too.
    package var traceID: String
    /// The recording host, nil if the trace does not say.
    package var host: String?
    /// The main executable's build id in hex, nil if unknown.
    package var buildID: String?
    /// The app version, nil if unknown.
    package var appVersion: String?
    /// The wall-clock time (ns since 1970) of the trace's clock base, nil without a header.
    package var wallClockStart: UInt64?
    /// The header's clock base (CLOCK_MONOTONIC ns).
    package var clockBase: UInt64

    /// How builds are named in reports: `1.4.2 (3f9a01c4)`, `3f9a01c4`, `1.4.2`, or `unknown`.
    package var build: String {
        let id = buildID.map { String($0.prefix(8)) }
        switch (appVersion, id) {
        case (let version?, let id?): return "\(version) (\(id))"
        case (let version?, nil): return version
        case (nil, let id?): return id
        case (nil, nil): return "unknown"
        }
    }

    /// The facts of `loaded`.
    package init(_ loaded: LoadedTrace) {
        if let origin = loaded.trace.origin {
            traceID = origin.traceID.count == 16 ? hex(origin.traceID) : derivedID(loaded)
            host = origin.host.isEmpty ? nil : origin.host
            buildID = origin.buildID.isEmpty ? nil : hex(origin.buildID)
            appVersion = origin.appVersion
        } else {
            traceID = derivedID(loaded)
        }
        wallClockStart = loaded.trace.header?.wallClockStart
        clockBase = loaded.trace.header?.clockBase ?? 0
    }

    /// The wall-clock time of the monotonic instant `time`, in ns since 1970; nil without a
    /// header.
    package func wallClock(_ time: UInt64) -> UInt64? {
        guard let wallClockStart else { return nil }
        return time >= clockBase ? wallClockStart &+ (time - clockBase) : wallClockStart &- (clockBase - time)
    }
}

/// 16 bytes from the header's facts (FNV-1a, twice with different seeds), for traces with no
/// origin record.
private func derivedID(_ loaded: LoadedTrace) -> String {
    let header = loaded.trace.header
    let text = "\(header?.processName ?? loaded.path)/\(header?.pid ?? 0)/\(header?.wallClockStart ?? 0)"
    // Both words' bytes, least significant first, as one hex string.
    let words = [FNV1a.hash(text.utf8), FNV1a.hash(text.utf8, seed: 0x84222325_cbf29ce4)]
    return hex(words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * UInt64($0))) } })
}

/// Bytes as lowercase hex.
func hex(_ bytes: [UInt8]) -> String {
    var result = [UInt8](repeating: 0, count: bytes.count * 2)
    for index in bytes.indices {
        result[2 * index] = hexDigit(bytes[index] >> 4)
        result[2 * index + 1] = hexDigit(bytes[index] & 15)
    }
    return String(decoding: result, as: UTF8.self)
}

/// The lowercase hex digit of `value` (0...15), as a UTF-8 byte.
private func hexDigit(_ value: UInt8) -> UInt8 {
    value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
}

/// A wall-clock time (ns since 1970) as ISO 8601 UTC to the millisecond:
/// `2026-12-01T10:00:00.123Z`.
func isoTime(_ nanoseconds: UInt64) -> String {
    let milliseconds = nanoseconds / 1_000_000
    let seconds = Int64(milliseconds / 1000)
    var days = seconds / 86_400
    let secondOfDay = seconds % 86_400
    // Civil from days (Howard Hinnant's algorithm).
    days += 719_468
    let era = days / 146_097
    let dayOfEra = days - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let monthIndex = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
    let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
    let millis = milliseconds % 1000
    let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
    return "\(year)-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):"
        + "\(two(secondOfDay % 60)).\(fraction)Z"
}

extension StallReport {
    /// What a set of traces is: how many, from how many processes, hosts and builds, over
    /// what time, and which files could not be read.
    package struct FleetSummary: Sendable, Hashable, Codable {
        /// Traces read.
        package var traces: Int
        /// Distinct process names.
        package var processes: Int
        /// Distinct hosts (traces that do not say are left out).
        package var hosts: Int
        /// Distinct builds (`TraceFacts.build`, `unknown` included).
        package var builds: Int
        /// Distinct app versions (traces that do not say are left out).
        package var appVersions: Int
        /// Bytes read.
        package var bytes: Int
        /// The earliest trace start, ISO 8601 UTC; nil without headers.
        @NullWhenAbsent package var firstStart: String?
        /// The latest trace end, ISO 8601 UTC; nil without headers.
        @NullWhenAbsent package var lastEnd: String?
        /// Inputs that could not be read at all, with the reason.
        package var unreadable: [Unreadable]
    }

    /// An input that could not be read, and why (the one-line `TraceLoadError`).
    package struct Unreadable: Sendable, Hashable, Codable {
        /// The path as given.
        package var path: String
        /// One line naming the file and the byte offset.
        package var reason: String

        /// The entry for `error`.
        package init(_ error: TraceLoadError) {
            path = error.path
            reason = error.description
        }
    }

    /// A signature's stalls in one build or on one host.
    package struct GroupCount: Sendable, Hashable, Codable {
        /// The build (`TraceFacts.build`) or host name.
        package var name: String
        /// The signature's stalls there.
        package var stalls: Int
        /// The traces there that have the signature.
        package var traces: Int
    }
}

/// The nearest-rank percentile of sorted `values` (the smallest value with at least `fraction`
/// of the values at or below it): what DuckDB's `quantile_disc` and ClickHouse's
/// `quantileExactLow` also give. 0 for no values.
func nearestRank(_ sorted: [UInt64], _ fraction: Double) -> UInt64 {
    guard !sorted.isEmpty else { return 0 }
    let rank = Int((fraction * Double(sorted.count)).rounded(.up))
    return sorted[min(sorted.count, max(1, rank)) - 1]
}
