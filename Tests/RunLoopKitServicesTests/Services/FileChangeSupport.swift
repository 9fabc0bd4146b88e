import Glibc
import RunLoopKit

@testable import RunLoopKitServices

/// One handler call of a file-change source, as recorded.
struct RecordedChange: Sendable, Equatable, CustomStringConvertible {
    let kind: FileChange.Kind
    let name: String?
    let isDirectory: Bool
    let cookie: UInt32
    let onLoopThread: Bool

    var description: String { "\(kind) \(name ?? "-")\(isDirectory ? "/" : "")" }
}
