// swift-tools-version: 6.0
// A separate package, so RunLoopKit keeps no dependencies: GTK 4 apps on Loop.main in real windows under Xvfb
// (Debian's libgtk-4-dev and xvfb). scripts/check/gtk-check.sh installs those, writes the GTK example of
// Docs/LivingWithOtherEventLoops.md into Sources/gtk-example/main.swift, builds both executables and runs them.
import PackageDescription

/// An executable on GTK 4 and Loop.main.
func gtkApp(_ name: String) -> Target {
    .executableTarget(
        name: name,
        dependencies: [
            "CGtk",
            .product(name: "RunLoopKit", package: "RunLoopKit"),
            .product(name: "RunLoopKitGLib", package: "RunLoopKit"),
        ],
        swiftSettings: [.swiftLanguageMode(.v6)]
    )
}

let package = Package(
    name: "gtk-check",
    dependencies: [
        .package(path: "Dependencies/RunLoopKit")  // A link to the repository root: the package is named by it.
    ],
    targets: [
        // GTK 4's C API, as an app would declare it.
        .systemLibrary(name: "CGtk", pkgConfig: "gtk4", providers: [.apt(["libgtk-4-dev"])]),
        // The docs' GTK example, pasted as main.swift (written by scripts/check/gtk-check.sh, never committed).
        gtkApp("gtk-example"),
        // A GTK window whose frame clock and GLib timeouts must keep going through nested runs of Loop.main.
        gtkApp("gtk-check"),
    ]
)
