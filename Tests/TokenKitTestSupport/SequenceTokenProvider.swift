package import AuthToken
import Foundation
import NetworkRetry
import TokenKitLogCheck

/// Hands out `current`; a rejection of the current token moves to the next of `refreshed` (one refresh).
///
/// Every token it may hand out is registered in `TestSecrets.shared`, so the log check searches for it.
package actor SequenceTokenProvider: TokenProvider {
    /// The token handed out first by default: the server in the tests rejects it.
    package static let expired = "expired-access-token"
    /// The token a refresh hands out by default.
    package static let fresh = "fresh-access-token"

    package private(set) var current: String
    private var refreshed: [String]
    package private(set) var refreshCount = 0

    package init(current: String = SequenceTokenProvider.expired, refreshed: [String] = [SequenceTokenProvider.fresh]) {
        for token in [current] + refreshed {
            TestSecrets.shared.register(token, as: .accessToken, origin: "SequenceTokenProvider")
        }
        self.current = current
        self.refreshed = refreshed
    }

    package static func token(_ text: String) -> AuthToken {
        AuthToken(accessToken: text, receivedAt: Date(timeIntervalSince1970: 0))
    }

    package func validToken() async throws -> AuthToken { Self.token(current) }

    package func refreshToken(afterRejectionOf accessToken: String) async throws -> AuthToken {
        if accessToken == current, !refreshed.isEmpty {
            refreshCount += 1
            current = refreshed.removeFirst()
        }
        return Self.token(current)
    }
}
