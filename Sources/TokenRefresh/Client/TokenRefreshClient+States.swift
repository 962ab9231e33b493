import AuthToken
import Foundation

extension TokenRefreshClient {
    /// The subscribers of ``states()`` and the last state they were given, under one lock so that a new
    /// subscriber's first element and every later change arrive in order, each once.
    struct StateSubscribers: Sendable {
        var last: AuthState = .loading
        var next: UInt64 = 0
        var continuations: [UInt64: AsyncStream<AuthState>.Continuation] = [:]
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
    /// Each call returns its own stream; the first element is the current state, and equal consecutive states
    /// are sent once. The stream ends when the client goes away. Use ``events()`` for what happened and why.
    ///
    /// - Returns: The stream; it buffers the newest 64 states for a slow reader.
    public nonisolated func states() -> AsyncStream<AuthState> {
        let (stream, continuation) = AsyncStream.makeStream(of: AuthState.self, bufferingPolicy: .bufferingNewest(64))
        let id = stateSubscribers.withLock { subscribers in
            subscribers.next += 1
            subscribers.continuations[subscribers.next] = continuation
            continuation.yield(subscribers.last)
            return subscribers.next
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.stateSubscribers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sends `state` to the ``states()`` subscribers if it differs from the last one sent.
    nonisolated func publishState(_ state: AuthState) {
        stateSubscribers.withLock { subscribers in
            guard subscribers.last != state else { return }
            subscribers.last = state
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
        publish(
            .unauthorizedAfterRefresh(userID: session?.userID, tokenFingerprint: AuthToken.fingerprint(accessToken)))
        guard endSession, let session, session.token.accessToken == accessToken else { return }
        await self.endSession(reason: .unauthorized, error: nil)
    }

    /// Tells the client the network is back: an expired session is checked with the provider at once (a
    /// refresh), as the diet-app ADR's `handleNetworkRestore()` does. A rejection ends the session; another
    /// failure keeps it expired.
    ///
    /// - Returns: The state afterwards.
    @discardableResult
    public func networkRestored() async -> AuthState {
        let action = machine.networkRestored(checksWithServer: strategy.checksSessionWithServer)
        await check(action)
        return state
    }
}
