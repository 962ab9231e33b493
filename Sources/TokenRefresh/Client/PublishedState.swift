#if os(Linux) || os(Android)
    import Synchronization
#endif

/// The session state behind ``TokenRefreshClient/currentState``: written by the actor, read from any thread.
///
/// On Linux and Android the read takes no lock: every state published is kept in an immutable box for the life of
/// the client, and the current box's address is an atomic value, stored with release and loaded with acquire
/// ordering. A reader therefore never holds a box that is freed or changing. `loading` and `signedOut` have one
/// shared box for every client; a client keeps one box per other distinct state it published (`signedIn` and
/// `expired` for each user it has signed in), chained from the newest, so it holds no table. Elsewhere it is a
/// ``LockedValue``.
///
/// `@unchecked Sendable`: `newest` is read and written only by ``publish(_:)``, which only the client's actor
/// calls (from its `machine` observer); readers touch only the atomic value and immutable boxes.
final class PublishedState: @unchecked Sendable {
    #if os(Linux) || os(Android)
        private final class Box: Sendable {
            let state: AuthState
            /// The box made before this one: the chain keeps every box of the client alive.
            let older: Box?

            init(_ state: AuthState, older: Box?) {
                self.state = state
                self.older = older
            }

            /// The boxes every client shares (immortal).
            static let loading = Box(.loading, older: nil)
            static let signedOut = Box(.signedOut, older: nil)
            static let unavailable = Box(.unavailable, older: nil)
        }

        private let current: Atomic<UInt>
        /// This client's newest box of its own (`nil`: it published only shared ones).
        private var newest: Box?

        init(_ state: AuthState) {
            current = Atomic(0)
            publish(state)
        }

        /// The state last published.
        var state: AuthState {
            let address = current.load(ordering: .acquiring)
            // The box is a shared one or in this object's chain, which lives as long as this object.
            return Unmanaged<Box>.fromOpaque(UnsafeRawPointer(bitPattern: address)!).takeUnretainedValue().state
        }

        /// How many boxes this client made (for tests).
        var boxCount: Int {
            var count = 0
            var next = newest
            while let box = next {
                count += 1
                next = box.older
            }
            return count
        }

        /// Publishes `state`. Only the client's actor calls this.
        func publish(_ state: AuthState) {
            let box: Box
            switch state {
            case .loading: box = .loading
            case .unavailable: box = .unavailable
            case .signedOut: box = .signedOut
            case .signedIn, .expired:
                var made = newest
                while let candidate = made, candidate.state != state { made = candidate.older }
                box = made ?? Box(state, older: newest)
                if made == nil { newest = box }
            }
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
