import Glibc

/// A libdwfl view of this process's images: ELF symbol names and DWARF file:line.
///
/// Not thread-safe (libdw keeps per-`Dwfl` caches without locks); `Symbolicator` owns one and
/// uses it under its lock. Debug information is read from the image files lazily, the first
/// time an address in that image is looked up, and stays cached for the session's lifetime.
final class DwarfSession {
    struct Location {
        /// Raw (mangled) symbol name from `.symtab` or `.dynsym`.
        var symbol: String?
        var file: String?
        var line: UInt32?
    }

    /// A compile unit's address range (runtime addresses), for the address→CU lookup that
    /// `.debug_aranges` would give; swiftc and clang do not emit that section.
    private struct CURange {
        var low: UInt64
        var high: UInt64
        var die: LibDW.DwarfDie
        var bias: UInt64
    }

    private let dw: LibDW
    private var dwfl: LibDW.Dwfl
    /// Per `Dwfl_Module`, its CU ranges sorted by `low`; built on first use.
    private var cuIndex: [LibDW.DwflModule: [CURange]] = [:]
    private var reported: Set<ModuleInfo> = []

    init?(modules: [ModuleInfo], libdw: LibDW? = LibDW.shared) {
        guard let libdw, let dwfl = libdw.begin(libdw.callbacks) else { return nil }
        self.dw = libdw
        self.dwfl = dwfl
        report(modules)
    }

    deinit { dw.end(dwfl) }

    /// Brings the session up to date with the process's images. libdwfl opens each new file
    /// here (an `open` and ELF header read per image); debug sections are read on first lookup.
    func report(_ modules: [ModuleInfo]) {
        let modules = Set(modules.filter(\.isFile))
        if !reported.isSubset(of: modules) {
            // An image went away (dlclose). Re-reporting survivors into the same Dwfl does not
            // reliably keep them usable, so start a fresh session; this is rare.
            if let fresh = dw.begin(dw.callbacks) {
                dw.end(dwfl)
                dwfl = fresh
                reported = []
                cuIndex = [:]
            }
        }
        let added = modules.subtracting(reported)
        guard !added.isEmpty else { return }
        dw.reportBeginAdd(dwfl)
        for module in added {
            // add_p_vaddr: base is the load bias, which also covers prelinked (p_vaddr != 0) files.
            _ = dw.reportElf(dwfl, module.path, module.path, -1, module.base, true)
        }
        _ = dw.reportEnd(dwfl, nil, nil)
        reported.formUnion(added)
    }

    /// The symbol and source line at `address` (already adjusted to point inside the call
    /// instruction for return addresses).
    func locate(_ address: UInt64) -> Location? {
        guard let module = dw.addrModule(dwfl, address) else { return nil }
        var location = Location()
        var offset: UInt64 = 0
        var sym = Elf64_Sym()
        var symbolStart: UInt64?
        if let name = dw.moduleAddrInfo(module, address, &offset, &sym, nil, nil, nil) {
            location.symbol = String(cString: name)
            symbolStart = address &- offset
        }
        if let (cu, line) = sourceLine(in: module, at: address) {
            var number: Int32 = 0
            location.file = dw.lineSrc(line, nil, nil).map { String(cString: $0) }
            if dw.lineNo(line, &number) == 0, number > 0, !Self.isCompilerGenerated(location.file) {
                location.line = UInt32(number)
            } else if let start = symbolStart,
                let row = precedingLine(in: cu, before: address &- cu.bias, notBefore: start &- cu.bias)
            {
                location.line = row.line
                location.file = row.file ?? location.file
            }
        }
        return location
    }

    /// The file optimised Swift gives code it made itself (inlined generic code, retains): no
    /// source a person can open.
    private static func isCompilerGenerated(_ file: String?) -> Bool {
        file?.hasSuffix("<compiler-generated>") ?? true
    }

    /// Line 0, or the file `<compiler-generated>`, marks code the compiler made (common in
    /// optimised Swift: retain/release, inlined generic code). A sample there belongs to the
    /// statement the code was emitted for, so take the nearest earlier row with a line in a
    /// real file (its line and file), staying within the function and its line-table sequence.
    private func precedingLine(in cu: CURange, before address: UInt64, notBefore start: UInt64)
        -> (line: UInt32, file: String?)?
    {
        var lines: OpaquePointer?
        var count = 0
        guard dw.getSrcLines(cu.die, &lines, &count) == 0, let lines, count > 0 else { return nil }
        func rowAddress(_ index: Int) -> UInt64 {
            var value: UInt64 = 0
            _ = dw.lineAddr(dw.oneSrcLine(lines, index), &value)
            return value
        }
        // Rows are sorted by address: find the last one at or below `address`.
        let after = (0..<count).partitioningIndex { rowAddress($0) > address }
        var index = after - 1
        while index >= 0, rowAddress(index) >= start {
            let row = dw.oneSrcLine(lines, index)
            var endsSequence = false
            if dw.lineEndSequence(row, &endsSequence) == 0, endsSequence, index != after - 1 { break }
            var number: Int32 = 0
            if dw.lineNo(row, &number) == 0, number > 0 {
                let file = dw.lineSrc(row, nil, nil).map { String(cString: $0) }
                if !Self.isCompilerGenerated(file) { return (UInt32(number), file) }
            }
            index -= 1
        }
        return nil
    }

    /// The compile unit holding `address` and its line-table row there. libdw's own answer
    /// (from .debug_aranges) is taken only when it has a row for the address: a module whose
    /// aranges cover some CUs only (clang's C beside Swift, which emits none) can be answered
    /// with a CU that does not hold the address, depending on what was looked up before; then
    /// the session's own index of every CU's ranges decides.
    private func sourceLine(in module: LibDW.DwflModule, at address: UInt64) -> (CURange, LibDW.DwarfLine)? {
        if let cu = compileUnit(in: module, containing: address), let line = dw.getSrcDie(cu.die, address &- cu.bias) {
            return (cu, line)
        }
        let ranges = cuIndex[module] ?? buildIndex(module)
        guard let cu = Self.search(ranges, address), let line = dw.getSrcDie(cu.die, address &- cu.bias) else {
            return nil
        }
        return (cu, line)
    }

    private func compileUnit(in module: LibDW.DwflModule, containing address: UInt64) -> CURange? {
        if let ranges = cuIndex[module], let range = Self.search(ranges, address) { return range }
        // GCC-built libraries (and their separate debug files) carry .debug_aranges, which
        // libdw reads quickly; walking all CUs of libc's debug file takes 75-190 ms. Asked
        // even once the index exists: a module can mix both kinds of CU (an ASan executable
        // links compiler-rt's, which the index does not cover), and the answer must not
        // depend on which address was looked up first.
        var bias: UInt64 = 0
        if let die = dw.moduleAddrDie(module, address, &bias) {
            return CURange(low: address, high: address &+ 1, die: die, bias: bias)
        }
        return cuIndex[module] == nil ? Self.search(buildIndex(module), address) : nil
    }

    private static func search(_ ranges: [CURange], _ address: UInt64) -> CURange? {
        // Last range starting at or below address; CU ranges do not overlap in practice, but a
        // CU may have several ranges, each indexed separately.
        let after = ranges.partitioningIndex { $0.low > address }
        guard after > 0, address < ranges[after - 1].high else { return nil }
        return ranges[after - 1]
    }

    private func buildIndex(_ module: LibDW.DwflModule) -> [CURange] {
        var ranges: [CURange] = []
        var bias: UInt64 = 0
        var cu = dw.moduleNextCU(module, nil, &bias)
        while let die = cu {
            var offset = 0
            var base: UInt64 = 0
            var start: UInt64 = 0
            var end: UInt64 = 0
            repeat {
                offset = dw.ranges(die, offset, &base, &start, &end)
                if offset > 0, start < end {
                    ranges.append(CURange(low: start &+ bias, high: end &+ bias, die: die, bias: bias))
                }
            } while offset > 0
            cu = dw.moduleNextCU(module, die, &bias)
        }
        ranges.sort { $0.low < $1.low }
        cuIndex[module] = ranges
        return ranges
    }
}
