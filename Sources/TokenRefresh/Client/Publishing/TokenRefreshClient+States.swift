import AuthToken
import Foundation

extension TokenRefreshClient {
    /// The subscribers of ``states()`` and the last state they were given, under one lock so that a new
    /// subscriber's first element and every later change arrive in order, each once.
    struct StateSubscribers: Sendable {
        var last: AuthState = .loading
        /// How many states were sent: `last` is the `sent`-th.
        var sent: UInt64 = 0
        /// The newest states sent (at most 64, ending with `last`), kept once ``states()`` has been called, for the
        /// sequences that have not subscribed yet (see ``AuthStateSequence``).
        var recent: [AuthState] = []
        /// The client, once ``states()`` has been called (weak: it owns these subscribers).
        weak var client: TokenRefreshClient?
        var isWatched = false
        var next: UInt64 = 0
        var continuations: [UInt64: AsyncStream<AuthState>.Continuation] = [:]

        /// The states kept that were sent after the `version`-th.
        func sent(after version: UInt64) -> ArraySlice<AuthState> {
            recent.suffix(Int(min(sent - version, UInt64(recent.count))))
        }
    }

    /// One kind of the client's subscribers (``StateSubscribers``, ``SessionStateSubscribers``), behind the one lock
    /// of ``TokenRefreshClient/subscribers``: a lock of its own cost every client 100 bytes more.
    struct SubscribersPart<Part>: Sendable {
        let subscribers: LockedValue<Subscribers>
        let part: any WritableKeyPath<Subscribers, Part> & Sendable

        init(_ subscribers: LockedValue<Subscribers>, _ part: any WritableKeyPath<Subscribers, Part> & Sendable) {
            self.subscribers = subscribers
            self.part = part
        }

        /// Runs `body` with this part, holding the subscribers' lock.
        func withLock<Result>(_ body: (inout Part) -> Result) -> Result {
            subscribers.withLock { body(&$0[keyPath: part]) }
        }
    }

    /// The session state now, then every change, for a UI loop:
    ///
    /// ```swift
    /// for await state in client.states() {
    ///     switch state {
    ///     case .signedIn(let userID): showMain(for: userID)
    ///     case .expired(let lastUserID): showOffline(for: lastUserID)
    ///     case .signedOut: showLogin()
    ///     case .loading: showSpinner()
    ///     case .unavailable: showLocked()  // the store cannot be read yet; not signed out
    ///     }
    /// }
    /// ```
    ///
    /// Each call returns its own sequence; the first element is the current state, and equal consecutive states
    /// are sent once. The sequence ends when the client goes away. Use ``events()`` for what happened and why.
    ///
    /// - Returns: The states; the changes that reach a slow reader are the newest 64.
    @inlinable public nonisolated func states() -> AuthStateSequence {
        // The first element is the state now; the stream for the changes is made at the second `next()`. Once
        // `states()` has been called, the state and its count are read without a lock where atomics allow, inlined
        // into the caller: no call, no lock.
        if let (state, count) = publishedState.watchedSentState {
            return AuthStateSequence(subscribers: subscribers, first: state, version: count)
        }
        return statesReadUnderLock()
    }

    /// ``states()`` the first time (and every time where atomics are not available): the state and its count read
    /// under the subscribers' lock, which from now on keep the recent states for the sequences.
    @usableFromInline nonisolated func statesReadUnderLock() -> AuthStateSequence {
        let (state, version) = subscribers.withLock { subscribers in
            if !subscribers.states.isWatched {
                subscribers.states.isWatched = true
                subscribers.states.client = self
                publishedState.markWatched()
            }
            return (subscribers.states.last, subscribers.states.sent)
        }
        return AuthStateSequence(subscribers: subscribers, first: state, version: version)
    }

    /// A stream of the states sent after the `version`-th (the newest 64 of those already sent first), then of
    /// every change, until the client goes away.
    nonisolated static func stateChanges(
        of allSubscribers: LockedValue<Subscribers>, after version: UInt64
    ) -> AsyncStream<AuthState> {
        // Held strongly until the subscription is made, outside the lock: the client's deinit takes the lock.
        let client = allSubscribers.withLock { $0.states.client }
        let (stream, continuation) = AsyncStream.makeStream(of: AuthState.self, bufferingPolicy: .bufferingNewest(64))
        let id: UInt64? = allSubscribers.withLock { all in
            let missed = all.states.sent(after: version)
            for state in missed { continuation.yield(state) }
            guard client != nil else { return nil }  // gone: its deinit ended every stream, or is ending them
            all.states.next += 1
            all.states.continuations[all.states.next] = continuation
            return all.states.next
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak allSubscribers] _ in
            _ = allSubscribers?.withLock { $0.states.continuations.removeValue(forKey: id) }
        }
        return withExtendedLifetime(client) { stream }
    }

    /// Sends `state` to the ``states()`` subscribers if it differs from the last one sent.
    nonisolated func publishState(_ state: AuthState) {
        stateSubscribers.withLock { subscribers in
            guard subscribers.last != state else { return }
            subscribers.last = state
            subscribers.sent += 1
            publishedState.noteSent(state, count: subscribers.sent)
            if subscribers.isWatched {
                if subscribers.recent.count == 64 { subscribers.recent.removeFirst() }
                subscribers.recent.append(state)
            }
            for continuation in subscribers.continuations.values { continuation.yield(state) }
        }
    }

    /// The server rejected `accessToken` after a refresh made for that request: publish
    /// ``AuthEvent/Kind/unauthorizedAfterRefresh`` and, when `endSession` is `true` and the token is still the
    /// current one, end the session with ``AuthEvent/SignOutReason/unauthorized``.
    ///
    /// ``/NetworkRetry/AuthenticatedClient`` calls this; an app's own HTTP layer may too.
    ///
    /// - Parameters:
    ///   - accessToken: The rejected access token.
    ///   - endSession: Whether to end the session.
    public func sessionRejected(afterRefreshOf accessToken: String, endSession: Bool) async {
        let action = machine.rejectedAfterRefresh(of: accessToken, endsSession: endSession)
        switch action {
        case .publish(let event):
            publish(event)
        case .publishThenEnd(let event, let reason):
            publish(event)
            await self.endSession(reason: reason, error: nil)
        }
    }

    /// Tells the client the network is back: an expired session is checked with the provider at once (a
    /// refresh), as the diet-app ADR's `handleNetworkRestore()` does. A rejection ends the session; another
    /// failure keeps it expired.
    ///
    /// - Returns: The state afterwards.
    @discardableResult
    public func networkRestored() async -> AuthState {
        await signOuts.startSending()  // revocations an offline sign-out left
        let action = machine.networkRestored(checksWithServer: strategy.checksSessionWithServer)
        await check(action)
        return state
    }
}
