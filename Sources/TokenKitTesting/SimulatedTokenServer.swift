public import AuthToken
public import Foundation
public import HTTPTypes
public import NetworkRetry
import TokenRefresh

/// An in-process OAuth 2.0 token server for tests. It is an ``/NetworkRetry/HTTPTransport``: give it to a
/// `TokenEndpoint` or `JSONEndpointRefreshStrategy` as the transport.
///
/// It issues JWT-shaped access tokens and rotating refresh tokens grouped in families (one per sign-in),
/// detects reuse of a rotated refresh token and then revokes the whole family (RFC 6819 5.2.2.3), allows an
/// optional grace window in which the previous refresh token still works (so a response lost after
/// rotation can be recovered), counts what it does, and plays scripted faults.
///
/// It answers: the token endpoint (`refresh_token`, `password`, `authorization_code` with PKCE S256,
/// `client_credentials`), a FitIQ-style JSON refresh endpoint, and an RFC 7009 revocation endpoint.
public actor SimulatedTokenServer: HTTPTransport {
    /// How the server behaves.
    public struct Configuration: Sendable {
        /// The client ID it accepts.
        package var clientID: String
        /// The client secret it requires, if the client is confidential.
        package var clientSecret: String?
        /// The `X-API-Key` the JSON endpoint requires, if any.
        package var apiKey: String?
        /// The access token lifetime in seconds (`expires_in`).
        package var accessTokenLifetime: TimeInterval
        /// Whether each refresh issues a new refresh token.
        package var rotatesRefreshTokens: Bool
        /// Whether reusing a rotated refresh token (outside the grace window) revokes its whole family.
        package var detectsReuse: Bool
        /// Seconds after a rotation during which the previous refresh token is still accepted.
        package var graceWindow: TimeInterval
        /// Whether refresh answers leave out `refresh_token` (the client must keep the old one).
        package var omitsRefreshTokenInRefreshResponse: Bool
        /// Users for the password grant: user name to password.
        package var users: [String: String]
        /// The path of the token endpoint.
        package var tokenPath: String
        /// The path of the JSON refresh endpoint.
        package var jsonRefreshPath: String
        /// The path of the revocation endpoint.
        package var revocationPath: String
        /// Whether token answers leave out `expires_in` and access tokens leave out `iat`, so a token's expiry is
        /// known only from its `exp` claim, on the server's clock.
        package var omitsLifetime: Bool

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - clientID: The accepted client ID; `app` by default.
        ///   - clientSecret: The required secret, if any.
        ///   - apiKey: The required API key for the JSON endpoint, if any.
        ///   - accessTokenLifetime: Seconds; 3600 by default.
        ///   - rotatesRefreshTokens: `true` by default.
        ///   - detectsReuse: `true` by default.
        ///   - graceWindow: Seconds; 0 by default.
        ///   - omitsRefreshTokenInRefreshResponse: `false` by default.
        ///   - users: Password-grant users; `alice` / `correct horse` by default.
        ///   - tokenPath: `/oauth/token` by default.
        ///   - jsonRefreshPath: `/api/v1/auth/refresh` by default.
        ///   - revocationPath: `/oauth/revoke` by default.
        ///   - omitsLifetime: `false` by default; `true` leaves `expires_in` out of token answers and `iat` out of
        ///     access tokens.
        public init(
            clientID: String = "app", clientSecret: String? = nil, apiKey: String? = nil,
            accessTokenLifetime: TimeInterval = 3600, rotatesRefreshTokens: Bool = true, detectsReuse: Bool = true,
            graceWindow: TimeInterval = 0, omitsRefreshTokenInRefreshResponse: Bool = false,
            users: [String: String] = ["alice": "correct horse"], tokenPath: String = "/oauth/token",
            jsonRefreshPath: String = "/api/v1/auth/refresh", revocationPath: String = "/oauth/revoke",
            omitsLifetime: Bool = false
        ) {
            self.clientID = clientID
            self.clientSecret = clientSecret
            self.apiKey = apiKey
            self.accessTokenLifetime = accessTokenLifetime
            self.rotatesRefreshTokens = rotatesRefreshTokens
            self.detectsReuse = detectsReuse
            self.graceWindow = graceWindow
            self.omitsRefreshTokenInRefreshResponse = omitsRefreshTokenInRefreshResponse
            self.users = users
            self.tokenPath = tokenPath
            self.jsonRefreshPath = jsonRefreshPath
            self.revocationPath = revocationPath
            self.omitsLifetime = omitsLifetime
        }
    }

    /// A fault to play on the next token request, instead of (or around) the normal answer.
    public indirect enum Fault: Sendable, CustomStringConvertible {
        /// Any status with an empty body, with `Retry-After` when given (`.status(503, retryAfter: 120)`).
        case status(Int, retryAfter: Int? = nil)
        /// `200 OK` with a body that is not JSON.
        case malformedJSON
        /// The connection fails before the request reaches the server.
        case connectionError
        /// The server handles the request (and rotates), then the connection drops before the answer arrives.
        case responseLostAfterRotation
        /// `400` with `invalid_grant`.
        case invalidGrant
        /// `401` with `invalid_client`.
        case invalidClient
        /// The request waits until ``SimulatedTokenServer/releaseHeldRequests()`` and is then handled normally.
        case hold
        /// The request waits until ``SimulatedTokenServer/releaseHeldRequests()``, then the inner fault is played.
        case held(Fault)

        /// `500 Internal Server Error`.
        package static let internalServerError = Fault.status(500)
        /// `503 Service Unavailable`, with `Retry-After` when given.
        ///
        /// - Parameter retryAfter: Seconds for `Retry-After`.
        /// - Returns: The fault.
        package static func serviceUnavailable(retryAfter: Int? = nil) -> Fault { .status(503, retryAfter: retryAfter) }
        /// `429 Too Many Requests`, with `Retry-After` when given.
        ///
        /// - Parameter retryAfter: Seconds for `Retry-After`.
        /// - Returns: The fault.
        package static func tooManyRequests(retryAfter: Int? = nil) -> Fault { .status(429, retryAfter: retryAfter) }

        /// The fault's name.
        public var description: String {
            switch self {
            case .held(let inner): "held(\(inner))"
            case .status(let code, let retryAfter): "status(\(code)\(retryAfter.map { ", retry after \($0)" } ?? ""))"
            case .malformedJSON: "malformedJSON"
            case .connectionError: "connectionError"
            case .responseLostAfterRotation: "responseLostAfterRotation"
            case .invalidGrant: "invalidGrant"
            case .invalidClient: "invalidClient"
            case .hold: "hold"
            }
        }
    }

    /// The error the server throws for ``Fault/connectionError`` and ``Fault/responseLostAfterRotation``.
    package struct ConnectionError: Error, Sendable, CustomStringConvertible {
        /// `SimulatedTokenServer.ConnectionError`.
        package var description: String { "SimulatedTokenServer.ConnectionError" }
    }

    private struct Family {
        let userID: String
        var current: String
        var revoked = false
        /// Rotated refresh tokens and when they were rotated.
        var previous: [String: Date] = [:]
    }

    private struct Code {
        let userID: String
        let challenge: String
        let redirectURI: String
    }

    /// The configuration.
    package let configuration: Configuration
    private let now: @Sendable () -> Date
    private var families: [Int: Family] = [:]
    private var familyOfRefreshToken: [String: Int] = [:]
    private var codes: [String: Code] = [:]
    private var faults: [Fault] = []
    private var held: [Int: CheckedContinuation<Void, any Error>] = [:]
    private var heldWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var serial = 0

    /// Successful refreshes (refresh-token grants and JSON refreshes that issued tokens).
    public private(set) var refreshCount = 0
    /// Every request to the token or JSON refresh endpoint, whatever the answer.
    package private(set) var tokenRequestCount = 0
    /// The refresh tokens presented, in order (for assertions; never print them).
    package private(set) var presentedRefreshTokens: [String] = []
    /// Families revoked because a rotated refresh token was reused.
    public private(set) var reuseDetections = 0
    /// Revocation requests received.
    package private(set) var revocationCount = 0
    /// Refreshes accepted with a previous refresh token inside the grace window.
    package private(set) var graceRecoveries = 0

    /// Creates a server.
    ///
    /// - Parameters:
    ///   - configuration: How it behaves.
    ///   - now: Its wall clock (share a ``ManualClock/wallClock`` with the client).
    public init(configuration: Configuration = Configuration(), now: @escaping @Sendable () -> Date) {
        self.configuration = configuration
        self.now = now
        let origin = "SimulatedTokenServer configuration"
        if let secret = configuration.clientSecret {
            SecretCrossings.report(.secret(secret, .clientSecret), origin: origin)
        }
        if let apiKey = configuration.apiKey { SecretCrossings.report(.secret(apiKey, .credential), origin: origin) }
        for password in configuration.users.values {
            SecretCrossings.report(.secret(password, .password), origin: origin)
        }
    }

    // MARK: - Scripting

    /// Queues faults for the next token requests, one per request, in order.
    ///
    /// - Parameter faults: The faults.
    public func enqueue(_ faults: Fault...) { self.faults.append(contentsOf: faults) }

    /// Queues a fault `count` times.
    ///
    /// - Parameters:
    ///   - fault: The fault.
    ///   - count: How many requests it applies to.
    package func enqueue(_ fault: Fault, count: Int) { faults.append(contentsOf: repeatElement(fault, count: count)) }

    /// Starts a session for `userID` (a new refresh-token family) without a request.
    ///
    /// - Parameters:
    ///   - userID: The user.
    ///   - receivedAt: When the client received the token; the server's now by default.
    ///   - lifetime: The access token's lifetime; the configured one by default. Pass 0 for an expired token.
    /// - Returns: The token pair as the client would hold it.
    public func issueSession(
        userID: String = "user-1", receivedAt: Date? = nil, lifetime: TimeInterval? = nil
    )
        -> AuthToken
    {
        let response = startFamily(userID: userID)
        let issued = receivedAt ?? now()
        return AuthToken(
            accessToken: response.accessToken, refreshToken: response.refreshToken, receivedAt: issued,
            lifetime: lifetime ?? configuration.accessTokenLifetime)
    }

    /// Registers an authorization code for the PKCE exchange, as the authorization endpoint would.
    ///
    /// - Parameters:
    ///   - userID: The user who authorized.
    ///   - codeChallenge: The S256 challenge sent with the authorization request.
    ///   - redirectURI: The redirect URI.
    /// - Returns: The code.
    public func authorizationCode(userID: String, codeChallenge: String, redirectURI: String) -> String {
        serial += 1
        let code = "authorization-code-\(serial)"
        SecretCrossings.report(.secret(code, .credential), origin: "SimulatedTokenServer authorization code")
        codes[code] = Code(userID: userID, challenge: codeChallenge, redirectURI: redirectURI)
        return code
    }

    /// Whether `refreshToken` would be accepted now (current in a live family).
    ///
    /// - Parameter refreshToken: The refresh token.
    /// - Returns: `true` when it is the family's current token and the family is not revoked.
    package func isActive(refreshToken: String) -> Bool {
        guard let id = familyOfRefreshToken[refreshToken], let family = families[id] else { return false }
        return !family.revoked && family.current == refreshToken
    }

    /// Whether the family `refreshToken` belongs to was revoked.
    ///
    /// - Parameter refreshToken: Any refresh token of the family.
    /// - Returns: `true` when revoked.
    package func isFamilyRevoked(refreshToken: String) -> Bool {
        guard let id = familyOfRefreshToken[refreshToken] else { return false }
        return families[id]?.revoked ?? false
    }

    /// How many requests are waiting on a ``Fault/hold``.
    package var heldRequestCount: Int { held.count }

    /// Suspends until at least `count` requests are held. No real time passes.
    ///
    /// - Parameter count: The number to wait for.
    package func waitForHeldRequests(count: Int) async {
        if heldRequestCount >= count { return }
        await withCheckedContinuation { heldWatchers.append((count, $0)) }
    }

    /// Lets every held request go on.
    public func releaseHeldRequests() {
        let continuations = held.sorted { $0.key < $1.key }.map(\.value)
        held = [:]
        for continuation in continuations { continuation.resume() }
    }

    // MARK: - HTTPTransport

    /// Answers a request to one of the server's endpoints; 404 for anything else.
    ///
    /// Every answer carries a `Date` header with the server's clock (the `now` it was made with), as an HTTP server
    /// sends.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - body: Its body.
    /// - Returns: The answer.
    /// - Throws: A connection error for connection faults; `CancellationError` when a held request is cancelled.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        var (response, data) = try await handle(request, body: body)
        if response.headerFields[.date] == nil { response.headerFields[.date] = HTTPDate.format(now()) }
        return (response, data)
    }

    private func handle(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        SecretCrossings.report(.request(request, body: body), origin: "SimulatedTokenServer request")
        let path = String((request.path ?? "/").split(separator: "?", maxSplits: 1).first ?? "/")
        guard request.method == .post else { return Self.answer(405, [:]) }
        if path == configuration.revocationPath { return revoke(request, body: body ?? Data()) }
        guard path == configuration.tokenPath || path == configuration.jsonRefreshPath else {
            return Self.answer(404, [:])
        }
        tokenRequestCount += 1
        var lostAfterRotation = false
        if !faults.isEmpty {
            var kind = faults.removeFirst()
            if case .held(let inner) = kind {
                try await hold()
                kind = inner
            }
            switch kind {
            case .status(let code, let retryAfter):
                var headers = HTTPFields()
                if let retryAfter { headers[.retryAfter] = String(retryAfter) }
                return (HTTPResponse(status: .init(code: code), headerFields: headers), Data())
            case .malformedJSON:
                return (HTTPResponse(status: .ok), Data("{\"access_token\": ".utf8))
            case .connectionError:
                throw ConnectionError()
            case .invalidGrant:
                return Self.oauthError(400, "invalid_grant")
            case .invalidClient:
                return Self.oauthError(401, "invalid_client")
            case .hold:
                try await hold()
            case .responseLostAfterRotation:
                lostAfterRotation = true
            case .held:
                break  // nested holds are not played twice
            }
        }
        let answer =
            path == configuration.jsonRefreshPath
            ? jsonRefresh(request, body: body ?? Data()) : token(request, body: body ?? Data())
        if lostAfterRotation { throw ConnectionError() }
        return answer
    }

    // MARK: - Endpoints

    private func token(_ request: HTTPRequest, body: Data) -> (HTTPResponse, Data) {
        guard let text = String(data: body, encoding: .utf8), let pairs = FormEncoding.decode(text) else {
            return Self.oauthError(400, "invalid_request")
        }
        var form: [String: String] = [:]
        for (name, value) in pairs { form[name] = value }
        guard authenticates(request, form: form) else { return Self.oauthError(401, "invalid_client") }
        switch form["grant_type"] {
        case "refresh_token":
            guard let refreshToken = form["refresh_token"] else { return Self.oauthError(400, "invalid_request") }
            return refresh(refreshToken).map { Self.answer(200, $0) } ?? Self.oauthError(400, "invalid_grant")
        case "password":
            guard let username = form["username"], let password = form["password"],
                configuration.users[username] == password
            else { return Self.oauthError(400, "invalid_grant") }
            return Self.answer(200, startFamily(userID: username).json)
        case "authorization_code":
            guard let code = form["code"], let stored = codes.removeValue(forKey: code),
                form["redirect_uri"] == stored.redirectURI, let verifier = form["code_verifier"],
                let pkce = try? PKCE(verifier: verifier), pkce.challenge == stored.challenge
            else { return Self.oauthError(400, "invalid_grant") }
            return Self.answer(200, startFamily(userID: stored.userID).json)
        case "client_credentials":
            guard configuration.clientSecret != nil else { return Self.oauthError(400, "unauthorized_client") }
            let issued = issueAccessToken(userID: configuration.clientID)
            return Self.answer(200, Issued(accessToken: issued, refreshToken: nil, lifetime: answeredLifetime).json)
        default:
            return Self.oauthError(400, "unsupported_grant_type")
        }
    }

    private func jsonRefresh(_ request: HTTPRequest, body: Data) -> (HTTPResponse, Data) {
        if let apiKey = configuration.apiKey, request.headerFields[HTTPField.Name("X-API-Key")!] != apiKey {
            return Self.answer(403, ["error": "forbidden"])
        }
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            // `refreshToken` is what the FitIQ and Lume apps send; `refresh_token` what snake_case backends read.
            let refreshToken = (object["refreshToken"] ?? object["refresh_token"]) as? String
        else { return Self.answer(400, ["error": "bad request"]) }
        guard let issued = refresh(refreshToken) else {
            return Self.answer(401, ["error": "invalid refresh token"])
        }
        return Self.answer(200, ["data": issued])
    }

    private func revoke(_ request: HTTPRequest, body: Data) -> (HTTPResponse, Data) {
        revocationCount += 1
        guard let text = String(data: body, encoding: .utf8), let pairs = FormEncoding.decode(text) else {
            return Self.oauthError(400, "invalid_request")
        }
        var form: [String: String] = [:]
        for (name, value) in pairs { form[name] = value }
        guard authenticates(request, form: form) else { return Self.oauthError(401, "invalid_client") }
        if let token = form["token"], let id = familyOfRefreshToken[token] { families[id]?.revoked = true }
        return (HTTPResponse(status: .ok), Data())
    }

    // MARK: - Token families

    private var lifetime: TimeInterval { configuration.accessTokenLifetime }
    /// The `expires_in` token answers carry, if any.
    private var answeredLifetime: TimeInterval? { configuration.omitsLifetime ? nil : lifetime }

    private struct Issued {
        let accessToken: String
        let refreshToken: String?
        /// The `expires_in`, or `nil` to leave it out.
        let lifetime: TimeInterval?

        var json: [String: Any] {
            var object: [String: Any] = ["access_token": accessToken, "token_type": "Bearer"]
            if let lifetime { object["expires_in"] = Int(lifetime) }
            if let refreshToken { object["refresh_token"] = refreshToken }
            return object
        }
    }

    private func startFamily(userID: String) -> Issued {
        serial += 1
        let id = serial
        let refreshToken = newRefreshToken()
        families[id] = Family(userID: userID, current: refreshToken)
        familyOfRefreshToken[refreshToken] = id
        return Issued(
            accessToken: issueAccessToken(userID: userID), refreshToken: refreshToken, lifetime: answeredLifetime)
    }

    /// Handles a refresh; `nil` means `invalid_grant`.
    private func refresh(_ refreshToken: String) -> [String: Any]? {
        presentedRefreshTokens.append(refreshToken)
        guard let id = familyOfRefreshToken[refreshToken], var family = families[id], !family.revoked else {
            return nil
        }
        if family.current != refreshToken {
            let rotatedAt = family.previous[refreshToken] ?? .distantPast
            if now().timeIntervalSince(rotatedAt) <= configuration.graceWindow {
                graceRecoveries += 1
            } else {
                if configuration.detectsReuse {
                    family.revoked = true
                    families[id] = family
                    reuseDetections += 1
                }
                return nil
            }
        }
        var newRefresh: String? = nil
        if configuration.rotatesRefreshTokens {
            let rotated = newRefreshToken()
            family.previous[family.current] = now()
            family.current = rotated
            familyOfRefreshToken[rotated] = id
            newRefresh = rotated
        }
        families[id] = family
        refreshCount += 1
        let omit = configuration.omitsRefreshTokenInRefreshResponse
        return Issued(
            accessToken: issueAccessToken(userID: family.userID), refreshToken: omit ? nil : newRefresh ?? refreshToken,
            lifetime: answeredLifetime
        ).json
    }

    private func newRefreshToken() -> String {
        serial += 1
        let token = "rt-\(serial)-" + String(UInt64.random(in: .min ... .max), radix: 36)
        SecretCrossings.report(.secret(token, .refreshToken), origin: "SimulatedTokenServer")
        return token
    }

    private func issueAccessToken(userID: String) -> String {
        serial += 1
        let issuedAt = Int(now().timeIntervalSince1970)
        let header = Self.base64URL(#"{"alg":"HS256","typ":"JWT"}"#)
        let issued = configuration.omitsLifetime ? "" : #""iat":\#(issuedAt),"#
        let payload = Self.base64URL(
            #"{"sub":"\#(userID)",\#(issued)"exp":\#(issuedAt + Int(lifetime)),"jti":"at-\#(serial)"}"#)
        let token = "\(header).\(payload).c2ln"
        SecretCrossings.report(.secret(token, .accessToken), origin: "SimulatedTokenServer")
        SecretCrossings.report(.secret(userID, .userID), origin: "SimulatedTokenServer")
        return token
    }

    private func authenticates(_ request: HTTPRequest, form: [String: String]) -> Bool {
        if let authorization = request.headerFields[.authorization], authorization.hasPrefix("Basic "),
            let decoded = Data(base64Encoded: String(authorization.dropFirst(6))),
            let pair = String(data: decoded, encoding: .utf8)
        {
            // Percent-decoding only, as servers that read the pair by RFC 3986 rules do: a `+` stays a plus sign.
            let parts = pair.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, let id = parts[0].removingPercentEncoding,
                let secret = parts[1].removingPercentEncoding
            else { return false }
            return id == configuration.clientID && secret == (configuration.clientSecret ?? "")
        }
        guard form["client_id"] == configuration.clientID else { return false }
        guard let secret = configuration.clientSecret else { return true }
        return form["client_secret"] == secret
    }

    private func hold() async throws {
        serial += 1
        let index = serial
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                held[index] = continuation
                let count = heldRequestCount
                let ready = heldWatchers.filter { $0.count <= count }
                heldWatchers.removeAll { $0.count <= count }
                for watcher in ready { watcher.continuation.resume() }
            }
        } onCancel: {
            Task { await self.cancelHeld(index) }
        }
    }

    private func cancelHeld(_ index: Int) {
        guard let continuation = held.removeValue(forKey: index) else { return }
        continuation.resume(throwing: CancellationError())
    }

    // MARK: - Answers

    private static func answer(_ status: Int, _ object: [String: Any]) -> (HTTPResponse, Data) {
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return (HTTPResponse(status: .init(code: status), headerFields: headers), data)
    }

    private static func oauthError(_ status: Int, _ code: String) -> (HTTPResponse, Data) {
        answer(status, ["error": code])
    }

    private static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
