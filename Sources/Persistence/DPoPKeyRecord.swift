public import Foundation

/// A session's DPoP key as its store keeps it, in the same record as the refresh token: written, rotated, shared and
/// deleted with it.
///
/// For a software key the record holds the private key; for a Secure Enclave key, only the enclave's opaque
/// reference (the key itself never leaves the enclave). A store protects it as it protects the refresh token.
/// Descriptions show the kind and the thumbprint, never the key material.
public struct DPoPKeyRecord: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Where the private key lives.
    public struct Kind: RawRepresentable, Sendable, Hashable, Codable {
        /// The kind as stored.
        public let rawValue: String

        /// Wraps a stored kind.
        ///
        /// - Parameter rawValue: The kind's name.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A P-256 private key in the record itself.
        public static let software = Kind(rawValue: "p256")
        /// A reference to a Secure Enclave P-256 key.
        public static let secureEnclave = Kind(rawValue: "secure-enclave-p256")
    }

    /// Where the private key lives.
    public let kind: Kind
    /// The key's material: the private scalar (``Kind/software``) or the enclave's reference
    /// (``Kind/secureEnclave``).
    public let material: Data
    /// The key's JWK SHA-256 thumbprint (RFC 7638): the `jkt` the session's tokens are bound to.
    public let thumbprint: String

    /// Creates a record.
    ///
    /// - Parameters:
    ///   - kind: Where the private key lives.
    ///   - material: The key's material.
    ///   - thumbprint: The key's thumbprint.
    public init(kind: Kind, material: Data, thumbprint: String) {
        self.kind = kind
        self.material = material
        self.thumbprint = thumbprint
    }

    /// `DPoPKeyRecord(<kind>, jkt: <thumbprint>)`: never the material.
    public var description: String { "DPoPKeyRecord(\(kind.rawValue), jkt: \(thumbprint))" }
}
