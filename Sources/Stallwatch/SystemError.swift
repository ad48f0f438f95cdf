import Glibc

/// A system call failed: which one and errno. Thrown by the loop's registration
/// functions and `TraceRecorder.init`.
public struct SystemError: Error, CustomStringConvertible, Sendable {
    /// The failing call, e.g. `epoll_ctl(ADD, fd 7)`.
    public var call: String
    /// The errno it set.
    public var errno: Int32

    /// `call` failed with `errno` (the remedies throw it too).
    package init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// "call failed: reason (errno N)". Any thread.
    public var description: String {
        "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
