// swift-tools-version: 6.2
// A separate package, so RunLoopKit keeps no dependencies: a LoopThread served as a swift-service-lifecycle
// `Service` in a `ServiceGroup` that owns SIGTERM, loop metrics published through swift-metrics, and a StallMonitor
// report logged through swift-log. It also compiles the Swift recipes of Docs/Services.md's section "Beside
// swift-service-lifecycle" (scripts/check/lifecycle-check.sh copies them into Sources/Recipes). Built and run by
// scripts/check/lifecycle-check.sh.
import PackageDescription

let package = Package(
    name: "lifecycle-check",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "Dependencies/RunLoopKit"),  // A link to the repository root: the package is named by it.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "lifecycle-check",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                .product(name: "RunLoopKitServices", package: "RunLoopKit"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
