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
        .testTarget(
            name: "RunLoopKitTests",
            dependencies: ["RunLoopKit"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
