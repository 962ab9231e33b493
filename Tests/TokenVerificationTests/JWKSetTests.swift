import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification

/// Key set documents: every supported key type, the checks that skip a key, the limits, and RFC 7638
/// thumbprints.
@Suite(.logLeakCheck()) struct JWKSetTests {
    /// RFC 7638 section 3.1: the example key and its thumbprint.
    @Test func theThumbprintIsRFC7638() throws {
        let n =
            "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSoc_BJECPebWKRXjBZCiFV4n3oknj"
            + "hMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FDW2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6q"
            + "MQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awa"
            + "pJzKnqDKgw"
        let set = try JWKSet(
            json: Data(#"{"keys":[{"kty":"RSA","n":"\#(n)","e":"AQAB","alg":"RS256","kid":"2011-04-29"}]}"#.utf8))
        let key = try #require(set.keys.first)
        #expect(key.thumbprint == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs")
        #expect(key.keyID == "2011-04-29")
        #expect(key.algorithm == .rs256)
        #expect(key.keyType == "RSA")
    }

    @Test func everySupportedKeyTypeParses() throws {
        let set = TestKeys.keySet()
        #expect(set.keys.map(\.keyType) == ["RSA", "EC", "EC", "OKP"])
        #expect(set.keys.map(\.keyID) == ["rsa-1", "ec-1", "ec-384", "ed-1"])
        #expect(set.skipped.isEmpty)
        #expect(Set(set.keys.map(\.thumbprint)).count == 4)
    }

    @Test func keysNotForSigningAreSkipped() throws {
        let jwk = TestKeys.p256JWK()
        let set = try JWKSet(
            json: TestKeys.jwks([
                jwk.replacingOccurrences(of: #""kty""#, with: #""use":"enc","kty""#),
                jwk.replacingOccurrences(of: #""kty""#, with: #""key_ops":["encrypt"],"kty""#),
                jwk.replacingOccurrences(of: #""kty""#, with: #""alg":"ES384","kty""#),
                jwk.replacingOccurrences(of: #""kty""#, with: #""alg":"none","kty""#),
                jwk.replacingOccurrences(of: #""kty""#, with: #""key_ops":["verify"],"alg":"ES256","kty""#),
            ]))
        #expect(
            set.skipped.map(\.reason) == [
                "notForSigning", "notForSigning", "unsupportedAlgorithm", "unsupportedAlgorithm",
            ])
        #expect(set.keys.count == 1)
    }

    @Test func symmetricKeysOnlyWhenAllowedAndOnlyForTheirOwnKeyID() async throws {
        let oct = #"{"kty":"oct","kid":"shared","k":"\#(TestKeys.base64URL(Array(TestKeys.hmacSecretText.utf8)))"}"#
        #expect(try JWKSet(json: TestKeys.jwks([oct])).skipped.map(\.reason) == ["symmetricKeyNotAllowed"])
        let allowed = try JWKSet(json: TestKeys.jwks([oct]), limits: .init(allowsSymmetricKeys: true))
        #expect(allowed.keys.map(\.keyType) == ["oct"])
        // A static source with the oct key, HS256 allowed, no configured secret: the key verifies its own kid.
        let verifier = TestKeys.verifier(
            .init(issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: [.hs256]),
            source: StaticJWKSSource(allowed))
        #expect(try await verifier.verify(TestKeys.token(.hs256, kid: "shared")).keyID == "shared")
        await #expect(throws: TokenVerificationError.unknownKeyID) {
            try await verifier.verify(TestKeys.token(.hs256, kid: "other"))
        }
        // The oct key never verifies an RS256 token, nor does an RSA key an HS256 one.
        let mixed = try JWKSet(
            json: TestKeys.jwks([oct, TestKeys.rsaJWK(kid: "shared", alg: nil)]),
            limits: .init(allowsSymmetricKeys: true))
        let both = TestKeys.verifier(
            .init(issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: [.hs256, .rs256]),
            source: StaticJWKSSource(mixed))
        #expect(try await both.verify(TestKeys.token(.rs256, kid: "shared")).algorithm == .rs256)
        #expect(try await both.verify(TestKeys.token(.hs256, kid: "shared")).algorithm == .hs256)
    }

    @Test(arguments: [
        (#"{"keys":{}}"#, TokenVerificationError.keySetInvalid), (#"[]"#, .keySetInvalid), ("", .keySetInvalid),
        (#"{"keys":[],"keys":[]}"#, .duplicateJSONName), (#"{"kids":[]}"#, .keySetInvalid),
    ])
    func malformedDocumentsAreRefused(_ document: String, _ expected: TokenVerificationError) {
        #expect(throws: expected) { try JWKSet(json: Data(document.utf8)) }
    }

    @Test func malformedKeysAreSkippedWithReasons() throws {
        let set = try JWKSet(
            json: TestKeys.jwks([
                #""not an object""#, #"{"kty":"RSA","kid":"no-n","e":"AQAB"}"#,
                #"{"kty":"RSA","kid":"bad-b64","n":"!!!!","e":"AQAB"}"#, #"{"kty":"XYZ","kid":"odd"}"#,
                #"{"kty":"EC","kid":"../etc","crv":"P-256","x":"AA","y":"AA"}"#,
                #"{"kty":"OKP","crv":"Ed25519","kid":"short","x":"AAAA"}"#, TestKeys.ed25519JWK(),
            ]))
        #expect(
            set.skipped.map(\.reason) == [
                "notAnObject", "missingParameter", "invalidBase64URL", "unsupportedKeyType", "invalidKeyID",
                "invalidCoordinates",
            ])
        // A kid that is not safe is not repeated in the record.
        #expect(set.skipped.map(\.keyID) == [nil, "no-n", "bad-b64", "odd", nil, "short"])
        #expect(set.keys.map(\.keyID) == ["ed-1"])
    }

    @Test func aSkippedKeyIsLogged() async throws {
        let logs = LogCapture()
        let document = TestKeys.jwks([#"{"kty":"EC","kid":"p521","crv":"P-521","x":"AA","y":"AA"}"#, TestKeys.rsaJWK()])
        let fetcher = ScriptedFetcher([document])
        let source = RemoteJWKSSource(
            jwksURL: ScriptedFetcher.url, clock: ManualClock(), logger: logs.logger("TokenVerification"),
            fetch: fetcher.fetch)
        _ = try await source.key(for: "rsa-1", algorithm: .rs256)
        #expect(
            logs.lines.contains {
                $0.contains("JWKS key skipped") && $0.contains("p521") && $0.contains("unsupportedCurve")
            })
    }
}
