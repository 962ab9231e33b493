import Crypto
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification
import _CryptoExtras

/// The classic attacks on JWT verifiers, each refused with its own reason, none reaching a key lookup that
/// could fetch anything unless the token's shape is sound.
@Suite(.logLeakCheck()) struct HostileInputTests {
    /// A verifier over every test key, counting the key lookups.
    static func counted() -> (TokenVerifier, CountingSource) {
        let source = CountingSource(StaticJWKSSource(TestKeys.keySet()))
        return (TestKeys.verifier(source: source), source)
    }

    static func unsigned(header: String, payload: String = TestKeys.claims(), signature: String = "") -> String {
        TestKeys.register(TestKeys.base64URL(header) + "." + TestKeys.base64URL(payload) + "." + signature)
    }

    @Test(arguments: ["none", "None", "NONE", "nOnE"])
    func algNoneIsRefused(_ alg: String) async {
        let (verifier, source) = Self.counted()
        for signature in ["", "c2ln"] {
            let token = Self.unsigned(header: #"{"alg":"\#(alg)","kid":"rsa-1"}"#, signature: signature)
            await #expect(throws: TokenVerificationError.unsignedToken) { try await verifier.verify(token) }
        }
        #expect(source.lookups == 0)
    }

    @Test func hs256SignedWithTheRSAPublicKeyIsRefused() async throws {
        // The attacker's HMAC key: the RSA public key's bytes, as PEM and as DER.
        let publicKey = TestKeys.rsa.publicKey
        for keyBytes in [Array(publicKey.pemRepresentation.utf8), Array(publicKey.derRepresentation)] {
            let input =
                TestKeys.base64URL(#"{"alg":"HS256","kid":"rsa-1"}"#) + "." + TestKeys.base64URL(TestKeys.claims())
            let mac = HMAC<SHA256>.authenticationCode(for: Array(input.utf8), using: SymmetricKey(data: keyBytes))
            let token = TestKeys.register(input + "." + TestKeys.base64URL(mac))
            let (verifier, source) = Self.counted()
            await #expect(throws: TokenVerificationError.algorithmNotAllowed) { try await verifier.verify(token) }
            #expect(source.lookups == 0)
            // Even with HS256 allowed (and a real secret configured), a key set's key is never the HMAC key: the
            // secret has no `kid`, so a token naming the RSA key's finds none; bound to that `kid`, it does not match.
            var configuration = TokenVerifier.Configuration(
                issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: [.rs256, .hs256],
                hmacSecrets: TestKeys.hmacSecrets)
            configuration.tokenCacheCapacity = 0
            let withSecret = TestKeys.verifier(configuration, source: source)
            await #expect(throws: TokenVerificationError.unknownKeyID) { try await withSecret.verify(token) }
            configuration.hmacSecrets = [HMACSecret(keyID: "rsa-1", text: TestKeys.hmacSecretText)]
            let underItsKeyID = TestKeys.verifier(configuration, source: source)
            await #expect(throws: TokenVerificationError.invalidSignature) { try await underItsKeyID.verify(token) }
            #expect(source.lookups == 0)
            // Without secrets the source is asked, and its RSA key cannot verify HMAC.
            configuration.hmacSecrets = []
            let fromTheSet = TestKeys.verifier(configuration, source: source)
            await #expect(throws: TokenVerificationError.keyAlgorithmMismatch) { try await fromTheSet.verify(token) }
        }
    }

    @Test(arguments: [JWSAlgorithm.es256, .es384])
    func ecdsaWithRAndSZeroFails(_ algorithm: JWSAlgorithm) async {
        let size = algorithm == .es256 ? 64 : 96
        let token = Self.unsigned(
            header: #"{"alg":"\#(algorithm.name)","kid":"\#(TestKeys.defaultKeyID(algorithm))"}"#,
            signature: TestKeys.base64URL([UInt8](repeating: 0, count: size)))
        await #expect(throws: TokenVerificationError.invalidSignature) { try await TestKeys.verifier().verify(token) }
        // r = n, s = n (the group order), also a classic: refused as well.
        let order: [UInt8] = Array(
            Data(base64Encoded: "/////wAAAAD//////////7zm+q2nF56E87nKwvxjJVE=")!)
        if algorithm == .es256 {
            let token = Self.unsigned(
                header: #"{"alg":"ES256","kid":"ec-1"}"#, signature: TestKeys.base64URL(order + order))
            await #expect(throws: TokenVerificationError.invalidSignature) {
                try await TestKeys.verifier().verify(token)
            }
        }
    }

    @Test(arguments: [
        "../../../../dev/null", "' OR '1'='1", "1; DROP TABLE keys--", "kid with spaces", "a\\u0000b", "%2e%2e%2f",
        String(repeating: "k", count: 300), "",
    ])
    func aKidWithPathOrSQLCharactersIsRefused(_ kid: String) async {
        let (verifier, source) = Self.counted()
        let token = TestKeys.token(.rs256, kid: "placeholder")
        let parts = token.split(separator: ".")
        let header = #"{"alg":"RS256","kid":"\#(kid)"}"#
        let hostile = TestKeys.register(TestKeys.base64URL(header) + "." + parts[1] + "." + parts[2])
        await #expect(throws: TokenVerificationError.invalidKeyID) { try await verifier.verify(hostile) }
        #expect(source.lookups == 0)
    }

    @Test func aKidThatIsNotAStringIsRefused() async {
        let token = TestKeys.token(header: #"{"alg":"RS256","kid":42}"#, payload: TestKeys.claims(), algorithm: .rs256)
        await #expect(throws: TokenVerificationError.invalidKeyID) { try await TestKeys.verifier().verify(token) }
    }

    @Test(arguments: [
        #","jku":"https://evil.example/jwks.json""#, #","x5u":"https://evil.example/cert.pem""#,
        #","jwk":{"kty":"oct","k":"AAAA"}"#, #","x5c":["MIIB"]"#,
    ])
    func selfReferencedKeysAreNeverTrusted(_ member: String) async {
        let (verifier, source) = Self.counted()
        let token = TestKeys.token(.rs256, extraHeader: member)
        await #expect(throws: TokenVerificationError.untrustedKeyReference) { try await verifier.verify(token) }
        #expect(source.lookups == 0)
    }

    @Test(arguments: [
        #","crit":["exp"],"exp":1"#, #","crit":["b64"],"b64":false"#, #","crit":[]"#,
        #","crit":["urn:example:unknown-extension"],"urn:example:unknown-extension":true"#,
    ])
    func critIsRefused(_ member: String) async {
        let token = TestKeys.token(.rs256, extraHeader: member)
        await #expect(throws: TokenVerificationError.unsupportedCriticalHeader) {
            try await TestKeys.verifier().verify(token)
        }
    }

    @Test func duplicateJSONNamesAreRefused() async {
        let (verifier, source) = Self.counted()
        let header = TestKeys.token(
            header: #"{"alg":"RS256","kid":"rsa-1","alg":"none"}"#, payload: TestKeys.claims(), algorithm: .rs256)
        await #expect(throws: TokenVerificationError.duplicateJSONName) { try await verifier.verify(header) }
        let payload = TestKeys.token(.rs256, payload: TestKeys.claims(#","sub":"admin""#))
        await #expect(throws: TokenVerificationError.duplicateJSONName) { try await verifier.verify(payload) }
        // An escaped spelling of the same name is the same name.
        let escaped = TestKeys.token(.rs256, payload: TestKeys.claims(#","\u0073ub":"admin""#))
        await #expect(throws: TokenVerificationError.duplicateJSONName) { try await verifier.verify(escaped) }
        #expect(source.lookups == 0)
    }

    @Test func expAsAStringIsRefused() async {
        let (verifier, source) = Self.counted()
        let token = TestKeys.token(.rs256, payload: TestKeys.claims(exp: #""9999999999""#))
        await #expect(throws: TokenVerificationError.invalidClaim("exp")) { try await verifier.verify(token) }
        #expect(source.lookups == 0)
    }

    @Test func aHugeKeySetIsRefused() throws {
        let big =
            Data(#"{"keys":[],"pad":""#.utf8) + Data(repeating: UInt8(ascii: "a"), count: 10 << 20) + Data(#""}"#.utf8)
        #expect(throws: TokenVerificationError.keySetTooLarge) { try JWKSet(json: big) }
        let many = TestKeys.jwks(Array(repeating: #"{"kty":"EC"}"#, count: 10_000))
        #expect(throws: TokenVerificationError.tooManyKeys) { try JWKSet(json: many) }
        // Within raised limits, 10,000 unusable keys are each skipped, not fatal.
        let set = try JWKSet(json: many, limits: .init(maximumBytes: 1 << 20, maximumKeys: 10_000))
        #expect(set.keys.isEmpty)
        #expect(set.skipped.count == 10_000)
    }

    @Test func rsaExponentOneIsSkipped() throws {
        let modulus = Array(try TestKeys.rsa.publicKey.getKeyPrimitives().modulus)
        for exponent: [UInt8] in [[1], [0, 1], [2], [0x01, 0x00, 0x00]] {
            let set = try JWKSet(json: TestKeys.jwks([TestKeys.rsaJWK(n: modulus, e: exponent, kid: "weak")]))
            #expect(set.keys.isEmpty)
            #expect(set.skipped.map(\.reason) == ["rsaExponentInvalid"])
        }
    }

    @Test func anRSAModulusUnder2048BitsIsSkipped() throws {
        let small = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        let primitives = try small.publicKey.getKeyPrimitives()
        let set = try JWKSet(
            json: TestKeys.jwks([
                TestKeys.rsaJWK(n: Array(primitives.modulus), e: Array(primitives.publicExponent), kid: "small"),
                TestKeys.rsaJWK(),
            ]))
        #expect(set.keys.map(\.keyID) == ["rsa-1"])
        #expect(set.skipped.map(\.reason) == ["rsaModulusTooSmall"])
        #expect(set.skipped.first?.keyID == "small")
    }

    @Test func wrongCurvesAreRefused() async throws {
        // A P-384 point labelled P-256, a point off the curve, an unsupported curve.
        let p384Point = Array(TestKeys.p384.publicKey.x963Representation.dropFirst())
        var offCurve = Array(TestKeys.p256.publicKey.x963Representation.dropFirst())
        offCurve[63] ^= 1
        let set = try JWKSet(
            json: TestKeys.jwks([
                TestKeys.ecJWK(crv: "P-256", x: Array(p384Point[..<48]), y: Array(p384Point[48...]), kid: "a"),
                TestKeys.ecJWK(crv: "P-256", x: Array(offCurve[..<32]), y: Array(offCurve[32...]), kid: "b"),
                TestKeys.ecJWK(crv: "secp256k1", x: Array(offCurve[..<32]), y: Array(offCurve[32...]), kid: "c"),
                #"{"kty":"OKP","crv":"X25519","kid":"d","x":"\#(TestKeys.base64URL([UInt8](repeating: 9, count: 32)))"}"#,
            ]))
        #expect(set.keys.isEmpty)
        #expect(
            set.skipped.map(\.reason) == [
                "invalidCoordinates", "pointNotOnCurve", "unsupportedCurve", "unsupportedCurve",
            ])
        // An ES384 token naming a P-256 key.
        await #expect(throws: TokenVerificationError.keyAlgorithmMismatch) {
            try await TestKeys.verifier().verify(TestKeys.token(.es384, kid: "ec-1"))
        }
    }

    @Test func aTokenSignedByARemovedKeyIsRefused() async throws {
        let clock = ManualClock()
        let fetcher = ScriptedFetcher([TestKeys.allJWKS, TestKeys.jwks([TestKeys.p256JWK()])])
        let source = RemoteJWKSSource(jwksURL: ScriptedFetcher.url, clock: clock, fetch: fetcher.fetch)
        let verifier = TestKeys.verifier(source: source, clock: clock)
        let token = TestKeys.token(.rs256, payload: TestKeys.claims(exp: "1800009999"))
        _ = try await verifier.verify(token)
        // The issuer rotates the RSA key out; the cache expires and the set is refetched.
        clock.advance(by: .seconds(601))
        await source.refresh()
        #expect(fetcher.count == 2)
        await #expect(throws: TokenVerificationError.unknownKeyID) { try await verifier.verify(token) }
    }

    @Test(arguments: [
        "", ".", "..", "a.b", "a.b.c.d", ".e30.c2ln", "e30..c2ln", "e30.e30.c2ln=", "e30.e30.c2l+",
        "eyJ.e30.c2ln", "e30.W10.c2ln", "W10.e30.c2ln", "e30.e30.c2m",
    ])
    func malformedTokensAreRefusedWithoutALookup(_ token: String) async {
        let (verifier, source) = Self.counted()
        await #expect(throws: TokenVerificationError.malformedToken) { try await verifier.verify(token) }
        #expect(source.lookups == 0)
    }

    @Test func anOverlongTokenIsRefused() async {
        let token = String(repeating: "a", count: 20_000)
        await #expect(throws: TokenVerificationError.tokenTooLong) { try await TestKeys.verifier().verify(token) }
    }

    @Test func aSignatureOfTheWrongLengthIsRefusedBeforeTheLookup() async {
        let (verifier, source) = Self.counted()
        let token = Self.unsigned(header: #"{"alg":"ES256","kid":"ec-1"}"#, signature: TestKeys.base64URL([1, 2, 3]))
        await #expect(throws: TokenVerificationError.malformedToken) { try await verifier.verify(token) }
        let empty = Self.unsigned(header: #"{"alg":"RS256","kid":"rsa-1"}"#)
        await #expect(throws: TokenVerificationError.malformedToken) { try await verifier.verify(empty) }
        #expect(source.lookups == 0)
    }
}
