import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The demo server's endpoints, registered on a Hummingbird router.
struct Routes: Sendable {
    let authority: TokenAuthority
    private var configuration: DemoAuthServer.Configuration { authority.configuration }

    /// The largest token-endpoint body accepted.
    private static let formLimit = 64 * 1024
    /// The largest photo accepted by `/api/v1/photo-recognition`.
    private static let photoLimit = 2 * 1024 * 1024

    /// Builds a router with every endpoint.
    func makeRouter() -> Router<DemoRequestContext> {
        let router = Router(context: DemoRequestContext.self)
        router.add(middleware: HTMLEverywhereMiddleware(authority: authority))

        // FitIQ-style JSON API, guarded by X-API-Key.
        router.post("/api/v1/auth/login") { request, _ in try await self.jsonLogin(request) }
        router.post("/api/v1/auth/refresh") { request, context in try await self.jsonRefresh(request, context) }
        router.post("/api/v1/auth/logout") { request, _ in try await self.jsonLogout(request) }

        // OAuth 2.0.
        router.post("/oauth/token") { request, context in try await self.oauthToken(request, context) }
        router.post("/oauth/revoke") { request, _ in try await self.oauthRevoke(request) }
        router.get("/.well-known/jwks.json") { _, _ in Responses.json(self.authority.signer.jwks) }
        // The browser part of the authorization code grant, with OpenID Connect ID tokens (DemoAuthServer+Authorize).
        router.get("/authorize") { request, _ in AuthorizeRoutes(authority: self.authority).authorize(request) }

        // Protected resources.
        router.get("/api/v1/progress") { request, _ in
            self.protected(request) { claims in
                ["user_id": claims.sub, "steps_today": 8_421, "step_goal": 10_000, "streak_days": 12]
            }
        }
        router.get("/api/v1/sleep") { request, _ in
            self.protected(request) { claims in
                ["user_id": claims.sub, "last_night_hours": 7.4, "quality": "good"]
            }
        }
        router.get("/api/v1/nutrition") { request, _ in
            self.protected(request) { claims in
                ["user_id": claims.sub, "calories_today": 1_840, "protein_grams": 96]
            }
        }
        router.post("/api/v1/photo-recognition") { request, _ in
            let photo = try await request.body.collect(upTo: Self.photoLimit)
            return self.protected(request) { claims in
                [
                    "user_id": claims.sub, "bytes_received": photo.readableBytes,
                    "items": [["label": "apple", "calories": 95, "confidence": 0.93]],
                ]
            }
        }

        router.post("/api/v1/health-data/sync") { request, _ in
            let batch = try await request.body.collect(upTo: Self.photoLimit)
            return self.protected(request) { claims in
                ["user_id": claims.sub, "bytes_received": batch.readableBytes, "accepted": true]
            }
        }

        if configuration.debugEndpoints {
            router.get("/debug/stats") { _, _ in Responses.json(self.authority.stats) }
            router.get("/debug/issued") { _, _ in Responses.json(self.authority.issueLog) }
            router.get("/debug/faults") { _, _ in Responses.json(self.authority.faults) }
            router.post("/debug/faults") { request, _ in try await self.setFaults(request) }
            router.post("/debug/revoke-sessions") { request, _ in try await self.revokeSessions(request) }
        }
        return router
    }

    // MARK: FitIQ-style JSON endpoints

    private struct LoginBody: Decodable {
        var email: String
        var password: String
    }

    /// The analysis's `RefreshTokenRequest(refreshToken:)` as a default `JSONEncoder` writes it:
    /// `{"refreshToken": "..."}`. `{"refresh_token": "..."}` is read too, for clients configured for snake_case
    /// backends.
    private struct RefreshBody: Decodable {
        var refreshToken: String
        enum CodingKeys: String, CodingKey {
            case refreshToken
            case snakeCase = "refresh_token"
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if let value = try container.decodeIfPresent(String.self, forKey: .refreshToken) {
                refreshToken = value
            } else {
                refreshToken = try container.decode(String.self, forKey: .snakeCase)
            }
        }
    }

    /// `nil` when the API key is right (or not required), else the `401` to answer.
    private func apiKeyFailure(_ request: Request) -> Response? {
        guard let expected = configuration.apiKey, request.headers[Responses.customHeaderAPIKey] != expected else {
            return nil
        }
        return Responses.oauthError(
            "invalid_client", "A valid X-API-Key header is required", status: .unauthorized
        )
    }

    private func jsonLogin(_ request: Request) async throws -> Response {
        if let failure = apiKeyFailure(request) { return failure }
        let body = try await request.body.collect(upTo: Self.formLimit)
        guard let login = try? JSONDecoder().decode(LoginBody.self, from: Data(body.readableBytesView)) else {
            return Responses.oauthError("invalid_request", "Expected a JSON body with \"email\" and \"password\"")
        }
        guard let tokens = try authority.login(email: login.email, password: login.password, clientID: nil, scope: nil)
        else {
            return Responses.oauthError("invalid_credentials", "Wrong email or password", status: .unauthorized)
        }
        return Responses.tokens(tokens, includeUserID: true, keys: .camelCase)
    }

    private func jsonRefresh(_ request: Request, _ context: DemoRequestContext) async throws -> Response {
        if let failure = apiKeyFailure(request) { return failure }
        let body = try await request.body.collect(upTo: Self.formLimit)
        guard let refresh = try? JSONDecoder().decode(RefreshBody.self, from: Data(body.readableBytesView)) else {
            return Responses.oauthError("invalid_request", "Expected a JSON body with \"refreshToken\"")
        }
        guard await passBeforeRotationGate(request) else { return Responses.fault(.unavailable(retryAfterSeconds: 0)) }
        let outcome = try authority.refresh(refresh.refreshToken, clientID: nil, endpoint: "json")
        await holdAfterRotation(outcome, request)
        return try await respond(to: outcome, rejectionStatus: .unauthorized, context: context, keys: .camelCase)
    }

    private func jsonLogout(_ request: Request) async throws -> Response {
        if let failure = apiKeyFailure(request) { return failure }
        let body = try await request.body.collect(upTo: Self.formLimit)
        guard let logout = try? JSONDecoder().decode(RefreshBody.self, from: Data(body.readableBytesView)) else {
            return Responses.oauthError("invalid_request", "Expected a JSON body with \"refreshToken\"")
        }
        authority.revoke(logout.refreshToken, clientID: nil)
        return Response(status: .noContent)
    }

    // MARK: OAuth 2.0 endpoints

    /// The form parameters and the authenticated client of a token or revocation request, or the error to answer.
    private func authenticatedForm(
        _ request: Request
    ) async throws -> Result<(form: [String: String], client: DemoAuthServer.Client), ErrorResponse> {
        guard request.headers[.contentType]?.lowercased().hasPrefix("application/x-www-form-urlencoded") == true
        else {
            return .failure(.init(Responses.oauthError("invalid_request", "Expected a form-encoded body")))
        }
        let body = try await request.body.collect(upTo: Self.formLimit)
        guard let form = FormBody.parse(String(buffer: body)) else {
            return .failure(.init(Responses.oauthError("invalid_request", "Malformed form body or repeated parameter")))
        }
        let basic = request.headers[.authorization].flatMap(FormBody.basicCredentials)
        if request.headers[.authorization] != nil, basic == nil {
            return .failure(.init(invalidClient(challenge: true)))
        }
        if basic != nil, form["client_secret"] != nil {
            return .failure(.init(Responses.oauthError("invalid_request", "Use one client authentication method")))
        }
        guard let id = basic?.id ?? form["client_id"] else {
            return .failure(.init(invalidClient(challenge: false)))
        }
        if let bodyID = form["client_id"], bodyID != id {
            return .failure(.init(Responses.oauthError("invalid_request", "client_id does not match the credentials")))
        }
        guard let client = authority.authenticateClient(id: id, secret: basic?.secret ?? form["client_secret"]) else {
            return .failure(.init(invalidClient(challenge: basic != nil)))
        }
        return .success((form, client))
    }

    private func invalidClient(challenge: Bool) -> Response {
        Responses.oauthError(
            "invalid_client", "Client authentication failed", status: .unauthorized,
            headers: challenge ? [.wwwAuthenticate: "Basic realm=\"\(configuration.realm)\""] : [:]
        )
    }

    private func oauthToken(_ request: Request, _ context: DemoRequestContext) async throws -> Response {
        let form: [String: String]
        let client: DemoAuthServer.Client
        switch try await authenticatedForm(request) {
        case .failure(let error): return error.response
        case .success(let result): (form, client) = result
        }
        switch form["grant_type"] {
        case nil:
            return Responses.oauthError("invalid_request", "grant_type is required")
        case "password":
            guard let username = form["username"], let password = form["password"] else {
                return Responses.oauthError("invalid_request", "username and password are required")
            }
            let tokens = try authority.login(
                email: username, password: password, clientID: client.id, scope: form["scope"]
            )
            guard let tokens else { return Responses.oauthError("invalid_grant", "Wrong username or password") }
            return Responses.tokens(tokens)
        case "refresh_token":
            guard let refreshToken = form["refresh_token"] else {
                return Responses.oauthError("invalid_request", "refresh_token is required")
            }
            guard await passBeforeRotationGate(request) else {
                return Responses.fault(.unavailable(retryAfterSeconds: 0))
            }
            let outcome = try authority.refresh(refreshToken, clientID: client.id, endpoint: "oauth")
            await holdAfterRotation(outcome, request)
            return try await respond(to: outcome, rejectionStatus: .badRequest, context: context)
        case "authorization_code":
            return try AuthorizeRoutes(authority: authority).exchange(form, client: client)
        case "client_credentials":
            guard client.secret != nil else {
                return Responses.oauthError(
                    "unauthorized_client", "A public client cannot use the client_credentials grant"
                )
            }
            return Responses.tokens(try authority.clientCredentials(clientID: client.id, scope: form["scope"]))
        default:
            return Responses.oauthError(
                "unsupported_grant_type",
                "Supported: password, authorization_code, refresh_token, client_credentials")
        }
    }

    private func oauthRevoke(_ request: Request) async throws -> Response {
        switch try await authenticatedForm(request) {
        case .failure(let error):
            return error.response
        case .success(let (form, client)):
            guard let token = form["token"] else { return Responses.oauthError("invalid_request", "token is required") }
            // RFC 7009 section 2.2: unknown or already revoked tokens are answered 200 as well.
            authority.revoke(token, clientID: client.id)
            return Response(status: .ok, headers: [.cacheControl: "no-store"])
        }
    }

    /// Holds the request at a ``RefreshGate`` set before the rotation, if any; `false` when the gate abandoned it.
    private func passBeforeRotationGate(_ request: Request) async -> Bool {
        guard let gate = authority.takeGate(.beforeRotation) else { return true }
        return await gate.hold(holder: request.headers[DemoAuthServer.clientTagHeader])
    }

    /// Holds the answer of a refresh that issued tokens at a ``RefreshGate`` set after the rotation, if any.
    private func holdAfterRotation(_ outcome: RefreshOutcome, _ request: Request) async {
        guard case .issued = outcome, let gate = authority.takeGate(.afterRotation) else { return }
        _ = await gate.hold(holder: request.headers[DemoAuthServer.clientTagHeader])
    }

    /// Answers a refresh outcome: tokens, `invalid_grant`, or the injected fault.
    private func respond(
        to outcome: RefreshOutcome, rejectionStatus: HTTPResponse.Status, context: DemoRequestContext,
        keys: TokenResponse.KeyStyle = .snakeCase
    ) async throws -> Response {
        switch outcome {
        case .issued(let tokens, .none):
            return Responses.tokens(tokens, keys: keys)
        case .issued(_, .dropAfterRotation):
            // The server has rotated; the client never hears of it.
            try? await context.channel.close()
            throw ConnectionDropped()
        case .faulted(.stall(let limit)):
            // Nothing rotated: the client waits (or dies meanwhile, killed mid-refresh), then gets a 503.
            try? await Task.sleep(for: .seconds(limit))
            return Responses.fault(.stall(limitSeconds: limit))
        case .issued(_, let fault), .faulted(let fault):
            return Responses.fault(fault)
        case .rejected(let reason):
            return Responses.oauthError("invalid_grant", reason, status: rejectionStatus)
        }
    }

    // MARK: Protected resources

    private func protected(_ request: Request, body: (TokenSigner.Claims) -> [String: Any]) -> Response {
        // RFC 6750 section 3: no credentials at all get a bare challenge; a Bearer credential that does not check
        // out (empty included) gets `invalid_token`.
        let credentials = request.headers[.authorization]?.split(separator: " ", maxSplits: 1)
        guard let credentials, credentials.first?.lowercased() == "bearer" else {
            authority.countUnauthenticatedRequest()
            return Responses.bearerChallenge(realm: configuration.realm, rejection: nil)
        }
        let token = credentials.dropFirst().first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        switch authority.authorize(token) {
        case .failure(let rejection):
            return Responses.bearerChallenge(realm: configuration.realm, rejection: rejection)
        case .success(let claims):
            let data = (try? JSONSerialization.data(withJSONObject: body(claims), options: [.sortedKeys])) ?? Data()
            return Responses.raw(data, contentType: "application/json")
        }
    }

    // MARK: Debug endpoints

    private func setFaults(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: Self.formLimit)
        let data = Data(body.readableBytesView)
        guard
            let faults = data.isEmpty
                ? DemoAuthServer.Faults()
                : try? JSONDecoder().decode(
                    DemoAuthServer.Faults.self, from: data
                )
        else {
            return Responses.oauthError("invalid_request", "Expected a JSON fault plan")
        }
        authority.faults = faults
        return Responses.json(authority.faults)
    }

    private struct RevokeSessionsBody: Decodable {
        var userID: String?
        enum CodingKeys: String, CodingKey { case userID = "user_id" }
    }

    private func revokeSessions(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: Self.formLimit)
        let data = Data(body.readableBytesView)
        let userID = data.isEmpty ? nil : (try? JSONDecoder().decode(RevokeSessionsBody.self, from: data))?.userID
        let count = authority.revokeAllSessions(userID: userID)
        return Responses.json(["revoked_families": count])
    }
}

/// An error response carried through a `Result`.
struct ErrorResponse: Error {
    let response: Response
    init(_ response: Response) { self.response = response }
}

/// Thrown after an injected fault closed the connection without answering.
struct ConnectionDropped: Error {}

/// Answers every request outside `/debug/` with an HTML page while ``DemoAuthServer/Faults/htmlEverywhere`` is on.
struct HTMLEverywhereMiddleware: RouterMiddleware {
    typealias Context = DemoRequestContext
    let authority: TokenAuthority

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard authority.faults.htmlEverywhere, !request.uri.path.hasPrefix("/debug/") else {
            return try await next(request, context)
        }
        authority.countInjectedFault()
        return Responses.htmlPage
    }
}
