public import Foundation

/// A DPoP proof (RFC 9449) that a ``DPoPVerifier`` checked: what the request proved and with which key.
///
/// The description names the algorithm and the key's thumbprint, never the `jti` or the nonce.
public struct DPoPProof: Sendable, Hashable, CustomStringConvertible {
    /// The algorithm the proof was signed with.
    public let algorithm: JWSAlgorithm
    /// The RFC 7638 thumbprint of the proof's key: what an access token's `cnf.jkt` must name.
    public let keyThumbprint: String
    /// The proof's `jti`.
    public let jwtID: String
    /// The proof's `iat`.
    public let issuedAt: Date
    /// The last moment the proof is accepted: its replay-cache entry lives this long.
    public let expiry: Date
    /// The proof's `nonce`, if it has one.
    public let nonce: String?

    /// `DPoPProof(alg: ES256, jkt: ...)`.
    public var description: String { "DPoPProof(alg: \(algorithm.name), jkt: \(keyThumbprint))" }
}
