#if os(Linux) || os(Android)
    // `public`: the lock-free read inlined into ``TokenRefreshClient/states()``'s callers names the atomics' types.
    // No public declaration comes with it.
    public import Synchronization
#else
    import AuthToken  // LockedValue
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
///
/// `@usableFromInline`: ``TokenRefreshClient/states()`` reads ``watchedSentState`` inlined into its caller.
@usableFromInline final class PublishedState: @unchecked Sendable {
    #if os(Linux) || os(Android)
        @usableFromInline final class Box: Sendable {
            @usableFromInline let state: AuthState
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
        /// ``watchedSentState``: a sequence lock over the box's address. `sequence` is odd while they change, counts
        /// the states sent in its bits 1 to 62 (each send adds 2), and has ``watchedBit`` set once
        /// ``TokenRefreshClient/states()`` has been called. Both are written under the subscribers' lock only.
        @usableFromInline let sequence = Atomic<UInt64>(0)
        @usableFromInline let sentBox: Atomic<UInt>
        /// Set in ``sequence`` once the subscribers keep recent states (see ``markWatched()``).
        @inlinable static var watchedBit: UInt64 { 1 << 63 }

        init(_ state: AuthState) {
            current = Atomic(0)
            sentBox = Atomic(UInt(bitPattern: Unmanaged.passUnretained(Box.loading).toOpaque()))
            publish(state)
        }

        /// The last state sent to the ``TokenRefreshClient/states()`` subscribers and how many were sent, read
        /// without a lock once ``markWatched()`` has been called; `nil` before, and where atomics are not available.
        @inlinable @inline(__always) var watchedSentState: (state: AuthState, count: UInt64)? {
            while true {
                let before = sequence.load(ordering: .acquiring)
                guard before & Self.watchedBit != 0 else { return nil }
                guard before & 1 == 0 else { continue }
                // Acquiring (free on x86): the box's contents happen before, also for the thread sanitizer, which does
                // not model fences.
                let address = sentBox.load(ordering: .acquiring)
                atomicMemoryFence(ordering: .acquiring)
                guard sequence.load(ordering: .relaxed) == before else { continue }
                // The box is a shared one or in this object's chain, which lives as long as this object (so it is
                // read without a retain).
                let box = Unmanaged<Box>.fromOpaque(UnsafeRawPointer(bitPattern: address).unsafelyUnwrapped)
                return (box._withUnsafeGuaranteedRef { $0.state }, (before & ~Self.watchedBit) >> 1)
            }
        }

        /// Records the `count`-th state sent to the subscribers. Only the client's actor calls this, under the
        /// subscribers' lock, once per state sent (so `count` is always one more than the last).
        func noteSent(_ state: AuthState, count: UInt64) {
            let address = UInt(bitPattern: Unmanaged.passUnretained(box(for: state)).toOpaque())
            let before = sequence.load(ordering: .relaxed)
            assert((before & ~Self.watchedBit) >> 1 == count - 1, "a state sent was not noted")
            sequence.store(before &+ 1, ordering: .relaxed)
            atomicMemoryFence(ordering: .releasing)
            sentBox.store(address, ordering: .releasing)
            sequence.store(before &+ 2, ordering: .releasing)
        }

        /// Records that ``TokenRefreshClient/states()`` has been called. Called under the subscribers' lock, after
        /// they were told so.
        func markWatched() {
            sequence.store(sequence.load(ordering: .relaxed) | Self.watchedBit, ordering: .releasing)
        }

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
        @inlinable var watchedSentState: (state: AuthState, count: UInt64)? { nil }

        /// Nothing to record without atomics.
        func noteSent(_ state: AuthState, count: UInt64) {}

        /// Nothing to record without atomics.
        func markWatched() {}
    #endif
}
