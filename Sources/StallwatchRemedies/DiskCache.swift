import Glibc
import Stallwatch
import StallwatchCore

/// A directory of byte blobs keyed by string. Any thread; no callbacks.
///
/// A key's file is named by the FNV-1a 64-bit hash of its UTF-8 bytes in hex (stable across
/// runs, unlike `hashValue`, which Swift seeds per process). A write goes to a temporary file in
/// the same directory and is renamed over the final name, so a reader sees the old bytes or the
/// new bytes, never a torn mix, and a crash leaves at most a stray temporary file (cleared by
/// `removeAll`). Two keys with the same 64-bit hash would share a file; at cache sizes that is
/// out of reach (the birthday bound is about 2^32 keys).
public final class DiskCache: Sendable {
    /// The cache's directory. Any thread.
    public let directory: String
    /// Whether `store` fsyncs the file before renaming it (durable across power loss, slower).
    public let synchronizesWrites: Bool

    private static let temporaryPrefix = ".tmp-"

    /// A cache in `directory`, created with its missing parents. Any thread.
    /// - Throws: `SystemError` naming the path if a directory cannot be created or the path is
    ///   not a directory.
    public init(directory: String, synchronizesWrites: Bool = false) throws {
        self.directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.synchronizesWrites = synchronizesWrites
        try Self.makeDirectories(self.directory)
    }

    /// The bytes stored for `key`, or nil if there are none (or they cannot be read: a cache
    /// miss is the right answer to an unreadable file). Only a regular file is an entry: a FIFO,
    /// a device or a symbolic link put in the directory is a miss, opened without waiting
    /// (`O_NONBLOCK`, `O_NOFOLLOW`) so it cannot hold the caller's queue. Blocks on file I/O:
    /// call it off the loop. Any thread.
    public func data(forKey key: String) -> [UInt8]? {
        let fd = open(path(forKey: key), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(info.st_size))
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 {
                bytes.append(contentsOf: chunk[0..<n])
            } else if n == 0 {
                return bytes
            } else if errno != EINTR {
                return nil
            }
        }
    }

    /// Stores `bytes` for `key`, replacing what was there atomically. Blocks on file I/O: call it
    /// off the loop. Any thread; concurrent stores of one key leave one of them whole.
    /// - Throws: `SystemError` naming the failing call and path.
    public func store(_ bytes: [UInt8], forKey key: String) throws {
        let target = path(forKey: key)
        let temporary =
            "\(directory)/\(Self.temporaryPrefix)\(Self.fileName(forKey: key))-\(hex(UInt64.random(in: .min ... .max)))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw SystemError(call: "open(\(temporary))", errno: errno) }
        do {
            defer { close(fd) }
            try writeAll(fd, bytes, path: temporary)
            if synchronizesWrites, fsync(fd) != 0 { throw SystemError(call: "fsync(\(temporary))", errno: errno) }
        } catch {
            unlink(temporary)
            throw error
        }
        if rename(temporary, target) != 0 {
            let error = SystemError(call: "rename(\(temporary), \(target))", errno: errno)
            unlink(temporary)
            throw error
        }
    }

    /// Deletes every entry and stray temporary file (files this cache names; other files in the
    /// directory are left alone). Blocks on file I/O. Any thread.
    /// - Throws: `SystemError` naming the path if the directory cannot be read or a file removed.
    public func removeAll() throws {
        guard let dir = opendir(directory) else { throw SystemError(call: "opendir(\(directory))", errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if Self.isEntryName(name) || name.hasPrefix(Self.temporaryPrefix) { names.append(name) }
        }
        for name in names {
            let path = "\(directory)/\(name)"
            if unlink(path) != 0, errno != ENOENT { throw SystemError(call: "unlink(\(path))", errno: errno) }
        }
    }

    /// The file that holds `key`'s bytes.
    func path(forKey key: String) -> String {
        "\(directory)/\(Self.fileName(forKey: key))"
    }

    /// FNV-1a 64 of the key's UTF-8 bytes, 16 lowercase hex digits.
    static func fileName(forKey key: String) -> String {
        hex(FNV1a.hash(key.utf8))
    }

    static func isEntryName(_ name: String) -> Bool {
        name.utf8.count == 16 && name.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    private static func makeDirectories(_ path: String) throws {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/\(component)"
            if mkdir(prefix, 0o755) != 0, errno != EEXIST {
                throw SystemError(call: "mkdir(\(prefix))", errno: errno)
            }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw SystemError(call: "stat(\(path))", errno: errno) }
        guard info.st_mode & S_IFMT == S_IFDIR else { throw SystemError(call: "mkdir(\(path))", errno: ENOTDIR) }
    }
}

private func hex(_ value: UInt64) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: 16 - digits.count) + digits
}

private func writeAll(_ fd: Int32, _ bytes: [UInt8], path: String) throws {
    try bytes.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let n = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if n > 0 {
                offset += n
            } else if n < 0, errno == EINTR {
                continue
            } else {
                throw SystemError(call: "write(\(path))", errno: n < 0 ? errno : EIO)
            }
        }
    }
}
