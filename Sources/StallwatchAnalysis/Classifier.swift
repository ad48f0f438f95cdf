import StallwatchCore

/// The verdict on one sample: what the main thread was doing, and why the classifier thinks so.
///
/// A plain value; use it on any thread.
public struct Classification: Sendable, Hashable, Codable {
    /// The category.
    public var category: StallCategory
    /// What in particular: a syscall (`fsync`), a function (`pthread_mutex_lock`,
    /// `sqlite3_step`, the app function computing), an annotation label, `idle`…
    public var reason: String
    /// The rule that decided: a rule's name, `annotation`, or `fallback`.
    public var ruleName: String
    /// The index in `Sample.frames` of the frame the reason names, if one does.
    public var frameIndex: Int?

    /// Creates a classification.
    public init(category: StallCategory, reason: String, ruleName: String, frameIndex: Int? = nil) {
        self.category = category
        self.reason = reason
        self.ruleName = ruleName
        self.frameIndex = frameIndex
    }

    /// The `ruleName` of classifications decided by an annotation's category.
    public static let annotationRuleName = "annotation"
    /// The `ruleName` of classifications no rule decided (category `other`).
    public static let fallbackRuleName = "fallback"
}

/// Answers "what was the main thread doing?" for samples and stalls.
///
/// Precedence: (1) an annotation with a category; (2) `stack` rules; (3) `state` rules;
/// otherwise `other`, with the syscall, wait channel or state as reason. Within a level,
/// rules are tried in the order given, first match wins. `init(rulesFile:)` puts the
/// file's rules before the built-in ones, so user rules win within their level.
///
/// Immutable once made: share one instance and call it from any thread, live (off the
/// loop thread) or offline.
public struct Classifier: Sendable {
    /// The rules, in the order given.
    public let rules: [ClassificationRule]
    private let stackRules: [CompiledRule]
    private let stateRules: [CompiledRule]
    private let frameMatcher: FrameMatcher
    private let frameCache = FrameCache()

    /// A classifier with `rules` (the built-in rules by default). Rules made in code must be
    /// valid (known syscall names); that is checked with a precondition.
    public init(rules: [ClassificationRule] = Classifier.builtinRules) {
        self.rules = rules
        let compiled = rules.enumerated().map { CompiledRule($1, id: $0) }
        stackRules = compiled.filter { rules[$0.id].level == .stack }
        stateRules = compiled.filter { rules[$0.id].level == .state }
        frameMatcher = FrameMatcher(rules)
    }

    /// A classifier with the rules of the file at `path` followed by the built-in rules.
    /// Throws a `RulesFileError` naming the file, rule index and field when the file is
    /// unreadable or invalid.
    public init(rulesFile path: String) throws(RulesFileError) {
        self.init(rules: try Classifier.loadRules(fromFile: path) + Classifier.builtinRules)
    }

    /// The rules of the file at `path` (without the built-in ones).
    public static func loadRules(fromFile path: String) throws(RulesFileError)
        -> [ClassificationRule]
    {
        try RulesFile.load(path: path)
    }

    /// Decodes rules from rules-file JSON; `source` names the input in errors. The tests' way in
    /// (apps load a file with `loadRules(fromFile:)`).
    package static func decodeRules(json: String, source: String) throws(RulesFileError)
        -> [ClassificationRule]
    {
        try RulesFile.decode(json: json, source: source)
    }

    /// Classifies one sample. Any thread.
    public func classify(_ sample: Sample) -> Classification {
        classify(ClassifierInput(sample))
    }

    /// Classifies what a sample comes to for the classifier: the verdict depends on `sample`
    /// alone. Any thread.
    public func classify(_ sample: ClassifierInput) -> Classification {
        if let annotation = sample.annotation, let category = annotation.category {
            return Classification(
                category: category, reason: annotation.label,
                ruleName: Classification.annotationRuleName)
        }
        let analyzed = frameCache.analyze(sample.frames, with: frameMatcher)
        let hits = frameMatcher.hits(analyzed)
        for rule in stackRules {
            if let hit = rule.match(sample, hits) { return verdict(rule, hit, sample, analyzed) }
        }
        for rule in stateRules {
            if let hit = rule.match(sample, hits) { return verdict(rule, hit, sample, analyzed) }
        }
        return Classification(
            category: .other, reason: Classifier.kernelReason(sample),
            ruleName: Classification.fallbackRuleName)
    }

    /// Classifies each sample, in order.
    public func classify(_ samples: [Sample]) -> [Classification] {
        samples.map(classify)
    }

    private func verdict(
        _ rule: CompiledRule, _ hit: CompiledRule.Hit, _ sample: ClassifierInput,
        _ frames: [FrameMatcher.AnalyzedFrame]
    ) -> Classification {
        func named(_ index: Int?) -> Classification? {
            guard let index else { return nil }
            let view = frames[index].view
            let reason =
                rule.reason ?? view.reasonName ?? view.moduleName.map(String.init) ?? rule.name
            return Classification(
                category: rule.category, reason: reason, ruleName: rule.name, frameIndex: index)
        }
        if rule.reasonFrom == .matchInnermost, let result = named(hit.innermost) { return result }
        if rule.reasonFrom == .matchOutermost, let result = named(hit.outermost) { return result }
        if rule.reasonFrom == .appFrame, rule.reason == nil {
            let app = frames.indices.first { frames[$0].view.hasSymbol && !frames[$0].view.isSystem }
            if let result = named(app ?? frames.indices.first { frames[$0].view.hasSymbol }) {
                return result
            }
        }
        if rule.reasonFrom == .wait, rule.reason == nil, let wait = sample.wait {
            return Classification(
                category: rule.category, reason: wait.operation ?? wait.kind.name, ruleName: rule.name)
        }
        return Classification(
            category: rule.category, reason: rule.reason ?? Classifier.kernelReason(sample),
            ruleName: rule.name)
    }

    /// The syscall name, else the wait channel, else the state name.
    static func kernelReason(_ sample: ClassifierInput) -> String {
        sample.syscall.flatMap(SyscallTable.name(for:)) ?? sample.wchan ?? sample.state.name
    }
}
