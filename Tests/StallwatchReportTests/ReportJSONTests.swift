// `report --json` of a fixed synthetic trace is exactly this document: keys sorted, every key present, milliseconds to the microsecond.
import Foundation
import StallwatchCLITestSupport
import StallwatchTestSupport
import Testing

@testable import StallwatchReport

@Suite struct ReportJSONTests {
    let directory = TemporaryDirectory()

    @Test func reportJSONMatchesTheGolden() throws {
        let bytes = Fixture.standard()
        let path = directory.write("standard.swtrace", bytes)
        let run = CLIRun(["report", path, "--json"])
        #expect(run.exitCode == 0)
        #expect(run.error.isEmpty)
        // The file's size and path are the only values that depend on the environment.
        let expected = golden.replacingOccurrences(of: "\"PATH\"", with: "\"\(path)\"")
            .replacingOccurrences(of: "BYTES", with: String(bytes.count))
        #expect(run.output == expected)
    }

    @Test func reportJSONParsesAndIsStable() throws {
        let path = directory.write("standard.swtrace", Fixture.standard())
        let copy = directory.write("copy.swtrace", Fixture.standard())
        let first = CLIRun(["report", path, copy, "--json"]).output
        let second = CLIRun(["report", path, copy, "--json"]).output
        #expect(first == second)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])
        #expect(json["schemaVersion"] as? Int == 1)
        #expect((json["traces"] as? [Any])?.count == 2)
        #expect(json["loopUtilisation"] is NSNull)
    }

    private let golden = """
        {
          "congestion" : null,
          "expected" : {
            "ms" : 0,
            "stalls" : 0
          },
          "fleet" : {
            "appVersions" : 0,
            "builds" : 1,
            "bytes" : BYTES,
            "firstStart" : "2023-11-14T22:13:20.000Z",
            "hosts" : 0,
            "lastEnd" : "2023-11-14T22:13:26.000Z",
            "processes" : 1,
            "traces" : 1,
            "unreadable" : [

            ]
          },
          "frames" : {
            "delivered" : 330,
            "dropped" : 30,
            "expected" : 360,
            "fps" : 55
          },
          "groups" : [

          ],
          "hangRateSecondsPerHour" : 180,
          "hitchGrade" : "bad",
          "hitchRatioMsPerSecond" : 82.5,
          "loopLatency" : {
            "count" : 1000,
            "maxMs" : 294.912,
            "p50Ms" : 0.05,
            "p90Ms" : 0.05,
            "p999Ms" : 1.984,
            "p99Ms" : 0.05
          },
          "loopUtilisation" : null,
          "processTrees" : [

          ],
          "rateByBuild" : [
            {
              "hangRateSecondsPerHour" : 180,
              "hangSeconds" : 0.3,
              "hitchGrade" : "bad",
              "hitchRatioMsPerSecond" : 82.5,
              "name" : "unknown",
              "runTimeSeconds" : 6,
              "traces" : 1
            }
          ],
          "rateByHost" : [
            {
              "hangRateSecondsPerHour" : 180,
              "hangSeconds" : 0.3,
              "hitchGrade" : "bad",
              "hitchRatioMsPerSecond" : 82.5,
              "name" : "unknown",
              "runTimeSeconds" : 6,
              "traces" : 1
            }
          ],
          "runTimeSeconds" : 6,
          "schemaVersion" : 1,
          "signatureCount" : 4,
          "signatures" : [
            {
              "builds" : [
                {
                  "name" : "unknown",
                  "stalls" : 2,
                  "traces" : 1
                }
              ],
              "category" : "compute",
              "categoryShares" : {
                "compute" : 1,
                "database" : 0,
                "io" : 0,
                "lockWait" : 0,
                "other" : 0
              },
              "count" : 2,
              "example" : {
                "stall" : 1,
                "trace" : "PATH"
              },
              "firstSeen" : "2023-11-14T22:13:20.200Z",
              "frames" : [
                "checksum(_:)",
                "Feed.reload()",
                "main()"
              ],
              "hosts" : [
                {
                  "name" : "unknown",
                  "stalls" : 2,
                  "traces" : 1
                }
              ],
              "ifFixed" : {
                "droppedFrames" : 21,
                "fps" : 56.5,
                "hangRateSecondsPerHour" : 0,
                "hitchGrade" : "bad",
                "hitchRatioMsPerSecond" : 34.722
              },
              "lastSeen" : "2023-11-14T22:13:25.000Z",
              "maxMs" : 300,
              "p50Ms" : 20,
              "p95Ms" : 300,
              "reason" : "FixtureApp.checksum(Swift.Int)",
              "site" : "FixtureApp/Feed.swift:12",
              "sites" : [
                {
                  "count" : 2,
                  "site" : "FixtureApp/Feed.swift:12"
                }
              ],
              "stack" : [
                {
                  "module" : "/opt/fixture/FixtureApp",
                  "name" : "checksum(_:)",
                  "source" : "FixtureApp/Checksum.swift:7",
                  "symbol" : "FixtureApp.checksum(Swift.Int) -> Swift.Int",
                  "system" : false
                },
                {
                  "module" : "/opt/fixture/FixtureApp",
                  "name" : "Feed.reload()",
                  "source" : "FixtureApp/Feed.swift:42",
                  "symbol" : "FixtureApp.Feed.reload()",
                  "system" : false
                },
                {
                  "module" : "/opt/fixture/FixtureApp",
                  "name" : "main()",
                  "source" : "FixtureApp/main.swift:10",
                  "symbol" : "FixtureApp.main()",
                  "system" : false
                }
              ],
              "stackConfidence" : 1,
              "tiers" : {
                "hang" : 1,
                "hitch" : 1
              },
              "totalMs" : 320,
              "traces" : 1,
              "tracesPercent" : 100
            },
            {
              "builds" : [
                {
                  "name" : "unknown",
                  "stalls" : 1,
                  "traces" : 1
                }
              ],
              "category" : "database",
              "categoryShares" : {
                "compute" : 0,
                "database" : 1,
                "io" : 0,
                "lockWait" : 0,
                "other" : 0
              },
              "count" : 1,
              "example" : {
                "stall" : 4,
                "trace" : "PATH"
              },
              "firstSeen" : "2023-11-14T22:13:23.000Z",
              "frames" : [
                "Cache.lookup()",
                "main()"
              ],
              "hosts" : [
                {
                  "name" : "unknown",
                  "stalls" : 1,
                  "traces" : 1
                }
              ],
              "ifFixed" : {
                "droppedFrames" : 21,
                "fps" : 56.5,
                "hangRateSecondsPerHour" : 180,
                "hitchGrade" : "bad",
                "hitchRatioMsPerSecond" : 60.278
              },
              "lastSeen" : "2023-11-14T22:13:23.000Z",
              "maxMs" : 150,
              "p50Ms" : 150,
              "p95Ms" : 150,
              "reason" : "sqlite3_step",
              "site" : "FixtureApp/Database.swift:77",
              "sites" : [
                {
                  "count" : 1,
                  "site" : "FixtureApp/Database.swift:77"
                }
              ],
              "stack" : [
                {
                  "module" : "/usr/lib/x86_64-linux-gnu/libsqlite3.so.0",
                  "name" : "sqlite3_step",
                  "source" : null,
                  "symbol" : "sqlite3_step",
                  "system" : true
                },
                {
                  "module" : "/opt/fixture/FixtureApp",
                  "name" : "Cache.lookup()",
                  "source" : "FixtureApp/Cache.swift:19",
                  "symbol" : "FixtureApp.Cache.lookup()",
                  "system" : false
                },
                {
                  "module" : "/opt/fixture/FixtureApp",
                  "name" : "main()",
                  "source" : "FixtureApp/main.swift:10",
                  "symbol" : "FixtureApp.main()",
                  "system" : false
                }
              ],
              "stackConfidence" : 1,
              "tiers" : {
                "microHang" : 1
              },
              "totalMs" : 150,
              "traces" : 1,
              "tracesPercent" : 100
            },
            {
              "builds" : [
                {
                  "name" : "unknown",
                  "stalls" : 2,
                  "traces" : 1
                }
              ],
              "category" : "io",
              "categoryShares" : {
                "compute" : 0,
                "database" : 0,
                "io" : 1,
                "lockWait" : 0,
                "other" : 0
              },
              "count" : 2,
              "example" : {
                "stall" : 2,
                "trace" : "PATH"
              },
              "firstSeen" : "2023-11-14T22:13:21.000Z",
              "frames" : [
                "Store.save()",
                "main()"
              ],
              "hosts" : [
                {
                  "name" : "unknown",
                  "stalls" : 2,
                  "traces" : 1
                }
              ],
              "ifFixed" : {
                "droppedFrames" : 28,
                "fps" : 55.33,
                "hangRateSecondsPerHour" : 180,
                "hitchGrade" : "bad",
                "hitchRatioMsPerSecond" : 77.222
              },
              "lastSeen" : "2023-11-14T22:13:22.000Z",
              "maxMs" : 40,
              "p50Ms" : 25,
              "p95Ms" : 40,
              "reason" : "fsync",
              "site" : "FixtureApp/Store.swift:30",
              "sites" : [
                {
                  "count" : 2,
                  "site" : "FixtureApp/Store.swift:30"
                }
              ],
              "stack" : [
                {
                  "module" : "/usr/lib/x86_64-linux-gnu/libc.so.6",
                  "name" : "fsync",
                  "source" : null,
                  "symbol" : "fsync",
                  "system" : true
                },
                {
                  "module" : "/opt/fixture/FixtureApp",
                  "name" : "Store.save()",
                  "source" : "FixtureApp/Store.swift:88",
                  "symbol" : "FixtureApp.Store.save()",
                  "system" : false
                },
                {
                  "module" : "/opt/fixture/FixtureApp",
                  "name" : "main()",
                  "source" : "FixtureApp/main.swift:10",
                  "symbol" : "FixtureApp.main()",
                  "system" : false
                }
              ],
              "stackConfidence" : 1,
              "tiers" : {
                "hitch" : 2
              },
              "totalMs" : 65,
              "traces" : 1,
              "tracesPercent" : 100
            },
            {
              "builds" : [
                {
                  "name" : "unknown",
                  "stalls" : 1,
                  "traces" : 1
                }
              ],
              "category" : "lockWait",
              "categoryShares" : {
                "compute" : 0,
                "database" : 0,
                "io" : 0,
                "lockWait" : 1,
                "other" : 0
              },
              "count" : 1,
              "example" : {
                "stall" : 5,
                "trace" : "PATH"
              },
              "firstSeen" : "2023-11-14T22:13:24.000Z",
              "frames" : [
                "Cache.lookup()",
                "main()"
              ],
              "hosts" : [
                {
                  "name" : "unknown",
                  "stalls" : 1,
                  "traces" : 1
                }
              ],
              "ifFixed" : {
                "droppedFrames" : 26,
                "fps" : 55.67,
                "hangRateSecondsPerHour" : 180,
                "hitchGrade" : "bad",
                "hitchRatioMsPerSecond" : 75.278
              },
              "lastSeen" : "2023-11-14T22:13:24.000Z",
              "maxMs" : 60,
              "p50Ms" : 60,
              "p95Ms" : 60,
              "reason" : "pthread_mutex_lock",
              "site" : "FixtureApp/Cache.swift:5",
              "sites" : [
                {
                  "count" : 1,
                  "site" : "FixtureApp/Cache.swift:5"
                }
              ],
              "stack" : [
                {
                  "module" : "/usr/lib/x86_64-linux-gnu/libc.so.6",
                  "name" : "pthread_mutex_lock",
                  "source" : null,
                  "symbol" : "pthread_mutex_lock",
                  "system" : true
                },
                {
                  "module" : "/opt/fixture/FixtureApp",
                  "name" : "Cache.lookup()",
                  "source" : "FixtureApp/Cache.swift:19",
                  "symbol" : "FixtureApp.Cache.lookup()",
                  "system" : false
                },
                {
                  "module" : "/opt/fixture/FixtureApp",
                  "name" : "main()",
                  "source" : "FixtureApp/main.swift:10",
                  "symbol" : "FixtureApp.main()",
                  "system" : false
                }
              ],
              "stackConfidence" : 1,
              "tiers" : {
                "hitch" : 1
              },
              "totalMs" : 60,
              "traces" : 1,
              "tracesPercent" : 100
            }
          ],
          "stalls" : {
            "byCategory" : {
              "compute" : 2,
              "database" : 1,
              "io" : 2,
              "lockWait" : 1,
              "other" : 0
            },
            "byTier" : {
              "hang" : 1,
              "hitch" : 4,
              "microHang" : 1,
              "severe" : 0
            },
            "categoryMs" : {
              "compute" : 320,
              "database" : 150,
              "io" : 65,
              "lockWait" : 60,
              "other" : 0
            },
            "hangMs" : 300,
            "hangs" : 1,
            "total" : 6,
            "totalMs" : 595,
            "unfinished" : 1,
            "unsampledMs" : 0
          },
          "stopped" : {
            "seconds" : 0,
            "stalls" : 0
          },
          "traces" : [
            {
              "appVersion" : null,
              "build" : "unknown",
              "bytes" : BYTES,
              "host" : null,
              "mode" : "stalls",
              "path" : "PATH",
              "pid" : 4242,
              "problems" : [

              ],
              "process" : "FixtureApp",
              "runTimeSeconds" : 6,
              "stalls" : 6,
              "traceID" : "0db9730cd9db0bf4865b63e624b80c60",
              "watched" : [

              ]
            }
          ]
        }

        """
}
