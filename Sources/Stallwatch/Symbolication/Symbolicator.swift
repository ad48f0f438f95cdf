import Glibc
import StallwatchCore
import Synchronization

/// Turns raw addresses of this process into `Frame`s: demangled name, image path and, where
/// DWARF exists, file:line. Results are cached per address, so repeated stacks cost a lock
/// and a dictionary lookup per frame.
///
/// Names and lines come from the image files through elfutils libdw (loaded with `dlopen`),
/// which sees `.symtab` and DWARF of SwiftPM executables (they export no dynamic symbols, so
/// `dladdr` names nothing there). Without libdw, or where libdw finds nothing, `dladdr`
/// names exported functions of shared libraries.
///
/// Thread-safe. Call it from the watchdog or writer threads, never from the monitored loop
/// thread: a first lookup in an image reads its debug sections (milliseconds).
final class Symbolicator: Sendable {
    /// How many resolved addresses are kept before the cache starts over.
    static let cacheLimit = 65_536

    private struct Resolved {
        var symbol: String?
        var module: String?
        var file: String?
        var line: UInt32?
    }

    private struct State: ~Copyable {
        var map: ModuleMap
        /// Opened on first lookup, so `init` stays cheap enough for start-up.
        var dwarfOpened = false
        var dwarfSession: DwarfSession?
        var dwarf: DwarfSession? {
            mutating get {
                if !dwarfOpened {
                    dwarfOpened = true
                    if useDebugInfo { dwarfSession = DwarfSession(modules: map.modules) }
                }
                return dwarfSession
            }
        }
        let useDebugInfo: Bool
        /// Keyed by lookup address (a return address minus one), not by the frame's address.
        var cache: [UInt64: Resolved] = [:]
    }

    private let state: Locked<State>

    /// Captures the module map (tens of microseconds, no file I/O). libdw and the image files
    /// are opened on the first lookup. `useDebugInfo: false` skips libdw: `dladdr` names only.
    init(useDebugInfo: Bool = true) {
        state = Locked(State(map: ModuleMap.capture(), useDebugInfo: useDebugInfo))
    }

    /// The process's loaded images, sorted by address, for a trace header.
    func modules() -> [ModuleInfo] {
        state.withLock { $0.map.modules }
    }

    /// The image containing `address`, with its build-id.
    func module(containing address: UInt64) -> ModuleInfo? {
        state.withLock { state in
            Self.refreshIfUnknown(address, &state)
            return state.map.module(containing: address)
        }
    }

    /// Forgets resolved addresses (libdw keeps the debug information it has read). For tests and
    /// benchmarks.
    func removeCachedResults() {
        state.withLock { $0.cache.removeAll() }
    }

    /// Symbolicates one stack. Frame 0 is an exact PC (the interrupted instruction); later
    /// frames are return addresses, looked up at `address - 1` so that they land inside the
    /// call instruction (and on its line) rather than on the next one. Pass
    /// `firstIsReturnAddress: true` for stacks whose first entry is also a return address
    /// (e.g. from `backtrace(3)`).
    func symbolicate(_ addresses: [UInt64], firstIsReturnAddress: Bool = false) -> [Frame] {
        state.withLock { state in
            addresses.enumerated().map { index, address in
                let isReturnAddress = index > 0 || firstIsReturnAddress
                let lookup = isReturnAddress && address > 0 ? address - 1 : address
                let resolved = Self.resolve(lookup, &state)
                return Frame(
                    address: address, symbol: resolved.symbol, module: resolved.module, file: resolved.file,
                    line: resolved.line)
            }
        }
    }

    /// Symbolicates a sample's `frames`: the stack's as `symbolicate(_:)` does, and the async
    /// callers (`Frame.isAsync`: resume functions' entries, exact addresses) at their address.
    func symbolicate(frames: [Frame]) -> [Frame] {
        state.withLock { state in
            frames.enumerated().map { index, frame in
                let isReturnAddress = index > 0 && !frame.isAsync
                let lookup = isReturnAddress && frame.address > 0 ? frame.address - 1 : frame.address
                let resolved = Self.resolve(lookup, &state)
                return Frame(
                    address: frame.address, symbol: resolved.symbol, module: resolved.module, file: resolved.file,
                    line: resolved.line, isAsync: frame.isAsync)
            }
        }
    }

    private static func resolve(_ address: UInt64, _ state: inout State) -> Resolved {
        if let hit = state.cache[address] { return hit }
        refreshIfUnknown(address, &state)
        var resolved = Resolved()
        resolved.module = state.map.module(containing: address)?.path
        if resolved.module != nil, let location = state.dwarf?.locate(address) {
            resolved.symbol = location.symbol.map(Demangler.demangle)
            resolved.file = location.file
            resolved.line = location.line
        }
        if resolved.symbol == nil, let name = DynamicLoader.symbol(at: address)?.name {
            resolved.symbol = Demangler.demangle(name)
        }
        if state.cache.count >= cacheLimit { state.cache.removeAll(keepingCapacity: true) }
        state.cache[address] = resolved
        return resolved
    }

    /// Images loaded after start-up (dlopen) are picked up when an address falls outside every
    /// known image and the loader's generation count has moved since the map was captured.
    private static func refreshIfUnknown(_ address: UInt64, _ state: inout State) {
        guard state.map.module(containing: address) == nil,
            DynamicLoader.generation() != state.map.generation
        else { return }
        let fresh = ModuleMap.capture()
        // Cached misses may now fall in a new image, and an image that went away (dlclose) may
        // have had its range reused. Refreshes are rare: start over.
        state.cache.removeAll()
        state.map = fresh
        if state.dwarfOpened { state.dwarfSession?.report(fresh.modules) }
    }
}
