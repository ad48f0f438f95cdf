import Glibc

/// Reads whole regular files for the readers (traces, rules files) without ever waiting on
/// what is not one: opened non-blocking, so a FIFO's open does not wait for a writer, and
/// refused unless `fstat` says it is a regular file (a FIFO, a device such as `/dev/zero`, a
/// directory). Pure but for the file system; any thread.
package enum RegularFile {
    /// Why a read failed: at which byte, and what went wrong ("not a regular file (a FIFO)",
    /// "cannot open (No such file or directory)").
    package struct Failure: Error, Sendable, Hashable {
        package var offset: Int
        package var reason: String
        /// Whether the path names something that is not a regular file.
        package var notRegular: Bool
    }

    /// The bytes of the regular file at `path`; one that grows while it is read is read up
    /// to the size it had. `directory` names a directory in the refusal.
    package static func read(_ path: String, directory: String = "a directory") throws(Failure) -> [UInt8] {
        func failure(_ what: String, at offset: Int = 0) -> Failure {
            Failure(offset: offset, reason: "cannot \(what) (\(String(cString: strerror(errno))))", notRegular: false)
        }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard descriptor >= 0 else { throw failure("open") }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw failure("stat") }
        let type = info.st_mode & S_IFMT
        guard type == S_IFREG else {
            let what =
                type == S_IFDIR
                ? directory : type == S_IFIFO ? "a FIFO" : type == S_IFSOCK ? "a socket" : "a device"
            throw Failure(offset: 0, reason: "not a regular file (\(what))", notRegular: true)
        }
        // Read straight into the final buffer (no chunk copies).
        let size = Int(max(0, info.st_size))
        var failedAt: Int?
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            while initialized < size {
                let count = Glibc.read(descriptor, buffer.baseAddress! + initialized, size - initialized)
                if count < 0 && errno == EINTR { continue }
                if count < 0 { failedAt = initialized }
                if count <= 0 { break }
                initialized += count
            }
        }
        if let failedAt { throw failure("read", at: failedAt) }
        return bytes
    }
}
