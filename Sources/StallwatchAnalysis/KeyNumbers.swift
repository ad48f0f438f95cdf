import StallwatchCore

/// Distinct keys numbered in the order first seen. The key asked for last, and any key while
/// there are only a few, is found by comparing instead of hashing: keys mostly come in runs or
/// from a small set (a trace's samples repeat a stack, a fleet's stalls repeat a handful of
/// signatures), and equal keys that share storage compare at once.
///
/// A plain value; one thread at a time.
///
/// For the package's modules only, as SPI (`@_spi(StallwatchPackage) import StallwatchAnalysis`):
/// public and inlinable so the report's analysis gets it specialised for its key types. With
/// `package` access it is not: without library evolution and package CMO the compiler does not
/// serialise a package declaration's inlinable body, and every lookup calls the generic code.
@_spi(StallwatchPackage) public struct KeyNumbers<Key: Hashable> {
    @usableFromInline var storedKeys: [Key] = []
    @usableFromInline var numbers: [Key: Int] = [:]
    @usableFromInline var last = -1

    /// No keys.
    @inlinable public init() {}

    /// Up to how many keys a key is looked for by comparing it with each.
    @usableFromInline static var compared: Int { 8 }

    /// The keys, by number.
    @inlinable public var keys: [Key] { storedKeys }

    /// The number of `key`, the next number if it is new.
    @inlinable public mutating func number(of key: Key) -> Int {
        if last >= 0 && storedKeys[last] == key { return last }
        if storedKeys.count <= Self.compared {
            for index in storedKeys.indices where storedKeys[index] == key {
                last = index
                return index
            }
            last = storedKeys.count
            storedKeys.append(key)
            // Hashed only once there are more keys than are compared.
            if storedKeys.count > Self.compared {
                for index in storedKeys.indices { numbers[storedKeys[index]] = index }
            }
            return last
        }
        if let known = numbers[key] {
            last = known
            return known
        }
        last = storedKeys.count
        numbers[key] = last
        storedKeys.append(key)
        return last
    }
}

extension KeyNumbers: Sendable where Key: Sendable {}
