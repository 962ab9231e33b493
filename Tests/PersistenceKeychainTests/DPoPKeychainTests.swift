import AuthToken
import Foundation
import NetworkRetry
import Persistence
import PersistenceKeychain
import Testing
import TokenKitKeychainTesting
import TokenKitLogCheck
import TokenRefresh

/// The DPoP key shares the session's Keychain item: an extension with the same access group gets it back with the
/// session, and a removal deletes both.
@Suite(.logLeakCheck()) struct DPoPKeychainTests {
    @Test func anExtensionRestoresTheKeyFromTheSharedItemAndARemovalDeletesIt() async throws {
        let keychain = KeychainTokenStoreTests.simulator()
        let appProver = DPoPProver(key: SoftwareDPoPKey())
        let app = DPoPSessionStore(KeychainTokenStoreTests.store(keychain), prover: appProver)
        let token = TestSecrets.shared.register(
            AuthToken(
                accessToken: "keychain-dpop-at", refreshToken: "keychain-dpop-rt", tokenType: "DPoP",
                receivedAt: Date(timeIntervalSince1970: 1_800_000_000), lifetime: 3600))
        try await app.save(
            StoredSession(token: token, generation: 1, sessionID: "s-1"), account: "default", condition: .always)

        let extensionProver = DPoPProver(key: SoftwareDPoPKey())
        let appExtension = DPoPSessionStore(KeychainTokenStoreTests.store(keychain), prover: extensionProver)
        #expect(await appExtension.restore(account: "default") == .restored(appProver.thumbprint))
        #expect(extensionProver.thumbprint == appProver.thumbprint)

        try await app.remove(account: "default", condition: .always)
        #expect(await appExtension.restore(account: "default") == .noSession)
    }
}
