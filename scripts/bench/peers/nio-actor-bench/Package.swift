// swift-tools-version:6.0
// A peer for loop-bench's workload A (actor hop): the same actor on a SwiftNIO event loop's executor.
// Separate from RunLoopKit's package so the library keeps no dependencies; scripts/bench/bench-actor.sh builds both.
import PackageDescription

let package = Package(
    name: "nio-actor-bench",
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2")
    ],
    targets: [
        .executableTarget(
            name: "nio-actor-bench",
            dependencies: [.product(name: "NIOPosix", package: "swift-nio")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
