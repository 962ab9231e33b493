import AuthToken
import Crypto
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification

/// Tokens of every algorithm verify with the right key, and every claim rule holds, with its own reason.
@Suite(.logLeakCheck()) struct TokenVerifierTests {
    static let signed: [JWSAlgorithm] = JWSAlgorithm.asymmetric.sorted { $0.name < $1.name }

    @Test(arguments: signed)
    func everyAsymmetricAlgorithmVerifies(_ algorithm: JWSAlgorithm) async throws {
        let verifier = TestKeys.verifier()
        let claims = try await verifier.verify(TestKeys.token(algorithm))
        #expect(claims.subject == "user_2abc")
        #expect(claims.sessionID == "sess_9xyz")
        #expect(claims.issuer == TestKeys.issuer)
        #expect(claims.algorithm == algorithm)
        #expect(claims.expiration == Date(timeIntervalSince1970: 1_800_000_060))
    }

    @Test(arguments: [JWSAlgorithm.hs256, .hs384, .hs512])
    func hmacVerifiesOnlyWithTheConfiguredSecret(_ algorithm: JWSAlgorithm) async throws {
        let token = TestKeys.token(algorithm)
        let withSecret = TestKeys.verifier(
            .init(
                issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: [algorithm],
                hmacSecrets: TestKeys.hmacSecrets))
        #expect(try await withSecret.verify(token).algorithm == algorithm)
        let withoutSecret = TestKeys.verifier(
            .init(issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: [algorithm]))
        await #expect(throws: TokenVerificationError.algorithmNotAllowed) { try await withoutSecret.verify(token) }
        let otherSecret = TestKeys.verifier(
            .init(
                issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: [algorithm],
                hmacSecrets: [HMACSecret(keyID: nil, key: SymmetricKey(size: .init(bitCount: 512)))]))
        await #expect(throws: TokenVerificationError.invalidSignature) { try await otherSecret.verify(token) }
    }

    @Test func aShortHMACSecretIsRefused() async {
        let verifier = TestKeys.verifier(
            .init(
                issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: [.hs512],
                hmacSecrets: [HMACSecret(keyID: nil, key: SymmetricKey(size: .bits256))]))
        await #expect(throws: TokenVerificationError.weakKey) { try await verifier.verify(TestKeys.token(.hs512)) }
    }

    @Test func hmacSecretsRotateByKeyIDAndEachVerifiesOnlyItsOwn() async throws {
        let previousText = String(TestKeys.hmacSecretText.reversed())
        TestSecrets.shared.register(previousText, as: .clientSecret)
        func signed(kid: String, with text: String) -> String {
            let input =
                TestKeys.base64URL(#"{"alg":"HS256","kid":"\#(kid)"}"#) + "." + TestKeys.base64URL(TestKeys.claims())
            let mac = HMAC<SHA256>.authenticationCode(
                for: Array(input.utf8), using: SymmetricKey(data: Array(text.utf8)))
            return TestKeys.register(input + "." + TestKeys.base64URL(mac))
        }
        let verifier = TestKeys.verifier(
            .init(
                issuer: TestKeys.issuer, audience: TestKeys.noAudience, algorithms: [.hs256],
                hmacSecrets: [
                    HMACSecret(keyID: "2025-06", text: TestKeys.hmacSecretText),
                    try #require(HMACSecret(keyID: "2025-01", base64URL: TestKeys.base64URL(previousText))),
                ]))
        #expect(try await verifier.verify(signed(kid: "2025-06", with: TestKeys.hmacSecretText)).keyID == "2025-06")
        #expect(try await verifier.verify(signed(kid: "2025-01", with: previousText)).keyID == "2025-01")
        await #expect(throws: TokenVerificationError.invalidSignature) {
            try await verifier.verify(signed(kid: "2025-01", with: TestKeys.hmacSecretText))
        }
        await #expect(throws: TokenVerificationError.unknownKeyID) {
            try await verifier.verify(signed(kid: "2024-12", with: TestKeys.hmacSecretText))
        }
        #expect(!"\(verifier.configuration.hmacSecrets)".contains(TestKeys.hmacSecretText))
    }

    @Test func subjectIsRequiredUnlessTurnedOff() async throws {
        let payload = #"{"iss":"\#(TestKeys.issuer)","exp":1800000060,"client_id":"batch-job"}"#
        let token = TestKeys.token(.rs256, payload: payload)
        await #expect(throws: TokenVerificationError.missingClaim("sub")) {
            try await TestKeys.verifier().verify(token)
        }
        let optional = TestKeys.verifier(
            .init(issuer: TestKeys.issuer, audience: TestKeys.noAudience, requiresSubject: false))
        let claims = try await optional.verify(token)
        #expect(claims.subject == "" && claims.string("client_id") == "batch-job")
    }

    @Test func expirationStaysRequiredWhateverRequiredClaimsSaysUnlessTurnedOff() async throws {
        let token = TestKeys.token(.rs256, payload: #"{"sub":"u","iss":"\#(TestKeys.issuer)","sid":"s"}"#)
        for claims in [Set<String>(), ["sid"], ["sid", "sub"]] {
            let verifier = TestKeys.verifier(
                .init(issuer: TestKeys.issuer, audience: TestKeys.noAudience, requiredClaims: claims))
            await #expect(throws: TokenVerificationError.missingClaim("exp")) { try await verifier.verify(token) }
        }
        let noExpiry = TestKeys.verifier(
            .init(issuer: TestKeys.issuer, audience: TestKeys.noAudience, requiresExpiration: false))
        #expect(try await noExpiry.verify(token).expiration == nil)
    }

    @Test func theDefaultAllowListIsRS256Only() async throws {
        let verifier = TestKeys.verifier(.init(issuer: TestKeys.issuer, audience: TestKeys.noAudience))
        _ = try await verifier.verify(TestKeys.token(.rs256))
        await #expect(throws: TokenVerificationError.algorithmNotAllowed) {
            try await verifier.verify(TestKeys.token(.es256))
        }
        await #expect(throws: TokenVerificationError.algorithmNotAllowed) {
            try await verifier.verify(TestKeys.token(.ps256))
        }
    }

    @Test func aKeyOfAnotherTypeDoesNotVerify() async {
        // An ES256 token naming the RSA key's kid: the key decides, and it cannot do ES256.
        let verifier = TestKeys.verifier()
        await #expect(throws: TokenVerificationError.keyAlgorithmMismatch) {
            try await verifier.verify(TestKeys.token(.es256, kid: "rsa-1"))
        }
    }

    @Test func aKeyWithItsOwnAlgVerifiesOnlyThat() async throws {
        let source = StaticJWKSSource(TestKeys.keySet(TestKeys.jwks([TestKeys.rsaJWK(alg: "RS256")])))
        let verifier = TestKeys.verifier(source: source)
        _ = try await verifier.verify(TestKeys.token(.rs256))
        await #expect(throws: TokenVerificationError.keyAlgorithmMismatch) {
            try await verifier.verify(TestKeys.token(.ps256))
        }
    }

    @Test func aTokenWithoutKidUsesTheOnlyMatchingKey() async throws {
        let verifier = TestKeys.verifier()
        // One P-256 key in the set: found without a kid. Several keys could verify RS256? Only one RSA key here.
        #expect(try await verifier.verify(TestKeys.token(.es256, kid: "")).keyID == nil)
        let twoRSA = StaticJWKSSource(
            TestKeys.keySet(
                TestKeys.jwks([TestKeys.rsaJWK(alg: nil), TestKeys.rsaJWK(TestKeys.rsa2, kid: "rsa-2", alg: nil)])))
        await #expect(throws: TokenVerificationError.missingKeyID) {
            try await TestKeys.verifier(source: twoRSA).verify(TestKeys.token(.rs256, kid: ""))
        }
    }

    @Test func aTamperedPayloadFailsTheSignature() async {
        let token = TestKeys.token(.rs256)
        let parts = token.split(separator: ".")
        let forged = TestKeys.register(
            parts[0] + "." + TestKeys.base64URL(TestKeys.claims(#","admin":true"#)) + "." + parts[2])
        await #expect(throws: TokenVerificationError.invalidSignature) { try await TestKeys.verifier().verify(forged) }
    }

    // MARK: Claims

    struct ClaimCase: Sendable, CustomTestStringConvertible {
        let name: String
        let payload: String
        let configuration: TokenVerifier.Configuration
        let expected: TokenVerificationError
        var testDescription: String { name }

        init(
            _ name: String, _ payload: String, _ expected: TokenVerificationError,
            configure: (inout TokenVerifier.Configuration) -> Void = { _ in }
        ) {
            self.name = name
            self.payload = payload
            self.expected = expected
            var configuration = TokenVerifier.Configuration(issuer: TestKeys.issuer, audience: TestKeys.noAudience)
            configure(&configuration)
            self.configuration = configuration
        }
    }

    static let iss = TestKeys.issuer
    static let claimCases: [ClaimCase] = [
        ClaimCase("expired beyond the leeway", TestKeys.claims(exp: "1799999990"), .expired),
        ClaimCase("exp as a string", TestKeys.claims(exp: #""1800000060""#), .invalidClaim("exp")),
        ClaimCase("exp negative", TestKeys.claims(exp: "-5"), .invalidClaim("exp")),
        ClaimCase("exp missing", #"{"sub":"u","iss":"\#(iss)"}"#, .missingClaim("exp")),
        ClaimCase("sub missing", #"{"iss":"\#(iss)","exp":1800000060}"#, .missingClaim("sub")),
        ClaimCase("sub a number", #"{"sub":5,"iss":"\#(iss)","exp":1800000060}"#, .invalidClaim("sub")),
        ClaimCase("iss missing", #"{"sub":"u","exp":1800000060}"#, .missingClaim("iss")),
        ClaimCase(
            "iss differs by a trailing slash", #"{"sub":"u","iss":"\#(iss)/","exp":1800000060}"#, .issuerMismatch),
        ClaimCase("nbf in the future", TestKeys.claims(#","nbf":1800000030"#), .notYetValid),
        ClaimCase(
            "iat in the future", #"{"sub":"u","iss":"\#(iss)","iat":1800000030,"exp":1800000060}"#, .issuedInFuture),
        ClaimCase("too old", TestKeys.claims(), .tokenTooOld) {
            $0.maximumTokenAge = .zero; $0.leeway = .zero
        },
        ClaimCase("max age needs iat", #"{"sub":"u","iss":"\#(iss)","exp":1800000060}"#, .missingClaim("iat")) {
            $0.maximumTokenAge = .seconds(60)
        },
        ClaimCase("aud missing", TestKeys.claims(), .missingClaim("aud")) { $0.audience = .oneOf(["api"]) },
        ClaimCase("aud other", TestKeys.claims(#","aud":["web","app"]"#), .audienceMismatch) {
            $0.audience = .oneOf(["api"])
        },
        ClaimCase("aud a number", TestKeys.claims(#","aud":7"#), .invalidClaim("aud")) {
            $0.audience = .oneOf(["api"])
        },
        ClaimCase("azp not allowed", TestKeys.claims(#","azp":"https://evil.example""#), .partyNotAllowed) {
            $0.allowedParties = ["https://app.example.com"]
        },
        ClaimCase("a required custom claim missing", TestKeys.claims(), .missingClaim("org_id")) {
            $0.requiredClaims = ["exp", "org_id"]
        },
        ClaimCase(
            "sid a number", TestKeys.claims().replacingOccurrences(of: #""sess_9xyz""#, with: "3"), .invalidClaim("sid")
        ),
    ]

    @Test(arguments: claimCases)
    func claimRules(_ testCase: ClaimCase) async {
        let verifier = TestKeys.verifier(testCase.configuration)
        let token = TestKeys.token(.rs256, payload: testCase.payload)
        await #expect(throws: testCase.expected) { try await verifier.verify(token) }
    }

    @Test func theLeewayAppliesBothWays() async throws {
        let clock = ManualClock()
        let verifier = TestKeys.verifier(
            .init(issuer: TestKeys.issuer, audience: TestKeys.noAudience, leeway: .seconds(5)), clock: clock)
        let token = TestKeys.token(.rs256)
        clock.advance(by: .seconds(64))
        _ = try await verifier.verify(token)
        clock.advance(by: .seconds(1))
        await #expect(throws: TokenVerificationError.expired) { try await verifier.verify(token) }
        let early = TestKeys.token(.rs256, payload: TestKeys.claims(#","nbf":1800000004"#))
        _ = try await TestKeys.verifier(
            .init(issuer: TestKeys.issuer, audience: TestKeys.noAudience, leeway: .seconds(5))
        ).verify(early)
    }

    @Test func allowedPartiesAndAudiencesAccept() async throws {
        let verifier = TestKeys.verifier(
            .init(issuer: TestKeys.issuer, audience: .oneOf(["api"]), allowedParties: ["https://app.example.com"]))
        let claims = try await verifier.verify(
            TestKeys.token(.rs256, payload: TestKeys.claims(#","aud":["web","api"],"azp":"https://app.example.com""#)))
        #expect(claims.audience == ["web", "api"])
        #expect(claims.authorizedParty == "https://app.example.com")
        // A single-string aud, and no azp at all.
        _ = try await verifier.verify(TestKeys.token(.rs256, payload: TestKeys.claims(#","aud":"api""#)))
    }

    @Test func theTypeIsCheckedWhenRequired() async throws {
        let verifier = TestKeys.verifier(
            .init(issuer: TestKeys.issuer, audience: TestKeys.noAudience, requiredType: "at+jwt"))
        await #expect(throws: TokenVerificationError.typeMismatch) { try await verifier.verify(TestKeys.token(.rs256)) }
        for type in ["at+jwt", "application/at+JWT"] {
            let token = TestKeys.token(
                header: #"{"alg":"RS256","kid":"rsa-1","typ":"\#(type)"}"#, payload: TestKeys.claims(),
                algorithm: .rs256)
            _ = try await verifier.verify(token)
        }
    }

    @Test func customClaimsAreTyped() async throws {
        struct Custom: Decodable {
            let org_id: String
            let roles: [String]
        }
        let token = TestKeys.token(.rs256, payload: TestKeys.claims(#","org_id":"org_1","roles":["admin"],"n":3"#))
        let claims = try await TestKeys.verifier().verify(token)
        #expect(claims.string("org_id") == "org_1")
        #expect(claims.strings("roles") == ["admin"])
        #expect(claims.integer("n") == 3)
        #expect(claims["missing"] == nil)
        #expect(try claims.decode(Custom.self).roles == ["admin"])
        #expect(claims.issuedAt == Date(timeIntervalSince1970: 1_799_999_999))
    }

    @Test func descriptionsNameNoValues() async throws {
        let claims = try await TestKeys.verifier().verify(TestKeys.token(.rs256))
        for text in [
            claims.description, String(reflecting: claims),
            {
                var out = ""; dump(claims, to: &out); return out
            }(),
        ] {
            #expect(!text.contains("user_2abc"))
            #expect(!text.contains("sess_9xyz"))
        }
        #expect(claims.description.contains("sub"))
        let error = TokenVerificationError.invalidClaim("exp")
        #expect(error.description == "TokenVerificationError.invalidClaim(exp)")
        #expect(error.reason == "invalidClaim")
        #expect(
            error.wwwAuthenticate
                == #"Bearer error="invalid_token", error_description="The token has an invalid claim""#)
    }
}
