#if canImport(Glibc)
    import Glibc
#endif

/// Where `record` finds the preload library: `STALLWATCH_PRELOAD` if set, else next to the
/// `stallwatch` executable (SwiftPM builds both into one directory), else `../lib` from it.
enum PreloadLibrary {
    /// The file SwiftPM builds for the `StallwatchPreload` product.
    static let fileName = "libStallwatchPreload.so"

    /// The library's path, or nil when there is none (recording then needs MainLoop).
    /// nil too in a sanitizer build: its library needs the sanitizer's runtime loaded first,
    /// which LD_PRELOAD cannot arrange for an arbitrary program.
    static func locate(environment: [String: String]) -> String? {
        if let path = environment["STALLWATCH_PRELOAD"], !path.isEmpty { return path }
        for runtime in ["__asan_init", "__tsan_init"] where dlsym(nil, runtime) != nil { return nil }
        guard let executable = executablePath() else { return nil }
        let directory = executable.split(separator: "/", omittingEmptySubsequences: false).dropLast()
            .joined(separator: "/")
        for candidate in [directory + "/" + fileName, directory + "/../lib/" + fileName]
        where access(candidate, R_OK) == 0 {
            return candidate
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
