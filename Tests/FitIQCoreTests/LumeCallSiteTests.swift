import Foundation
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The Lume app's code after the migration, as FitIQCore's migration writes it.

/// Lume's configuration singleton.
final class AppConfiguration: Sendable {
    static let shared = AppConfiguration()
    var backendBaseURL: URL { AnalysisBackend.baseURL }
    var apiKey: String { AnalysisBackend.apiKey }
}

/// The Keychain token storage the analysis names, standing in for the Keychain (this test runs on Linux too).
typealias KeychainAuthTokenStorage = KeychainAuthTokenAdapter

final class LumeAppDependencies {
    let networkClient: NetworkClientProtocol

    init(networkClient: NetworkClientProtocol) {
        self.networkClient = networkClient
    }

    // After
    private(set) lazy var authTokenStorage: AuthTokenPersistenceProtocol = {
        KeychainAuthTokenStorage()
    }()

    private(set) lazy var tokenRefreshClient: TokenRefreshClient = {
        TokenRefreshClient(
            networkClient: networkClient,
            baseURL: AppConfiguration.shared.backendBaseURL,
            apiKey: AppConfiguration.shared.apiKey
        )
    }()
}

/// Lume's token as its old code stored it in the Keychain.
struct OldLumeAuthToken: Codable, Equatable {
    let accessToken: String
    let refreshToken: String
    let expiresAt: Date
}

@Suite(.logLeakCheck()) struct LumeCallSiteTests {
    @Test func lumeCallsThroughExecuteWithAutoRetryWithNoManualRefresh() async throws {
        let clock = ManualClock(startDate: AuthToken.systemNow())
        let backend = AnalysisBackend(clock: clock, style: .snakeCase)
        let dependencies = LumeAppDependencies(networkClient: BackendNetworkClient(backend: backend))
        let storage = dependencies.authTokenStorage
        let login = backend.login()
        // What the old Lume code left in the Keychain, read straight into TokenKit's AuthToken.
        let old = OldLumeAuthToken(
            accessToken: login.accessToken, refreshToken: login.refreshToken,
            expiresAt: clock.date.addingTimeInterval(900))
        let token = try JSONDecoder().decode(AuthToken.self, from: JSONEncoder().encode(old))
        try storage.saveToken(token)
        backend.persistedAccessToken.withLock { $0 = { try? storage.fetchAccessToken() } }

        let networkClient = dependencies.networkClient
        let tokenRefreshClient = dependencies.tokenRefreshClient
        @Sendable func fetchProgress() async throws -> Data {
            var request = URLRequest(
                url: AppConfiguration.shared.backendBaseURL.appendingPathComponent("api/v1/progress"))
            if let accessToken = try storage.fetchToken()?.accessToken {
                request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization")
            }
            return try await networkClient.executeWithAutoRetry(
                request: request, tokenRefreshClient: tokenRefreshClient, authTokenPersistence: storage
            ).0
        }
        _ = try await fetchProgress()
        clock.advance(by: .seconds(1000))
        try await withThrowingTaskGroup(of: Data.self) { group in
            for _ in 0..<20 { group.addTask { try await fetchProgress() } }
            try await group.waitForAll()
        }
        #expect(backend.snapshot.refreshes == 1)
        #expect(backend.snapshot.requestsAheadOfPersistence == 0)
        #expect(try storage.fetchToken()?.refreshToken == backend.snapshot.refresh)
    }

    @Test func lumesStoredJSONDecodesIntoAuthTokenBesideTokenKitsOwnEncoding() throws {
        let expiresAt = Date(timeIntervalSince1970: 1_800_000_900)
        let old = OldLumeAuthToken(
            accessToken: "lume-stored-access-token", refreshToken: "lume-stored-refresh-token", expiresAt: expiresAt)
        let decoded = try JSONDecoder().decode(AuthToken.self, from: JSONEncoder().encode(old))
        #expect(decoded.accessToken == old.accessToken && decoded.refreshToken == old.refreshToken)
        #expect(decoded.expiresAt == expiresAt)
        #expect(decoded.isExpired(at: expiresAt))
        #expect(!decoded.isExpired(at: expiresAt.addingTimeInterval(-60)))

        // An ISO 8601 `expiresAt`, and a decoder with its own date strategy.
        let iso =
            Data(
                #"{"accessToken":"lume-stored-access-token","refreshToken":"lume-stored-refresh-token","#.utf8)
            + Data(#""expiresAt":"2027-01-15T08:15:00Z"}"#.utf8)
        #expect(try JSONDecoder().decode(AuthToken.self, from: iso).expiresAt == expiresAt)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        let seconds =
            Data(
                #"{"accessToken":"lume-stored-access-token","refreshToken":"lume-stored-refresh-token","#.utf8)
            + Data(#""expiresAt":1800000900}"#.utf8)
        #expect(try decoder.decode(AuthToken.self, from: seconds).expiresAt == expiresAt)

        // TokenKit's own encoding still round-trips exactly.
        let own = AuthToken(
            accessToken: "tokenkit-access-token", refreshToken: "tokenkit-refresh-token", scope: "read",
            receivedAt: Date(timeIntervalSince1970: 1_800_000_000), lifetime: 900)
        #expect(try JSONDecoder().decode(AuthToken.self, from: JSONEncoder().encode(own)) == own)
    }

    @Test func anyTokenStoreServesLumesTokenStorageProtocol() async throws {
        let store = InMemoryTokenStore()
        let tokenStorage: TokenStorageProtocol = TokenStoreTokenStorage(store: store)
        #expect(try await tokenStorage.getToken() == nil)
        let token = TestSecrets.shared.register(
            AuthToken(
                accessToken: "lume-storage-access", refreshToken: "lume-storage-refresh",
                expiresAt: Date(timeIntervalSince1970: 1_800_000_900)))
        try await tokenStorage.saveToken(token)
        #expect(try await tokenStorage.getToken() == token)
        #expect(await store.load(account: "default").session?.generation == 1)
        try await tokenStorage.deleteToken()
        #expect(try await tokenStorage.getToken() == nil)
    }

    @Test func lumesOwnStorageBacksATokenRefreshClient() async throws {
        actor LumeKeychainStorage: TokenStorageProtocol {
            var token: AuthToken?
            init(_ token: AuthToken?) { self.token = token }
            func saveToken(_ token: AuthToken) async throws { self.token = token }
            func getToken() async throws -> AuthToken? { token }
            func deleteToken() async throws { token = nil }
        }
        let clock = ManualClock(startDate: AuthToken.systemNow())
        let backend = AnalysisBackend(clock: clock)
        let login = backend.login()
        let storage = LumeKeychainStorage(
            AuthToken.withParsedExpiration(accessToken: login.accessToken, refreshToken: login.refreshToken))
        let client = TokenRefreshClient(
            networkClient: BackendNetworkClient(backend: backend), baseURL: AppConfiguration.shared.backendBaseURL,
            apiKey: AppConfiguration.shared.apiKey, store: TokenStorageStore(storage))
        #expect(await client.restoreSession() == .signedIn(userID: "user-1"))
        let refreshed = try await client.refreshToken(afterRejectionOf: login.accessToken)
        #expect(try await storage.getToken() == refreshed, "the rotated pair is in Lume's storage")
        #expect(backend.snapshot.refreshes == 1)
    }
}
