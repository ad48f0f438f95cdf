import Glibc
import StallwatchCore

/// Names what a descriptor of this process refers to: the path `/proc/self/fd/N` links to,
/// or for a socket its peer (`getpeername` on the descriptor itself — the watchdog shares the
/// loop thread's descriptor table, so no /proc/net parsing is needed, and unix sockets get
/// their peer's path too). Watchdog thread only.
enum DescriptorResolver {
    /// What `fd` names now, or nil if it is not open. The link is read again after asking the
    /// socket, so a descriptor closed and reused in between is not misreported.
    static func resolve(_ fd: Int32) -> (kind: WaitFact.Kind, target: String)? {
        guard fd >= 0, let link = readLink("/proc/self/fd/\(fd)") else { return nil }
        guard link.hasPrefix("socket:[") else { return (.file, link) }
        let peer = peerName(fd)
        guard readLink("/proc/self/fd/\(fd)") == link else { return nil }
        return (.socket, peer ?? link)
    }

    static func readLink(_ path: String) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBufferPointer { readlink(path, $0.baseAddress!, $0.count - 1) }
        guard n > 0 else { return nil }
        return String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `127.0.0.1:5432`, `[::1]:443`, `/run/app.sock` (`@name` for an abstract socket).
    static func peerName(_ fd: Int32) -> String? {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &length) == 0 }
        }
        guard ok else { return nil }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer -> String? in
            switch family {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var copy = address.pointee.sin_addr
                    return numeric(AF_INET, &copy).map { "\($0):\(UInt16(bigEndian: address.pointee.sin_port))" }
                }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    var copy = address.pointee.sin6_addr
                    return numeric(AF_INET6, &copy).map { "[\($0)]:\(UInt16(bigEndian: address.pointee.sin6_port))" }
                }
            case AF_UNIX:
                return pointer.withMemoryRebound(to: sockaddr_un.self, capacity: 1) { address in
                    let pathLength = Int(length) - MemoryLayout<sa_family_t>.size
                    guard pathLength > 0 else { return "unnamed unix socket" }
                    return withUnsafeBytes(of: address.pointee.sun_path) { raw in
                        let bytes = Array(raw.prefix(pathLength))
                        if bytes.first == 0 { return "@" + String(decoding: bytes.dropFirst(), as: UTF8.self) }
                        return String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
                    }
                }
            default:
                return nil
            }
        }
    }

    private static func numeric(_ family: Int32, _ address: UnsafeRawPointer) -> String? {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        guard inet_ntop(family, address, &text, socklen_t(text.count)) != nil else { return nil }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
