public import Foundation

/// Where a ``DPoPVerifier`` spends each proof's `jti`, so a proof is accepted once.
///
/// A proof is identified by its key's RFC 7638 thumbprint and its `jti`. ``spend(keyThumbprint:jwtID:until:now:)``
/// must be atomic: of two calls with the same pair, whichever replica makes them, exactly one returns `true`. An
/// entry must be kept at least until `expiry` (the last moment the proof's `iat` is still accepted).
///
/// TokenKit ships ``InMemoryDPoPReplayCache`` and, with the `PostgresStore` trait, `PostgresDPoPReplayCache`. Your own:
/// ```swift
/// actor DictionaryReplayCache: DPoPReplayCache {
///     private var spent: [String: Date] = [:]
///
///     func spend(keyThumbprint: String, jwtID: String, until expiry: Date, now: Date) async throws -> Bool {
///         spent = spent.filter { $0.value >= now }
///         let key = keyThumbprint + "." + jwtID
///         guard spent[key] == nil else { return false }
///         spent[key] = expiry
///         return true
///     }
/// }
/// ```
public protocol DPoPReplayCache: Sendable {
    /// Marks the proof as spent until `expiry`, unless it already is.
    ///
    /// - Parameters:
    ///   - keyThumbprint: The proof key's RFC 7638 thumbprint (base64url, 43 characters).
    ///   - jwtID: The proof's `jti` (1 to 256 bytes of UTF-8).
    ///   - expiry: The last moment the proof could still be accepted; the entry must live at least this long.
    ///   - now: The verifier's time, for pruning entries whose expiry has passed.
    /// - Returns: `true` if this call spent the proof; `false` if it was spent before (a replay).
    /// - Throws: Any error when the cache cannot answer; the verifier then refuses the proof
    ///   (``TokenVerificationError/dpopReplayCacheUnavailable``).
    func spend(keyThumbprint: String, jwtID: String, until expiry: Date, now: Date) async throws -> Bool
}
