// A directory of its own for each test that writes files.
import Foundation

/// A temporary directory, removed with everything in it when the last reference goes.
package final class TemporaryDirectory: Sendable {
    package let path: String

    package init() {
        path = NSTemporaryDirectory() + "stallwatch-tests-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    package func write(_ name: String, _ bytes: [UInt8]) -> String {
        let file = path + "/" + name
        _ = FileManager.default.createFile(atPath: file, contents: Data(bytes))
        return file
    }

    package func read(_ name: String) -> String? {
        (try? String(contentsOfFile: path + "/" + name, encoding: .utf8))
    }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}
