@_spi(StallwatchPackage) import StallwatchAnalysis
import StallwatchCore

/// Values by key, in the order their keys were first added (`KeyNumbers`: the key asked for
/// last is found without hashing). What the tallies count into.
///
/// A plain value; one thread at a time.
struct TallyTable<Key: Hashable, Value> {
    private var numbers = KeyNumbers<Key>()
    /// `values[i]` is `keys[i]`'s.
    var values: [Value] = []

    /// The keys, in the order first added.
    var keys: [Key] { numbers.keys }

    /// Where `key`'s value is in `values`, adding `make()` for a new key.
    mutating func slot(_ key: Key, _ make: () -> Value) -> Int {
        let number = numbers.number(of: key)
        if number == values.count { values.append(make()) }
        return number
    }
}

extension TallyTable: Sendable where Key: Sendable, Value: Sendable {}

extension TallyTable where Value: AdditiveArithmetic {
    /// Adds `amount` to `key`'s value (zero for a new key).
    mutating func add(_ amount: Value, to key: Key) {
        values[slot(key) { .zero }] += amount
    }

    /// Adds every value of `other` to its key's.
    mutating func add(_ other: TallyTable) {
        for index in other.keys.indices { add(other.values[index], to: other.keys[index]) }
    }

    /// The values by key.
    var dictionary: [Key: Value] {
        Dictionary(uniqueKeysWithValues: zip(keys, values))
    }
}
