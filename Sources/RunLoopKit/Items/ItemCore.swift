import Synchronization

/// What every item (source, descriptor source, timer, observer) keeps about its place in a loop.
///
/// Threading: ``owner`` and ``isValid`` are atomics, safe from any thread. The rest is confined to the owning
/// loop's thread (it is only touched by the loop after the item was bound to it).
final class ItemCore: @unchecked Sendable {  // Unchecked: mutable fields are loop-thread confined, see above.
    /// The loop the item was first added to; fixed for the item's life.
    let owner = AtomicLazyReference<Loop>()
    /// False once invalidated; never true again.
    private let valid = Atomic<Bool>(true)

    /// Ids of the owner's modes the item is in (a short array: items live in one or a few modes).
    var modeIDs: [Int] = []
    /// Whether the item was added to the common pseudo-mode of its owner.
    var isCommon = false

    var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Marks the item invalid; answers whether this call did it (false if it was already invalid).
    func markInvalid() -> Bool {
        valid.exchange(false, ordering: .acquiringAndReleasing)
    }

    /// Binds the item to `loop` unless already bound; answers whether it belongs to `loop` now.
    func bind(to loop: Loop) -> Bool {
        owner.storeIfNil(loop) === loop
    }

    func isIn(modeID: Int) -> Bool {
        modeIDs.contains(modeID)
    }
}

/// Any of the four kinds of item, so the loop's membership code is written once.
enum AnyItem {
    case source(LoopSource)
    case descriptor(FileDescriptorSource)
    case timer(LoopTimer)
    case observer(LoopObserver)

    var core: ItemCore {
        switch self {
        case .source(let item): item.core
        case .descriptor(let item): item.core
        case .timer(let item): item.core
        case .observer(let item): item.core
        }
    }

    var identity: ObjectIdentifier {
        switch self {
        case .source(let item): ObjectIdentifier(item)
        case .descriptor(let item): ObjectIdentifier(item)
        case .timer(let item): ObjectIdentifier(item)
        case .observer(let item): ObjectIdentifier(item)
        }
    }
}
