import DemoAppSupport
import Foundation
import HTTPTypes
import TokenKit

/// One of FitIQ's API clients. Each is a few lines: the shared `AuthenticatedClient` attaches the token,
/// and after a 401 refreshes it once (shared by every client) and retries.
protocol FitIQAPI: Sendable {
    /// A name for the output.
    var name: String { get }
    /// One typical call.
    func fetch() async throws
}

/// `GET /api/v1/progress`.
struct ProgressAPI: FitIQAPI {
    let api: AuthenticatedClient
    let baseURL: URL
    var name: String { "progress" }
    func fetch() async throws { _ = try await api.call(.get, baseURL, "api/v1/progress") }
}

/// `GET /api/v1/sleep`.
struct SleepAPI: FitIQAPI {
    let api: AuthenticatedClient
    let baseURL: URL
    var name: String { "sleep" }
    func fetch() async throws { _ = try await api.call(.get, baseURL, "api/v1/sleep") }
}

/// `GET /api/v1/nutrition`.
struct NutritionAPI: FitIQAPI {
    let api: AuthenticatedClient
    let baseURL: URL
    var name: String { "nutrition" }
    func fetch() async throws { _ = try await api.call(.get, baseURL, "api/v1/nutrition") }
}

/// `POST /api/v1/photo-recognition` with a (tiny, fake) photo; the body is replayed on a retry.
struct PhotoRecognitionAPI: FitIQAPI {
    let api: AuthenticatedClient
    let baseURL: URL
    var name: String { "photo" }
    func fetch() async throws {
        _ = try await api.call(.post, baseURL, "api/v1/photo-recognition", body: Data(repeating: 0xFF, count: 512))
    }
}

/// All four clients over one authenticated client.
func fitIQClients(_ api: AuthenticatedClient, _ baseURL: URL) -> [any FitIQAPI] {
    [
        ProgressAPI(api: api, baseURL: baseURL), SleepAPI(api: api, baseURL: baseURL),
        NutritionAPI(api: api, baseURL: baseURL), PhotoRecognitionAPI(api: api, baseURL: baseURL),
    ]
}
