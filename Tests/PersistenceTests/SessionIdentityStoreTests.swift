import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenRefresh

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A session's identity in the stores: conditions match identity and generation together, and sessions stored
/// before identities existed load without loss and go on refreshing.
@Suite(.logLeakCheck()) struct SessionIdentityStoreTests {
    /// A session file as the previous release wrote it: no identity.
    static let legacyFile =
        #"{"formatVersion":1,"session":{"generation":7,"token":{"accessToken":"legacy-access-m1","expiresAt":800003600,"#
        + #""lifetime":3600,"receivedAt":800000000,"refreshToken":"legacy-refresh-m1","tokenType":"Bearer"},"#
        + #""userID":"user-7"}}"#

    static func token(_ name: String) -> AuthToken {
        AuthToken(accessToken: "\(name)-access", refreshToken: "\(name)-refresh", receivedAt: Date(), lifetime: 3600)
    }

    @Test func newSessionIDsAre128RandomBitsAndNeverRepeat() {
        let ids = (0..<1000).map { _ in StoredSession.newSessionID() }
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.count == 32 && $0.allSatisfy(\.isHexDigit) })
    }

    @Test func aConditionOnASessionNeverMatchesAnotherSessionAtTheSameGeneration() async throws {
        let store = InMemoryTokenStore()
        let bob = StoredSession(token: Self.token("bob"), userID: "bob", generation: 1, sessionID: "bob-session")
        try await store.save(bob, account: "default", condition: .absent)
        let alicesCondition = WriteCondition.session("alice-session", generation: 1)
        await #expect(throws: PersistenceError.conflict) {
            try await store.remove(account: "default", condition: alicesCondition)
        }
        await #expect(throws: PersistenceError.conflict) {
            try await store.save(
                StoredSession(token: Self.token("alice"), generation: 2, sessionID: "alice-session"),
                account: "default",
                condition: alicesCondition)
        }
        #expect(await store.load(account: "default").session == bob)
        try await store.remove(account: "default", condition: .session("bob-session", generation: 1))
        #expect(await store.load(account: "default").session == nil)
    }

    @Test func aFileStoreConditionMatchesIdentityAndGenerationAndKeepsTheIdentity() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        let bob = StoredSession(token: Self.token("bob"), userID: "bob", generation: 1, sessionID: "bob-session")
        try await store.save(bob, account: "default", condition: .absent)
        #expect(await store.load(account: "default").session == bob)
        await #expect(throws: PersistenceError.conflict) {
            try await store.remove(account: "default", condition: .session("alice-session", generation: 1))
        }
        await #expect(throws: PersistenceError.conflict) {
            try await store.remove(account: "default", condition: .session(nil, generation: 1))
        }
        #expect(await store.load(account: "default").session == bob)
    }

    @Test func aSessionFileOfThePreviousFormatLoadsWithoutLossAndGoesOnRefreshing() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        // Creates the directory as the store wants it; then the file is replaced by the previous release's bytes.
        try await store.save(
            StoredSession(token: Self.token("placeholder"), generation: 1), account: "default", condition: .always)
        let path = store.filePath(account: "default")
        try Data(Self.legacyFile.utf8).write(to: URL(filePath: path))
        _ = chmod(path, 0o600)

        let loaded = try #require(await store.load(account: "default").session)
        #expect(loaded.generation == 7)
        #expect(loaded.userID == "user-7")
        #expect(loaded.sessionID == nil)
        #expect(loaded.token.accessToken == "legacy-access-m1")
        #expect(loaded.token.refreshToken == "legacy-refresh-m1")
        #expect(loaded.token.receivedAt == Date(timeIntervalSinceReferenceDate: 800_000_000))
        #expect(loaded.token.lifetime == 3600)
        #expect(loaded.serverTimeOffset == nil)
        // A session of the previous format encodes as it did: nothing is added for the missing identity.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        #expect(
            String(decoding: try encoder.encode(loaded), as: UTF8.self)
                == String(Self.legacyFile.dropFirst(#"{"formatVersion":1,"session":"#.count).dropLast()))

        // A client restores it and refreshes it: the same session (no identity), one generation on.
        let client = TokenRefreshClient(
            strategy: ClosureRefreshStrategy(requiresRefreshToken: true) { _ in
                TokenResponse(accessToken: "legacy-access-m2", refreshToken: "legacy-refresh-m2", expiresIn: 3600)
            },
            store: store)
        #expect(await client.restoreSession() != .signedOut)
        #expect(try await client.refreshToken(afterRejectionOf: "legacy-access-m1").accessToken == "legacy-access-m2")
        let refreshed = try #require(await store.load(account: "default").session)
        #expect(refreshed.generation == 8)
        #expect(refreshed.sessionID == nil)
        #expect(refreshed.userID == "user-7")
    }
}
