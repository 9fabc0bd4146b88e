// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "WorkerPool",
    dependencies: [
        // This repository's root, named because its folder may be named otherwise. In a copy of your own:
        // .package(url: "<RunLoopKit's repository URL>", from: "<its first release tag>").
        .package(name: "RunLoopKit", path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "worker-pool",
            dependencies: [.product(name: "RunLoopKit", package: "RunLoopKit")]
        )
    ]
)
