public import Foundation
public import TokenRefresh

/// A scriptable stand-in for an SDK that owns the session, such as Clerk or Firebase Auth:
/// it hands out JWT-shaped tokens for a mock user, changes state when the test says so, counts the calls, and
/// never touches the network.
///
/// ```swift
/// let clock = ManualClock()
/// let sdk = MockSessionProvider(now: clock.wallClock)
/// sdk.signIn(AuthUser(id: "user_2abc", firstName: "Ada"))
/// let auth = TokenRefreshClient(strategy: sdk.strategy, clock: clock, now: clock.wallClock)
/// let token = try await auth.validToken()
/// sdk.goOffline()
/// ```
///
/// The tokens are unsigned (`alg: none`): fine for a client under test, which reads claims without verifying
/// them, and refused by any verifier. Each is registered with the log check of `TokenKitLogCheck`, when a test
/// target uses it.
public final class MockSessionProvider: Sendable {
    private struct State {
        var user: AuthUser?
        var sessionID = 0
        var cached: (token: String, expires: Date)?
        var offline = false
        var revoked = false
        var issued = 0
        var calls = 0
        var forcedCalls = 0
    }

    private let state = Locked(State())
    private let now: @Sendable () -> Date
    /// How long each token lives.
    package let tokenLifetime: TimeInterval

    /// Creates a provider with no session.
    ///
    /// - Parameters:
    ///   - tokenLifetime: How long each token lives; 60 s by default, as Clerk's session tokens.
    ///   - now: The wall clock; pass a `ManualClock`'s `wallClock`.
    public init(tokenLifetime: TimeInterval = 60, now: @escaping @Sendable () -> Date = { Date() }) {
        self.tokenLifetime = tokenLifetime
        self.now = now
    }

    /// The strategy to give a `TokenRefreshClient`: the SDK's token, and the mock user as the profile (so
    /// `TokenRefreshClient.currentUser` is the user the test signed in).
    public var strategy: SDKTokenStrategy {
        SDKTokenStrategy { [self] forceRefresh in
            try self.token(forceRefresh: forceRefresh)
        } user: { [self] in
            self.user
        }
    }

    /// The signed-in user, if any.
    public var user: AuthUser? { state.withLock { $0.user } }
    /// How many times a token was asked for.
    package var tokenCalls: Int { state.withLock { $0.calls } }
    /// How many of those asked to skip the cache (after a 401).
    public var forcedTokenCalls: Int { state.withLock { $0.forcedCalls } }
    /// How many distinct tokens were minted.
    package var issuedTokens: Int { state.withLock { $0.issued } }

    /// Starts a session for `user`, as the SDK's sign-in would.
    ///
    /// - Parameter user: The user.
    public func signIn(_ user: AuthUser) {
        state.withLock { state in
            state.user = user
            state.sessionID += 1
            state.cached = nil
            state.revoked = false
        }
        SecretCrossings.report(.secret(user.id, .userID), origin: "MockSessionProvider")
    }

    /// Ends the session on the SDK's side (signed out on another device): the next call returns `nil`.
    public func signOut() {
        state.withLock { state in
            state.user = nil
            state.cached = nil
        }
    }

    /// Drops the cached token, so the next call mints a new one.
    package func expireToken() { state.withLock { $0.cached = nil } }

    /// Makes every call fail with `URLError(.notConnectedToInternet)` until ``comeOnline()``.
    public func goOffline() { state.withLock { $0.offline = true } }

    /// Ends ``goOffline()``.
    public func comeOnline() { state.withLock { $0.offline = false } }

    /// Revokes the session on the server's side: the next call throws `TokenRefreshError.refreshTokenRejected`.
    public func revoke() {
        state.withLock { state in
            state.revoked = true
            state.cached = nil
        }
    }

    /// The SDK's `getToken(skipCache:)`: the cached token while it is valid (unless `forceRefresh`), a new one
    /// otherwise.
    ///
    /// - Parameter forceRefresh: Whether to skip the cache.
    /// - Returns: The token, or `nil` without a session.
    /// - Throws: `URLError(.notConnectedToInternet)` while offline; `TokenRefreshError.refreshTokenRejected`
    ///   once revoked.
    package func token(forceRefresh: Bool = false) throws -> String? {
        let date = now()
        let minted: String? = try state.withLock { state in
            state.calls += 1
            if forceRefresh { state.forcedCalls += 1 }
            if state.offline { throw URLError(.notConnectedToInternet) }
            if state.revoked { throw TokenRefreshError.refreshTokenRejected }
            guard let user = state.user else { return nil }
            if !forceRefresh, let cached = state.cached, cached.expires > date { return cached.token }
            state.issued += 1
            let token = Self.jwt(
                sub: user.id, sid: "sess_mock_\(state.sessionID)", iat: date, lifetime: tokenLifetime,
                serial: state.issued)
            state.cached = (token, date.addingTimeInterval(tokenLifetime))
            return token
        }
        if let minted { SecretCrossings.report(.secret(minted, .accessToken), origin: "MockSessionProvider") }
        return minted
    }

    private static func jwt(sub: String, sid: String, iat: Date, lifetime: TimeInterval, serial: Int) -> String {
        let issued = Int(iat.timeIntervalSince1970)
        let header = #"{"alg":"none","typ":"JWT"}"#
        let payload =
            #"{"sub":"\#(sub)","sid":"\#(sid)","iat":\#(issued),"exp":\#(issued + Int(lifetime)),"#
            + #""jti":"mock-\#(serial)","azp":"https://app.example.com"}"#
        return base64URL(header) + "." + base64URL(payload) + "."
    }

    private static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
