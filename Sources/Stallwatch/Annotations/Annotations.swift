import CStallwatchShims
import Glibc
import StallwatchCore
import Synchronization

/// Runs `body` inside a named scope that stall samples record (the innermost scope of the
/// loop thread at the moment of each sample), like JankStats' UI states. A `category`, if
/// given, is what the classifier reports for samples taken inside the scope, before looking
/// at the stack or the kernel state. Scopes nest. On a thread without a running `MainLoop`
/// the scope is free: it just runs `body`. Any thread.
@inlinable
public func annotate<T, E: Error>(
    _ label: StaticString, category: StallCategory? = nil, _ body: () throws(E) -> T
) throws(E) -> T {
    let token = enterScope(label, category, expected: false)
    defer { leaveScope(token) }
    return try body()
}

/// Opens a scope on the calling thread's loop (`annotate`, `expectLong`): its token, 0 on a
/// thread without one. Not generic, so that the inlinable scopes specialise in the caller's
/// module around one call in and one call out. Any thread.
@usableFromInline
func enterScope(_ label: StaticString, _ category: StallCategory?, expected: Bool) -> UInt64 {
    AnnotationScopes.current?.push(label, category, expected: expected) ?? 0
}

/// Closes the scope `enterScope` opened (nothing for token 0), on the thread that opened it.
@usableFromInline
func leaveScope(_ token: UInt64) {
    guard token != 0 else { return }
    AnnotationScopes.current?.pop(token)
}

/// The async form of `annotate` for main-actor code. Suspended scopes stay published: work
/// that runs on the main thread while the body awaits is attributed to the scope too.
@MainActor
public func annotate<T>(
    _ label: StaticString, category: StallCategory? = nil, _ body: @MainActor () async throws -> T
) async rethrows -> T {
    guard let scopes = AnnotationScopes.current else { return try await body() }
    let token = scopes.push(label, category)
    defer { scopes.pop(token) }
    return try await body()
}

/// Runs `body` as work that is long on purpose (a splash-screen load, a modal export), like
/// Chromium's `HangWatcher::InvalidateActiveExpectations` or Sentry's pause: a stall of the
/// loop thread while it runs is still recorded, with `label` as its `Stall.expected` reason,
/// but reports count it apart and no `stallwatch gate` limit counts it (unless
/// `--include-expected`). It is an annotation scope too (samples show `label`). On a thread
/// without a running `MainLoop` or a watched executor it just runs `body`. Any thread.
@inlinable
public func expectLong<T, E: Error>(_ label: StaticString, _ body: () throws(E) -> T) throws(E) -> T {
    let token = enterScope(label, nil, expected: true)
    defer { leaveScope(token) }
    return try body()
}

/// The annotation scopes of one loop thread: a stack owned by that thread, and its innermost
/// entry (and its outermost expected-long one) published with atomic stores for the watchdog.
final class AnnotationScopes: @unchecked Sendable {
    // The loop thread alone touches these (the watchdog reads only the atomics below), so the
    // runtime's per-access exclusivity checks are left out: they were most of a scope's cost.
    @exclusivity(unchecked) private var entries: [(token: UInt64, label: UInt64, category: UInt8, expected: Bool)] =
        []
    @exclusivity(unchecked) private var nextToken: UInt64 = 0
    /// Packed `StaticString` of the innermost scope, 0 when none.
    let label = Atomic<UInt64>(0)
    /// 0 when none, else 1 + the index of the category in `StallCategory.allCases`.
    let category = Atomic<UInt8>(0)
    /// Packed `StaticString` of the outermost `expectLong` scope, 0 when none.
    private let expected = Atomic<UInt64>(0)
    /// When that scope began (`sw_cycles`), 0 when none.
    private let expectedSince = Atomic<UInt64>(0)
    /// The last outermost `expectLong` scope that ended: its packed label, start and end (`sw_cycles`).
    private let closedLabel = Atomic<UInt64>(0)
    private let closedSince = Atomic<UInt64>(0)
    private let closedUntil = Atomic<UInt64>(0)
    /// Guards the five values above for `expectedSpans()`: odd while the loop thread writes
    /// them, so a reader that sees it unchanged and even around its reads has a consistent copy.
    private let spanVersion = Atomic<UInt64>(0)
    /// The SQL statement a registered SQLite connection runs on this thread (`SQLiteStatements`).
    let statement = StatementSlot()

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    /// The scopes of the calling thread's loop, if a loop runs on it.
    static var current: AnnotationScopes? {
        pthread_getspecific(key).map { Unmanaged<AnnotationScopes>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Loop thread: makes these the calling thread's scopes (the loop keeps them alive).
    func bindToCurrentThread() {
        pthread_setspecific(Self.key, Unmanaged.passUnretained(self).toOpaque())
    }

    func push(_ label: StaticString, _ category: StallCategory?, expected: Bool = false) -> UInt64 {
        nextToken += 1
        let code = category.map { UInt8($0.ordinal + 1) } ?? 0
        let packed = CalloutSite.pack(label)
        entries.append((nextToken, packed, code, expected))
        publish(expectedChanged: expected)
        return nextToken
    }

    func pop(_ token: UInt64) {
        // By token, not by position: async scopes on the main actor may end out of order.
        var removedExpected = false
        if entries.last?.token == token {
            removedExpected = entries.removeLast().expected
        } else if let index = entries.lastIndex(where: { $0.token == token }) {
            removedExpected = entries.remove(at: index).expected
        }
        publish(expectedChanged: removedExpected)
    }

    /// Publishes the innermost scope, and the outermost expected-long one with its start when
    /// an expected-long scope came or went (the only way it changes); the one it replaces is
    /// published as the last that ended. Its times are cycle stamps, as the loop's callouts'
    /// (a third of `clock_gettime`'s cost); `annotate` scopes read no clock.
    private func publish(expectedChanged: Bool) {
        let innermost = entries.last
        label.store(innermost?.label ?? 0, ordering: .relaxed)
        category.store(innermost?.category ?? 0, ordering: .relaxed)
        guard expectedChanged else { return }
        let outermost = entries.first { $0.expected }?.label ?? 0
        let previous = expected.load(ordering: .relaxed)
        guard outermost != previous else { return }
        let now = sw_cycles()
        let version = spanVersion.load(ordering: .relaxed)
        spanVersion.store(version &+ 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        if previous != 0 {
            closedLabel.store(previous, ordering: .relaxed)
            closedSince.store(expectedSince.load(ordering: .relaxed), ordering: .relaxed)
            closedUntil.store(now, ordering: .relaxed)
        }
        expected.store(outermost, ordering: .relaxed)
        expectedSince.store(outermost == 0 ? 0 : now, ordering: .relaxed)
        spanVersion.store(version &+ 2, ordering: .releasing)
    }

    /// An expected-long scope's time: its packed label, and when it began and ended (for one
    /// still open, `until` is when it was seen open).
    struct ExpectedSpan: Equatable {
        var label: UInt64
        var since: UInt64
        var until: UInt64

        /// The scope's label. Watchdog thread.
        var name: String? { CalloutSite.unpack(label) }
    }

    /// Watchdog thread: the outermost expected-long scope the thread is in now (`until` is
    /// `now`), and the last one that ended, in CLOCK_MONOTONIC nanoseconds; nil if the loop
    /// thread kept changing them while they were read (this look learns nothing then).
    func expectedSpans(now: UInt64) -> (open: ExpectedSpan?, closed: ExpectedSpan?)? {
        for _ in 0..<4 {
            let before = spanVersion.load(ordering: .acquiring)
            guard before & 1 == 0 else { continue }
            let open = ExpectedSpan(
                label: expected.load(ordering: .relaxed), since: expectedSince.load(ordering: .relaxed), until: now)
            let closed = ExpectedSpan(
                label: closedLabel.load(ordering: .relaxed), since: closedSince.load(ordering: .relaxed),
                until: closedUntil.load(ordering: .relaxed))
            atomicMemoryFence(ordering: .acquiring)
            guard spanVersion.load(ordering: .relaxed) == before else { continue }
            guard open.label != 0 || closed.label != 0 else { return (nil, nil) }
            let time = Timebase.shared.converter()
            func converted(_ span: ExpectedSpan, until: UInt64) -> ExpectedSpan? {
                span.label == 0 ? nil : ExpectedSpan(label: span.label, since: time.nanos(span.since), until: until)
            }
            return (converted(open, until: now), converted(closed, until: time.nanos(closed.until)))
        }
        return nil
    }

    /// Watchdog thread: the innermost scope now.
    func innermost() -> Annotation? {
        let packed = label.load(ordering: .relaxed)
        guard let name = CalloutSite.unpack(packed) else { return nil }
        let code = Int(category.load(ordering: .relaxed))
        return Annotation(label: name, category: code == 0 ? nil : StallCategory.allCases[code - 1])
    }
}
