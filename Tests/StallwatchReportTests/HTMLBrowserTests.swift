// The HTML report in a real browser: headless Chromium loads the page of a recorded demo
// trace (at least its five stalls), of hostile names and of ten thousand stalls; the page's
// script runs without a console message or error, its self-test drives every control, and the
// DOM holds every stall.
import Foundation
import StallwatchCore
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite(
    .serialized,
    .disabled(
        if: Sanitizer.address || Sanitizer.thread,
        "checks the page in Chromium, not memory; the sanitizers' slowness adds nothing here"),
    .enabled(
        if: Chromium.path != nil,
        "chromium is not installed: scripts/install-deps.sh installs Debian's chromium package"))
struct HTMLBrowserTests {
    let directory = TemporaryDirectory()

    /// Loads `page` with the self-test and checks that the script ran to its end cleanly.
    func loadChecked(_ page: RenderedPage, name: String) throws -> Chromium.Load {
        let file = directory.path + "/" + name
        try page.html.write(toFile: file, atomically: true, encoding: .utf8)
        let load = try Chromium.load(file, fragment: "selftest")
        #expect(load.console.isEmpty, "console: \(load.console)")
        #expect(load.attribute("data-ready") == "true", "the page's script did not finish")
        #expect(load.attribute("data-errors") == nil)
        #expect(load.attribute("data-selftest") == "passed")
        #expect(load.dom.contains("<pre id=\"errors\" class=\"errors\" hidden=\"hidden\"></pre>"))
        return load
    }

    /// Every stall has its row in the stall table, and every signature its row.
    func expectEveryStall(_ load: Chromium.Load, of page: RenderedPage) {
        for (trace, ids) in page.stallIDs.enumerated() {
            for id in ids {
                #expect(load.dom.contains("<tr class=\"row"), "no rows")
                #expect(
                    load.count("data-stall=\"\(trace):\(id)\"><td") == 1, "the row of stall \(id) of trace \(trace)")
            }
        }
        for index in page.report.signatures.indices {
            #expect(load.count("data-signature=\"\(index)\"") == 1, "the row of signature \(index)")
        }
        #expect(load.count("<tr class=\"row") == page.stallIDs.joined().count + page.report.signatures.count)
    }

    @Test func theDemoTracesReportRendersWithEveryStall() throws {
        // A real recording: the demo sample in full mode, as scripts/demo.sh runs it.
        let trace = directory.path + "/demo.swtrace"
        let demo = try ChildRun(
            BinaryRun.productDirectory + "/Demo", [],
            environment: ProcessInfo.processInfo.environment.merging([
                "STALLWATCH_TRACE": trace, "STALLWATCH_MODE": "full",
            ]) { $1 })
        #expect(demo.exitCode == 0, "\(demo)")
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: trace)))
        let page = RenderedPage([bytes], in: directory)
        // Once in each of the five categories (RemedySamplesTests checks which); more if the
        // machine hitched.
        #expect(page.stallIDs[0].count >= 5, "\(page.stallIDs[0].count) stalls\n\(demo.output)")
        let load = try loadChecked(page, name: "demo.html")
        expectEveryStall(load, of: page)
        for signature in page.report.signatures {
            #expect(load.dom.contains(escapedText(signature.frames.joined(separator: " ← "))))
        }
        // The header's figures.
        #expect(load.dom.contains(">loop utilisation<"))
        #expect(load.dom.contains(">frames per second<"))
        #expect(load.dom.contains(">hang rate<"))
        // The self-test expanded the first signature: what its fix would buy.
        #expect(load.dom.contains("<div class=\"if-fixed\">if fixed: hitch ratio "))
        // And the PNG a person would look at.
        let png = directory.path + "/demo.png"
        try Chromium.screenshot(directory.path + "/demo.html", fragment: "stall=longest", to: png)
        let image = [UInt8](try Data(contentsOf: URL(fileURLWithPath: png)))
        #expect(image.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
        #expect(image.count > 20_000)
    }

    @Test func severalTracesGetALaneEachAndOneTable() throws {
        // The third has no stall at all: an empty lane.
        let page = RenderedPage(
            [
                Fixture.standard(), Fixture.standard(mode: .full, withCallouts: true),
                Fixture.hitches(count: 0, duration: 0),
            ],
            in: directory)
        let load = try loadChecked(page, name: "three.html")
        expectEveryStall(load, of: page)
        #expect(load.dom.contains("Stallwatch report — 3 traces"))
        #expect(load.dom.contains(">Stalls (12)<"))
        // No stall has app state or is expected: no filter.
        #expect(load.dom.contains("<div id=\"filters\" class=\"toolbar filters\" hidden=\"hidden\"></div>"))
        #expect(!load.dom.contains("<select"))
    }

    @Test func theAppStateAndExpectedFiltersShowOnlyTheirStalls() throws {
        // Stalls 1 and 4 at screen=Feed, 2 at Settings, 3 expected at Export; 5 and 6 without.
        let page = RenderedPage([Fixture.standard(appState: true)], in: directory)
        // The self-test chose each filter and checked the table's rows and the timeline's hits.
        let load = try loadChecked(page, name: "state.html")
        #expect(load.attribute("data-selftest-steps")?.contains("filters ") == true)
        expectEveryStall(load, of: page)
        #expect(load.dom.contains("<div id=\"filters\" class=\"toolbar filters\">"))
        let options = [
            "in any app state", "modal=true (1)", "screen=Export (1)", "screen=Feed (2)", "screen=Settings (1)",
            "expected or not", "not expected (5)", "expected only (1)",
        ]
        for option in options { #expect(load.dom.contains(">\(option)</option>"), "\(option)") }
        // The selected stall shows its state and its reason.
        let file = directory.path + "/state.html"
        let selected = try Chromium.load(file, fragment: "stall=0:3")
        #expect(selected.dom.contains("<dt>app state</dt><dd>modal=true, screen=Export</dd>"))
        #expect(selected.dom.contains("<dt>expected</dt><dd>export.pdf (long on purpose; not counted)</dd>"))

        // Opened with a filter in the address: the table has the rows of its stalls only.
        func rows(_ fragment: String) throws -> (ids: [Int], dom: String) {
            let load = try Chromium.load(file, fragment: fragment)
            #expect(load.attribute("data-ready") == "true")
            #expect(load.console.isEmpty, "console: \(load.console)")
            return ((1...6).filter { load.count("data-stall=\"0:\($0)\"><td") == 1 }, load.dom)
        }
        let feed = try rows("state=screen%3DFeed")
        #expect(feed.ids == [1, 4])
        #expect(feed.dom.contains(">Stalls (2 of 6)<"))
        #expect(feed.dom.contains(">2 of 6 stalls shown<"))
        #expect(try rows("state=screen=Settings").ids == [2])
        #expect(try rows("expected=only").ids == [3])
        #expect(try rows("expected=no").ids == [1, 2, 4, 5, 6])
        #expect(try rows("state=screen%3DFeed&expected=only").ids == [])
        #expect(try rows("state=modal%3Dtrue&expected=only").ids == [3])
        // A value no stall has leaves the page unfiltered.
        let none = try rows("state=screen%3DNowhere")
        #expect(none.ids == [1, 2, 3, 4, 5, 6])
        #expect(none.dom.contains(">Stalls (6)<"))
        // A malformed escape raised URIError and the page never got ready: it is no filter.
        #expect(try rows("state=%E0%A4%A").ids == [1, 2, 3, 4, 5, 6])
    }

    @Test func hostileNamesAreShownAsText() throws {
        let page = RenderedPage([Fixture.hostile()], names: ["evil<b>.swtrace"], in: directory)
        let load = try loadChecked(page, name: "hostile.html")
        #expect(load.attribute("data-pwned") == nil, "a name from the trace ran as script")
        #expect(load.count("<script") == 3)
        #expect(!load.dom.contains("<img"))
        #expect(!load.dom.contains("<b>"))
        // Shown, as text, where a person looks: the tables and the selected stall.
        #expect(load.dom.contains(escapedText(Fixture.hostileSite + ":1")))
        #expect(load.dom.contains(escapedText("<b>Evil</b>")))
        #expect(load.dom.contains(escapedText(Fixture.hostileSymbol)))
        expectEveryStall(load, of: page)
    }

    @Test func tenThousandStallsLoadAndStayResponsive() throws {
        let page = RenderedPage([Fixture.tenThousandStalls], in: directory)
        let load = try loadChecked(page, name: "many.html")
        // Rows come a page at a time (200, then 1,000 more per click; the self-test clicks once).
        #expect(load.count("<tr class=\"row") == 1_200 + page.report.signatures.count)
        #expect(load.dom.contains("Show more (8800 not shown)"))
        let ready = try #require(load.readyMs)
        print(
            "html report of 10,000 stalls: \(page.html.utf8.count) bytes, ready \(ready) ms after navigation "
                + "(script \(load.scriptMs ?? -1) ms, with the self-test: \(load.attribute("data-selftest-steps") ?? ""), chromium ran \(load.seconds) s"
        )
        #expect(ready < 30_000, "generous: a loaded 2-core machine")
        let plain = try Chromium.load(directory.path + "/many.html")
        #expect(plain.attribute("data-ready") == "true")
        print("  without the self-test: ready \(plain.readyMs ?? -1) ms (script \(plain.scriptMs ?? -1) ms)")
    }

    @Test func aScriptErrorIsSeen() throws {
        // The check above must be able to fail: a page whose data cannot be parsed shows the
        // error in the page and never marks itself ready.
        let page = RenderedPage([Fixture.standard()], in: directory)
        let broken = page.html.replacingOccurrences(of: page.dataText, with: "{not json")
        let file = directory.path + "/broken.html"
        try broken.write(toFile: file, atomically: true, encoding: .utf8)
        let load = try Chromium.load(file, fragment: "selftest")
        #expect(load.attribute("data-ready") == nil)
        #expect(load.attribute("data-errors") == "true")
        #expect(load.console.contains { $0.contains("Uncaught") }, "console: \(load.console)")
        #expect(load.dom.contains("<pre id=\"errors\" class=\"errors\">error: "))
    }

    /// `text` as Chromium serializes a text node (`&`, `<`, `>` escaped; quotes kept).
    func escapedText(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
    }
}
