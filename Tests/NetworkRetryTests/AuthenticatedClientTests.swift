import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitLogCheck
import TokenKitTesting

@Suite(.logLeakCheck()) struct AuthenticatedClientTests {
    struct Boom: Error {}

    let provider = FakeTokenProvider()

    func client(
        _ transport: MockTransport, configuration: AuthenticatedClient.Configuration = .api
    )
        -> AuthenticatedClient
    {
        AuthenticatedClient(transport: transport, tokenProvider: provider, configuration: configuration)
    }

    // MARK: The happy path

    @Test func aRequestCarriesTheProvidersTokenAndNeedsNoRefresh() async throws {
        let transport = MockTransport(script: [ok("done")])
        let (response, body) = try await client(transport).executeWithAutoRetry(.api(), body: nil)
        #expect(response.status == .ok)
        #expect(body == Data("done".utf8))
        #expect(transport.requests.map(\.bearerToken) == ["expired-bearer-x1"])
        #expect(await provider.refreshCount == 0)
        #expect(await provider.validTokenCount == 1)
    }

    @Test func anAuthorizationHeaderOfTheCallerIsReplaced() async throws {
        let transport = MockTransport(script: [ok()])
        var request = HTTPRequest.api()
        request.headerFields[.authorization] = "Basic c2VjcmV0"
        _ = try await client(transport).executeWithAutoRetry(request)
        #expect(transport.requests[0].headerFields[values: .authorization] == ["Bearer expired-bearer-x1"])
    }

    @Test func anEmptyResponseBodyIsDelivered() async throws {
        let transport = MockTransport(script: [.response(status: .noContent)])
        let (response, body) = try await client(transport).executeWithAutoRetry(.api(.delete))
        #expect(response.status == .noContent)
        #expect(body.isEmpty)
    }

    @Test func theFreeFunctionBehavesLikeTheClient() async throws {
        let transport = MockTransport(script: [unauthorized(), ok()])
        let (response, _) = try await executeWithAutoRetry(
            .api(), transport: transport, tokenProvider: provider, configuration: .api)
        #expect(response.status == .ok)
        #expect(transport.requests.map(\.bearerToken) == ["expired-bearer-x1", "fresh-bearer-x2"])
    }

    @Test func theClientIsItselfATransport() async throws {
        let transport = MockTransport(script: [unauthorized(), ok()])
        let asTransport: any HTTPTransport = client(transport)
        let (response, _) = try await asTransport.send(.api(), body: nil)
        #expect(response.status == .ok)
    }

    // MARK: 401 and refresh

    static let refreshingChallenges: [String?] = [
        #"Bearer error="invalid_token""#,
        #"Bearer realm="api", error="invalid_token", error_description="the token expired""#,
        "Bearer",
        #"bearer realm="api""#,
        #"Bearer error="token_expired""#,
        nil,
        #"Bearer realm="unterminated"#,
        "Bearer realm=",
        #"Basic realm="x" Bearer"#,
    ]

    @Test(arguments: refreshingChallenges)
    func a401ThatARefreshCanFixRefreshesOnceAndRetriesWithTheNewToken(_ challenge: String?) async throws {
        let transport = MockTransport(script: [unauthorized(challenge), ok("second")])
        let body = Data(#"{"weight":72.5}"#.utf8)
        let (response, data) = try await client(transport).executeWithAutoRetry(.api(.post), body: body)
        #expect(response.status == .ok)
        #expect(data == Data("second".utf8))
        #expect(transport.requests.map(\.bearerToken) == ["expired-bearer-x1", "fresh-bearer-x2"])
        #expect(transport.requests.map(\.body) == [body, body])
        #expect(transport.requests.map(\.method) == [.post, .post])
        #expect(await provider.refreshCount == 1)
        #expect(await provider.rejectedTokens == ["expired-bearer-x1"])
    }

    @Test func a401WithABodyThatIsNotJSONStillRefreshes() async throws {
        let transport = MockTransport(script: [unauthorized(nil, body: "<html>nope</html>"), ok()])
        let (response, _) = try await client(transport).executeWithAutoRetry(.api())
        #expect(response.status == .ok)
        #expect(await provider.refreshCount == 1)
    }

    @Test func aSecond401IsAnErrorThatSaysSoAndThereIsNoThirdAttempt() async throws {
        let transport = MockTransport(script: [unauthorized(), unauthorized(nil, body: "not json"), ok()])
        let error = await #expect(throws: NetworkRetryError.self) {
            try await client(transport).executeWithAutoRetry(.api())
        }
        #expect(error == .unauthorizedAfterRefresh)
        #expect(error?.status == 401)
        #expect(transport.requestCount == 2)
        #expect(transport.remainingScriptCount == 1)
        #expect(await provider.refreshCount == 1)
    }

    @Test func theRejectedTokenIsPassedSoAStaleRejectionCostsNoRefresh() async throws {
        let provider = self.provider
        // While the first request is in flight, another caller refreshes; then the server rejects the old token.
        let transport = MockTransport { request, _ in
            if request.headerFields[.authorization] == "Bearer expired-bearer-x1" {
                _ = try await provider.refreshToken(afterRejectionOf: "expired-bearer-x1")
                return (HTTPResponse(status: .unauthorized, headerFields: [.wwwAuthenticate: "Bearer"]), Data())
            }
            return (HTTPResponse(status: .ok), Data())
        }
        let (response, _) = try await client(transport).executeWithAutoRetry(.api())
        #expect(response.status == .ok)
        #expect(transport.requests.map(\.bearerToken) == ["expired-bearer-x1", "fresh-bearer-x2"])
        #expect(await provider.rejectedTokens == ["expired-bearer-x1", "expired-bearer-x1"])
        #expect(await provider.refreshCount == 1)
    }

    // MARK: 401 and 403 that a refresh cannot fix

    @Test func a403WithInsufficientScopeIsItsOwnErrorWithoutRefresh() async throws {
        let transport = MockTransport(script: [
            .response(
                status: .forbidden,
                headers: [.wwwAuthenticate: #"Bearer error="insufficient_scope", scope="meals:write""#])
        ])
        let error = await #expect(throws: NetworkRetryError.self) {
            try await client(transport).executeWithAutoRetry(.api(.post), body: Data())
        }
        #expect(error == .insufficientScope)
        #expect(error?.status == 403)
        #expect(error?.challenge?.scope == "meals:write")
        #expect(transport.requestCount == 1)
        #expect(await provider.refreshCount == 0)
    }

    @Test func a401WithInsufficientScopeIsAlsoInsufficientScope() async throws {
        let transport = MockTransport(script: [unauthorized(#"Bearer error="insufficient_scope""#)])
        await #expect(throws: NetworkRetryError.insufficientScope) {
            try await client(transport).executeWithAutoRetry(.api())
        }
        #expect(await provider.refreshCount == 0)
    }

    @Test func insufficientUserAuthenticationIsItsOwnErrorWithoutRefresh() async throws {
        let transport = MockTransport(script: [
            unauthorized(#"Bearer error="insufficient_user_authentication", acr_values="phr", max_age=60"#)
        ])
        let error = await #expect(throws: NetworkRetryError.self) {
            try await client(transport).executeWithAutoRetry(.api())
        }
        #expect(error == .insufficientUserAuthentication)
        #expect(error?.challenge?.acrValues == "phr")
        #expect(error?.challenge?.maxAge == 60)
        #expect(transport.requestCount == 1)
        #expect(await provider.refreshCount == 0)
    }

    @Test func aPlain403IsDeliveredForTheAppToRead() async throws {
        let transport = MockTransport(script: [.response(status: .forbidden, body: Data(#"{"reason":"owner"}"#.utf8))])
        let (response, body) = try await client(transport).executeWithAutoRetry(.api())
        #expect(response.status == .forbidden)
        #expect(body == Data(#"{"reason":"owner"}"#.utf8))
        #expect(await provider.refreshCount == 0)
    }

    @Test(arguments: [#"Basic realm="admin""#, #"Bearer error="invalid_request""#, "DPoP"])
    func a401ThatAsksForSomethingElseIsUnauthorizedWithoutRefresh(_ challenge: String) async throws {
        let transport = MockTransport(script: [unauthorized(challenge), ok()])
        await #expect(throws: NetworkRetryError.unauthorized) {
            try await client(transport).executeWithAutoRetry(.api())
        }
        #expect(transport.requestCount == 1)
        #expect(await provider.refreshCount == 0)
    }

    @Test func challengesOnSeveralHeaderLinesAreAllConsidered() async throws {
        var headers = HTTPFields()
        headers.append(HTTPField(name: .wwwAuthenticate, value: #"Basic realm="x""#))
        headers.append(HTTPField(name: .wwwAuthenticate, value: #"Bearer error="insufficient_scope""#))
        let transport = MockTransport(script: [.response(status: .unauthorized, headers: headers)])
        await #expect(throws: NetworkRetryError.insufficientScope) {
            try await client(transport).executeWithAutoRetry(.api())
        }
    }

    // MARK: Failures of the transport and the provider

    @Test func aTransportThatThrowsGivesATransportErrorWithTheCause() async throws {
        let transport = MockTransport(script: [.failure(Boom())])
        let error = await #expect(throws: NetworkRetryError.self) {
            try await client(transport).executeWithAutoRetry(.api())
        }
        #expect(error == .transport)
        #expect(error?.underlying is Boom)
    }

    @Test func aTransportThatThrowsOnTheRetryGivesATransportError() async throws {
        let transport = MockTransport(script: [unauthorized(), .failure(Boom())])
        await #expect(throws: NetworkRetryError.transport) {
            try await client(transport).executeWithAutoRetry(.api())
        }
        #expect(await provider.refreshCount == 1)
    }

    @Test func cancellationAndNetworkRetryErrorsOfTheTransportPassThrough() async throws {
        await #expect(throws: CancellationError.self) {
            try await client(MockTransport(script: [.failure(CancellationError())])).executeWithAutoRetry(.api())
        }
        await #expect(throws: NetworkRetryError.timedOut) {
            try await client(MockTransport(script: [.failure(NetworkRetryError.timedOut)])).executeWithAutoRetry(.api())
        }
    }

    @Test func errorsOfTheProviderAreRethrownAndNothingIsSent() async throws {
        await provider.failValidToken(with: Boom())
        let transport = MockTransport(script: [ok()])
        await #expect(throws: Boom.self) { try await client(transport).executeWithAutoRetry(.api()) }
        #expect(transport.requestCount == 0)
    }

    @Test func aFailedRefreshIsRethrownAndTheRequestIsNotRetried() async throws {
        await provider.failRefresh(with: Boom())
        let transport = MockTransport(script: [unauthorized(), ok()])
        await #expect(throws: Boom.self) { try await client(transport).executeWithAutoRetry(.api()) }
        #expect(transport.requestCount == 1)
    }

    @Test func anEmptyAccessTokenIsNeverSent() async throws {
        let transport = MockTransport(script: [ok()])
        let client = AuthenticatedClient(
            transport: transport, tokenProvider: FakeTokenProvider(current: ""), configuration: .api)
        await #expect(throws: NetworkRetryError.noToken) { try await client.executeWithAutoRetry(.api()) }
        #expect(transport.requestCount == 0)
    }

    // MARK: Token hygiene

    @Test func aRequestToAnotherOriginIsRefusedBeforeATokenIsFetched() async throws {
        let transport = MockTransport(script: [ok()])
        for request in [
            HTTPRequest.api(authority: "evil.example.com"),
            HTTPRequest.api(authority: "api.example.com:8443"),
            HTTPRequest(method: .get, scheme: "http", authority: "api.example.com", path: "/"),
        ] {
            await #expect(throws: NetworkRetryError.originNotAllowed) {
                try await client(transport).executeWithAutoRetry(request)
            }
        }
        #expect(transport.requestCount == 0)
        #expect(await provider.validTokenCount == 0)
    }

    @Test func theOriginMatchIgnoresCaseAndTheDefaultPort() async throws {
        let transport = MockTransport(script: [ok(), ok()])
        _ = try await client(transport).executeWithAutoRetry(.api(authority: "API.Example.com"))
        _ = try await client(transport).executeWithAutoRetry(.api(authority: "api.example.com:443"))
        #expect(transport.requestCount == 2)
    }

    @Test func aTokenIsNeverSentOverPlainHTTPToAHostThatIsNotLoopback() async throws {
        let transport = MockTransport(script: [ok()])
        let configuration = AuthenticatedClient.Configuration(allowedOrigins: [
            HTTPOrigin(string: "http://api.example.com")!
        ])
        await #expect(throws: NetworkRetryError.insecureTransport) {
            try await client(transport, configuration: configuration)
                .executeWithAutoRetry(
                    HTTPRequest(method: .get, scheme: "http", authority: "api.example.com", path: "/"))
        }
        #expect(transport.requestCount == 0)
    }

    @Test(arguments: ["127.0.0.1:8080", "127.9.8.7", "localhost:3000", "[::1]:8080", "[::ffff:127.0.0.1]"])
    func plainHTTPToLoopbackIsAllowed(_ authority: String) async throws {
        let transport = MockTransport(script: [ok()])
        let origin = try #require(HTTPOrigin(scheme: "http", authority: authority))
        let request = HTTPRequest(method: .get, scheme: "http", authority: authority, path: "/")
        _ = try await client(transport, configuration: .init(allowedOrigins: [origin])).executeWithAutoRetry(request)
        #expect(transport.requests.map(\.bearerToken) == ["expired-bearer-x1"])
    }

    @Test func aRequestWithoutAUsableURLIsInvalid() async throws {
        let transport = MockTransport(script: [ok()])
        for request in [
            HTTPRequest(method: .get, scheme: nil, authority: nil, path: "/"),
            HTTPRequest(method: .get, scheme: "ftp", authority: "api.example.com", path: "/"),
            HTTPRequest(method: .get, scheme: "https", authority: "user:pw@api.example.com", path: "/"),
        ] {
            await #expect(throws: NetworkRetryError.invalidRequest) {
                try await client(transport).executeWithAutoRetry(request)
            }
        }
        #expect(transport.requestCount == 0)
    }

    // MARK: Redirects

    static func redirect(_ status: HTTPResponse.Status, to location: String?) -> MockTransport.Reply {
        var headers = HTTPFields()
        if let location { headers[.location] = location }
        return .response(status: status, headers: headers)
    }

    @Test func aSameOriginRedirectKeepsTheToken() async throws {
        let transport = MockTransport(script: [Self.redirect(.found, to: "/v2/items?page=2"), ok()])
        _ = try await client(transport).executeWithAutoRetry(.api())
        #expect(transport.requests.map(\.path) == ["/v1/items", "/v2/items?page=2"])
        #expect(transport.requests.map(\.bearerToken) == ["expired-bearer-x1", "expired-bearer-x1"])
    }

    @Test(arguments: [
        "https://cdn.example.com/file", "http://api.example.com/v1/items", "https://api.example.com:8443/x",
    ])
    func aRedirectThatLeavesTheOriginLosesAuthorizationAndCookies(_ location: String) async throws {
        let transport = MockTransport(script: [Self.redirect(.temporaryRedirect, to: location), ok()])
        // A GET: a body is never replayed to another origin (see WrongUserOrHostAttacks).
        var request = HTTPRequest.api(.get)
        request.headerFields[.cookie] = "session=abc"
        request.headerFields[.accept] = "application/json"
        _ = try await client(transport).executeWithAutoRetry(request)
        try #require(transport.requests.count == 2)
        let second = transport.requests[1]
        #expect(second.headerFields[.authorization] == nil)
        #expect(second.headerFields[.cookie] == nil)
        #expect(second.headerFields[.accept] == "application/json")
        #expect(second.method == .get)
        #expect("\(second.scheme ?? "")://\(second.authority ?? "")\(second.path ?? "")" == location)
    }

    /// A chain api -> other -> api used to re-attach the token (and the caller's cookie) on
    /// the last hop, so the middle hop chose which authenticated request was made.
    @Test func aRedirectThatComesBackToTheOriginStaysWithoutCredentials() async throws {
        let transport = MockTransport(script: [
            Self.redirect(.temporaryRedirect, to: "https://other.example.net/hop"),
            Self.redirect(.temporaryRedirect, to: "https://api.example.com/v1/admin/delete-account"),
            Self.redirect(.found, to: "/v1/admin/confirm"),
            ok(),
        ])
        var request = HTTPRequest.api(.post)
        request.headerFields[.cookie] = "session=abc"
        request.headerFields[.proxyAuthorization] = "Basic cHJveHktdXNlci14OTpwcm94eS1wYXNzd29yZC14OQ=="
        // Without a body: a body is never replayed to another origin (see WrongUserOrHostAttacks).
        _ = try await client(transport).executeWithAutoRetry(request)
        #expect(transport.requests.map(\.bearerToken) == ["expired-bearer-x1", nil, nil, nil])
        for hop in transport.requests.dropFirst() {
            #expect(hop.headerFields[.authorization] == nil)
            #expect(hop.headerFields[.cookie] == nil)
            #expect(hop.headerFields[.proxyAuthorization] == nil)
        }
        #expect(transport.requests.last?.path == "/v1/admin/confirm")
    }

    @Test func a401AfterARedirectBackToTheOriginIsNotRetriedWithAToken() async throws {
        let transport = MockTransport(script: [
            Self.redirect(.found, to: "https://sso.example.com/hop"),
            Self.redirect(.found, to: "https://api.example.com/v1/done"),
            unauthorized(),
        ])
        await #expect(throws: NetworkRetryError.unauthorized) {
            try await client(transport).executeWithAutoRetry(.api())
        }
        #expect(await provider.refreshCount == 0)
        #expect(transport.requests.map(\.bearerToken) == ["expired-bearer-x1", nil, nil])
    }

    @Test func a401AfterACrossOriginRedirectIsUnauthorizedWithoutRefresh() async throws {
        let transport = MockTransport(script: [Self.redirect(.found, to: "https://cdn.example.com/f"), unauthorized()])
        await #expect(throws: NetworkRetryError.unauthorized) {
            try await client(transport).executeWithAutoRetry(.api())
        }
        #expect(await provider.refreshCount == 0)
    }

    @Test func a303BecomesAGetWithoutBody() async throws {
        let transport = MockTransport(script: [Self.redirect(.seeOther, to: "/v1/result"), ok()])
        var request = HTTPRequest.api(.post)
        request.headerFields[.contentType] = "application/json"
        _ = try await client(transport).executeWithAutoRetry(request, body: Data("{}".utf8))
        #expect(transport.requests[1].method == .get)
        #expect(transport.requests[1].body == nil)
        #expect(transport.requests[1].headerFields[.contentType] == nil)
    }

    @Test func redirectsAreCapped() async throws {
        let transport = MockTransport { _, _ in
            (HTTPResponse(status: .found, headerFields: [.location: "/again"]), Data())
        }
        let configuration = AuthenticatedClient.Configuration(
            allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!], maximumRedirects: 3)
        await #expect(throws: NetworkRetryError.tooManyRedirects) {
            try await client(transport, configuration: configuration).executeWithAutoRetry(.api())
        }
        #expect(transport.requestCount == 4)
    }

    @Test(arguments: [nil, "ftp://files.example.com/x", "http://"])
    func aRedirectWithoutAUsableLocationIsInvalid(_ location: String?) async throws {
        let transport = MockTransport(script: [Self.redirect(.movedPermanently, to: location)])
        await #expect(throws: NetworkRetryError.invalidRedirect) {
            try await client(transport).executeWithAutoRetry(.api())
        }
    }

    @Test func redirectsAreDeliveredWhenFollowingIsOff() async throws {
        let transport = MockTransport(script: [Self.redirect(.found, to: "/elsewhere")])
        let configuration = AuthenticatedClient.Configuration(
            allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!], followsRedirects: false)
        let (response, _) = try await client(transport, configuration: configuration).executeWithAutoRetry(.api())
        #expect(response.status == .found)
        #expect(transport.requestCount == 1)
    }

    @Test func aRefreshAfterARedirectRetriesTheRedirectedRequest() async throws {
        let transport = MockTransport(script: [Self.redirect(.found, to: "/v1/moved"), unauthorized(), ok()])
        _ = try await client(transport).executeWithAutoRetry(.api())
        #expect(transport.requests.map(\.path) == ["/v1/items", "/v1/moved", "/v1/moved"])
        #expect(transport.requests.map(\.bearerToken) == ["expired-bearer-x1", "expired-bearer-x1", "fresh-bearer-x2"])
    }

    // MARK: Logging and secrets

    @Test func logsCarryMethodPathStatusAndFingerprintButNoTokenOrQuery() async throws {
        let logs = LogCapture()
        let transport = MockTransport(script: [unauthorized(), ok()])
        let client = AuthenticatedClient(
            transport: transport, tokenProvider: provider, configuration: .api, logger: logs.logger())
        _ = try await client.executeWithAutoRetry(.api(.get, "/v1/items?api_key=querysecret"))
        let text = logs.lines.joined(separator: "\n")
        #expect(text.contains("http.method=GET"))
        #expect(text.contains("http.path=/v1/items"))
        #expect(text.contains("http.status=401"))
        #expect(text.contains("http.status=200"))
        #expect(text.contains(AuthToken.fingerprint("expired-bearer-x1")))
        #expect(text.contains(AuthToken.fingerprint("fresh-bearer-x2")))
        for secret in [
            "Bearer", "expired-bearer-x1 ", "=expired-bearer-x1", "=fresh-bearer-x2", "querysecret", "refresh-secret",
            "invalid_token",
        ] {
            #expect(!text.contains(secret), "a log line leaks a secret-like string")
        }
    }

    @Test func theRefreshTokenNeverTravelsThroughThisPath() async throws {
        let transport = MockTransport(script: [unauthorized(), ok()])
        _ = try await client(transport).executeWithAutoRetry(.api(.post), body: Data("{}".utf8))
        #expect(transport.requestCount == 2)
        for request in transport.requests {
            #expect(!request.headerFields.contains { $0.value.contains("refresh-secret") })
            #expect(!String(decoding: request.body ?? Data(), as: UTF8.self).contains("refresh-secret"))
        }
    }

    @Test func errorDescriptionsCarryNoHeaderValues() async throws {
        let transport = MockTransport(script: [
            .response(
                status: .forbidden, headers: [.wwwAuthenticate: #"Bearer error="insufficient_scope", scope="s3cret""#])
        ])
        let error = await #expect(throws: NetworkRetryError.self) {
            try await client(transport).executeWithAutoRetry(.api())
        }
        #expect(error?.description == "NetworkRetryError.insufficientScope (status 403)")
        #expect(NetworkRetryError.transport(Boom()).description == "NetworkRetryError.transport")
    }
}
