/// Where a ``TokenVerifier`` finds the public key for a token.
///
/// The verifier asks only after the token's shape, header and claims have passed every check, so malformed
/// or unsigned tokens never reach a source. ``StaticJWKSSource`` serves a fixed set and
/// ``RemoteJWKSSource`` fetches and caches one.
///
/// A complete conformance, serving a single key:
///
/// ```swift
/// struct OneKeySource: JWKSSource {
///     let key: JWK
///
///     func key(for keyID: String?, algorithm: JWSAlgorithm) async throws(TokenVerificationError) -> JWK {
///         guard keyID == nil || keyID == key.keyID else { throw .unknownKeyID }
///         return key
///     }
///
///     func isPublished(_ key: JWK) -> Bool { key.thumbprint == self.key.thumbprint }
/// }
/// ```
public protocol JWKSSource: Sendable {
    /// The key for a token's `kid` (or, without one, the only key that can verify `algorithm`).
    ///
    /// Return the key with that `kid` even if it cannot verify `algorithm`: the verifier then reports
    /// ``TokenVerificationError/keyAlgorithmMismatch``.
    ///
    /// - Parameters:
    ///   - keyID: The token's `kid`, already checked to hold only safe characters; `nil` if it has none.
    ///   - algorithm: The token's algorithm, already in the verifier's allow-list.
    /// - Returns: The key.
    /// - Throws: ``TokenVerificationError/unknownKeyID``, ``TokenVerificationError/missingKeyID``,
    ///   ``TokenVerificationError/unusableKey`` (the set has that `kid` but skipped its key), or a key set error
    ///   such as ``TokenVerificationError/keySetUnavailable``.
    func key(for keyID: String?, algorithm: JWSAlgorithm) async throws(TokenVerificationError) -> JWK

    /// Whether `key` is still in the set: a verified token stays cached only while its key is published.
    ///
    /// Called on every cache hit, so it must be cheap and must not wait.
    ///
    /// - Parameter key: A key this source returned before.
    /// - Returns: `false` once the key has left the set.
    func isPublished(_ key: JWK) -> Bool
}

/// A source that serves a fixed key set, for tests and for keys configured with the application.
public struct StaticJWKSSource: JWKSSource {
    /// The key set.
    package let keySet: JWKSet

    /// A source serving `keySet`.
    ///
    /// - Parameter keySet: The keys.
    public init(_ keySet: JWKSet) {
        self.keySet = keySet
    }

    /// The key for a token's `kid`.
    ///
    /// - Parameters:
    ///   - keyID: The token's `kid`, or `nil`.
    ///   - algorithm: The token's algorithm.
    /// - Returns: The key.
    /// - Throws: ``TokenVerificationError/unknownKeyID``, ``TokenVerificationError/missingKeyID`` or
    ///   ``TokenVerificationError/unusableKey``.
    public func key(for keyID: String?, algorithm: JWSAlgorithm) async throws(TokenVerificationError) -> JWK {
        switch keySet.key(for: keyID, algorithm: algorithm) {
        case .found(let key): return key
        case .unknown: throw keyID == nil ? .missingKeyID : .unknownKeyID
        case .ambiguous: throw .missingKeyID
        case .skipped: throw .unusableKey
        }
    }

    /// Whether `key` is in the set.
    ///
    /// - Parameter key: A key.
    /// - Returns: Whether the set has it.
    public func isPublished(_ key: JWK) -> Bool { keySet.contains(key) }
}
