import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitCompatibility
import TokenKitLogCheck
import TokenKitTesting

/// The adapter over Lume's storage judges conditional writes by the session's identity as well as its generation.
@Suite(.logLeakCheck()) struct TokenStorageStoreTests {
    /// Lume's storage: one token, in memory.
    actor Storage: TokenStorageProtocol {
        var token: AuthToken?
        func saveToken(_ token: AuthToken) async throws { self.token = token }
        func getToken() async throws -> AuthToken? { token }
        func deleteToken() async throws { token = nil }
    }

    static func session(_ name: String, generation: UInt64, sessionID: String?) -> StoredSession {
        let token = AuthToken(
            accessToken: "\(name)-storage-access", refreshToken: "\(name)-storage-refresh",
            receivedAt: Date(timeIntervalSince1970: 1_750_000_000), lifetime: 3600)
        return StoredSession(token: token, generation: generation, sessionID: sessionID)
    }

    @Test func aSessionSignedInLaterIsNotTakenForTheOneAWriterHeld() async throws {
        let store = TokenStorageStore(Storage())
        let alice = StoredSession.newSessionID()
        try await store.save(
            Self.session("alice", generation: 1, sessionID: alice), account: "default", condition: .absent)
        try await store.remove(account: "default", condition: .session(alice, generation: 1))
        let bob = StoredSession.newSessionID()
        try await store.save(Self.session("bob", generation: 1, sessionID: bob), account: "default", condition: .absent)
        guard case .found(let stored) = await store.load(account: "default") else {
            Issue.record("Bob's session was not found")
            return
        }
        #expect(stored.sessionID == bob)
        // A writer that still holds Alice's session at the generation Bob's now has: refused, whatever the number.
        await #expect(throws: PersistenceError.conflict) {
            try await store.save(
                Self.session("alice", generation: stored.generation, sessionID: alice), account: "default",
                condition: .session(alice, generation: stored.generation))
        }
        await #expect(throws: PersistenceError.conflict) {
            try await store.remove(account: "default", condition: .session(alice, generation: stored.generation))
        }
        try await store.remove(account: "default", condition: .session(bob, generation: stored.generation))
        guard case .absent = await store.load(account: "default") else {
            Issue.record("Bob's own removal did not land")
            return
        }
    }
}
