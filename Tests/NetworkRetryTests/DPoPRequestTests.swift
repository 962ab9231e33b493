import AuthToken
import Foundation
import HTTPTypes
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import NetworkRetry

/// A token provider for DPoP tests: hands out `DPoP` tokens, counts refreshes (each one a new token).
actor DPoPTokenProvider: TokenProvider {
    private(set) var current: AuthToken
    private(set) var refreshCount = 0
    private let now: Date

    /// `expired`: the first token's lifetime is over at `now`.
    init(now: Date, expired: Bool = false, tokenType: String = "DPoP", accessToken: String = "dpop-access-0") {
        self.now = now
        current = TestSecrets.shared.register(
            AuthToken(
                accessToken: accessToken, refreshToken: "dpop-refresh-secret", tokenType: tokenType,
                receivedAt: now.addingTimeInterval(expired ? -7200 : -60), lifetime: 3600))
    }

    func validToken() async throws -> AuthToken { current }

    func refreshToken(afterRejectionOf accessToken: String) async throws -> AuthToken {
        guard accessToken == current.accessToken else { return current }
        refreshCount += 1
        current = TestSecrets.shared.register(
            AuthToken(
                accessToken: "dpop-access-\(refreshCount)", refreshToken: "dpop-refresh-secret",
                tokenType: current.tokenType, receivedAt: now, lifetime: 3600))
        return current
    }
}

/// Server answers for DPoP tests.
enum DPoPAnswer {
    static func nonceChallenge(_ nonce: String?, alsoInvalidToken: Bool = false) -> MockTransport.Reply {
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = #"DPoP error="use_dpop_nonce", algs="ES256""#
        if alsoInvalidToken { headers.append(HTTPField(name: .wwwAuthenticate, value: #"DPoP error="invalid_token""#)) }
        if let nonce { headers[.dpopNonce] = nonce }
        return .response(status: .unauthorized, headers: headers)
    }

    static func rejected(_ error: String) -> MockTransport.Reply {
        var headers = HTTPFields()
        headers[.wwwAuthenticate] = #"DPoP error=""# + error + #"", algs="ES256""#
        return .response(status: .unauthorized, headers: headers)
    }

    static func ok(nonce: String? = nil) -> MockTransport.Reply {
        var headers = HTTPFields()
        if let nonce { headers[.dpopNonce] = nonce }
        return .response(status: .ok, headers: headers, body: Data("ok".utf8))
    }
}

extension RecordedRequest {
    /// The request's DPoP proof, decoded.
    var dpopProof: DecodedProof? {
        request.headerFields[.dpop].flatMap { try? DecodedProof($0) }
    }
}

@Suite(.logLeakCheck()) struct DPoPRequestTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let prover = DPoPProver(key: SoftwareDPoPKey(), now: { DPoPRequestTests.now })

    func client(_ transport: MockTransport, _ provider: any TokenProvider, prover: DPoPProver?) -> AuthenticatedClient {
        AuthenticatedClient(
            transport: transport, tokenProvider: provider,
            configuration: .init(allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!], dpop: prover))
    }

    @Test func aDPoPTokenGoesWithTheDPoPSchemeAndAProofCarryingAth() async throws {
        let transport = MockTransport(script: [DPoPAnswer.ok()])
        let provider = DPoPTokenProvider(now: Self.now)
        _ = try await client(transport, provider, prover: prover).executeWithAutoRetry(.api(.post, "/v1/items?x=1"))
        let sent = try #require(transport.requests.first)
        #expect(sent.request.headerFields[values: .authorization] == ["DPoP dpop-access-0"])
        let proof = try #require(sent.dpopProof)
        #expect(proof.payload["htm"] as? String == "POST")
        #expect(proof.payload["htu"] as? String == "https://api.example.com/v1/items")
        #expect(proof.payload["ath"] as? String == DPoPProver.ath("dpop-access-0"))
        #expect(proof.signatureVerifies)
    }

    @Test func aDPoPTokenIsNeverSentWithoutItsKey() async throws {
        let transport = MockTransport(script: [DPoPAnswer.ok()])
        await #expect(throws: NetworkRetryError.dpopKeyUnavailable) {
            try await client(transport, DPoPTokenProvider(now: Self.now), prover: nil).executeWithAutoRetry(.api())
        }
        let other = DPoPProver.thumbprint(of: SoftwareDPoPKey())
        let bound = JWTBuilder.token(claims: #"{"sub":"u","cnf":{"jkt":""# + other + #""}}"#)
        let provider = DPoPTokenProvider(now: Self.now, accessToken: bound)
        await #expect(throws: NetworkRetryError.dpopKeyUnavailable) {
            try await client(transport, provider, prover: prover).executeWithAutoRetry(.api())
        }
        #expect(transport.requests.isEmpty)
    }

    @Test func aBearerTokenGoesAsBearerWithoutAProof() async throws {
        let transport = MockTransport(script: [DPoPAnswer.ok()])
        let provider = DPoPTokenProvider(now: Self.now, tokenType: "Bearer")
        _ = try await client(transport, provider, prover: prover).executeWithAutoRetry(.api())
        #expect(transport.requests[0].bearerToken == "dpop-access-0")
        #expect(transport.requests[0].request.headerFields[.dpop] == nil)
    }

    @Test func aNonceChallengeIsAnsweredOnceWithoutARefresh() async throws {
        let transport = MockTransport(script: [DPoPAnswer.nonceChallenge("n-1"), DPoPAnswer.ok()])
        let provider = DPoPTokenProvider(now: Self.now)
        let (response, _) = try await client(transport, provider, prover: prover).executeWithAutoRetry(.api())
        #expect(response.status == .ok)
        #expect(transport.requests.count == 2)
        #expect(transport.requests[0].dpopProof?.payload["nonce"] == nil)
        #expect(transport.requests[1].dpopProof?.payload["nonce"] as? String == "n-1")
        #expect(await provider.refreshCount == 0)
    }

    @Test func aNonceChallengeWithAnExpiredTokenRefreshesOnceAndSendsTwice() async throws {
        let transport = MockTransport(script: [
            DPoPAnswer.nonceChallenge("n-1"), DPoPAnswer.rejected("invalid_token"), DPoPAnswer.ok(),
        ])
        let provider = DPoPTokenProvider(now: Self.now, expired: true)
        await #expect(throws: NetworkRetryError.unauthorizedAfterRefresh) {
            try await client(transport, provider, prover: prover).executeWithAutoRetry(.api())
        }
        #expect(transport.requests.count == 2)
        #expect(await provider.refreshCount == 1)
        #expect(transport.requests[1].request.headerFields[.authorization] == "DPoP dpop-access-1")
        #expect(transport.requests[1].dpopProof?.payload["nonce"] as? String == "n-1")
        #expect(transport.requests[1].dpopProof?.payload["ath"] as? String == DPoPProver.ath("dpop-access-1"))
    }

    @Test func aSecondNonceChallengeFailsTheCall() async throws {
        let transport = MockTransport(script: [DPoPAnswer.nonceChallenge("n-1"), DPoPAnswer.nonceChallenge("n-2")])
        await #expect(throws: NetworkRetryError.dpopProofRejected) {
            try await client(transport, DPoPTokenProvider(now: Self.now), prover: prover).executeWithAutoRetry(.api())
        }
        #expect(transport.requests.count == 2)
    }

    @Test func aNonceOnA200IsUsedByTheNextRequestWithNoExtraRoundTrip() async throws {
        let transport = MockTransport(script: [DPoPAnswer.ok(nonce: "n-ok"), DPoPAnswer.ok()])
        let authenticated = client(transport, DPoPTokenProvider(now: Self.now), prover: prover)
        _ = try await authenticated.executeWithAutoRetry(.api())
        _ = try await authenticated.executeWithAutoRetry(.api())
        #expect(transport.requests.count == 2)
        #expect(transport.requests[1].dpopProof?.payload["nonce"] as? String == "n-ok")
    }

    @Test func anInvalidProofIsNotRetried() async throws {
        let transport = MockTransport(script: [DPoPAnswer.rejected("invalid_dpop_proof")])
        await #expect(throws: NetworkRetryError.dpopProofRejected) {
            try await client(transport, DPoPTokenProvider(now: Self.now), prover: prover).executeWithAutoRetry(.api())
        }
        #expect(transport.requests.count == 1)
    }

    // MARK: The token endpoint's transport

    @Test func theTokenEndpointGetsAProofAndOneNonceRetry() async throws {
        var nonceAnswer = HTTPFields()
        nonceAnswer[.dpopNonce] = "as-1"
        nonceAnswer[.contentType] = "application/json"
        let transport = MockTransport(script: [
            .response(status: .badRequest, headers: nonceAnswer, body: Data(#"{"error":"use_dpop_nonce"}"#.utf8)),
            DPoPAnswer.ok(nonce: "as-2"),
        ])
        let dpop = DPoPTransport(transport, prover: prover)
        let request = HTTPRequest(method: .post, scheme: "https", authority: "auth.example.com", path: "/oauth/token")
        let (response, _) = try await dpop.send(request, body: Data("grant_type=refresh_token".utf8))
        #expect(response.status == .ok)
        #expect(transport.requests.count == 2)
        let first = try #require(transport.requests[0].dpopProof)
        #expect(first.payload["htu"] as? String == "https://auth.example.com/oauth/token")
        #expect(first.payload["ath"] == nil)
        #expect(transport.requests[1].dpopProof?.payload["nonce"] as? String == "as-1")
        // Learned from the 200: the next token request needs no extra round trip.
        #expect(prover.nonce(for: HTTPOrigin(string: "https://auth.example.com")!) == "as-2")
    }

    @Test func theTokenEndpointRetriesANonceChallengeOnlyOnce() async throws {
        func challenge(_ nonce: String) -> MockTransport.Reply {
            var headers = HTTPFields()
            headers[.dpopNonce] = nonce
            return .response(status: .badRequest, headers: headers, body: Data(#"{"error":"use_dpop_nonce"}"#.utf8))
        }
        let transport = MockTransport(script: [challenge("a"), challenge("b"), challenge("c")])
        let request = HTTPRequest(method: .post, scheme: "https", authority: "auth.example.com", path: "/token")
        let (response, _) = try await DPoPTransport(transport, prover: prover).send(request, body: nil)
        #expect(response.status == .badRequest)
        #expect(transport.requests.count == 2)
    }
}
