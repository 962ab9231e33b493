/// A JWS signing algorithm (RFC 7518 section 3, RFC 8037 for `EdDSA`).
///
/// A verifier accepts only the algorithms in its configured allow-list, and only with a key of the matching
/// type: the token's `alg` header selects among those, never on its own. `none` has no value here.
public struct JWSAlgorithm: Hashable, Sendable, CustomStringConvertible {
    enum Family: Hashable, Sendable {
        case rsaPKCS1, rsaPSS, ecdsaP256, ecdsaP384, ed25519, hmac
        /// No signature: the placeholder of introspected claims.
        case introspection
    }
    enum Hash: Hashable, Sendable { case sha256, sha384, sha512 }

    /// The `alg` header value, such as `RS256`.
    public let name: String
    let family: Family
    let hash: Hash

    private init(_ name: String, _ family: Family, _ hash: Hash) {
        self.name = name
        self.family = family
        self.hash = hash
    }

    /// RSASSA-PKCS1-v1_5 with SHA-256 (Clerk's, and most identity providers', default).
    public static let rs256 = JWSAlgorithm("RS256", .rsaPKCS1, .sha256)
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    public static let rs384 = JWSAlgorithm("RS384", .rsaPKCS1, .sha384)
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    public static let rs512 = JWSAlgorithm("RS512", .rsaPKCS1, .sha512)
    /// RSASSA-PSS with SHA-256 and MGF1 with SHA-256.
    public static let ps256 = JWSAlgorithm("PS256", .rsaPSS, .sha256)
    /// RSASSA-PSS with SHA-384 and MGF1 with SHA-384.
    public static let ps384 = JWSAlgorithm("PS384", .rsaPSS, .sha384)
    /// RSASSA-PSS with SHA-512 and MGF1 with SHA-512.
    public static let ps512 = JWSAlgorithm("PS512", .rsaPSS, .sha512)
    /// ECDSA on P-256 with SHA-256.
    public static let es256 = JWSAlgorithm("ES256", .ecdsaP256, .sha256)
    /// ECDSA on P-384 with SHA-384.
    public static let es384 = JWSAlgorithm("ES384", .ecdsaP384, .sha384)
    /// EdDSA; only with Ed25519 keys.
    public static let edDSA = JWSAlgorithm("EdDSA", .ed25519, .sha512)
    /// HMAC with SHA-256: only with a secret configured on the verifier, never with a key from a key set.
    public static let hs256 = JWSAlgorithm("HS256", .hmac, .sha256)
    /// HMAC with SHA-384: only with a configured secret.
    public static let hs384 = JWSAlgorithm("HS384", .hmac, .sha384)
    /// HMAC with SHA-512: only with a configured secret.
    public static let hs512 = JWSAlgorithm("HS512", .hmac, .sha512)

    /// The placeholder ``VerifiedClaims/algorithm`` of claims an ``IntrospectionVerifier`` got from the issuer's
    /// introspection endpoint: no signature was checked. Not in ``all``, so no header or key can name it.
    static let introspection = JWSAlgorithm("introspection", .introspection, .sha256)

    /// Every algorithm known here.
    public static let all: [JWSAlgorithm] = [
        .rs256, .rs384, .rs512, .ps256, .ps384, .ps512, .es256, .es384, .edDSA, .hs256, .hs384, .hs512,
    ]

    /// Every asymmetric algorithm (the ones a key set can serve).
    public static let asymmetric: Set<JWSAlgorithm> = Set(all.filter { $0.family != .hmac })

    /// The algorithm with this exact `alg` name (case-sensitive, as RFC 7515 says), or `nil`.
    ///
    /// - Parameter name: An `alg` value.
    public init?(name: String) {
        guard let known = Self.all.first(where: { $0.name == name }) else { return nil }
        self = known
    }

    /// The `alg` name.
    public var description: String { name }

    /// The exact signature length in bytes, or a range for RSA (the modulus length).
    var signatureLengths: ClosedRange<Int> {
        switch family {
        case .rsaPKCS1, .rsaPSS: 256...1024
        case .ecdsaP256, .ed25519: 64...64
        case .ecdsaP384: 96...96
        case .introspection: 0...0
        case .hmac:
            switch hash {
            case .sha256: 32...32
            case .sha384: 48...48
            case .sha512: 64...64
            }
        }
    }
}
