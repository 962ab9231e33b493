import AuthToken
import Foundation

/// The tokens the current session has held (the pair it started with and every pair a refresh or another
/// process gave it), as keyed hashes: what tells a token of this session from one of another session.
///
/// A 401 for an older access token of this session is a stale rejection, answered with the current token; a 401
/// for an access token that is not in here belongs to another session (the app signed out, or signed another
/// user in, while the request was under way), and is never answered with this session's token. Likewise a refresh
/// token the session held before is answered with the current pair, and one it never held is not.
///
/// The newest ``capacity`` tokens of each kind are kept, as ``TokenDigest``s, so nothing in memory gives a token
/// back.
struct SessionLineage: Sendable, CustomReflectable {
    /// How many access and refresh tokens are remembered (each).
    static let capacity = 32

    private var accessDigests: [TokenDigest] = []
    private var refreshDigests: [TokenDigest] = []

    /// Forgets every token: a new session, or none.
    mutating func reset() {
        accessDigests.removeAll()
        refreshDigests.removeAll()
    }

    /// Remembers both tokens of `token`.
    mutating func record(_ token: AuthToken) {
        record(accessToken: token.accessToken)
        if let refreshToken = token.refreshToken { record(refreshToken: refreshToken) }
    }

    /// Remembers an access token of this session.
    mutating func record(accessToken: String) {
        Self.append(TokenDigest(accessToken), to: &accessDigests)
    }

    /// Remembers a refresh token of this session.
    mutating func record(refreshToken: String) {
        Self.append(TokenDigest(refreshToken), to: &refreshDigests)
    }

    /// Whether `accessToken` is one this session held.
    func contains(accessToken: String) -> Bool {
        !accessDigests.isEmpty && accessDigests.contains(TokenDigest(accessToken))
    }

    /// Whether `refreshToken` is one this session held.
    func contains(refreshToken: String) -> Bool {
        !refreshDigests.isEmpty && refreshDigests.contains(TokenDigest(refreshToken))
    }

    private static func append(_ digest: TokenDigest, to digests: inout [TokenDigest]) {
        guard !digests.contains(digest) else { return }
        digests.append(digest)
        if digests.count > capacity { digests.removeFirst(digests.count - capacity) }
    }

    /// How many tokens are remembered; never the hashes or the key.
    var customMirror: Mirror {
        Mirror(
            self, children: ["accessTokens": accessDigests.count, "refreshTokens": refreshDigests.count],
            displayStyle: .struct)
    }
}
