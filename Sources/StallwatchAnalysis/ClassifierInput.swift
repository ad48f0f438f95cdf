import StallwatchCore

/// What `Classifier.classify(_:)` reads of a sample, and nothing else: the functions on the
/// stack (each frame's symbol and module), the thread's kernel state and facts, and the
/// annotation. Two inputs that are equal get the same verdict, so a cache of verdicts keys on
/// this (or on numbers that stand for it); a field the classifier comes to read is added here,
/// and every such cache then keys on it.
///
/// A plain value; use it on any thread.
public struct ClassifierInput: Sendable, Hashable {
    /// The sampled frames, innermost first; only their symbols and modules are read (and
    /// compared).
    public var frames: [Frame]
    /// The thread's scheduler state.
    public var state: ThreadState
    /// The syscall the thread was in, if any.
    public var syscall: Int32?
    /// The kernel's wait channel, if any.
    public var wchan: String?
    /// The annotation open on the loop thread, if any.
    public var annotation: Annotation?
    /// What the thread waited on, if known.
    public var wait: WaitFact?
    /// The thread's kernel counters since the previous sample, if read.
    public var countersDelta: KernelCounters?

    /// The input of `sample`.
    public init(_ sample: Sample) {
        self.init(
            frames: sample.frames, state: sample.state, syscall: sample.syscall, wchan: sample.wchan,
            annotation: sample.annotation, wait: sample.wait, countersDelta: sample.countersDelta)
    }

    /// The input made of its fields (a decoded trace's sample table reads them off its rows).
    package init(
        frames: [Frame], state: ThreadState, syscall: Int32?, wchan: String?, annotation: Annotation?, wait: WaitFact?,
        countersDelta: KernelCounters?
    ) {
        self.frames = frames
        self.state = state
        self.syscall = syscall
        self.wchan = wchan
        self.annotation = annotation
        self.wait = wait
        self.countersDelta = countersDelta
    }

    /// Equal when every field is, frames compared by symbol and module (what the classifier
    /// reads of them), not by address or line.
    public static func == (a: ClassifierInput, b: ClassifierInput) -> Bool {
        a.state == b.state && a.syscall == b.syscall && a.wchan == b.wchan && a.annotation == b.annotation
            && a.wait == b.wait && a.countersDelta == b.countersDelta && a.frames.count == b.frames.count
            && zip(a.frames, b.frames).allSatisfy { $0.symbol == $1.symbol && $0.module == $1.module }
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(state)
        hasher.combine(syscall)
        hasher.combine(wchan)
        hasher.combine(annotation)
        hasher.combine(wait)
        hasher.combine(countersDelta)
        hasher.combine(frames.count)
        for frame in frames {
            hasher.combine(frame.symbol)
            hasher.combine(frame.module)
        }
    }
}
