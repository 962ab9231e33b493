import AuthToken
import Foundation
import MetricsTestKit
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

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
}
