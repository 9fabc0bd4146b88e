/// A weak reference, to wait until something the loop held is released (its descriptor then closed).
struct WeakReference<Object: AnyObject> {
    /// The object, or `nil` once it was released.
    weak var object: Object?

    /// A weak reference to `object`.
    init(_ object: Object) {
        self.object = object
    }

    /// Whether the object was released.
    var isReleased: Bool { object == nil }
}
