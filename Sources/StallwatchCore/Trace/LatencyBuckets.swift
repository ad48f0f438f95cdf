/// The log-linear buckets of a loop-latency histogram, in the style of HdrHistogram: values
/// are whole microseconds (anything under 1 µs counts as 0 µs); 0–15 µs get a bucket each,
/// then every power of two is split into 16 equal buckets, so a bucket is never wider than
/// 1/16 of its lower bound (6.25 % precision).
///
/// Pure functions; use them on any thread. A recorder keeps `count` dense counters and writes
/// the non-empty ones.
public enum LatencyBuckets {
    /// One non-empty bucket of a histogram.
    public struct Bucket: Sendable, Hashable {
        /// The bucket's index (`index(forNanoseconds:)`).
        public var index: UInt16
        /// How many values fell in it.
        public var count: UInt64

        /// Creates a bucket.
        public init(index: UInt16, count: UInt64) {
            self.index = index
            self.count = count
        }
    }

    static let subBucketBits = 4
    static let subBucketCount = 1 << subBucketBits

    /// The number of buckets; indices are `0..<count`. Covers every `UInt64` nanosecond value.
    public static let count: Int = index(forNanoseconds: .max) + 1

    /// The bucket holding a latency of `nanoseconds`.
    @inlinable
    public static func index(forNanoseconds nanoseconds: UInt64) -> Int {
        let micros = nanoseconds / 1_000
        if micros < 16 { return Int(micros) }
        let magnitude = 63 - micros.leadingZeroBitCount  // floor(log2(micros)), at least 4
        let shift = magnitude - 4
        return ((shift + 1) << 4) + Int((micros >> UInt64(shift)) & 15)
    }

    /// The smallest latency, in nanoseconds, that falls in bucket `index`.
    public static func lowerBoundNanoseconds(ofBucket index: Int) -> UInt64 {
        require(index >= 0 && index < count, "bucket index out of range")
        if index < subBucketCount { return UInt64(index) * 1_000 }
        let shift = (index >> subBucketBits) - 1
        let micros = UInt64(subBucketCount + (index & (subBucketCount - 1))) << UInt64(shift)
        return micros * 1_000
    }

    /// The non-empty buckets of dense counters (`counts[i]` is bucket `i`).
    public static func sparse(_ counts: some Collection<UInt64>) -> [Bucket] {
        var result: [Bucket] = []
        for (index, count) in counts.enumerated() where count > 0 && index < Self.count {
            result.append(Bucket(index: UInt16(index), count: count))
        }
        return result
    }
}
