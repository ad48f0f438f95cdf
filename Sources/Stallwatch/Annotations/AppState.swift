import StallwatchCore
import Synchronization

/// What the app is doing, as a few keys and values (`"screen"` = `"Feed"`, `"scrolling"` =
/// `"true"`), like AndroidX JankStats' `PerformanceMetricsState`: every stall records the values
/// current when it was detected (`Stall.context`), traces keep them, and `stallwatch report --by
/// KEY` groups stalls by one. Set and clear from any thread; a set is one uncontended lock and a
/// dictionary store, and the watchdog reads the state only when it detects a stall.
public enum AppState {
    private static let values = Mutex<[String: String]>([:])

    /// Sets `key` to `value`, or removes it when `value` is nil. Any thread.
    public static func set(_ key: String, _ value: String?) {
        values.withLock { $0[key] = value }
    }

    /// Removes every key. Any thread.
    public static func clear() {
        values.withLock { $0.removeAll() }
    }

    /// The current keys and values. Any thread.
    public static var current: [String: String] { values.withLock { $0 } }
}
