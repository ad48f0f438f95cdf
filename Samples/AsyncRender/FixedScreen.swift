// Placeholder until QueuePool lands on main.
import SampleSupport

final class FixedScreen: Screen, @unchecked Sendable {
    init(run: SampleRun, rows: [RowView]) {}
    func update(rows: [Int]) {}
    func frame() -> Int { 0 }
    var statistics: String { "" }
}
