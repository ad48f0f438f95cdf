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

    private static let swiftDemangle = DynamicLoader.function("swift_demangle", as: SwiftDemangle.self)
    private static let cxaDemangle = DynamicLoader.function("__cxa_demangle", as: CxaDemangle.self)

    static func demangle(_ name: String) -> String {
        if name.hasPrefix("$s") || name.hasPrefix("_$s") || name.hasPrefix("$S") || name.hasPrefix("_T") {
            guard let swiftDemangle else { return name }
            return name.withCString { pointer in
                guard let result = swiftDemangle(pointer, strlen(pointer), nil, nil, 0) else { return name }
                defer { free(result) }
                return simplified(String(cString: result))
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

    /// The optimizer's wrappers say how a function was compiled, not what it is: drop
    /// "function signature specialization <…> of ", "generic specialization <…> of ",
    /// "merged " and the like, so reports and signatures name the function itself.
    static func simplified(_ name: String) -> String {
        var text = Substring(name)
        var changed = true
        while changed {
            changed = false
            for prefix in ["merged ", "outlined copy of ", "outlined consume of "] where text.hasPrefix(prefix) {
                text = text.dropFirst(prefix.count)
                changed = true
            }
            for prefix in [
                "function signature specialization ", "generic specialization ", "generic partial specialization ",
            ] where text.hasPrefix(prefix) {
                var rest = text.dropFirst(prefix.count)
                guard rest.first == "<" else { continue }
                var depth = 0
                var end: Substring.Index?
                for index in rest.indices {
                    if rest[index] == "<" { depth += 1 }
                    if rest[index] == ">" {
                        depth -= 1
                        if depth == 0 {
                            end = index
                            break
                        }
                    }
                }
                guard let end else { continue }
                rest = rest[rest.index(after: end)...]
                guard rest.hasPrefix(" of ") else { continue }
                text = rest.dropFirst(4)
                changed = true
            }
        }
        return String(text)
    }
}
