import StallwatchCore

#if canImport(Glibc)
    import Glibc
#endif

/// What a JUnit file says about the gate run besides the checks: when, where and how long it
/// ran, and what it printed. The strict Ant schema (the one Jenkins' JUnit publisher follows)
/// requires `timestamp`, `hostname` and `time` on every suite and `time` on every case.
///
/// A plain value; use it on any thread.
package struct JUnitRun: Sendable, Hashable {
    /// One `<property name= value=>` of the suite.
    package struct Property: Sendable, Hashable {
        /// The property's name (not empty).
        package var name: String
        /// Its value.
        package var value: String

        /// Creates a property.
        package init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    /// When the gate started, as the schema wants it: `2026-12-01T11:24:40`, UTC, no zone.
    package var timestamp: String
    /// The machine it ran on (`localhost` when the name cannot be read).
    package var hostname: String
    /// How long the gate took, reading the traces included, in seconds.
    package var seconds: Double
    /// The suite's properties (the traces, the Stallwatch version).
    package var properties: [Property]
    /// What the gate printed (the suite's `system-out`).
    package var standardOutput: String
    /// Its warnings and errors (the suite's `system-err`).
    package var standardError: String

    /// Creates the facts of a run.
    package init(
        timestamp: String, hostname: String, seconds: Double, properties: [Property] = [], standardOutput: String = "",
        standardError: String = ""
    ) {
        self.timestamp = timestamp
        self.hostname = hostname
        self.seconds = seconds
        self.properties = properties
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    /// `seconds` since the epoch as a schema timestamp (UTC, `yyyy-MM-ddTHH:mm:ss`).
    package static func timestamp(secondsSinceEpoch seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))"
    }

    /// This machine's host name, `localhost` if it has none.
    package static var currentHostname: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "localhost" : name
    }
}

extension Gate {
    /// `checks` as JUnit XML that the strict Ant schema accepts: one `testsuite` named
    /// `suiteName` with `run`'s timestamp, host and time, its properties, one `testcase` per
    /// check (with the check's time) and a `failure` inside each failed one, then what the
    /// gate printed as `system-out` and `system-err`.
    package static func junit(_ checks: [GateCheck], suiteName: String = "stallwatch gate", run: JUnitRun) -> String {
        let failures = checks.filter { !$0.passed }.count
        var cases = ""
        for check in checks {
            cases +=
                "  <testcase classname=\"stallwatch.gate\" name=\"\(escape(check.name))\" time=\"\(seconds(check.seconds))\""
            if check.passed {
                cases += "/>\n"
            } else {
                cases += ">\n    <failure message=\"\(escape(check.summary))\" type=\"limit\">"
                cases += "measured \(escape(check.measured)), limit \(escape(check.limit))</failure>\n"
                cases += "  </testcase>\n"
            }
        }
        return suite(
            name: suiteName, tests: checks.count, failures: failures, errors: 0, skipped: 0, cases: cases, run: run)
    }

    /// The JUnit XML of a gate that could not read its input: one `input` testcase with an
    /// `error` holding `errors` (one line each, naming the file and byte offset), and each of
    /// `limits` (their names) as a skipped case, so a CI publisher shows why nothing was
    /// checked instead of finding no file.
    package static func junit(
        unreadable errors: [String], limits: [String], suiteName: String = "stallwatch gate", run: JUnitRun
    ) -> String {
        let message = errors.first ?? "the traces could not be read"
        var cases = "  <testcase classname=\"stallwatch.gate\" name=\"input\" time=\"\(seconds(run.seconds))\">\n"
        cases += "    <error message=\"\(escape(message))\" type=\"unreadable-input\">"
        cases += escape(errors.joined(separator: "\n"), attribute: false) + "</error>\n  </testcase>\n"
        for limit in limits {
            cases += "  <testcase classname=\"stallwatch.gate\" name=\"\(escape(limit))\" time=\"0.000\">\n"
            cases += "    <skipped message=\"not checked: the traces could not be read\"/>\n  </testcase>\n"
        }
        return suite(
            name: suiteName, tests: limits.count + 1, failures: 0, errors: 1, skipped: limits.count, cases: cases,
            run: run)
    }

    private static func suite(
        name: String, tests: Int, failures: Int, errors: Int, skipped: Int, cases: String, run: JUnitRun
    ) -> String {
        var xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        xml += "<testsuite name=\"\(escape(name))\" timestamp=\"\(escape(run.timestamp))\" "
        xml += "hostname=\"\(escape(run.hostname.isEmpty ? "localhost" : run.hostname))\" tests=\"\(tests)\" "
        xml +=
            "failures=\"\(failures)\" errors=\"\(errors)\" skipped=\"\(skipped)\" time=\"\(seconds(run.seconds))\">\n"
        if run.properties.isEmpty {
            xml += "  <properties/>\n"
        } else {
            xml += "  <properties>\n"
            for property in run.properties {
                xml += "    <property name=\"\(escape(property.name))\" value=\"\(escape(property.value))\"/>\n"
            }
            xml += "  </properties>\n"
        }
        xml += cases
        xml += "  <system-out>\(escape(run.standardOutput, attribute: false))</system-out>\n"
        xml += "  <system-err>\(escape(run.standardError, attribute: false))</system-err>\n"
        xml += "</testsuite>\n"
        return xml
    }

    /// Seconds with millisecond places, as the schema's `xs:decimal` (never negative).
    private static func seconds(_ value: Double) -> String {
        format(max(0, value.isFinite ? value : 0), 3)
    }

    /// `text` as XML attribute value (line breaks and tabs as character references, which
    /// attribute normalisation would otherwise turn into spaces) or element text: the five
    /// special characters as entities, and the control characters XML 1.0 cannot hold at all
    /// (a symbol or path could carry one) as `?`.
    static func escape(_ text: String, attribute: Bool = true) -> String {
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&apos;"
            case "\n", "\t", "\r":
                if attribute { result += "&#\(scalar.value);" } else { result.unicodeScalars.append(scalar) }
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                    result += "?"
                } else {
                    result.unicodeScalars.append(scalar)
                }
            }
        }
        return result
    }
}
