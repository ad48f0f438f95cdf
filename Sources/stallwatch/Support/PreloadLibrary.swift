import StallwatchCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where `record` finds what it preloads: `STALLWATCH_PRELOAD` if set, else the preload library
/// next to the `stallwatch` executable (SwiftPM builds both into one directory), else in `../lib`
/// from it. Where the preload shim is beside that library, the shim: it loads the library only
/// into a process that is a Swift program, runs an event loop, or is the recorded command itself
/// (docs/cli.md, "What record costs the processes it starts").
enum PreloadLibrary {
    /// The file SwiftPM builds for the `StallwatchPreload` product.
    static let fileName = StallwatchSymbols.preloadLibrary

    /// The shim scripts/build-preload-shim.sh builds beside it.
    static let shimFileName = StallwatchSymbols.preloadShim

    /// The path to preload, or nil when there is none (recording then needs MainLoop).
    /// nil too in a sanitizer build: its library needs the sanitizer's runtime loaded first,
    /// which LD_PRELOAD cannot arrange for an arbitrary program.
    static func locate(environment: [String: String]) -> String? {
        if let path = environment[StallwatchEnvironment.preload], !path.isEmpty { return path }
        for runtime in ["__asan_init", "__tsan_init"] where dlsym(nil, runtime) != nil { return nil }
        guard let executable = executablePath() else { return nil }
        let directory = executable.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            .joined(separator: "/")
        for candidate in [directory, directory + "/../lib"] where access(candidate + "/" + fileName, R_OK) == 0 {
            let shim = candidate + "/" + shimFileName
            return access(shim, R_OK) == 0 ? shim : candidate + "/" + fileName
        }
        return nil
    }

    private static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
