import Foundation
import HTTPTypes
import Hummingbird

/// The Clerk-like frontend API of the demo server, over its ``SessionIssuer``:
///
/// - `POST /v1/client/sign_ins` with `{"identifier": ..., "password": ...}`: starts a session for one of the
///   server's users; answers `{"client_token", "session_id", "user": {"id", "email"}}` (422 for a wrong password).
/// - `POST /v1/client/sessions/{sid}/tokens` with `Authorization: <client token>`: mints a 60-second RS256 (or
///   ES256) session JWT, `{"jwt": ...}`; 401 `{"errors": [{"code": "session_revoked" | "session_ended" | ...}]}`
///   once the session is over.
/// - `POST /v1/client/sessions/{sid}/end`: signs the session out.
/// - `GET /v1/jwks`: the issuer's keys, with `Cache-Control: public, max-age=...`.
/// - `GET /.well-known/openid-configuration`: OpenID Connect discovery (`issuer`, `jwks_uri` pointing at
///   `/v1/jwks`, `id_token_signing_alg_values_supported`, ...), with the same `Cache-Control`.
/// - With debug endpoints: `POST /debug/issuer/rotate-key`, `POST /debug/issuer/revoke-sessions`
///   (`{"user_id": ...}` or empty for all), `GET /debug/issuer/stats`.
struct SessionIssuerRoutes: Sendable {
    let issuer: SessionIssuer
    let users: [DemoAuthServer.User]
    let debugEndpoints: Bool

    private static let bodyLimit = 16 * 1024

    func register(on router: Router<DemoRequestContext>) {
        router.post("/v1/client/sign_ins") { request, _ in try await self.signIn(request) }
        router.post("/v1/client/sessions/:sid/tokens") { request, context in
            self.token(sessionID: context.parameters.get("sid") ?? "", request)
        }
        router.post("/v1/client/sessions/:sid/end") { request, context in
            self.end(sessionID: context.parameters.get("sid") ?? "", request)
        }
        router.get("/v1/jwks") { _, _ in
            Responses.raw(self.issuer.jwksDocument, contentType: "application/json", headers: self.cacheControl)
        }
        router.get("/.well-known/openid-configuration") { _, _ in
            let base = self.issuer.servedAt ?? self.issuer.issuer
            guard let jwksURL = URL(string: base + "/v1/jwks") else {
                return Self.errors("internal_error", status: .internalServerError)
            }
            return Responses.raw(
                self.issuer.discoveryDocument(jwksURL: jwksURL), contentType: "application/json",
                headers: self.cacheControl)
        }
        guard debugEndpoints else { return }
        router.post("/debug/issuer/rotate-key") { _, _ in
            let keyID = try self.issuer.rotateKey()
            return Responses.json([
                "current_kid": keyID, "published": self.issuer.publishedKeyIDs.joined(separator: ","),
            ])
        }
        router.post("/debug/issuer/revoke-sessions") { request, _ in
            let body = try await request.body.collect(upTo: Self.bodyLimit)
            let userID = (try? JSONDecoder().decode([String: String].self, from: Data(body.readableBytesView)))?[
                "user_id"]
            return Responses.json(["revoked": self.issuer.revokeSessions(userID: userID)])
        }
        router.get("/debug/issuer/stats") { _, _ in Responses.json(self.issuer.stats) }
    }

    private var cacheControl: HTTPFields {
        [.cacheControl: "public, max-age=\(issuer.configuration.jwksMaxAge.components.seconds)"]
    }

    private struct SignInBody: Decodable {
        var identifier: String
        var password: String
    }

    private struct SignInAnswer: Encodable {
        struct User: Encodable {
            var id: String
            var email: String
        }
        var clientToken: String
        var sessionID: String
        var user: User

        enum CodingKeys: String, CodingKey {
            case clientToken = "client_token"
            case sessionID = "session_id"
            case user
        }
    }

    private func signIn(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: Self.bodyLimit)
        guard let form = try? JSONDecoder().decode(SignInBody.self, from: Data(body.readableBytesView)) else {
            return Self.errors("form_param_missing", status: .badRequest)
        }
        guard let user = users.first(where: { $0.email == form.identifier && $0.password == form.password }) else {
            return Self.errors("form_password_incorrect", status: .unprocessableContent)
        }
        let session = issuer.startSession(userID: user.id, email: user.email)
        return Responses.json(
            SignInAnswer(
                clientToken: session.clientToken, sessionID: session.sessionID,
                user: .init(id: user.id, email: user.email)),
            headers: [.cacheControl: "no-store"])
    }

    private func token(sessionID: String, _ request: Request) -> Response {
        do {
            let jwt = try issuer.sessionToken(
                sessionID: sessionID, clientToken: request.headers[.authorization] ?? "")
            return Responses.json(["jwt": jwt], headers: [.cacheControl: "no-store"])
        } catch let refusal as SessionIssuer.Refusal {
            return Self.errors(refusal.rawValue, status: refusal == .unknownClient ? .notFound : .unauthorized)
        } catch {
            return Self.errors("internal_error", status: .internalServerError)
        }
    }

    private func end(sessionID: String, _ request: Request) -> Response {
        do {
            try issuer.endSession(sessionID, clientToken: request.headers[.authorization] ?? "")
            return Responses.json(["status": "ended"])
        } catch {
            return Self.errors(error.rawValue, status: .notFound)
        }
    }

    /// Clerk's error shape: `{"errors": [{"code": ...}]}`.
    static func errors(_ code: String, status: HTTPResponse.Status) -> Response {
        Responses.json(["errors": [["code": code]]], status: status)
    }
}
