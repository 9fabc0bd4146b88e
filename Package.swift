// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "RunLoopKit",
    products: [
        .library(name: "RunLoopKit", targets: ["RunLoopKit"]),
        .executable(name: "loop-demo", targets: ["loop-demo"]),
        .executable(name: "loop-bench", targets: ["loop-bench"]),
    ],
    targets: [
        // The Glibc module does not expose epoll, eventfd or timerfd: this target only includes their headers.
        .target(name: "CRunLoopShims"),
        .target(
            name: "RunLoopKit",
            dependencies: ["CRunLoopShims"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "loop-demo",
            dependencies: ["RunLoopKit"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "loop-bench",
            dependencies: ["RunLoopKit"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // What only the process's real main thread can show (the main queue and main actor on Loop.main): a test
        // executable that RunLoopKitTests runs in child processes.
        .executableTarget(
            name: "main-loop-check",
            dependencies: ["RunLoopKit"],
            path: "Tests/main-loop-check",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "RunLoopKitTests",
            dependencies: ["RunLoopKit", "main-loop-check"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
