#if os(Linux) || os(Android)
    import Synchronization
#endif

/// The session state behind ``TokenRefreshClient/currentState``: written by the actor, read from any thread.
///
/// On Linux and Android the read takes no lock: every state published is kept in an immutable box for the life of
/// the client (one box per distinct state, so one per user this client has signed in, plus `loading` and
/// `signedOut`), and the current box's address is an atomic value, stored with release and loaded with acquire
/// ordering. A reader therefore never holds a box that is freed or changing. Elsewhere it is a ``LockedValue``.
///
/// `@unchecked Sendable`: `interned` is read and written only by ``publish(_:)``, which only the client's actor
/// calls (from its `machine` observer), and by `init`; readers touch only the atomic value and immutable boxes.
final class PublishedState: @unchecked Sendable {
    #if os(Linux) || os(Android)
        private final class Box: Sendable {
            let state: AuthState
            init(_ state: AuthState) { self.state = state }
        }

        private let current: Atomic<UInt>
        private var interned: [AuthState: Box]

        init(_ state: AuthState) {
            let box = Box(state)
            interned = [state: box]
            current = Atomic(UInt(bitPattern: Unmanaged.passUnretained(box).toOpaque()))
        }

        /// The state last published.
        var state: AuthState {
            let address = current.load(ordering: .acquiring)
            // The box is kept in `interned` for as long as this object lives.
            return Unmanaged<Box>.fromOpaque(UnsafeRawPointer(bitPattern: address)!).takeUnretainedValue().state
        }

        /// Publishes `state`. Only the client's actor calls this.
        func publish(_ state: AuthState) {
            let box = interned[state] ?? Box(state)
            interned[state] = box
            current.store(UInt(bitPattern: Unmanaged.passUnretained(box).toOpaque()), ordering: .releasing)
        }
    #else
        private let value: LockedValue<AuthState>

        init(_ state: AuthState) { value = LockedValue(state) }

        /// The state last published.
        var state: AuthState { value.withLock { $0 } }

        /// Publishes `state`.
        func publish(_ state: AuthState) { value.withLock { $0 = state } }
    #endif
}
