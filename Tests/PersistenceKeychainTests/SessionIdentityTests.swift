import AuthToken
import Foundation
import Persistence
import PersistenceKeychain
import Testing
import TokenKitAppLifecycle
import TokenKitKeychainTesting
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenRefresh

/// An app and its extension over one shared Keychain item: after a sign-out and a new sign-in in the app, the
/// extension never takes the new session for its own, presents the old session's refresh token, or writes over it.
@Suite(.logLeakCheck()) struct SessionIdentityTests {
    static let group = "ABCDE12345.com.example.shared"

    /// Two processes (the app and its extension), each with its own store value and client over one simulated Keychain.
    struct Rig {
        let server: SimulatedTokenServer
        let keychain = KeychainSimulator(configuration: .init(accessGroups: [SessionIdentityTests.group]))
        let appStore: KeychainTokenStore
        let extensionStore: KeychainTokenStore
        let app: TokenRefreshClient
        let extensionClient: TokenRefreshClient
        let lifecycle: AppSessionLifecycle

        init(strategy: (@escaping @Sendable () -> Date, SimulatedTokenServer) -> any RefreshStrategy = Self.endpoint) {
            let clock = Locked(Date(timeIntervalSince1970: 1_800_000_000))
            let now: @Sendable () -> Date = { clock.withLock { $0 } }
            server = SimulatedTokenServer(
                configuration: .init(apiKey: "identity-api-key-9q", accessTokenLifetime: 600), now: now)
            let configuration = KeychainTokenStore.Configuration(
                service: "com.example.tokens", accessGroup: SessionIdentityTests.group)
            appStore = KeychainTokenStore(configuration: configuration, keychain: keychain)
            extensionStore = KeychainTokenStore(configuration: configuration, keychain: keychain)
            app = TokenRefreshClient(strategy: strategy(now, server), store: appStore, now: now)
            extensionClient = TokenRefreshClient(strategy: strategy(now, server), store: extensionStore, now: now)
            lifecycle = AppSessionLifecycle(client: extensionClient, store: extensionStore)
        }

        static func endpoint(now: @escaping @Sendable () -> Date, server: SimulatedTokenServer) -> any RefreshStrategy {
            JSONEndpointRefreshStrategy(
                baseURL: URL(string: "https://auth.example.com")!, apiKey: "identity-api-key-9q", transport: server,
                now: now)
        }
    }

    @Test func anExtensionDoesNotTakeTheNextUsersSessionForItsOwnAfterASignOut() async throws {
        let rig = Rig()
        let alice = TestSecrets.shared.register(await rig.server.issueSession(userID: "alice"))
        _ = try await rig.app.signIn(with: alice, userID: "alice")
        #expect(await rig.extensionClient.restoreSession() == .signedIn(userID: "alice"))

        try await rig.app.signOut()
        let bob = TestSecrets.shared.register(await rig.server.issueSession(userID: "bob"))
        _ = try await rig.app.signIn(with: bob, userID: "bob")
        // As the lifecycle guide documents: the extension hears of the change and re-reads the store.
        await rig.lifecycle.storeDidChange()

        #expect(await rig.server.refreshCount == 0, "Alice's refresh token was presented after her sign-out")
        let stored = try #require(await rig.appStore.load(account: "default").session, "Bob's session was removed")
        #expect(stored.userID == "bob", "another user's session was written over Bob's")
        #expect(stored.token.refreshToken == bob.refreshToken)
        #expect(rig.extensionClient.currentToken?.refreshToken != alice.refreshToken)
        #expect(rig.extensionClient.currentState == .signedIn(userID: "bob"))
    }

    @Test func anExtensionWhoseRefreshTokenWasRevokedDoesNotRemoveTheNextSession() async throws {
        // Alice's refresh token was revoked at her sign-out: the server refuses it.
        let presented = Locked<[String]>([])
        let rig = Rig { _, _ in
            ClosureRefreshStrategy(requiresRefreshToken: true) { refreshToken in
                presented.withLock { $0.append(refreshToken ?? "") }
                throw TokenRefreshError.refreshTokenRejected
            }
        }
        let token = { (name: String) in
            AuthToken(accessToken: "\(name)-a1", refreshToken: "\(name)-r1", receivedAt: .now, lifetime: 600)
        }
        _ = try await rig.app.signIn(with: token("alice"), userID: "alice")
        _ = await rig.extensionClient.restoreSession()
        try await rig.app.signOut()
        _ = try await rig.app.signIn(with: token("bob"), userID: "bob")
        await rig.lifecycle.storeDidChange()

        let stored = try #require(await rig.appStore.load(account: "default").session, "Bob's session was removed")
        #expect(stored.token.accessToken == "bob-a1")
        #expect(presented.withLock { $0 }.isEmpty, "a refresh token was presented after the new sign-in")
    }

    @Test func aKeychainItemOfThePreviousFormatLoadsWithoutLossAndGoesOnRefreshing() async throws {
        let rig = Rig()
        // The item as the previous release wrote it: no session identity.
        let legacy =
            #"{"formatVersion":1,"session":{"generation":4,"token":{"accessToken":"legacy-item-access","#
            + #""refreshToken":"legacy-item-refresh","tokenType":"Bearer","receivedAt":800000000,"lifetime":600,"#
            + #""expiresAt":800000600},"userID":"user-4"}}"#
        let queries = KeychainQueryBuilder(service: "com.example.tokens", accessGroup: Self.group)
        #expect(rig.keychain.add(queries.addAttributes(account: "default", data: Data(legacy.utf8))) == .success)

        let loaded = try #require(await rig.appStore.load(account: "default").session)
        #expect(loaded.generation == 4)
        #expect(loaded.userID == "user-4")
        #expect(loaded.sessionID == nil)
        #expect(loaded.token.refreshToken == "legacy-item-refresh")
        #expect(loaded.token.receivedAt == Date(timeIntervalSinceReferenceDate: 800_000_000))
        // A condition on that session (no identity, generation 4) holds; one on any identity does not.
        await #expect(throws: PersistenceError.conflict) {
            try await rig.appStore.remove(account: "default", condition: .session("another", generation: 4))
        }
        try await rig.appStore.save(
            StoredSession(token: loaded.token, userID: "user-4", generation: 5), account: "default",
            condition: .session(nil, generation: 4))
        #expect(await rig.appStore.load(account: "default").session?.generation == 5)
    }

    /// Opaque tokens and no user IDs anywhere (as with django-oauth-toolkit or Doorkeeper): only the session's
    /// identity tells Alice's session from Bob's.
    @Test func withoutUserIDsARequestOfTheEndedSessionIsNeverRetriedWithTheNextSessionsToken() async throws {
        let issued = Locked(0)
        let rig = Rig { _, _ in
            ClosureRefreshStrategy { refreshToken in
                let next = issued.withLock {
                    $0 += 1; return $0
                }
                let prefix = (refreshToken ?? "").hasPrefix("alice") ? "alice" : "bob"
                return TokenResponse(
                    accessToken: "\(prefix)-a\(next + 1)", refreshToken: "\(prefix)-r\(next + 1)", expiresIn: 600)
            }
        }
        let opaque = { (name: String) in
            AuthToken(accessToken: "\(name)-a1", refreshToken: "\(name)-r1", receivedAt: .now, lifetime: 600)
        }
        _ = try await rig.app.signIn(with: opaque("alice"))
        _ = await rig.extensionClient.restoreSession()
        // The extension refreshed Alice once (its request went with alice-a2)...
        let aliceA2 = try await rig.extensionClient.refreshToken(afterRejectionOf: "alice-a1")
        #expect(aliceA2.accessToken.hasPrefix("alice"))
        // ...then the app signed Alice out and Bob in, and the server refused the extension's request for Alice.
        try await rig.app.signOut()
        _ = try await rig.app.signIn(with: opaque("bob"))

        var failure: (any Error)?
        var retriedWith: String?
        do {
            retriedWith = try await rig.extensionClient.refreshToken(afterRejectionOf: aliceA2.accessToken).accessToken
        } catch {
            failure = error
        }
        #expect(retriedWith == nil, "Alice's request was retried with \(retriedWith?.prefix(5) ?? "")")
        #expect((failure as? TokenRefreshError) == .sessionChanged)
        #expect(issued.withLock { $0 } == 1, "a refresh token was presented after the new sign-in")
        let stored = try #require(await rig.appStore.load(account: "default").session)
        #expect(stored.token.accessToken == "bob-a1")
    }
}
