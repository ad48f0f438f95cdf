// The progress bar stays hidden for short reads and, once shown, is erased when reading ends.
import Foundation
import Testing

@testable import stallwatch

@Test func hiddenWhenReadingEndsBeforeTheDelay() async throws {
    let sink = BufferSink()
    let bar = ProgressBar(sink: sink, total: 100, delay: 0.5)
    bar.advance(by: 100)
    bar.finish()
    try await Task.sleep(for: .milliseconds(700))
    #expect(sink.text.isEmpty)
}

@Test func drawnAfterTheDelayThenErased() async throws {
    let sink = BufferSink()
    let bar = ProgressBar(sink: sink, total: 200, label: "reading", delay: 0)
    bar.advance(by: 100)
    // Poll rather than sleep a fixed time: the machine may be busy. Until the 50 % frame: with
    // no delay the bar may first draw before the advance is counted (0 %).
    for _ in 0..<100 where !sink.text.contains("50%") { try await Task.sleep(for: .milliseconds(50)) }
    bar.finish()
    #expect(sink.text.contains("\rreading [###############...............] 50%"))
    #expect(sink.text.hasSuffix("\r\u{1B}[2K"))
}
