import Foundation
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A FitIQ app that kept its own `APIError` after `import TokenKit`. Inside this namespace (as in the app's own
/// files) `APIError` is the app's type: it shadows TokenKit's, and everything compiles.
enum AppKeepingItsAPIError {
    enum APIError: Error, LocalizedError {
        case invalidURL
        case invalidResponse
        case unauthorized
        case apiError(statusCode: Int, message: String)

        var errorDescription: String? {
            switch self {
            case .invalidURL: "Invalid URL"
            case .invalidResponse: "Invalid response"
            case .unauthorized: "Please sign in again"
            case .apiError(let statusCode, _): "Server error \(statusCode)"
            }
        }
    }

    /// How the app's network client reports a 401.
    enum Reporting: String, CaseIterable, CustomStringConvertible, Sendable {
        /// `throw APIError.unauthorized` (the app's case).
        case unauthorizedCase
        /// `throw APIError.apiError(statusCode: 401, message:)`.
        case statusInThePayload
        /// The 401 response is returned, not thrown.
        case returnedResponse

        var description: String { rawValue }
    }

    struct NetworkClient: NetworkClientProtocol {
        let backend: AnalysisBackend
        let reporting: Reporting

        func executeRequest(request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            await Task.yield()
            let (status, body) = backend.handle(request)
            guard let url = request.url,
                let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: [:])
            else { throw APIError.invalidURL }
            switch (status, reporting) {
            case (401, .unauthorizedCase): throw APIError.unauthorized
            case (401, .statusInThePayload): throw APIError.apiError(statusCode: 401, message: "Unauthorized")
            case (401, .returnedResponse): return (body, response)
            case (200..<300, _): return (body, response)
            default: throw APIError.apiError(statusCode: status, message: "")
            }
        }
    }
}

/// An app whose `APIError` describes itself, so its case without associated values cannot be read by name.
enum AppDescribingItsAPIError {
    enum APIError: Error, Equatable, CustomStringConvertible {
        case unauthorized
        case offline

        var description: String { self == .unauthorized ? "The session ended" : "No connection" }
    }

    struct NetworkClient: NetworkClientProtocol {
        let backend: AnalysisBackend
        /// Whether the client tells TokenKit which of its errors are a 401.
        let saysWhichErrorIsA401: Bool

        func executeRequest(request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            await Task.yield()
            let (status, body) = backend.handle(request)
            guard status != 401 else { throw APIError.unauthorized }
            guard let url = request.url, (200..<300).contains(status),
                let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: [:])
            else { throw APIError.offline }
            return (body, response)
        }

        func httpStatus(of error: any Error) -> Int? {
            saysWhichErrorIsA401 && error as? APIError == .unauthorized ? 401 : nil
        }
    }
}

/// An app whose own error has a generic `code` that is not an HTTP status (a form field's validation code), and a
/// client that reports a 200 response inside an error (a body it could not decode).
enum AppWithGenericErrorCodes {
    enum AppError: Error {
        case validation(code: Int)
    }

    struct DecodingFailed: Error {
        let response: HTTPURLResponse
    }

    /// Sends the refresh to the backend; answers every other request with `AppError.validation(code: 401)`.
    final class NetworkClient: NetworkClientProtocol, @unchecked Sendable {
        let backend: AnalysisBackend
        // `lock` protects `sent`.
        private let lock = NSLock()
        private var sent: [String] = []
        var requests: [String] { lock.withLock { sent } }

        init(backend: AnalysisBackend) { self.backend = backend }

        func executeRequest(request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            let path = request.url?.path ?? ""
            lock.withLock { sent.append("\(request.httpMethod ?? "GET") \(path)") }
            guard path == "/api/v1/auth/refresh" else { throw AppError.validation(code: 401) }
            let (status, body) = backend.handle(request)
            guard let url = request.url,
                let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: [:])
            else { throw URLError(.badURL) }
            return (body, response)
        }
    }

    /// Throws an error carrying the 200 response it got.
    struct DecodingClient: NetworkClientProtocol {
        func executeRequest(request: URLRequest) async throws -> (Data, HTTPURLResponse) {
            let url = request.url ?? URL(string: "https://api.fitiq.test")!
            throw DecodingFailed(
                response: HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: [:])!)
        }
    }
}

@Suite(.logLeakCheck()) struct AppOwnAPIErrorTests {
    static func expiredSession(
        saysWhichErrorIsA401: Bool, capture: LogCapture = LogCapture()
    ) throws -> (AnalysisBackend, AppDescribingItsAPIError.NetworkClient, KeychainAuthTokenAdapter, TokenRefreshClient)
    {
        let clock = ManualClock(startDate: AuthToken.systemNow())
        let backend = AnalysisBackend(clock: clock)
        let networkClient = AppDescribingItsAPIError.NetworkClient(
            backend: backend, saysWhichErrorIsA401: saysWhichErrorIsA401)
        let persistence = KeychainAuthTokenAdapter()
        let login = backend.login()
        try persistence.save(accessToken: login.accessToken, refreshToken: login.refreshToken)
        let tokenRefreshClient = TokenRefreshClient(
            strategy: JSONEndpointRefreshStrategy(
                baseURL: AnalysisBackend.baseURL, apiKey: AnalysisBackend.apiKey,
                transport: NetworkClientTransport(networkClient)),
            logger: capture.logger())
        clock.advance(by: .seconds(1000))
        return (backend, networkClient, persistence, tokenRefreshClient)
    }

    static func progressRequest(_ persistence: KeychainAuthTokenAdapter) throws -> URLRequest {
        var request = URLRequest(url: AnalysisBackend.baseURL.appendingPathComponent("/api/v1/progress"))
        if let accessToken = try persistence.fetchAccessToken() {
            request.setValue("Bearer \(accessToken)", forHTTPHeaderField: "Authorization")
        }
        return request
    }

    /// TokenKit cannot tell this error is a 401. It says so in the log (once per type) instead of staying silent.
    @Test func anAppAPIErrorThatCannotBeReadIsReportedInTheLog() async throws {
        let capture = LogCapture()
        let (backend, networkClient, persistence, tokenRefreshClient) = try Self.expiredSession(
            saysWhichErrorIsA401: false, capture: capture)
        await #expect(throws: AppDescribingItsAPIError.APIError.unauthorized) {
            try await networkClient.executeWithAutoRetry(
                request: Self.progressRequest(persistence), tokenRefreshClient: tokenRefreshClient,
                authTokenPersistence: persistence)
        }
        #expect(backend.snapshot.refreshes == 0)
        let notices = capture.lines.filter { $0.contains("AppDescribingItsAPIError.APIError, which is not TokenKit's") }
        #expect(notices.count == 1)
        #expect(notices.first?.hasPrefix("warning") == true)
    }

    @Test func anAppThatSaysWhichOfItsErrorsIsA401Refreshes() async throws {
        let (backend, networkClient, persistence, tokenRefreshClient) = try Self.expiredSession(
            saysWhichErrorIsA401: true)
        let (_, response) = try await networkClient.executeWithAutoRetry(
            request: Self.progressRequest(persistence), tokenRefreshClient: tokenRefreshClient,
            authTokenPersistence: persistence)
        #expect(response.statusCode == 200)
        #expect(backend.snapshot.refreshes == 1)
    }

    @Test(arguments: AppKeepingItsAPIError.Reporting.allCases)
    func anAppThatKeepsItsOwnAPIErrorStillRefreshesOnA401(reporting: AppKeepingItsAPIError.Reporting) async throws {
        let clock = ManualClock(startDate: AuthToken.systemNow())
        let backend = AnalysisBackend(clock: clock)
        let networkClient = AppKeepingItsAPIError.NetworkClient(backend: backend, reporting: reporting)
        let persistence = KeychainAuthTokenAdapter()
        let login = backend.login()
        try persistence.save(accessToken: login.accessToken, refreshToken: login.refreshToken)
        backend.persistedAccessToken.withLock { $0 = { try? persistence.fetchAccessToken() } }
        let tokenRefreshClient = TokenRefreshClient(
            networkClient: networkClient, baseURL: AnalysisBackend.baseURL, apiKey: AnalysisBackend.apiKey)

        clock.advance(by: .seconds(1000))  // the 15-minute access token has expired
        var request = URLRequest(url: AnalysisBackend.baseURL.appendingPathComponent("/api/v1/progress"))
        request.setValue("Bearer \(login.accessToken)", forHTTPHeaderField: "Authorization")
        let (data, response) = try await networkClient.executeWithAutoRetry(
            request: request, tokenRefreshClient: tokenRefreshClient, authTokenPersistence: persistence)

        #expect(response.statusCode == 200)
        #expect(data == Data(#"{"steps":1234}"#.utf8))
        #expect(backend.snapshot.refreshes == 1)
        #expect(try persistence.fetchAccessToken() == backend.snapshot.access)
    }

    /// The refresh goes through the app's client too: its own `unauthorized` for a dead refresh token must read
    /// as a rejected refresh token (the session ends), not as a network failure.
    @Test func theAppsOwnUnauthorizedOnTheRefreshEndpointRejectsTheRefreshToken() async throws {
        let clock = ManualClock(startDate: AuthToken.systemNow())
        let backend = AnalysisBackend(clock: clock)
        let strategy = JSONEndpointRefreshStrategy(
            baseURL: AnalysisBackend.baseURL, apiKey: AnalysisBackend.apiKey,
            transport: NetworkClientTransport(
                AppKeepingItsAPIError.NetworkClient(backend: backend, reporting: .unauthorizedCase)))
        _ = backend.login()
        await #expect(throws: TokenRefreshError.refreshTokenRejected) {
            try await strategy.refresh(using: "fitiq-refresh-that-was-never-issued")
        }
    }

    /// A validation error whose `code` is 401 is not an HTTP 401: the POST is not refreshed for, nor sent twice.
    @Test func anAppErrorWithAGenericCodeOf401IsNotTakenForAnHTTP401() async throws {
        let clock = ManualClock(startDate: AuthToken.systemNow())
        let backend = AnalysisBackend(clock: clock)
        let networkClient = AppWithGenericErrorCodes.NetworkClient(backend: backend)
        let persistence = KeychainAuthTokenAdapter()
        let login = backend.login()
        try persistence.save(accessToken: login.accessToken, refreshToken: login.refreshToken)
        let tokenRefreshClient = TokenRefreshClient(
            networkClient: networkClient, baseURL: AnalysisBackend.baseURL, apiKey: AnalysisBackend.apiKey)
        var request = URLRequest(url: AnalysisBackend.baseURL.appendingPathComponent("/api/v1/meals"))
        request.httpMethod = "POST"
        request.setValue("Bearer \(login.accessToken)", forHTTPHeaderField: "Authorization")
        await #expect(throws: AppWithGenericErrorCodes.AppError.self) {
            try await networkClient.executeWithAutoRetry(
                request: request, tokenRefreshClient: tokenRefreshClient, authTokenPersistence: persistence)
        }
        #expect(networkClient.requests == ["POST /api/v1/meals"])
        #expect(backend.snapshot.refreshes == 0)
    }

    /// An error that carries a 200 response is passed on, not turned into an empty 200 answer.
    @Test func anErrorCarryingA200ResponseIsNotReadAsAnEmptyAnswer() async throws {
        let transport = NetworkClientTransport(AppWithGenericErrorCodes.DecodingClient())
        await #expect(throws: AppWithGenericErrorCodes.DecodingFailed.self) {
            try await transport.send(
                HTTPRequest(method: .post, scheme: "https", authority: "api.fitiq.test", path: "/api/v1/auth/refresh"),
                body: Data("{}".utf8))
        }
    }
}
