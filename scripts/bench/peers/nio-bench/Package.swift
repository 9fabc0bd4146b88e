// swift-tools-version:6.0
// The `nio` and `nio-cb` peers of scripts/bench/compare-peers.sh: W1–W5 (shared benchmarks.md) on SwiftNIO's event
// loops. Separate from RunLoopKit's package so the library keeps no dependencies.
import PackageDescription

let package = Package(
    name: "nio-bench",
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(path: "../peer-support"),
    ],
    targets: [
        .executableTarget(
            name: "nio-bench",
            dependencies: [
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "PeerSupport", package: "peer-support"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
