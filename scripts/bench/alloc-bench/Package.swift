// swift-tools-version:6.1
// Heap allocations per RunLoopKit operation, counted with ordo-one's package-benchmark (its malloc interposer).
// A separate package so that RunLoopKit itself keeps no dependencies; run it with scripts/bench/alloc-bench.sh.
import PackageDescription

// A path dependency's package name is its folder's name (`RunLoopKit`, `main`, a worktree's name...): take it from
// the folder three levels up (scripts/bench/alloc-bench), where this file sits in every checkout.
let runLoopKitPackage = String(Context.packageDirectory.split(separator: "/").dropLast(3).last ?? "RunLoopKit")

let package = Package(
    name: "alloc-bench",
    dependencies: [
        .package(path: "../../.."),
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .executableTarget(
            name: "Allocations",
            dependencies: [
                .product(name: "RunLoopKit", package: runLoopKitPackage),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/Allocations",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        )
    ]
)
