// A program that never heard of Stallwatch: Foundation's RunLoop.main with Timers. One timer
// handler waits 60 ms for a lock a background thread holds (a lock-wait stall); then the loop
// idles for a second and the program counts how often its main thread woke meanwhile. Watch
// it unmodified with
//   stallwatch record -o runloop.swtrace -- .build/debug/RunLoopApp
// Flags: --stall-ms N (60), --idle-s S (1).
import Foundation

let arguments = CommandLine.arguments
func value(_ flag: String, _ fallback: Double) -> Double {
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return fallback }
    return Double(arguments[index + 1]) ?? fallback
}
let stallMilliseconds = value("--stall-ms", 60)
let idleSeconds = value("--idle-s", 1)

func now() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

func wakeups() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/task/\(getpid())/status", encoding: .utf8) else {
        return -1
    }
    let line = status.split(separator: "\n").first { $0.hasPrefix("voluntary_ctxt_switches:") }
    return line.flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? -1
}

let settingsLock = NSLock()

/// The culprit: the timer handler needs the settings a background save holds locked.
@inline(never) func readSettingsUnderLock() {
    settingsLock.lock()
    settingsLock.unlock()
}

func scheduleOnce(after seconds: Double, _ body: @escaping @Sendable () -> Void) {
    let timer = Timer(fire: Date(timeIntervalSinceNow: seconds), interval: 0, repeats: false) { _ in body() }
    RunLoop.main.add(timer, forMode: .default)
}

nonisolated(unsafe) var ticks = 0
RunLoop.main.add(
    Timer(timeInterval: 0.05, repeats: true) { timer in
        ticks += 1
        if ticks < 6 { return }
        timer.invalidate()
        // A background save takes the lock just before the handler needs it.
        let held = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            settingsLock.lock()
            held.signal()
            usleep(useconds_t(stallMilliseconds * 1000))
            settingsLock.unlock()
        }
        held.wait()
        let start = now()
        readSettingsUnderLock()
        print(String(format: "stalled %.1f ms", (now() - start) * 1000))
        scheduleOnce(after: 0.3) {
            let before = wakeups()
            let idleStart = now()
            scheduleOnce(after: idleSeconds) {
                let woke = wakeups() - before
                print(String(format: "idle %.2f s: main thread woke %d times", now() - idleStart, woke))
                exit(0)
            }
        }
    }, forMode: .default)
print("started")
RunLoop.main.run()
