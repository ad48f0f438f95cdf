// Keys are numbered in the order first seen, whether asked for again at once (found by
// comparing) or later (found by hashing), and equal keys that do not share storage get the
// same number.
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
}
