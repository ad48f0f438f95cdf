// Asynchronous drawing, as UI toolkits' async layers do it: a feed of 24 rows, each a 256×256 RGBA bitmap whose every
// pixel is computed (~6 ms a row), redrawn as model updates arrive, 8 requests in a burst
// every 250 ms.
//   blocking   each update request redraws its rows on the loop, in the next frame tick
//   --fixed    a `Throttle` on the frame clock turns a frame's requests into one pass; the
//              dirty rows render on a `QueuePool` (off the loop) and their bitmaps reach the
//              screen through `LoopTransactions`, one commit per row however many renders
//
//   swift run AsyncRender [--fixed] [--seconds S]
//   stallwatch record -o render.swtrace -- .build/debug/AsyncRender --fixed
import SampleSupport
import Stallwatch
import StallwatchRemedies

let run = SampleRun(name: "AsyncRender")
let renderer = RowRenderer.calibrated()
let rows = (0..<24).map { RowView(row: $0) }

run.run { run in
    // The fixed screen's throttle needs the frame clock, which exists once the run has begun.
    let screen: any Screen = run.options.fixed ? FixedScreen(run: run, rows: rows) : BlockingScreen(rows: rows)
    run.onFrame = { _ in screen.frame() }
    run.onFinish = {
        run.note("bitmaps", "256×256 RGBA, \(renderer.iterations) fractal iterations a pixel")
        for line in screen.statistics { run.note(line.label, line.text) }
        let shown = rows.reduce(UInt64(0)) { $0 &+ ($1.contents?.checksum ?? 0) }
        run.note("screen", "\(rows.filter { $0.contents != nil }.count) rows drawn, checksum \(shown % 100_000)")
    }
    var burst = 0
    run.loop.schedule(after: .milliseconds(100), repeating: .milliseconds(250), label: "feed burst") { _ in
        for request in 0..<UpdateFeed.requestsPerBurst {
            let touched = UpdateFeed.rows(burst: burst, request: request)
            run.loop.mainActor.post(label: "row update") { screen.update(rows: touched) }
        }
        burst += 1
    }
}
