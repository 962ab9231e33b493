import Foundation
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// The analysis's DTOs, exactly as it declares them.

/// `RefreshTokenRequest(refreshToken:)`, sent through a default `JSONEncoder`: `{"refreshToken": <the refresh token>}`.
struct RefreshTokenRequest: Codable {
    let refreshToken: String
}

/// The analysis's `TokenResponse`, which the app decodes with `.convertFromSnakeCase`.
struct TokenResponseDTO: Codable {
    let accessToken: String
    let refreshToken: String
}

/// A backend built from the analysis: `POST /api/v1/auth/refresh` reads `RefreshTokenRequest` with a default
/// `JSONDecoder` and requires `X-API-Key`; `GET /api/v1/progress` requires the current, unexpired bearer token and
/// answers 401 with no body otherwise. Access tokens are JWTs that live 15 minutes by the test's clock; refresh
/// tokens rotate on every use.
final class AnalysisBackend: Sendable {
    /// How the refresh answer spells its keys.
    enum AnswerStyle: String, Sendable, CaseIterable, CustomStringConvertible {
        case camelCase, snakeCase, camelCaseInData, snakeCaseInData
        var description: String { rawValue }
    }

    struct State {
        var access: String?
        var refresh: String?
        var expiresAt = Date.distantPast
        var serial = 0
        var refreshes = 0
        var rejectedRefreshes = 0
        var resourceRequests = 0
        var unauthorizedAnswers = 0
        var missingAPIKey = 0
        var nonCamelCaseRequests = 0
        /// Requests carrying a refreshed access token that the app's persistence did not hold yet.
        var requestsAheadOfPersistence = 0
        var refreshedTokens: Set<String> = []
        /// When set, every resource request is answered 401.
        var rejectEverything = false
    }

    static let baseURL = URL(string: "https://api.fitiq.example")!
    static let apiKey = "fitiq-demo-api-key-0001"

    let clock: ManualClock
    let style: AnswerStyle
    let state = Locked(State())
    /// What the app's persistence holds as its access token now (checked when a refreshed token arrives).
    let persistedAccessToken = Locked<(@Sendable () -> String?)?>(nil)

    init(clock: ManualClock, style: AnswerStyle = .camelCase) {
        self.clock = clock
        self.style = style
    }

    var snapshot: State { state.withLock { $0 } }

    /// Logs a user in: a new pair, as the app's login would have stored it.
    func login() -> (accessToken: String, refreshToken: String) {
        state.withLock { issue(&$0) }
    }

    private func issue(_ state: inout State) -> (accessToken: String, refreshToken: String) {
        state.serial += 1
        let now = clock.date
        let claims =
            #"{"sub":"user-1","iat":\#(Int(now.timeIntervalSince1970)),"#
            + #""exp":\#(Int(now.timeIntervalSince1970) + 900),"jti":"\#(state.serial)"}"#
        let access = Self.base64URL(#"{"alg":"HS256","typ":"JWT"}"#) + "." + Self.base64URL(claims) + ".c2ln"
        let refresh = "fitiq-refresh-\(state.serial)-\(UUID().uuidString)"
        TestSecrets.shared.register(access, as: .accessToken)
        TestSecrets.shared.register(refresh, as: .refreshToken)
        state.access = access
        state.refresh = refresh
        state.expiresAt = now.addingTimeInterval(900)
        return (access, refresh)
    }

    private static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// Answers one request: the status and the body.
    func handle(_ request: URLRequest) -> (Int, Data) {
        switch (request.httpMethod ?? "GET", request.url?.path ?? "") {
        case ("POST", "/api/v1/auth/refresh"): refresh(request)
        case ("GET", "/api/v1/progress"): progress(request)
        default: (404, Data())
        }
    }

    private func refresh(_ request: URLRequest) -> (Int, Data) {
        guard request.value(forHTTPHeaderField: "X-API-Key") == Self.apiKey else {
            state.withLock { $0.missingAPIKey += 1 }
            return (403, Data())
        }
        guard let body = request.httpBody, let dto = try? JSONDecoder().decode(RefreshTokenRequest.self, from: body)
        else {
            state.withLock { $0.nonCamelCaseRequests += 1 }
            return (400, Data())
        }
        let issued = state.withLock { state -> (accessToken: String, refreshToken: String)? in
            guard dto.refreshToken == state.refresh else {
                state.rejectedRefreshes += 1
                return nil
            }
            state.refreshes += 1
            let issued = issue(&state)
            state.refreshedTokens.insert(issued.accessToken)
            return issued
        }
        guard let issued else { return (401, Data()) }
        return (200, answer(TokenResponseDTO(accessToken: issued.accessToken, refreshToken: issued.refreshToken)))
    }

    private func answer(_ dto: TokenResponseDTO) -> Data {
        let encoder = JSONEncoder()
        if style == .snakeCase || style == .snakeCaseInData { encoder.keyEncodingStrategy = .convertToSnakeCase }
        struct Wrapped: Encodable { let data: TokenResponseDTO }
        switch style {
        case .camelCase, .snakeCase: return (try? encoder.encode(dto)) ?? Data()
        case .camelCaseInData, .snakeCaseInData: return (try? encoder.encode(Wrapped(data: dto))) ?? Data()
        }
    }

    private func progress(_ request: URLRequest) -> (Int, Data) {
        let bearer = request.value(forHTTPHeaderField: "Authorization").flatMap { value -> String? in
            value.hasPrefix("Bearer ") ? String(value.dropFirst(7)) : nil
        }
        let persisted = persistedAccessToken.withLock { $0 }?()
        let now = clock.date
        let authorized = state.withLock { state -> Bool in
            state.resourceRequests += 1
            if let bearer, state.refreshedTokens.contains(bearer), persisted != bearer {
                state.requestsAheadOfPersistence += 1
            }
            guard !state.rejectEverything, let bearer, bearer == state.access, now < state.expiresAt else {
                state.unauthorizedAnswers += 1
                return false
            }
            return true
        }
        return authorized ? (200, Data(#"{"steps":1234}"#.utf8)) : (401, Data())
    }
}

/// The app's network client, as FitIQ's: it throws `APIError.unauthorized` on a 401.
struct BackendNetworkClient: NetworkClientProtocol {
    let backend: AnalysisBackend

    func executeRequest(request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        await Task.yield()  // a network call suspends; let the concurrent callers interleave
        let (status, body) = backend.handle(request)
        guard status != 401 else { throw APIError.unauthorized }
        guard let url = request.url,
            let response = HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: [:])
        else { throw APIError.invalidResponse }
        guard (200..<300).contains(status) else { throw APIError.httpStatus(status) }
        return (body, response)
    }
}

/// FitIQ's `KeychainAuthTokenAdapter` with only the seven methods it had (no `saveToken`/`fetchToken`), kept
/// in memory. `@unchecked Sendable`: `values` is only touched while holding `lock`.
final class KeychainAuthTokenAdapter: AuthTokenPersistenceProtocol, @unchecked Sendable {
    private let lock = NSLock()
    private var values: [String: String] = [:]
    /// Every `save(accessToken:refreshToken:)`, counted.
    private(set) var saves = 0

    func save(accessToken: String, refreshToken: String) throws {
        lock.withLock {
            values["accessToken"] = accessToken
            values["refreshToken"] = refreshToken
            saves += 1
        }
    }
    func fetchAccessToken() throws -> String? { lock.withLock { values["accessToken"] } }
    func fetchRefreshToken() throws -> String? { lock.withLock { values["refreshToken"] } }
    func deleteTokens() throws {
        lock.withLock {
            values["accessToken"] = nil
            values["refreshToken"] = nil
        }
    }
    func saveUserProfileID(_ userID: UUID) throws { lock.withLock { values["userProfileID"] = userID.uuidString } }
    func fetchUserProfileID() throws -> UUID? { lock.withLock { values["userProfileID"].flatMap(UUID.init) } }
    func deleteUserProfileID() throws { lock.withLock { values["userProfileID"] = nil } }
    var saveCount: Int { lock.withLock { saves } }
}

extension TokenStoreRead {
    /// The session found, if any.
    var session: StoredSession? {
        if case .found(let session) = self { return session }
        return nil
    }
}
