import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Testing
import TokenKitLogCheck
import TokenRefresh

/// Every interop test, run one at a time: they share one server, its counters and its settings.
///
/// The server is the django-oauth-toolkit (DOT 3.4.1) project in `Interop/django`; `.ci/interop` starts it
/// and sets `TOKENKIT_INTEROP_URL`. Without that variable every test here is skipped. The tests use
/// TokenKit's public API only, real HTTP over `URLSessionTransport`, and the server's `/debug` hooks instead
/// of waiting: `/debug/expire_access_tokens` crosses an access-token expiry, `/debug/age_revocations` leaves
/// a grace window, `/debug/config` switches reuse protection and the grace window at run time, and
/// `/debug/stats` counts what the server saw.
@Suite(
    .serialized,
    .logLeakCheck(),
    .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil),
    .timeLimit(.minutes(2))
)
struct Interop {}

/// The server's test users and clients (fixed and public, see `Interop/README.md`).
enum Credentials {
    static let username = "alice"
    static let password = "alice-interop-password"
    static let confidentialID = "interop-confidential"
    static let confidentialSecret = "interop-confidential-secret"
    static let publicID = "interop-public"
    /// A user and a client whose password and secret need form encoding (space, `+`, `&`, `=`, `%`, `/`,
    /// `:`, non-ASCII).
    static let specialUsername = "carol"
    static let specialPassword = "carol p@ss+w0rd&=%/:é"
    static let specialID = "interop-special"
    static let specialSecret = "s3cret with spaces+plus/slash:colon%25&amp=é"
    /// The confidential client whose access tokens are RFC 9068 JWTs (`typ: at+jwt`, RS256 with DOT's OIDC key).
    static let jwtID = "interop-jwt"
    static let jwtSecret = "interop-jwt-secret"

    /// The confidential client with HTTP Basic (`client_secret_basic`).
    static let confidentialBasic = OAuthClient(
        id: confidentialID, secret: confidentialSecret, authentication: .basic)
    /// The confidential client with `client_id` and `client_secret` in the body.
    static let confidentialBody = OAuthClient(id: confidentialID, secret: confidentialSecret, authentication: .body)
    /// The JWT access-token client with HTTP Basic.
    static let jwtClient = OAuthClient(id: jwtID, secret: jwtSecret, authentication: .basic)
    /// The public client: `client_id` only.
    static let publicClient = OAuthClient(id: publicID)
}

/// The server's rotation settings (`GET`/`POST /debug/config`).
struct ServerConfig: Codable, Equatable {
    var accessTokenExpireSeconds: Int
    var refreshTokenReuseProtection: Bool
    var refreshTokenGracePeriodSeconds: Int

    enum CodingKeys: String, CodingKey {
        case accessTokenExpireSeconds = "access_token_expire_seconds"
        case refreshTokenReuseProtection = "refresh_token_reuse_protection"
        case refreshTokenGracePeriodSeconds = "refresh_token_grace_period_seconds"
    }

    /// What every test starts from: access tokens that do not expire on their own during a test (the tests
    /// expire them with the hook), reuse protection on, no grace window.
    static let baseline = ServerConfig(
        accessTokenExpireSeconds: 3600, refreshTokenReuseProtection: true, refreshTokenGracePeriodSeconds: 0)
}

/// The server's counters (`GET /debug/stats`), see `Interop/README.md`.
struct ServerStats: Decodable {
    var passwordGrants: Int
    var refreshGrants: Int
    var refreshGrantsReplayed: Int
    var revocations: Int
    var reuseDetectionsOrInvalidGrants: Int
    var reuseDetections: Int
    var graceReplays: Int
    var tokenFailures: [String: Int]
    var apiOK: Int
    var apiUnauthorized: Int
    /// Django session authentication (`/session/*`): CSRF cookies handed out, logins, session checks with and
    /// without a session, and the protected view's outcomes.
    var sessionCSRF: Int
    var sessionLogins: Int
    var sessionLoginFailed: Int
    var sessionChecksOK: Int
    var sessionChecksNull: Int
    var sessionAPIOK: Int
    var sessionAPIUnauthorized: Int

    enum CodingKeys: String, CodingKey {
        case passwordGrants = "password_grants"
        case refreshGrants = "refresh_grants"
        case refreshGrantsReplayed = "refresh_grants_replayed"
        case revocations
        case reuseDetectionsOrInvalidGrants = "reuse_detections_or_invalid_grants"
        case reuseDetections = "reuse_detections"
        case graceReplays = "grace_replays"
        case tokenFailures = "token_failures"
        case apiOK = "api_ok"
        case apiUnauthorized = "api_unauthorized"
        case sessionCSRF = "session_csrf"
        case sessionLogins = "session_logins"
        case sessionLoginFailed = "session_login_failed"
        case sessionChecksOK = "session_checks_ok"
        case sessionChecksNull = "session_checks_null"
        case sessionAPIOK = "session_api_ok"
        case sessionAPIUnauthorized = "session_api_unauthorized"
    }

    /// Refresh attempts answered `invalid_grant`.
    var refreshInvalidGrants: Int { tokenFailures["refresh_token:invalid_grant"] ?? 0 }
    /// Every failed token-endpoint answer.
    var failedTokenRequests: Int { tokenFailures.values.reduce(0, +) }
}

/// A failure of the test harness itself (not of TokenKit).
struct InteropHarnessError: Error, CustomStringConvertible {
    let description: String
}

/// The running interop server: its URLs and its `/debug` hooks.
struct InteropServer {
    let baseURL: URL
    let origin: HTTPOrigin
    let transport: URLSessionTransport

    /// The server named by `TOKENKIT_INTEROP_URL`, with its counters zeroed and ``ServerConfig/baseline``
    /// in force.
    static func prepared(config: ServerConfig = .baseline) async throws -> InteropServer {
        let value = try #require(ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"])
        let url = try #require(URL(string: value.hasSuffix("/") ? String(value.dropLast()) : value))
        let origin = try #require(HTTPOrigin(url))
        let server = InteropServer(baseURL: url, origin: origin, transport: URLSessionTransport())
        try await server.configure(config)
        try await server.resetStats()
        return server
    }

    var tokenURL: URL { baseURL.appending(path: "o/token/") }
    var revokeURL: URL { baseURL.appending(path: "o/revoke_token/") }

    /// The token endpoint for `client`, over `transport` (the server's own by default).
    func endpoint(_ client: OAuthClient, transport: (any HTTPTransport)? = nil) -> TokenEndpoint {
        TokenEndpoint(url: tokenURL, client: client, transport: transport ?? self.transport)
    }

    /// A request for `path` on the server.
    func request(_ method: HTTPRequest.Method = .get, _ path: String) -> HTTPRequest {
        HTTPRequest(
            method: method, scheme: origin.scheme, authority: "\(origin.host):\(origin.port)", path: path)
    }

    /// The allowed-origin configuration for an ``AuthenticatedClient`` talking to this server.
    var apiConfiguration: AuthenticatedClient.Configuration {
        AuthenticatedClient.Configuration(allowedOrigins: [origin])
    }

    // MARK: - Debug hooks

    func stats() async throws -> ServerStats {
        let (status, body) = try await send(.get, "/debug/stats")
        try expectOK(status, "/debug/stats")
        return try JSONDecoder().decode(ServerStats.self, from: body)
    }

    func resetStats() async throws {
        let (status, _) = try await send(.post, "/debug/reset")
        try expectOK(status, "/debug/reset")
    }

    func config() async throws -> ServerConfig {
        let (status, body) = try await send(.get, "/debug/config")
        try expectOK(status, "/debug/config")
        return try JSONDecoder().decode(ServerConfig.self, from: body)
    }

    func configure(_ config: ServerConfig) async throws {
        let (status, body) = try await send(.post, "/debug/config", json: try JSONEncoder().encode(config))
        try expectOK(status, "/debug/config")
        let applied = try JSONDecoder().decode(ServerConfig.self, from: body)
        guard applied == config else { throw InteropHarnessError(description: "the server did not apply \(config)") }
    }

    /// Makes every live access token expire now (server side); the client does not know.
    func expireAccessTokens() async throws {
        let (status, _) = try await send(.post, "/debug/expire_access_tokens", json: Data("{}".utf8))
        try expectOK(status, "/debug/expire_access_tokens")
    }

    /// Moves every refresh-token revocation (rotation) `seconds` into the past: out of a grace window.
    func ageRevocations(seconds: Int) async throws {
        let (status, _) = try await send(.post, "/debug/age_revocations", json: Data("{\"seconds\": \(seconds)}".utf8))
        try expectOK(status, "/debug/age_revocations")
    }

    /// Deletes Django sessions server-side (`POST /debug/delete_sessions`): `user`'s, or every session when
    /// `user` is `nil`. Returns how many were deleted.
    @discardableResult
    func deleteDjangoSessions(user: String? = nil) async throws -> Int {
        let json = try JSONSerialization.data(withJSONObject: user.map { ["user": $0] } ?? [:])
        let (status, body) = try await send(.post, "/debug/delete_sessions", json: json)
        try expectOK(status, "/debug/delete_sessions")
        return (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["deleted"] as? Int ?? 0
    }

    /// The `kid`s of DOT's signing keys (`GET`/`POST /debug/signing_keys`): the one it signs with, and the
    /// inactive ones it still publishes (`OIDC_RSA_PRIVATE_KEYS_INACTIVE`).
    struct SigningKeys: Decodable {
        var active: String
        var inactive: [String]
    }

    func signingKeys() async throws -> SigningKeys {
        let (status, body) = try await send(.get, "/debug/signing_keys")
        try expectOK(status, "/debug/signing_keys")
        return try JSONDecoder().decode(SigningKeys.self, from: body)
    }

    /// DOT's key rotation: a fresh key signs from now on; the previous one stays published as inactive.
    @discardableResult
    func rotateSigningKey() async throws -> SigningKeys {
        try await signingKeysAction("rotate")
    }

    /// The inactive keys leave DOT's JWKS.
    @discardableResult
    func retireInactiveSigningKeys() async throws -> SigningKeys {
        try await signingKeysAction("retire_inactive")
    }

    private func signingKeysAction(_ action: String) async throws -> SigningKeys {
        let json = try JSONSerialization.data(withJSONObject: ["action": action])
        let (status, body) = try await send(.post, "/debug/signing_keys", json: json)
        try expectOK(status, "/debug/signing_keys")
        return try JSONDecoder().decode(SigningKeys.self, from: body)
    }

    /// Revokes `refreshToken` with DOT's RFC 7009 endpoint, authenticating as `client` (the confidential client by
    /// default) by HTTP Basic (done by hand here, not with TokenKit's `TokenRevocation`). DOT only revokes a token
    /// of the client that asks.
    func revokeRefreshToken(
        _ refreshToken: String, as client: OAuthClient = Credentials.confidentialBasic
    ) async throws {
        var request = self.request(.post, "/o/revoke_token/")
        let basic = Data("\(client.id):\(client.secret ?? "")".utf8).base64EncodedString()
        request.headerFields[.authorization] = "Basic \(basic)"
        request.headerFields[.contentType] = "application/x-www-form-urlencoded"
        let form = "token=\(Form.encode(refreshToken))&token_type_hint=refresh_token"
        let (response, _) = try await transport.send(request, body: Data(form.utf8))
        try expectOK(response.status.code, "/o/revoke_token/")
    }

    /// Sends a refresh grant outside TokenKit, as `client` (secret in the body when it has one), and returns
    /// the HTTP status and the OAuth `error` code, if any.
    func rawRefresh(
        _ refreshToken: String, as client: OAuthClient = Credentials.confidentialBasic
    ) async throws -> (status: Int, error: String?) {
        var request = self.request(.post, "/o/token/")
        request.headerFields[.contentType] = "application/x-www-form-urlencoded"
        var form = "grant_type=refresh_token&refresh_token=\(Form.encode(refreshToken))&client_id=\(client.id)"
        if let secret = client.secret { form += "&client_secret=\(Form.encode(secret))" }
        let (response, body) = try await transport.send(request, body: Data(form.utf8))
        let error = (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["error"] as? String
        return (response.status.code, error)
    }

    /// The status of `GET /api/me` with `accessToken`, sent outside TokenKit.
    func rawMe(_ accessToken: String) async throws -> Int {
        var request = self.request(.get, "/api/me")
        request.headerFields[.authorization] = "Bearer \(accessToken)"
        let (response, _) = try await transport.send(request, body: nil)
        return response.status.code
    }

    private func send(_ method: HTTPRequest.Method, _ path: String, json: Data? = nil) async throws -> (Int, Data) {
        var request = self.request(method, path)
        if json != nil { request.headerFields[.contentType] = "application/json" }
        let (response, body) = try await transport.send(request, body: json)
        return (response.status.code, body)
    }

    private func expectOK(_ status: Int, _ what: String) throws {
        guard status == 200 else { throw InteropHarnessError(description: "\(what) answered \(status)") }
    }
}

/// `application/x-www-form-urlencoded`, written here so the tests do not lean on TokenKit's encoder.
enum Form {
    static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._*")
        return (text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "").replacingOccurrences(
            of: "%20", with: "+")
    }

    static func decode(_ body: String) -> [(String, String)] {
        body.split(separator: "&").map { part in
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func component(_ text: Substring?) -> String {
                guard let text else { return "" }
                return text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text)
            }
            return (component(pieces.first), component(pieces.count > 1 ? pieces[1] : nil))
        }
    }
}
