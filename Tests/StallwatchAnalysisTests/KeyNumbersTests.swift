// Keys are numbered in the order first seen, whether asked for again at once (found by
// comparing) or later (found by hashing), and equal keys that do not share storage get the
// same number.
@_spi(StallwatchPackage) import StallwatchAnalysis
import Testing

@testable import StallwatchCore

@Suite struct KeyNumbersTests {
    @Test func keysAreNumberedInTheOrderFirstSeenHoweverTheyAreFound() {
        var numbers = KeyNumbers<[String]>()
        let parse = ["Parser.parse()", "main()"]
        let save = ["Store.save()", "main()"]
        #expect(numbers.number(of: parse) == 0)
        #expect(numbers.number(of: parse) == 0, "the key asked for last")
        #expect(numbers.number(of: save) == 1)
        #expect(numbers.number(of: ["Parser" + ".parse()", "main()"]) == 0, "an equal key in other storage")
        #expect(numbers.number(of: save) == 1)
        #expect(numbers.number(of: []) == 2)
        #expect(numbers.keys == [parse, save, []])
    }

    @Test func manyKeysAreNumberedTheSameWayAsAFew() {
        var numbers = KeyNumbers<[UInt64]>()
        let keys = (0..<40).map { [UInt64($0), 7] }
        // Each key twice (in other storage the second time), interleaved with the first key.
        for key in keys {
            _ = numbers.number(of: key)
            #expect(numbers.number(of: keys[0]) == 0)
        }
        for (index, key) in keys.enumerated().reversed() { #expect(numbers.number(of: key.map { $0 }) == index) }
        #expect(numbers.keys == keys)
    }
}
