// swift-tools-version:6.0
// Stallwatch on real swift-nio servers: an adapter (StallwatchNIO) and tests that run a real
// NIOHTTP1 server. Not part of the root package, which depends on no outside package.
//
// swift-nio comes from `STALLWATCH_NIO_PATH` when it is set (a local checkout, as
// scripts/nio-integration.sh makes from the vendored sources: build with
// SWIFTCI_USE_LOCAL_DEPS=1 so swift-nio takes its own dependencies from sibling folders), and
// from GitHub otherwise. Stallwatch comes from `STALLWATCH_ROOT`, else this checkout.
import Foundation
import PackageDescription

let nio: Package.Dependency =
    Context.environment["STALLWATCH_NIO_PATH"].map { .package(path: $0) }
    ?? .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0")
let stallwatch = Context.environment["STALLWATCH_ROOT"] ?? "../.."
// A path dependency is known by its folder's name (the checkout's, whatever it is called).
let stallwatchPackage = URL(
    fileURLWithPath: stallwatch, relativeTo: URL(fileURLWithPath: Context.packageDirectory + "/")
)
.standardizedFileURL.lastPathComponent.lowercased()

let package = Package(
    name: "StallwatchNIO",
    products: [.library(name: "StallwatchNIO", targets: ["StallwatchNIO"])],
    dependencies: [.package(path: stallwatch), nio],
    targets: [
        // Watching a MultiThreadedEventLoopGroup's loops with one HeartbeatMonitor.
        .target(
            name: "StallwatchNIO",
            dependencies: [
                .product(name: "Stallwatch", package: stallwatchPackage),
                .product(name: "StallwatchCore", package: stallwatchPackage),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        // The system's SQLite, for the database handler.
        .systemLibrary(name: "CSQLite3", pkgConfig: "sqlite3"),
        // The server the tests and the bench run (a NIOHTTP1 server whose handler blocks as the
        // path says) and blocking loopback clients.
        .target(
            name: "NIOTestServer",
            dependencies: [
                "CSQLite3",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        // The server sample: a blocking `/report` handler, and `--fixed` on NIOThreadPool.
        .executableTarget(
            name: "ReportServer",
            dependencies: [
                "StallwatchNIO", "NIOTestServer", .product(name: "Stallwatch", package: stallwatchPackage),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .executableTarget(
            name: "stallwatch-nio-bench",
            dependencies: ["StallwatchNIO", "NIOTestServer", .product(name: "Stallwatch", package: stallwatchPackage)]),
        // The same server as a program of its own, without Stallwatch: what the bench's `--record`
        // mode runs plain and under `stallwatch record`.
        .executableTarget(name: "NIOBenchServer", dependencies: ["NIOTestServer"]),
        .testTarget(
            name: "StallwatchNIOTests",
            dependencies: [
                "StallwatchNIO", "NIOTestServer", "ReportServer",
                .product(name: "Stallwatch", package: stallwatchPackage),
                .product(name: "StallwatchCore", package: stallwatchPackage),
                .product(name: "StallwatchAnalysis", package: stallwatchPackage),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
    ]
)
