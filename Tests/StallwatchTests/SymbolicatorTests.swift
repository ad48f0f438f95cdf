// The symbolicator names every frame it can (demangled, with file:line where DWARF exists) and
// returns nil fields, never crashes, for addresses outside every image.
import Glibc
import Testing

@testable import Stallwatch

private typealias BacktraceFunction =
    @convention(c) (UnsafeMutablePointer<UnsafeMutableRawPointer?>?, Int32) -> Int32

/// Return addresses from backtrace(3), whose first entry is a return address into this function.
/// libc's own backtrace: under ASan the global `backtrace` is the sanitizer's interceptor,
/// which would add its own frame first.
@inline(never)
private func captureReturnAddresses() -> (addresses: [UInt64], line: UInt32) {
    let libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD)
    let backtrace = unsafeBitCast(dlsym(libc, "backtrace")!, to: BacktraceFunction.self)
    var buffer = [UnsafeMutableRawPointer?](repeating: nil, count: 32)
    let count = backtrace(&buffer, 32)
    let line = UInt32(#line) - 1
    return (buffer.prefix(Int(count)).map { UInt64(UInt(bitPattern: $0)) }, line)
}

private func address(of symbol: String, in library: String? = nil) -> UInt64 {
    let handle = library.flatMap { dlopen($0, RTLD_NOW) }
    return UInt64(UInt(bitPattern: dlsym(handle, symbol)))
}

@Suite struct SymbolicatorTests {
    let symbolicator = Symbolicator()

    @Test func namesAFunctionOfThisExecutableWithFileAndLine() throws {
        let (addresses, line) = captureReturnAddresses()
        let frame = try #require(symbolicator.symbolicate(addresses, firstIsReturnAddress: true).first)
        // A private function demangles as "StallwatchTests.(captureReturnAddresses in _<hash>)() -> …".
        #expect(frame.symbol?.contains("captureReturnAddresses") == true)
        #expect(frame.file?.hasSuffix("SymbolicatorTests.swift") == true)
        #expect(frame.line == line)
        #expect(frame.address == addresses[0])
    }

    @Test func namesLibcAndSwiftRuntimeFunctions() {
        // From libc's own table: under TSan the global `usleep` is the sanitizer's interceptor.
        let frames = [address(of: "usleep", in: "libc.so.6"), address(of: "swift_retain")].map {
            symbolicator.symbolicate([$0])[0]
        }
        #expect(frames[0].symbol == "usleep")
        #expect(frames[0].module?.contains("libc.so") == true)
        #expect(frames[1].symbol == "swift_retain")
        #expect(frames[1].module?.contains("libswiftCore") == true)
    }

    @Test func picksUpALibraryLoadedAfterStartUp() throws {
        let step = address(of: "sqlite3_step", in: "libsqlite3.so.0")
        try #require(step != 0)
        let frame = symbolicator.symbolicate([step])[0]
        #expect(frame.symbol == "sqlite3_step")
        #expect(frame.module?.contains("libsqlite3") == true)
        #expect(symbolicator.module(containing: step)?.buildID?.count == 40)
    }

    @Test func unknownAddressesComeBackEmpty() {
        for frame in symbolicator.symbolicate([0x10, 0xdead_beef_000, 0]) {
            #expect(frame.symbol == nil && frame.module == nil && frame.file == nil && frame.line == nil)
        }
    }

    @Test func repeatedStacksComeFromTheCache() {
        let (addresses, _) = captureReturnAddresses()
        let first = symbolicator.symbolicate(addresses, firstIsReturnAddress: true)
        #expect(symbolicator.symbolicate(addresses, firstIsReturnAddress: true) == first)
        symbolicator.removeCachedResults()
        #expect(symbolicator.symbolicate(addresses, firstIsReturnAddress: true) == first)
    }

    @Test func moduleMapListsTheExecutableAndLibc() {
        let modules = symbolicator.modules()
        #expect(modules.contains { $0.isMainExecutable && $0.buildID != nil && $0.isFile })
        #expect(modules.contains { $0.path.hasSuffix("/libc.so.6") && $0.base != 0 })
        #expect(zip(modules, modules.dropFirst()).allSatisfy { $0.start < $1.start })
    }
}
