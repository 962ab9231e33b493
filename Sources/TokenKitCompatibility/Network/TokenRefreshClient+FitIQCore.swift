public import Foundation
public import Persistence
public import TokenRefresh

extension TokenRefreshClient {
    /// Creates a client for the FitIQ refresh endpoint, as FitIQCore's
    /// `TokenRefreshClient(networkClient:baseURL:apiKey:)`.
    ///
    /// It posts `{"refreshToken": "..."}` to `baseURL/api/v1/auth/refresh` with `X-API-Key` through the app's
    /// network client (``/TokenRefresh/JSONEndpointRefreshStrategy`` over ``NetworkClientTransport``); concurrent
    /// ``/TokenRefresh/TokenRefreshClient/refreshToken(_:)`` calls share one refresh.
    ///
    /// ```swift
    /// let client = TokenRefreshClient(networkClient: networkClient, baseURL: Config.baseURL, apiKey: Config.apiKey)
    /// ```
    ///
    /// - Parameters:
    ///   - networkClient: The app's network client.
    ///   - baseURL: The API's base URL.
    ///   - apiKey: The API key sent as `X-API-Key`.
    ///   - store: Where the session is kept; in memory by default (the app's persistence keeps the pair, through
    ///     ``NetworkClientProtocol/executeWithAutoRetry(request:tokenRefreshClient:authTokenPersistence:retryCount:)``).
    ///     Pass an ``AuthTokenPersistenceStore`` to keep client and persistence on one storage.
    ///   - configuration: The options.
    public init(
        networkClient: any NetworkClientProtocol, baseURL: URL, apiKey: String,
        store: any TokenStore = InMemoryTokenStore(), configuration: Configuration = Configuration()
    ) {
        self.init(
            strategy: JSONEndpointRefreshStrategy(
                baseURL: baseURL, apiKey: apiKey, transport: NetworkClientTransport(networkClient)),
            store: store, configuration: configuration)
    }
}

extension AuthTokenPersistenceProtocol {
    /// This persistence as the pair store the client's retry path reads and writes.
    var appPairStore: AppPairStore {
        AppPairStore(
            fetchRefreshToken: { try self.fetchRefreshToken() },
            fetchAccessToken: { try self.fetchAccessToken() },
            save: { try self.save(accessToken: $0, refreshToken: $1) },
            noRefreshToken: { APIError.unauthorized })
    }
}
