extension Duration {
    /// The duration in whole nanoseconds, for the `UInt64` nanosecond clocks and budgets of
    /// the runtime and the trace reader: a negative duration is 0, sub-nanosecond parts are
    /// dropped, and a duration beyond `UInt64.max` nanoseconds (585 years) saturates.
    ///
    /// Pure; use it on any thread.
    package var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        // Both parts carry the sign: -500 ms is (0 s, -5e17 as): negative in either part is 0.
        guard seconds >= 0, attoseconds >= 0 else { return 0 }
        let (whole, overflow) = UInt64(seconds).multipliedReportingOverflow(by: 1_000_000_000)
        let (total, carry) = whole.addingReportingOverflow(UInt64(attoseconds / 1_000_000_000))
        return overflow || carry ? .max : total
    }
}
