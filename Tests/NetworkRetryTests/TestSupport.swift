import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import TokenKitLogCheck
import TokenKitTesting

/// A single-flight token provider for tests: hands out `current`, refreshes to the next token of
/// `refreshedTokens` once per rejection of the current token, and answers a stale rejection with the current
/// token without refreshing.
actor FakeTokenProvider: TokenProvider {
    private(set) var current: AuthToken
    private var refreshedTokens: [String]
    private var inFlight: Task<AuthToken, any Error>?
    private(set) var refreshCount = 0
    private(set) var validTokenCount = 0
    private(set) var rejectedTokens: [String] = []
    var validTokenError: (any Error)?
    var refreshError: (any Error)?

    init(current: String = "expired-bearer-x1", refreshedTokens: [String] = ["fresh-bearer-x2"]) {
        self.current = Self.token(current)
        self.refreshedTokens = refreshedTokens
    }

    static func token(_ text: String) -> AuthToken {
        TestSecrets.shared.register(
            AuthToken(accessToken: text, refreshToken: "refresh-secret", receivedAt: Date(timeIntervalSince1970: 0)))
    }

    func failValidToken(with error: any Error) { validTokenError = error }
    func failRefresh(with error: any Error) { refreshError = error }

    func validToken() async throws -> AuthToken {
        validTokenCount += 1
        if let validTokenError { throw validTokenError }
        return current
    }

    func refreshToken(afterRejectionOf accessToken: String) async throws -> AuthToken {
        rejectedTokens.append(accessToken)
        if let refreshError { throw refreshError }
        if accessToken != current.accessToken { return current }
        if let inFlight { return try await inFlight.value }
        refreshCount += 1
        let next = refreshedTokens.isEmpty ? current.accessToken : refreshedTokens.removeFirst()
        let task = Task<AuthToken, any Error> {
            await Task.yield()
            return Self.token(next)
        }
        inFlight = task
        let token = try await task.value
        current = token
        inFlight = nil
        return token
    }
}

extension HTTPRequest {
    static func api(
        _ method: Method = .get, _ path: String = "/v1/items", authority: String = "api.example.com"
    )
        -> HTTPRequest
    {
        HTTPRequest(method: method, scheme: "https", authority: authority, path: path)
    }
}

extension AuthenticatedClient.Configuration {
    static let api = AuthenticatedClient.Configuration(allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!])
}

func unauthorized(_ challenge: String? = #"Bearer error="invalid_token""#, body: String = "") -> MockTransport.Reply {
    var headers = HTTPFields()
    if let challenge { headers[.wwwAuthenticate] = challenge }
    return .response(status: .unauthorized, headers: headers, body: Data(body.utf8))
}

func ok(_ body: String = "ok") -> MockTransport.Reply { .response(status: .ok, body: Data(body.utf8)) }
