import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

let tokenURL = URL(string: "https://127.0.0.1/oauth/token")!
let revokeURL = URL(string: "https://127.0.0.1/oauth/revoke")!
let apiBaseURL = URL(string: "https://127.0.0.1")!
let account = "default"

/// A client wired to a simulated server, a manual clock and a store, with a session already stored.
struct Rig {
    let clock: ManualClock
    let server: SimulatedTokenServer
    let store: any TokenStore
    let endpoint: TokenEndpoint
    let client: TokenRefreshClient
    /// The pair the session started with.
    let initial: AuthToken

    /// Builds a rig. `expired: true` stores a session whose access token has already expired.
    static func make(
        server serverConfiguration: SimulatedTokenServer.Configuration = .init(),
        store: (any TokenStore)? = nil,
        configuration: TokenRefreshClient.Configuration = .init(),
        expired: Bool = true,
        seedSession: Bool = true,
        random: @escaping @Sendable () -> Double = { 0.5 },
        strategy makeStrategy: ((TokenEndpoint) -> any RefreshStrategy)? = nil
    ) async throws -> Rig {
        let clock = ManualClock()
        let server = SimulatedTokenServer(configuration: serverConfiguration, now: clock.wallClock)
        let store = store ?? InMemoryTokenStore()
        let endpoint = TokenEndpoint(
            url: tokenURL,
            client: OAuthClient(id: serverConfiguration.clientID, secret: serverConfiguration.clientSecret),
            transport: server, now: clock.wallClock)
        var initial = AuthToken(accessToken: "placeholder-without-session", receivedAt: clock.date)
        if seedSession {
            // An expired token: received 2 h ago, valid for 1 h.
            initial = await server.issueSession(
                userID: "user-1", receivedAt: clock.date.addingTimeInterval(expired ? -7200 : 0))
            try await store.save(
                StoredSession(token: initial, userID: "user-1", generation: 1), account: account, condition: .always)
        }
        let strategy = makeStrategy?(endpoint) ?? OAuthRefreshStrategy(endpoint: endpoint)
        let client = TokenRefreshClient(
            strategy: strategy, store: store, configuration: configuration, clock: clock, now: clock.wallClock,
            random: random)
        return Rig(clock: clock, server: server, store: store, endpoint: endpoint, client: client, initial: initial)
    }

    /// A rig whose refresh waits at `gate` and then answers a "late" pair, with one caller already waiting in
    /// that refresh: the setting for the generation-guard tests.
    static func withLateRefresh(behind gate: HoldGate) async throws -> (Rig, Task<AuthToken, any Error>) {
        let rig = try await make(strategy: { _ in
            ClosureRefreshStrategy(requiresRefreshToken: true) { _ in
                await gate.wait()
                TestSecrets.shared.register("late-access", as: .accessToken)
                TestSecrets.shared.register("late-refresh", as: .refreshToken)
                return TokenResponse(accessToken: "late-access", refreshToken: "late-refresh", expiresIn: 3600)
            }
        })
        let client = rig.client
        let caller = Task { try await client.validToken() }
        await gate.waitForArrivals(1)
        return (rig, caller)
    }

    /// The session in the store, or `nil`.
    func stored() async -> StoredSession? {
        if case .found(let session) = await store.load(account: account) { return session }
        return nil
    }
}

/// Every event of `stream` until it ends (when its client goes away).
func drain(_ stream: AsyncStream<AuthEvent>) async -> [AuthEvent] {
    var events: [AuthEvent] = []
    for await event in stream { events.append(event) }
    return events
}

/// The first `.signedOut` event of `stream`, or `nil` when the stream ends without one.
func firstSignedOut(_ stream: AsyncStream<AuthEvent>) async -> AuthEvent? {
    for await event in stream where event.kind == .signedOut { return event }
    return nil
}

/// Yields until `condition` holds; no real time passes, other tasks run.
func yield(until condition: () async -> Bool) async {
    while !(await condition()) { await Task.yield() }
}

/// The error `body` throws, as a `TokenRefreshError`, or `nil` when it succeeds.
func refreshError(_ body: () async throws -> some Any) async -> TokenRefreshError? {
    do {
        _ = try await body()
        return nil
    } catch let error as TokenRefreshError {
        return error
    } catch {
        return TokenRefreshError.unexpectedResponse.with(underlying: error)
    }
}

/// A store whose writes can be made to fail and whose reads can be made unavailable.
actor FlakyStore: TokenStore {
    private var sessions: [String: StoredSession] = [:]
    var failSaves = false
    var unavailable = false
    /// When set, every save waits at this gate before it is applied.
    var saveGate: HoldGate?
    private(set) var saves = 0
    private(set) var removes = 0

    func setFailSaves(_ value: Bool) { failSaves = value }
    func setUnavailable(_ value: Bool) { unavailable = value }
    func setSaveGate(_ gate: HoldGate?) { saveGate = gate }

    func load(account: String) async -> TokenStoreRead {
        if unavailable { return .unavailable(.unavailable) }
        return sessions[account].map(TokenStoreRead.found) ?? .absent
    }

    func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
        if let saveGate { await saveGate.wait() }
        if failSaves || unavailable { throw .writeFailed }
        guard condition.allows(stored: sessions[account]) else { throw .conflict }
        saves += 1
        sessions[account] = session
    }

    func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        if unavailable { throw .unavailable }
        guard condition.allows(stored: sessions[account]) else { throw .conflict }
        removes += 1
        sessions[account] = nil
    }
}

/// A mock transport that records requests and answers each with the same response.
func fixedResponse(status: Int = 200, body: String) -> MockTransport {
    MockTransport { _, _ in (HTTPResponse(status: .init(code: status)), Data(body.utf8)) }
}
