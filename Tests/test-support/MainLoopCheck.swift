/// Runs the `main-loop-check` test executable, built next to the test bundle.
package enum MainLoopCheck {
    /// Runs `scenario` in a child process; answers the figures of its "PASS" line, throws on anything else.
    package static func run(_ scenario: String) throws -> String {
        try TestExecutable.passingFigures(of: "main-loop-check", scenario)
    }

    /// The number after `key=` in `figures`.
    package static func value(_ key: String, in figures: String) throws -> Double {
        for field in figures.split(separator: " ") where field.hasPrefix("\(key)=") {
            if let number = Double(field.dropFirst(key.count + 1)) { return number }
        }
        throw TestExecutable.Failure(description: "no \(key) in \(figures)")
    }
}
