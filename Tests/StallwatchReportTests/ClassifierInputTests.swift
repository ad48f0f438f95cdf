// The verdict caches key on what the classifier reads: `ClassifierInput`. The report's
// table-local key (`RowKey`: a row's numbered fields and kernel facts) stands for it, so a
// field added to the input must be added to it.
import StallwatchAnalysis
import StallwatchCore
import Testing

@testable import StallwatchReport

@Suite struct ClassifierInputTests {
    @Test func theInputIsWhatTheTraceLocalKeysCover() {
        let input = ClassifierInput(Sample(time: 1, frames: [], state: .running))
        // A new field here: add it to `RowKey` (SampleRuns.swift) and `SampleTable.input`.
        #expect(
            Mirror(reflecting: input).children.map(\.label)
                == ["frames", "state", "syscall", "wchan", "annotation", "wait", "countersDelta"])
    }

    @Test func framesCountByFunctionNotByAddress() {
        let here = Frame(address: 0x1000, symbol: "App.parse()", module: "/opt/App")
        let there = Frame(address: 0x9000, symbol: "App.parse()", module: "/opt/App")
        let other = Frame(address: 0x1000, symbol: "App.save()", module: "/opt/App")
        let a = ClassifierInput(Sample(time: 1, frames: [here], state: .running))
        let b = ClassifierInput(Sample(time: 2, frames: [there], state: .running))
        let c = ClassifierInput(Sample(time: 1, frames: [other], state: .running))
        #expect(a == b && a.hashValue == b.hashValue)
        #expect(a != c)
        var sleeping = a
        sleeping.state = .sleeping
        #expect(a != sleeping)
        let classifier = Classifier()
        #expect(classifier.classify(a) == classifier.classify(Sample(time: 1, frames: [here], state: .running)))
    }

    @Test func portableSamplesDifferWhereTheInputDoes() {
        let input = ClassifierInput(Sample(time: 1, frames: [], state: .diskSleep, syscall: 74))
        var other = input
        other.wchan = "folio_wait_bit"
        #expect(PortableSample(input, stack: 3) != PortableSample(other, stack: 3))
        #expect(PortableSample(input, stack: 3) != PortableSample(input, stack: 4))
        #expect(PortableSample(input, stack: 3) == PortableSample(input, stack: 3))
    }
}
