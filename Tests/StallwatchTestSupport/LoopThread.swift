// What the loop, monitor and remedy tests share: a fresh loop on a thread of its own, a value
// box, a pipe, and polling until a condition holds.
import Foundation
import Stallwatch

/// Runs `body` on a fresh thread that owns a fresh `MainLoop` (the test runner's threads are
/// shared, and a loop blocks its thread), and returns its result.
package func onLoopThread<T: Sendable>(_ body: @escaping @Sendable (MainLoop) -> T) async -> T {
    // The body cannot throw, so neither can the shared runner.
    try! await onLoopThreadThrowing(body)
}

/// `onLoopThread` for bodies that throw.
package func onLoopThreadThrowing<T: Sendable>(_ body: @escaping @Sendable (MainLoop) throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            let loop = MainLoop()
            continuation.resume(with: Result { try body(loop) })
        }
        thread.stackSize = 8 << 20
        thread.start()
    }
}

/// A value the loop thread writes and the test reads after the loop has returned.
package final class Box<T>: @unchecked Sendable {
    package var value: T
    package init(_ value: T) { self.value = value }
}

/// A pipe whose ends close on deinit unless closed earlier.
package final class TestPipe: @unchecked Sendable {
    package let readFD: Int32
    package let writeFD: Int32
    private var closed: Set<Int32> = []

    package init() {
        var fds: [Int32] = [0, 0]
        precondition(pipe(&fds) == 0)
        readFD = fds[0]
        writeFD = fds[1]
    }

    package func write(_ text: String) {
        _ = text.withCString { Glibc.write(writeFD, $0, strlen($0)) }
    }

    package func read() -> String {
        var buffer = [UInt8](repeating: 0, count: 256)
        let n = Glibc.read(readFD, &buffer, buffer.count)
        return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
    }

    package func close(_ fd: Int32) {
        if closed.insert(fd).inserted { _ = Glibc.close(fd) }
    }

    deinit {
        close(readFD)
        close(writeFD)
    }
}

/// Polls `condition` until it holds or `timeout` passes; returns whether it held.
package func eventually(timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        usleep(1_000)
    }
    return condition()
}
