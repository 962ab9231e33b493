import AuthToken
import Foundation
import HTTPTypes
import Logging
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh
import TokenVerification

/// Wraps the real transport: registers every credential that crosses it (to check logs against; in its own
/// ``secrets`` and in `TestSecrets.shared`, which the `.logLeakCheck()` trait searches for), counts
/// token-endpoint requests by grant type, and can lose the answer to a refresh after the server has
/// processed it (the "response lost after rotation" fault).
final class RecordingTransport: HTTPTransport {
    /// What to do with the next refresh grant's answer.
    enum Loss: Sendable {
        /// Deliver it.
        case none
        /// Let the server process the refresh, then throw as if the connection dropped before the answer.
        case loseNextRefresh
        /// As ``loseNextRefresh``, then run `afterwards` (for example, age the server's revocations) before
        /// the client sees the failure.
        case loseNextRefreshThen(@Sendable () async throws -> Void)
    }

    /// The connection "dropped" before the answer arrived.
    struct ResponseLost: Error, CustomStringConvertible {
        var description: String { "the test dropped the answer to a refresh" }
    }

    private struct State {
        var grants: [String: Int] = [:]
        var loss: Loss = .none
        var lostResponseToken: String?
    }

    private let base: any HTTPTransport
    private let state = Locked(State())
    private let seen = TestSecrets()

    init(_ base: any HTTPTransport) { self.base = SecretRegisteringTransport(base, registeringIn: [seen, .shared]) }

    /// Every credential seen so far: access tokens, refresh tokens, passwords, client secrets, ...
    var secrets: [TestSecrets.Secret] { seen.all }

    /// Token-endpoint requests sent, by `grant_type`.
    func grantCount(_ grantType: String) -> Int { state.withLock { $0.grants[grantType] ?? 0 } }

    /// The access token in the refresh answer that was lost, if one was.
    var lostAccessToken: String? { state.withLock { $0.lostResponseToken } }

    func setLoss(_ loss: Loss) { state.withLock { $0.loss = loss } }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        var grantType: String?
        if let body, let form = String(data: body, encoding: .utf8),
            request.headerFields[.contentType] == "application/x-www-form-urlencoded"
        {
            grantType = Form.decode(form).first { $0.0 == "grant_type" }?.1
        }
        if let grantType { state.withLock { $0.grants[grantType, default: 0] += 1 } }
        let (response, data) = try await base.send(request, body: body)
        guard grantType == "refresh_token" else { return (response, data) }
        let loss = state.withLock { state -> Loss in
            defer { state.loss = .none }
            return state.loss
        }
        switch loss {
        case .none:
            return (response, data)
        case .loseNextRefresh:
            recordLost(data)
            throw ResponseLost()
        case .loseNextRefreshThen(let afterwards):
            recordLost(data)
            try await afterwards()
            throw ResponseLost()
        }
    }

    private func recordLost(_ data: Data) {
        let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        state.withLock { $0.lostResponseToken = object?["access_token"] as? String }
    }
}

/// A directory of its own under the system's temporary directory, removed by ``remove()``.
struct TemporaryDirectory {
    let url: URL

    init() {
        url = FileManager.default.temporaryDirectory.appending(
            path: "tokenkit-interop-\(UUID().uuidString)", directoryHint: .isDirectory)
    }

    /// The store's own directory inside (the store creates it with mode 0700).
    var storeDirectory: URL { url.appending(path: "sessions", directoryHint: .isDirectory) }

    func remove() { try? FileManager.default.removeItem(at: url) }
}

/// A TokenKit client stack against the interop server: token endpoint, refresh client, API client.
struct InteropSession {
    let server: InteropServer
    let recorder: RecordingTransport
    let endpoint: TokenEndpoint
    let client: TokenRefreshClient
    let api: AuthenticatedClient

    /// Builds the stack for `oauthClient` over a ``RecordingTransport``.
    init(
        _ server: InteropServer, oauthClient: OAuthClient = Credentials.confidentialBasic,
        store: any TokenStore = InMemoryTokenStore(),
        configuration: TokenRefreshClient.Configuration = .init(),
        now: @escaping @Sendable () -> Date = AuthToken.systemNow,
        recorder: RecordingTransport? = nil,
        logger: Logger? = nil
    ) {
        let recorder = recorder ?? RecordingTransport(server.transport)
        let endpoint = server.endpoint(oauthClient, transport: recorder)
        let refreshLogger = logger ?? Logger(label: "TokenKit.TokenRefresh")
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store, configuration: configuration, now: now,
            logger: refreshLogger)
        self.init(server: server, recorder: recorder, endpoint: endpoint, client: client, logger: logger)
    }

    /// Builds the API half around an existing refresh client.
    init(
        server: InteropServer, recorder: RecordingTransport, endpoint: TokenEndpoint, client: TokenRefreshClient,
        logger: Logger? = nil
    ) {
        self.server = server
        self.recorder = recorder
        self.endpoint = endpoint
        self.client = client
        self.api = AuthenticatedClient(
            transport: recorder, tokenProvider: client, configuration: server.apiConfiguration,
            logger: logger ?? AuthenticatedClient.defaultLogger)
    }

    /// Signs alice in with the password grant.
    @discardableResult
    func signIn(password: String = Credentials.password) async throws -> AuthToken {
        try await client.signIn(
            .password(username: Credentials.username, password: password, at: endpoint), userID: Credentials.username)
    }

    /// `GET /api/me` through `executeWithAutoRetry`: the status and the `user` and `client_id` the server saw.
    func me() async throws -> (status: Int, user: String?, clientID: String?) {
        let (response, body) = try await api.executeWithAutoRetry(server.request(.get, "/api/me"))
        let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        return (response.status.code, object?["user"] as? String, object?["client_id"] as? String)
    }

    /// `count` concurrent `GET /api/me` calls; the statuses, or the errors thrown, in no particular order.
    func concurrentMe(_ count: Int) async -> [Result<Int, any Error>] {
        await withTaskGroup(of: Result<Int, any Error>.self) { group in
            for _ in 0..<count {
                group.addTask {
                    do {
                        return .success(try await me().status)
                    } catch {
                        return .failure(error)
                    }
                }
            }
            var results: [Result<Int, any Error>] = []
            for await result in group { results.append(result) }
            return results
        }
    }
}

/// The first event of `stream` that `matches`, or `nil` if the stream ends first. Bounded by the suite's time
/// limit; no clock is involved.
func firstEvent(
    in stream: AsyncStream<AuthEvent>, where matches: (AuthEvent) -> Bool
) async -> (match: AuthEvent?, before: [AuthEvent]) {
    var before: [AuthEvent] = []
    for await event in stream {
        if matches(event) { return (event, before) }
        before.append(event)
    }
    return (nil, before)
}

/// The error `body` throws, or `nil` when it succeeds.
func thrownError(_ body: () async throws -> some Any) async -> (any Error)? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error
    }
}

/// The session stored for `account`, or `nil` when the store has none (or cannot be read).
func storedSession(_ store: any TokenStore, account: String = "default") async -> StoredSession? {
    if case .found(let session) = await store.load(account: account) { return session }
    return nil
}

/// Whether `read` says the store holds no session.
func isAbsent(_ read: TokenStoreRead) -> Bool {
    if case .absent = read { return true }
    return false
}

/// The verification failure's reason, or `nil` when `token` verifies.
func failureReason(_ verifier: TokenVerifier, _ token: String) async -> String? {
    do {
        _ = try await verifier.verify(token)
        return nil
    } catch {
        return error.reason
    }
}

/// `token` with one character of its signature changed.
func tampered(_ token: String) -> String {
    var parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    guard parts.count == 3 else { return token + "x" }
    var signature = Array(parts[2])
    let index = signature.count / 2
    signature[index] = signature[index] == "A" ? "B" : "A"
    parts[2] = String(signature)
    return parts.joined(separator: ".")
}
