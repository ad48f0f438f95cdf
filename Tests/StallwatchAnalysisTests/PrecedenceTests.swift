// An annotation's category beats stack rules, which beat kernel-state rules; first match wins.

import Testing

@testable import StallwatchAnalysis
@testable import StallwatchCore

@Suite struct PrecedenceTests {
    let classifier = Classifier()

    @Test func annotationCategoryBeatsTheStack() {
        var sample = Fixture.sqliteQuery
        sample.annotation = Annotation(label: "feed.thumbnails", category: .compute)
        #expect(
            classifier.classify(sample)
                == Classification(category: .compute, reason: "feed.thumbnails", ruleName: "annotation"))
    }

    @Test func annotationCategoryBeatsTheKernelState() {
        var sample = Fixture.fsyncTimedOut
        sample.annotation = Annotation(label: "prefs.save", category: .database)
        #expect(classifier.classify(sample).category == .database)
    }

    @Test func annotationWithoutCategoryDoesNotDecide() {
        var sample = Fixture.pipeRead
        sample.annotation = Annotation(label: "import")
        #expect(classifier.classify(sample) == classifier.classify(Fixture.pipeRead))
    }

    @Test func sqliteBusyWaitInClockNanosleepIsDatabase() {
        let verdict = classifier.classify(Fixture.sqliteBusy)
        #expect(verdict.category == .database)
        #expect(verdict.reason == "sqlite3_step")
    }

    @Test func lockInsideSQLiteIsDatabase() {
        let sample = Sample(
            time: 0,
            frames: stack(
                frame("__lll_lock_wait", in: Lib.libc),
                frame("pthread_mutex_lock", in: Lib.libc),
                frame("sqlite3_mutex_enter", in: Lib.sqlite),
                frame("sqlite3_prepare_v2", in: Lib.sqlite)),
            state: .sleeping, syscall: 202)
        #expect(
            classifier.classify(sample)
                == Classification(
                    category: .database, reason: "sqlite3_prepare_v2", ruleName: "sqlite-module",
                    frameIndex: 3))
    }

    @Test func lockFramesBeatARunningState() {
        var sample = Fixture.nsLock
        sample.state = .running  // spinning in the adaptive mutex before sleeping
        sample.syscall = nil
        #expect(classifier.classify(sample).category == .lockWait)
    }

    @Test func writeWrapperOnTopBeatsARunningState() {
        let verdict = classifier.classify(Fixture.writeRunning)
        #expect(
            verdict
                == Classification(
                    category: .io, reason: "write", ruleName: "io-wrapper-frame", frameIndex: 0))
    }

    @Test func glibcInternalWrapperNamesGiveTheSyscallName() {
        for (symbol, reason) in [
            ("__libc_pwrite", "pwrite64"), ("__GI___libc_write", "write"), ("__libc_pread64", "pread64"),
            ("fsync@@GLIBC_2.2.5", "fsync"), ("__open64_nocancel", "open"), ("__fstatat64", "newfstatat"),
        ] {
            let sample = Sample(time: 0, frames: stack(frame(symbol, in: Lib.libc)), state: .running)
            #expect(
                classifier.classify(sample)
                    == Classification(
                        category: .io, reason: reason, ruleName: "io-wrapper-frame", frameIndex: 0), "\(symbol)"
            )
        }
    }

    @Test func wrapperDeepInTheStackDoesNotBeatARunningState() {
        // A `write` frame five frames down is not where the thread is now.
        let frames = stack(
            frame("FeedApp.Hasher.round() -> ()", in: Lib.app),
            frame("FeedApp.Hasher.update() -> ()", in: Lib.app),
            frame("FeedApp.Hasher.finish() -> ()", in: Lib.app),
            frame("FeedApp.Hasher.digest() -> ()", in: Lib.app),
            frame("write", in: Lib.libc))
        let verdict = classifier.classify(Sample(time: 0, frames: frames, state: .running))
        #expect(verdict.category == .compute)
        #expect(verdict.reason == "FeedApp.Hasher.round()")
    }

    @Test func syscallNumberBeatsTheWrapperFrame() {
        // The kernel's syscall is the truth when the thread sleeps in one.
        let sample = Sample(
            time: 0, frames: stack(frame("write", in: Lib.libc)), state: .sleeping, syscall: 1,
            wchan: "pipe_write")
        #expect(classifier.classify(sample).ruleName == "io-syscall")
    }

    @Test func idleWaitBeatsEverythingBelowIt() {
        var sample = Fixture.nestedIdle
        sample.frames += [frame("sqlite3_step", in: Lib.sqlite)]
        #expect(classifier.classify(sample).reason == "idle")
    }

    @Test func rulesFromCodeKeepTheirOrderWithinALevel() {
        let first = ClassificationRule(
            name: "first", category: .io, match: RuleMatch(symbolPrefix: ["FeedApp."]))
        let second = ClassificationRule(
            name: "second", category: .compute, match: RuleMatch(symbolPrefix: ["FeedApp.Logger"]))
        let stateRule = ClassificationRule(
            name: "state", category: .other, match: RuleMatch(state: [.running]))
        #expect(stateRule.level == .state)
        #expect(first.level == .stack)
        let classifier = Classifier(rules: [stateRule, first, second])
        #expect(classifier.classify(Fixture.writeRunning).ruleName == "first")
        #expect(Classifier(rules: [second, first]).classify(Fixture.writeRunning).ruleName == "second")
    }
}
