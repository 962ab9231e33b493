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
import TokenRefresh

/// Two replicas over one table: after one signs Alice out and Bob in (stored at the generation Alice's session had),
/// the other, still holding Alice's session, never presents her refresh token, writes over Bob's row or removes it.
@Suite(.logLeakCheck(), .enabled(if: TestDatabase.isConfigured, TestDatabase.skipMessage))
struct SessionIdentityReplicaTests {
    @Test func aReplicaHoldingTheEndedSessionLeavesTheNextSessionAlone() async throws {
        let table = uniqueTable()
        let (clock, server, endpoint) = simulatedEndpoint(
            .init(rotatesRefreshTokens: true, detectsReuse: true, graceWindow: 0))
        try await withTwoReplicaStores(table: table) { stores, first in
            let replicas = stores.map { store in
                TokenRefreshClient(
                    strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store,
                    configuration: .init(account: "shared"), clock: clock, now: clock.wallClock)
            }
            let alice = await server.issueSession(userID: "alice", receivedAt: clock.date)
            _ = try await replicas[0].signIn(with: alice, userID: "alice")
            #expect(await replicas[1].restoreSession() == .signedIn(userID: "alice"))

            try await replicas[0].signOut()
            let bob = await server.issueSession(userID: "bob", receivedAt: clock.date)
            _ = try await replicas[0].signIn(with: bob, userID: "bob")
            // The other replica's request with Alice's token is refused; it refreshes.
            _ = try? await replicas[1].refreshToken(afterRejectionOf: alice.accessToken)

            #expect(await server.refreshCount == 0, "Alice's refresh token was presented after her sign-out")
            let saved = try #require(await stored(stores[0], account: "shared"), "Bob's row was removed")
            #expect(saved.userID == "bob", "Alice's session was written over Bob's row")
            #expect(saved.token.refreshToken == bob.refreshToken)
            #expect(replicas[1].currentState == .signedIn(userID: "bob"))
            try await dropTable(table, client: first)
        }
    }

    /// Opaque tokens, no user IDs: the other replica's refresh of Alice's session is on the wire when the first
    /// replica signs her out and Bob in. Its answer loses to Bob's row; it must fail, never answer with Bob's token.
    @Test func aRefreshInFlightAcrossASignOutAndSignInIsNeverAnsweredWithTheNextSessionsToken() async throws {
        let table = uniqueTable()
        let presented = AsyncStream<Void>.makeStream()
        let gate = AsyncStream<Void>.makeStream()
        let strategy = ClosureRefreshStrategy(requiresRefreshToken: true) { refreshToken in
            presented.continuation.yield()
            for await _ in gate.stream { break }
            return TokenResponse(
                accessToken: "\(refreshToken ?? "")-next-access", refreshToken: "\(refreshToken ?? "")-next",
                expiresIn: 3600)
        }
        try await withClient { first in
            try await withClient { second in
                let app = TokenRefreshClient(
                    strategy: strategy,
                    store: PostgresTokenStore(
                        client: first, configuration: .init(tableName: table, lockTimeout: .milliseconds(500))),
                    configuration: .init(account: "shared"))
                let replica = TokenRefreshClient(
                    strategy: strategy,
                    store: PostgresTokenStore(
                        client: second, configuration: .init(tableName: table, lockTimeout: .seconds(30))),
                    configuration: .init(account: "shared"))
                let opaque = { (name: String) in
                    AuthToken(
                        accessToken: "\(name)-pg-access", refreshToken: "\(name)-pg-refresh", receivedAt: Date(),
                        lifetime: 3600)
                }
                _ = try await app.signIn(with: opaque("alice"))
                _ = await replica.restoreSession()
                let request = Task { try await replica.refreshToken(afterRejectionOf: "alice-pg-access") }
                for await _ in presented.stream { break }

                try await app.signOut()
                _ = try await app.signIn(with: opaque("bob"))
                gate.continuation.yield()
                let outcome = await request.result

                if case .success(let token) = outcome {
                    Issue.record("Alice's request was answered with \(token.accessToken.prefix(3))'s token")
                }
                #expect((outcome.failure as? TokenRefreshError) == .sessionChanged)
                let saved = try #require(
                    await stored(
                        PostgresTokenStore(client: first, configuration: .init(tableName: table)), account: "shared"))
                #expect(saved.token.accessToken == "bob-pg-access", "Bob's row was overwritten")
                try await dropTable(table, client: first)
            }
        }
    }

    /// A session row as the previous release wrote it (format 1, no `session_id` column): plain.
    static let legacyPayload =
        #"{"generation":4,"token":{"accessToken":"pg-legacy-access-m1","expiresAt":800000600,"lifetime":600,"#
        + #""receivedAt":800000000,"refreshToken":"pg-legacy-refresh-m1","tokenType":"Bearer"},"userID":"user-4"}"#

    @Test func rowsOfThePreviousFormatLoadWithoutLossAndKeepWorking() async throws {
        let table = uniqueTable()
        let key = SymmetricKey(size: .bits256)
        try await withClient { client in
            // The table and rows as the previous release made them: lease columns, no identity column, format 1.
            try await client.query(
                """
                CREATE TABLE \(unescaped: table) (
                    account text PRIMARY KEY,
                    generation bigint NOT NULL,
                    format_version integer NOT NULL,
                    key_check text,
                    payload bytea NOT NULL,
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    lease_owner text,
                    lease_fence bigint NOT NULL DEFAULT 0,
                    lease_expires_at timestamptz
                )
                """)
            let plain = ByteBuffer(bytes: Array(Self.legacyPayload.utf8))
            try await client.query(
                """
                INSERT INTO \(unescaped: table) (account, generation, format_version, key_check, payload)
                VALUES ('plain', 4, 1, NULL, \(plain))
                """)
            // A sealed row of format 1: AES-GCM bound to the account only.
            let box = try AES.GCM.seal(
                Data(Self.legacyPayload.utf8), using: key,
                authenticating: Data("TokenKit.PostgresTokenStore.v1|sealed".utf8))
            let sealed = ByteBuffer(bytes: Array(try #require(box.combined)))
            let code = HMAC<SHA256>.authenticationCode(
                for: Data("TokenKit.PostgresTokenStore.key-check".utf8), using: key)
            let keyCheck = Data(Array(code).prefix(8)).base64EncodedString()
            try await client.query(
                """
                INSERT INTO \(unescaped: table) (account, generation, format_version, key_check, payload)
                VALUES ('sealed', 4, 1, \(keyCheck), \(sealed))
                """)

            let plainStore = PostgresTokenStore(client: client, configuration: .init(tableName: table))
            let sealedStore = PostgresTokenStore(
                client: client, configuration: .init(tableName: table, encryptionKey: key))
            for (store, account) in [(plainStore, "plain"), (sealedStore, "sealed")] {
                let loaded = try #require(await stored(store, account: account), "\(account)")
                #expect(loaded.generation == 4)
                #expect(loaded.sessionID == nil)
                #expect(loaded.userID == "user-4")
                #expect(loaded.token.accessToken == "pg-legacy-access-m1")
                #expect(loaded.token.refreshToken == "pg-legacy-refresh-m1")
                #expect(loaded.token.receivedAt == Date(timeIntervalSinceReferenceDate: 800_000_000))
                // A condition on another session at the same generation fails; on this one (no identity) it holds.
                await #expect(throws: PersistenceError.conflict) {
                    try await store.remove(account: account, condition: .session("another", generation: 4))
                }
                try await store.save(
                    StoredSession(token: loaded.token, userID: "user-4", generation: 5), account: account,
                    condition: .session(nil, generation: 4))
                #expect(await stored(store, account: account)?.generation == 5)
            }
            try await dropTable(table, client: client)
        }
    }

    @Test func aSealedPayloadPutBackUnderANewerGenerationDoesNotOpen() async throws {
        let table = uniqueTable()
        let key = SymmetricKey(size: .bits256)
        try await withClient { client in
            let store = PostgresTokenStore(client: client, configuration: .init(tableName: table, encryptionKey: key))
            let old = AuthToken(
                accessToken: "pg-rollback-access-1", refreshToken: "pg-rollback-refresh-1", receivedAt: Date(),
                lifetime: 600)
            let new = AuthToken(
                accessToken: "pg-rollback-access-2", refreshToken: "pg-rollback-refresh-2", receivedAt: Date(),
                lifetime: 600)
            try await store.save(
                StoredSession(token: old, generation: 1, sessionID: "rollback-session"), account: "alice",
                condition: .absent)
            var oldPayload: ByteBuffer?
            for try await payload in try await client.query(
                "SELECT payload FROM \(unescaped: table) WHERE account = 'alice'"
            ).decode(ByteBuffer.self) { oldPayload = payload }
            try await store.save(
                StoredSession(token: new, generation: 2, sessionID: "rollback-session"), account: "alice",
                condition: .session("rollback-session", generation: 1))
            // Someone with write access to the table puts the older ciphertext back under the current generation.
            let rolledBack = try #require(oldPayload)
            try await client.query("UPDATE \(unescaped: table) SET payload = \(rolledBack) WHERE account = 'alice'")
            guard case .unavailable(let error) = await store.load(account: "alice") else {
                Issue.record("the older ciphertext was read as the current session")
                return
            }
            #expect(error == .corrupt)
            try await dropTable(table, client: client)
        }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
#endif
