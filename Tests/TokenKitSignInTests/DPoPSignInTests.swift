import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import SignInTestSupport
import Testing
import TokenKitLogCheck
import TokenKitSignIn
import TokenKitTesting
import TokenRefresh

/// Records the requests it passes on (their heads only).
final class HeadRecorder: HTTPTransport, Sendable {
    let base: any HTTPTransport
    private let heads = Locked<[HTTPRequest]>([])

    init(_ base: any HTTPTransport) { self.base = base }

    var requests: [HTTPRequest] { heads.withLock { $0 } }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        heads.withLock { $0.append(request) }
        return try await base.send(request, body: body)
    }
}

@Suite(.logLeakCheck())
struct DPoPSignInTests {
    static let dpop = HTTPField.Name("DPoP")!

    func flow(_ rig: SignInRig, _ transport: any HTTPTransport, prover: DPoPProver) -> AuthorizationCodeFlow {
        AuthorizationCodeFlow(
            server: rig.provider.server, client: OAuthClient(id: FakeOpenIDProvider.clientID),
            configuration: .init(redirectURI: rig.redirectURI, dpop: prover), tokens: rig.tokens,
            transport: transport, idTokenStore: rig.store, now: { rig.provider.now() })
    }

    @Test func theAuthorizationRequestCarriesDpopJktAndTheCodeExchangeAProof() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let prover = DPoPProver(key: SoftwareDPoPKey(), now: clock.wallClock)
        let recorder = HeadRecorder(rig.provider)
        try await flow(rig, recorder, prover: prover).signIn(using: rig.browser)
        let query = try #require(rig.provider.snapshot.authorizationQueries.first)
        #expect(query["dpop_jkt"] == prover.thumbprint)
        let exchanges = recorder.requests.filter { $0.path == rig.provider.server.tokenEndpoint.path }
        #expect(exchanges.count == 1)
        #expect(exchanges.allSatisfy { $0.headerFields[Self.dpop] != nil })
        // The key set fetch is not a token request: no proof.
        #expect(recorder.requests.filter { $0.headerFields[Self.dpop] == nil }.count == recorder.requests.count - 1)
    }

    @Test func aPushedRequestCarriesDpopJktAndAProof() async throws {
        let clock = ManualClock()
        var behaviour = FakeOpenIDProvider.Behaviour()
        behaviour.offersPAR = true
        let rig = SignInRig(now: clock.wallClock, clock: clock, behaviour: behaviour)
        let prover = DPoPProver(key: SoftwareDPoPKey(), now: clock.wallClock)
        let recorder = HeadRecorder(rig.provider)
        _ = try await flow(rig, recorder, prover: prover).start()
        let pushed = try #require(rig.provider.snapshot.pushed.values.first)
        #expect(pushed["dpop_jkt"] == prover.thumbprint)
        #expect(recorder.requests.count == 1)
        #expect(recorder.requests.first?.headerFields[Self.dpop] != nil)
    }

    @Test func theDevicePollCarriesAProof() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        rig.provider.update { $0.deviceAnswers = [.approve] }
        let prover = DPoPProver(key: SoftwareDPoPKey(), now: clock.wallClock)
        let recorder = HeadRecorder(rig.provider)
        let endpoint = TokenEndpoint(
            url: rig.provider.server.tokenEndpoint, client: OAuthClient(id: FakeOpenIDProvider.clientID),
            transport: DPoPTransport(recorder, prover: prover), now: clock.wallClock)
        let device = DeviceAuthorization(
            url: rig.provider.server.deviceAuthorizationEndpoint!, tokenEndpoint: endpoint,
            scopes: ["openid", "profile"], server: rig.provider.server, clock: clock)
        let code = try await device.start()
        let signIn = Task { try await device.signIn(code, into: rig.tokens) }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(5))
        _ = try await signIn.value
        let polls = recorder.requests.filter { $0.path == rig.provider.server.tokenEndpoint.path }
        #expect(polls.count == 1)
        #expect(polls.allSatisfy { $0.headerFields[Self.dpop] != nil })
    }
}
