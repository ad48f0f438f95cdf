// The fixed screen: requests only mark rows dirty; a `Throttle` on the frame clock runs one
// pass per frame however many requests came; the pass renders each dirty row once on a
// `QueuePool`, and each finished bitmap is applied through `LoopTransactions` (one commit
// per row and transaction, the newest version winning), as an async display layer does.
import SampleSupport
import Stallwatch
import StallwatchRemedies

final class FixedScreen: Screen {
    private let rows: [RowView]
    private let loop: MainLoop
    private let throttle: Throttle
    private let transactions: LoopTransactions
    private let pool = QueuePool(label: "AsyncRender.draw")
    private var dirty = Set<Int>()
    private var versions: [Int]
    private var requests = 0
    private var renders = 0
    private var applied = 0
    private var appliedSinceFrame = 0

    /// Loop thread, once the frame clock exists.
    init(run: SampleRun, rows: [RowView]) {
        self.rows = rows
        loop = run.loop
        throttle = Throttle(frameClock: run.frameClock!)
        transactions = LoopTransactions(loop: run.loop)
        versions = Array(repeating: 0, count: rows.count)
    }

    func update(rows touched: [Int]) {
        requests += 1
        dirty.formUnion(touched)
        throttle.request { [unowned self] in renderDirtyRows() }
    }

    private func renderDirtyRows() {
        for row in dirty.sorted() {
            versions[row] += 1
            let version = versions[row]
            renders += 1
            pool.submit { [loop] in
                let bitmap = renderer.draw(row: row, version: version)
                loop.mainActor.post(label: "row drawn") { self.show(bitmap, row: row) }
            }
        }
        dirty.removeAll()
    }

    private func show(_ bitmap: RowBitmap, row: Int) {
        transactions.request(rows[row], "show bitmap") { [unowned self] view in
            guard bitmap.version > (view.contents?.version ?? 0) else { return }
            view.contents = bitmap
            applied += 1
            appliedSinceFrame += 1
        }
    }

    func frame() -> Int {
        defer { appliedSinceFrame = 0 }
        return appliedSinceFrame
    }

    var statistics: [(label: String, text: String)] {
        [
            ("updates", "\(requests) requests → \(throttle.executions) throttled passes"),
            (
                "drawing",
                "\(renders) rows drawn on \(pool.width) pool queues, \(applied) applied in \(transactions.commits) commits"
            ),
        ]
    }
}
