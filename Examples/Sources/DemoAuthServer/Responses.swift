import Foundation
import HTTPTypes
import Hummingbird

/// The token response: snake_case for the OAuth endpoints (RFC 6749 section 5.1), camelCase for the FitIQ-style
/// JSON endpoints (the analysis's `TokenResponse { accessToken, refreshToken }`, which the apps decode with
/// `.convertFromSnakeCase`).
struct TokenResponse: Encodable {
    /// How the keys are spelled.
    enum KeyStyle: Sendable {
        /// `access_token`, `refresh_token`, ...
        case snakeCase
        /// `accessToken`, `refreshToken`, ...
        case camelCase
    }

    var accessToken: String
    var tokenType = "Bearer"
    var expiresIn: Int
    var refreshToken: String?
    var scope: String?
    var userID: String?
    var keys = KeyStyle.snakeCase

    init(_ tokens: IssuedTokens, includeUserID: Bool = false, keys: KeyStyle = .snakeCase) {
        self.keys = keys
        accessToken = tokens.accessToken
        expiresIn = tokens.expiresIn
        refreshToken = tokens.refreshToken
        scope = tokens.scope
        userID = includeUserID ? tokens.userID : nil
    }

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
        case tokenType = "token_type"
        case expiresIn = "expires_in"
        case refreshToken = "refresh_token"
        case scope
        case userID = "user_id"
    }

    /// The same fields in camelCase.
    enum CamelCaseKeys: String, CodingKey {
        case accessToken, tokenType, expiresIn, refreshToken, scope, userId
    }

    func encode(to encoder: any Encoder) throws {
        switch keys {
        case .snakeCase:
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(accessToken, forKey: .accessToken)
            try container.encode(tokenType, forKey: .tokenType)
            try container.encode(expiresIn, forKey: .expiresIn)
            try container.encodeIfPresent(refreshToken, forKey: .refreshToken)
            try container.encodeIfPresent(scope, forKey: .scope)
            try container.encodeIfPresent(userID, forKey: .userID)
        case .camelCase:
            var container = encoder.container(keyedBy: CamelCaseKeys.self)
            try container.encode(accessToken, forKey: .accessToken)
            try container.encode(tokenType, forKey: .tokenType)
            try container.encode(expiresIn, forKey: .expiresIn)
            try container.encodeIfPresent(refreshToken, forKey: .refreshToken)
            try container.encodeIfPresent(scope, forKey: .scope)
            try container.encodeIfPresent(userID, forKey: .userId)
        }
    }
}

/// Builders for the responses the demo server sends.
enum Responses {
    static let customHeaderAPIKey = HTTPField.Name("X-API-Key")!
    static let pragma = HTTPField.Name("Pragma")!

    /// A JSON response from an `Encodable` value (sorted keys, so output is stable).
    static func json(_ value: some Encodable, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response
    {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(value)) ?? Data("{}".utf8)
        return raw(data, contentType: "application/json", status: status, headers: headers)
    }

    /// A response with a body as given.
    static func raw(
        _ body: Data, contentType: String, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]
    ) -> Response {
        var headers = headers
        headers[.contentType] = contentType
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// A token response, never cached (RFC 6749 section 5.1).
    static func tokens(
        _ tokens: IssuedTokens, includeUserID: Bool = false, keys: TokenResponse.KeyStyle = .snakeCase
    ) -> Response {
        json(TokenResponse(tokens, includeUserID: includeUserID, keys: keys), headers: noStore)
    }

    /// An error in the RFC 6749 section 5.2 shape: `{"error": ..., "error_description": ...}`.
    static func oauthError(
        _ code: String, _ description: String, status: HTTPResponse.Status = .badRequest, headers: HTTPFields = [:]
    ) -> Response {
        var headers = headers
        headers.append(contentsOf: noStore)
        return json(["error": code, "error_description": description], status: status, headers: headers)
    }

    /// A `401` from a protected resource with the RFC 6750 challenge: a bare one when no token was sent,
    /// `error="invalid_token"` with a description otherwise.
    static func bearerChallenge(realm: String, rejection: AccessRejection?) -> Response {
        var challenge = "Bearer realm=\"\(realm)\""
        var body = ["error": "unauthorized", "error_description": "An access token is required"]
        if let rejection {
            challenge += ", error=\"invalid_token\", error_description=\"\(rejection.description)\""
            body = ["error": "invalid_token", "error_description": rejection.description]
        }
        return json(body, status: .unauthorized, headers: [.wwwAuthenticate: challenge])
    }

    /// The page a captive portal or a misrouted proxy would answer with.
    static var htmlPage: Response {
        let page = """
            <!DOCTYPE html>
            <html><head><title>Sign in to continue</title></head>
            <body><h1>Network login required</h1><p>This is not the API you were looking for.</p></body></html>
            """
        return raw(Data(page.utf8), contentType: "text/html; charset=utf-8")
    }

    /// The answer to a pre-rotation or post-rotation fault (not `dropAfterRotation`, which answers nothing).
    static func fault(_ fault: RefreshFault) -> Response {
        switch fault {
        case .serverError, .serverErrorAfterRotation, .dropAfterRotation:
            return oauthError("server_error", "Injected fault: internal server error", status: .internalServerError)
        case .stall:
            return oauthError(
                "temporarily_unavailable", "Injected fault: held too long", status: .serviceUnavailable)
        case .unavailable(let seconds):
            return oauthError(
                "temporarily_unavailable", "Injected fault: try again later", status: .serviceUnavailable,
                headers: [.retryAfter: String(seconds)]
            )
        case .html:
            return htmlPage
        case .malformedJSON:
            return raw(Data(#"{"access_token": "eyJhbGciOiJFUzI1NiJ9.trunc"#.utf8), contentType: "application/json")
        case .none:
            return oauthError("server_error", "No fault", status: .internalServerError)
        }
    }

    private static let noStore: HTTPFields = [.cacheControl: "no-store", pragma: "no-cache"]
}
