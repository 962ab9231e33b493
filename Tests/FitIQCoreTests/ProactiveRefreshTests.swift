import Foundation
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// FitIQ's headline feature: `willExpireSoon` turns true five minutes before expiry, so the app refreshes ahead of
// the 401. These tests build tokens every way the apps do and read the property forms against the system clock.

/// A compact JWT with the given numeric claims (the signature is a fake: nothing here verifies it).
private func jwt(iat: Int? = nil, exp: Int) -> String {
    let iatMember = iat.map { #""iat":\#($0),"# } ?? ""
    let token = JWTBuilder.token(
        claims: #"{"sub":"user-7",\#(iatMember)"exp":\#(exp)}"#, header: #"{"alg":"HS256","typ":"JWT"}"#,
        signature: Data("sig".utf8))
    TestSecrets.shared.register(token, as: .accessToken)
    return token
}

/// The ways the FitIQ and Lume apps get an `AuthToken` whose receipt time is unknown.
enum SeedConstruction: String, CaseIterable, CustomStringConvertible, Sendable {
    /// FitIQ: `AuthToken.withParsedExpiration(accessToken:refreshToken:)` over the two stored strings.
    case parsedFromStoredStrings
    /// The same, where the JWT carries `iat` too (a 15-minute token).
    case parsedFromStoredStringsWithIssuedAt
    /// `authTokenPersistence.fetchToken()`.
    case fetchToken
    /// The memberwise `AuthToken(accessToken:refreshToken:expiresAt:)`.
    case memberwise
    /// Lume's JSON in the Keychain, decoded into TokenKit's `AuthToken`.
    case lumeJSON

    var description: String { rawValue }

    /// A token built this way that expires `secondsLeft` from now (by the system clock).
    func token(secondsLeft: Int) throws -> AuthToken {
        let now = AuthToken.systemNow()
        let exp = Int(now.timeIntervalSince1970.rounded(.down)) + secondsLeft
        let refreshToken = "proactive-refresh-\(rawValue)"
        TestSecrets.shared.register(refreshToken, as: .refreshToken)
        switch self {
        case .parsedFromStoredStrings:
            return AuthToken.withParsedExpiration(accessToken: jwt(exp: exp), refreshToken: refreshToken)
        case .parsedFromStoredStringsWithIssuedAt:
            return AuthToken.withParsedExpiration(
                accessToken: jwt(iat: exp - 900, exp: exp), refreshToken: refreshToken)
        case .fetchToken:
            let persistence = KeychainAuthTokenAdapter()
            try persistence.save(accessToken: jwt(iat: exp - 900, exp: exp), refreshToken: refreshToken)
            return try #require(try persistence.fetchToken())
        case .memberwise:
            return AuthToken(
                accessToken: "opaque-proactive-access", refreshToken: refreshToken,
                expiresAt: Date(timeIntervalSince1970: TimeInterval(exp)))
        case .lumeJSON:
            let old = OldLumeAuthToken(
                accessToken: "opaque-lume-access", refreshToken: refreshToken,
                expiresAt: Date(timeIntervalSince1970: TimeInterval(exp)))
            return try JSONDecoder().decode(AuthToken.self, from: JSONEncoder().encode(old))
        }
    }
}

@Suite(.logLeakCheck()) struct ProactiveRefreshTests {
    @Test(arguments: SeedConstruction.allCases, [240, 60, 5])
    func willExpireSoonFollowsTheFiveMinuteThresholdForEveryWayTheSeedBuildsAToken(
        construction: SeedConstruction, secondsLeft: Int
    ) throws {
        let token = try construction.token(secondsLeft: secondsLeft)
        #expect(token.willExpireSoon, "\(secondsLeft) s before expiry is within five minutes")
        #expect(token.isExpired == (secondsLeft <= 10), "the 10-second leeway holds at \(secondsLeft) s")
        #expect(token.isValid == (secondsLeft > 10))
    }

    @Test(arguments: SeedConstruction.allCases)
    func aTokenWithMoreThanFiveMinutesLeftIsNotExpiringSoon(construction: SeedConstruction) throws {
        let token = try construction.token(secondsLeft: 600)
        #expect(!token.willExpireSoon)
        #expect(!token.isExpired)
    }

    /// Clerk's session tokens live 60 s. With the lifetime known, five minutes would mean "refresh on every
    /// call": the threshold is a third of the lifetime instead.
    @Test func aSixtySecondTokenWithAKnownLifetimeIsNotExpiringSoonForItsFirstHalf() {
        let received = Date(timeIntervalSince1970: 1_800_000_000)
        let token = AuthToken.withParsedExpiration(
            accessToken: jwt(iat: 1_800_000_000, exp: 1_800_000_060), refreshToken: nil, receivedAt: received)
        #expect(!token.willExpireSoon(at: received))
        #expect(!token.willExpireSoon(at: received.addingTimeInterval(30)))
        #expect(token.willExpireSoon(at: received.addingTimeInterval(40)))
        #expect(!token.isExpired(at: received.addingTimeInterval(50)))
        #expect(token.isExpired(at: received.addingTimeInterval(55)))
    }

    /// FitIQ's persistence backs the client; its pair is rebuilt from the two strings on restore, so the client
    /// does not know when it was received. Four minutes before expiry, `validToken()` refreshes ahead of time.
    @Test(arguments: [240, 60])
    func theClientRefreshesAheadOfExpiryATokenRestoredFromTheAppsPersistence(secondsLeft: Int) async throws {
        let clock = ManualClock(startDate: AuthToken.systemNow())
        let backend = AnalysisBackend(clock: clock)
        let persistence = KeychainAuthTokenAdapter()
        let login = backend.login()  // a 15-minute JWT with iat and exp
        try persistence.save(accessToken: login.accessToken, refreshToken: login.refreshToken)
        clock.advance(by: .seconds(900 - secondsLeft))

        let client = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(
                baseURL: AnalysisBackend.baseURL, apiKey: AnalysisBackend.apiKey,
                transport: NetworkClientTransport(BackendNetworkClient(backend: backend)), now: clock.wallClock),
            store: AuthTokenPersistenceStore(persistence), clock: clock, now: clock.wallClock)
        #expect(await client.restoreSession() == .signedIn(userID: nil))
        let token = try await client.validToken()
        #expect(backend.snapshot.refreshes == 1, "refreshed \(secondsLeft) s ahead of expiry")
        #expect(token.accessToken == backend.snapshot.access)
        #expect(try persistence.fetchAccessToken() == backend.snapshot.access)
    }

    @Test func theClientDoesNotRefreshATokenRestoredWithMoreThanFiveMinutesLeft() async throws {
        let clock = ManualClock(startDate: AuthToken.systemNow())
        let backend = AnalysisBackend(clock: clock)
        let persistence = KeychainAuthTokenAdapter()
        let login = backend.login()
        try persistence.save(accessToken: login.accessToken, refreshToken: login.refreshToken)
        clock.advance(by: .seconds(500))  // 400 s left

        let client = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(
                baseURL: AnalysisBackend.baseURL, apiKey: AnalysisBackend.apiKey,
                transport: NetworkClientTransport(BackendNetworkClient(backend: backend)), now: clock.wallClock),
            store: AuthTokenPersistenceStore(persistence), clock: clock, now: clock.wallClock)
        _ = await client.restoreSession()
        #expect(try await client.validToken().accessToken == login.accessToken)
        #expect(backend.snapshot.refreshes == 0)
    }

    /// How an SDK's 60-second token says how long it lives.
    enum SixtySecondToken: String, CaseIterable, CustomStringConvertible, Sendable {
        /// An opaque token with `expires_in`.
        case expiresIn
        /// A JWT with `iat` and `exp` (Clerk's session token).
        case jwtWithIssuedAt
        /// A JWT with `exp` alone.
        case jwtWithExpOnly

        var description: String { rawValue }

        func response(serial: Int, issuedAt: Date) -> TokenResponse {
            let iat = Int(issuedAt.timeIntervalSince1970)
            switch self {
            case .expiresIn:
                let access = "sdk-session-token-\(serial)"
                TestSecrets.shared.register(access, as: .accessToken)
                return TokenResponse(accessToken: access, expiresIn: 60)
            case .jwtWithIssuedAt: return TokenResponse(accessToken: jwt(iat: iat, exp: iat + 60))
            case .jwtWithExpOnly: return TokenResponse(accessToken: jwt(exp: iat + 60))
            }
        }
    }

    /// A 60-second token from an SDK, its lifetime known: one refresh in its second half, not one per call.
    @Test(arguments: SixtySecondToken.allCases)
    func theClientRefreshesASixtySecondSDKTokenOnceNotOnEveryCall(kind: SixtySecondToken) async throws {
        let clock = ManualClock(startDate: Date(timeIntervalSince1970: 1_800_000_000))
        let issued = Locked(0)
        let strategy = ClosureRefreshStrategy { _ in
            let serial = issued.withLock { count -> Int in
                count += 1
                return count
            }
            return kind.response(serial: serial, issuedAt: clock.date)
        }
        let client = TokenRefreshClient(strategy: strategy, clock: clock, now: clock.wallClock)
        _ = try await client.signIn(
            with: kind.response(serial: 0, issuedAt: clock.date).token(receivedAt: clock.date))
        for _ in 0..<5 { _ = try await client.validToken() }
        #expect(issued.withLock { $0 } == 0, "a fresh 60-second token is not refreshed at once")
        clock.advance(by: .seconds(25))
        _ = try await client.validToken()
        #expect(issued.withLock { $0 } == 0, "35 s left of 60 is not soon")
        clock.advance(by: .seconds(15))
        for _ in 0..<5 { _ = try await client.validToken() }
        #expect(issued.withLock { $0 } == 1, "20 s left: one refresh, then the new token is fresh")
    }
}
