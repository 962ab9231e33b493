public import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Synchronization
public import TokenKit

/// A small stand-in for the Clerk iOS SDK, talking to the demo server's Clerk-like frontend API: it signs in with a
/// password, keeps the session and its client token (in "the Keychain", memory here), caches the 60-second
/// session JWT, and mints a new one when the cached one expires or when asked to skip the cache.
///
/// Its `getToken(skipCache:)` answers as Clerk's does: the JWT, `nil` without a session; a revoked or ended session
/// clears the SDK's session and throws `TokenRefreshError.refreshTokenRejected` (so TokenKit ends its session
/// with reason `revoked`); no network throws the `URLError` (so TokenKit keeps the session, offline).
public final class SimulatedClerk: Sendable {
    /// The signed-in user, as Clerk's `User` (the fields CommuteTimely uses).
    public struct User: Sendable, Hashable {
        /// The user ID (`sub`).
        public let id: String
        /// The e-mail address.
        public let email: String
        /// The first name, when known.
        public let firstName: String?
    }

    /// Why a sign-in failed.
    public struct SignInFailed: Error, CustomStringConvertible {
        /// Clerk's error code.
        public let code: String
        /// `sign-in refused: <code>`.
        public var description: String { "sign-in refused: \(code)" }
    }

    struct Session: Sendable {
        let id: String
        let clientToken: String
        let user: User
    }

    struct State: Sendable {
        var session: Session?
        var cached: (jwt: String, expires: Date)?
        var tokenRequests = 0
        var skipCacheRequests = 0
        var minted = 0
    }

    private let baseURL: URL
    private let transport: any HTTPTransport
    private let now: @Sendable () -> Date
    private let state = Mutex(State())

    /// Configures the SDK, as `clerk.configure(publishableKey:)` does.
    ///
    /// - Parameters:
    ///   - frontendAPI: The demo server's base URL.
    ///   - transport: The device's network.
    ///   - now: The device's wall clock.
    public init(frontendAPI: URL, transport: any HTTPTransport, now: @escaping @Sendable () -> Date) {
        self.baseURL = frontendAPI
        self.transport = transport
        self.now = now
    }

    /// The signed-in user, if any (Clerk's `clerk.user`).
    public var user: User? { state.withLock { $0.session?.user } }
    /// The session ID, if any (Clerk's `clerk.session?.id`).
    public var sessionID: String? { state.withLock { $0.session?.id } }
    /// How many times `getToken` was called.
    public var tokenRequests: Int { state.withLock { $0.tokenRequests } }
    /// How many of those skipped the cache.
    public var skipCacheRequests: Int { state.withLock { $0.skipCacheRequests } }
    /// How many tokens the SDK fetched from the server.
    public var mintedTokens: Int { state.withLock { $0.minted } }

    /// The strategy for TokenKit: Clerk's `getToken(skipCache:)` behind `SDKTokenStrategy`.
    public var strategy: SDKTokenStrategy {
        SDKTokenStrategy { [self] forceRefresh in try await self.getToken(skipCache: forceRefresh) }
    }

    /// Signs in with a password (Clerk's `SignIn.create(strategy: .identifier(..., password:))`).
    ///
    /// - Parameters:
    ///   - identifier: The e-mail address.
    ///   - password: The password.
    /// - Returns: The user.
    /// - Throws: ``SignInFailed`` when the server refused; transport errors.
    @discardableResult
    public func signIn(identifier: String, password: String) async throws -> User {
        struct Answer: Decodable {
            struct User: Decodable {
                var id: String
                var email: String
            }
            var client_token: String
            var session_id: String
            var user: User
        }
        let body = try JSONEncoder().encode(["identifier": identifier, "password": password])
        let (response, data) = try await call(.post, "v1/client/sign_ins", body: body)
        guard response.status == .ok else {
            throw SignInFailed(code: Self.errorCode(data) ?? "\(response.status.code)")
        }
        let answer = try JSONDecoder().decode(Answer.self, from: data)
        let user = User(id: answer.user.id, email: answer.user.email, firstName: nil)
        state.withLock {
            $0.session = Session(id: answer.session_id, clientToken: answer.client_token, user: user)
            $0.cached = nil
        }
        return user
    }

    /// Clerk's `session.getToken(.init(skipCache:))`.
    ///
    /// - Parameter skipCache: Whether to fetch a new token even if the cached one is still valid.
    /// - Returns: The session JWT, or `nil` without a session.
    /// - Throws: `TokenRefreshError.refreshTokenRejected` when the server ended the session; transport errors.
    public func getToken(skipCache: Bool = false) async throws -> String? {
        let date = now()
        let (session, cached): (Session?, String?) = state.withLock { state in
            state.tokenRequests += 1
            if skipCache { state.skipCacheRequests += 1 }
            // Clerk refreshes a token that has under ~10 s left.
            let usable = state.cached.flatMap { $0.expires.timeIntervalSince(date) > 10 ? $0.jwt : nil }
            return (state.session, skipCache ? nil : usable)
        }
        guard let session else { return nil }
        if let cached { return cached }
        let (response, data) = try await call(
            .post, "v1/client/sessions/\(session.id)/tokens", authorization: session.clientToken)
        guard response.status == .ok else {
            if response.status == .unauthorized {
                // Revoked, signed out elsewhere, or the user was deleted: the SDK drops the session.
                state.withLock { state in
                    if state.session?.id == session.id {
                        state.session = nil
                        state.cached = nil
                    }
                }
                throw TokenRefreshError.refreshTokenRejected
            }
            throw URLError(.badServerResponse)
        }
        guard let jwt = (try? JSONDecoder().decode([String: String].self, from: data))?["jwt"] else {
            throw URLError(.cannotParseResponse)
        }
        let expires = AuthToken.withParsedExpiration(accessToken: jwt, refreshToken: nil).expirationClaim
        state.withLock { state in
            state.minted += 1
            if state.session?.id == session.id {
                state.cached = (jwt, expires ?? date.addingTimeInterval(60))
            }
        }
        return jwt
    }

    /// Signs out (Clerk's `clerk.signOut()`): ends the session on the server and forgets it.
    ///
    /// - Throws: Transport errors; the session is forgotten locally either way.
    public func signOut() async throws {
        guard
            let session = state.withLock({ state -> Session? in
                defer {
                    state.session = nil
                    state.cached = nil
                }
                return state.session
            })
        else { return }
        _ = try await call(.post, "v1/client/sessions/\(session.id)/end", authorization: session.clientToken)
    }

    private func call(
        _ method: HTTPRequest.Method, _ path: String, body: Data? = nil, authorization: String? = nil
    ) async throws -> (HTTPResponse, Data) {
        var request = HTTPRequest(method: method, url: baseURL.appendingPathComponent(path))
        if body != nil { request.headerFields[.contentType] = "application/json" }
        if let authorization { request.headerFields[.authorization] = authorization }
        return try await transport.send(request, body: body)
    }

    private static func errorCode(_ data: Data) -> String? {
        struct Errors: Decodable {
            struct Entry: Decodable { var code: String }
            var errors: [Entry]
        }
        return (try? JSONDecoder().decode(Errors.self, from: data))?.errors.first?.code
    }
}
