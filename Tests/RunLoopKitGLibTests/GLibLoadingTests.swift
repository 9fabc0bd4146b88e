import Testing

@testable import RunLoopKitGLib

/// GLib is found at run time, and its absence is a typed error that says what to install.
@Suite struct GLibLoadingTests {
    @Test func aMissingLibraryIsATypedErrorThatSaysWhatToInstall() {
        do {
            _ = try GLibFunctions(library: "libglib-that-does-not-exist.so.0")
            Issue.record("loading a library that does not exist succeeded")
        } catch {
            #expect(error.code == .libraryUnavailable)
            #expect(error.message.contains("libglib2.0-0"))
        }
    }

    @Test func aLibraryWithoutGLibsFunctionsIsATypedError() {
        do {
            _ = try GLibFunctions(library: "libc.so.6")
            Issue.record("libc passed for GLib")
        } catch {
            #expect(error.code == .symbolMissing)
            #expect(error.message.contains("g_main_context_default"))
        }
    }

    @Test func glibIsInstalledWhereTheTestsRequireIt() throws {
        guard GLibTesting.isRequired else { return }
        _ = try GLibFunctions.shared()  // CI installs libglib2.0-0: the GLib suites must not be skipped there.
    }
}
