import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

@Suite(.logLeakCheck()) struct InMemoryTokenStoreTests {
    private func session(generation: UInt64) -> StoredSession {
        StoredSession(
            token: TestSecrets.shared.register(
                AuthToken(
                    accessToken: "memory-access-\(generation)", refreshToken: "memory-refresh",
                    receivedAt: Date(timeIntervalSince1970: 0))),
            userID: "user", generation: generation)
    }

    @Test func conditionalSaveRefusesAStaleGeneration() async throws {
        let store = InMemoryTokenStore()
        try await store.save(session(generation: 1), account: "a", condition: .absent)
        try await store.save(session(generation: 2), account: "a", condition: .generation(1))
        await #expect(throws: PersistenceError.conflict) {
            try await store.save(session(generation: 3), account: "a", condition: .generation(1))
        }
        guard case .found(let stored) = await store.load(account: "a") else {
            Issue.record("session lost")
            return
        }
        #expect(stored.generation == 2)
    }
}
