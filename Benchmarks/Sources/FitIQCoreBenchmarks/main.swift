import BenchmarkSupport
import Foundation
import TokenKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The FitIQCore surface against the core path it wraps, in one run. Target: the path through the
// FitIQCore surface takes at most 1.3x the time of the core calls it is made of.
//
// - Happy path: the FitIQ API client's call, `networkClient.executeWithAutoRetry(request:tokenRefreshClient:
//   authTokenPersistence:)` with the token read from the app's persistence, against `executeRequest(request:)`
//   with the same header (what it wraps when the server says 200).
// - After a 401 for a token another caller has replaced: the FitIQCore path (401, the stale check, the retry) against
//   the core calls it wraps: `executeRequest` (401), `TokenRefreshClient.refreshToken(afterRejectionOf:)` (the
//   core's stale rejection, no network) and `executeRequest` again.

/// Answers 200 to the current token and 401 to any other, with prebuilt values: the cheapest network client.
struct CheapNetworkClient: NetworkClientProtocol {
    let currentHeader: String
    let body = Data(#"{"steps":1234}"#.utf8)
    let response = HTTPURLResponse(
        url: URL(string: "https://api.fitiq.example/api/v1/progress")!, statusCode: 200, httpVersion: "HTTP/1.1",
        headerFields: [:])!

    func executeRequest(request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        guard request.value(forHTTPHeaderField: "Authorization") == currentHeader else { throw APIError.unauthorized }
        return (body, response)
    }
}

/// The app's persistence: two strings behind a lock. `@unchecked Sendable`: `values` only under `lock`.
final class MemoryPersistence: AuthTokenPersistenceProtocol, @unchecked Sendable {
    private let lock = NSLock()
    private var access: String?
    private var refresh: String?
    func save(accessToken: String, refreshToken: String) throws {
        lock.withLock {
            access = accessToken
            refresh = refreshToken
        }
    }
    func fetchAccessToken() throws -> String? { lock.withLock { access } }
    func fetchRefreshToken() throws -> String? { lock.withLock { refresh } }
    func deleteTokens() throws { lock.withLock { (access, refresh) = (nil, nil) } }
    func saveUserProfileID(_ userID: UUID) throws {}
    func fetchUserProfileID() throws -> UUID? { nil }
    func deleteUserProfileID() throws {}
}

/// Called once, before the measurements, to rotate the session from `old` to `current`: every 401 measured after
/// that is a stale rejection of a token this session held (a token the session never held is another session's).
struct RotateOnceStrategy: RefreshStrategy {
    let current: String
    func refresh(using refreshToken: String?) async throws -> TokenResponse {
        TokenResponse(accessToken: current, refreshToken: "refresh-current", expiresIn: 3600)
    }
}

// Everything runs in a nonisolated function: top-level code is main-actor isolated (see RetryBenchmarks).
func runBenchmarks() async throws -> Bool {
    // A realistic RS256-sized JWT (about 800 bytes).
    func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
    let now = Int(Date().timeIntervalSince1970)
    func jwt(_ id: String) -> String {
        base64URL(#"{"alg":"RS256","typ":"JWT","kid":"key-1"}"#) + "."
            + base64URL(#"{"sub":"user-1001","iat":\#(now),"exp":\#(now + 3600),"jti":"\#(id)"}"#) + "."
            + String(repeating: "s", count: 600)
    }
    let current = jwt("current")
    let old = jwt("old")
    let network = CheapNetworkClient(currentHeader: "Bearer \(current)")
    let persistence = MemoryPersistence()
    try persistence.save(accessToken: current, refreshToken: "refresh-current")
    let client = TokenRefreshClient(strategy: RotateOnceStrategy(current: current))
    try await client.signIn(
        with: AuthToken.withParsedExpiration(accessToken: old, refreshToken: "refresh-old", receivedAt: Date()))
    guard try await client.refreshToken(afterRejectionOf: old).accessToken == current else {
        print("FitIQCoreBenchmarks: the session did not rotate to the current token")
        return false
    }
    let url = URL(string: "https://api.fitiq.example/api/v1/progress")!
    var sink = 0
    let iterations = 50_000

    // Happy path.
    let core = try await Harness.nanosecondsPerOperation(iterations: iterations) {
        var request = URLRequest(url: url)
        request.setValue("Bearer \(current)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await network.executeRequest(request: request)
        sink &+= data.count &+ response.statusCode
    }
    let seed = try await Harness.nanosecondsPerOperation(iterations: iterations) {
        var request = URLRequest(url: url)
        if let token = try persistence.fetchAccessToken() {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
        let (data, response) = try await network.executeWithAutoRetry(
            request: request, tokenRefreshClient: client, authTokenPersistence: persistence)
        sink &+= data.count &+ response.statusCode
    }
    print("core:  executeRequest                      \(Harness.format(core)) per request")
    print("seed:  executeWithAutoRetry (persistence)  \(Harness.format(seed)) per request")
    let happy = Harness.report(
        "FitIQCore executeWithAutoRetry, token valid", String(format: "%.2fx the core path", seed / core),
        target: "<= 1.3x", passed: seed <= 1.3 * core)

    // After a 401 for a token that another caller has already replaced.
    let coreStale = try await Harness.nanosecondsPerOperation(iterations: iterations / 5) {
        var request = URLRequest(url: url)
        request.setValue("Bearer \(old)", forHTTPHeaderField: "Authorization")
        do {
            _ = try await network.executeRequest(request: request)
        } catch let error as APIError where error == .unauthorized {
            let token = try await client.refreshToken(afterRejectionOf: old)
            request.setValue("Bearer \(token.accessToken)", forHTTPHeaderField: "Authorization")
            let (data, response) = try await network.executeRequest(request: request)
            sink &+= data.count &+ response.statusCode
        }
    }
    let seedStale = try await Harness.nanosecondsPerOperation(iterations: iterations / 5) {
        var request = URLRequest(url: url)
        request.setValue("Bearer \(old)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await network.executeWithAutoRetry(
            request: request, tokenRefreshClient: client, authTokenPersistence: persistence)
        sink &+= data.count &+ response.statusCode
    }
    print("core:  401, refreshToken(afterRejectionOf:), retry   \(Harness.format(coreStale)) per request")
    print("seed:  executeWithAutoRetry after a stale 401         \(Harness.format(seedStale)) per request")
    let stale = Harness.report(
        "FitIQCore executeWithAutoRetry, stale 401", String(format: "%.2fx the core path", seedStale / coreStale),
        target: "<= 1.3x", passed: seedStale <= 1.3 * coreStale)
    if sink == 42 { print("") }
    return happy && stale
}

if try await !runBenchmarks() { exit(1) }
