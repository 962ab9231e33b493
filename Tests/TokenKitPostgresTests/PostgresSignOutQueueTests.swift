// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import Crypto
import Foundation
import Persistence
import PostgresNIO
import Testing
import TokenKitLogCheck
import TokenKitPostgres

/// A `PostgresTokenStore` keeps a client's pending sign-outs (revocations still to send, a removal still to make) in
/// a table beside the sessions', so they outlive the replica that signed out.
@Suite(.logLeakCheck(), .enabled(if: TestDatabase.isConfigured, TestDatabase.skipMessage))
struct PostgresSignOutQueueTests {
    static let pending = Data(
        #"{"formatVersion":1,"revocations":[{"refreshToken":"pg-queue-refresh","sends":0}]}"#.utf8)

    @Test func whatIsSavedIsReadBackPerAccountUntilItIsCleared() async throws {
        try await withStore { store, _, _ in
            #expect(try await store.loadSignOutQueue(account: "alice") == nil)
            try await store.saveSignOutQueue(Self.pending, account: "alice")
            #expect(try await store.loadSignOutQueue(account: "alice") == Self.pending)
            #expect(try await store.loadSignOutQueue(account: "bob") == nil)
            let replaced = Data(#"{"formatVersion":1,"revocations":[]}"#.utf8)
            try await store.saveSignOutQueue(replaced, account: "alice")
            #expect(try await store.loadSignOutQueue(account: "alice") == replaced)
            try await store.saveSignOutQueue(nil, account: "alice")
            #expect(try await store.loadSignOutQueue(account: "alice") == nil)
            try await store.saveSignOutQueue(nil, account: "alice")  // nothing to clear: no error
        }
    }

    @Test func anotherReplicaReadsWhatOneSaved() async throws {
        try await withStore { store, client, table in
            try await store.saveSignOutQueue(Self.pending, account: "alice")
            let replica = PostgresTokenStore(client: client, configuration: .init(tableName: table))
            #expect(try await replica.loadSignOutQueue(account: "alice") == Self.pending)
        }
    }

    @Test func sealedEntriesHoldNoTokenAndOpenWithTheirKeyAndAccountOnly() async throws {
        let key = SymmetricKey(size: .bits256)
        try await withStore(key: key) { store, client, table in
            try await store.saveSignOutQueue(Self.pending, account: "alice")
            #expect(try await store.loadSignOutQueue(account: "alice") == Self.pending)
            let rows = try await client.query("SELECT payload FROM \(unescaped: table)_sign_outs")
            var entries = 0
            for try await payload in rows.decode(ByteBuffer.self) {
                entries += 1
                #expect(!String(decoding: payload.readableBytesView, as: UTF8.self).contains("pg-queue"))
            }
            #expect(entries == 1)

            let otherKey = PostgresTokenStore(
                client: client, configuration: .init(tableName: table, encryptionKey: SymmetricKey(size: .bits256)))
            await #expect(throws: PersistenceError.wrongKey) { try await otherKey.loadSignOutQueue(account: "alice") }
            let noKey = PostgresTokenStore(client: client, configuration: .init(tableName: table))
            await #expect(throws: PersistenceError.wrongKey) { try await noKey.loadSignOutQueue(account: "alice") }

            try await client.query(
                "INSERT INTO \(unescaped: table)_sign_outs SELECT 'mallory', key_check, payload, now() FROM \(unescaped: table)_sign_outs WHERE account = 'alice'"
            )
            await #expect(throws: PersistenceError.corrupt) { try await store.loadSignOutQueue(account: "mallory") }
        }
    }

    /// Two replicas (each its own pool) changing one account's pending sign-outs at once, many times, starting with no
    /// row: every change is kept, each made over the one before it.
    @Test(.timeLimit(.minutes(2))) func changesFromTwoReplicasAtOnceAreAllKept() async throws {
        try await withReplicas { replicas in
            let stores = replicas.clients.prefix(2).map { client in
                PostgresTokenStore(client: client, configuration: .init(tableName: replicas.table))
            }
            for store in stores { #expect(try await store.loadSignOutQueue(account: "alice") == nil) }  // the tables
            let changes = 40
            try await withThrowingTaskGroup(of: Void.self) { group in
                for change in 0..<changes {
                    group.addTask {
                        _ = try await stores[change % 2].updateSignOutQueue(account: "alice") { data in
                            (data ?? Data()) + Data("\(change)\n".utf8)
                        }
                    }
                }
                try await group.waitForAll()
            }
            let kept = try #require(try await stores[0].loadSignOutQueue(account: "alice"))
            let lines = String(decoding: kept, as: UTF8.self).split(separator: "\n")
            #expect(lines.count == changes, "changes kept: \(lines.count) of \(changes)")
            #expect(Set(lines).count == changes)
            #expect(try await stores[1].updateSignOutQueue(account: "alice") { _ in nil } == nil)
            #expect(try await stores[0].loadSignOutQueue(account: "alice") == nil)
        }
    }

    /// The waits are on an injected clock that elapses at once; the time limit is only a guard against a hang.
    @Test(.timeLimit(.minutes(1))) func aDatabaseThatIsDownFailsTheReadAndTheWriteWithoutHanging() async throws {
        try await withUnreachableClient { client in
            let store = PostgresTokenStore(
                client: client, configuration: .init(tableName: uniqueTable(), operationTimeout: .milliseconds(300)),
                clock: ElapsingClock())
            await #expect(throws: PersistenceError.readFailed) { try await store.loadSignOutQueue(account: "alice") }
            await #expect(throws: PersistenceError.writeFailed) {
                try await store.saveSignOutQueue(Self.pending, account: "alice")
            }
        }
    }
}
#endif
