import Glibc

/// The few elfutils libdw/libdwfl entry points the symbolicator uses, resolved with `dlopen`.
///
/// Loaded at run time rather than linked so that building the package needs no `libdw-dev`
/// and a host without `libdw1` still runs (symbolication falls back to `dladdr`). Every type
/// libdw hands us is used only through pointers, so no libdw header is needed either.
/// The soname `libdw.so.1` has been stable since elfutils 0.1xx (2005).
///
/// libdw is not thread-safe for one `Dwfl`: callers serialise all use (see `DwarfSession`).
struct LibDW: @unchecked Sendable {
    // @unchecked: a table of immutable C function pointers.
    typealias Dwfl = OpaquePointer
    typealias DwflModule = OpaquePointer
    typealias DwarfDie = UnsafeMutableRawPointer  // Dwarf_Die *, owned by libdwfl
    typealias DwarfLine = OpaquePointer

    typealias BeginFn = @convention(c) (UnsafeRawPointer?) -> Dwfl?
    typealias DwflFn = @convention(c) (Dwfl?) -> Void
    typealias ReportElfFn =
        @convention(c) (Dwfl?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, Int32, UInt64, Bool) ->
        DwflModule?
    typealias ReportEndFn = @convention(c) (Dwfl?, UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Int32
    typealias AddrModuleFn = @convention(c) (Dwfl?, UInt64) -> DwflModule?
    /// dwfl_module_addrinfo(mod, address, &offset, &sym, &shndx, &elf, &bias) -> name
    typealias ModuleAddrInfoFn =
        @convention(c) (
            DwflModule?, UInt64, UnsafeMutablePointer<UInt64>?, UnsafeMutablePointer<Elf64_Sym>?,
            UnsafeMutablePointer<UInt32>?, UnsafeMutablePointer<OpaquePointer?>?,
            UnsafeMutablePointer<UInt64>?
        ) -> UnsafePointer<CChar>?
    typealias ModuleAddrDieFn =
        @convention(c) (DwflModule?, UInt64, UnsafeMutablePointer<UInt64>?) -> DwarfDie?
    typealias ModuleNextCUFn =
        @convention(c) (DwflModule?, DwarfDie?, UnsafeMutablePointer<UInt64>?) -> DwarfDie?
    /// dwarf_ranges(die, offset, &base, &start, &end) -> next offset, 0 at the end, -1 on error
    typealias RangesFn =
        @convention(c) (
            DwarfDie?, Int, UnsafeMutablePointer<UInt64>?, UnsafeMutablePointer<UInt64>?,
            UnsafeMutablePointer<UInt64>?
        ) -> Int
    typealias GetSrcDieFn = @convention(c) (DwarfDie?, UInt64) -> DwarfLine?
    typealias LineNoFn = @convention(c) (DwarfLine?, UnsafeMutablePointer<Int32>?) -> Int32
    typealias LineSrcFn =
        @convention(c) (DwarfLine?, UnsafeMutablePointer<UInt64>?, UnsafeMutablePointer<UInt64>?) ->
        UnsafePointer<CChar>?
    typealias GetSrcLinesFn =
        @convention(c) (DwarfDie?, UnsafeMutablePointer<OpaquePointer?>?, UnsafeMutablePointer<Int>?) ->
        Int32
    typealias OneSrcLineFn = @convention(c) (OpaquePointer?, Int) -> DwarfLine?
    typealias LineAddrFn = @convention(c) (DwarfLine?, UnsafeMutablePointer<UInt64>?) -> Int32
    typealias LineEndSequenceFn = @convention(c) (DwarfLine?, UnsafeMutablePointer<Bool>?) -> Int32

    let begin: BeginFn
    let end: DwflFn
    let reportBeginAdd: DwflFn
    let reportElf: ReportElfFn
    let reportEnd: ReportEndFn
    let addrModule: AddrModuleFn
    let moduleAddrInfo: ModuleAddrInfoFn
    let moduleAddrDie: ModuleAddrDieFn
    let moduleNextCU: ModuleNextCUFn
    let ranges: RangesFn
    let getSrcDie: GetSrcDieFn
    let lineNo: LineNoFn
    let lineSrc: LineSrcFn
    let getSrcLines: GetSrcLinesFn
    let oneSrcLine: OneSrcLineFn
    let lineAddr: LineAddrFn
    let lineEndSequence: LineEndSequenceFn
    /// `Dwfl_Callbacks` (four pointers), kept alive for the process: every `Dwfl` points at it.
    let callbacks: UnsafeRawPointer

    /// Loaded once per process; nil when `libdw.so.1` or a symbol is missing.
    static let shared: LibDW? = LibDW()

    private init?() {
        // RTLD_LOCAL: libdw's own dependencies (libelf, zlib, …) must not interpose on the app's.
        guard let handle = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL) else { return nil }
        func symbol<T>(_ name: String, as type: T.Type) -> T? {
            DynamicLoader.function(name, in: handle, as: type)
        }
        guard
            let begin = symbol("dwfl_begin", as: BeginFn.self),
            let end = symbol("dwfl_end", as: DwflFn.self),
            let reportBeginAdd = symbol("dwfl_report_begin_add", as: DwflFn.self),
            let reportElf = symbol("dwfl_report_elf", as: ReportElfFn.self),
            let reportEnd = symbol("dwfl_report_end", as: ReportEndFn.self),
            let addrModule = symbol("dwfl_addrmodule", as: AddrModuleFn.self),
            let moduleAddrInfo = symbol(
                "dwfl_module_addrinfo", as: ModuleAddrInfoFn.self),
            let moduleAddrDie = symbol("dwfl_module_addrdie", as: ModuleAddrDieFn.self),
            let moduleNextCU = symbol("dwfl_module_nextcu", as: ModuleNextCUFn.self),
            let ranges = symbol("dwarf_ranges", as: RangesFn.self),
            let getSrcDie = symbol("dwarf_getsrc_die", as: GetSrcDieFn.self),
            let lineNo = symbol("dwarf_lineno", as: LineNoFn.self),
            let lineSrc = symbol("dwarf_linesrc", as: LineSrcFn.self),
            let getSrcLines = symbol("dwarf_getsrclines", as: GetSrcLinesFn.self),
            let oneSrcLine = symbol("dwarf_onesrcline", as: OneSrcLineFn.self),
            let lineAddr = symbol("dwarf_lineaddr", as: LineAddrFn.self),
            let lineEndSequence = symbol("dwarf_lineendsequence", as: LineEndSequenceFn.self),
            // The ELF comes from the file we report (dwfl_report_elf), so find_elf is never used,
            // but libdwfl requires one.
            let findElf = symbol("dwfl_build_id_find_elf", as: UnsafeMutableRawPointer.self),
            // Separate debug info by build-id under /usr/lib/debug only. Not the "standard"
            // callback: that one also asks debuginfod (network) when DEBUGINFOD_URLS is set.
            let findDebuginfo = symbol("dwfl_build_id_find_debuginfo", as: UnsafeMutableRawPointer.self)
        else {
            dlclose(handle)
            return nil
        }
        let callbacks = UnsafeMutablePointer<UnsafeMutableRawPointer?>.allocate(capacity: 4)
        callbacks.initialize(repeating: nil, count: 4)
        callbacks[0] = findElf
        callbacks[1] = findDebuginfo
        (
            self.begin, self.end, self.reportBeginAdd, self.reportElf, self.reportEnd, self.addrModule,
            self.moduleAddrInfo, self.moduleAddrDie, self.moduleNextCU, self.ranges, self.getSrcDie, self.lineNo,
            self.lineSrc, self.getSrcLines, self.oneSrcLine, self.lineAddr, self.lineEndSequence,
            self.callbacks
        ) = (
            begin, end, reportBeginAdd, reportElf, reportEnd, addrModule, moduleAddrInfo, moduleAddrDie,
            moduleNextCU,
            ranges, getSrcDie, lineNo, lineSrc, getSrcLines, oneSrcLine, lineAddr, lineEndSequence,
            UnsafeRawPointer(callbacks)
        )
    }
}
