/// Values by key, in the order their keys were first added, that finds the key it was last
/// asked for by comparing instead of hashing. What the tallies count into: a trace's stalls
/// mostly repeat a few signatures and call sites in a row, and their keys share storage (equal
/// strings and arrays made once per stack or site compare at once).
///
/// A plain value; one thread at a time.
struct TallyTable<Key: Hashable, Value> {
    /// The keys, in the order first added; `values[i]` is `keys[i]`'s.
    private(set) var keys: [Key] = []
    var values: [Value] = []
    private var slots: [Key: Int] = [:]
    private var last = -1

    /// Where `key`'s value is in `values`, adding `make()` for a new key.
    mutating func slot(_ key: Key, _ make: () -> Value) -> Int {
        if last >= 0 && keys[last] == key { return last }
        if let known = slots[key] {
            last = known
            return known
        }
        last = keys.count
        slots[key] = last
        keys.append(key)
        values.append(make())
        return last
    }

    /// Whether nothing was added.
    var isEmpty: Bool { keys.isEmpty }
}

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

extension TallyTable: Sendable where Key: Sendable, Value: Sendable {}
