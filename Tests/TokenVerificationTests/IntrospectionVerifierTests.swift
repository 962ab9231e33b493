import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenVerification

/// RFC 7662 introspection against an in-process endpoint: answers, errors, client authentication, caches and single
/// flight, on a manual clock.
@Suite(.logLeakCheck()) struct IntrospectionVerifierTests {
    static let secret: String = {
        let text = "introspection-secret-" + UUID().uuidString
        TestSecrets.shared.register(text, as: .clientSecret)
        return text
    }()

    /// A fresh opaque token, registered with the log check.
    static func token() -> String {
        let token = "opaque" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        TestSecrets.shared.register(token, as: .accessToken)
        return token
    }

    /// An active answer for alice, with `exp` `seconds` after the clock's date.
    static func active(_ clock: ManualClock, expiresIn seconds: Int = 3600, extra: String = "") -> String {
        let exp = Int(clock.date.timeIntervalSince1970) + seconds
        return
            #"{"active": true, "scope": "read write", "client_id": "app", "username": "alice", "sub": "user-1", "exp": \#(exp)\#(extra)}"#
    }

    static func configuration(
        _ authentication: IntrospectionVerifier.ClientAuthentication? = nil,
        audience: TokenVerifier.AudienceRule = .notChecked(reason: "the test server binds no audience"),
        change: (inout IntrospectionVerifier.Configuration) -> Void = { _ in }
    ) -> IntrospectionVerifier.Configuration {
        var configuration = IntrospectionVerifier.Configuration(
            endpoint: FakeIntrospectionEndpoint.url,
            clientAuthentication: authentication ?? .clientSecretBasic(id: "orders-api", secret: secret),
            audience: audience)
        change(&configuration)
        return configuration
    }

    static func verifier(
        _ endpoint: FakeIntrospectionEndpoint, clock: ManualClock,
        _ configuration: IntrospectionVerifier.Configuration = configuration()
    ) -> IntrospectionVerifier {
        IntrospectionVerifier(configuration: configuration, clock: clock, now: clock.wallClock, send: endpoint.send)
    }

    static func reason(_ verifier: IntrospectionVerifier, _ token: String) async -> String? {
        do {
            _ = try await verifier.verify(token)
            return nil
        } catch {
            return error.reason
        }
    }

    @Test func anActiveAnswerAuthenticatesWithTheAnswersMembers() async throws {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        endpoint.answer(token, Self.active(clock))
        let authenticator = BearerAuthenticator(introspection: Self.verifier(endpoint, clock: clock))
        guard case .authenticated(let claims) = await authenticator.authenticate(authorization: "Bearer \(token)")
        else {
            Issue.record("rejected")
            return
        }
        #expect(claims.isIntrospected)
        #expect(claims.subject == "user-1")
        #expect(claims.string("scope") == "read write")
        #expect(claims.string("client_id") == "app")
        #expect(claims.expiration == clock.date.addingTimeInterval(3600))
        #expect(claims.keyID == nil)
        #expect(BearerIdentity(claims: claims).userId == "user-1")
        struct Answer: Decodable { var username: String }
        #expect(try claims.decode(Answer.self).username == "alice")
        #expect(!claims.description.contains("alice"))

        let byUsername = Self.verifier(endpoint, clock: clock, Self.configuration { $0.subjectMember = "username" })
        #expect(try await byUsername.verify(token).subject == "alice")
    }

    @Test func anInactiveAnswerIsAnInvalidToken() async {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        let authenticator = BearerAuthenticator(introspection: Self.verifier(endpoint, clock: clock))
        guard case .rejected(let answer) = await authenticator.authenticate(authorization: "Bearer \(token)") else {
            Issue.record("authenticated")
            return
        }
        #expect(answer.status == 401)
        #expect(answer.error == .tokenInactive)
        #expect(answer.body == #"{"error": "Invalid token"}"#)
        #expect(answer.wwwAuthenticate == #"Bearer error="invalid_token", error_description="The token is not active""#)
    }

    static let failures: [(FakeIntrospectionEndpoint.Behaviour, TokenVerificationError)] = [
        (.unreachable, .introspectionUnavailable),
        (.fixed(status: 500, body: "oops"), .introspectionUnavailable),
        (.fixed(status: 302, body: ""), .introspectionUnavailable),
        (.fixed(status: 401, body: #"{"error": "invalid_client"}"#), .introspectionClientRejected),
        (.fixed(status: 403, body: ""), .introspectionClientRejected),
        (.fixed(status: 200, body: "<html>not json</html>"), .introspectionUnavailable),
        (.fixed(status: 200, body: "{}"), .introspectionUnavailable),
        (.fixed(status: 200, body: #"{"active": "true"}"#), .introspectionUnavailable),
        (.fixed(status: 200, body: #"[{"active": true}]"#), .introspectionUnavailable),
        (.fixed(status: 200, body: #"{"active": false, "active": true}"#), .introspectionUnavailable),
    ]

    @Test(arguments: 0..<failures.count)
    func anEndpointThatCannotAnswerIsA503AndNotAnInvalidToken(_ index: Int) async {
        let (behaviour, expected) = Self.failures[index]
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        endpoint.behave(behaviour)
        let authenticator = BearerAuthenticator(introspection: Self.verifier(endpoint, clock: clock))
        guard case .rejected(let answer) = await authenticator.authenticate(authorization: "Bearer \(token)") else {
            Issue.record("authenticated")
            return
        }
        #expect(answer.error == expected)
        #expect(answer.status == 503)
        #expect(answer.wwwAuthenticate == nil)
        #expect(answer.body == #"{"error": "Token verification unavailable"}"#)
    }

    @Test func aTooLargeAnswerIsA503() async {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        endpoint.answer(token, Self.active(clock, extra: #", "pad": "\#(String(repeating: "x", count: 70_000))""#))
        #expect(await Self.reason(Self.verifier(endpoint, clock: clock), token) == "introspectionUnavailable")
    }

    @Test func aCallThatTakesLongerThanTheTimeoutIsA503() async {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        endpoint.answer(token, Self.active(clock))
        endpoint.hold()
        let verifier = Self.verifier(endpoint, clock: clock)
        let outcome = Task { await Self.reason(verifier, token) }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(5))
        #expect(await outcome.value == "introspectionUnavailable")
        endpoint.release()
    }

    @Test func aPlainHTTPEndpointIsRefusedWithoutSendingAnything() async {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        let configuration = Self.configuration {
            $0.endpoint = URL(string: "http://auth.example.com/o/introspect/")!
        }
        #expect(
            await Self.reason(Self.verifier(endpoint, clock: clock, configuration), token)
                == "insecureIntrospectionURL")
        #expect(endpoint.count == 0)
        var loopback = configuration
        loopback.endpoint = URL(string: "http://127.0.0.1:8000/o/introspect/")!
        #expect(await Self.reason(Self.verifier(endpoint, clock: clock, loopback), token) == "tokenInactive")
    }

    @Test func clientSecretBasicFormEncodesTheCredentials() async throws {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        let secret = "s3cret with spaces+plus/slash:colon%25&é~tilde"
        TestSecrets.shared.register(secret, as: .clientSecret)
        let verifier = Self.verifier(
            endpoint, clock: clock, Self.configuration(.clientSecretBasic(id: "orders:api", secret: secret)))
        _ = await Self.reason(verifier, token)
        let request = try #require(endpoint.requests.first)
        #expect(request.url == FakeIntrospectionEndpoint.url)
        let authorization = try #require(request.headerFields.first { $0.name == "Authorization" }?.value)
        let decoded = try #require(Data(base64Encoded: String(authorization.dropFirst("Basic ".count))))
        let expected = "orders%3Aapi:s3cret%20with%20spaces%2Bplus%2Fslash%3Acolon%2525%26%C3%A9%7Etilde"
        let matches = String(decoding: decoded, as: UTF8.self) == expected
        #expect(authorization.hasPrefix("Basic ") && matches, "id and secret form-encoded, then joined")
        let form = FakeIntrospectionEndpoint.form(request.body)
        let sentToken = form["token"] == token
        #expect(sentToken)
        #expect(form["token_type_hint"] == "access_token")
        #expect(form["client_secret"] == nil)
        #expect(request.headerFields.first { $0.name == "Content-Type" }?.value == "application/x-www-form-urlencoded")
        #expect(!request.description.contains(token) && !request.description.contains(authorization))
        #expect(!String(describing: Mirror(reflecting: request).children.map(\.value)).contains(authorization))
    }

    @Test func clientSecretPostAndBearerAuthenticateAsConfigured() async throws {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        let post = Self.verifier(
            endpoint, clock: clock, Self.configuration(.clientSecretPost(id: "orders-api", secret: Self.secret)))
        _ = await Self.reason(post, token)
        let postRequest = try #require(endpoint.requests.last)
        let form = FakeIntrospectionEndpoint.form(postRequest.body)
        #expect(form["client_id"] == "orders-api")
        let secretInBody = form["client_secret"] == Self.secret
        #expect(secretInBody)
        #expect(!postRequest.headerFields.contains { $0.name == "Authorization" })

        let serverToken = Self.token()
        let bearer = Self.verifier(endpoint, clock: clock, Self.configuration(.bearer(serverToken)))
        _ = await Self.reason(bearer, token)
        let bearerRequest = try #require(endpoint.requests.last)
        let header = bearerRequest.headerFields.first { $0.name == "Authorization" }?.value == "Bearer \(serverToken)"
        #expect(header)
        #expect(FakeIntrospectionEndpoint.form(bearerRequest.body)["client_id"] == nil)
        #expect(
            "\(IntrospectionVerifier.ClientAuthentication.clientSecretPost(id: "x", secret: Self.secret))"
                == "clientSecretPost(id: x)")
    }

    @Test func anActiveAnswerIsCachedUntilTheTokensExpiryAtMost() async throws {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        endpoint.answer(token, Self.active(clock, expiresIn: 30))
        let verifier = Self.verifier(endpoint, clock: clock)
        _ = try await verifier.verify(token)
        clock.advance(by: .seconds(29))
        _ = try await verifier.verify(token)
        #expect(endpoint.count == 1, "cached inside exp")
        clock.advance(by: .seconds(2))
        _ = try await verifier.verify(token)
        #expect(endpoint.count == 2, "the cached answer ended at exp; inside the leeway the new one still passes")
        clock.advance(by: .seconds(5))
        #expect(await Self.reason(verifier, token) == "expired")
        #expect(endpoint.count == 3, "an answer past its exp is never cached")
    }

    @Test func anActiveAnswerIsCachedForTheConfiguredMaximumAtMost() async throws {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        endpoint.answer(token, Self.active(clock))
        let verifier = Self.verifier(endpoint, clock: clock)
        _ = try await verifier.verify(token)
        clock.advance(by: .seconds(59))
        _ = try await verifier.verify(token)
        #expect(endpoint.count == 1)
        // Revoked at the server: seen once the cached answer is older than the maximum.
        endpoint.answer(token, #"{"active": false}"#)
        clock.advance(by: .seconds(2))
        #expect(await Self.reason(verifier, token) == "tokenInactive")
        #expect(endpoint.count == 2)
    }

    @Test func anInactiveAnswerIsCachedBriefly() async {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        let verifier = Self.verifier(endpoint, clock: clock)
        #expect(await Self.reason(verifier, token) == "tokenInactive")
        clock.advance(by: .seconds(4))
        #expect(await Self.reason(verifier, token) == "tokenInactive")
        #expect(endpoint.count == 1)
        clock.advance(by: .seconds(2))
        #expect(await Self.reason(verifier, token) == "tokenInactive")
        #expect(endpoint.count == 2)
    }

    @Test func failuresAreNotCached() async throws {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        endpoint.answer(token, Self.active(clock))
        endpoint.behave(.unreachable)
        let verifier = Self.verifier(endpoint, clock: clock)
        #expect(await Self.reason(verifier, token) == "introspectionUnavailable")
        endpoint.behave(.answer)
        _ = try await verifier.verify(token)
        #expect(endpoint.count == 2)
    }

    @Test func theCacheIsBoundedAndKeyedByTheTokensDigest() async throws {
        let (endpoint, clock) = (FakeIntrospectionEndpoint(), ManualClock())
        let verifier = Self.verifier(endpoint, clock: clock, Self.configuration { $0.cacheCapacity = 3 })
        let tokens = (0..<5).map { _ in Self.token() }
        for token in tokens {
            endpoint.answer(token, Self.active(clock))
            _ = try await verifier.verify(token)
        }
        #expect(verifier.cachedAnswerCount == 3)
        _ = try await verifier.verify(tokens[4])
        #expect(endpoint.count == 5, "the newest is cached")
        _ = try await verifier.verify(tokens[0])
        #expect(endpoint.count == 6, "the oldest was evicted")
    }

    @Test func aHundredConcurrentRequestsWithOneUnknownTokenMakeOneCall() async throws {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        endpoint.answer(token, Self.active(clock))
        endpoint.hold()
        let verifier = Self.verifier(endpoint, clock: clock)
        let authenticator = BearerAuthenticator(introspection: verifier)
        let outcomes = Task {
            await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<100 {
                    group.addTask {
                        if case .authenticated = await authenticator.authenticate(authorization: "Bearer \(token)") {
                            return true
                        }
                        return false
                    }
                }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
        }
        #expect(await eventually { verifier.joinCount == 99 })
        endpoint.release()
        #expect(await outcomes.value == 100)
        #expect(endpoint.count == 1)
    }

    @Test func theAnswerIsCheckedLikeAToken() async {
        let clock = ManualClock()
        let now = Int(clock.date.timeIntervalSince1970)
        let cases: [(String, IntrospectionVerifier.Configuration, String?)] = [
            (Self.active(clock, expiresIn: -10), Self.configuration(), "expired"),
            (Self.active(clock, expiresIn: -3), Self.configuration(), nil),
            (Self.active(clock, extra: #", "nbf": \#(now + 60)"#), Self.configuration(), "notYetValid"),
            (#"{"active": true, "sub": "u", "exp": "soon"}"#, Self.configuration(), "invalidClaim"),
            (Self.active(clock, extra: #", "token_type": "refresh_token""#), Self.configuration(), "typeMismatch"),
            (Self.active(clock, extra: #", "token_type": "Bearer""#), Self.configuration(), nil),
            (#"{"active": true, "username": "alice"}"#, Self.configuration(), "missingClaim"),
            (
                #"{"active": true, "client_id": "svc"}"#, Self.configuration { $0.requiresSubject = false },
                nil
            ),
            (
                Self.active(clock, extra: #", "iss": "https://other.example.com""#),
                Self.configuration { $0.issuer = "https://auth.example.com" }, "issuerMismatch"
            ),
            (Self.active(clock), Self.configuration { $0.issuer = "https://auth.example.com" }, "issuerMismatch"),
            (
                Self.active(clock, extra: #", "iss": "https://auth.example.com""#),
                Self.configuration { $0.issuer = "https://auth.example.com" }, nil
            ),
            (Self.active(clock), Self.configuration(audience: .oneOf(["https://api.example.com"])), "audienceMismatch"),
            (
                Self.active(clock, extra: #", "aud": ["https://other.example.com", "https://api.example.com"]"#),
                Self.configuration(audience: .oneOf(["https://api.example.com"])), nil
            ),
            (
                Self.active(clock, extra: #", "aud": "https://other.example.com""#),
                Self.configuration(audience: .oneOf(["https://api.example.com"])), "audienceMismatch"
            ),
        ]
        for (answer, configuration, expected) in cases {
            let (endpoint, token) = (FakeIntrospectionEndpoint(), Self.token())
            endpoint.answer(token, answer)
            #expect(
                await Self.reason(Self.verifier(endpoint, clock: clock, configuration), token) == expected, "\(answer)")
        }
    }

    @Test func aJWTGoesToTheVerifierAndAnOpaqueTokenToIntrospection() async throws {
        let (endpoint, clock, token) = (FakeIntrospectionEndpoint(), ManualClock(), Self.token())
        endpoint.answer(token, Self.active(clock))
        let authenticator = BearerAuthenticator(
            verifier: TestKeys.verifier(), introspection: Self.verifier(endpoint, clock: clock))
        guard
            case .authenticated(let jwtClaims) = await authenticator.authenticate(
                authorization: "Bearer \(TestKeys.token(.rs256))")
        else {
            Issue.record("JWT rejected")
            return
        }
        #expect(!jwtClaims.isIntrospected)
        #expect(endpoint.count == 0)
        guard case .authenticated(let opaqueClaims) = await authenticator.authenticate(authorization: "Bearer \(token)")
        else {
            Issue.record("opaque token rejected")
            return
        }
        #expect(opaqueClaims.isIntrospected)
        #expect(endpoint.count == 1)
        // A JWT that fails verification is refused, and never introspected instead.
        let expired = TestKeys.token(.rs256, payload: TestKeys.claims(exp: "1799999000"))
        guard case .rejected(let answer) = await authenticator.authenticate(authorization: "Bearer \(expired)") else {
            Issue.record("expired JWT accepted")
            return
        }
        #expect(answer.error == .expired)
        #expect(endpoint.count == 1)
    }
}
