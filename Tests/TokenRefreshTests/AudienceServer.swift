import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

/// A token server with resource indicators (RFC 8707) and multi-resource refresh tokens: one rotating refresh token
/// per session, an access token per request whose `aud` is the `resource` (or `audience`) asked for. A refresh token
/// presented after its rotation is reuse: the whole session is revoked (RFC 6819 5.2.2.3).
actor AudienceServer: HTTPTransport {
    private let now: @Sendable () -> Date
    private let lifetime: TimeInterval
    private var current: String?
    private var rotated: Set<String> = []
    private var serial = 0
    /// Whether the session was revoked after a reuse.
    private(set) var revoked = false
    /// Successful refreshes by the resource asked for ("" when none).
    private(set) var refreshes: [String: Int] = [:]
    /// Every refresh token presented, in order (never print them).
    private(set) var presented: [String] = []
    /// The refresh tokens issued, in order (never print them).
    private(set) var issued: [String] = []
    /// Reuses of a rotated refresh token.
    private(set) var reuseDetections = 0
    /// The form of every refresh request, without the refresh token.
    private(set) var requests: [[String: String]] = []

    init(now: @escaping @Sendable () -> Date, lifetime: TimeInterval = 3600) {
        self.now = now
        self.lifetime = lifetime
    }

    /// Starts a session; returns its pair with an access token for `resource`.
    func signIn(userID: String = "alice", resource: String) -> AuthToken {
        let refresh = newRefreshToken()
        current = refresh
        return AuthToken(
            accessToken: accessToken(userID: userID, audience: resource), refreshToken: refresh, receivedAt: now(),
            lifetime: lifetime)
    }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let body = body ?? Data()
        TestSecrets.shared.registerCredentials(inRequestBody: body, origin: "AudienceServer request")
        var form: [String: String] = [:]
        for (name, value) in FormEncoding.decode(String(decoding: body, as: UTF8.self)) ?? [] { form[name] = value }
        guard form["grant_type"] == "refresh_token", let presentedToken = form["refresh_token"] else {
            return answer(400, ["error": "unsupported_grant_type"])
        }
        presented.append(presentedToken)
        var logged = form
        logged["refresh_token"] = nil
        requests.append(logged)
        if rotated.contains(presentedToken) {
            reuseDetections += 1
            revoked = true
        }
        guard !revoked, presentedToken == current else { return answer(400, ["error": "invalid_grant"]) }
        rotated.insert(presentedToken)
        let next = newRefreshToken()
        current = next
        let resource = form["resource"] ?? form["audience"] ?? ""
        refreshes[resource, default: 0] += 1
        var fields: [String: Any] = [
            "access_token": accessToken(userID: "alice", audience: resource), "token_type": "Bearer",
            "expires_in": Int(lifetime), "refresh_token": next,
        ]
        if let scope = form["scope"] { fields["scope"] = scope }
        return answer(200, fields)
    }

    /// Whether `refreshToken` is the session's live one.
    func isCurrent(_ refreshToken: String?) -> Bool { refreshToken != nil && refreshToken == current && !revoked }

    private func answer(_ status: Int, _ fields: [String: Any]) -> (HTTPResponse, Data) {
        let data = (try? JSONSerialization.data(withJSONObject: fields)) ?? Data()
        TestSecrets.shared.registerTokens(inResponseBody: data, origin: "AudienceServer response")
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return (HTTPResponse(status: .init(code: status), headerFields: headers), data)
    }

    private func newRefreshToken() -> String {
        serial += 1
        let token = "rt-\(serial)-\(UUID().uuidString)"
        issued.append(token)
        return token
    }

    private func accessToken(userID: String, audience: String) -> String {
        serial += 1
        let issuedAt = Int(now().timeIntervalSince1970)
        let claims: [String: Any] = [
            "sub": userID, "aud": audience, "iat": issuedAt, "exp": issuedAt + Int(lifetime), "jti": "\(serial)",
        ]
        let payload = (try? JSONSerialization.data(withJSONObject: claims, options: .sortedKeys)) ?? Data()
        let token = [Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8), payload, Data(UUID().uuidString.utf8)]
            .map(Self.base64URL).joined(separator: ".")
        TestSecrets.shared.register(AuthToken(accessToken: token, receivedAt: now()), origin: "AudienceServer")
        return token
    }

    private static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// A store that records every write of the session it wraps (the refresh tokens saved, in order).
actor RecordingStore: TokenStore {
    let base = InMemoryTokenStore()
    /// The refresh token of every save that landed, in order (never print them).
    private(set) var savedRefreshTokens: [String?] = []

    func load(account: String) async -> TokenStoreRead { await base.load(account: account) }

    func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await base.save(session, account: account, condition: condition)
        savedRefreshTokens.append(session.token.refreshToken)
    }

    func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await base.remove(account: account, condition: condition)
    }
}
