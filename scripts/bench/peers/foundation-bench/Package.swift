// swift-tools-version:6.0
// The `foundation` peer of scripts/bench/compare-peers.sh: W1–W5 (shared benchmarks.md) on swift-corelibs-foundation's
// RunLoop (CFRunLoop underneath). Separate from RunLoopKit's package, whose library never imports Foundation.
import PackageDescription

let package = Package(
    name: "foundation-bench",
    dependencies: [.package(path: "../peer-support")],
    targets: [
        .executableTarget(
            name: "foundation-bench",
            dependencies: [.product(name: "PeerSupport", package: "peer-support")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        )
    ]
)
