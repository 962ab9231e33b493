/// The refresh tokens a server rejected, kept only as keyed hashes (``TokenDigest``) so that nothing in memory can
/// give them back.
struct RejectedRefreshTokens: Sendable, CustomReflectable {
    private var digests: Set<TokenDigest> = []

    /// Remembers that `refreshToken` was rejected.
    mutating func insert(_ refreshToken: String) {
        digests.insert(TokenDigest(refreshToken))
    }

    /// Whether `refreshToken` was rejected before.
    func contains(_ refreshToken: String) -> Bool {
        !digests.isEmpty && digests.contains(TokenDigest(refreshToken))
    }

    /// How many tokens were rejected; never the hashes or the key.
    var customMirror: Mirror { Mirror(self, children: ["count": digests.count], displayStyle: .struct) }
}
