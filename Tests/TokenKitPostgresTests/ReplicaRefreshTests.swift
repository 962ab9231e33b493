// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import AuthToken
import Foundation
import Persistence
import PostgresNIO
import Testing
import TokenKitLogCheck
import TokenKitPostgres
import TokenKitTesting
import TokenRefresh

@Suite(.logLeakCheck(), .enabled(if: TestDatabase.isConfigured, TestDatabase.skipMessage))
struct ReplicaRefreshTests {
    @Test func twoReplicasRefreshAnExpiredSessionOnce() async throws {
        let table = uniqueTable()
        let (clock, server, endpoint) = simulatedEndpoint(
            .init(rotatesRefreshTokens: true, detectsReuse: true, graceWindow: 0))
        try await withTwoReplicaStores(table: table) { stores, first in
            let initial = await server.issueSession(
                userID: "user-1", receivedAt: clock.date.addingTimeInterval(-7200))
            try await stores[0].save(
                StoredSession(token: initial, userID: "user-1", generation: 1), account: "alice",
                condition: .always)
            let clients = stores.map { store in
                TokenRefreshClient(
                    strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store,
                    configuration: .init(account: "alice"), clock: clock, now: clock.wallClock)
            }
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for client in clients {
                    for _ in 0..<20 {
                        group.addTask { try await client.validToken().accessToken }
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(await server.refreshCount == 1)
            #expect(await server.reuseDetections == 0)
            #expect(tokens.count == 1)
            #expect(!tokens.contains(initial.accessToken))
            let saved = await stored(stores[1], account: "alice")
            #expect(saved.map { tokens.contains($0.token.accessToken) } == true)
            #expect(saved?.generation ?? 0 > 1)
            try await dropTable(table, client: first)
        }
    }

    @Test func aReplicaThatCannotGetTheLockInTimeUsesTheTokenTheHolderStored() async throws {
        let table = uniqueTable()
        let (clock, server, endpoint) = simulatedEndpoint(.init(detectsReuse: true))
        try await withClient { first in
            try await withClient { second in
                let holderStore = PostgresTokenStore(
                    client: first, configuration: .init(tableName: table, lockTimeout: .seconds(30)))
                let waiterStore = PostgresTokenStore(
                    client: second, configuration: .init(tableName: table, lockTimeout: .milliseconds(300)))
                let expired = await server.issueSession(
                    userID: "user-1", receivedAt: clock.date.addingTimeInterval(-7200))
                try await holderStore.save(
                    StoredSession(token: expired, userID: "user-1", generation: 1), account: "alice",
                    condition: .always)
                let waiter = TokenRefreshClient(
                    strategy: OAuthRefreshStrategy(endpoint: endpoint), store: waiterStore,
                    configuration: .init(account: "alice"), clock: clock, now: clock.wallClock)
                // Its access token expired two hours ago: the restored session reads expired until renewed.
                #expect(await waiter.restoreSession() == .expired(lastUserID: "user-1"))

                // Another replica holds the lock, and has stored its refreshed pair but not yet let go.
                let fresh = await server.issueSession(userID: "user-1", receivedAt: clock.date)
                let holding = AsyncStream<Void>.makeStream()
                let release = AsyncStream<Void>.makeStream()
                let holder = Task {
                    try await holderStore.withExclusiveAccess(account: "alice") {
                        try await holderStore.save(
                            StoredSession(token: fresh, userID: "user-1", generation: 2), account: "alice",
                            condition: .generation(1))
                        holding.continuation.yield()
                        for await _ in release.stream { break }
                    }
                }
                for await _ in holding.stream { break }
                let token = try await waiter.validToken()
                #expect(token.accessToken == fresh.accessToken)
                #expect(waiter.currentState == .signedIn(userID: "user-1"))
                #expect(await server.refreshCount == 0)
                release.continuation.yield()
                try await holder.value
                try await dropTable(table, client: first)
            }
        }
    }

    /// 200 calls over 25 accounts at once: each account refreshed once across the two replicas. The calls queue for
    /// two pools' connections, which on a loaded machine takes longer than the default 5-s operation timeout; the
    /// test is about the refresh count, so its bound is only a guard against a hang.
    @Test func twoRegistriesOverOneTableRefreshEachAccountOnce() async throws {
        let table = uniqueTable()
        let (clock, server, endpoint) = simulatedEndpoint(.init(detectsReuse: true))
        let accounts = (0..<25).map { "account-\($0)" }
        try await withTwoReplicaStores(table: table, operationTimeout: .seconds(50)) { stores, first in
            for account in accounts {
                let expired = await server.issueSession(
                    userID: account, receivedAt: clock.date.addingTimeInterval(-7200))
                try await stores[0].save(
                    StoredSession(token: expired, userID: account, generation: 1), account: account,
                    condition: .always)
            }
            let registries = stores.map { store in
                TokenSessionRegistry(store: store, clock: clock, now: clock.wallClock) { _ in
                    OAuthRefreshStrategy(endpoint: endpoint)
                }
            }
            let tokens = try await withThrowingTaskGroup(of: (String, String).self) { group in
                for registry in registries {
                    for account in accounts {
                        for _ in 0..<4 {
                            group.addTask { (account, try await registry.validToken(for: account).accessToken) }
                        }
                    }
                }
                return try await group.reduce(into: [String: Set<String>]()) { $0[$1.0, default: []].insert($1.1) }
            }
            #expect(await server.refreshCount == accounts.count)
            #expect(await server.reuseDetections == 0)
            #expect(tokens.values.allSatisfy { $0.count == 1 })
            try await dropTable(table, client: first)
        }
    }
}
#endif
