import StallwatchCore

/// The page of `stallwatch report --html FILE`: one self-contained HTML file (no network, no
/// outside scripts, fonts or images) with the report's figures, a zoomable timeline (one lane
/// per trace: frames delivered and dropped, loop busy time, every stall coloured by category
/// and sized by tier), a flame graph of every sample with search, a sortable signature table
/// and the list of stalls.
///
/// ```swift
/// let builder = ReportBuilder()
/// let analyzed = builder.analyze(traces)
/// let report = builder.report(traces, analyzed: analyzed, top: .max)
/// try HTMLReport.render(report, traces: traces, analyzed: analyzed).write(…)
/// ```
///
/// Every name from a trace is data, never markup: the page keeps it in a
/// `<script type="application/json">` block with `<`, `>` and `&` escaped, and its script
/// builds the document with `textContent` only. A Content-Security-Policy forbids loading
/// anything. The file is also well-formed XML (scripts and styles in CDATA sections), which
/// the tests check with an XML parser.
///
/// Pure; use it on any thread.
package enum HTMLReport {
    /// The page for `report`, built from `traces` and their stalls as `analyze(_:)` classified
    /// them (`analyzed[i]` belongs to `traces[i]`). The signature table lists
    /// `report.signatures` (build the report with `top: .max` for every signature); traces
    /// loaded with `includeCallouts` also show the loop's busy time.
    package static func render(_ report: StallReport, traces: [LoadedTrace], analyzed: [[AnalyzedStall]]) -> String {
        var page = ""
        write(report, traces: traces, analyzed: analyzed, to: &page)
        return page
    }

    /// `render(_:traces:analyzed:)` written to `out` piece by piece.
    package static func write(
        _ report: StallReport, traces: [LoadedTrace], analyzed: [[AnalyzedStall]], to out: inout some TextOutputStream
    ) {
        out.write(HTMLPage.head)
        out.write("<style>/*<![CDATA[*/\n" + HTMLPage.style + "/*]]>*/</style>\n</head>\n")
        out.write(HTMLPage.body)
        out.write("<script type=\"application/json\" id=\"report-data\">")
        out.write(HTMLReportData.json(report, traces: traces, analyzed: analyzed))
        out.write("</script>\n")
        out.write("<script>/*<![CDATA[*/\n" + HTMLPage.errorHandler + "/*]]>*/</script>\n")
        out.write("<script>/*<![CDATA[*/\n")
        for part in HTMLPage.scriptParts { out.write(part) }
        out.write("/*]]>*/</script>\n</body>\n</html>\n")
    }
}

/// The fixed parts of the page; none of them holds data.
enum HTMLPage {
    static let head = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8"/>
        <meta http-equiv="Content-Security-Policy" \
        content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'"/>
        <meta name="viewport" content="width=device-width, initial-scale=1"/>
        <meta name="generator" content="stallwatch report --html"/>
        <title>Stallwatch report</title>

        """

    static let body = """
        <body>
        <header>
        <h1 id="title">Stallwatch report</h1>
        <div id="traces" class="traces"></div>
        <div id="figures" class="figures"></div>
        <div id="counts" class="counts"></div>
        <div id="filters" class="toolbar filters" hidden="hidden"></div>
        </header>
        <pre id="errors" class="errors" hidden="hidden"></pre>
        <main>
        <section id="timeline-section">
        <h2>Timeline</h2>
        <div class="toolbar">
        <button type="button" id="zoom-in" title="Zoom in (or the mouse wheel)">+</button>
        <button type="button" id="zoom-out" title="Zoom out">&#8722;</button>
        <button type="button" id="zoom-reset" title="The whole run (or double-click)">Whole run</button>
        <span id="view-range" class="hint"></span>
        <span class="hint">wheel: zoom · drag: pan · shift-drag: zoom to a range · click: select</span>
        </div>
        <div class="canvas-box"><canvas id="timeline"></canvas></div>
        <div id="legend" class="legend"></div>
        </section>
        <section id="details-section">
        <h2>Selected stall</h2>
        <div id="details" class="details"><p class="hint">Click a stall in the timeline or a table.</p></div>
        </section>
        <section id="flame-section">
        <h2>Flame graph of every stall sample</h2>
        <div class="toolbar">
        <input type="search" id="flame-search" placeholder="Search frames" aria-label="Search frames"/>
        <span id="flame-match" class="hint"></span>
        <button type="button" id="flame-reset">Reset zoom</button>
        <span class="hint">click a frame to zoom into it</span>
        </div>
        <div class="canvas-box"><canvas id="flame"></canvas></div>
        </section>
        <section id="signatures-section">
        <h2 id="signatures-title">Signatures</h2>
        <table id="signatures" class="data"><thead></thead><tbody></tbody></table>
        <div id="signatures-more" class="more"></div>
        </section>
        <section id="stalls-section">
        <h2 id="stalls-title">Stalls</h2>
        <table id="stalls" class="data"><thead></thead><tbody></tbody></table>
        <div id="stalls-more" class="more"></div>
        </section>
        </main>
        <div id="tooltip" class="tooltip" hidden="hidden"></div>

        """

    /// The page's style sheet (Render/Page/report.css): system fonts only, no `url(…)`, no
    /// `@import`.
    static let style = EmbeddedFiles.reportCSS

    /// Installed first, in a script of its own, so that even a syntax error in the main script
    /// shows in the page (and the tests, which read the DOM, see it): Render/Page/errors.js.
    static let errorHandler = EmbeddedFiles.errorsJS

    /// The main script, in the order its parts run in one `<script>` (they share its scope):
    /// the data, helpers, timeline and selected-stall panel (report.js); the flame graph
    /// (flame.js); the signature and stall tables and the filters (tables.js); the `#stall=`
    /// address, the `#selftest` run and the ready mark (start.js). Names from the trace only
    /// ever reach the document through `textContent`.
    static let scriptParts = [
        EmbeddedFiles.reportJS, EmbeddedFiles.flameJS, EmbeddedFiles.tablesJS, EmbeddedFiles.startJS,
    ]
}
