// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "GTKApp",
    dependencies: [
        // This repository; in your own app: .package(url: "<RunLoopKit's URL>", from: "<its first tag>").
        .package(name: "RunLoopKit", path: "../..")
    ],
    targets: [
        // GTK 4's C API, found with pkg-config (Debian and Ubuntu: libgtk-4-dev).
        .systemLibrary(name: "CGtk", pkgConfig: "gtk4", providers: [.apt(["libgtk-4-dev"])]),
        .executableTarget(
            name: "GTKApp",
            dependencies: [
                "CGtk",
                .product(name: "RunLoopKit", package: "RunLoopKit"),
                .product(name: "RunLoopKitGLib", package: "RunLoopKit"),
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
