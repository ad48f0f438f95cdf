// /proc's syscall and stat lines are read by one parser each, which takes every form the kernel
// writes and rejects what is not one.
import Testing

@testable import Stallwatch

@Suite struct ProcTaskFilesTests {
    func syscallLine(_ text: String) -> SyscallLine? {
        Array(text.utf8).withUnsafeBytes { SyscallLine($0) }
    }

    @Test func aSyscallLineIsRunningOutsideOrInACall() throws {
        #expect(syscallLine("running\n")?.place == .running)
        #expect(syscallLine("running\n")?.stackPointer == nil)
        let outside = try #require(syscallLine("-1 0x7ffd1000 0x7f0012345678\n"))
        #expect(outside.place == .outside)
        #expect(outside.stackPointer == 0x7ffd_1000 && outside.programCounter == 0x7f00_1234_5678)
        let futex = try #require(
            syscallLine("202 0x7f00deadbeef 0x80 0x2 0x0 0x0 0x0 0x7ffd2000 0x7f00abcdef01\n"))
        #expect(futex.place == .inCall(202))
        #expect(futex.arguments == (0x7f00_dead_beef, 0x80))
        #expect(futex.stackPointer == 0x7ffd_2000 && futex.programCounter == 0x7f00_abcd_ef01)
    }

    @Test func whatIsNotASyscallLineIsNil() {
        for text in [
            "", "\n", "202 0x1 0x2\n", "-2 0x1 0x2\n", "-1 0x1\n", "x 0x1\n", "202 0x1 0x2 0x3 0x4 0x5 0x6 0x7 zz",
        ] {
            #expect(syscallLine(text) == nil, "\(text)")
        }
    }

    @Test func statFieldsCountFromTheLastParenthesis() {
        // A command name may hold spaces and parentheses.
        let text = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 7 0 3 0 11 12 0 0 20 0 1 0 987654 0 0\n"
        var seen: [Int: String] = [:]
        let complete = Array(text.utf8).withUnsafeBytes { bytes in
            ProcStat.fields(bytes, through: 22) { field, value in seen[field] = String(decoding: value, as: UTF8.self) }
        }
        #expect(complete)
        #expect(seen[3] == "S" && seen[10] == "7" && seen[12] == "3" && seen[14] == "11" && seen[15] == "12")
        #expect(seen[22] == "987654")
        let short = Array("1 (x) S 1 2\n".utf8).withUnsafeBytes { ProcStat.fields($0, through: 15) { _, _ in } }
        #expect(!short)
    }
}
