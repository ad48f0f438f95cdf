import Glibc

/// One loaded ELF image of this process, as a trace file header records it.
struct ModuleInfo: Sendable, Equatable, Hashable {
    /// Absolute path of the file (the executable's real path for the main program). The vDSO
    /// keeps its pseudo name, `linux-vdso.so.1`, which is not a file.
    var path: String
    /// GNU build-id as lowercase hex, read from the image's note segment in memory.
    var buildID: String?
    /// Load bias: runtime address minus the ELF file's virtual address (0 for non-PIE executables).
    var base: UInt64
    /// Lowest mapped address of the image's `PT_LOAD` segments.
    var start: UInt64
    /// One past the highest mapped address of its `PT_LOAD` segments.
    var end: UInt64
    /// Whether this is the process's main executable.
    var isMainExecutable: Bool

    /// Whether `path` names a file that can be opened (false for the vDSO).
    var isFile: Bool { path.hasPrefix("/") }

    func contains(_ address: UInt64) -> Bool { address >= start && address < end }
}

/// The process's loaded images, sorted by address, from `dl_iterate_phdr`.
///
/// Reads only the dynamic loader's list and memory already mapped (no /proc parsing, no file
/// I/O except resolving `/proc/self/exe` once), so capturing it costs tens of microseconds.
struct ModuleMap: Sendable {
    private(set) var modules: [ModuleInfo]
    /// `DynamicLoader.generation()` when captured.
    private(set) var generation: UInt64

    /// Captures the current list. Any thread may call it; `dl_iterate_phdr` takes the loader lock.
    static func capture() -> ModuleMap {
        let executablePath = Self.executablePath()
        var modules: [ModuleInfo] = []
        var generation: UInt64 = 0
        DynamicLoader.forEachImage { image in
            generation = image.generation
            if let module = Self.module(from: image, executablePath: executablePath) {
                modules.append(module)
            }
            return true
        }
        return ModuleMap(modules: modules.sorted { $0.start < $1.start }, generation: generation)
    }

    /// The image containing `address`, by binary search.
    func module(containing address: UInt64) -> ModuleInfo? {
        let after = modules.partitioningIndex { $0.start > address }
        guard after > 0, modules[after - 1].contains(address) else { return nil }
        return modules[after - 1]
    }

    private static func module(from image: DynamicLoader.Image, executablePath: String) -> ModuleInfo? {
        let bias = image.bias
        var start = UInt64.max
        var end: UInt64 = 0
        var buildID: String?
        for phdr in image.programHeaders {
            switch phdr.p_type {
            case UInt32(PT_LOAD):
                start = min(start, bias &+ phdr.p_vaddr)
                end = max(end, bias &+ phdr.p_vaddr &+ phdr.p_memsz)
            case UInt32(PT_NOTE) where buildID == nil:
                // Note segments sit inside a read-only PT_LOAD segment, so they are mapped.
                buildID = Self.buildID(
                    notes: UnsafeRawPointer(bitPattern: UInt(bias &+ phdr.p_vaddr)), size: Int(phdr.p_memsz))
            default:
                break
            }
        }
        guard start < end else { return nil }
        let name = image.name
        // The loader reports the main program with an empty name.
        let isMain = name.isEmpty
        return ModuleInfo(
            path: isMain ? executablePath : name, buildID: buildID, base: bias, start: start, end: end,
            isMainExecutable: isMain)
    }

    /// Finds the `NT_GNU_BUILD_ID` note ("GNU\0" owner) in a note segment.
    private static func buildID(notes: UnsafeRawPointer?, size: Int) -> String? {
        guard let notes else { return nil }
        var offset = 0
        let headerSize = 12  // Elf64_Nhdr: namesz, descsz, type (UInt32 each)
        while offset + headerSize <= size {
            let nameSize = Int(notes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            let descSize = Int(notes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self))
            let type = notes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            let nameOffset = offset + headerSize
            let descOffset = nameOffset + ((nameSize + 3) & ~3)
            let next = descOffset + ((descSize + 3) & ~3)
            guard next <= size else { return nil }
            let ntGNUBuildID: UInt32 = 3
            let gnuOwner: UInt32 = 0x0055_4e47  // "GNU\0", little-endian
            if type == ntGNUBuildID, nameSize == 4,
                notes.loadUnaligned(fromByteOffset: nameOffset, as: UInt32.self) == gnuOwner
            {
                let bytes = UnsafeRawBufferPointer(start: notes + descOffset, count: descSize)
                return bytes.map { byte in
                    let hex = String(byte, radix: 16)
                    return byte < 16 ? "0" + hex : hex
                }.joined()
            }
            offset = next
        }
        return nil
    }

    private static func executablePath() -> String {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return CommandLine.arguments.first ?? "" }
        return buffer.withUnsafeBufferPointer { pointer in
            String(decoding: UnsafeRawBufferPointer(start: pointer.baseAddress, count: count), as: UTF8.self)
        }
    }
}
