import DemoAppSupport
import Foundation
import TokenKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One of FitIQ's five API clients, written as the unification analysis migrates them: the token comes from the
/// app's persistence, and `networkClient.executeWithAutoRetry(request:tokenRefreshClient:authTokenPersistence:)`
/// replaces each client's own `executeWithRetry` (refresh once, shared by all, save, retry once).
protocol FitIQAPI: Sendable {
    /// A name for the output.
    var name: String { get }
    /// One typical call.
    func fetch() async throws
}

/// What every API client holds, as FitIQ's clients do.
struct APIClientBase: Sendable {
    let networkClient: any NetworkClientProtocol
    let tokenRefreshClient: TokenRefreshClient
    let authTokenPersistence: any AuthTokenPersistenceProtocol
    let baseURL: URL

    /// Sends `method path` with the stored access token and returns the body of a 2xx answer.
    func call(_ method: String, _ path: String, body: Data? = nil) async throws -> Data {
        var request = URLRequest(url: baseURL.appending(path: path))
        request.httpMethod = method
        if let body {
            request.httpBody = body
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        if let accessToken = try authTokenPersistence.fetchAccessToken() {
            request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization")
        }
        // The demo's one addition: the attempts are logged, to tell a token that expired in flight (a slow machine)
        // from a failure of the library.
        let attempts = AttemptLog()
        let (data, response): (Data, HTTPURLResponse)
        do {
            (data, response) = try await AttemptLog.$current.withValue(attempts) {
                try await networkClient.executeWithAutoRetry(
                    request: request,
                    tokenRefreshClient: tokenRefreshClient,
                    authTokenPersistence: authTokenPersistence
                )
            }
        } catch let error as APIError where error == .unauthorized && attempts.retryOutlivedItsToken {
            throw TokenOutlivedRequest()
        }
        guard (200..<300).contains(response.statusCode) else {
            throw DemoFailure("\(method) /\(path) answered HTTP \(response.statusCode)")
        }
        return data
    }
}

/// `GET /api/v1/progress` (`ProgressAPIClient.swift`).
struct ProgressAPIClient: FitIQAPI {
    let base: APIClientBase
    var name: String { "progress" }
    func fetch() async throws { _ = try await base.call("GET", "api/v1/progress") }
}

/// `GET /api/v1/sleep` (`SleepAPIClient.swift`).
struct SleepAPIClient: FitIQAPI {
    let base: APIClientBase
    var name: String { "sleep" }
    func fetch() async throws { _ = try await base.call("GET", "api/v1/sleep") }
}

/// `GET /api/v1/nutrition` (`NutritionAPIClient.swift`).
struct NutritionAPIClient: FitIQAPI {
    let base: APIClientBase
    var name: String { "nutrition" }
    func fetch() async throws { _ = try await base.call("GET", "api/v1/nutrition") }
}

/// `POST /api/v1/photo-recognition` with a (tiny, fake) photo; the body is replayed on a retry
/// (`PhotoRecognitionAPIClient.swift`).
struct PhotoRecognitionAPIClient: FitIQAPI {
    let base: APIClientBase
    var name: String { "photo" }
    func fetch() async throws {
        _ = try await base.call("POST", "api/v1/photo-recognition", body: Data(repeating: 0xFF, count: 512))
    }
}

/// `POST /api/v1/health-data/sync` with a batch of HealthKit samples (`RemoteHealthDataSyncClient.swift`, the
/// fifth client the analysis names); the batch is replayed on a retry.
struct RemoteHealthDataSyncClient: FitIQAPI {
    let base: APIClientBase
    var name: String { "health sync" }
    func fetch() async throws {
        let batch = Data(#"{"samples":[{"type":"steps","value":8421},{"type":"heartRate","value":62}]}"#.utf8)
        _ = try await base.call("POST", "api/v1/health-data/sync", body: batch)
    }
}
