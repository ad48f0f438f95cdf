/// Where the processes of one recording write: the recorded root process writes the trace `T`
/// itself; every other process of its tree writes `T.d/NAME-PID.swtrace` (NAME its short
/// program name, sanitized). Readers take `T` as `T` plus the traces in `T.d`. The one owner of
/// these names, for the recorder and the readers alike. Pure; any thread.
package enum ProcessTreeFiles {
    /// The file name ending of a trace (what a directory is searched for).
    package static let traceExtension = ".swtrace"

    /// The directory of the other processes' traces of the recording whose root writes `trace`.
    package static func childDirectory(of trace: String) -> String { trace + ".d" }

    /// The longest program name kept in a child's file name.
    static let longestName = 48

    /// `NAME-PID.swtrace` (then `NAME-PID-2.swtrace`… for `attempt` 1, 2…, when a pid came
    /// round again within the recording): `program` with every byte but letters, digits, `.`,
    /// `_`, `+` and `-` made `_`, at most 48 bytes, and never empty or hidden.
    package static func childFileName(program: String, pid: Int32, attempt: Int = 0) -> String {
        var name = String(
            decoding: program.utf8.prefix(longestName).map { byte -> UInt8 in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "+"),
                    UInt8(ascii: "-"):
                    byte
                default: UInt8(ascii: "_")
                }
            }, as: UTF8.self)
        if name.isEmpty { name = "process" }
        if name.hasPrefix(".") { name = "_" + name.dropFirst() }
        return name + "-\(pid)" + (attempt == 0 ? "" : "-\(attempt + 1)") + traceExtension
    }
}
