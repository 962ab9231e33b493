import DemoAppSupport
import Foundation
import TokenKit

/// FitIQ's composition root after the migration, as the unification analysis writes it: one
/// `TokenRefreshClient(networkClient:baseURL:apiKey:)`, shared by the five API clients.
final class AppDependencies {
    let networkClient: any NetworkClientProtocol
    let authTokenPersistence: any AuthTokenPersistenceProtocol
    let baseURL: URL
    let apiKey: String

    init(
        networkClient: any NetworkClientProtocol, authTokenPersistence: any AuthTokenPersistenceProtocol,
        baseURL: URL, apiKey: String
    ) {
        self.networkClient = networkClient
        self.authTokenPersistence = authTokenPersistence
        self.baseURL = baseURL
        self.apiKey = apiKey
    }

    // In AppDependencies
    lazy var tokenRefreshClient: TokenRefreshClient = {
        TokenRefreshClient(
            networkClient: networkClient,
            baseURL: baseURL,
            apiKey: apiKey,
            // The one addition to the analysis's call: a breaker for tokens that live seconds, not minutes.
            configuration: DemoRefreshConfiguration.shortLivedTokens
        )
    }()

    private var base: APIClientBase {
        APIClientBase(
            networkClient: networkClient, tokenRefreshClient: tokenRefreshClient,
            authTokenPersistence: authTokenPersistence, baseURL: baseURL)
    }

    lazy var progressAPIClient = ProgressAPIClient(base: base)
    lazy var sleepAPIClient = SleepAPIClient(base: base)
    lazy var nutritionAPIClient = NutritionAPIClient(base: base)
    lazy var photoRecognitionAPIClient = PhotoRecognitionAPIClient(base: base)
    lazy var remoteHealthDataSyncClient = RemoteHealthDataSyncClient(base: base)

    /// The five API clients.
    var apiClients: [any FitIQAPI] {
        [
            progressAPIClient, sleepAPIClient, nutritionAPIClient, photoRecognitionAPIClient,
            remoteHealthDataSyncClient,
        ]
    }
}
