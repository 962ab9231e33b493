// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import AuthToken
import Crypto
import Foundation
import Persistence
import PostgresNIO
import Testing
import TokenKitLogCheck
import TokenKitPostgres
import TokenKitTesting

private let received = Date(timeIntervalSince1970: 1_800_000_000)
private let first = StoredSession(
    token: AuthToken(
        accessToken: "pg-store-access-token-one", refreshToken: "pg-store-refresh-token-one", receivedAt: received,
        lifetime: 3600),
    userID: "user-1", generation: 1)
private let second = StoredSession(
    token: AuthToken(
        accessToken: "pg-store-access-token-two", refreshToken: "pg-store-refresh-token-two", receivedAt: received,
        lifetime: 3600),
    userID: "user-1", generation: 2)

@Suite(.logLeakCheck(), .enabled(if: TestDatabase.isConfigured, TestDatabase.skipMessage))
struct PostgresTokenStoreTests {
    @Test func roundTripKeepsEveryField() async throws {
        try await withStore { store, _, _ in
            try await store.save(first, account: "alice", condition: .absent)
            #expect(await stored(store, account: "alice") == first)
            try await store.save(second, account: "alice", condition: .generation(1))
            #expect(await stored(store, account: "alice") == second)
        }
    }

    @Test func anUnknownAccountIsAbsent() async throws {
        try await withStore { store, _, _ in
            guard case .absent = await store.load(account: "nobody") else {
                Issue.record("expected absent")
                return
            }
            try await store.remove(account: "nobody", condition: .always)
            try await store.remove(account: "nobody", condition: .absent)
        }
    }

    @Test func conditionalWritesFollowTheStoredGeneration() async throws {
        try await withStore { store, _, _ in
            try await store.save(first, account: "alice", condition: .absent)
            await #expect(throws: PersistenceError.conflict) {
                try await store.save(second, account: "alice", condition: .absent)
            }
            await #expect(throws: PersistenceError.conflict) {
                try await store.save(second, account: "alice", condition: .generation(7))
            }
            await #expect(throws: PersistenceError.conflict) {
                try await store.remove(account: "alice", condition: .generation(2))
            }
            await #expect(throws: PersistenceError.conflict) {
                try await store.remove(account: "alice", condition: .absent)
            }
            #expect(await stored(store, account: "alice") == first)
            try await store.save(second, account: "alice", condition: .always)
            try await store.remove(account: "alice", condition: .generation(2))
            #expect(await stored(store, account: "alice") == nil)
            await #expect(throws: PersistenceError.conflict) {
                try await store.save(first, account: "alice", condition: .generation(2))
            }
        }
    }

    @Test func generationsAboveInt64MaxSurvive() async throws {
        try await withStore { store, _, _ in
            let high = StoredSession(token: first.token, userID: nil, generation: UInt64.max - 1)
            try await store.save(high, account: "alice", condition: .absent)
            #expect(await stored(store, account: "alice") == high)
            try await store.save(second, account: "alice", condition: .generation(UInt64.max - 1))
            #expect(await stored(store, account: "alice")?.generation == 2)
        }
    }

    @Test func racingConditionalSavesHaveOneWinner() async throws {
        try await withStore { store, _, _ in
            try await store.save(first, account: "alice", condition: .absent)
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for attempt in 0..<8 {
                    group.addTask {
                        let session = StoredSession(token: second.token, userID: "\(attempt)", generation: 2)
                        return (try? await store.save(session, account: "alice", condition: .generation(1))) != nil
                    }
                }
                return await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 1)
        }
    }

    @Test func sealedRowsOpenWithTheirKeyOnly() async throws {
        let key = SymmetricKey(size: .bits256)
        try await withStore(key: key) { store, client, table in
            try await store.save(first, account: "alice", condition: .absent)
            #expect(await stored(store, account: "alice") == first)

            // Nothing of the token is in the row.
            let rows = try await client.query("SELECT payload FROM \(unescaped: table)")
            for try await payload in rows.decode(ByteBuffer.self) {
                let text = String(decoding: payload.readableBytesView, as: UTF8.self)
                #expect(!text.contains("pg-store"))
            }

            let otherKey = PostgresTokenStore(
                client: client,
                configuration: .init(tableName: table, encryptionKey: SymmetricKey(size: .bits256)))
            #expect(unavailableError(await otherKey.load(account: "alice")) == .wrongKey)
            await #expect(throws: PersistenceError.wrongKey) {
                try await otherKey.save(second, account: "alice", condition: .always)
            }
            let noKey = PostgresTokenStore(client: client, configuration: .init(tableName: table))
            #expect(unavailableError(await noKey.load(account: "alice")) == .wrongKey)
            #expect(await stored(store, account: "alice") == first)

            // A sealed row moved to another account does not open there.
            try await client.query(
                "INSERT INTO \(unescaped: table) SELECT 'mallory', generation, format_version, key_check, payload, now() FROM \(unescaped: table) WHERE account = 'alice'"
            )
            #expect(unavailableError(await store.load(account: "mallory")) == .corrupt)
            // An unconditional removal clears what cannot be read.
            try await otherKey.remove(account: "alice", condition: .always)
            #expect(await stored(store, account: "alice") == nil)
        }
    }

    @Test func aRowFromANewerFormatIsLeftAlone() async throws {
        try await withStore { store, client, table in
            try await store.save(first, account: "alice", condition: .absent)
            try await client.query("UPDATE \(unescaped: table) SET format_version = 3")
            #expect(unavailableError(await store.load(account: "alice")) == .unsupportedFormatVersion)
            await #expect(throws: PersistenceError.unsupportedFormatVersion) {
                try await store.save(second, account: "alice", condition: .generation(1))
            }
        }
    }

    @Test func migrationIsIdempotentAndConcurrent() async throws {
        try await withStore { store, client, table in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await PostgresTokenStore(client: client, configuration: .init(tableName: table)).migrate()
                    }
                }
                try await group.waitForAll()
            }
            try await store.migrate()
            guard case .absent = await store.load(account: "alice") else {
                Issue.record("expected absent")
                return
            }
        }
    }
}

/// Needs no server: a closed port stands for a database that is down.
@Suite(.logLeakCheck()) struct PostgresUnreachableTests {
    // Every wait of the store is on its injected clock, here one that lets each sleep's time pass at once: each call
    // must end by its own bounds in that clock's time, however slowly the machine runs. A wait that no bound of the
    // store ends (a query left waiting for a connection) shows no time on that clock, and lasts until the database
    // client gives up by itself, about a minute: the time limit is only a guard against a hang.
    @Test(.timeLimit(.minutes(1))) func anUnreachableDatabaseIsUnavailableNotAbsent() async throws {
        try await withUnreachableClient { client in
            let clock = ElapsingClock()
            let store = PostgresTokenStore(
                client: client,
                configuration: .init(lockTimeout: .milliseconds(300), operationTimeout: .milliseconds(300)),
                clock: clock)
            var took: [String: Duration] = [:]
            var started = clock.now
            func lap(_ call: String) {
                took[call] = started.duration(to: clock.now)
                started = clock.now
            }
            #expect(unavailableError(await store.load(account: "alice")) == .unavailable)
            lap("load")
            await #expect(throws: PersistenceError.writeFailed) {
                try await store.save(first, account: "alice", condition: .always)
            }
            lap("save")
            await #expect(throws: PersistenceError.writeFailed) {
                try await store.remove(account: "alice", condition: .always)
            }
            lap("remove")
            await #expect(throws: PersistenceError.lockFailed) {
                try await store.withExclusiveAccess(account: "alice") { 1 }
            }
            lap("withExclusiveAccess")
            await #expect(throws: PersistenceError.unavailable) { try await store.migrate() }
            lap("migrate")
            for (call, duration) in took {
                // Each call is ended by its own 300-ms bound, on the store's clock (a save may then ask, within one
                // more bound, whether its commit landed). A call that nothing on that clock ended would show no
                // time there.
                #expect(
                    duration >= .milliseconds(300) && duration <= .milliseconds(600),
                    "\(call) waited \(duration) on the store's clock")
            }
        }
    }

    @Test func tableNamesAreCheckedIdentifiers() {
        // The check itself is internal; valid names are accepted without touching a database.
        let configuration = PostgresClient.Configuration(
            host: "127.0.0.1", port: 1, username: "nobody", password: nil, database: nil, tls: .disable)
        let client = PostgresClient(configuration: configuration)
        for name in ["tokenkit_sessions", "auth.sessions", "_t1"] {
            #expect(
                PostgresTokenStore(client: client, configuration: .init(tableName: name)).configuration.tableName
                    == name)
        }
    }
}
/// A clock on which every sleep returns at once, having moved the clock's time to its deadline (when that is later).
/// The time it shows is the latest deadline any wait reached.
final class ElapsingClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let elapsed = LockedValue(Duration.zero)

    var now: Instant { Instant(offset: elapsed.withLock { $0 }) }
    var minimumResolution: Duration { .zero }

    func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        elapsed.withLock { $0 = max($0, deadline.offset) }
        await Task.yield()
    }
}
#endif
