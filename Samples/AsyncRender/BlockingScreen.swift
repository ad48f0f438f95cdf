// The blocking screen: every update request redraws its rows on the loop at the next frame,
// one request after another (a reload per request), so a burst redraws rows twice or more.
import SampleSupport
import Stallwatch

/// A screen that takes update requests and draws on frame ticks. Main actor (the main loop).
@MainActor protocol Screen {
    func update(rows: [Int])
    /// Draws what the frame needs; returns the rows drawn.
    func frame() -> Int
    /// Result lines for the summary.
    var statistics: [(label: String, text: String)] { get }
}

final class BlockingScreen: Screen {
    private let rows: [RowView]
    private var pending: [[Int]] = []
    private var requests = 0
    private var renders = 0
    private var version = 0

    init(rows: [RowView]) { self.rows = rows }

    func update(rows touched: [Int]) {
        requests += 1
        pending.append(touched)
    }

    func frame() -> Int {
        let batch = pending
        pending = []
        for touched in batch {
            version += 1
            for row in touched { rows[row].contents = renderer.draw(row: row, version: version) }
            renders += touched.count
        }
        return batch.reduce(0) { $0 + $1.count }
    }

    var statistics: [(label: String, text: String)] {
        [("updates", "\(requests) requests, each redrawn"), ("drawing", "\(renders) rows drawn on the loop")]
    }
}
