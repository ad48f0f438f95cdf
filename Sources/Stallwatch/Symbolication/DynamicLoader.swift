import Glibc

/// glibc's `dl_iterate_phdr` and `dladdr`, which Swift's Glibc module does not import
/// (`<link.h>` is not in it; `dladdr` needs `_GNU_SOURCE`). Resolved with `dlsym` and read
/// through the x86_64/aarch64 LP64 layouts of `struct dl_phdr_info` and `Dl_info`, which are
/// part of glibc's stable ABI. Thread-safe.
enum DynamicLoader {
    /// One loaded image as `dl_iterate_phdr` reports it.
    struct Image {
        /// `dlpi_addr`: the load bias.
        var bias: UInt64
        /// `dlpi_name`: empty for the main program.
        var name: String
        var programHeaders: UnsafeBufferPointer<Elf64_Phdr>
        /// `dlpi_adds` + `dlpi_subs`: changes whenever an image may have been loaded or unloaded.
        var generation: UInt64
    }

    /// The nearest exported symbol at or below an address, as `dladdr` reports it.
    struct Symbol {
        var name: String?
        var image: String?
    }

    private typealias Callback =
        @convention(c) (UnsafeMutableRawPointer?, Int, UnsafeMutableRawPointer?) -> Int32
    private typealias IteratePhdr = @convention(c) (Callback?, UnsafeMutableRawPointer?) -> Int32
    private typealias DladdrFn = @convention(c) (UnsafeRawPointer?, UnsafeMutableRawPointer?) -> Int32

    private static let iteratePhdr = function("dl_iterate_phdr", as: IteratePhdr.self)
    private static let dladdrFunction = function("dladdr", as: DladdrFn.self)

    /// `dlsym`: the symbol `name` in the image `handle` (nil: the global scope,
    /// `RTLD_DEFAULT`), as the C function (or pointer) type `T`. The package's one dlsym
    /// helper; C declarations that Swift's Glibc module lacks are resolved through it rather
    /// than declared with `@_silgen_name`, which is underscored API.
    static func function<T>(_ name: String, in handle: UnsafeMutableRawPointer? = nil, as type: T.Type) -> T? {
        // RTLD_DEFAULT is ((void *) 0) in glibc.
        dlsym(handle, name).map { unsafeBitCast($0, to: type) }
    }

    /// A number that changes whenever an image may have been loaded or unloaded (0 if glibc
    /// does not report it). Costs one `dl_iterate_phdr` step (the loader's lock, no I/O).
    static func generation() -> UInt64 {
        var generation: UInt64 = 0
        forEachImage { image in
            generation = image.generation
            return false
        }
        return generation
    }

    /// Calls `body` for each loaded image, under the loader's lock (do not dlopen in `body`),
    /// until it returns false.
    static func forEachImage(_ body: (Image) -> Bool) {
        guard let iteratePhdr else { return }
        withoutActuallyEscaping(body) { body in
            var body = body
            withUnsafeMutablePointer(to: &body) { context in
                _ = iteratePhdr(
                    { info, size, context in
                        guard let info, let context else { return 0 }
                        // struct dl_phdr_info { Elf64_Addr dlpi_addr; const char *dlpi_name;
                        //                       const Elf64_Phdr *dlpi_phdr; Elf64_Half dlpi_phnum; ... }
                        let bias = info.load(as: UInt64.self)
                        let name = info.load(fromByteOffset: 8, as: UnsafePointer<CChar>?.self)
                        let phdr = info.load(fromByteOffset: 16, as: UnsafePointer<Elf64_Phdr>?.self)
                        let count = info.load(fromByteOffset: 24, as: UInt16.self)
                        // dlpi_adds, dlpi_subs follow at 32 and 40 when the loader's struct has them.
                        let generation =
                            size >= 48
                            ? info.load(fromByteOffset: 32, as: UInt64.self)
                                &+ info.load(fromByteOffset: 40, as: UInt64.self) : 0
                        let image = Image(
                            bias: bias, name: name.map { String(cString: $0) } ?? "",
                            programHeaders: UnsafeBufferPointer(start: phdr, count: phdr == nil ? 0 : Int(count)),
                            generation: generation)
                        return context.assumingMemoryBound(to: ((Image) -> Bool).self).pointee(image) ? 0 : 1
                    }, context)
            }
        }
    }

    static func symbol(at address: UInt64) -> Symbol? {
        guard let dladdrFunction, let pointer = UnsafeRawPointer(bitPattern: UInt(address)) else {
            return nil
        }
        // Dl_info { const char *dli_fname; void *dli_fbase; const char *dli_sname; void *dli_saddr; }
        var info: (UnsafePointer<CChar>?, UnsafeRawPointer?, UnsafePointer<CChar>?, UnsafeRawPointer?) =
            (nil, nil, nil, nil)
        guard withUnsafeMutableBytes(of: &info, { dladdrFunction(pointer, $0.baseAddress) }) != 0 else {
            return nil
        }
        return Symbol(name: info.2.map { String(cString: $0) }, image: info.0.map { String(cString: $0) })
    }
}
