// Varints of every length decode to what was written, with and without eight bytes to spare
// after them (the decoder reads a word at a time when it can), and the encodings the encoder
// never writes are refused.
import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct TraceWireTests {
    static let values: [UInt64] = {
        var values: [UInt64] = [0, 1, 0x7F, UInt64.max, UInt64.max - 1, 1 << 63]
        for shift in stride(from: 7, through: 63, by: 7) {
            values += [(1 << UInt64(shift)) - 1, 1 << UInt64(shift), (1 << UInt64(shift)) + 1]
        }
        return values + [0x1234_5678_9ABC, 0x0102_0304_0506_0708]
    }()

    func encoded(_ value: UInt64) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: 16)
        let count = bytes.withUnsafeMutableBytes { buffer -> Int in
            var writer = TraceByteWriter(buffer)
            writer.varint(value)
            return writer.position
        }
        return Array(bytes[..<count])
    }

    func decoded(_ bytes: [UInt8], spare: Int) throws(TraceFieldError) -> (UInt64, Int) {
        let padded = bytes + [UInt8](repeating: 0xFF, count: spare)
        let result = padded.withUnsafeBytes { buffer -> Result<(UInt64, Int), TraceFieldError> in
            var reader = TraceByteReader(base: buffer.baseAddress!, position: 0, end: padded.count)
            do throws(TraceFieldError) {
                let value = try reader.varint("value")
                return .success((value, reader.position))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    @Test(arguments: [0, 3, 8])
    func everyLengthRoundTrips(spare: Int) throws {
        for value in Self.values {
            let bytes = encoded(value)
            let (read, position) = try decoded(bytes, spare: spare)
            #expect(read == value, "\(value) with \(spare) bytes after it")
            #expect(position == bytes.count)
        }
    }

    @Test(arguments: [0, 8])
    func longerEncodingsThanNeededAreRefused(spare: Int) {
        // 1 as two bytes, 0x80 as three, and a tenth byte above the top bit.
        for bytes: [UInt8] in [
            [0x81, 0x00], [0x80, 0x81, 0x00], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02],
        ] {
            #expect(throws: TraceFieldError.self) { try decoded(bytes, spare: spare) }
        }
    }

    @Test func aVarintRunningPastTheEndIsRefused() {
        #expect(throws: TraceFieldError.self) { try decoded([0x80, 0x80], spare: 0) }
    }
}
