// The fleet exports are what their engines and backends read: JSONL follows its documented
// schema and DuckDB and ClickHouse rebuild `report`'s signature table from it with the shipped
// SQL; the OTLP/JSON parses into the official OpenTelemetry messages; go tool pprof reads the
// pprof profile with its labels, functions and build ids.
import Foundation
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct FleetExportTests {
    let directory = TemporaryDirectory()

    /// The documented keys of a stall line (docs/fleet.md), in order.
    static let stallKeys = [
        "schema", "trace_id", "trace_path", "host", "process", "pid", "build", "build_id", "app_version",
        "trace_run_time_ns", "trace_hang_ns", "trace_hang_rate_s_per_hour", "trace_hitch_ratio_ms_per_s", "type",
        "stall_id", "start_unix_nano", "start", "duration_ns", "duration_ms", "unfinished", "tier", "category",
        "reason", "share_compute", "share_io", "share_lock_wait", "share_database", "share_other", "signature",
        "signature_frames", "stack", "stack_confidence", "site", "site_label", "site_mode",
        "sample_count", "wait", "wait_share",
        "expected", "app_state",
    ]

    static let sampleKeys = [
        "schema", "trace_id", "trace_path", "host", "process", "pid", "build", "build_id", "app_version",
        "trace_run_time_ns", "trace_hang_ns", "trace_hang_rate_s_per_hour", "trace_hitch_ratio_ms_per_s", "type",
        "stall_id", "sample_index", "tid", "time_unix_nano", "offset_ns", "weight_ns", "category", "reason", "state",
        "syscall", "stack", "wait",
    ]

    func export(_ input: String, _ format: String, _ extra: [String] = []) throws -> String {
        let output = directory.path + "/export-\(extra.joined()).\(format)"
        let run = CLIRun(["export", input, "--format", format, "-o", output] + extra)
        #expect(run.exitCode == 0, "\(run.error)")
        return output
    }

    /// Keys in file order, from the raw line (JSONSerialization forgets the order).
    static func keys(_ line: Substring) -> [String] {
        var keys: [String] = []
        var depth = 0
        var index = line.startIndex
        var inString = false
        var start = index
        while index < line.endIndex {
            let character = line[index]
            if inString {
                if character == "\\" {
                    index = line.index(after: index)
                } else if character == "\"" {
                    inString = false
                    let after = line.index(after: index)
                    if depth == 1, after < line.endIndex, line[after] == ":" {
                        keys.append(String(line[line.index(after: start)..<index]))
                    }
                }
            } else if character == "\"" {
                inString = true
                start = index
            } else if character == "{" || character == "[" {
                depth += 1
            } else if character == "}" || character == "]" {
                depth -= 1
            }
            index = line.index(after: index)
        }
        return keys
    }

    @Test func jsonLinesFollowTheDocumentedSchema() throws {
        let root = FleetFixture.write(into: directory)
        let path = try export(root, "jsonl", ["--samples"])
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n")
        var stalls = 0
        var samples = 0
        for line in lines {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["schema"] as? String == "stallwatch.jsonl/1")
            switch object["type"] as? String {
            case "stall":
                stalls += 1
                #expect(Self.keys(line) == Self.stallKeys)
                #expect((object["trace_id"] as? String)?.count == 32)
                #expect(object["duration_ns"] is NSNumber)
                #expect((object["stack"] as? [String])?.isEmpty == false)
                #expect((object["start"] as? String)?.hasPrefix("2026-12-01T10:") == true)
                let shares = ["compute", "io", "lock_wait", "database", "other"].compactMap {
                    (object["share_" + $0] as? NSNumber)?.doubleValue
                }
                #expect(shares.count == 5 && abs(shares.reduce(0, +) - 1) < 0.001)
                // What the samples waited on: the saves' fsync names its file; the parses wait on nothing.
                if object["category"] as? String == "io" {
                    #expect(object["wait"] as? String == "fsync of /data/feed.db")
                    #expect((object["wait_share"] as? NSNumber)?.doubleValue == 1)
                } else {
                    #expect(object["wait"] is NSNull)
                    #expect((object["wait_share"] as? NSNumber)?.doubleValue == 0)
                }
            case "sample":
                samples += 1
                #expect(Self.keys(line) == Self.sampleKeys)
                #expect(
                    object["wait"] as? String
                        == (object["category"] as? String == "io" ? "fsync of /data/feed.db" : nil))
            default:
                Issue.record("unexpected line \(line)")
            }
        }
        let report = ReportBuilder().report(
            try TraceLoader.load(paths: TraceLoader.expand([root])).map { try $0.get() }, top: 10)
        #expect(stalls == report.stalls.total)
        let loaded = try TraceLoader.load(paths: TraceLoader.expand([root])).map { try $0.get() }
        #expect(samples == loaded.flatMap(\.trace.stalls).reduce(0) { $0 + $1.samples.count })
    }

    /// Runs a tools/fleet engine on the export and compares its table with `report --json`.
    func engineAgreesWithReport(_ script: String) throws {
        let python = try #require(ExternalTools.python)
        let root = FleetFixture.write(into: directory)
        for index in 0..<12 {  // more signatures and ties than the six-trace fixture has
            if index == 0 {
                try FileManager.default.createDirectory(atPath: root + "/more", withIntermediateDirectories: true)
            }
            _ = directory.write(
                "fleet/more/m\(index).swtrace",
                FleetFixture.trace(
                    host: "h\(index % 5)", version: "2.\(index % 4)", buildByte: UInt8(index % 4),
                    offset: 1_000 + UInt64(index) * 30,
                    stalls: [(.parse, 20 + UInt64(index) * 7), (.save, 60 + UInt64(index % 3) * 40)]))
        }
        let jsonl = try export(root, "jsonl")
        let report = CLIRun(["report", root, "--json", "--top", "10"])
        #expect(report.exitCode == 0)
        let reportPath = directory.write("report.json", Array(report.output.utf8))
        let tools = ExternalTools.root + "/tools/fleet/"
        let engine = ExternalTools.run(python, [tools + script, jsonl])
        #expect(engine.status == 0, "\(engine.error)")
        let enginePath = directory.write("engine.jsonl", Array(engine.output.utf8))
        let compare = ExternalTools.run(python, [tools + "compare.py", reportPath, enginePath])
        #expect(compare.status == 0, "\(compare.output)\(compare.error)")
        #expect(compare.output.hasSuffix("signatures agree\n"))
    }

    @Test(
        .disabled(if: Sanitizer.any, "checks a format with DuckDB, not memory"),
        .enabled(if: ExternalTools.hasDuckDB, "needs duckdb in the venv (scripts/install-deps.sh)"))
    func duckDBRebuildsTheSignatureTable() throws {
        try engineAgreesWithReport("duckdb_signatures.py")
    }

    @Test(
        .disabled(if: Sanitizer.any, "checks a format with DuckDB, not memory"),
        .enabled(if: ExternalTools.hasDuckDB, "needs duckdb in the venv (scripts/install-deps.sh)"))
    func duckDBGivesEachBuildTheReportsHangRate() throws {
        let python = try #require(ExternalTools.python)
        // Hangs in some traces of each build, none in others: the rate is per run time.
        try FileManager.default.createDirectory(atPath: directory.path + "/hangs", withIntermediateDirectories: true)
        for index in 0..<6 {
            _ = directory.write(
                "hangs/t\(index).swtrace",
                FleetFixture.trace(
                    host: "h\(index % 2)", version: "3.\(index % 3)", buildByte: UInt8(index % 3),
                    offset: UInt64(index) * 30, stalls: [(.parse, 40), (.save, 150 + UInt64(index) * 120)]))
        }
        let root = directory.path + "/hangs"
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["report", root, "--json"]).output.utf8))
                as? [String: Any])
        let expected = try #require(report["rateByBuild"] as? [[String: Any]]).map {
            "\($0["name"] as? String ?? "?") \($0["traces"] as? Int ?? 0) \($0["hangRateSecondsPerHour"] as? Double ?? -1)"
        }
        #expect(expected.count == 3)
        let tools = ExternalTools.root + "/tools/fleet/"
        let engine = ExternalTools.run(
            python, [tools + "duckdb_signatures.py", try export(root, "jsonl"), tools + "hang_rates.sql"])
        #expect(engine.status == 0, "\(engine.error)")
        let rows = try engine.output.split(separator: "\n").map { line in
            let row = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return "\(row["name"] as? String ?? "?") \(row["traces"] as? Int ?? 0) "
                + "\(row["hangRateSecondsPerHour"] as? Double ?? -1)"
        }
        #expect(rows == expected)
    }

    /// What the app said of its stalls (`Fixture.appStates`): stall id, expected label, app state.
    static let appStates: [(id: Int, expected: String?, state: [String])] = [
        (1, nil, ["screen=Feed"]), (2, nil, ["screen=Settings"]), (3, "export.pdf", ["modal=true", "screen=Export"]),
        (4, nil, ["screen=Feed"]), (5, nil, []), (6, nil, []),
    ]

    @Test(
        .disabled(if: Sanitizer.any, "checks a format with DuckDB, not memory"),
        .enabled(if: ExternalTools.hasDuckDB, "needs duckdb in the venv (scripts/install-deps.sh)"))
    func duckDBReadsTheAppStateAndExpectedColumns() throws {
        let python = try #require(ExternalTools.python)
        let trace = directory.write("state.swtrace", Fixture.standard(appState: true))
        let jsonl = try export(trace, "jsonl")
        let tools = ExternalTools.root + "/tools/fleet/"
        func query(_ sql: String) throws -> [[String: Any]] {
            let file = directory.write("query.sql", Array(sql.utf8))
            let engine = ExternalTools.run(python, [tools + "duckdb_signatures.py", jsonl, file])
            #expect(engine.status == 0, "\(engine.error)")
            return try engine.output.split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
        }
        // The types DuckDB infers: a nullable string and a list of strings.
        let rows = try query(
            """
            SELECT stall_id, expected, app_state, typeof(expected) AS expected_type, typeof(app_state) AS state_type
            FROM stalls ORDER BY stall_id
            """)
        #expect(rows.count == Self.appStates.count)
        for (row, want) in zip(rows, Self.appStates) {
            #expect(row["stall_id"] as? Int == want.id)
            #expect(row["expected"] as? String == want.expected, "\(row)")
            #expect(want.expected != nil || row["expected"] is NSNull, "\(row)")
            #expect(row["app_state"] as? [String] == want.state, "\(row)")
            #expect(row["expected_type"] as? String == "VARCHAR")
            #expect(row["state_type"] as? String == "VARCHAR[]")
        }
        // Usable as they are: the stalls of one state, the expected ones apart.
        let counts = try query(
            """
            SELECT count(*) FILTER (WHERE list_contains(app_state, 'screen=Feed')) AS feed,
                   count(expected) AS expected,
                   count(*) FILTER (WHERE len(app_state) = 0) AS without_state
            FROM stalls
            """)
        #expect(counts.count == 1)
        #expect(counts.first?["feed"] as? Int == 2)
        #expect(counts.first?["expected"] as? Int == 1)
        #expect(counts.first?["without_state"] as? Int == 2)
    }

    @Test(
        .disabled(if: Sanitizer.any, "checks a format with opentelemetry-proto, not memory"),
        .enabled(if: ExternalTools.hasOTLPProto, "needs opentelemetry-proto in the venv (scripts/install-deps.sh)"))
    func otlpAppStateAndExpectedParseIntoTheOfficialMessages() throws {
        let python = try #require(ExternalTools.python)
        let trace = directory.write("state.swtrace", Fixture.standard(appState: true))
        let path = try export(trace, "otlp-json")
        let tools = ExternalTools.root + "/tools/fleet"
        let check = ExternalTools.run(python, [tools + "/check_otlp.py", path, "6"])
        #expect(check.output == "OTLP ok: 1 resources, 6 spans\n", "\(check.error)")
        // Each stall span's stallwatch.app.* and stallwatch.expected attributes as the official
        // messages hold them: key, which value field is set, and the value.
        let script = """
            import sys
            sys.path.insert(0, sys.argv[2])
            import check_otlp
            lines = []
            for resource in check_otlp.parse(sys.argv[1]).resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        values = {a.key: a.value for a in span.attributes}
                        picked = sorted(
                            f"{key} {value.WhichOneof('value')} {getattr(value, value.WhichOneof('value'))}"
                            for key, value in values.items()
                            if key == "stallwatch.expected" or key.startswith("stallwatch.app."))
                        lines.append((values["stallwatch.stall_id"].int_value, picked))
            for stall, picked in sorted(lines):
                print("; ".join([str(stall)] + picked))
            """
        let run = ExternalTools.run(python, ["-c", script, path, tools])
        #expect(run.status == 0, "\(run.error)")
        #expect(
            run.output.split(separator: "\n").map(String.init) == [
                "1; stallwatch.app.screen string_value Feed",
                "2; stallwatch.app.screen string_value Settings",
                "3; stallwatch.app.modal string_value true; stallwatch.app.screen string_value Export; "
                    + "stallwatch.expected string_value export.pdf",
                "4; stallwatch.app.screen string_value Feed",
                "5",
                "6",
            ], "\(run.output)")
    }

    @Test(
        .disabled(if: Sanitizer.any, "checks a format with ClickHouse, not memory"),
        .enabled(if: ExternalTools.hasChDB, "needs chdb in the venv (scripts/install-deps.sh)"))
    func clickHouseRebuildsTheSignatureTable() throws {
        try engineAgreesWithReport("clickhouse_signatures.py")
    }

    @Test(
        .disabled(if: Sanitizer.any, "checks a format with opentelemetry-proto, not memory"),
        .enabled(if: ExternalTools.hasOTLPProto, "needs opentelemetry-proto in the venv (scripts/install-deps.sh)"))
    func otlpParsesIntoTheOfficialMessages() throws {
        let python = try #require(ExternalTools.python)
        let root = FleetFixture.write(into: directory)
        let path = try export(root, "otlp-json")
        let check = ExternalTools.run(python, [ExternalTools.root + "/tools/fleet/check_otlp.py", path, "12"])
        #expect(check.status == 0, "\(check.output)\(check.error)")
        #expect(check.output == "OTLP ok: 6 resources, 12 spans\n")

        // Full mode: a span per callout too.
        let full = directory.write("full.swtrace", Fixture.standard(mode: .full, withCallouts: true))
        let fullPath = try export(full, "otlp-json", ["--callouts"])
        let fullCheck = ExternalTools.run(python, [ExternalTools.root + "/tools/fleet/check_otlp.py", fullPath, "16"])
        #expect(fullCheck.output == "OTLP ok: 1 resources, 16 spans\n", "\(fullCheck.error)")

        // The ids are hex as OTLP/JSON wants, and the resource says where the trace came from.
        let json = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        let resource = try #require((json["resourceSpans"] as? [[String: Any]])?.first)
        let attributes = try #require((resource["resource"] as? [String: Any])?["attributes"] as? [[String: Any]])
        let keys = Set(attributes.compactMap { $0["key"] as? String })
        #expect(keys.isSuperset(of: ["service.name", "service.version", "host.name", "stallwatch.build_id"]))
        // Each resource's run time and rates, as `report` gives them for its trace alone.
        func value(_ key: String) -> [String: Any]? {
            attributes.first { $0["key"] as? String == key }?["value"] as? [String: Any]
        }
        let tracePath = try #require(value("stallwatch.trace_path")?["stringValue"] as? String)
        let alone = try #require(
            try JSONSerialization.jsonObject(with: Data(CLIRun(["report", tracePath, "--json"]).output.utf8))
                as? [String: Any])
        #expect(
            value("stallwatch.hang_rate_s_per_hour")?["doubleValue"] as? Double == alone["hangRateSecondsPerHour"]
                as? Double)
        #expect(
            value("stallwatch.hitch_ratio_ms_per_s")?["doubleValue"] as? Double == alone["hitchRatioMsPerSecond"]
                as? Double)
        let runNanos = try #require(value("stallwatch.run_time_ns")?["intValue"] as? String)
        #expect(Double(runNanos).map { $0 / 1e9 } == alone["runTimeSeconds"] as? Double)

        // A save's span says what it waited on.
        let spans = (json["resourceSpans"] as? [[String: Any]] ?? []).flatMap { resource in
            (resource["scopeSpans"] as? [[String: Any]] ?? []).flatMap { $0["spans"] as? [[String: Any]] ?? [] }
        }
        let save = try #require(spans.first { ($0["name"] as? String) == "stall io" })
        let waits = (save["attributes"] as? [[String: Any]] ?? []).filter {
            ($0["key"] as? String)?.hasPrefix("stallwatch.wait") == true
        }
        #expect(
            waits.compactMap { ($0["value"] as? [String: Any])?["stringValue"] as? String } == [
                "fsync of /data/feed.db"
            ])
        #expect(waits.count == 2)
        // And how its work was timed: the fixture's stalls are MainLoop callouts, in their mode.
        let mode = (save["attributes"] as? [[String: Any]] ?? []).first {
            ($0["key"] as? String) == "stallwatch.site_mode"
        }
        #expect((mode?["value"] as? [String: Any])?["stringValue"] as? String == "default", "\(save)")
    }

    @Test(
        .disabled(if: Sanitizer.any, "checks a format with go tool pprof, not memory"),
        .enabled(if: ExternalTools.go != nil, "needs Debian's golang-go (scripts/install-deps.sh)"))
    func goToolPprofReadsTheProfile() throws {
        let go = try #require(ExternalTools.go)
        let root = FleetFixture.write(into: directory)
        let path = try export(root, "pprof")
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        #expect(bytes.prefix(2) == [0x1f, 0x8b], "gzip magic")
        let environment = ["HOME": directory.path, "GOCACHE": directory.path + "/gocache", "GOFLAGS": "-mod=mod"]
        let raw = ExternalTools.run(go, ["tool", "pprof", "-raw", path], environment: environment)
        #expect(raw.status == 0, "\(raw.error)")
        #expect(raw.output.contains("samples/count wall/nanoseconds[dflt]"))
        #expect(raw.output.contains("category:[io]"))
        #expect(raw.output.contains("signature:[io: Store.save() ← main()]"))
        #expect(raw.output.contains("tier:[microHang]"))
        #expect(raw.output.contains("/srv/FleetApp bbbb [FN][FL][LN]"))  // the mapping, with its build id
        #expect(raw.output.contains("Store.save() FleetApp/Store.swift:40"))
        let top = ExternalTools.run(go, ["tool", "pprof", "-top", "-nodecount=3", path], environment: environment)
        #expect(top.status == 0, "\(top.error)")
        #expect(top.output.contains("Type: wall"))
        #expect(top.output.contains("Parser.parse()"))
        #expect(top.output.contains("fsync"))
        // The total is every sample's weight: the report's sample-attributed stall time.
        let loaded = try TraceLoader.load(paths: TraceLoader.expand([root])).map { try $0.get() }
        let report = ReportBuilder().report(loaded, top: 10)
        let attributed = report.stalls.categoryMs.values.reduce(0, +)
        #expect(top.output.contains("Total samples = \(format(attributed, 0))ms"))
    }

    @Test func singleTraceFormatsRefuseADirectory() {
        let root = FleetFixture.write(into: directory)
        let run = CLIRun(["export", root, "--format", "chrome", "-o", "-"])
        #expect(run.exitCode == 2)
        #expect(run.error.hasPrefix("Error: chrome exports one trace; \(root) holds 6"))
    }

    @Test func pprofRefusesStandardOutput() {
        let trace = directory.write("one.swtrace", Fixture.standard())
        let run = CLIRun(["export", trace, "--format", "pprof", "-o", "-"])
        #expect(run.exitCode == 2)
        #expect(run.error.contains("pprof is binary: give a file with -o"))
    }
}
