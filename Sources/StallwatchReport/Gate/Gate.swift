import StallwatchCore

/// A limit a report must stay within for a CI build to pass (`stallwatch gate`'s options).
///
/// A plain value; use it on any thread.
package enum GateLimit: Sendable, Hashable {
    /// At most this many stalls.
    case maxStalls(Int)
    /// At most this many stalls of tier `hang` or `severe`.
    case maxHangs(Int)
    /// At most this many milliseconds of overrun per second of run time.
    case maxHitchRatio(Double)
    /// At most this many seconds of hang (stalls of tier `hang` or `severe`) per hour of run
    /// time.
    case maxHangRate(Double)
    /// At most this many stalls whose dominant category is the given one.
    case maxCategory(StallCategory, Int)
    /// The hitch ratio may exceed the baseline's by at most this many percent.
    case maxRegression(percent: Double, baseline: StallReport)

    /// The check's name in gate output and JUnit (`stalls`, `hangs`, `hitch-ratio`,
    /// `hang-rate`, `category-io`, `regression-hitch-ratio`).
    package var name: String {
        switch self {
        case .maxStalls: "stalls"
        case .maxHangs: "hangs"
        case .maxHitchRatio: "hitch-ratio"
        case .maxHangRate: "hang-rate"
        case .maxCategory(let category, _): "category-\(category.rawValue)"
        case .maxRegression: Self.regressionName
        }
    }

    /// The name of `maxRegression` (known before the baseline is read).
    package static let regressionName = "regression-hitch-ratio"
}

/// The outcome of checking one `GateLimit`.
///
/// A plain value; use it on any thread.
package struct GateCheck: Sendable, Hashable {
    /// The limit's name (`GateLimit.name`).
    package var name: String
    /// What was measured, as shown (`3`, `12.5 ms/s`, `+40.0 %`).
    package var measured: String
    /// The limit, as shown (`0`, `20.000 ms/s`, `+10.0 %`).
    package var limit: String
    /// Whether the measurement is within the limit.
    package var passed: Bool
    /// How long the check took, in seconds (a JUnit testcase's `time`).
    package var seconds: Double = 0

    /// The check in one line, `hangs: 3 > 0` or `hangs: 0 <= 0` (a JUnit failure's message).
    package var summary: String {
        "\(name): \(measured) \(passed ? "<=" : ">") \(limit)"
    }
}

/// Checks a `StallReport` against `GateLimit`s (`Gate.junit` writes the results as JUnit XML
/// for CI).
///
/// ```swift
/// let checks = Gate.evaluate(report, limits: [.maxHangs(0), .maxCategory(.database, 0)])
/// let passed = checks.allSatisfy(\.passed)
/// ```
///
/// Pure; use it on any thread.
package enum Gate {
    /// Checks `report` against each of `limits`: one result per limit, in the order given.
    package static func evaluate(_ report: StallReport, limits: [GateLimit]) -> [GateCheck] {
        limits.map { limit in
            let clock = ContinuousClock()
            let started = clock.now
            var check = evaluate(report, limit: limit)
            check.seconds = Double((clock.now - started).nanoseconds) / 1e9
            return check
        }
    }

    private static func evaluate(_ report: StallReport, limit: GateLimit) -> GateCheck {
        switch limit {
        case .maxStalls(let maximum):
            return GateCheck(
                name: limit.name, measured: String(report.stalls.total), limit: String(maximum),
                passed: report.stalls.total <= maximum)
        case .maxHangs(let maximum):
            return GateCheck(
                name: limit.name, measured: String(report.stalls.hangs), limit: String(maximum),
                passed: report.stalls.hangs <= maximum)
        case .maxHitchRatio(let maximum):
            return GateCheck(
                name: limit.name, measured: format(report.hitchRatioMsPerSecond, 3) + " ms/s",
                limit: format(maximum, 3) + " ms/s", passed: report.hitchRatioMsPerSecond <= maximum)
        case .maxHangRate(let maximum):
            return GateCheck(
                name: limit.name, measured: format(report.hangRateSecondsPerHour, 3) + " s/h",
                limit: format(maximum, 3) + " s/h", passed: report.hangRateSecondsPerHour <= maximum)
        case .maxCategory(let category, let maximum):
            let count = report.stalls.byCategory[category] ?? 0
            return GateCheck(
                name: limit.name, measured: String(count), limit: String(maximum), passed: count <= maximum)
        case .maxRegression(let percent, let baseline):
            let before = baseline.hitchRatioMsPerSecond
            let after = report.hitchRatioMsPerSecond
            let measured: String
            let passed: Bool
            if before == 0 {
                passed = after == 0
                measured = passed ? "+0.0 %" : "+inf % (baseline 0 ms/s, now \(format(after, 3)) ms/s)"
            } else {
                let change = (after - before) / before * 100
                passed = change <= percent
                measured =
                    "\(change >= 0 ? "+" : "")\(format(change, 1)) % (\(format(before, 3)) → \(format(after, 3)) ms/s)"
            }
            return GateCheck(
                name: limit.name, measured: measured, limit: "+" + format(percent, 1) + " %", passed: passed)
        }
    }
}
