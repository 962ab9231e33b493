import Crypto
import Foundation
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification
import _CryptoExtras

/// Keys made at run time, JWK documents for them, and tokens signed with them. Every token made here is
/// registered with the log leak check.
enum TestKeys {
    static let issuer = "https://clerk.example.com"
    /// Wall time of the manual clocks' start (`ManualClock()`): 2027-01-15.
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    static let rsa = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let rsa2 = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
    static let p256 = P256.Signing.PrivateKey()
    static let p384 = P384.Signing.PrivateKey()
    static let ed25519 = Curve25519.Signing.PrivateKey()
    /// An ASCII HMAC secret (registered, so a leak of it into a log would fail the test).
    static let hmacSecretText: String = {
        let text =
            "hmac-"
            + (0..<59).map { _ in String("abcdefghijklmnopqrstuvwxyz0123456789".randomElement()!) }
            .joined()
        TestSecrets.shared.register(text, as: .clientSecret)
        return text
    }()
    static var hmacSecret: SymmetricKey { SymmetricKey(data: Array(hmacSecretText.utf8)) }
    /// The HMAC secret for tokens without a `kid`, built as a user would: from text, without swift-crypto.
    static var hmacSecrets: [HMACSecret] { [HMACSecret(keyID: nil, text: hmacSecretText)] }
    /// The audience choice of a Clerk backend: session tokens carry no `aud`.
    static let noAudience = TokenVerifier.AudienceRule.notChecked(reason: "Clerk session tokens carry no aud")

    static func base64URL<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func base64URL(_ text: String) -> String { base64URL(Array(text.utf8)) }

    // MARK: JWKs

    static func rsaJWK(_ key: _RSA.Signing.PrivateKey = rsa, kid: String = "rsa-1", alg: String? = "RS256") -> String {
        let primitives = try! key.publicKey.getKeyPrimitives()
        return rsaJWK(n: Array(primitives.modulus), e: Array(primitives.publicExponent), kid: kid, alg: alg)
    }

    static func rsaJWK(n: [UInt8], e: [UInt8], kid: String, alg: String? = nil) -> String {
        let alg = alg.map { #","alg":"\#($0)""# } ?? ""
        return #"{"kty":"RSA","use":"sig","kid":"\#(kid)"\#(alg),"n":"\#(base64URL(n))","e":"\#(base64URL(e))"}"#
    }

    static func p256JWK(_ key: P256.Signing.PrivateKey = p256, kid: String = "ec-1") -> String {
        let point = Array(key.publicKey.x963Representation.dropFirst())
        return ecJWK(crv: "P-256", x: Array(point[..<32]), y: Array(point[32...]), kid: kid)
    }

    static func p384JWK(_ key: P384.Signing.PrivateKey = p384, kid: String = "ec-384") -> String {
        let point = Array(key.publicKey.x963Representation.dropFirst())
        return ecJWK(crv: "P-384", x: Array(point[..<48]), y: Array(point[48...]), kid: kid)
    }

    static func ecJWK(crv: String, x: [UInt8], y: [UInt8], kid: String) -> String {
        #"{"kty":"EC","crv":"\#(crv)","kid":"\#(kid)","x":"\#(base64URL(x))","y":"\#(base64URL(y))"}"#
    }

    static func ed25519JWK(_ key: Curve25519.Signing.PrivateKey = ed25519, kid: String = "ed-1") -> String {
        #"{"kty":"OKP","crv":"Ed25519","kid":"\#(kid)","x":"\#(base64URL(key.publicKey.rawRepresentation))"}"#
    }

    static func jwks(_ keys: [String]) -> Data {
        Data(#"{"keys":[\#(keys.joined(separator: ","))]}"#.utf8)
    }

    /// Every test key, each with its `kid`.
    static var allJWKS: Data { jwks([rsaJWK(alg: nil), p256JWK(), p384JWK(), ed25519JWK()]) }

    static func keySet(_ data: Data = allJWKS) -> JWKSet { try! JWKSet(json: data) }

    // MARK: Tokens

    /// Claims valid at `start`: issued a second ago, expiring in 60 seconds (a Clerk session token).
    static func claims(_ extra: String = "", exp: String = "1800000060") -> String {
        #"{"sub":"user_2abc","sid":"sess_9xyz","iss":"\#(issuer)","iat":1799999999,"exp":\#(exp)\#(extra)}"#
    }

    /// Signs `header` and `payload` (raw JSON texts) with `algorithm`'s test key.
    static func token(header: String, payload: String, algorithm: JWSAlgorithm) -> String {
        let input = base64URL(header) + "." + base64URL(payload)
        return register(input + "." + base64URL(sign(Array(input.utf8), algorithm: algorithm)))
    }

    /// A token with a header of `alg` and `kid` and the given claims.
    static func token(
        _ algorithm: JWSAlgorithm, kid: String? = nil, payload: String = claims(), extraHeader: String = ""
    ) -> String {
        let kid = kid ?? defaultKeyID(algorithm)
        let kidMember = kid.isEmpty ? "" : #","kid":"\#(kid)""#
        return token(
            header: #"{"alg":"\#(algorithm.name)","typ":"JWT"\#(kidMember)\#(extraHeader)}"#, payload: payload,
            algorithm: algorithm)
    }

    static func defaultKeyID(_ algorithm: JWSAlgorithm) -> String {
        switch algorithm {
        case .es256: "ec-1"
        case .es384: "ec-384"
        case .edDSA: "ed-1"
        case .hs256, .hs384, .hs512: ""
        default: "rsa-1"
        }
    }

    static func sign(_ input: [UInt8], algorithm: JWSAlgorithm, rsaKey: _RSA.Signing.PrivateKey = rsa) -> [UInt8] {
        switch algorithm {
        case .rs256:
            Array(try! rsaKey.signature(for: SHA256.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
        case .rs384:
            Array(try! rsaKey.signature(for: SHA384.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
        case .rs512:
            Array(try! rsaKey.signature(for: SHA512.hash(data: input), padding: .insecurePKCS1v1_5).rawRepresentation)
        case .ps256: Array(try! rsaKey.signature(for: SHA256.hash(data: input), padding: .PSS).rawRepresentation)
        case .ps384: Array(try! rsaKey.signature(for: SHA384.hash(data: input), padding: .PSS).rawRepresentation)
        case .ps512: Array(try! rsaKey.signature(for: SHA512.hash(data: input), padding: .PSS).rawRepresentation)
        case .es256: Array(try! p256.signature(for: SHA256.hash(data: input)).rawRepresentation)
        case .es384: Array(try! p384.signature(for: SHA384.hash(data: input)).rawRepresentation)
        case .edDSA: Array(try! ed25519.signature(for: input))
        case .hs256: Array(HMAC<SHA256>.authenticationCode(for: input, using: hmacSecret))
        case .hs384: Array(HMAC<SHA384>.authenticationCode(for: input, using: hmacSecret))
        case .hs512: Array(HMAC<SHA512>.authenticationCode(for: input, using: hmacSecret))
        default: []
        }
    }

    /// Registers a token made at run time with the log leak check.
    @discardableResult
    static func register(_ token: String) -> String {
        TestSecrets.shared.register(token, as: .accessToken)
        return token
    }

    /// A verifier over `source` at the manual clock's wall time.
    static func verifier(
        _ configuration: TokenVerifier.Configuration = .init(
            issuer: issuer, audience: noAudience, algorithms: JWSAlgorithm.asymmetric),
        source: any JWKSSource = StaticJWKSSource(keySet()), clock: ManualClock = ManualClock()
    ) -> TokenVerifier {
        TokenVerifier(configuration: configuration, keySource: source, now: clock.wallClock)
    }
}

/// A key source that counts lookups.
final class CountingSource: JWKSSource, Sendable {
    let inner: any JWKSSource
    private let counter = Locked(0)

    init(_ inner: any JWKSSource) { self.inner = inner }

    var lookups: Int { counter.withLock { $0 } }

    func key(for keyID: String?, algorithm: JWSAlgorithm) async throws(TokenVerificationError) -> JWK {
        counter.withLock { $0 += 1 }
        return try await inner.key(for: keyID, algorithm: algorithm)
    }

    func isPublished(_ key: JWK) -> Bool { inner.isPublished(key) }
}
