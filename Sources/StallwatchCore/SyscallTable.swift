/// The x86_64 Linux system call numbers, as `/proc/<pid>/task/<tid>/syscall` reports them.
///
/// The table is generated from the kernel headers (see `SyscallTable+Names.swift`), so the
/// numbers are exact for x86_64; other architectures number their syscalls differently.
/// All members are pure and may be called from any thread.
public enum SyscallTable {
    /// The architecture whose numbering this is (`uname -m` spelling), as a trace's `platform`
    /// record names it.
    public static let architecture = "x86_64"

    /// The name of syscall `number` (e.g. 74 → `"fsync"`), or `nil` if the number is
    /// negative or unassigned.
    public static func name(for number: Int32) -> String? {
        guard number >= 0, Int(number) < names.count else { return nil }
        let name = names[Int(number)]
        return name.isEmpty ? nil : name
    }

    /// The number of the syscall called `name` (e.g. `"futex"` → 202), or `nil` if x86_64
    /// has no syscall of that name.
    public static func number(for name: String) -> Int32? {
        numbersByName[name]
    }

    /// The highest syscall number the table knows.
    package static var highestNumber: Int32 { Int32(names.count - 1) }

    private static let numbersByName: [String: Int32] = {
        var result: [String: Int32] = [:]
        for (number, name) in names.enumerated() where !name.isEmpty {
            result[name] = Int32(number)
        }
        return result
    }()
}
