// `gate --junit` writes files the strict Ant JUnit schema accepts (time, timestamp, hostname on
// the suite, time on every case, properties, system-out and system-err), also when a trace
// cannot be read: then the `input` case errs with the reason and the limits are skipped.
import Foundation
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// The strict schema of Apache Ant's JUnit XML (what Jenkins' JUnit publisher reads), written
/// out from its rules: a `testsuite` needs `name`, `timestamp` (ISO 8601, seconds, no zone),
/// `hostname`, `tests`, `failures`, `errors` and `time`, may have `skipped`; it holds
/// `properties`, the `testcase`s (each with `name`, `classname` and `time`, holding at most one
/// of `skipped`, `error`, `failure`, the last two with a `type`), then `system-out` and
/// `system-err`.
let strictJUnitSchema = """
    <?xml version="1.0" encoding="UTF-8"?>
    <xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" elementFormDefault="qualified">
      <xs:element name="testsuite" type="suite"/>
      <xs:simpleType name="timestamp">
        <xs:restriction base="xs:dateTime">
          <xs:pattern value="[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}"/>
        </xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="name">
        <xs:restriction base="xs:token"><xs:minLength value="1"/></xs:restriction>
      </xs:simpleType>
      <xs:simpleType name="text">
        <xs:restriction base="xs:string"><xs:whiteSpace value="preserve"/></xs:restriction>
      </xs:simpleType>
      <xs:complexType name="problem">
        <xs:simpleContent>
          <xs:extension base="text">
            <xs:attribute name="message" type="xs:string"/>
            <xs:attribute name="type" type="xs:string" use="required"/>
          </xs:extension>
        </xs:simpleContent>
      </xs:complexType>
      <xs:complexType name="suite">
        <xs:sequence>
          <xs:element name="properties">
            <xs:complexType>
              <xs:sequence>
                <xs:element name="property" minOccurs="0" maxOccurs="unbounded">
                  <xs:complexType>
                    <xs:attribute name="name" type="name" use="required"/>
                    <xs:attribute name="value" type="xs:string" use="required"/>
                  </xs:complexType>
                </xs:element>
              </xs:sequence>
            </xs:complexType>
          </xs:element>
          <xs:element name="testcase" minOccurs="0" maxOccurs="unbounded">
            <xs:complexType>
              <xs:choice minOccurs="0">
                <xs:element name="skipped"/>
                <xs:element name="error" type="problem"/>
                <xs:element name="failure" type="problem"/>
              </xs:choice>
              <xs:attribute name="name" type="xs:token" use="required"/>
              <xs:attribute name="classname" type="xs:token" use="required"/>
              <xs:attribute name="time" type="xs:decimal" use="required"/>
            </xs:complexType>
          </xs:element>
          <xs:element name="system-out" type="text"/>
          <xs:element name="system-err" type="text"/>
        </xs:sequence>
        <xs:attribute name="name" type="name" use="required"/>
        <xs:attribute name="timestamp" type="timestamp" use="required"/>
        <xs:attribute name="hostname" type="name" use="required"/>
        <xs:attribute name="tests" type="xs:int" use="required"/>
        <xs:attribute name="failures" type="xs:int" use="required"/>
        <xs:attribute name="errors" type="xs:int" use="required"/>
        <xs:attribute name="skipped" type="xs:int"/>
        <xs:attribute name="time" type="xs:decimal" use="required"/>
      </xs:complexType>
    </xs:schema>

    """

/// `xmllint`, if this machine has it (Debian's libxml2-utils; scripts/install-deps.sh adds it).
let xmllint: String? = ["/usr/bin/xmllint", "/usr/local/bin/xmllint"].first {
    FileManager.default.isExecutableFile(atPath: $0)
}

@Suite struct JUnitSchemaTests {
    let directory = TemporaryDirectory()
    var standard: String { directory.write("standard.swtrace", Fixture.standard()) }

    /// `xmllint --schema`'s verdict on `file`: nil when valid, else its complaint.
    func schemaProblems(_ file: String) throws -> String? {
        let schema = directory.path + "/junit.xsd"
        try strictJUnitSchema.write(toFile: schema, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try #require(xmllint))
        process.arguments = ["--noout", "--schema", schema, file]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return process.terminationStatus == 0 ? nil : text
    }

    @Test(
        .disabled(if: xmllint == nil, "xmllint is not installed (apt-get install libxml2-utils)"),
        .disabled(if: Sanitizer.address || Sanitizer.thread, "checks a file format with an outside tool"))
    func gateFilesPassTheStrictSchemaAndTheSchemaIsStrict() throws {
        let junit = directory.path + "/gate.xml"
        let run = CLIRun(["gate", standard, "--max-stalls", "10", "--max-hangs", "0", "--junit", junit])
        #expect(run.exitCode == 1)
        #expect(try schemaProblems(junit) == nil)
        // The file of an unreadable trace passes too.
        let unreadable = directory.path + "/unreadable.xml"
        let missing = directory.path + "/missing.swtrace"
        #expect(CLIRun(["gate", missing, "--max-hangs", "0", "--junit", unreadable]).exitCode == 2)
        #expect(try schemaProblems(unreadable) == nil)
        // The schema is the strict one: the file this command wrote before (no time, timestamp
        // or hostname; no properties, system-out, system-err) is rejected.
        let old = directory.path + "/old.xml"
        try """
        <?xml version="1.0" encoding="UTF-8"?>
        <testsuite name="stallwatch gate" tests="1" failures="0" errors="0" skipped="0">
          <testcase classname="stallwatch.gate" name="stalls"/>
        </testsuite>

        """.write(toFile: old, atomically: true, encoding: .utf8)
        let complaint = try #require(try schemaProblems(old))
        #expect(complaint.contains("timestamp") || complaint.contains("properties"), "\(complaint)")
    }

    @Test func suitesAndCasesCarryTimeTimestampAndHostname() throws {
        let junit = directory.path + "/gate.xml"
        let before = Int(Date().timeIntervalSince1970)
        #expect(CLIRun(["gate", standard, "--max-stalls", "10", "--max", "io=0", "--junit", junit]).exitCode == 1)
        let after = Int(Date().timeIntervalSince1970)
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        let document = try XMLDocument(xmlString: xml)
        let suite = try #require(document.rootElement())
        #expect(suite.name == "testsuite")
        #expect(suite.attribute(forName: "hostname")?.stringValue == JUnitRun.currentHostname)
        #expect(JUnitRun.currentHostname != "")
        let timestamp = try #require(suite.attribute(forName: "timestamp")?.stringValue)
        #expect((before...after).map { JUnitRun.timestamp(secondsSinceEpoch: $0) }.contains(timestamp), "\(timestamp)")
        let time = try #require(suite.attribute(forName: "time")?.stringValue.flatMap(Double.init))
        #expect(time >= 0 && time < 60)
        let cases = suite.elements(forName: "testcase")
        #expect(cases.count == 2)
        #expect(cases.allSatisfy { $0.attribute(forName: "time").flatMap { Double($0.stringValue ?? "") } != nil })
        let properties = suite.elements(forName: "properties").first?.elements(forName: "property") ?? []
        #expect(properties.map { $0.attribute(forName: "name")?.stringValue } == ["trace", "stallwatch.version"])
        #expect(properties.last?.attribute(forName: "value")?.stringValue == StallwatchVersion.current)
        // What the gate printed, without colour, is the suite's system-out.
        let printed = suite.elements(forName: "system-out").first?.stringValue ?? ""
        #expect(printed.hasPrefix("Gate: 1 trace, 6 stalls, 6.00 s\n"))
        #expect(printed.contains("FAIL  category-io"))
    }

    /// A truncated trace gates on its whole records, and the warning the gate printed is the
    /// suite's system-err (the traces are added up without being kept, so the warning must come
    /// from the reading, not from the traces).
    @Test func aTruncatedTracesWarningIsTheSuitesSystemErr() throws {
        let whole = Fixture.standard()
        let path = directory.write("cut.swtrace", Array(whole.dropLast(3)))
        let junit = directory.path + "/gate.xml"
        let run = CLIRun(["gate", path, "--max-stalls", "10", "--junit", junit])
        #expect(run.exitCode == 0)
        let warning = try #require(run.error.split(separator: "\n").first.map(String.init))
        #expect(warning.hasPrefix("warning: \(path): byte "))
        #expect(warning.hasSuffix("; using the whole records before it"))
        let document = try XMLDocument(xmlString: try String(contentsOfFile: junit, encoding: .utf8))
        let suite = try #require(document.rootElement())
        #expect(suite.elements(forName: "system-err").first?.stringValue == warning)
    }

    @Test(
        .disabled(if: xmllint == nil, "xmllint is not installed (apt-get install libxml2-utils)"),
        .disabled(if: Sanitizer.address || Sanitizer.thread, "checks a file format with an outside tool"))
    func aTruncatedTracesFilePassesTheStrictSchema() throws {
        let path = directory.write("cut.swtrace", Array(Fixture.standard().dropLast(3)))
        let junit = directory.path + "/gate.xml"
        let run = CLIRun(["gate", path, "--max-stalls", "10", "--junit", junit])
        #expect(run.exitCode == 0, "\(run.error)")
        #expect(try schemaProblems(junit) == nil)
    }

    @Test func aKnownTimestamp() {
        #expect(JUnitRun.timestamp(secondsSinceEpoch: 0) == "1970-01-01T00:00:00")
        #expect(JUnitRun.timestamp(secondsSinceEpoch: 1_796_124_280) == "2026-12-01T11:24:40")
    }

    @Test func anUnreadableTraceStillWritesAFailingCase() throws {
        let junit = directory.path + "/gate.xml"
        let missing = directory.path + "/missing.swtrace"
        let run = CLIRun(["gate", missing, "--max-stalls", "1", "--max", "io=0", "--junit", junit])
        #expect(run.exitCode == 2)
        let reason = "\(missing): byte 0: cannot open (No such file or directory)"
        #expect(run.error == "Error: \(reason)\n")
        let document = try XMLDocument(xmlString: try String(contentsOfFile: junit, encoding: .utf8))
        let suite = try #require(document.rootElement())
        #expect(suite.attribute(forName: "tests")?.stringValue == "3")
        #expect(suite.attribute(forName: "errors")?.stringValue == "1")
        #expect(suite.attribute(forName: "skipped")?.stringValue == "2")
        let cases = suite.elements(forName: "testcase")
        #expect(cases.map { $0.attribute(forName: "name")?.stringValue } == ["input", "stalls", "category-io"])
        let error = try #require(cases[0].elements(forName: "error").first)
        #expect(error.attribute(forName: "message")?.stringValue == reason)
        #expect(error.attribute(forName: "type")?.stringValue == "unreadable-input")
        #expect(cases[1...].allSatisfy { $0.elements(forName: "skipped").count == 1 })
        #expect(suite.elements(forName: "system-err").first?.stringValue == reason)
    }

    @Test func anUnreadableBaselineToo() throws {
        let junit = directory.path + "/gate.xml"
        let notATrace = directory.write("notes.txt", Array("just some notes\n".utf8))
        let run = CLIRun(["gate", standard, "--baseline", notATrace, "--max-regression", "10", "--junit", junit])
        #expect(run.exitCode == 2)
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        let document = try XMLDocument(xmlString: xml)
        let cases = try #require(document.rootElement()).elements(forName: "testcase")
        #expect(cases.map { $0.attribute(forName: "name")?.stringValue } == ["input", "regression-hitch-ratio"])
        let message = cases[0].elements(forName: "error").first?.attribute(forName: "message")?.stringValue ?? ""
        #expect(message.hasPrefix("\(notATrace): byte 0: does not start with the trace magic"), "\(message)")
    }
}
