import Logging
import Synchronization

/// A swift-log backend that keeps every message with its metadata, for the check to read back.
struct CapturingLogHandler: LogHandler {
    /// One message as it was logged.
    struct Entry: Sendable {
        let level: Logger.Level
        let message: String
        let metadata: Logger.Metadata
    }

    /// The messages of every handler made with the same store.
    final class Store: Sendable {
        private let entries = Mutex<[Entry]>([])
        var all: [Entry] { entries.withLock { $0 } }
        func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }
    }

    let store: Store
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .info

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        store.append(Entry(level: event.level, message: "\(event.message)", metadata: merged))
    }
}
