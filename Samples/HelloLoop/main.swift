// The run loop example of docs/app-guide.md, kept compiling and runnable:
// swift run HelloLoop
import Dispatch
import Stallwatch

let loop = MainLoop.main  // bound to the process's main thread
var ticks = 0  // main-actor state: top-level code is main-actor code, and so are the loop's callouts

loop.post { print("runs on the main thread, inside the loop") }
loop.schedule(after: .milliseconds(500), repeating: .seconds(1)) { _ in
    ticks += 1
    print("tick \(ticks)")
    if ticks == 3 { loop.stop() }
}
DispatchQueue.global().async {
    loop.mainActor.post { print("posted from another thread, after \(ticks) ticks") }
}
DispatchQueue.main.async { print("libdispatch's main queue is serviced too") }
Task { @MainActor in print("and so are @MainActor jobs") }

loop.run()  // until loop.stop()
