import Foundation
import HTTPTypes
import Hummingbird

/// The BetterAuth-style routes (see ``DemoAuthServer/BetterAuth``), registered beside the token routes.
struct BetterAuthRoutes: Sendable {
    let sessions: CookieSessions
    let debugEndpoints: Bool

    private static let bodyLimit = 64 * 1024

    /// Adds the routes to `router` and returns it.
    func registered(on router: Router<DemoRequestContext>) -> Router<DemoRequestContext> {
        router.post("/api/auth/sign-up/email") { request, _ in try await self.signUp(request) }
        router.post("/api/auth/sign-in/username") { request, _ in try await self.signIn(request, by: .username) }
        router.post("/api/auth/sign-in/email") { request, _ in try await self.signIn(request, by: .email) }
        router.get("/api/auth/get-session") { request, _ in self.getSession(request) }
        router.post("/api/auth/sign-out") { request, _ in self.signOut(request) }
        router.post("/api/auth/revoke-sessions") { request, _ in
            self.withSession(request) { found in
                _ = self.sessions.invalidateAll(userID: found.account.id, reason: "revoke-sessions")
                return Self.json(["status": true], headers: [.setCookie: self.sessions.deleteCookie])
            }
        }
        router.post("/api/auth/delete-user") { request, _ in
            self.withSession(request) { found in
                _ = self.sessions.deleteAccount(userID: found.account.id)
                return Self.json(["success": true], headers: [.setCookie: self.sessions.deleteCookie])
            }
        }
        // The chat app's profile (seed 004's `chat_user`), for a session cookie only.
        router.get("/api/chat/profile") { request, _ in
            self.withSession(request) { found in
                Self.json([
                    "auth_user": Self.user(found.account),
                    "chat_user": ["id": "chat-" + found.account.id, "displayName": found.account.name],
                ])
            }
        }
        if debugEndpoints {
            router.get("/debug/cookie-stats") { _, _ in Responses.json(self.sessions.stats) }
        }
        return router
    }

    // MARK: Handlers

    private struct SignUpBody: Decodable {
        var email: String
        var password: String
        var name: String?
        var username: String?
    }

    private struct SignInBody: Decodable {
        var username: String?
        var email: String?
        var password: String
    }

    private enum Login { case username, email }

    private func signUp(_ request: Request) async throws -> Response {
        let data = Data(try await request.body.collect(upTo: Self.bodyLimit).readableBytesView)
        guard let body = try? JSONDecoder().decode(SignUpBody.self, from: data) else {
            return Self.error("Invalid request body", status: .badRequest)
        }
        let username = body.username ?? String(body.email.split(separator: "@").first ?? "")
        let outcome = sessions.signUp(
            email: body.email, username: username, name: body.name ?? username, password: body.password)
        return answer(outcome)
    }

    private func signIn(_ request: Request, by login: Login) async throws -> Response {
        let data = Data(try await request.body.collect(upTo: Self.bodyLimit).readableBytesView)
        guard let body = try? JSONDecoder().decode(SignInBody.self, from: data),
            login == .username ? body.username != nil : body.email != nil
        else {
            return Self.error("Invalid request body", status: .badRequest)
        }
        let outcome = sessions.signIn(
            username: login == .username ? body.username : nil, email: login == .email ? body.email : nil,
            password: body.password)
        return answer(outcome)
    }

    /// BetterAuth's answer: `{"session": {...}, "user": {...}}`, renewed cookie if it was renewed, or `null`.
    private func getSession(_ request: Request) -> Response {
        let cookie = sessions.cookieValue(in: request.headers[.cookie])
        guard let found = sessions.session(cookie: cookie, countingCheck: true) else {
            return Responses.raw(Data("null".utf8), contentType: "application/json", headers: Self.noStore)
        }
        var headers = Self.noStore
        if found.renewed, let cookie {
            headers[.setCookie] = sessions.setCookie(cookie, expiresAt: found.session.expiresAt)
        }
        return Self.json(["session": Self.session(found.session), "user": Self.user(found.account)], headers: headers)
    }

    private func signOut(_ request: Request) -> Response {
        sessions.signOut(cookie: sessions.cookieValue(in: request.headers[.cookie]))
        return Self.json(["success": true], headers: [.setCookie: sessions.deleteCookie])
    }

    /// Runs `body` for a valid session; otherwise `401 {"error": "Session expired"}`.
    private func withSession(_ request: Request, _ body: (CookieSessions.Found) -> Response) -> Response {
        let cookie = sessions.cookieValue(in: request.headers[.cookie])
        guard let found = sessions.session(cookie: cookie, countingCheck: false) else {
            sessions.countUnauthorized()
            return Self.error("Session expired", status: .unauthorized)
        }
        var response = body(found)
        if found.renewed, let cookie, response.headers[.setCookie] == nil {
            response.headers[.setCookie] = sessions.setCookie(cookie, expiresAt: found.session.expiresAt)
        }
        return response
    }

    private func answer(_ outcome: CookieSessions.Outcome) -> Response {
        switch outcome {
        case .refused(let error, let status):
            return Self.error(error, status: HTTPResponse.Status(code: status))
        case .session(let cookie, let session, let account):
            var headers = Self.noStore
            headers[.setCookie] = sessions.setCookie(cookie, expiresAt: session.expiresAt)
            return Self.json(["user": Self.user(account), "session": Self.session(session)], headers: headers)
        }
    }

    // MARK: JSON

    private static func user(_ account: CookieSessions.Account) -> [String: Any] {
        [
            "id": account.id, "email": account.email, "username": account.username, "name": account.name,
            "createdAt": date(account.createdAt),
        ]
    }

    private static func session(_ session: CookieSessions.Session) -> [String: Any] {
        [
            "id": session.id, "userId": session.userID, "expiresAt": date(session.expiresAt),
            "createdAt": date(session.createdAt), "updatedAt": date(session.updatedAt),
        ]
    }

    private static func date(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    private static func json(_ object: [String: Any], headers: HTTPFields = [:]) -> Response {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return Responses.raw(data, contentType: "application/json", headers: headers)
    }

    /// `{"error": "..."}`, as the seed's backend answers.
    private static func error(_ text: String, status: HTTPResponse.Status) -> Response {
        Responses.json(["error": text], status: status, headers: noStore)
    }

    private static let noStore: HTTPFields = [.cacheControl: "no-store"]
}
