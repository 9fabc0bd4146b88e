// swift-tools-version: 6.0
// A separate package, so RunLoopKit keeps no dependencies: swift-async-algorithms' `debounce` driven by a loop's
// clock (`LoopClock`), which it takes as `some Clock`. scripts/check/clock-check.sh builds and runs it.
import PackageDescription

let package = Package(
    name: "clock-check",
    dependencies: [
        .package(path: "Dependencies/RunLoopKit"),  // A link to the repository root: the package is named by it.
        .package(url: "https://github.com/apple/swift-async-algorithms", from: "1.1.4"),
    ],
    targets: [
        .executableTarget(
            name: "clock-check",
            dependencies: [
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
