extension UInt64 {
    /// `self + other`, or `UInt64.max` if the sum would pass it. For a deadline on the
    /// nanosecond clock (`sw_monotonic_ns() + duration.nanoseconds`, where a `Duration` past
    /// 585 years is already `UInt64.max`): a wrapped sum is a deadline in the past, due at
    /// once, while `UInt64.max` is one no timer reaches, so "never". Pure; any thread.
    package func saturatingAdding(_ other: UInt64) -> UInt64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }

    /// `self × other`, or `UInt64.max` if the product would pass it (a grid point past the
    /// clock's range: never). Pure; any thread.
    package func saturatingMultiplied(by other: UInt64) -> UInt64 {
        let (product, overflow) = multipliedReportingOverflow(by: other)
        return overflow ? .max : product
    }
}
