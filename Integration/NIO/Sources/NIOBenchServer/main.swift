// The server of the recorded bench: the NIOHTTP1 server of `NIOTestServer` on 2 event loops, in a
// program that never heard of Stallwatch (it neither links nor calls it). `stallwatch-nio-bench
// --record` runs it plain and under `stallwatch record`, whose preload library finds its loops by
// their waits. It prints `PORT PID` (its own process, whoever started it) on one line once it
// listens, and serves until its standard input ends; then it shuts the server down and exits 0.
import Foundation
import NIOTestServer

let server = try Server()
FileHandle.standardOutput.write(Data("\(server.port) \(getpid())\n".utf8))
var byte: UInt8 = 0
while read(STDIN_FILENO, &byte, 1) > 0 {}
server.close()
