import AuthToken
import Foundation
import NetworkRetry

/// Hands out `current`; a rejection of the current token moves to the next of `refreshed` (one refresh).
actor SequenceTokenProvider: TokenProvider {
    private(set) var current: String
    private var refreshed: [String]
    private(set) var refreshCount = 0

    init(current: String = "expired", refreshed: [String] = ["fresh"]) {
        self.current = current
        self.refreshed = refreshed
    }

    static func token(_ text: String) -> AuthToken {
        AuthToken(accessToken: text, receivedAt: Date(timeIntervalSince1970: 0))
    }

    func validToken() async throws -> AuthToken { Self.token(current) }

    func refreshToken(afterRejectionOf accessToken: String) async throws -> AuthToken {
        if accessToken == current, !refreshed.isEmpty {
            refreshCount += 1
            current = refreshed.removeFirst()
        }
        return Self.token(current)
    }
}
