/// A label the app put around a piece of main-thread work (the innermost one active when
/// a sample was taken), optionally saying what kind of work it is.
///
/// A plain value; use it on any thread.
public struct Annotation: Sendable, Hashable, Codable {
    /// What the app called the work (e.g. `"feed.reload"`).
    public var label: String
    /// The category the app asserts for this work. When set, it decides the sample's
    /// category ahead of every rule.
    public var category: StallCategory?

    /// Creates an annotation.
    public init(label: String, category: StallCategory? = nil) {
        self.label = label
        self.category = category
    }
}
