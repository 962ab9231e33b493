import Crypto
import Foundation
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification
import _CryptoExtras

/// A DPoP client written for the tests: proofs with every part under the test's control, and access tokens bound
/// to a key. Every proof and token made here is registered with the log leak check.
struct DPoPTestClient {
    static let uri = "https://api.example.com/orders"
    /// The manual clock's start, as a NumericDate.
    static let start = 1_800_000_000

    let key: P256.Signing.PrivateKey

    init(key: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) { self.key = key }

    var x: String { TestKeys.base64URL(key.publicKey.x963Representation.dropFirst().prefix(32)) }
    var y: String { TestKeys.base64URL(key.publicKey.x963Representation.suffix(32)) }
    /// The public JWK as a client sends it.
    var jwk: String { #"{"kty":"EC","crv":"P-256","x":"\#(x)","y":"\#(y)"}"# }
    /// RFC 7638, computed here independently of the verifier.
    var thumbprint: String {
        TestKeys.base64URL(SHA256.hash(data: Array(#"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#.utf8)))
    }

    /// An RS256 access token of the test issuer, bound to `jkt` (this key's by default; `""` for none).
    func accessToken(jkt: String? = nil) -> String {
        let jkt = jkt ?? thumbprint
        let cnf = jkt.isEmpty ? "" : #","cnf":{"jkt":"\#(jkt)"}"#
        return TestKeys.token(.rs256, payload: TestKeys.claims(cnf, exp: "1800003600"))
    }

    /// A proof for `method` and `htu`, issued `age` seconds before the clock's start, for `token`.
    func proof(
        method: String = "GET", htu: String = uri, iatOffset: Int = 0, jti: String? = UUID().uuidString,
        token: String?, nonce: String? = nil, typ: String = "dpop+jwt", alg: String = "ES256",
        jwk: String? = nil, extraHeader: String = "", extraClaims: String = "",
        signer: P256.Signing.PrivateKey? = nil, payload: String? = nil
    ) -> String {
        var claims = [#""htm":"\#(method)""#, #""htu":"\#(htu)""#, #""iat":\#(Self.start + iatOffset)"#]
        if let jti { claims.append(#""jti":"\#(jti)""#) }
        if let token { claims.append(#""ath":"\#(DPoPVerifier.accessTokenHash(token))""#) }
        if let nonce { claims.append(#""nonce":"\#(nonce)""#) }
        let payload = payload ?? "{" + claims.joined(separator: ",") + extraClaims + "}"
        let header = #"{"typ":"\#(typ)","alg":"\#(alg)","jwk":\#(jwk ?? self.jwk)\#(extraHeader)}"#
        let input = TestKeys.base64URL(header) + "." + TestKeys.base64URL(payload)
        let signature = try! (signer ?? key).signature(for: SHA256.hash(data: Array(input.utf8))).rawRepresentation
        return TestKeys.register(input + "." + TestKeys.base64URL(signature))
    }

    /// A proof signed with `signature` over the same input as ``proof(...)`` would sign.
    static func proof(header: String, payload: String, signature: [UInt8]) -> String {
        TestKeys.register(
            TestKeys.base64URL(header) + "." + TestKeys.base64URL(payload) + "." + TestKeys.base64URL(signature))
    }
}

/// A replay cache that records every spend, or fails every one.
final class RecordingReplayCache: DPoPReplayCache {
    struct Unreachable: Error {}
    let inner = InMemoryDPoPReplayCache()
    let fails: Bool
    private let spends = Locked(0)

    init(fails: Bool = false) { self.fails = fails }

    var spendCount: Int { spends.withLock { $0 } }

    func spend(keyThumbprint: String, jwtID: String, until expiry: Date, now: Date) async throws -> Bool {
        spends.withLock { $0 += 1 }
        if fails { throw Unreachable() }
        return try inner.spend(keyThumbprint: keyThumbprint, jwtID: jwtID, until: expiry, now: now)
    }
}

extension DPoPAuthenticator.Outcome {
    /// The rejection's error, or `nil` when authenticated.
    var error: TokenVerificationError? {
        if case .rejected(let rejection) = self { return rejection.error }
        return nil
    }

    var rejection: BearerAuthenticator.Rejection? {
        if case .rejected(let rejection) = self { return rejection }
        return nil
    }

    var proof: DPoPProof? {
        if case .authenticated(_, let proof) = self { return proof }
        return nil
    }
}

enum DPoPFixture {
    static func authenticator(
        clock: ManualClock, cache: any DPoPReplayCache = InMemoryDPoPReplayCache(), nonces: DPoPNonces? = nil,
        allowsBearer: Bool = false
    ) -> DPoPAuthenticator {
        DPoPAuthenticator(
            tokens: BearerAuthenticator(verifier: TestKeys.verifier(clock: clock)),
            proofs: DPoPVerifier(
                configuration: .init(nonces: nonces), replayCache: cache, now: clock.wallClock),
            allowsBearer: allowsBearer)
    }
}
