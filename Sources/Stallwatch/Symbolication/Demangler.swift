#if os(Linux)
    import Glibc

    /// Turns linker symbol names into readable ones: Swift names through the runtime's own
    /// `swift_demangle` (libswiftCore, always loaded in a Swift process), C++ names through
    /// `__cxa_demangle` when libstdc++ is loaded. Anything else is returned unchanged.
    ///
    /// Stateless and thread-safe; both functions allocate with `malloc`.
    enum Demangler {
        private typealias SwiftDemangle =
            @convention(c) (
                UnsafePointer<CChar>?, Int, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?, UInt32
            ) -> UnsafeMutablePointer<CChar>?
        private typealias CxaDemangle =
            @convention(c) (
                UnsafePointer<CChar>?, UnsafeMutablePointer<CChar>?, UnsafeMutablePointer<Int>?,
                UnsafeMutablePointer<Int32>?
            ) -> UnsafeMutablePointer<CChar>?

        // Resolved with dlsym rather than declared with @_silgen_name, which is underscored API.
        private static let swiftDemangle: SwiftDemangle? = lookup("swift_demangle")
        private static let cxaDemangle: CxaDemangle? = lookup("__cxa_demangle")

        static func demangle(_ name: String) -> String {
            if name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") || name.hasPrefix("_T") {
                guard let swiftDemangle else { return name }
                return name.withCString { pointer in
                    guard let result = swiftDemangle(pointer, strlen(pointer), nil, nil, 0) else { return name }
                    defer { free(result) }
                    return String(cString: result)
                }
            }
            if name.hasPrefix("_Z") {
                guard let cxaDemangle else { return name }
                var status: Int32 = 0
                guard let result = cxaDemangle(name, nil, nil, &status) else { return name }
                defer { free(result) }
                return status == 0 ? String(cString: result) : name
            }
            return name
        }

        private static func lookup<T>(_ symbol: String) -> T? {
            // RTLD_DEFAULT is ((void *) 0) in glibc.
            dlsym(nil, symbol).map { unsafeBitCast($0, to: T.self) }
        }
    }
#endif
