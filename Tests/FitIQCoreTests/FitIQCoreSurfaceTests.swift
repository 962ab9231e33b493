import Foundation
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

@Suite(.logLeakCheck()) struct FitIQCoreSurfaceTests {
    static func jwt(iat: Int, exp: Int) -> String {
        let token = JWTBuilder.token(
            claims: #"{"sub":"surface-user","iat":\#(iat),"exp":\#(exp)}"#, header: #"{"alg":"HS256","typ":"JWT"}"#,
            signature: Data("sig".utf8))
        TestSecrets.shared.register(token, as: .accessToken)
        return token
    }

    @Test func theSeedsInitializerAndValidationErrorCompile() {
        let expiresAt = Date(timeIntervalSince1970: 1_800_000_900)
        let token = AuthToken(
            accessToken: "surface-access-token", refreshToken: "surface-refresh-token", expiresAt: expiresAt)
        #expect(token.expiresAt == expiresAt)
        #expect(token.isExpired(at: expiresAt))
        let errors: [AuthToken.ValidationError] = token.validate(now: expiresAt.addingTimeInterval(1))
        #expect(errors == [.expired])
        let noExpiry = AuthToken(accessToken: "surface-access-token", refreshToken: "surface-refresh", expiresAt: nil)
        #expect(noExpiry.validate() == [AuthToken.ValidationError.expirationUnknown])
    }

    @Test func aConformerWithTheSevenFitIQMethodsGetsTheWholeTokenMethods() throws {
        let persistence = KeychainAuthTokenAdapter()
        #expect(try persistence.fetchToken() == nil)
        // Stored two strings; the JWT expired in 2023: the rebuilt token is expired (Option B).
        try persistence.save(
            accessToken: Self.jwt(iat: 1_690_000_000, exp: 1_690_003_600), refreshToken: "surface-refresh-token")
        let token = try #require(try persistence.fetchToken())
        #expect(token.expiresAt == Date(timeIntervalSince1970: 1_690_003_600))
        #expect(token.isExpired)
        #expect(token.validate().contains(.expired))

        let next = AuthToken(
            accessToken: "surface-next-access", refreshToken: nil, receivedAt: Date(timeIntervalSince1970: 0))
        try persistence.saveToken(next)
        #expect(try persistence.fetchAccessToken() == "surface-next-access")
        #expect(try persistence.fetchToken()?.refreshToken == nil, "no refresh token is stored as empty")
        try persistence.deleteToken()
        #expect(try persistence.fetchToken() == nil)
    }

    @Test func theAppsPersistenceBacksATokenRefreshClient() async throws {
        let clock = ManualClock(startDate: AuthToken.systemNow())
        let backend = AnalysisBackend(clock: clock)
        let persistence = KeychainAuthTokenAdapter()
        let login = backend.login()
        try persistence.save(accessToken: login.accessToken, refreshToken: login.refreshToken)
        let profile = UUID()
        try persistence.saveUserProfileID(profile)
        let client = TokenRefreshClient(
            networkClient: BackendNetworkClient(backend: backend), baseURL: Config.baseURL, apiKey: Config.apiKey,
            store: AuthTokenPersistenceStore(persistence))
        #expect(await client.restoreSession() == .signedIn(userID: profile.uuidString))
        let refreshed = try await client.refreshToken(afterRejectionOf: login.accessToken)
        #expect(try persistence.fetchAccessToken() == refreshed.accessToken)
        #expect(try persistence.fetchRefreshToken() == backend.snapshot.refresh)
        try await client.signOut()
        #expect(try persistence.fetchAccessToken() == nil)
        #expect(try persistence.fetchUserProfileID() == nil)
    }

    @Test func anyTokenStoreServesTheFitIQPersistenceProtocol() async throws {
        let store = InMemoryTokenStore()
        let persistence = try await TokenStoreAuthTokenPersistence(store: store)
        let access = Self.jwt(iat: 1_800_000_000, exp: 1_800_000_900)
        try persistence.save(accessToken: access, refreshToken: "surface-store-refresh")
        let profile = UUID()
        try persistence.saveUserProfileID(profile)
        #expect(try persistence.fetchAccessToken() == access)
        #expect(try persistence.fetchUserProfileID() == profile)
        try await persistence.flush()
        let stored = try #require(await store.load(account: "default").session)
        #expect(stored.token.refreshToken == "surface-store-refresh")
        #expect(stored.userID == profile.uuidString)

        let reopened = try await TokenStoreAuthTokenPersistence(store: store)
        #expect(try reopened.fetchRefreshToken() == "surface-store-refresh")
        try reopened.deleteTokens()
        try await reopened.flush()
        #expect(await store.load(account: "default").session == nil)
    }

    @Test func theAppsPersistenceAsAStoreHonoursConditionsAndHidesItsErrors() async throws {
        struct KeychainLocked: Error, CustomStringConvertible {
            var description: String { "locked; last value surface-secret-in-error-text" }
        }
        final class LockedKeychain: AuthTokenPersistenceProtocol {
            func save(accessToken: String, refreshToken: String) throws { throw KeychainLocked() }
            func fetchAccessToken() throws -> String? { throw KeychainLocked() }
            func fetchRefreshToken() throws -> String? { throw KeychainLocked() }
            func deleteTokens() throws { throw KeychainLocked() }
            func saveUserProfileID(_ userID: UUID) throws { throw KeychainLocked() }
            func fetchUserProfileID() throws -> UUID? { throw KeychainLocked() }
            func deleteUserProfileID() throws { throw KeychainLocked() }
        }
        guard case .unavailable(let error) = await AuthTokenPersistenceStore(LockedKeychain()).load(account: "default")
        else {
            Issue.record("a throwing Keychain read is unavailable, not signed out")
            return
        }
        #expect(error == .readFailed)
        #expect(!"\(error)".contains("surface-secret-in-error-text"))

        let store = AuthTokenPersistenceStore(KeychainAuthTokenAdapter())
        let token = AuthToken(
            accessToken: "surface-conditional-access", refreshToken: "surface-conditional-refresh",
            receivedAt: Date(timeIntervalSince1970: 0))
        try await store.save(StoredSession(token: token, generation: 1), account: "default", condition: .absent)
        await #expect(throws: PersistenceError.conflict) {
            try await store.save(StoredSession(token: token, generation: 2), account: "default", condition: .absent)
        }
        await #expect(throws: PersistenceError.conflict) {
            try await store.save(
                StoredSession(token: token, generation: 2), account: "default", condition: .generation(7))
        }
        try await store.save(StoredSession(token: token, generation: 2), account: "default", condition: .generation(1))
        #expect(await store.load(account: "default").session?.generation == 2)
        try await store.remove(account: "default", condition: .generation(2))
        #expect(await store.load(account: "default").session == nil)
    }
}
