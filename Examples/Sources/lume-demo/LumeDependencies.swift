import DemoAppSupport
import Foundation
import TokenKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Lume's composition root after the migration, with the analysis's `authTokenStorage` and `tokenRefreshClient`
/// blocks as written. The Keychain is the simulated one.
final class LumeDependencies {
    let networkClient: any NetworkClientProtocol
    let keychain: SimulatedKeychain
    let backendBaseURL: URL
    let apiKey: String

    init(networkClient: any NetworkClientProtocol, keychain: SimulatedKeychain, backendBaseURL: URL, apiKey: String) {
        self.networkClient = networkClient
        self.keychain = keychain
        self.backendBaseURL = backendBaseURL
        self.apiKey = apiKey
    }

    private(set) lazy var authTokenStorage: any AuthTokenPersistenceProtocol = {
        KeychainAuthTokenStorage(keychain: keychain)
    }()

    private(set) lazy var tokenRefreshClient: TokenRefreshClient = {
        TokenRefreshClient(
            networkClient: networkClient,
            baseURL: backendBaseURL,
            apiKey: apiKey
        )
    }()

    /// Lume's HTTP client, which now calls `executeWithAutoRetry` instead of refreshing by hand.
    lazy var httpClient = LumeHTTPClient(
        networkClient: networkClient, tokenRefreshClient: tokenRefreshClient, authTokenStorage: authTokenStorage,
        baseURL: backendBaseURL)
}

/// Lume's HTTP client after the migration: the token comes from `authTokenStorage`, a 401 is refreshed and
/// retried once by `executeWithAutoRetry`, and a refused refresh token ends the session (the tokens are
/// deleted, and the app shows its sign-in screen).
struct LumeHTTPClient: Sendable {
    let networkClient: any NetworkClientProtocol
    let tokenRefreshClient: TokenRefreshClient
    let authTokenStorage: any AuthTokenPersistenceProtocol
    let baseURL: URL

    /// `GET path`; returns the body of a 2xx answer.
    func get(_ path: String) async throws -> Data {
        var request = URLRequest(url: baseURL.appending(path: path))
        if let accessToken = try authTokenStorage.fetchAccessToken() {
            request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization")
        }
        let attempts = AttemptLog()  // the demo's addition: tells a token that expired in flight apart
        do {
            let (data, response) = try await AttemptLog.$current.withValue(attempts) {
                try await networkClient.executeWithAutoRetry(
                    request: request,
                    tokenRefreshClient: tokenRefreshClient,
                    authTokenPersistence: authTokenStorage
                )
            }
            guard (200..<300).contains(response.statusCode) else {
                throw DemoFailure("GET /\(path) answered HTTP \(response.statusCode)")
            }
            return data
        } catch let error as TokenRefreshError where error.isTerminal {
            try authTokenStorage.deleteTokens()
            throw error
        } catch let error as APIError where error == .unauthorized && attempts.retryOutlivedItsToken {
            throw TokenOutlivedRequest()
        }
    }
}
