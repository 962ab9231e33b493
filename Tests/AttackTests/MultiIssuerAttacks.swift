import Crypto
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification

/// Two issuers behind one ``IssuerRouter``, each with its own P-256 key: what a holder of one issuer's tokens, or of
/// one issuer's signing key, tried against the other.
@Suite(.logLeakCheck()) struct MultiIssuerAttacks {
    struct Party {
        let issuer: String
        let keyID: String
        let key = P256.Signing.PrivateKey()

        var jwk: String {
            let raw = Array(key.publicKey.rawRepresentation)
            return #"{"kty":"EC","crv":"P-256","alg":"ES256","kid":"\#(keyID)","#
                + #""x":"\#(Self.base64URL(raw[..<32]))","y":"\#(Self.base64URL(raw[32...]))"}"#
        }

        static func base64URL<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
            Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }

        /// A token signed with this party's key, claiming `iss` and naming `kid` in its header.
        func token(iss: String, kid: String, aud: String = "https://api.example.com") -> String {
            let now = Int(Date().timeIntervalSince1970)
            let header = #"{"alg":"ES256","typ":"JWT","kid":"\#(kid)"}"#
            let payload = #"{"iss":"\#(iss)","sub":"user_1","aud":"\#(aud)","iat":\#(now),"exp":\#(now + 600)}"#
            let input = Self.base64URL(Array(header.utf8)) + "." + Self.base64URL(Array(payload.utf8))
            let signature = try! key.signature(for: Array(input.utf8))
            let token = input + "." + Self.base64URL(signature.rawRepresentation)
            TestSecrets.shared.register(token, as: .accessToken)
            return token
        }
    }

    /// A key source that counts lookups.
    final class Counting: JWKSSource, Sendable {
        let inner: StaticJWKSSource
        private let count = Locked(0)
        init(_ jwk: String) { inner = StaticJWKSSource(try! JWKSet(json: Data(#"{"keys":[\#(jwk)]}"#.utf8))) }
        var lookups: Int { count.withLock { $0 } }
        func key(for keyID: String?, algorithm: JWSAlgorithm) async throws(TokenVerificationError) -> JWK {
            count.withLock { $0 += 1 }
            return try await inner.key(for: keyID, algorithm: algorithm)
        }
        func isPublished(_ key: JWK) -> Bool { inner.isPublished(key) }
    }

    let customers = Party(issuer: "https://clerk.example.com", keyID: "clerk-1")
    let staff = Party(issuer: "https://staff.example.com/", keyID: "staff-1")

    func router() -> (IssuerRouter, Counting, Counting) {
        let customerKeys = Counting(customers.jwk)
        let staffKeys = Counting(staff.jwk)
        let router = IssuerRouter([
            TokenVerifier(
                configuration: .init(
                    issuer: customers.issuer, audience: .oneOf(["https://api.example.com"]), algorithms: [.es256]),
                keySource: customerKeys),
            TokenVerifier(
                configuration: .init(
                    issuer: staff.issuer, audience: .oneOf(["https://admin.example.com"]), algorithms: [.es256]),
                keySource: staffKeys),
        ])
        return (router, customerKeys, staffKeys)
    }

    @Test func eachIssuersTokensVerifyUnderTheirOwnRules() async throws {
        let (router, _, _) = router()
        let customer = try await router.verify(customers.token(iss: customers.issuer, kid: customers.keyID))
        #expect(customer.issuer == customers.issuer)
        let admin = try await router.verify(
            staff.token(iss: staff.issuer, kid: staff.keyID, aud: "https://admin.example.com"))
        #expect(admin.issuer == staff.issuer)
    }

    @Test func aTokenOfIssuerAClaimingIssuerBsKidIsNeverCheckedAgainstBsKeys() async throws {
        let (router, customerKeys, staffKeys) = router()
        // Signed with the staff key and naming the staff kid, but claiming to come from the customer issuer (whose
        // audience the attacker can satisfy): routed by `iss`, so only the customer key set is searched.
        let forged = staff.token(iss: customers.issuer, kid: staff.keyID)
        await #expect(throws: TokenVerificationError.unknownKeyID) { try await router.verify(forged) }
        #expect(customerKeys.lookups == 1)
        #expect(staffKeys.lookups == 0)
    }

    @Test func anotherIssuersKeyCannotSignForThisIssuerUnderThisIssuersKid() async throws {
        let (router, _, _) = router()
        let forged = staff.token(iss: customers.issuer, kid: customers.keyID)
        await #expect(throws: TokenVerificationError.invalidSignature) { try await router.verify(forged) }
    }

    @Test func aTokenValidForOneIssuersAudienceIsRefusedUnderTheOthersRules() async throws {
        let (router, _, _) = router()
        // A genuine staff token, but for the customer API's audience: the staff verifier's audience rule applies.
        let token = staff.token(iss: staff.issuer, kid: staff.keyID, aud: "https://api.example.com")
        await #expect(throws: TokenVerificationError.audienceMismatch) { try await router.verify(token) }
    }

    @Test func anIssuerNotInTheAllowListIsRefusedBeforeAnyKeyLookup() async throws {
        let (router, customerKeys, staffKeys) = router()
        let attacker = Party(issuer: "https://attacker.example.com", keyID: "clerk-1")
        for token in [
            attacker.token(iss: attacker.issuer, kid: "clerk-1"),
            attacker.token(iss: "https://clerk.example.com/", kid: "clerk-1"),  // a trailing slash is another issuer
        ] {
            await #expect(throws: TokenVerificationError.issuerMismatch) { try await router.verify(token) }
        }
        #expect(customerKeys.lookups == 0 && staffKeys.lookups == 0)
    }

    @Test func aBearerFromAnUnknownIssuerIsAnInvalidToken401() async throws {
        let (router, _, _) = router()
        let attacker = Party(issuer: "https://attacker.example.com", keyID: "x")
        let outcome = await BearerAuthenticator(router: router).authenticate(
            authorization: "Bearer \(attacker.token(iss: attacker.issuer, kid: "x"))")
        guard case .rejected(let rejection) = outcome else {
            Issue.record("a token from an unknown issuer was accepted")
            return
        }
        #expect(rejection.status == 401)
        #expect(rejection.body == #"{"error": "Invalid token"}"#)
    }
}
