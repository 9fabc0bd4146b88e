// swift-tools-version:6.0
import PackageDescription

// Debug builds compile in the syscall layer's fault-injection seam (System/FaultInjection.swift), which the tests
// use to make every system call fail; release builds contain none of it.
let faultInjection = SwiftSetting.define("RUNLOOPKIT_FAULT_INJECTION", .when(configuration: .debug))

let package = Package(
    name: "RunLoopKit",
    // Libraries only, as SwiftNIO declares: loop-demo, loop-bench and loop-soak are this repository's own tools, not
    // something a dependent uses. SwiftPM still makes a product of each executable target of the root package, so
    // `swift run loop-demo` and `swift build --product loop-bench` work here as before.
    products: [
        .library(name: "RunLoopKit", targets: ["RunLoopKit"]),
        // Opt-in: Linux services (signals, child exits, file changes, memory pressure, systemd, graceful shutdown).
        .library(name: "RunLoopKitServices", targets: ["RunLoopKitServices"]),
        // Opt-in: an async entry point's main actor served by Loop.main (tracks a Swift runtime hook; see its docs).
        .library(name: "RunLoopKitAsyncMain", targets: ["RunLoopKitAsyncMain"]),
        // Opt-in: the GLib bridge, both ways (GLib is loaded at run time: building needs no GLib; see its docs).
        .library(name: "RunLoopKitGLib", targets: ["RunLoopKitGLib"]),
        // Opt-in: the Foundation bridge, both ways (a loop and Foundation's RunLoop on one thread; imports Foundation).
        .library(name: "RunLoopKitFoundation", targets: ["RunLoopKitFoundation"]),
    ],
    targets: [
        // What Swift's Glibc module leaves out (the epoll, eventfd, timerfd and pidfd calls), libdispatch's main-queue
        // hooks, the current loop's slot, and the fault-injection countdown for C code that cannot reach Swift: what
        // the system layer and the core need, nothing of the services'.
        .target(
            name: "CRunLoopShims",
            cSettings: [.define("RUNLOOPKIT_FAULT_INJECTION", .when(configuration: .debug))],
            // dlopen, dlsym and dladdr(3) are in libc itself only from glibc 2.34: linked at the bottom of every
            // product for the modules above that call them (the GLib bridge, the tools, the tests).
            linkerSettings: [.linkedLibrary("dl")]
        ),
        // The system layer: one wrapper per Glibc call (EINTR retried, errno typed), the library's lock and its trap.
        // Every declaration is `package`: each product uses these wrappers, none writes its own, and no user sees them.
        .target(
            name: "RunLoopKitSystem",
            dependencies: ["CRunLoopShims"],
            swiftSettings: [.swiftLanguageMode(.v6), faultInjection]
        ),
        // The CFRunLoop model and the helpers built on it: loops, modes, items, runs, the concurrency bridge.
        .target(
            name: "RunLoopKit",
            dependencies: ["RunLoopKitSystem", "CRunLoopShims"],
            // The handshake's spin model, checked by scripts/check/check-handshake.sh.
            exclude: ["Pass/WakeUpHandshake.pml"],
            swiftSettings: [.swiftLanguageMode(.v6), faultInjection]
        ),
        // The services' signal relay, whose handler must be async-signal-safe C: the table of watching eventfds per
        // signal and the sigaction handler that writes them. Only RunLoopKitServices depends on it; debug builds fail
        // its writes through CRunLoopShims' fault countdown.
        .target(
            name: "CRunLoopKitServices",
            dependencies: ["CRunLoopShims"],
            cSettings: [.define("RUNLOOPKIT_FAULT_INJECTION", .when(configuration: .debug))],
            linkerSettings: [.linkedLibrary("dl")]  // dladdr(3), in libc itself only from glibc 2.34.
        ),
        // Linux services on the core's sources: signals, child exits, file changes, memory pressure, systemd's
        // notify and watchdog, graceful shutdown.
        .target(
            name: "RunLoopKitServices",
            dependencies: ["RunLoopKit", "RunLoopKitSystem", "CRunLoopKitServices"],
            swiftSettings: [.swiftLanguageMode(.v6), faultInjection]
        ),
        // Installs the Swift runtime's async-main drain hook before main(): C, for the hook's calling convention.
        .target(name: "CRunLoopKitAsyncMain"),
        .target(
            name: "RunLoopKitAsyncMain",
            dependencies: ["RunLoopKit", "RunLoopKitSystem", "CRunLoopKitAsyncMain"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Our own declarations of the few GLib types and signatures the bridge uses (no GLib header).
        .target(name: "CRunLoopKitGLib"),
        .target(
            name: "RunLoopKitGLib",
            dependencies: ["RunLoopKit", "RunLoopKitSystem", "CRunLoopShims", "CRunLoopKitGLib"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The one module that imports Foundation: joins a loop and Foundation's RunLoop on one thread.
        .target(
            name: "RunLoopKitFoundation",
            dependencies: ["RunLoopKit", "RunLoopKitSystem"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .executableTarget(
            name: "loop-demo",
            dependencies: ["RunLoopKit", "RunLoopKitServices", "RunLoopKitSystem", "RunLoopKitGLib"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // A seedable random number generator for the benchmark, the soak and the tests (no product exports it).
        .target(name: "SplitMix64", swiftSettings: [.swiftLanguageMode(.v6)]),
        .executableTarget(
            name: "loop-bench",
            // GLib through RunLoopKitGLib's loader and CRunLoopKitGLib's signatures (G1-G3 call GLib themselves).
            dependencies: ["RunLoopKit", "RunLoopKitGLib", "CRunLoopKitGLib", "RunLoopKitSystem", "SplitMix64"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Every kind of item, cross-thread traffic and LoopThread churn for a set time under CPU load, with
        // exactly-once, descriptor, thread and memory checks (scripts/check/soak.sh; Docs/Reliability.md, "Soak").
        .executableTarget(
            name: "loop-soak",
            dependencies: ["RunLoopKit", "RunLoopKitServices", "RunLoopKitSystem", "SplitMix64"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // What the check executables below share: the scenario runner, the verdict line, waits and a shared value.
        .target(
            name: "CheckSupport",
            dependencies: ["RunLoopKit", "RunLoopKitSystem"],
            path: "Tests/check-support",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // What only the process's real main thread can show (the main queue and main actor on Loop.main): a test
        // executable that RunLoopKitTests (and IntegrationTests' fault matrix) runs in child processes.
        .executableTarget(
            name: "main-loop-check",
            dependencies: ["RunLoopKit", "RunLoopKitSystem", "CheckSupport"],
            path: "Tests/main-loop-check",
            swiftSettings: [.swiftLanguageMode(.v6), faultInjection]
        ),
        // An async main on Loop.main, run by RunLoopKitAsyncMainTests in a child process. Not a test dependency:
        // linking it into the test runner would hand the runner's own async main to Loop.main.
        .executableTarget(
            name: "async-main-check",
            dependencies: ["RunLoopKit", "RunLoopKitAsyncMain"],
            path: "Tests/async-main-check",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The GLib bridge on the process's real main thread (Dispatch's main queue, the main actor, GLib's default
        // context): a test executable that RunLoopKitGLibTests runs in child processes.
        .executableTarget(
            name: "glib-check",
            dependencies: ["RunLoopKit", "RunLoopKitGLib", "CheckSupport"],
            path: "Tests/glib-check",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The Foundation bridge on the process's real main thread, with the real Foundation: a test executable that
        // RunLoopKitFoundationTests runs in child processes.
        .executableTarget(
            name: "foundation-check",
            dependencies: ["RunLoopKit", "RunLoopKitFoundation", "CheckSupport"],
            path: "Tests/foundation-check",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // A socket-activated daemon: RunLoopKitServicesTests runs it in child processes under systemd-socket-activate.
        .executableTarget(
            name: "socket-activation-check",
            dependencies: ["RunLoopKit", "RunLoopKitServices"],
            path: "Tests/socket-activation-check",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // What the test targets share (SwiftNIO's NIOTestUtils in spirit): threads and loop threads, waits, recorders,
        // pipes, the check executables' runner, child processes, figures. A library, not a test target: every
        // declaration is `package`, and it uses the products' public and `package` API only.
        .target(
            name: "TestSupport",
            dependencies: ["RunLoopKit", "RunLoopKitSystem", "CRunLoopShims"],
            path: "Tests/test-support",
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // A test target per library module, each beside the module it tests. They all run in one test process
        // (`swift test`); a check executable a target depends on is built next to it and run in child processes.
        .testTarget(
            name: "RunLoopKitSystemTests",
            dependencies: ["RunLoopKitSystem", "CRunLoopShims", "TestSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The core: loops, modes, items, runs, metrics, the helpers and the concurrency bridge, and their reliability.
        .testTarget(
            name: "RunLoopKitTests",
            dependencies: [
                "RunLoopKit", "RunLoopKitSystem", "CRunLoopShims", "SplitMix64", "TestSupport", "main-loop-check",
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // The services and process events, and the parsers of their outside input (HostileInput, which
        // scripts/fuzz.sh also compiles under libFuzzer).
        .testTarget(
            name: "RunLoopKitServicesTests",
            dependencies: [
                "RunLoopKitServices", "RunLoopKit", "RunLoopKitSystem", "TestSupport", "socket-activation-check",
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // Runs async-main-check in child processes. It depends on neither that executable nor RunLoopKitAsyncMain:
        // linked into the test process, the product's hook would hand the runner's own async main to Loop.main
        // (`swift build --build-tests` builds the executable all the same).
        .testTarget(
            name: "RunLoopKitAsyncMainTests",
            dependencies: ["TestSupport"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "RunLoopKitGLibTests",
            dependencies: ["RunLoopKitGLib", "RunLoopKit", "CRunLoopShims", "TestSupport", "glib-check"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        .testTarget(
            name: "RunLoopKitFoundationTests",
            dependencies: ["RunLoopKitFoundation", "RunLoopKit", "TestSupport", "foundation-check"],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
        // What spans several products, so belongs to none of the targets above: the swift blocks of README.md and
        // Docs/*.md compiled and run against every product's objects (RunLoopKitAsyncMain's too, built but not
        // linked here, as above), loop-demo's echo server, and the fault matrix, one table of every wrapped system
        // call of the core and the services that Docs/Reliability.md prints.
        .testTarget(
            name: "IntegrationTests",
            dependencies: [
                "RunLoopKit", "RunLoopKitServices", "RunLoopKitSystem", "RunLoopKitGLib", "RunLoopKitFoundation",
                "CRunLoopShims", "TestSupport", "main-loop-check", "loop-demo",
            ],
            swiftSettings: [.swiftLanguageMode(.v6)]
        ),
    ]
)
