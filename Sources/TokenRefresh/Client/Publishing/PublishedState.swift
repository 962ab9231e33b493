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
/// `@unchecked Sendable`: `newest` is read and written only by ``publish(_:)`` and ``noteSent(_:count:)``, which
/// only the client's actor calls (from its `machine` observer); readers touch only the atomic values and immutable
/// boxes.
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

        /// The last state sent to the ``TokenRefreshClient/states()`` subscribers and how many were sent, for
        /// ``sentState``: a sequence lock (`sequence` is odd while they change) over the box's address and the count.
        private let sequence = Atomic<UInt64>(0)
        private let sentBox: Atomic<UInt>
        private let sentCount = Atomic<UInt64>(0)
        /// Whether ``TokenRefreshClient/states()`` has been called (the subscribers keep recent states from then on).
        private let watched = Atomic<Bool>(false)

        init(_ state: AuthState) {
            current = Atomic(0)
            sentBox = Atomic(UInt(bitPattern: Unmanaged.passUnretained(Box.loading).toOpaque()))
            publish(state)
        }

        /// The last state sent to the ``TokenRefreshClient/states()`` subscribers and how many were sent, read
        /// without a lock; `nil` where atomics are not available.
        @inline(__always) var sentState: (state: AuthState, count: UInt64)? {
            while true {
                let before = sequence.load(ordering: .acquiring)
                guard before & 1 == 0 else { continue }
                // Acquiring (free on x86): the box's contents happen before, also for the thread sanitizer, which does
                // not model fences.
                let address = sentBox.load(ordering: .acquiring)
                let count = sentCount.load(ordering: .relaxed)
                atomicMemoryFence(ordering: .acquiring)
                guard sequence.load(ordering: .relaxed) == before else { continue }
                // The box is a shared one or in this object's chain, which lives as long as this object (so it is
                // read without a retain).
                let box = Unmanaged<Box>.fromOpaque(UnsafeRawPointer(bitPattern: address)!)
                return (box._withUnsafeGuaranteedRef { $0.state }, count)
            }
        }

        /// Records the `count`-th state sent to the subscribers. Only the client's actor calls this, under the
        /// subscribers' lock.
        func noteSent(_ state: AuthState, count: UInt64) {
            let address = UInt(bitPattern: Unmanaged.passUnretained(box(for: state)).toOpaque())
            let before = sequence.load(ordering: .relaxed)
            sequence.store(before &+ 1, ordering: .relaxed)
            atomicMemoryFence(ordering: .releasing)
            sentBox.store(address, ordering: .releasing)
            sentCount.store(count, ordering: .relaxed)
            sequence.store(before &+ 2, ordering: .releasing)
        }

        /// Whether ``markWatched()`` was called.
        var isWatched: Bool { watched.load(ordering: .acquiring) }

        /// Records that ``TokenRefreshClient/states()`` has been called, after the subscribers were told so.
        func markWatched() { watched.store(true, ordering: .releasing) }

        /// The state last published.
        var state: AuthState {
            let address = current.load(ordering: .acquiring)
            // The box is a shared one or in this object's chain, which lives as long as this object (so it is read
            // without a retain).
            return Unmanaged<Box>.fromOpaque(UnsafeRawPointer(bitPattern: address)!)._withUnsafeGuaranteedRef {
                $0.state
            }
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
            current.store(UInt(bitPattern: Unmanaged.passUnretained(box(for: state)).toOpaque()), ordering: .releasing)
        }

        /// The box of `state`: a shared one, or this client's, made the first time. Only the client's actor calls
        /// this.
        private func box(for state: AuthState) -> Box {
            switch state {
            case .loading: return .loading
            case .unavailable: return .unavailable
            case .signedOut: return .signedOut
            case .signedIn, .expired:
                var made = newest
                while let candidate = made, candidate.state != state { made = candidate.older }
                if let made { return made }
                let box = Box(state, older: newest)
                newest = box
                return box
            }
        }
    #else
        private let value: LockedValue<AuthState>

        init(_ state: AuthState) { value = LockedValue(state) }

        /// The state last published.
        var state: AuthState { value.withLock { $0 } }

        /// Publishes `state`.
        func publish(_ state: AuthState) { value.withLock { $0 = state } }

        /// `nil`: without atomics the subscribers' lock is read instead.
        var sentState: (state: AuthState, count: UInt64)? { nil }

        /// Nothing to record without atomics.
        func noteSent(_ state: AuthState, count: UInt64) {}

        /// `false`: without atomics the subscribers' lock is read instead.
        var isWatched: Bool { false }

        /// Nothing to record without atomics.
        func markWatched() {}
    #endif
}
