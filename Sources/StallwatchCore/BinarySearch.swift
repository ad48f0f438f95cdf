// The package's one binary search. Every sorted table (memory mappings, images, compile-unit
// ranges, line-table rows) is searched through it, so the loop invariant is written once.

extension RandomAccessCollection {
    /// The first index whose element satisfies `belongsInSecondPartition`, or `endIndex` if
    /// none does. The collection must be partitioned by the predicate: every element for
    /// which it is false comes before every element for which it is true (as in a table
    /// sorted by a key and the predicate `key > x`). O(log n) calls of the predicate.
    ///
    /// Pure; call it on any thread the collection may be used on.
    @inlinable
    package func partitioningIndex(where belongsInSecondPartition: (Element) throws -> Bool) rethrows -> Index {
        var low = startIndex
        var count = self.count
        while count > 0 {
            let half = count / 2
            let middle = index(low, offsetBy: half)
            if try belongsInSecondPartition(self[middle]) {
                count = half
            } else {
                low = index(after: middle)
                count -= half + 1
            }
        }
        return low
    }
}
