// Compiled only with the `LifecycleServices` package trait.
#if LifecycleServices
    import Foundation
    import Logging
    import Persistence
    import ServiceLifecycle
    import Testing
    import TokenKitLogCheck
    import TokenKitServiceLifecycle
    import TokenKitTesting
    import TokenRefresh
    import TokenVerification

    /// Counts fetches of a JWKS document with no keys (the refresher's schedule is what is under test).
    final class CountingFetch: Sendable {
        private let count = Locked(0)
        var fetches: Int { count.withLock { $0 } }

        func fetch(_ url: URL) async throws -> RemoteJWKSSource.Response {
            count.withLock { $0 += 1 }
            return .init(body: Data(#"{"keys":[]}"#.utf8), maxAge: .seconds(600))
        }
    }

    /// Yields until `condition` holds (no wall-clock waits: each step is another task's turn).
    func eventually(_ condition: () -> Bool) async {
        while !condition() { await Task.yield() }
    }

    @Suite(.logLeakCheck()) struct LifecycleServicesTests {
        static let logger = Logger(label: "tokenkit.tests.lifecycle")

        @Test func theJWKSRefresherRunsInAServiceGroupAndStopsOnGracefulShutdown() async throws {
            let clock = ManualClock()
            let counter = CountingFetch()
            let source = RemoteJWKSSource(
                jwksURL: URL(string: "https://clerk.example.com/.well-known/jwks.json")!, clock: clock,
                fetch: counter.fetch)
            let group = ServiceGroup(services: [source], gracefulShutdownSignals: [], logger: Self.logger)
            let running = Task { try await group.run() }

            // The first fetch at once, then one refreshAhead (60 s) before the 600-s lifetime ends.
            await eventually { source.currentKeySet != nil }
            await clock.waitForSleepers(count: 1)
            #expect(counter.fetches == 1)
            clock.advance(by: .seconds(540))
            await eventually { counter.fetches == 2 && source.currentKeySet != nil }
            await clock.waitForSleepers(count: 1)

            await group.triggerGracefulShutdown()
            try await running.value
            #expect(clock.sleeperCount == 0)
            clock.advance(by: .seconds(3600))
            #expect(counter.fetches == 2)
        }

        @Test func theRegistrySweeperEvictsIdleClientsAndStopsOnGracefulShutdown() async throws {
            let clock = ManualClock()
            let registry = TokenSessionRegistry(
                store: InMemoryTokenStore(), configuration: .init(idleTimeout: .seconds(600)), clock: clock,
                now: clock.wallClock
            ) { _ in ClosureRefreshStrategy { _ in throw CancellationError() } }
            _ = registry.client(for: "alice")
            let sweeper = SessionRegistrySweeper(registry: registry, clock: clock)
            #expect(sweeper.interval == .seconds(300))
            let group = ServiceGroup(services: [sweeper], gracefulShutdownSignals: [], logger: Self.logger)
            let running = Task { try await group.run() }

            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(300))
            await clock.waitForSleepers(count: 1)
            #expect(registry.count == 1)  // used 300 s ago: not idle long enough
            clock.advance(by: .seconds(300))
            await eventually { registry.count == 0 }
            await clock.waitForSleepers(count: 1)

            await group.triggerGracefulShutdown()
            try await running.value
            #expect(clock.sleeperCount == 0)
        }
    }
#endif
