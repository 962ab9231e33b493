package import NetworkRetry

/// A planted bug for the explorations of the DPoP retry rules: the composition that a client with one nonce retry
/// and, on its own, one "401, refresh, retry" would write. A nonce retry followed by a rejected token sends the
/// request a third time; a refresh followed by a nonce challenge on a stale token refreshes a second time.
package struct SeparateNonceAndRefreshRetries: Sendable {
    private var nonceRetried = false
    private var refreshed = false

    /// Rules for a call that has sent its request once.
    package init() {}

    /// The answer to the latest send was read as `rejection`; what the buggy rules do next.
    package mutating func answered(_ rejection: RequestRetryMachine.Rejection) -> RequestRetryMachine.Action {
        switch rejection {
        case .none: return .deliver
        case .final(let error): return .fail(error)
        case .tokenRejected:
            guard !refreshed else { return .fail(.unauthorizedAfterRefresh) }
            refreshed = true
            return .retry(refreshingFirst: true)
        case .nonceChallenge(let stale):
            guard !nonceRetried else { return .fail(.dpopProofRejected) }
            nonceRetried = true
            if stale { refreshed = true }
            return .retry(refreshingFirst: stale)
        }
    }
}
