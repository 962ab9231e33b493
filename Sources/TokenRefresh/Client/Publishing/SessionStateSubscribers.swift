import AuthToken

extension TokenRefreshClient {
    /// The subscribers of ``sessionStates()`` and the last state they were given.
    struct SessionStateSubscribers: Sendable {
        var last: AuthSessionState?
        var next: UInt64 = 0
        var continuations: [UInt64: AsyncStream<AuthSessionState>.Continuation] = [:]

        /// Adds `continuation`, gives it the last state sent (if any); returns its ID.
        mutating func subscribe(_ continuation: AsyncStream<AuthSessionState>.Continuation) -> UInt64 {
            next += 1
            continuations[next] = continuation
            if let last { continuation.yield(last) }
            return next
        }

        /// Sends `state` to every subscriber unless it is the last state sent (`nil`: nothing to send).
        mutating func send(_ state: AuthSessionState?) {
            guard let state, last != state else { return }
            last = state
            for continuation in continuations.values { continuation.yield(state) }
        }
    }
}
