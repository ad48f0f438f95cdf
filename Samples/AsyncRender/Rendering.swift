// Drawing a row of the feed: a 256×256 RGBA bitmap, every pixel computed (an escape-time
// fractal standing in for text and vector drawing). The iteration count is calibrated at
// startup so that one row costs about 6 ms on this machine and in this build.
import SampleSupport
import StallwatchCore

/// One drawn row: its pixels and the model version they show. A plain value; any thread.
struct RowBitmap: Sendable {
    static let side = 256
    var version: Int
    var pixels: [UInt8]
    var checksum: UInt64 { fnv1a(pixels) }
}

/// Draws rows. Any thread.
struct RowRenderer: Sendable {
    /// Fractal iterations per pixel.
    let iterations: Int

    /// A renderer whose rows take about `target` each here: times a trial render (the
    /// fastest of 3, so a busy machine does not inflate it) and scales the iterations.
    static func calibrated(target: Duration = .milliseconds(6)) -> RowRenderer {
        let trial = RowRenderer(iterations: 16)
        var fastest = UInt64.max
        for row in 0..<3 {
            let watch = Stopwatch()
            _ = trial.draw(row: row, version: 0)
            fastest = min(fastest, max(1, watch.elapsedNanos))
        }
        let iterations = Double(trial.iterations) * Double(target.nanoseconds) / Double(fastest)
        return RowRenderer(iterations: min(4096, max(1, Int(iterations))))
    }

    /// Draws row `row` as of model `version` (its content depends on both).
    func draw(row: Int, version: Int) -> RowBitmap {
        let side = RowBitmap.side
        var pixels = [UInt8](repeating: 0, count: side * side * 4)
        pixels.withUnsafeMutableBufferPointer { buffer in
            // Raw pointers: their accessors are inlined even in a debug build.
            let base = buffer.baseAddress!
            let zoom = 2.5 / Double(side)
            let centerX = -0.75 + Double(row % 7) * 0.01
            let centerY = Double(version % 11) * 0.01
            for y in 0..<side {
                let line = base + y * side * 4
                let ci = centerY + (Double(y) - Double(side) / 2) * zoom
                for x in 0..<side {
                    let cr = centerX + (Double(x) - Double(side) / 2) * zoom
                    var zr = 0.0
                    var zi = 0.0
                    var n = 0
                    while n < iterations && zr * zr + zi * zi < 4 {
                        (zr, zi) = (zr * zr - zi * zi + cr, 2 * zr * zi + ci)
                        n += 1
                    }
                    let shade = UInt8(truncatingIfNeeded: n &* 255 / iterations)
                    let pixel = line + x * 4
                    pixel[0] = shade
                    pixel[1] = shade &+ UInt8(truncatingIfNeeded: row)
                    pixel[2] = 255 &- shade
                    pixel[3] = 255
                }
            }
        }
        return RowBitmap(version: version, pixels: pixels)
    }
}

/// A row on screen: what it shows now. Loop thread only.
final class RowView {
    let row: Int
    var contents: RowBitmap?
    init(row: Int) { self.row = row }
}

/// The feed's model updates: every 250 ms a burst of 8 requests (a socket delivering a batch of
/// messages), each touching 3 of the first 12 rows, so a burst touches most rows twice.
enum UpdateFeed {
    static let requestsPerBurst = 8
    static let rowsPerRequest = 3
    static let touchedRows = 12

    /// The rows request `request` of burst `burst` updates.
    static func rows(burst: Int, request: Int) -> [Int] {
        (0..<rowsPerRequest).map { (burst * 5 + request * 3 + $0 * 4) % touchedRows }
    }
}
