/// The items of one mode of one loop. Loop thread only.
final class ModeState {
    let name: Loop.Mode
    /// Index in the loop's mode list; items record it in ``ItemCore/modeIDs``.
    let id: Int

    var sources: [ObjectIdentifier: LoopSource] = [:]
    var descriptorSources: [ObjectIdentifier: FileDescriptorSource] = [:]
    var timers: [ObjectIdentifier: LoopTimer] = [:]
    /// Sorted by order; equal orders keep the order they were added in.
    private(set) var observers: [LoopObserver] = []
    /// The union of the observers' activities, to skip dispatch cheaply. Only ever grows, as in CF.
    private(set) var observedActivities: Loop.Activity = []

    init(name: Loop.Mode, id: Int) {
        self.name = name
        self.id = id
    }

    /// True when the mode has no source, descriptor source or timer (observers do not count).
    var hasNoItems: Bool {
        sources.isEmpty && descriptorSources.isEmpty && timers.isEmpty
    }

    func insertObserver(_ observer: LoopObserver) {
        let index = observers.firstIndex { $0.order > observer.order } ?? observers.endIndex
        observers.insert(observer, at: index)
        observedActivities.formUnion(observer.activities)
    }

    func removeObserver(_ observer: LoopObserver) {
        if let index = observers.firstIndex(where: { $0 === observer }) {
            observers.remove(at: index)
        }
    }

    func insert(_ item: AnyItem) {
        switch item {
        case .source(let source): sources[ObjectIdentifier(source)] = source
        case .descriptor(let source): descriptorSources[ObjectIdentifier(source)] = source
        case .timer(let timer): timers[ObjectIdentifier(timer)] = timer
        case .observer(let observer): insertObserver(observer)
        }
    }

    func remove(_ item: AnyItem) {
        switch item {
        case .source(let source): sources[ObjectIdentifier(source)] = nil
        case .descriptor(let source): descriptorSources[ObjectIdentifier(source)] = nil
        case .timer(let timer): timers[ObjectIdentifier(timer)] = nil
        case .observer(let observer): removeObserver(observer)
        }
    }
}
