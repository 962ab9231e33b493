public import Foundation
public import HTTPTypes
import HTTPTypesFoundation
public import TokenKit

/// The app side of a Clerk app (CommuteTimely's `AuthSessionController` and `NetworkService`, SabaiPics'
/// `SabaiPicsAPIClient`), written against TokenKit: the SDK owns the session, TokenKit hands its token to every
/// request, retries once after a 401 with the SDK's cache skipped, and tells the UI the truth in ``states()``.
///
/// The SDK is anything that gives an `SDKTokenStrategy`: ``SimulatedClerk`` in the demo, `MockSessionProvider`
/// (TokenKitTesting) in tests, as CommuteTimely swaps in `ClerkMockProvider`.
public final class ClerkApp: Sendable {
    /// The session: state, events, tokens.
    public let auth: TokenRefreshClient
    /// The API client: a Bearer from the SDK on every request.
    public let api: AuthenticatedClient
    /// The backend's base URL.
    public let backendURL: URL
    private let signOutSDK: @Sendable () async throws -> Void

    /// Wires the app.
    ///
    /// - Parameters:
    ///   - strategy: The SDK's `getToken(skipCache:)`.
    ///   - backendURL: The API's base URL (the only origin that gets the token).
    ///   - transport: The network.
    ///   - clock: The clock for timeouts and the breaker.
    ///   - now: The device's wall clock.
    ///   - signOutSDK: The SDK's sign-out (`clerk.signOut()`).
    public init(
        strategy: SDKTokenStrategy, backendURL: URL, transport: any HTTPTransport,
        clock: any Clock<Duration> = ContinuousClock(), now: @escaping @Sendable () -> Date,
        signOutSDK: @escaping @Sendable () async throws -> Void
    ) {
        self.backendURL = backendURL
        self.signOutSDK = signOutSDK
        // No backoff sleeps: an SDK that is offline says so at once, and the app shows the session as expired. The
        // breaker keeps its defaults: asking the SDK is not a refresh, only a forced call after a 401 counts.
        auth = TokenRefreshClient(
            strategy: strategy, configuration: .init(backoff: .init(retries: 0)), clock: clock, now: now)
        api = AuthenticatedClient(
            transport: transport, tokenProvider: auth,
            configuration: .init(
                allowedOrigins: [HTTPOrigin(backendURL)].compactMap { $0 },
                // Seed 004's global 401 handler: a 401 that a fresh token did not cure ends the session.
                endsSessionWhenRefreshDoesNotHelp: true))
    }

    /// The state now, then every change (CommuteTimely's `authStatePublisher.values`).
    public func states() -> AuthStateSequence { auth.states() }

    /// At launch, and whenever the SDK reports a change: asks the SDK for a token (Clerk's `load()` then
    /// `getToken()`) and publishes what it found.
    ///
    /// - Returns: The state afterwards.
    @discardableResult
    public func checkSession() async -> AuthState { await auth.restoreSession(validatingWithProvider: true) }

    /// The network is back (the diet-app ADR's `handleNetworkRestore()`).
    ///
    /// - Returns: The state afterwards.
    @discardableResult
    public func networkRestored() async -> AuthState { await auth.networkRestored() }

    /// Sends an API request with the SDK's token.
    ///
    /// - Parameters:
    ///   - method: The method.
    ///   - path: The path, such as `/users/me`.
    ///   - body: The body, if any.
    /// - Returns: The response and its body.
    /// - Throws: TokenKit's errors (offline, signed out, a 401 a fresh token did not cure).
    public func request(
        _ method: HTTPRequest.Method, _ path: String, body: Data? = nil
    ) async throws -> (
        HTTPResponse, Data
    ) {
        try await api.executeWithAutoRetry(HTTPRequest(method: method, url: url(path)), body: body)
    }

    /// Signs out: the SDK first (it ends the session on the server), then TokenKit (reason `userAction`).
    ///
    /// - Throws: The SDK's transport errors; TokenKit's session ends either way.
    public func signOut() async throws {
        var sdkFailure: (any Error)?
        do { try await signOutSDK() } catch { sdkFailure = error }
        try await auth.signOut()
        if let sdkFailure { throw sdkFailure }
    }

    /// Deletes the account (the diet-app ADR): `DELETE /users/me` with the token; when the backend answers 2xx,
    /// TokenKit ends the session with reason `accountDeleted`, then the SDK forgets it.
    ///
    /// - Throws: `TokenRefreshError.serverRefused` when the backend refused (the session is kept).
    public func deleteAccount() async throws {
        try await auth.deleteAccount(HTTPRequest(method: .delete, url: url("/users/me")), through: api)
        try? await signOutSDK()
    }

    private func url(_ path: String) -> URL {
        backendURL.appendingPathComponent(String(path.drop { $0 == "/" }))
    }
}
