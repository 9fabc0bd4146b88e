// The part of XCTest that the ported swift-corelibs-foundation tests (Upstream/Test*.swift) use, so that their bodies
// run as written on the process's real main thread, under either owner of the thread. Waiting is XCTest's own on
// Linux (swift-corelibs-xctest's XCTWaiter): `RunLoop.current.run(mode: .default, before:)` on the waiting thread in
// slices of at most 0.1 s until every expectation is fulfilled or the timeout passes, and a fulfilment stops the
// waiting run loops (`CFRunLoopStop`) so that the wait notices it at once. Each test gets a new instance of its
// class, with setUp() before and tearDown() after it.
import CoreFoundation
import Foundation
import Synchronization

/// The failures of the test in progress (assertions may fail on any thread).
let recordedFailures = Mutex<[String]>([])

/// Records a failure of the test in progress.
func recordFailure(_ message: String, _ file: StaticString, _ line: UInt) {
    let place = "\(String(describing: file).split(separator: "/").last ?? ""):\(line)"
    recordedFailures.withLock { $0.append("\(place): \(message)") }
}

/// A test that throws this is skipped, as with XCTest.
struct XCTSkip: Error {
    let message: String
    init(_ message: String = "") { self.message = message }
}

/// XCTUnwrap's error for `nil`.
struct XCTUnwrapFailure: Error {}

/// An expectation of `XCTestCase.expectation(description:)`.
class XCTestExpectation: @unchecked Sendable {
    // Unchecked Sendable: the counts and flags are behind the lock; the description is immutable.
    let expectationDescription: String
    private let state = Mutex((fulfilled: 0, expected: 1, inverted: false))

    init(description: String) { expectationDescription = description }

    /// How many fulfilments satisfy it.
    var expectedFulfillmentCount: Int {
        get { state.withLock { $0.expected } }
        set { state.withLock { $0.expected = newValue } }
    }

    /// Whether a wait fails if it is fulfilled (and, while it is not, waits its whole timeout).
    var isInverted: Bool {
        get { state.withLock { $0.inverted } }
        set { state.withLock { $0.inverted = newValue } }
    }

    /// Whether it is satisfied.
    var isFulfilled: Bool { state.withLock { $0.fulfilled >= $0.expected } }

    /// Fulfils it once; a wait in progress notices at once.
    func fulfill() {
        state.withLock { $0.fulfilled += 1 }
        Waiting.stopWaits()
    }
}

/// `expectation(forNotification:object:notificationCenter:handler:)`'s expectation: fulfilled by the first matching
/// notification its handler accepts (every one without a handler).
final class XCTNSNotificationExpectation: XCTestExpectation, @unchecked Sendable {
    // Unsafe: set once in init, before any notification can come; read and cleared holding `lock`.
    nonisolated(unsafe) private var observer: NSObjectProtocol?
    private let lock = Mutex(())
    private let center: NotificationCenter

    init(
        name: Notification.Name, object: Any?, center: NotificationCenter,
        handler: (@Sendable (Notification) -> Bool)?
    ) {
        self.center = center
        super.init(description: "Expect notification '\(name.rawValue)' from \(String(describing: object))")
        let token = center.addObserver(forName: name, object: object, queue: nil) { [weak self] notification in
            guard let self, !self.isFulfilled else { return }
            if handler?(notification) ?? true {
                self.fulfill()
                self.stopObserving()
            }
        }
        lock.withLock { _ in observer = token }
    }

    deinit { stopObserving() }

    private func stopObserving() {
        let token: NSObjectProtocol? = lock.withLock { _ in
            defer { observer = nil }
            return observer
        }
        if let token { center.removeObserver(token) }
    }
}

/// The waits in progress, one per thread that waits: each runs its own run loop, stopped when an expectation is
/// fulfilled.
enum Waiting {
    // Unsafe: only touched holding `lock`.
    nonisolated(unsafe) private static var runLoops: [CFRunLoop] = []
    private static let lock = Mutex(())

    static func stopWaits() {
        lock.withLock { _ in
            for runLoop in runLoops { CFRunLoopStop(runLoop) }
        }
    }

    /// Waits as swift-corelibs-xctest's XCTWaiter does; answers the failure, `nil` when the wait succeeded. It ends
    /// once every expectation not inverted is fulfilled, unless some are inverted: then at the timeout, or as soon as
    /// one of those is fulfilled (a failure).
    static func wait(for expectations: [XCTestExpectation], timeout: TimeInterval) -> String? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        let runLoop = CFRunLoopGetCurrent()!
        lock.withLock { _ in runLoops.append(runLoop) }
        defer { lock.withLock { _ in runLoops.removeAll { $0 === runLoop } } }
        let inverted = expectations.filter(\.isInverted)
        let expected = expectations.filter { !$0.isInverted }
        while true {
            if let fulfilled = inverted.first(where: \.isFulfilled) {
                return "inverted expectation fulfilled: \(fulfilled.expectationDescription)"
            }
            let missing = expected.filter { !$0.isFulfilled }
            if missing.isEmpty && inverted.isEmpty { return nil }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 {
                return missing.isEmpty ? nil : "unfulfilled: \(missing.map(\.expectationDescription))"
            }
            _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: min(0.1, left)))
        }
    }
}

/// The base class of the ported suites.
class XCTestCase {
    private let expectations = Mutex<[XCTestExpectation]>([])

    required init() {}

    /// Called before each test.
    func setUp() {}

    /// Called after each test.
    func tearDown() {}

    func expectation(description: String) -> XCTestExpectation {
        let made = XCTestExpectation(description: description)
        expectations.withLock { $0.append(made) }
        return made
    }

    func expectation(
        forNotification name: Notification.Name, object: Any? = nil, notificationCenter: NotificationCenter = .default,
        handler: (@Sendable (Notification) -> Bool)? = nil
    ) -> XCTestExpectation {
        let made = XCTNSNotificationExpectation(
            name: name, object: object, center: notificationCenter, handler: handler)
        expectations.withLock { $0.append(made) }
        return made
    }

    func waitForExpectations(
        timeout: TimeInterval, handler: ((Error?) -> Void)? = nil, file: StaticString = #file, line: UInt = #line
    ) {
        let waited = expectations.withLock { list in
            defer { list = [] }
            return list
        }
        if let failure = Waiting.wait(for: waited, timeout: timeout) {
            recordFailure("waitForExpectations(timeout: \(timeout)): \(failure)", file, line)
        }
        handler?(nil)
    }

    func wait(
        for waited: [XCTestExpectation], timeout: TimeInterval, enforceOrder: Bool = false,
        file: StaticString = #file, line: UInt = #line
    ) {
        expectations.withLock { list in list.removeAll { item in waited.contains { $0 === item } } }
        if let failure = Waiting.wait(for: waited, timeout: timeout) {
            recordFailure("wait(for:timeout: \(timeout)): \(failure)", file, line)
        }
    }
}

func XCTFail(_ message: String = "", file: StaticString = #file, line: UInt = #line) {
    recordFailure("XCTFail \(message)", file, line)
}

func XCTAssert(
    _ condition: @autoclosure () throws -> Bool, _ message: @autoclosure () -> String = "",
    file: StaticString = #file, line: UInt = #line
) {
    let value: Bool
    do { value = try condition() } catch {
        recordFailure("threw \(error) \(message())", file, line)
        return
    }
    if !value { recordFailure("XCTAssert failed \(message())", file, line) }
}

func XCTAssertTrue(
    _ condition: @autoclosure () throws -> Bool, _ message: @autoclosure () -> String = "",
    file: StaticString = #file, line: UInt = #line
) {
    XCTAssert(try condition(), "XCTAssertTrue \(message())", file: file, line: line)
}

func XCTAssertFalse(
    _ condition: @autoclosure () throws -> Bool, _ message: @autoclosure () -> String = "",
    file: StaticString = #file, line: UInt = #line
) {
    XCTAssert(try !condition(), "XCTAssertFalse \(message())", file: file, line: line)
}

func XCTAssertNil(
    _ value: @autoclosure () throws -> Any?, _ message: @autoclosure () -> String = "",
    file: StaticString = #file, line: UInt = #line
) {
    XCTAssert(try value() == nil, "XCTAssertNil \(message())", file: file, line: line)
}

func XCTAssertNotNil(
    _ value: @autoclosure () throws -> Any?, _ message: @autoclosure () -> String = "",
    file: StaticString = #file, line: UInt = #line
) {
    XCTAssert(try value() != nil, "XCTAssertNotNil \(message())", file: file, line: line)
}

func XCTAssertEqual<T: Equatable>(
    _ first: @autoclosure () throws -> T, _ second: @autoclosure () throws -> T,
    _ message: @autoclosure () -> String = "", file: StaticString = #file, line: UInt = #line
) {
    do {
        let (a, b) = (try first(), try second())
        if a != b { recordFailure("XCTAssertEqual (\(a)) != (\(b)) \(message())", file, line) }
    } catch {
        recordFailure("threw \(error) \(message())", file, line)
    }
}

func XCTAssertEqual<T: FloatingPoint>(
    _ first: @autoclosure () throws -> T, _ second: @autoclosure () throws -> T, accuracy: T,
    _ message: @autoclosure () -> String = "", file: StaticString = #file, line: UInt = #line
) {
    do {
        let (a, b) = (try first(), try second())
        if abs(a - b) > accuracy {
            recordFailure("XCTAssertEqual (\(a)) != (\(b)) ± \(accuracy) \(message())", file, line)
        }
    } catch {
        recordFailure("threw \(error) \(message())", file, line)
    }
}

func XCTAssertNotEqual<T: Equatable>(
    _ first: @autoclosure () throws -> T, _ second: @autoclosure () throws -> T,
    _ message: @autoclosure () -> String = "", file: StaticString = #file, line: UInt = #line
) {
    do {
        let (a, b) = (try first(), try second())
        if a == b { recordFailure("XCTAssertNotEqual (\(a)) == (\(b)) \(message())", file, line) }
    } catch {
        recordFailure("threw \(error) \(message())", file, line)
    }
}

func XCTAssertLessThan<T: Comparable>(
    _ first: @autoclosure () throws -> T, _ second: @autoclosure () throws -> T,
    _ message: @autoclosure () -> String = "", file: StaticString = #file, line: UInt = #line
) {
    XCTAssert(try first() < second(), "XCTAssertLessThan \(message())", file: file, line: line)
}

func XCTAssertLessThanOrEqual<T: Comparable>(
    _ first: @autoclosure () throws -> T, _ second: @autoclosure () throws -> T,
    _ message: @autoclosure () -> String = "", file: StaticString = #file, line: UInt = #line
) {
    XCTAssert(try first() <= second(), "XCTAssertLessThanOrEqual \(message())", file: file, line: line)
}

func XCTAssertGreaterThan<T: Comparable>(
    _ first: @autoclosure () throws -> T, _ second: @autoclosure () throws -> T,
    _ message: @autoclosure () -> String = "", file: StaticString = #file, line: UInt = #line
) {
    XCTAssert(try first() > second(), "XCTAssertGreaterThan \(message())", file: file, line: line)
}

func XCTAssertGreaterThanOrEqual<T: Comparable>(
    _ first: @autoclosure () throws -> T, _ second: @autoclosure () throws -> T,
    _ message: @autoclosure () -> String = "", file: StaticString = #file, line: UInt = #line
) {
    XCTAssert(try first() >= second(), "XCTAssertGreaterThanOrEqual \(message())", file: file, line: line)
}

func XCTUnwrap<T>(
    _ value: @autoclosure () throws -> T?, _ message: @autoclosure () -> String = "",
    file: StaticString = #file, line: UInt = #line
) throws -> T {
    guard let unwrapped = try value() else {
        recordFailure("XCTUnwrap: nil \(message())", file, line)
        throw XCTUnwrapFailure()
    }
    return unwrapped
}

func XCTAssertNoThrow<T>(
    _ expression: @autoclosure () throws -> T, _ message: @autoclosure () -> String = "",
    file: StaticString = #file, line: UInt = #line
) {
    do { _ = try expression() } catch { recordFailure("XCTAssertNoThrow: threw \(error) \(message())", file, line) }
}

func XCTAssertThrowsError<T>(
    _ expression: @autoclosure () throws -> T, _ message: @autoclosure () -> String = "",
    file: StaticString = #file, line: UInt = #line, _ errorHandler: (_ error: Error) -> Void = { _ in }
) {
    do {
        _ = try expression()
        recordFailure("XCTAssertThrowsError: did not throw \(message())", file, line)
    } catch {
        errorHandler(error)
    }
}
