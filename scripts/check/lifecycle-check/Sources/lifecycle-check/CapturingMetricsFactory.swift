import CoreMetrics
import Synchronization

/// A swift-metrics backend that keeps every value recorded, by label, for the check to read back.
final class CapturingMetricsFactory: MetricsFactory {
    private let values = Mutex<[String: [Double]]>([:])

    /// Every value recorded under `label`, in order (a counter's increments, a gauge's or timer's records).
    func recorded(_ label: String) -> [Double] { values.withLock { $0[label] ?? [] } }

    fileprivate func append(_ value: Double, to label: String) { values.withLock { $0[label, default: []].append(value) } }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        Handler(Self.key(label, dimensions), self)
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        Handler(Self.key(label, dimensions), self)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        Handler(Self.key(label, dimensions), self)
    }

    /// A metric's key in `recorded(_:)`: its label, then its dimensions if any, `label{name=value,…}`.
    static func key(_ label: String, _ dimensions: [(String, String)]) -> String {
        dimensions.isEmpty ? label : label + "{" + dimensions.map { "\($0.0)=\($0.1)" }.joined(separator: ",") + "}"
    }
    func destroyCounter(_ handler: any CounterHandler) {}
    func destroyRecorder(_ handler: any RecorderHandler) {}
    func destroyTimer(_ handler: any TimerHandler) {}

    /// One metric: each value goes to the factory under the metric's label.
    private final class Handler: CounterHandler, RecorderHandler, TimerHandler {
        let label: String
        let factory: CapturingMetricsFactory

        init(_ label: String, _ factory: CapturingMetricsFactory) {
            self.label = label
            self.factory = factory
        }

        func increment(by amount: Int64) { factory.append(Double(amount), to: label) }
        func reset() {}
        func record(_ value: Int64) { factory.append(Double(value), to: label) }
        func record(_ value: Double) { factory.append(value, to: label) }
        func recordNanoseconds(_ duration: Int64) { factory.append(Double(duration), to: label) }
    }
}
