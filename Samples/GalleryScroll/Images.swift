// The gallery's images: real files written at startup, and a decoder that reads one and turns
// it into a thumbnail with real per-pixel work, bounded by time so a decode costs ≥ 25 ms on a
// fast machine too (as a JPEG decode of a large photo would).
import Foundation
import SampleSupport

/// A decoded image as a cell shows it: a 64×64 RGBA thumbnail. A plain value; any thread.
struct Thumbnail: Sendable {
    static let side = 64
    var pixels: [UInt8]
    var checksum: UInt64

    /// The thumbnail as bytes for the disk cache: the checksum, then the pixels.
    var encoded: [UInt8] { withUnsafeBytes(of: checksum.littleEndian) { Array($0) } + pixels }

    /// Reads `encoded` back.
    init(encoded bytes: [UInt8]) throws {
        guard bytes.count == 8 + Self.side * Self.side * 4 else { throw CocoaError(.fileReadCorruptFile) }
        checksum = bytes[0..<8].withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        pixels = Array(bytes[8...])
    }

    init(pixels: [UInt8], checksum: UInt64) {
        self.pixels = pixels
        self.checksum = checksum
    }
}

/// The photo files: `fileCount` distinct 512×512 RGBA images (1 MiB each, smooth gradients
/// that compress well, like photos) in a temporary directory; row `i` of the gallery shows
/// file `i % fileCount`, so 300 rows need 60 MiB of disk, not 300. Any thread.
struct PhotoFiles: Sendable {
    static let side = 512
    let directory: String
    let fileCount: Int

    /// Writes the files (before the loop runs).
    init(directory: String, fileCount: Int = 60) {
        self.directory = directory
        self.fileCount = fileCount
        var pixels = [UInt32](repeating: 0, count: Self.side * Self.side)
        for file in 0..<fileCount {
            pixels.withUnsafeMutableBufferPointer { buffer in
                // Raw pointers: their accessors are inlined even in a debug build.
                let pixel = buffer.baseAddress!
                let tint = UInt32(truncatingIfNeeded: file &* 2_654_435_761)
                for y in 0..<Self.side {
                    let base = UInt32(y) &* 0x0001_0100 ^ tint
                    let row = pixel + y * Self.side
                    for x in 0..<Self.side { row[x] = base &+ UInt32(x) &* 0x0100_0001 }
                }
            }
            let data = pixels.withUnsafeBytes { Data($0) }
            precondition(FileManager.default.createFile(atPath: path(forFile: file), contents: data))
        }
    }

    func path(forFile file: Int) -> String { "\(directory)/photo-\(file).rgba" }

    /// The cache key of gallery item `index`.
    static func key(_ index: Int) -> String { "cat-\(index)" }

    /// Decodes gallery item `key`: reads its file, converts every pixel and box-filters the
    /// image down to a thumbnail, in passes until `minimum` has passed (at least one pass).
    func decode(_ key: String, minimum: Duration = .milliseconds(25)) throws -> Thumbnail {
        let watch = Stopwatch()
        guard let index = Int(key.dropFirst(4)) else { throw CocoaError(.fileNoSuchFile) }
        let data = try Data(contentsOf: URL(fileURLWithPath: path(forFile: index % fileCount)))
        let side = Self.side
        let scale = side / Thumbnail.side
        var sums = [UInt32](repeating: 0, count: Thumbnail.side * Thumbnail.side * 4)
        var checksum = UInt64(index)
        var pass = 0
        repeat {
            sums.withUnsafeMutableBufferPointer { sums in
                data.withUnsafeBytes { raw in
                    // A colour transform per pixel (the item's own tint and this pass's gamma
                    // step), accumulated into the thumbnail's box of scale × scale pixels.
                    let source = raw.baseAddress!.assumingMemoryBound(to: UInt32.self)
                    let sum = sums.baseAddress!
                    let shift = UInt32(truncatingIfNeeded: (index + pass) % 8)
                    for y in 0..<side {
                        let row = source + y * side
                        let cells = sum + (y / scale) * Thumbnail.side * 4
                        for x in 0..<side {
                            let mixed = (row[x] >> shift | row[x] << (32 - shift)) ^ 0x9e37_79b9
                            let cell = cells + (x / scale) * 4
                            cell[0] &+= mixed & 0xff
                            cell[1] &+= (mixed >> 8) & 0xff
                            cell[2] &+= (mixed >> 16) & 0xff
                            cell[3] &+= mixed >> 24
                        }
                    }
                }
            }
            pass += 1
        } while !watch.hasElapsed(minimum)
        let pixels = sums.map { UInt8(truncatingIfNeeded: $0 / UInt32(scale * scale * pass)) }
        checksum = fnv1a(pixels, seed: checksum)
        return Thumbnail(pixels: pixels, checksum: checksum)
    }
}

/// Where the user's finger is: a 3-column grid of `rows` rows, 4 rows on screen, scrolled at
/// 7.5 rows per second (a new row of 3 images every 8 frames) for 96 frames, then 3 rows back
/// up in 24 frames, bouncing at the ends. Driven by the frame's grid index, so a busy loop
/// does not slow the finger: it only skips frames.
struct ScrollPath {
    static let columns = 3
    static let visibleRows = 4
    static let framesPerRow = 8
    let rows: Int

    /// The first visible row at frame `frame`.
    func topRow(atFrame frame: UInt64) -> Int {
        let cycle = Int(frame / 120)
        let phase = Int(frame % 120)
        // In frames' worth of scrolling: 96 down, then 24 back up, 72 on per cycle.
        let steps = cycle * 72 + (phase < 96 ? phase : 96 - (phase - 96))
        let span = max(1, (rows - Self.visibleRows) * Self.framesPerRow)
        let bounced = steps % (2 * span)
        return (bounced < span ? bounced : 2 * span - bounced) / Self.framesPerRow
    }

    /// The gallery items on screen at frame `frame`.
    func visibleItems(atFrame frame: UInt64) -> Range<Int> {
        let top = topRow(atFrame: frame)
        return top * Self.columns..<(top + Self.visibleRows) * Self.columns
    }
}
