import Foundation
import Logging
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenVerification

/// What an attacker tried against a backend that checks opaque tokens with RFC 7662 introspection: answers shaped to
/// pass a lax parser, tokens of the wrong kind, audience or issuer, replays of dead tokens, and the hope that a token
/// or the resource server's client secret lands in a log line.
@Suite(.logLeakCheck()) struct IntrospectionAttackTests {
    static let endpoint = URL(string: "https://auth.example.com/o/introspect/")!
    static let clientSecret: String = {
        let text = "attack-introspection-secret-" + UUID().uuidString
        TestSecrets.shared.register(text, as: .clientSecret)
        return text
    }()

    static func token() -> String {
        let token = "attack" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        TestSecrets.shared.register(token, as: .accessToken)
        return token
    }

    /// An endpoint that answers `json` to every call (or throws without one), and counts the calls.
    final class Endpoint: Sendable {
        private let state: Locked<(json: String?, status: Int, calls: Int, requests: [IntrospectionVerifier.Request])>

        init(_ json: String?, status: Int = 200) { state = Locked((json, status, 0, [])) }

        var calls: Int { state.withLock { $0.calls } }
        var requests: [IntrospectionVerifier.Request] { state.withLock { $0.requests } }

        var send: IntrospectionVerifier.Send {
            { request in
                let (json, status) = self.state.withLock { state in
                    state.calls += 1
                    state.requests.append(request)
                    return (state.json, state.status)
                }
                guard let json else { throw URLError(.cannotConnectToHost) }
                return IntrospectionVerifier.Response(status: status, body: Data(json.utf8))
            }
        }
    }

    static func authenticator(
        _ endpoint: Endpoint, clock: ManualClock = ManualClock(), logger: Logger? = nil,
        authentication: IntrospectionVerifier.ClientAuthentication? = nil,
        change: (inout IntrospectionVerifier.Configuration) -> Void = { _ in }
    ) -> BearerAuthenticator {
        var configuration = IntrospectionVerifier.Configuration(
            endpoint: Self.endpoint,
            clientAuthentication: authentication ?? .clientSecretBasic(id: "orders-api", secret: clientSecret),
            audience: .oneOf(["https://orders.example.com"]), issuer: "https://auth.example.com")
        change(&configuration)
        return BearerAuthenticator(
            introspection: IntrospectionVerifier(
                configuration: configuration, clock: clock, now: clock.wallClock,
                logger: logger ?? Logger(label: "tokenkit.verification.introspection"), send: endpoint.send))
    }

    static func answer(_ extra: String = "", clock: ManualClock = ManualClock()) -> String {
        let exp = Int(clock.date.timeIntervalSince1970) + 600
        return
            #"{"active": true, "sub": "user-1", "iss": "https://auth.example.com", "aud": "https://orders.example.com", "exp": \#(exp)\#(extra)}"#
    }

    static func outcome(_ authenticator: BearerAuthenticator, _ token: String) async -> String {
        switch await authenticator.authenticate(authorization: "Bearer \(token)") {
        case .authenticated: "accepted"
        case .rejected(let answer): "\(answer.status) \(answer.error.reason)"
        }
    }

    @Test func theFakeEndpointAcceptsAProperAnswer() async {
        #expect(await Self.outcome(Self.authenticator(Endpoint(Self.answer())), Self.token()) == "accepted")
    }

    @Test func anActiveMemberThatIsTheStringTrueGrantsNothing() async {
        let endpoint = Endpoint(#"{"active": "true", "sub": "user-1", "aud": "https://orders.example.com"}"#)
        #expect(await Self.outcome(Self.authenticator(endpoint), Self.token()) == "503 introspectionUnavailable")
    }

    @Test func aDuplicatedActiveMemberCannotSmuggleTrueIntoAnInactiveAnswer() async {
        // A parser that keeps the last duplicate (Foundation's JSONSerialization does) would read `true`.
        let endpoint = Endpoint(#"{"active": false, "active": true, "sub": "user-1"}"#)
        #expect(await Self.outcome(Self.authenticator(endpoint), Self.token()) == "503 introspectionUnavailable")
    }

    @Test func aRefreshTokenPresentedAsABearerIsRefusedAlthoughTheServerCallsItActive() async {
        let endpoint = Endpoint(Self.answer(#", "token_type": "refresh_token""#))
        #expect(await Self.outcome(Self.authenticator(endpoint), Self.token()) == "401 typeMismatch")
    }

    @Test func anActiveTokenMeantForAnotherAPIIsRefused() async {
        let endpoint = Endpoint(
            Self.answer().replacingOccurrences(of: "orders.example.com", with: "billing.example.com"))
        #expect(await Self.outcome(Self.authenticator(endpoint), Self.token()) == "401 audienceMismatch")
    }

    @Test func anActiveTokenOfAnotherIssuerIsRefused() async {
        let endpoint = Endpoint(Self.answer().replacingOccurrences(of: "auth.example.com", with: "evil.example.com"))
        #expect(await Self.outcome(Self.authenticator(endpoint), Self.token()) == "401 issuerMismatch")
    }

    @Test func anActiveAnswerWhoseExpHasPassedIsRefused() async {
        let clock = ManualClock()
        let past = Int(clock.date.timeIntervalSince1970) - 60
        let endpoint = Endpoint(Self.answer().replacingOccurrences(of: #""exp": "#, with: #""exp": \#(past), "x": "#))
        #expect(await Self.outcome(Self.authenticator(endpoint, clock: clock), Self.token()) == "401 expired")
    }

    @Test func aRevokedTokenReplayedAHundredTimesIsRefusedEveryTimeWithOneCall() async {
        let endpoint = Endpoint(#"{"active": false}"#)
        let authenticator = Self.authenticator(endpoint)
        let token = Self.token()
        for _ in 0..<100 { #expect(await Self.outcome(authenticator, token) == "401 tokenInactive") }
        #expect(endpoint.calls == 1, "the inactive answer is cached; the replays cost the server nothing")
    }

    @Test func anAcceptedTokenDoesNotVouchForATokenThatOnlySharesItsPrefix() async {
        let clock = ManualClock()
        let endpoint = Endpoint(Self.answer(clock: clock))
        let authenticator = Self.authenticator(endpoint, clock: clock)
        let token = Self.token()
        #expect(await Self.outcome(authenticator, token) == "accepted")
        for variant in [token + "x", String(token.dropLast()), token.uppercased()] {
            TestSecrets.shared.register(variant, as: .accessToken)
            _ = await Self.outcome(authenticator, variant)
        }
        #expect(endpoint.calls == 4, "every other token string is asked about, never answered from the cache")
    }

    /// An endpoint that holds its first `holding` calls until released (later ones answer at once), answering active
    /// for `active` and inactive for any other token.
    final class HeldEndpoint: Sendable {
        private let state = Locked(0)
        private let gate = HoldGate()
        let active: String
        let answer: String
        let holding: Int

        init(active: String, answer: String, holding: Int = 0) {
            self.active = active
            self.answer = answer
            self.holding = holding
        }

        var calls: Int { state.withLock { $0 } }

        func release() { gate.open() }

        var send: IntrospectionVerifier.Send {
            { request in
                let call = self.state.withLock { calls in
                    calls += 1
                    return calls
                }
                if call <= self.holding { await self.gate.wait() }
                let body = String(decoding: request.body, as: UTF8.self)
                let json = body.hasPrefix("token=\(self.active)&") ? self.answer : #"{"active": false}"#
                return IntrospectionVerifier.Response(status: 200, body: Data(json.utf8))
            }
        }
    }

    @Test func aFloodOfRandomTokensCannotOpenMoreThanTheBoundOfCallsToTheServer() async {
        let clock = ManualClock()
        let legitimate = Self.token()
        let endpoint = HeldEndpoint(active: legitimate, answer: Self.answer(clock: clock), holding: 4)
        let verifier = IntrospectionVerifier(
            configuration: .init(
                endpoint: Self.endpoint,
                clientAuthentication: .clientSecretBasic(id: "orders-api", secret: Self.clientSecret),
                audience: .oneOf(["https://orders.example.com"]), issuer: "https://auth.example.com",
                maximumConcurrentCalls: 4),
            clock: clock, now: clock.wallClock, send: endpoint.send)
        let flooded = BearerAuthenticator(introspection: verifier)
        let held = Task {
            await withTaskGroup(of: String.self) { group in
                for _ in 0..<4 {
                    let token = Self.token()
                    group.addTask { await Self.outcome(flooded, token) }
                }
                return await group.reduce(into: [String]()) { $0.append($1) }
            }
        }
        var spins = 0
        while endpoint.calls < 4, spins < 100_000 {
            spins += 1
            await Task.yield()
        }
        #expect(endpoint.calls == 4)
        // The bound is reached: a further random token is answered at once, without a call to the server.
        var outcomes: Set<String> = []
        for _ in 0..<200 { outcomes.insert(await Self.outcome(flooded, Self.token())) }
        #expect(outcomes == ["503 introspectionUnavailable"])
        #expect(endpoint.calls == 4, "saturated: the flood costs the authorization server nothing more")
        endpoint.release()
        #expect(await held.value == Array(repeating: "401 tokenInactive", count: 4))
        #expect(await Self.outcome(flooded, legitimate) == "accepted", "below the bound again, a real token passes")
        #expect(endpoint.calls == 5)
    }

    @Test func aFloodOfRandomTokensDoesNotEvictACachedActiveAnswer() async {
        let clock = ManualClock()
        let legitimate = Self.token()
        let verifierEndpoint = HeldEndpoint(active: legitimate, answer: Self.answer(clock: clock))
        let authenticator = BearerAuthenticator(
            introspection: IntrospectionVerifier(
                configuration: .init(
                    endpoint: Self.endpoint,
                    clientAuthentication: .clientSecretBasic(id: "orders-api", secret: Self.clientSecret),
                    audience: .oneOf(["https://orders.example.com"]), issuer: "https://auth.example.com",
                    cacheCapacity: 100),
                clock: clock, now: clock.wallClock, send: verifierEndpoint.send))
        #expect(await Self.outcome(authenticator, legitimate) == "accepted")
        for _ in 0..<200 { #expect(await Self.outcome(authenticator, Self.token()) == "401 tokenInactive") }
        #expect(verifierEndpoint.calls == 201)
        #expect(await Self.outcome(authenticator, legitimate) == "accepted")
        #expect(verifierEndpoint.calls == 201, "the active answer is still cached: a real request costs no call")
    }

    @Test func aPlainHTTPEndpointNeverReceivesTheTokenOrTheSecret() async {
        let endpoint = Endpoint(Self.answer())
        let authenticator = Self.authenticator(endpoint) {
            $0.endpoint = URL(string: "http://auth.example.com/o/introspect/")!
        }
        #expect(await Self.outcome(authenticator, Self.token()) == "503 insecureIntrospectionURL")
        #expect(endpoint.calls == 0)
    }

    @Test func dumpingTheConfigurationOrTheVerifierDoesNotPrintTheClientSecret() {
        for authentication in [
            IntrospectionVerifier.ClientAuthentication.clientSecretBasic(id: "orders-api", secret: Self.clientSecret),
            .clientSecretPost(id: "orders-api", secret: Self.clientSecret), .bearer(Self.clientSecret),
        ] {
            let configuration = IntrospectionVerifier.Configuration(
                endpoint: Self.endpoint, clientAuthentication: authentication,
                audience: .notChecked(reason: "test"))
            let verifier = IntrospectionVerifier(configuration: configuration, send: Endpoint(nil).send)
            var texts = ["\(configuration)", String(reflecting: configuration), "\(verifier)"]
            for value in [authentication, configuration, verifier] as [Any] {
                var dumped = ""
                dump(value, to: &dumped)
                texts.append(dumped)
            }
            #expect(!texts.contains { $0.contains(Self.clientSecret) }, "the client secret was printed")
        }
    }

    @Test(arguments: [200, 403, 500, 0])
    func neitherTheTokenNorTheClientSecretReachesALogLineAnErrorOrADescription(_ status: Int) async {
        let capture = LogCapture()
        let endpoint = Endpoint(status == 0 ? nil : Self.answer(), status: status == 0 ? 200 : status)
        for authentication in [
            IntrospectionVerifier.ClientAuthentication.clientSecretBasic(id: "orders-api", secret: Self.clientSecret),
            .clientSecretPost(id: "orders-api", secret: Self.clientSecret),
        ] {
            let token = Self.token()
            let authenticator = Self.authenticator(
                endpoint, logger: capture.logger("tokenkit.verification.introspection"), authentication: authentication)
            let outcome = await authenticator.authenticate(authorization: "Bearer \(token)")
            var texts = ["\(authentication)", String(reflecting: authentication)]
            if case .rejected(let answer) = outcome {
                texts += [answer.body, answer.wwwAuthenticate ?? "", "\(answer.error)", answer.error.safeDescription]
                texts.append(answer.error.localizedDescription)
            }
            for request in endpoint.requests {
                texts += ["\(request)", String(reflecting: request)]
                var dumped = ""
                dump(request, to: &dumped)
                texts.append(dumped)
            }
            texts += capture.lines
            let leaked = texts.contains { $0.contains(token) || $0.contains(Self.clientSecret) }
            #expect(!leaked, "a token or the client secret was found in a log line, error or description")
        }
        #expect(!capture.lines.isEmpty, "the verifier logged its calls")
    }
}
