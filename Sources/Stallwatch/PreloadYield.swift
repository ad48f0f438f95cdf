import Glibc
import Synchronization

/// The hand-over between the preload library and a program that links Stallwatch itself.
///
/// `stallwatch record` preloads `libStallwatchPreload.so` into every program it runs; that
/// library holds its own copy of this module and watches `DispatchQueue.main`. A program that
/// starts its own monitor or recorder (exact callouts with `MainLoop`, or its own executors)
/// would then find the sampling signal taken and the trace file written twice. So each of
/// them first calls `yield()`: it looks up the C symbol only the preload library exports and
/// calls it, which stops the preloaded recorder (its trace complete, before the program's own
/// recorder truncates the file) and puts the signal back to its default.
enum PreloadYield {
    /// `stallwatch_preload_yield` in CStallwatchPreload.
    static let symbol = "stallwatch_preload_yield"

    /// Set in the preload library's own copy, whose monitor must not stop itself.
    static let isPreloadInstance = Atomic<Bool>(false)

    /// Stops a preloaded recorder, if there is one. Cheap after the first call. Any thread.
    static func yield() {
        guard !isPreloadInstance.load(ordering: .relaxed) else { return }
        guard let function = dlsym(UnsafeMutableRawPointer(bitPattern: 0), symbol) else { return }
        unsafeBitCast(function, to: (@convention(c) () -> Void).self)()
    }
}
