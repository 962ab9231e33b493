import Foundation
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The FitIQ app's code after the migration, as FitIQCore's migration writes it.

enum Config {
    static var baseURL: URL { AnalysisBackend.baseURL }
    static var apiKey: String { AnalysisBackend.apiKey }
}

final class AppDependencies {
    let networkClient: NetworkClientProtocol
    let authTokenPersistence: AuthTokenPersistenceProtocol

    init(networkClient: NetworkClientProtocol, authTokenPersistence: AuthTokenPersistenceProtocol) {
        self.networkClient = networkClient
        self.authTokenPersistence = authTokenPersistence
    }

    // In AppDependencies
    lazy var tokenRefreshClient: TokenRefreshClient = {
        TokenRefreshClient(
            networkClient: networkClient,
            baseURL: Config.baseURL,
            apiKey: Config.apiKey
        )
    }()

    lazy var progressAPIClient = ProgressAPIClient(
        networkClient: networkClient, tokenRefreshClient: tokenRefreshClient,
        authTokenPersistence: authTokenPersistence)
}

/// One of FitIQ's API clients, with the analysis's `executeWithAutoRetry` call in place of its own
/// `executeWithRetry`.
final class ProgressAPIClient: Sendable {
    let networkClient: NetworkClientProtocol
    let tokenRefreshClient: TokenRefreshClient
    let authTokenPersistence: AuthTokenPersistenceProtocol

    init(
        networkClient: NetworkClientProtocol, tokenRefreshClient: TokenRefreshClient,
        authTokenPersistence: AuthTokenPersistenceProtocol
    ) {
        self.networkClient = networkClient
        self.tokenRefreshClient = tokenRefreshClient
        self.authTokenPersistence = authTokenPersistence
    }

    struct Progress: Decodable { let steps: Int }

    func fetchProgress() async throws -> Int {
        var request = URLRequest(url: Config.baseURL.appendingPathComponent("/api/v1/progress"))
        request.httpMethod = "GET"
        if let accessToken = try authTokenPersistence.fetchAccessToken() {
            request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization")
        }

        // In API clients - use executeWithAutoRetry
        let (data, response) = try await networkClient.executeWithAutoRetry(
            request: request,
            tokenRefreshClient: tokenRefreshClient,
            authTokenPersistence: authTokenPersistence
        )

        guard response.statusCode == 200 else { throw APIError.httpStatus(response.statusCode) }
        return try JSONDecoder().decode(Progress.self, from: data).steps
    }
}

@Suite(.logLeakCheck()) struct FitIQCallSiteTests {
    /// A signed-in app: the login's pair is in the app's persistence.
    static func app(
        style: AnalysisBackend.AnswerStyle = .camelCase
    ) throws -> (AnalysisBackend, KeychainAuthTokenAdapter, AppDependencies, ManualClock) {
        // The seed's client reads the system clock; the backend's clock starts there and is moved by the test.
        let clock = ManualClock(startDate: AuthToken.systemNow())
        let backend = AnalysisBackend(clock: clock, style: style)
        let persistence = KeychainAuthTokenAdapter()
        let login = backend.login()
        try persistence.save(accessToken: login.accessToken, refreshToken: login.refreshToken)
        backend.persistedAccessToken.withLock { $0 = { try? persistence.fetchAccessToken() } }
        let dependencies = AppDependencies(
            networkClient: BackendNetworkClient(backend: backend), authTokenPersistence: persistence)
        return (backend, persistence, dependencies, clock)
    }

    @Test(arguments: AnalysisBackend.AnswerStyle.allCases)
    func fiftyConcurrentCallsAfterExpiryCauseOneRefreshAndThePairIsSavedBeforeAnyRetry(
        style: AnalysisBackend.AnswerStyle
    ) async throws {
        let (backend, persistence, dependencies, clock) = try Self.app(style: style)
        let api = dependencies.progressAPIClient
        #expect(try await api.fetchProgress() == 1234)
        #expect(backend.snapshot.refreshes == 0)

        clock.advance(by: .seconds(1000))  // the access token (15 minutes) has expired
        let results = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<50 { group.addTask { try await api.fetchProgress() } }
            return try await group.reduce(into: []) { $0.append($1) }
        }

        #expect(results == Array(repeating: 1234, count: 50))
        let state = backend.snapshot
        #expect(state.refreshes == 1, "50 concurrent 401s share one refresh")
        #expect(state.unauthorizedAnswers >= 1)
        #expect(state.requestsAheadOfPersistence == 0, "the rotated pair was saved before any retry")
        #expect(state.missingAPIKey == 0 && state.nonCamelCaseRequests == 0 && state.rejectedRefreshes == 0)
        #expect(try persistence.fetchAccessToken() == state.access)
        #expect(try persistence.fetchRefreshToken() == state.refresh)
    }

    /// FitIQ's own login code saves a new pair while the client still holds the session it refreshed earlier.
    @Test(arguments: [1, 20])
    func aPairFromASignInOutsideTokenKitIsAdoptedAndRefreshedOnce(concurrentCalls: Int) async throws {
        let (backend, persistence, dependencies, clock) = try Self.app()
        let api = dependencies.progressAPIClient
        clock.advance(by: .seconds(1000))
        #expect(try await api.fetchProgress() == 1234)  // the client now holds the refreshed session
        clock.advance(by: .seconds(10))
        let relogin = backend.login()  // the user signed out and in again through the app's login screen
        try persistence.save(accessToken: relogin.accessToken, refreshToken: relogin.refreshToken)
        clock.advance(by: .seconds(1000))

        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<concurrentCalls { group.addTask { try await api.fetchProgress() } }
            for try await steps in group { #expect(steps == 1234) }
        }
        #expect(backend.snapshot.refreshes == 2, "one refresh per expiry, the second with the new login's token")
        #expect(backend.snapshot.rejectedRefreshes == 0)
        #expect(backend.snapshot.requestsAheadOfPersistence == 0)
        #expect(dependencies.tokenRefreshClient.currentToken?.accessToken == backend.snapshot.access)
    }

    @Test func aSecondUnauthorizedIsThrownNotLoopedOn() async throws {
        let (backend, _, dependencies, _) = try Self.app()
        backend.state.withLock { $0.rejectEverything = true }
        await #expect(throws: APIError.unauthorized) { try await dependencies.progressAPIClient.fetchProgress() }
        #expect(backend.snapshot.resourceRequests == 2, "the request and one retry")
        #expect(backend.snapshot.refreshes == 1)
    }

    @Test func aRejectedRefreshTokenEndsTheSessionWithoutARetry() async throws {
        let (backend, persistence, dependencies, clock) = try Self.app()
        try persistence.save(
            accessToken: try #require(try persistence.fetchAccessToken()), refreshToken: "fitiq-revoked-refresh")
        clock.advance(by: .seconds(1000))
        await #expect(throws: TokenRefreshError.refreshTokenRejected) {
            try await dependencies.progressAPIClient.fetchProgress()
        }
        #expect(backend.snapshot.rejectedRefreshes == 1)
        #expect(backend.snapshot.resourceRequests == 1)

        // The dead refresh token is remembered: the next 401 fails at once, without another refresh request.
        await #expect(throws: TokenRefreshError.refreshTokenRejected) {
            try await dependencies.progressAPIClient.fetchProgress()
        }
        #expect(backend.snapshot.rejectedRefreshes == 1)
    }

    @Test func withoutAStoredRefreshTokenTheUnauthorizedIsThrown() async throws {
        let (backend, persistence, dependencies, clock) = try Self.app()
        try persistence.deleteTokens()
        clock.advance(by: .seconds(1000))
        await #expect(throws: APIError.unauthorized) { try await dependencies.progressAPIClient.fetchProgress() }
        #expect(backend.snapshot.refreshes == 0)
    }

    @Test func refreshTokenReturnsAnAuthTokenAsTheSeedsClientDid() async throws {
        let (backend, persistence, dependencies, _) = try Self.app(style: .snakeCaseInData)
        let savedRefreshToken = try #require(try persistence.fetchRefreshToken())
        let newToken: AuthToken = try await dependencies.tokenRefreshClient.refreshToken(savedRefreshToken)
        #expect(newToken.accessToken == backend.snapshot.access)
        #expect(newToken.refreshToken == backend.snapshot.refresh)
        #expect(newToken.parseUserIdFromJWT() == "user-1")
        #expect(newToken.validate().isEmpty)
    }

    /// The FitIQ API clients' own retry matches `APIError` this way; it compiles against TokenKit's.
    @Test func theSeedsAPIErrorMatchCompiles() {
        func isUnauthorized(_ thrown: any Error, retryCount: Int) -> Bool {
            guard let error = thrown as? APIError else { return false }
            if case .unauthorized = error, retryCount < 1 { return true }
            return false
        }
        #expect(isUnauthorized(APIError.unauthorized, retryCount: 0))
        #expect(!isUnauthorized(APIError.unauthorized, retryCount: 1))
        #expect(!isUnauthorized(APIError.httpStatus(500), retryCount: 0))
        #expect(APIError.httpStatus(401) == .unauthorized)
        #expect("\(APIError.httpStatus(503))" == "APIError.httpStatus(503)")
    }
}
