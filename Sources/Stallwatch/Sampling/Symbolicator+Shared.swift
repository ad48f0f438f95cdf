extension Symbolicator {
    /// The process's symbolicator: one cache for every monitor and recorder.
    static let shared = Symbolicator()
}
