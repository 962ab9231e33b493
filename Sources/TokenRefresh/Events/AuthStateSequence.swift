public import AuthToken

/// The session states of one ``TokenRefreshClient``, as ``TokenRefreshClient/states()`` returns them: the state when
/// `states()` was called, then every change, equal consecutive states once. It ends when the client goes away.
///
/// Iterate it with `for await`. The first element needs no stream; the stream that carries the changes is made
/// when the second element is asked for, and it begins with every state sent since `states()` was called (the
/// newest 64, as for a slow reader), so no change is missed. A copy made before the first element iterates on its
/// own; iterate one that has gone further from one task at a time.
public struct AuthStateSequence: AsyncSequence, AsyncIteratorProtocol, Sendable {
    /// The client's subscribers (not the client: a reader does not keep it alive).
    @usableFromInline let subscribers: LockedValue<TokenRefreshClient.Subscribers>
    /// The state when `states()` was called, until it is read.
    @usableFromInline var first: AuthState?
    /// How many states the client had sent when `states()` was called.
    @usableFromInline let version: UInt64
    /// The changes, from the second element on (`nil` before).
    @usableFromInline var changes: Changes?

    /// The stream of changes, in a class of this module: a field of the standard library's `AsyncStream` (a type
    /// whose layout other modules do not see) made every copy and destruction of the sequence go through its
    /// value witnesses, a third of the first element's cost.
    @usableFromInline final class Changes: Sendable {
        let stream: AsyncStream<AuthState>
        init(_ stream: AsyncStream<AuthState>) { self.stream = stream }
    }

    /// Inlinable, as ``TokenRefreshClient/states()``'s fast path, which makes it in its caller.
    @inlinable init(subscribers: LockedValue<TokenRefreshClient.Subscribers>, first: AuthState, version: UInt64) {
        self.subscribers = subscribers
        self.first = first
        self.version = version
    }

    /// Returns the sequence itself: each copy iterates on its own from where it stands.
    @inlinable public consuming func makeAsyncIterator() -> AuthStateSequence { self }

    /// The next state, or `nil` once the client has gone away (or the task was cancelled).
    @inlinable public nonisolated(nonsending) mutating func next() async -> AuthState? {
        // The first element is answered here, inlined into the caller: no stream, no async call.
        // `take()` moves the state out: no copy, and nothing left to destroy.
        if let state = first.take() { return state }
        return await nextChange()
    }

    /// The next change: the first call subscribes (the states sent since `states()` first, then every change).
    @usableFromInline nonisolated(nonsending) mutating func nextChange() async -> AuthState? {
        if changes == nil { changes = Changes(TokenRefreshClient.stateChanges(of: subscribers, after: version)) }
        var iterator = changes.unsafelyUnwrapped.stream.makeAsyncIterator()
        return await iterator.next()
    }
}
