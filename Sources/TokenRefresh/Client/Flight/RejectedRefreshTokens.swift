import Crypto
import Foundation

/// The refresh tokens a server rejected, kept only as keyed hashes so that nothing in memory (a `dump`, a
/// debugger, a crash report) can give them back.
///
/// Each client draws its own random HMAC key, so a hash means nothing outside this process and cannot be
/// checked against a guessed token without the key.
struct RejectedRefreshTokens: Sendable, CustomReflectable {
    private let key = SymmetricKey(size: .bits256)
    private var digests: Set<Data> = []

    /// Remembers that `refreshToken` was rejected.
    mutating func insert(_ refreshToken: String) {
        digests.insert(digest(refreshToken))
    }

    /// Whether `refreshToken` was rejected before.
    func contains(_ refreshToken: String) -> Bool {
        !digests.isEmpty && digests.contains(digest(refreshToken))
    }

    private func digest(_ refreshToken: String) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: Data(refreshToken.utf8), using: key))
    }

    /// How many tokens were rejected; never the hashes or the key.
    var customMirror: Mirror { Mirror(self, children: ["count": digests.count], displayStyle: .struct) }
}
