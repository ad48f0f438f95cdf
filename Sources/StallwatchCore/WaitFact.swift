/// What the loop thread waited on at one sample, as far as the kernel and the process's own
/// memory can tell: the file or socket peer behind an I/O syscall, the file a page fault
/// reads, the thread holding a mutex (with its stack), or the SQL statement of a registered
/// SQLite connection. docs/categories.md says what each kind knows and what it cannot.
///
/// A plain value; use it on any thread.
public struct WaitFact: Sendable, Hashable, Codable {
    /// The kind of wait. Raw values are stable (trace files store them).
    public enum Kind: UInt8, CaseIterable, Sendable, Hashable, Codable {
        /// An I/O syscall on a descriptor that names a file (or a pipe, an eventfd…):
        /// `target` is what `/proc/self/fd/N` links to. Or a syscall on an address in a file
        /// mapping (`msync`, `madvise`, `mlock`): `target` is the mapping's file, `address` the
        /// syscall's address.
        case file = 1
        /// An I/O syscall on a socket: `target` is the peer (`127.0.0.1:5432`, a unix path),
        /// or `socket:[inode]` when it has none.
        case socket = 2
        /// A page fault: `address` is the fault address (a perf page-fault event) and `target`
        /// the file mapped there; without perf, `target` is the file mapping whose resident
        /// size grew the most since the previous sample.
        case pageFault = 3
        /// A futex wait on a glibc `pthread_mutex_t` (NSLock is one): `owner` holds it.
        case mutex = 4
        /// Another futex wait (condition, semaphore, dispatch): the kernel and the futex word
        /// do not say who will wake it. But for a `DispatchQueue.sync` onto a queue another
        /// thread runs: `owner` is that thread and `target` the queue's label.
        case futex = 5
        /// A registered SQLite connection is running `statement` on the database `target`.
        case database = 6
        /// Runnable but not running: the thread was runnable at this sample and the previous
        /// one, and its CPU clock moved by at most a quarter of the time between them, so it
        /// waited on a run queue, kept off a CPU by other threads or processes. What it would
        /// run is not the wait.
        case cpu = 7

        /// The spelling used in rules files and JSON (`"file"`, `"pageFault"`…).
        public var name: String {
            switch self {
            case .file: "file"
            case .socket: "socket"
            case .pageFault: "pageFault"
            case .mutex: "mutex"
            case .futex: "futex"
            case .database: "database"
            case .cpu: "cpu"
            }
        }

        /// The kind spelled `name`, if any.
        public init?(name: String) {
            guard let kind = Kind.allCases.first(where: { $0.name == name }) else { return nil }
            self = kind
        }
    }

    /// The kind.
    public var kind: Kind
    /// The syscall the fact comes from (`"read"`, `"recvfrom"`, `"futex"`), if any.
    public var operation: String?
    /// The descriptor from the syscall's first argument, for `file` and `socket`.
    public var fd: Int32?
    /// The path, the socket peer, the mapped file or the database file; the queue's label
    /// (`futex` of a `DispatchQueue.sync`).
    public var target: String?
    /// The futex address (`mutex`, `futex`), the fault address (`pageFault`), the syscall's
    /// address (`file` of `msync`, `madvise`, `mlock`).
    public var address: UInt64?
    /// The thread holding the mutex (`mutex`), or running the queue a `DispatchQueue.sync`
    /// waits for (`futex`).
    public var owner: Owner?
    /// The SQL text (`database`), as the app prepared it (parameters not expanded).
    public var statement: String?

    /// The thread that holds a lock the loop thread waits for (or runs the queue it waits for).
    public struct Owner: Sendable, Hashable, Codable {
        /// Its thread id.
        public var tid: Int32
        /// Its name from `/proc/self/task/<tid>/comm`, if readable.
        public var name: String?
        /// Its stack, taken in the same sample (innermost first); empty if it could not be.
        public var frames: [Frame]

        /// Creates an owner.
        public init(tid: Int32, name: String? = nil, frames: [Frame] = []) {
            self.tid = tid
            self.name = name
            self.frames = frames
        }
    }

    /// Creates a fact.
    public init(
        kind: Kind, operation: String? = nil, fd: Int32? = nil, target: String? = nil,
        address: UInt64? = nil, owner: Owner? = nil, statement: String? = nil
    ) {
        self.kind = kind
        self.operation = operation
        self.fd = fd
        self.target = target
        self.address = address
        self.owner = owner
        self.statement = statement
    }
}
