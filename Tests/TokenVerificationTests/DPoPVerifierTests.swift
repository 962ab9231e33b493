import Crypto
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification
import _CryptoExtras

/// RFC 9449 on the resource server: a proof bound to its token is accepted once; every hostile proof is refused
/// with the section 7.1 answer.
@Suite(.logLeakCheck()) struct DPoPVerifierTests {
    let client = DPoPTestClient()

    @Test func aFreshProofWithItsBoundTokenIsAcceptedOnce() async throws {
        let clock = ManualClock()
        let authenticator = DPoPFixture.authenticator(clock: clock)
        let token = client.accessToken()
        let proof = client.proof(token: token)
        let first = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [proof], method: "GET", uri: DPoPTestClient.uri)
        let accepted = try #require(first.proof)
        #expect(accepted.keyThumbprint == client.thumbprint)
        #expect(accepted.algorithm == .es256)
        #expect(accepted.expiry == Date(timeIntervalSince1970: 1_800_000_065))
        #expect(!accepted.description.contains(accepted.jwtID))

        let replay = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [proof], method: "GET", uri: DPoPTestClient.uri)
        let rejection = try #require(replay.rejection)
        #expect(rejection.error == .dpopProofReplayed)
        #expect(rejection.status == 401)
        #expect(
            rejection.wwwAuthenticate
                == #"DPoP error="invalid_dpop_proof", error_description="The DPoP proof was already used", algs="ES256 ES384 EdDSA PS256 RS256""#
        )
        #expect(rejection.headers.map(\.name) == ["Content-Type", "WWW-Authenticate"])
    }

    @Test(arguments: [JWSAlgorithm.es384, .edDSA, .rs256, .ps256])
    func everyAllowedAlgorithmVerifies(_ algorithm: JWSAlgorithm) async throws {
        let jwk: String
        switch algorithm {
        case .es384: jwk = TestKeys.p384JWK()
        case .edDSA: jwk = TestKeys.ed25519JWK()
        default: jwk = TestKeys.rsaJWK(alg: nil)
        }
        let payload =
            #"{"htm":"GET","htu":"\#(DPoPTestClient.uri)","iat":\#(DPoPTestClient.start),"jti":"\#(UUID())"}"#
        let proof = TestKeys.token(
            header: #"{"typ":"dpop+jwt","alg":"\#(algorithm.name)","jwk":\#(jwk)}"#, payload: payload,
            algorithm: algorithm)
        let clock = ManualClock()
        let verifier = DPoPVerifier(replayCache: InMemoryDPoPReplayCache(), now: clock.wallClock)
        let checked = try await verifier.verify(
            proof: proof, method: "GET", uri: DPoPTestClient.uri, accessToken: nil, boundKeyThumbprint: nil)
        #expect(checked.algorithm == algorithm)
        #expect(checked.keyThumbprint == TestKeys.keySet(TestKeys.jwks([jwk])).keys.first?.thumbprint)
    }

    /// A hostile or broken proof, and the reason it must be refused with.
    struct Hostile: Sendable, CustomTestStringConvertible {
        let name: String
        let expected: TokenVerificationError
        let make: @Sendable (DPoPTestClient, String) -> String

        var testDescription: String { name }
    }

    static let hostile: [Hostile] = [
        .init(name: "wrong path", expected: .invalidDPoPProof("htu")) {
            $0.proof(htu: "https://api.example.com/admin", token: $1)
        },
        .init(name: "wrong port", expected: .invalidDPoPProof("htu")) {
            $0.proof(htu: "https://api.example.com:8443/orders", token: $1)
        },
        .init(name: "wrong scheme", expected: .invalidDPoPProof("htu")) {
            $0.proof(htu: "http://api.example.com/orders", token: $1)
        },
        .init(name: "wrong host", expected: .invalidDPoPProof("htu")) {
            $0.proof(htu: "https://api.example.com.evil.test/orders", token: $1)
        },
        .init(name: "relative htu", expected: .invalidDPoPProof("htu")) { $0.proof(htu: "/orders", token: $1) },
        .init(name: "wrong method", expected: .invalidDPoPProof("htm")) { $0.proof(method: "POST", token: $1) },
        .init(name: "iat 6 s in the future", expected: .invalidDPoPProof("iat")) { $0.proof(iatOffset: 6, token: $1) },
        .init(name: "iat 66 s old", expected: .invalidDPoPProof("iat")) { $0.proof(iatOffset: -66, token: $1) },
        .init(name: "iat a day old", expected: .invalidDPoPProof("iat")) { $0.proof(iatOffset: -86_400, token: $1) },
        .init(name: "iat as a string", expected: .invalidDPoPProof("iat")) { client, token in
            client.proof(
                token: token,
                payload: #"{"htm":"GET","htu":"\#(DPoPTestClient.uri)","iat":"1800000000","jti":"a"}"#)
        },
        .init(name: "typ JWT", expected: .invalidDPoPProof("typ")) { $0.proof(token: $1, typ: "JWT") },
        .init(name: "alg none", expected: .invalidDPoPProof("alg")) { client, token in
            let proof = client.proof(token: token, alg: "none")
            return String(proof[..<proof.lastIndex(of: ".")!]) + "."
        },
        .init(name: "alg HS256 with the jwk as secret", expected: .invalidDPoPProof("alg")) { client, token in
            let header = #"{"typ":"dpop+jwt","alg":"HS256","jwk":\#(client.jwk)}"#
            let payload =
                #"{"htm":"GET","htu":"\#(DPoPTestClient.uri)","iat":\#(DPoPTestClient.start),"jti":"h","ath":"\#(DPoPVerifier.accessTokenHash(token))"}"#
            let input = TestKeys.base64URL(header) + "." + TestKeys.base64URL(payload)
            let mac = HMAC<SHA256>.authenticationCode(
                for: Array(input.utf8), using: SymmetricKey(data: Array(client.jwk.utf8)))
            return DPoPTestClient.proof(header: header, payload: payload, signature: Array(mac))
        },
        .init(name: "alg ES256 with an Ed25519 jwk", expected: .invalidDPoPProof("alg")) {
            $0.proof(token: $1, jwk: TestKeys.ed25519JWK())
        },
        .init(name: "private key in jwk", expected: .invalidDPoPProof("jwk")) { client, token in
            let d = TestKeys.base64URL(client.key.rawRepresentation)
            return client.proof(
                token: token, jwk: #"{"kty":"EC","crv":"P-256","x":"\#(client.x)","y":"\#(client.y)","d":"\#(d)"}"#)
        },
        .init(name: "symmetric jwk", expected: .invalidDPoPProof("jwk")) {
            $0.proof(token: $1, jwk: #"{"kty":"oct","k":"c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI"}"#)
        },
        .init(name: "no jwk", expected: .invalidDPoPProof("jwk")) { $0.proof(token: $1, jwk: #""none""#) },
        .init(name: "point off the curve", expected: .invalidDPoPProof("jwk")) { client, token in
            client.proof(
                token: token, jwk: #"{"kty":"EC","crv":"P-256","x":"\#(client.x)","y":"\#(client.x)"}"#)
        },
        .init(name: "crit header", expected: .invalidDPoPProof("crit")) {
            $0.proof(token: $1, extraHeader: #","crit":["exp"]"#)
        },
        .init(name: "missing ath", expected: .invalidDPoPProof("ath")) { client, _ in client.proof(token: nil) },
        .init(name: "ath of another token", expected: .invalidDPoPProof("ath")) { client, _ in
            client.proof(token: client.accessToken(jkt: "other"))
        },
        .init(name: "missing jti", expected: .invalidDPoPProof("jti")) { $0.proof(jti: nil, token: $1) },
        .init(name: "empty jti", expected: .invalidDPoPProof("jti")) { $0.proof(jti: "", token: $1) },
        .init(name: "jti of 257 bytes", expected: .invalidDPoPProof("jti")) {
            $0.proof(jti: String(repeating: "j", count: 257), token: $1)
        },
        .init(name: "signed by another key", expected: .invalidDPoPProof("signature")) {
            $0.proof(token: $1, signer: P256.Signing.PrivateKey())
        },
        .init(name: "proof key other than cnf.jkt", expected: .dpopKeyMismatch) { _, token in
            DPoPTestClient().proof(token: token)
        },
        .init(name: "not a JWS", expected: .invalidDPoPProof("proof")) { _, _ in "not-a-proof" },
        .init(name: "empty", expected: .invalidDPoPProof("proof")) { _, _ in "" },
        .init(name: "too long", expected: .invalidDPoPProof("proof")) { _, _ in
            String(repeating: "a", count: 9_000) + ".b.c"
        },
    ]

    @Test(arguments: hostile)
    func aHostileProofIsRefusedAndSpendsNothing(_ hostile: Hostile) async throws {
        let clock = ManualClock()
        let cache = RecordingReplayCache()
        let authenticator = DPoPFixture.authenticator(clock: clock, cache: cache)
        let token = client.accessToken()
        let outcome = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [hostile.make(client, token)], method: "GET",
            uri: DPoPTestClient.uri)
        let rejection = try #require(outcome.rejection, "\(hostile.name) was accepted")
        #expect(rejection.error == hostile.expected, "\(hostile.name)")
        #expect(rejection.status == 401)
        #expect(rejection.wwwAuthenticate?.hasPrefix(#"DPoP error="invalid_dpop_proof""#) == true)
        #expect(rejection.wwwAuthenticate?.hasSuffix(#"algs="ES256 ES384 EdDSA PS256 RS256""#) == true)
        #expect(cache.spendCount == 0)
    }

    @Test func anOpaqueTokenIsBoundByTheCnfOfItsIntrospectionAnswer() async throws {
        let (endpoint, clock) = (FakeIntrospectionEndpoint(), ManualClock())
        let token = IntrospectionVerifierTests.token()
        endpoint.answer(
            token, IntrospectionVerifierTests.active(clock, extra: #", "cnf": {"jkt": "\#(client.thumbprint)"}"#))
        let authenticator = DPoPAuthenticator(
            tokens: BearerAuthenticator(introspection: IntrospectionVerifierTests.verifier(endpoint, clock: clock)),
            proofs: DPoPVerifier(replayCache: InMemoryDPoPReplayCache(), now: clock.wallClock), allowsBearer: true)
        let accepted = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [client.proof(token: token)], method: "GET",
            uri: DPoPTestClient.uri)
        guard case .authenticated(let claims, let proof?) = accepted else {
            Issue.record("refused: \(String(describing: accepted.error))")
            return
        }
        #expect(claims.isIntrospected)
        #expect(claims.confirmationKeyThumbprint == proof.keyThumbprint)
        let stranger = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [DPoPTestClient().proof(token: token)], method: "GET",
            uri: DPoPTestClient.uri)
        #expect(stranger.error == .dpopKeyMismatch)
        let bearer = await authenticator.authenticate(
            authorization: "Bearer " + token, proofs: [], method: "GET", uri: DPoPTestClient.uri)
        #expect(bearer.error == .dpopBoundTokenAsBearer)
    }

    @Test func withBearerAllowedAMissingCredentialIsChallengedForBoth() async throws {
        let authenticator = DPoPFixture.authenticator(clock: ManualClock(), allowsBearer: true)
        let outcome = await authenticator.authenticate(
            authorization: nil, proofs: [], method: "GET", uri: DPoPTestClient.uri)
        #expect(outcome.rejection?.wwwAuthenticate == #"Bearer, DPoP algs="ES256 ES384 EdDSA PS256 RS256""#)
        #expect(outcome.error == .missingAuthorization)
    }

    @Test func aKnownHeaderStillNeedsAValidSignatureAndClaims() async throws {
        let clock = ManualClock()
        let authenticator = DPoPFixture.authenticator(clock: clock)
        let token = client.accessToken()
        let first = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [client.proof(token: token)], method: "GET",
            uri: DPoPTestClient.uri)
        #expect(first.proof != nil)
        // The same header text, now remembered: a forged signature and a wrong htu are refused all the same.
        let forged = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [client.proof(token: token, signer: P256.Signing.PrivateKey())],
            method: "GET", uri: DPoPTestClient.uri)
        #expect(forged.error == .invalidDPoPProof("signature"))
        let elsewhere = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [client.proof(htu: "https://api.example.com/x", token: token)],
            method: "GET", uri: DPoPTestClient.uri)
        #expect(elsewhere.error == .invalidDPoPProof("htu"))
    }

    @Test func theWindowEdgesAreInclusiveAndAReplayAtTheEdgeIsRefused() async throws {
        let clock = ManualClock()
        let authenticator = DPoPFixture.authenticator(clock: clock)
        let token = client.accessToken()
        for offset in [-65, 5] {
            let proof = client.proof(iatOffset: offset, token: token)
            let outcome = await authenticator.authenticate(
                authorization: "DPoP " + token, proofs: [proof], method: "GET", uri: DPoPTestClient.uri)
            #expect(outcome.proof != nil, "iat offset \(offset)")
            let replay = await authenticator.authenticate(
                authorization: "DPoP " + token, proofs: [proof], method: "GET", uri: DPoPTestClient.uri)
            #expect(replay.error == .dpopProofReplayed, "iat offset \(offset)")
        }
    }

    @Test func aNegativeWindowIsTakenAsZeroAndItsEntryNeverExpiresBeforeNow() async throws {
        let clock = ManualClock()
        let verifier = DPoPVerifier(
            configuration: .init(maximumAge: .seconds(-30), leeway: .seconds(-30)),
            replayCache: InMemoryDPoPReplayCache(), now: clock.wallClock)
        let proof = client.proof(token: nil)
        let accepted = try await verifier.verify(
            proof: proof, method: "GET", uri: DPoPTestClient.uri, accessToken: nil, boundKeyThumbprint: nil)
        #expect(accepted.expiry == clock.date)
        await #expect(throws: TokenVerificationError.dpopProofReplayed) {
            _ = try await verifier.verify(
                proof: proof, method: "GET", uri: DPoPTestClient.uri, accessToken: nil, boundKeyThumbprint: nil)
        }
        await #expect(throws: TokenVerificationError.invalidDPoPProof("iat")) {
            _ = try await verifier.verify(
                proof: client.proof(iatOffset: -1, token: nil), method: "GET", uri: DPoPTestClient.uri,
                accessToken: nil, boundKeyThumbprint: nil)
        }
    }

    @Test func aSpentProofStaysSpentUntilItCouldNoLongerBeAccepted() async throws {
        let clock = ManualClock()
        let cache = InMemoryDPoPReplayCache()
        let authenticator = DPoPFixture.authenticator(clock: clock, cache: cache)
        let token = client.accessToken()
        let proof = client.proof(token: token)
        #expect(
            await authenticator.authenticate(
                authorization: "DPoP " + token, proofs: [proof], method: "GET", uri: DPoPTestClient.uri
            ).proof != nil)
        // At the entry's last second the replay is refused as a replay; a second later, by its iat.
        clock.advance(by: .seconds(65))
        #expect(
            await authenticator.authenticate(
                authorization: "DPoP " + token, proofs: [proof], method: "GET", uri: DPoPTestClient.uri
            ).error == .dpopProofReplayed)
        clock.advance(by: .seconds(1))
        #expect(
            await authenticator.authenticate(
                authorization: "DPoP " + token, proofs: [proof], method: "GET", uri: DPoPTestClient.uri
            ).error == .invalidDPoPProof("iat"))
        // The next spend prunes the expired entry.
        #expect(cache.count == 1)
        _ = try cache.spend(keyThumbprint: "k", jwtID: "j", until: clock.date, now: clock.date)
        #expect(cache.count == 1)
    }

    @Test func aProofReplayedToAnotherReplicaOverOneCacheIsRefused() async throws {
        let clock = ManualClock()
        let shared = InMemoryDPoPReplayCache()
        let replicas = (0..<4).map { _ in DPoPFixture.authenticator(clock: clock, cache: shared) }
        let token = client.accessToken()
        for round in 0..<50 {
            let proof = client.proof(token: token)
            let first = await replicas[round % 4].authenticate(
                authorization: "DPoP " + token, proofs: [proof], method: "GET", uri: DPoPTestClient.uri)
            #expect(first.proof != nil)
            let replay = await replicas[(round + 1) % 4].authenticate(
                authorization: "DPoP " + token, proofs: [proof], method: "GET", uri: DPoPTestClient.uri)
            #expect(replay.error == .dpopProofReplayed)
        }
    }

    @Test func aNormalizedHTUMatches() async throws {
        let clock = ManualClock()
        let authenticator = DPoPFixture.authenticator(clock: clock)
        let token = client.accessToken()
        for htu in [
            "HTTPS://API.Example.COM:443/orders?page=2#top", "https://api.example.com/./orders",
            "https://api.example.com/x/../orders", "https://api.example.com/%6Frders",
        ] {
            let outcome = await authenticator.authenticate(
                authorization: "DPoP " + token, proofs: [client.proof(htu: htu, token: token)], method: "GET",
                uri: DPoPTestClient.uri + "?page=3")
            #expect(outcome.proof != nil, "\(htu)")
        }
        let root = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [client.proof(htu: "https://api.example.com", token: token)],
            method: "GET", uri: "https://api.example.com/")
        #expect(root.proof != nil)
    }

    @Test func aBoundTokenSentAsBearerIsRefusedAsAnInvalidToken() async throws {
        let clock = ManualClock()
        let token = client.accessToken()
        for allowsBearer in [false, true] {
            let authenticator = DPoPFixture.authenticator(clock: clock, allowsBearer: allowsBearer)
            let outcome = await authenticator.authenticate(
                authorization: "Bearer " + token, proofs: [], method: "GET", uri: DPoPTestClient.uri)
            let rejection = try #require(outcome.rejection)
            #expect(rejection.error == .dpopBoundTokenAsBearer)
            #expect(rejection.wwwAuthenticate?.hasPrefix(#"DPoP error="invalid_token""#) == true)
        }
    }

    @Test func anUnboundTokenIsAcceptedAsBearerOnlyWhenAllowedAndNeverWithTheDPoPScheme() async throws {
        let clock = ManualClock()
        let token = client.accessToken(jkt: "")
        let allowing = DPoPFixture.authenticator(clock: clock, allowsBearer: true)
        guard
            case .authenticated(let claims, nil) = await allowing.authenticate(
                authorization: "Bearer " + token, proofs: [], method: "GET", uri: DPoPTestClient.uri)
        else { Issue.record("an unbound Bearer was refused"); return }
        #expect(claims.subject == "user_2abc")
        let strict = DPoPFixture.authenticator(clock: clock)
        #expect(
            await strict.authenticate(
                authorization: "Bearer " + token, proofs: [], method: "GET", uri: DPoPTestClient.uri
            ).error == .dpopBoundTokenAsBearer)
        let withProof = await strict.authenticate(
            authorization: "DPoP " + token, proofs: [client.proof(token: token)], method: "GET",
            uri: DPoPTestClient.uri)
        #expect(withProof.error == .dpopTokenNotBound)
        #expect(withProof.rejection?.wwwAuthenticate?.hasPrefix(#"DPoP error="invalid_token""#) == true)
    }

    @Test func missingOrRepeatedProofHeadersAreRefused() async throws {
        let clock = ManualClock()
        let authenticator = DPoPFixture.authenticator(clock: clock)
        let token = client.accessToken()
        for proofs in [[], [client.proof(token: token), client.proof(token: token)]] {
            let outcome = await authenticator.authenticate(
                authorization: "DPoP " + token, proofs: proofs, method: "GET", uri: DPoPTestClient.uri)
            #expect(outcome.error == .invalidDPoPProof("proof"))
        }
        let none = await authenticator.authenticate(
            authorization: nil, proofs: [], method: "GET", uri: DPoPTestClient.uri)
        #expect(none.rejection?.wwwAuthenticate == #"DPoP algs="ES256 ES384 EdDSA PS256 RS256""#)
        #expect(none.rejection?.status == 401)
    }

    @Test func anInvalidAccessTokenIsAnInvalidTokenAndSpendsNothing() async throws {
        let clock = ManualClock()
        let cache = RecordingReplayCache()
        let authenticator = DPoPFixture.authenticator(clock: clock, cache: cache)
        let expired = TestKeys.token(
            .rs256, payload: TestKeys.claims(#","cnf":{"jkt":"\#(client.thumbprint)"}"#, exp: "1799999000"))
        let outcome = await authenticator.authenticate(
            authorization: "DPoP " + expired, proofs: [client.proof(token: expired)], method: "GET",
            uri: DPoPTestClient.uri)
        #expect(outcome.error == .expired)
        #expect(outcome.rejection?.wwwAuthenticate?.hasPrefix(#"DPoP error="invalid_token""#) == true)
        #expect(cache.spendCount == 0)
    }

    @Test func anUnreachableReplayCacheFailsClosedWith503() async throws {
        let clock = ManualClock()
        let authenticator = DPoPFixture.authenticator(clock: clock, cache: RecordingReplayCache(fails: true))
        let token = client.accessToken()
        let outcome = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [client.proof(token: token)], method: "GET",
            uri: DPoPTestClient.uri)
        let rejection = try #require(outcome.rejection)
        #expect(rejection.error == .dpopReplayCacheUnavailable)
        #expect(rejection.status == 503)
        #expect(rejection.wwwAuthenticate == nil)
    }

    @Test func aFullInMemoryCacheRefusesRatherThanForgets() async throws {
        let clock = ManualClock()
        let cache = InMemoryDPoPReplayCache(capacity: 2)
        let authenticator = DPoPFixture.authenticator(clock: clock, cache: cache)
        let token = client.accessToken()
        var outcomes: [TokenVerificationError?] = []
        for _ in 0..<3 {
            outcomes.append(
                await authenticator.authenticate(
                    authorization: "DPoP " + token, proofs: [client.proof(token: token)], method: "GET",
                    uri: DPoPTestClient.uri
                ).error)
        }
        #expect(outcomes == [nil, nil, .dpopReplayCacheUnavailable])
        // Once the first two expired, there is room again.
        clock.advance(by: .seconds(66))
        let later = client.proof(iatOffset: 66, token: token)
        #expect(
            await authenticator.authenticate(
                authorization: "DPoP " + token, proofs: [later], method: "GET", uri: DPoPTestClient.uri
            ).proof != nil)
    }
}

/// Server nonces (RFC 9449 section 9): stateless, per server secret, asked for with `use_dpop_nonce`.
@Suite(.logLeakCheck()) struct DPoPNonceTests {
    let client = DPoPTestClient()
    let nonces = DPoPNonces(secret: Array(repeating: 7, count: 32), lifetime: .seconds(300))!

    @Test func aProofWithoutTheNonceIsAskedToUseOne() async throws {
        let clock = ManualClock()
        let authenticator = DPoPFixture.authenticator(clock: clock, nonces: nonces)
        let token = client.accessToken()
        let outcome = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [client.proof(token: token)], method: "GET",
            uri: DPoPTestClient.uri)
        let rejection = try #require(outcome.rejection)
        #expect(rejection.error == .useDPoPNonce)
        #expect(rejection.wwwAuthenticate?.hasPrefix(#"DPoP error="use_dpop_nonce""#) == true)
        let nonce = try #require(rejection.dpopNonce)
        #expect(rejection.headers.contains { $0.name == "DPoP-Nonce" && $0.value == nonce })
        #expect(nonce == authenticator.currentNonce)

        let retried = await authenticator.authenticate(
            authorization: "DPoP " + token, proofs: [client.proof(token: token, nonce: nonce)], method: "GET",
            uri: DPoPTestClient.uri)
        #expect(retried.proof?.nonce == nonce)
    }

    @Test func aNonceFromAnotherServerOrTooOldIsRefused() async throws {
        let clock = ManualClock()
        let authenticator = DPoPFixture.authenticator(clock: clock, nonces: nonces)
        let other = DPoPNonces(secret: Array(repeating: 8, count: 32), lifetime: .seconds(300))!
        let token = client.accessToken()
        for nonce in [other.nonce(at: clock.date), "not-a-nonce", ""] {
            let outcome = await authenticator.authenticate(
                authorization: "DPoP " + token, proofs: [client.proof(token: token, nonce: nonce)], method: "GET",
                uri: DPoPTestClient.uri)
            #expect(outcome.error == .useDPoPNonce)
        }
        #expect(nonces.accepts(nonces.nonce(at: clock.date), at: clock.date.addingTimeInterval(300)))
        #expect(!nonces.accepts(nonces.nonce(at: clock.date), at: clock.date.addingTimeInterval(600)))
        #expect(!nonces.accepts(nonces.nonce(at: clock.date.addingTimeInterval(600)), at: clock.date))
        #expect(DPoPNonces(secret: Array(repeating: 7, count: 31)) == nil)
        #expect(!nonces.description.contains("7"))
    }
}

/// Hostile bytes never crash the proof check or the URI comparison.
@Suite(.logLeakCheck()) struct DPoPMalformedInputTests {
    @Test func mutatedProofsAreRefusedWithoutCrashing() async throws {
        let clock = ManualClock()
        let client = DPoPTestClient()
        let token = client.accessToken()
        let proof = Array(client.proof(token: token).utf8)
        let verifier = DPoPVerifier(replayCache: InMemoryDPoPReplayCache(), now: clock.wallClock)
        var generator = SplitMix(seed: 44)
        var accepted = 0
        for _ in 0..<2_000 {
            var bytes = proof
            for _ in 0..<(1 + Int(generator.next() % 4)) {
                let index = Int(generator.next() % UInt64(bytes.count))
                switch generator.next() % 3 {
                case 0: bytes[index] = UInt8(truncatingIfNeeded: generator.next())
                case 1: bytes.remove(at: index)
                default: bytes.insert(UInt8(truncatingIfNeeded: generator.next()), at: index)
                }
            }
            // A byte replaced by itself, or removed and put back, is the original proof, not a mutation.
            guard bytes != proof else { continue }
            let text = String(decoding: bytes, as: UTF8.self)
            do {
                _ = try await verifier.verify(
                    proof: text, method: "GET", uri: DPoPTestClient.uri, accessToken: token,
                    boundKeyThumbprint: client.thumbprint)
                accepted += 1
            } catch {
                #expect(error.isTokenProblem)
            }
        }
        // Strict base64url leaves no second spelling of a signature: no mutation is accepted.
        #expect(accepted == 0)
    }

    @Test(arguments: [
        "", "https:", "https://", "https:///x", "https://[::1", "https://[::1]x/", "https://h:99999/",
        "https://h:-1/", "https://u@h/", "https://h/%", "https://h/%zz", "https://h/\u{0}", "ftp://h/",
        "https://h/a b", String(repeating: "/", count: 10_000),
    ])
    func oddTargetURIsNeverMatchOrCrash(_ htu: String) async throws {
        let clock = ManualClock()
        let client = DPoPTestClient()
        let verifier = DPoPVerifier(replayCache: InMemoryDPoPReplayCache(), now: clock.wallClock)
        await #expect(throws: TokenVerificationError.self) {
            _ = try await verifier.verify(
                proof: client.proof(htu: htu, token: nil), method: "GET", uri: htu, accessToken: nil,
                boundKeyThumbprint: nil)
        }
    }
}

/// A small deterministic generator for the mutation test.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
