// The README's "use the run loop in an app" example, kept compiling and runnable:
// swift run HelloLoop
import Dispatch
import Stallwatch

let loop = MainLoop.main  // bound to the process's main thread

loop.post { print("runs on the main thread, inside the loop") }
loop.schedule(after: .milliseconds(500), repeating: .seconds(1)) { timer in
    print("tick \(timer.fireCount)")
    if timer.fireCount == 3 { loop.stop() }
}
DispatchQueue.main.async { print("libdispatch's main queue is serviced too") }
Task { @MainActor in print("and so are @MainActor jobs") }

loop.run()  // until loop.stop()
