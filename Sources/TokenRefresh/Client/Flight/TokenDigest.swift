import Crypto
import Foundation

/// A keyed hash of a token (HMAC-SHA-256), 32 bytes held inline: what ``RejectedRefreshTokens``, ``SessionLineage``
/// and ``StatelessRefreshes`` keep instead of tokens, so that nothing in memory (a `dump`, a debugger, a crash report)
/// gives a token back.
///
/// The key is random, drawn once per process at first use and never stored or shown, so a digest means nothing
/// outside this process and cannot be checked against a guessed token without the key.
struct TokenDigest: Hashable, Sendable {
    private static let key = SymmetricKey(size: .bits256)

    private let words: SIMD4<UInt64>

    /// The digest of `token`.
    init(_ token: String) {
        let code = HMAC<SHA256>.authenticationCode(for: Data(token.utf8), using: Self.key)
        words = code.withUnsafeBytes { bytes in
            SIMD4(
                bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self),
                bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self))
        }
    }
}
