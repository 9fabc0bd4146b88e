// swift-tools-version:6.0
// What the Swift peers (nio-bench, foundation-bench) share: W1–W5 of the shared benchmarks.md written once,
// generic over a runtime (`PeerRuntime`), plus the clocks, splitmix64 offsets, nearest-rank percentiles and the
// `ID key value` output of loop-bench. Everything is @inlinable so each peer gets it specialised for its runtime.
import PackageDescription

let package = Package(
    name: "peer-support",
    products: [.library(name: "PeerSupport", targets: ["PeerSupport"])],
    targets: [
        .target(name: "PeerSupport", swiftSettings: [.swiftLanguageMode(.v6)])
    ]
)
