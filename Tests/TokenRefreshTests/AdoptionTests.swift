import AuthToken
import Foundation
import MetricsTestKit
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// A pair another process saved is adopted without a network call; events and metrics tell that apart from a
/// refresh over the network.
@Suite(.logLeakCheck()) struct AdoptionTests {
    struct Setup {
        let clock = ManualClock()
        let metrics = TestMetrics()
        let server: SimulatedTokenServer
        let store = InMemoryTokenStore()
        let client: TokenRefreshClient

        init() async throws {
            server = SimulatedTokenServer(now: clock.wallClock)
            let endpoint = TokenEndpoint(
                url: URL(string: "https://127.0.0.1/oauth/token")!, client: OAuthClient(id: "app"),
                transport: server, now: clock.wallClock)
            let expired = await server.issueSession(userID: "user-1", receivedAt: clock.date.addingTimeInterval(-7200))
            try await store.save(
                StoredSession(token: expired, userID: "user-1", generation: 1), account: "default", condition: .always)
            client = TokenRefreshClient(
                strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store, clock: clock, now: clock.wallClock,
                metricsFactory: metrics)
        }

        func counter(_ label: String, _ dimensions: [(String, String)] = []) -> Int64 {
            metrics.counterTotal(label: label, dimensions: dimensions)
        }
    }

    /// The next `count` events' kinds, by name.
    static func kinds(_ stream: AsyncStream<AuthEvent>, count: Int) async -> [String] {
        var iterator = stream.makeAsyncIterator()
        var kinds: [String] = []
        while kinds.count < count, let event = await iterator.next() { kinds.append("\(event.kind)") }
        return kinds
    }

    @Test func adoptingAPairAnotherProcessSavedIsNotReportedAsARefresh() async throws {
        let setup = try await Setup()
        let events = setup.client.events()
        _ = await setup.client.restoreSession()
        let newer = await setup.server.issueSession(userID: "user-1", receivedAt: setup.clock.date)
        try await setup.store.save(
            StoredSession(token: newer, userID: "user-1", generation: 2), account: "default",
            condition: .generation(1))
        #expect(try await setup.client.validToken() == newer)
        #expect(await setup.server.tokenRequestCount == 0)
        #expect(await Self.kinds(events, count: 2) == ["sessionRestored", "tokenAdopted"])
        #expect(setup.counter("tokenkit_tokens_adopted_total") == 1)
        #expect(setup.counter("tokenkit_refreshes_total", [("result", "success")]) == 0)
    }

    @Test func aRefreshOverTheNetworkIsStillReportedAsARefresh() async throws {
        let setup = try await Setup()
        let events = setup.client.events()
        _ = await setup.client.restoreSession()
        _ = try await setup.client.validToken()
        #expect(await setup.server.refreshCount == 1)
        #expect(await Self.kinds(events, count: 2) == ["sessionRestored", "tokenRefreshed"])
        #expect(setup.counter("tokenkit_tokens_adopted_total") == 0)
        #expect(setup.counter("tokenkit_refreshes_total", [("result", "success")]) == 1)
    }

    /// A refresh for user-1 is on the wire when another process stores user-2's pair, and a pending write of user-1's
    /// pair finds it (a conflict) and adopts it: the refresh that then returns writes nothing and answers nobody.
    @Test func aRefreshInFlightNeverOverwritesAnotherUsersPairAdoptedMeanwhile() async throws {
        let store = FlakyStore()
        let gate = HoldGate()
        let calls = Locked(0)
        let rig = try await Rig.make(
            store: store,
            strategy: { _ in
                ClosureRefreshStrategy(requiresRefreshToken: true) { _ in
                    let call = calls.withLock { count -> Int in
                        count += 1
                        return count
                    }
                    if call > 1 { await gate.wait() }
                    let access = "adoption-access-\(call)"
                    let refresh = "adoption-refresh-\(call)"
                    TestSecrets.shared.register(access, as: .accessToken)
                    TestSecrets.shared.register(refresh, as: .refreshToken)
                    return TokenResponse(accessToken: access, refreshToken: refresh, expiresIn: 3600)
                }
            })
        let client = rig.client
        // user-1's refreshed pair could not be stored: it waits in memory for its write to be retried.
        await store.setFailSaves(true)
        let pending = try await client.validToken()
        await store.setFailSaves(false)
        // A refused request of user-1 starts a refresh, which is on the wire...
        let refused = Task { try await client.refreshToken(afterRejectionOf: pending.accessToken) }
        await gate.waitForArrivals(1)
        // ...when another process signs user-2 in.
        TestSecrets.shared.register("adoption-bob-access", as: .accessToken)
        TestSecrets.shared.register("adoption-bob-refresh", as: .refreshToken)
        let bob = AuthToken(
            accessToken: "adoption-bob-access", refreshToken: "adoption-bob-refresh", receivedAt: rig.clock.date,
            lifetime: 3600)
        try await store.save(
            StoredSession(token: bob, userID: "user-2", generation: 7), account: account, condition: .always)
        // The pending write is retried, conflicts, and adopts user-2's pair.
        rig.clock.advance(by: .seconds(5))
        #expect(try await client.validToken() == bob)

        gate.open()
        let outcome = await refused.result
        await client.waitForLastRefreshTask()
        #expect(throws: TokenRefreshError.sessionChanged) { try outcome.get() }
        let stored = try #require(await rig.stored())
        #expect(stored.userID == "user-2", "user-2's pair is not overwritten")
        #expect(stored.token == bob)
        #expect(client.currentToken == bob)
        #expect(client.currentState == .signedIn(userID: "user-2"))
    }
}
