// Terminal text fits the width it is given (COLUMNS, the terminal's, else 100): goldens at
// 80 and 100 columns for report, show and show's list of one app-like trace read from stdin.
import Foundation
import StallwatchCLITestSupport
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct TerminalTextTests {
    func run(_ arguments: [String], columns: Int?) -> CLIRun {
        CLIRun(arguments, environment: columns.map { ["COLUMNS": String($0)] } ?? [:], input: Fixture.app())
    }

    @Test func reportAt80Columns() {
        #expect(run(["report", "-"], columns: 80).output == Self.report80)
    }

    @Test func reportAt100Columns() {
        #expect(run(["report", "-"], columns: 100).output == Self.report100)
    }

    @Test func showAt80Columns() {
        #expect(run(["show", "-", "--stall", "1"], columns: 80).output == Self.show80)
    }

    @Test func showAt100Columns() {
        #expect(run(["show", "-", "--stall", "1"], columns: 100).output == Self.show100)
    }

    @Test func showListsTheStallsWithoutStall() {
        #expect(run(["show", "-"], columns: 80).output == Self.list80)
        #expect(run(["show", "-"], columns: 100).output == Self.list100)
    }

    @Test func withoutColumnsOutputIs100Wide() {
        #expect(run(["report", "-"], columns: nil).output == Self.report100)
    }

    @Test(arguments: [60, 80, 100, 132])
    func everyLineFits(columns: Int) {
        // Below 80 columns, lines are laid out for 80.
        let width = max(columns, 80)
        for arguments in [
            ["report", "-"], ["show", "-", "--stall", "1"], ["show", "-", "--stall", "2"], ["show", "-"],
        ] {
            let output = run(arguments, columns: columns).output
            #expect(!output.isEmpty)
            for line in output.split(separator: "\n") where !line.hasPrefix("     stallwatch show ") {
                #expect(line.count <= width, "\(arguments) at \(columns): \(line)")
            }
        }
    }

    @Test func wideShowsNamesInFull() {
        let output = run(["report", "-", "--wide"], columns: 80).output
        #expect(
            output.contains("     closure #1 in PhotoLibrary.hash(_:chunk:seed:) (Sources/FeedApp/Photos.swift:46)\n"))
        #expect(output.split(separator: "\n").contains { $0.count > 80 })
        let verbose = run(["show", "-", "--stall", "1", "--wide", "--verbose"], columns: 80).output
        #expect(verbose.contains(Fixture.App.names[1].full))
    }

    @Test func countsAreSingularOrPlural() {
        let report = run(["report", "-"], columns: 100).output
        #expect(report.contains("— 1 trace\n"))
        #expect(report.contains("   1 stall (1 microHang)"))
        let directory = TemporaryDirectory()
        let hitches = directory.write("one.swtrace", Fixture.hitches(count: 1, duration: 40_000_000))
        let gate = CLIRun(["gate", hitches, "--max-stalls", "0"]).output
        #expect(gate.hasPrefix("Gate: 1 trace, 1 stall, "))
        #expect(gate.hasSuffix("Result: FAIL (1 of 1 limit exceeded)\n"))
        #expect(CLIRun(["gate", hitches, "--max-stalls", "1"]).output.hasSuffix("Result: PASS (1 limit)\n"))
    }

    static let report80 = """
        Stallwatch report — 1 trace
          -: FeedApp (pid 4711), full mode, 2.00 s, 2 stalls

        Overview
          run time          2.00 s
          loop utilisation  18.0 %
          hitch ratio       163.3 ms/s (bad: over 10 ms/s)
          hang rate         0.0 s/h (0 hangs, 0.0 ms)
          loop latency      p50 0.040 ms, p90 0.040 ms, p99 0.040 ms, p99.9 0.040 ms,
                            max 0.040 ms (500 samples)

        Stalls: 2, 360.0 ms in all
          by tier      hitch 0, microHang 2, hang 0, severe 0
          by category  compute 1 (240.0 ms), io 0 (0.0 ms), lockWait 0 (0.0 ms),
                       database 1 (120.0 ms), other 0 (0.0 ms)

        Congestion: 12 iterations overran the budget through many callouts, none a stall
          3 described, 78.0 ms in all, 28.0 ms over the budget
          share        time  callouts  site
            92%     72.0 ms        36  post "thumbnail" FeedApp/Thumbnails.swift:12
             8%      6.0 ms         6  timer "hash photos" FeedApp/Photos.swift:40

        Top signatures (2 of 2, by total time)

        1. compute: fnv1a(_:seed:) ← closure #1 in PhotoLibrary.hash(_:chunk:seed:) ←
             main()
           1 stall (1 microHang), total 240.0 ms, max 240.0 ms
           if fixed: hitch ratio 51.7 ms/s (bad), hang rate 0.0 s/h
           breakdown: compute 100 %
           reason: fnv1a(_:seed:)
           posted at FeedApp/Photos.swift:40
           example: stallwatch show - --stall 1
           stack (83 % of the longest stall's time had this stack):
             fnv1a(_:seed:) (Sources/FeedApp/Hash.swift:34)
             closure #1 in PhotoL….hash(_:chunk:seed:) (Sources/FeedApp/Photos.swift:46)
             closure #1 in PhotoLibrary.hash(_:chunk:seed:)
             main() (Sources/FeedApp/main.swift:10)

        2. database: FeedDatabase.loadFeed(rows:) ← main()
           1 stall (1 microHang), total 120.0 ms, max 120.0 ms
           if fixed: hitch ratio 111.7 ms/s (bad), hang rate 0.0 s/h
           breakdown: database 100 %
           reason: sqlite3_step
           posted at FeedApp/FeedView.swift:88
           example: stallwatch show - --stall 2
           stack (100 % of the longest stall's time had this stack):
             libsqlite3.so.0+0x4f1a3
             sqlite3_step
             FeedDatabase.loadFeed(rows:) (Sources/FeedApp/FeedDatabase.swift:57)
             main() (Sources/FeedApp/main.swift:10)

        """

    static let report100 = """
        Stallwatch report — 1 trace
          -: FeedApp (pid 4711), full mode, 2.00 s, 2 stalls

        Overview
          run time          2.00 s
          loop utilisation  18.0 %
          hitch ratio       163.3 ms/s (bad: over 10 ms/s)
          hang rate         0.0 s/h (0 hangs, 0.0 ms)
          loop latency      p50 0.040 ms, p90 0.040 ms, p99 0.040 ms, p99.9 0.040 ms,
                            max 0.040 ms (500 samples)

        Stalls: 2, 360.0 ms in all
          by tier      hitch 0, microHang 2, hang 0, severe 0
          by category  compute 1 (240.0 ms), io 0 (0.0 ms), lockWait 0 (0.0 ms), database 1 (120.0 ms),
                       other 0 (0.0 ms)

        Congestion: 12 iterations overran the budget through many callouts, none a stall
          3 described, 78.0 ms in all, 28.0 ms over the budget
          share        time  callouts  site
            92%     72.0 ms        36  post "thumbnail" FeedApp/Thumbnails.swift:12
             8%      6.0 ms         6  timer "hash photos" FeedApp/Photos.swift:40

        Top signatures (2 of 2, by total time)

        1. compute: fnv1a(_:seed:) ← closure #1 in PhotoLibrary.hash(_:chunk:seed:) ← main()
           1 stall (1 microHang), total 240.0 ms, max 240.0 ms
           if fixed: hitch ratio 51.7 ms/s (bad), hang rate 0.0 s/h
           breakdown: compute 100 %
           reason: fnv1a(_:seed:)
           posted at FeedApp/Photos.swift:40
           example: stallwatch show - --stall 1
           stack (83 % of the longest stall's time had this stack):
             fnv1a(_:seed:) (Sources/FeedApp/Hash.swift:34)
             closure #1 in PhotoLibrary.hash(_:chunk:seed:) (Sources/FeedApp/Photos.swift:46)
             closure #1 in PhotoLibrary.hash(_:chunk:seed:)
             main() (Sources/FeedApp/main.swift:10)

        2. database: FeedDatabase.loadFeed(rows:) ← main()
           1 stall (1 microHang), total 120.0 ms, max 120.0 ms
           if fixed: hitch ratio 111.7 ms/s (bad), hang rate 0.0 s/h
           breakdown: database 100 %
           reason: sqlite3_step
           posted at FeedApp/FeedView.swift:88
           example: stallwatch show - --stall 2
           stack (100 % of the longest stall's time had this stack):
             libsqlite3.so.0+0x4f1a3
             sqlite3_step
             FeedDatabase.loadFeed(rows:) (Sources/FeedApp/FeedDatabase.swift:57)
             main() (Sources/FeedApp/main.swift:10)

        """

    static let show80 = """
        Stall 1 — microHang, 240.0 ms in -
          callout   timer "hash photos" posted at FeedApp/Photos.swift:40, mode default,
                    phase beforeTimers
          category  compute: compute 100 %
          reasons   fnv1a(_:seed:) 83 %, PhotoLibrary.hash(_:chunk:seed:) 17 %
          signature compute: fnv1a(_:seed:) ←
                    closure #1 in PhotoLibrary.hash(_:chunk:seed:) ← main()

        Samples (4; stacks: signal; time from the callout's start)
               time  state       syscall     category  reason       top frames
           +17.0 ms  R running   -           compute   fnv1a…eed:)  fnv1a(_:seed:) ← …
           +80.0 ms  R running   -           compute   fnv1a…eed:)  fnv1a(_:seed:) ← …
          +140.0 ms  R running   -           compute   Photo…eed:)  Array.wi…tes(_:) ← …
          +180.0 ms  R running   -           compute   fnv1a…eed:)  fnv1a(_:seed:) ← …

        Representative stack (sample 1, innermost first): 83 % of the stall's time,
          3 of 4 samples
          fnv1a(_:seed:) (Sources/FeedApp/Hash.swift:34)  FeedApp
          closure #1 in Pho…sh(_:chunk:seed:) (Sources/FeedApp/Photos.swift:46)  FeedApp
          closure #1 in PhotoLibrary.hash(_:chunk:seed:)  FeedApp
          main() (Sources/FeedApp/main.swift:10)  FeedApp

        """

    static let show100 = """
        Stall 1 — microHang, 240.0 ms in -
          callout   timer "hash photos" posted at FeedApp/Photos.swift:40, mode default, phase beforeTimers
          category  compute: compute 100 %
          reasons   fnv1a(_:seed:) 83 %, PhotoLibrary.hash(_:chunk:seed:) 17 %
          signature compute: fnv1a(_:seed:) ← closure #1 in PhotoLibrary.hash(_:chunk:seed:) ← main()

        Samples (4; stacks: signal; time from the callout's start)
               time  state       syscall     category  reason              top frames
           +17.0 ms  R running   -           compute   fnv1a(_:seed:)      fnv1a(_:seed:) ← closur…eed:) ← …
           +80.0 ms  R running   -           compute   fnv1a(_:seed:)      fnv1a(_:seed:) ← closur…eed:) ← …
          +140.0 ms  R running   -           compute   PhotoLibr…k:seed:)  Array.withUnsafeBytes(_:) ← …
          +180.0 ms  R running   -           compute   fnv1a(_:seed:)      fnv1a(_:seed:) ← closur…eed:) ← …

        Representative stack (sample 1, innermost first): 83 % of the stall's time, 3 of 4 samples
          fnv1a(_:seed:) (Sources/FeedApp/Hash.swift:34)  FeedApp
          closure #1 in PhotoLibrary.hash(_:chunk:seed:) (Sources/FeedApp/Photos.swift:46)  FeedApp
          closure #1 in PhotoLibrary.hash(_:chunk:seed:)  FeedApp
          main() (Sources/FeedApp/main.swift:10)  FeedApp

        """

    static let list80 = """
        Stalls in -: 2 stalls
            id  tier         duration  category  stack  site          signature
             1  microHang    240.0 ms  compute     83%  FeedAp…ft:40  fnv1a(_:seed:) ← …
             2  microHang    120.0 ms  database   100%  FeedAp…ft:88  FeedDat…rows:) ← …

        Show one: stallwatch show - --stall ID

        """

    static let list100 = """
        Stalls in -: 2 stalls
            id  tier         duration  category  stack  site                       signature
             1  microHang    240.0 ms  compute     83%  FeedApp/Photos.swift:40    fnv1a(_:seed:) ← …
             2  microHang    120.0 ms  database   100%  FeedApp/FeedView.swift:88  FeedDataba…eed(rows:) ← …

        Show one: stallwatch show - --stall ID

        """
}
