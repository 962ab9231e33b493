/// The retry rules of one authenticated call: at most one retry of the request, whatever asked for it.
///
/// A 401 that a refresh cures (``Rejection/tokenRejected``) and a DPoP nonce challenge
/// (``Rejection/nonceChallenge(tokenStale:)``) share that one retry. A nonce challenge whose token is also stale
/// (expired by the clock, or rejected in the same answer) refreshes and takes the nonce in the same retry. So a call
/// sends its request at most twice and refreshes at most once, and never loops, whatever the server answers.
///
/// No I/O and no clock: ``AuthenticatedClient`` classifies each answer and performs the returned action.
package struct RequestRetryMachine: Sendable {
    /// How an answer to a request that carried the token reads.
    package enum Rejection: Sendable, Hashable {
        /// Not a rejection: hand the answer back (or follow its redirect).
        case none
        /// A rejection no retry cures.
        case final(NetworkRetryError)
        /// The token was rejected: a refresh may cure it.
        case tokenRejected
        /// The server asked for a DPoP nonce it just sent; `tokenStale` when the token needs a refresh as well.
        case nonceChallenge(tokenStale: Bool)
    }

    /// What the owner does next.
    package enum Action: Sendable, Hashable {
        /// Hand the answer back.
        case deliver
        /// Throw.
        case fail(NetworkRetryError)
        /// Send the request again, after a refresh when `refreshingFirst`.
        case retry(refreshingFirst: Bool)
    }

    private enum State: Sendable, Hashable {
        case firstSend
        case retried(refreshed: Bool)
    }

    private var state = State.firstSend

    /// A machine for a call that has sent its request once.
    package init() {}

    /// Whether the call has refreshed its token.
    package var hasRefreshed: Bool { state == .retried(refreshed: true) }

    /// The answer to the latest send was read as `rejection`.
    ///
    /// - Parameter rejection: How the answer reads.
    /// - Returns: What to do.
    package mutating func answered(_ rejection: Rejection) -> Action {
        switch (state, rejection) {
        case (_, .none):
            return .deliver
        case (_, .final(let error)):
            return .fail(error)
        case (.firstSend, .tokenRejected):
            state = .retried(refreshed: true)
            return .retry(refreshingFirst: true)
        case (.firstSend, .nonceChallenge(let stale)):
            state = .retried(refreshed: stale)
            return .retry(refreshingFirst: stale)
        case (.retried(let refreshed), .tokenRejected):
            return .fail(refreshed ? .unauthorizedAfterRefresh : .unauthorized)
        case (.retried, .nonceChallenge):
            return .fail(.dpopProofRejected)
        }
    }
}
