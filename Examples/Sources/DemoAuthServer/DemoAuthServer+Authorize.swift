import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Synchronization

/// What `/authorize` handed out: each code with what its exchange must match. One use each; ten minutes at most.
final class AuthorizationCodes: Sendable {
    struct Grant: Sendable {
        let clientID: String
        let redirectURI: String
        let challenge: String
        let nonce: String?
        let userID: String
        let email: String
        let scope: String?
        let issuedAt: Date
    }

    private let grants = Mutex([String: Grant]())

    func add(_ grant: Grant) -> String {
        let code = Base64URL.random(byteCount: 24)
        grants.withLock { grants in
            grants = grants.filter { $0.value.issuedAt.timeIntervalSince(grant.issuedAt) > -600 }
            grants[code] = grant
        }
        return code
    }

    /// Takes the code out: a second exchange of the same code finds nothing.
    func take(_ code: String) -> Grant? { grants.withLock { $0.removeValue(forKey: code) } }
}

/// The authorization endpoint of the demo server and its code exchange, with OpenID Connect ID tokens.
///
/// A demo: `/authorize` signs in the user named by `login_hint` (the first configured user without one) and
/// consents at once, with no page; the PKCE S256 challenge is required; the redirect URI must be a loopback `http`
/// URL (RFC 8252, any port) or a private-use scheme. The redirect carries `iss` (RFC 9207). The token endpoint then
/// checks the code, the client, the redirect URI and the verifier, and answers with an ES256 ID token (the server's
/// JWKS key) beside the usual tokens.
struct AuthorizeRoutes: Sendable {
    let authority: TokenAuthority

    func authorize(_ request: Request) -> Response {
        var query: [String: String] = [:]
        for (name, value) in request.uri.queryParameters {
            // RFC 6749 section 3.1: a parameter given twice is an error.
            guard query[String(name)] == nil else { return Self.plain(.badRequest, "Repeated parameter") }
            query[String(name)] = String(value)
        }
        guard let clientID = query["client_id"], authority.configuration.clients.contains(where: { $0.id == clientID })
        else { return Self.plain(.badRequest, "Unknown client") }
        guard let redirect = query["redirect_uri"], let redirectURL = URL(string: redirect), Self.allowed(redirectURL)
        else { return Self.plain(.badRequest, "The redirect URI must be loopback http or a private-use scheme") }
        var parameters: [(String, String)] = []
        if let state = query["state"] { parameters.append(("state", state)) }
        parameters.append(("iss", authority.configuration.issuer))
        guard query["response_type"] == "code" else {
            return Self.redirect(redirect, [("error", "unsupported_response_type")] + parameters)
        }
        guard query["code_challenge_method"] == "S256", let challenge = query["code_challenge"], challenge.count == 43
        else { return Self.redirect(redirect, [("error", "invalid_request")] + parameters) }
        let users = authority.configuration.users
        let hint = query["login_hint"]?.lowercased()
        guard let user = hint.map({ hint in users.first { $0.email.lowercased() == hint } }) ?? users.first else {
            return Self.redirect(redirect, [("error", "access_denied")] + parameters)
        }
        let code = authority.authorizationCodes.add(
            .init(
                clientID: clientID, redirectURI: redirect, challenge: challenge, nonce: query["nonce"],
                userID: user.id, email: user.email, scope: query["scope"], issuedAt: authority.currentDate))
        return Self.redirect(redirect, [("code", code)] + parameters)
    }

    func exchange(_ form: [String: String], client: DemoAuthServer.Client) throws -> Response {
        guard let code = form["code"], let verifier = form["code_verifier"], let redirect = form["redirect_uri"] else {
            return Responses.oauthError("invalid_request", "code, code_verifier and redirect_uri are required")
        }
        guard let grant = authority.authorizationCodes.take(code), grant.clientID == client.id,
            grant.redirectURI == redirect, authority.currentDate.timeIntervalSince(grant.issuedAt) < 600,
            Base64URL.encode(SHA256.hash(data: Data(verifier.utf8))) == grant.challenge
        else { return Responses.oauthError("invalid_grant", "The code is unknown, used, expired or not yours") }
        let tokens = try authority.signIn(userID: grant.userID, clientID: client.id, scope: grant.scope)
        var body: [String: JSONField] = [
            "access_token": .string(tokens.accessToken), "token_type": .string("Bearer"),
            "expires_in": .number(tokens.expiresIn),
        ]
        if let refreshToken = tokens.refreshToken { body["refresh_token"] = .string(refreshToken) }
        if let scope = tokens.scope { body["scope"] = .string(scope) }
        if grant.scope?.split(separator: " ").contains("openid") == true {
            let issuedAt = Int(authority.currentDate.timeIntervalSince1970)
            let name = String(grant.email.prefix { $0 != "@" })
            let accessHash = Array(SHA256.hash(data: Data(tokens.accessToken.utf8)).prefix(16))
            body["id_token"] = .string(
                try authority.signer.sign(
                    json: IDTokenClaims(
                        iss: authority.configuration.issuer, sub: grant.userID, aud: client.id, iat: issuedAt,
                        exp: issuedAt + 600, nonce: grant.nonce, email: grant.email, name: name,
                        at_hash: Base64URL.encode(accessHash))))
        }
        return Responses.json(body, headers: [.cacheControl: "no-store"])
    }

    /// An ID token's claims (OpenID Connect Core 1.0 section 2).
    private struct IDTokenClaims: Encodable {
        // swift-format-ignore: AlwaysUseLowerCamelCase
        var iss: String
        var sub: String
        var aud: String
        var iat: Int
        var exp: Int
        var nonce: String?
        var email: String
        var name: String
        var at_hash: String
    }

    /// A JSON member of the token response.
    private enum JSONField: Encodable {
        case string(String)
        case number(Int)

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let value): try container.encode(value)
            case .number(let value): try container.encode(value)
            }
        }
    }

    /// Loopback `http` on any port (RFC 8252 section 7.3), or a private-use scheme (section 7.1).
    private static func allowed(_ url: URL) -> Bool {
        guard let scheme = url.scheme?.lowercased() else { return false }
        if scheme == "http" { return url.host == "127.0.0.1" || url.host == "[::1]" || url.host == "::1" }
        return scheme != "https" && scheme.contains(".")
    }

    private static func redirect(_ base: String, _ parameters: [(String, String)]) -> Response {
        var components = URLComponents(string: base) ?? URLComponents()
        components.queryItems = (components.queryItems ?? []) + parameters.map { URLQueryItem(name: $0.0, value: $0.1) }
        let location = components.url?.absoluteString ?? base
        return Response(status: .found, headers: [.location: location, .cacheControl: "no-store"])
    }

    private static func plain(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }
}
