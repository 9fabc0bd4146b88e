// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "CurlMulti",
    dependencies: [
        // This repository; in your own tool: .package(url: "<RunLoopKit's URL>", from: "<its first tag>").
        .package(name: "RunLoopKit", path: "../..")
    ],
    targets: [
        // libcurl's C API, found with pkg-config (Debian and Ubuntu: libcurl4-openssl-dev).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .executableTarget(
            name: "CurlMulti",
            dependencies: ["CCurl", .product(name: "RunLoopKit", package: "RunLoopKit")],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
