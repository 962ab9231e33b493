import AuthToken
import Foundation

/// Refreshes of refresh tokens that are not the held session's, for the seed apps' stateless
/// `refreshToken(_:)`: a refresh token goes in and a pair comes out, and the held session is neither the answer
/// nor overwritten.
///
/// One refresh runs per refresh token, shared by concurrent callers. The answer is remembered (the newest
/// ``capacity`` answers) when the server rotated the refresh token, so that a caller who read the old refresh token
/// before the app saved the new pair gets the same chain's newest pair instead of presenting a consumed token (which
/// a server that detects reuse answers by revoking the whole family). Keys are keyed hashes (``TokenDigest``), as in
/// ``RejectedRefreshTokens``.
struct StatelessRefreshes: Sendable, CustomReflectable {
    /// How many answers are remembered.
    static let capacity = 8

    private var flights: [TokenDigest: RefreshFlight] = [:]
    /// Each answer with the refresh token it rotated to (only rotated answers are kept).
    private var answers: [(presented: TokenDigest, token: AuthToken, rotated: String)] = []

    /// The newest pair of the chain `refreshToken` started and its refresh token, if it was refreshed here and
    /// rotated.
    func newest(after refreshToken: String) -> (token: AuthToken, refreshToken: String)? {
        var presented = TokenDigest(refreshToken)
        var newest: (token: AuthToken, refreshToken: String)?
        for _ in 0..<Self.capacity {
            guard let next = answers.last(where: { $0.presented == presented }) else { break }
            newest = (next.token, next.rotated)
            presented = TokenDigest(next.rotated)
        }
        return newest
    }

    /// Whether `refreshToken` was refreshed here: it is in flight, or its chain has an answer.
    func refreshed(_ refreshToken: String) -> Bool {
        newest(after: refreshToken) != nil || flight(for: refreshToken) != nil
    }

    /// The refresh of `refreshToken` in flight, if any.
    func flight(for refreshToken: String) -> RefreshFlight? { flights[TokenDigest(refreshToken)] }

    /// Records that `flight` refreshes `refreshToken`.
    mutating func begin(_ flight: RefreshFlight, for refreshToken: String) {
        flights[TokenDigest(refreshToken)] = flight
    }

    /// The refresh of `refreshToken` ended with `result`.
    mutating func end(_ refreshToken: String, result: Result<AuthToken, TokenRefreshError>) {
        let presented = TokenDigest(refreshToken)
        flights[presented] = nil
        guard case .success(let token) = result, let rotated = token.refreshToken, rotated != refreshToken else {
            return
        }
        answers.removeAll { $0.presented == presented }
        answers.append((presented, token, rotated))
        if answers.count > Self.capacity { answers.removeFirst(answers.count - Self.capacity) }
    }

    /// How many refreshes run and answers are kept; never a token, a hash or the key.
    var customMirror: Mirror {
        Mirror(self, children: ["inFlight": flights.count, "answers": answers.count], displayStyle: .struct)
    }
}
