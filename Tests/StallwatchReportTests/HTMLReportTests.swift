// `report --html` writes one well-formed, self-contained page that holds every stall and
// signature of its traces, and keeps every name from a trace as data that cannot run.
import Foundation
import FoundationXML
import StallwatchCLITestSupport
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct HTMLReportTests {
    let directory = TemporaryDirectory()

    @Test func thePageIsWellFormed() throws {
        for traces in [[Fixture.standard()], [Fixture.hostile()], [Fixture.standard(), Fixture.hostile()]] {
            let page = RenderedPage(traces, in: directory)
            // A strict XML parser: every tag closed and nested, every attribute quoted, no
            // stray `<` or `&` (scripts and styles sit in CDATA sections).
            let document = try XMLDocument(xmlString: page.html, options: [])
            let root = try #require(document.rootElement())
            #expect(root.name == "html")
            #expect(try root.nodes(forXPath: "//script").count == 3)
            #expect(try root.nodes(forXPath: "//canvas[@id='timeline']").count == 1)
            #expect(try root.nodes(forXPath: "//canvas[@id='flame']").count == 1)
            #expect(page.html.hasPrefix("<!DOCTYPE html>\n<html lang=\"en\">"))
            // What an HTML parser would end a script or style at appears only where it should.
            #expect(page.html.components(separatedBy: "</script").count - 1 == 3)
            #expect(page.html.components(separatedBy: "</style").count - 1 == 1)
            #expect(page.html.components(separatedBy: "]]>").count - 1 == 3)
        }
    }

    @Test func theDataHoldsEveryStallAndSignature() throws {
        let page = RenderedPage([Fixture.standard(), Fixture.standard(mode: .full, withCallouts: true)], in: directory)
        #expect(page.stallIDs == [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6]])
        let data = page.data
        let signatures = try #require(data["signatures"] as? [[String: Any]])
        #expect(signatures.count == page.report.signatureCount)
        #expect(signatures.count == 4)
        let strings = page.strings
        for (row, signature) in zip(signatures, page.report.signatures) {
            #expect((row["frames"] as! [Int]).map { strings[$0] } == signature.frames)
            #expect(row["count"] as? Int == signature.count)
            #expect((row["totalMs"] as? NSNumber)?.doubleValue == signature.totalMs)
        }
        let lanes = try #require(data["traces"] as? [[String: Any]])
        #expect(lanes[0]["busy"] is NSNull)  // stalls mode: no callouts
        let busy = try #require(lanes[1]["busy"] as? [String: Any])
        #expect((busy["permille"] as! [Int]).reduce(0, +) > 0)
        // The unfinished lock wait (stall 5) is marked and lasts until its last sample.
        let stall5 = try #require((lanes[0]["stalls"] as! [[Any]]).first { $0[0] as? Int == 5 })
        #expect(stall5[8] as? Int == 1)
        #expect((stall5[2] as? NSNumber)?.doubleValue == 60)
        let summary = try #require(data["summary"] as? [String: Any])
        #expect((summary["stalls"] as? [String: Any])?["total"] as? Int == 12)
        // The flame graph's root weighs every sample, as the folded export does.
        let flame = try #require(data["flame"] as? [String: [Int]])
        let folded = FoldedStacksExporter.export(ReportBuilder().analyze(loadedFixtures()).flatMap { $0 })
        let foldedTotal = folded.split(separator: "\n").reduce(0) { $0 + Int($1.split(separator: " ").last!)! }
        #expect(flame["weight"]?.first == 2 * foldedTotal)
        #expect(flame["parent"]?.first == -1)
    }

    @Test func aStallsAppStateIsKeyValuePairsAndItsExpectedReasonAString() throws {
        let page = RenderedPage([Fixture.standard(appState: true)], in: directory)
        let strings = page.strings
        let rows = try #require((page.data["traces"] as? [[String: Any]])?.first?["stalls"] as? [[Any]])
        func row(_ id: Int) throws -> [Any] { try #require(rows.first { $0[0] as? Int == id }) }
        let three = try row(3)
        #expect((three[14] as? Int).map { strings[$0] } == "export.pdf")
        #expect((three[15] as? [[Int]])?.map { $0.map { strings[$0] } } == [["modal", "true"], ["screen", "Export"]])
        #expect((try row(1)[15] as? [[Int]])?.map { $0.map { strings[$0] } } == [["screen", "Feed"]])
        let five = try row(5)
        #expect(five[14] as? Int == -1)
        #expect((five[15] as? [Any])?.isEmpty == true)
    }

    private func loadedFixtures() -> [LoadedTrace] {
        let path = directory.write("one.swtrace", Fixture.standard())
        return [try! TraceLoader.load(path: path).get()]
    }

    @Test func thePageReferencesNothingOutsideItself() {
        let html = RenderedPage([Fixture.standard(mode: .full, withCallouts: true)], in: directory).html.lowercased()
        for forbidden in [
            "src=", "href=", "@import", "url(", "http:", "https:", "file:", "//cdn", "<link", "<img", "<iframe",
            "<object", "<embed", "fetch(", "xmlhttprequest", "import(", "eval(", "innerhtml", "outerhtml",
            "insertadjacenthtml", "document.write",
        ] {
            #expect(!html.contains(forbidden), "the page contains \(forbidden)")
        }
        #expect(html.contains("content-security-policy\" content=\"default-src 'none';"))
    }

    @Test func hostileNamesStayText() throws {
        let page = RenderedPage([Fixture.hostile()], names: ["evil<b>.swtrace"], in: directory)
        // Nothing from the trace reaches the markup: no angle bracket or ampersand of a name
        // survives in the file, only their \u escapes in the data block.
        #expect(!page.html.contains("alert(1)</script>"))
        #expect(!page.html.contains("<img"))
        #expect(!page.html.contains("<b>"))
        #expect(!page.dataText.contains("<") && !page.dataText.contains(">") && !page.dataText.contains("&"))
        #expect(page.dataText.contains("\\u003cscript\\u003ealert(1)\\u003c/script\\u003e"))
        // …and decoding the data gives every name back exactly.
        let strings = Set(page.strings)
        for name in [Fixture.hostileSymbol, Fixture.hostileFrame, Fixture.hostileSite + ":1", Fixture.hostileLabel] {
            #expect(strings.contains(name), "\(name) missing from the page's strings")
        }
        #expect(page.stallIDs == [[1, 2, 3]])
    }

    @Test func theWriterEscapesWhatHTMLReads() {
        #expect(
            JSONOutput.htmlSafeString("a<b>&\"\\\n\u{2028}\u{1}")
                == "\"a\\u003cb\\u003e\\u0026\\\"\\\\\\n\\u2028\\u0001\"")
        #expect(JSONWriter.number(12.5) == "12.5")
        #expect(JSONWriter.number(3) == "3")
        #expect(JSONWriter.number(-0.0001) == "0")
        #expect(JSONWriter.number(.nan) == "0")
    }

    @Test func reportWritesThePageAndStillPrintsTheReport() throws {
        let path = directory.write("standard.swtrace", Fixture.standard())
        let file = directory.path + "/report.html"
        let run = CLIRun(["report", path, "--html", file])
        #expect(run.exitCode == 0)
        #expect(run.output.hasPrefix("Stallwatch report — 1 trace"))
        #expect(run.error.hasPrefix("wrote \(file) (html, 6 stalls, "))
        let html = try #require(directory.read("report.html"))
        #expect(html.hasPrefix("<!DOCTYPE html>"))
        #expect(html.hasSuffix("</html>\n"))

        let toStandardOutput = CLIRun(["report", path, "--html", "-"])
        #expect(toStandardOutput.exitCode == 0)
        #expect(toStandardOutput.output == html)
        #expect(toStandardOutput.error == "")

        let unwritable = CLIRun(["report", path, "--html", directory.path + "/no/such/dir/r.html"])
        #expect(unwritable.exitCode == 2)
        #expect(unwritable.error.contains("no/such/dir/r.html: cannot write (No such file or directory)"))
    }

    @Test func theTableListsEverySignatureWhateverTop() throws {
        let path = directory.write("standard.swtrace", Fixture.standard())
        let run = CLIRun(["report", path, "--top", "1", "--html", "-"])
        let page = try #require(run.output.range(of: "id=\"report-data\">"))
        let data =
            try JSONSerialization.jsonObject(
                with: Data(run.output[page.upperBound...].prefix { $0 != "<" }.utf8)) as! [String: Any]
        #expect((data["signatures"] as! [Any]).count == 4)
    }

    @Test(.disabled(if: Sanitizer.address || Sanitizer.thread, "measures size; a minute of analysis under a sanitizer"))
    func tenThousandStallsStayUnderAFewMegabytes() {
        let page = RenderedPage([Fixture.tenThousandStalls], in: directory)
        #expect(page.stallIDs[0].count == 10_000)
        let bytes = page.html.utf8.count
        #expect(bytes < 3_000_000, "\(bytes) bytes")
        print("html report of 10,000 stalls: \(bytes) bytes")
    }
}
