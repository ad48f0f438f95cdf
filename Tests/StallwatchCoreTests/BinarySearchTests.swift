// The shared binary search finds the first element of the second partition: the same answer
// as a linear scan, for every split of every small table and on slices.

import Testing

@testable import StallwatchCore

@Suite struct BinarySearchTests {
    @Test func agreesWithALinearScanOnEverySplit() {
        for count in 0...17 {
            let sorted = Array(0..<count).map { $0 * 2 }
            for probe in -1...(count * 2 + 1) {
                let expected = sorted.firstIndex { $0 > probe } ?? sorted.endIndex
                #expect(sorted.partitioningIndex { $0 > probe } == expected, "count \(count), probe \(probe)")
            }
        }
    }

    @Test func duplicatesSplitAfterTheLastEqualElement() {
        let table = [1, 3, 3, 3, 5]
        #expect(table.partitioningIndex { $0 > 3 } == 4)
        #expect(table.partitioningIndex { $0 >= 3 } == 1)
    }

    @Test func slicesAndRangesKeepTheirOwnIndices() {
        let slice = [10, 20, 30, 40, 50][2...]
        #expect(slice.partitioningIndex { $0 > 35 } == 3)
        #expect(slice.partitioningIndex { _ in false } == slice.endIndex)
        #expect((100..<200).partitioningIndex { $0 * $0 > 12_345 } == 112)
    }
}
