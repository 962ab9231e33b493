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

/// Launch while locked, the return to the foreground, the background refresh: never a ghost sign-out.
@Suite(.logLeakCheck()) struct AppSessionLifecycleTests {
    static let group = "ABCDE12345.com.example.shared"

    /// A simulated Keychain holding a session issued by `server`, a client over it, and its lifecycle.
    struct Rig {
        let server: SimulatedTokenServer
        let keychain: KeychainSimulator
        let store: KeychainTokenStore
        let client: TokenRefreshClient
        let lifecycle: AppSessionLifecycle
        let clock: Locked<Date>

        init() async throws {
            let clock = Locked(Date(timeIntervalSince1970: 1_800_000_000))
            let now: @Sendable () -> Date = { clock.withLock { $0 } }
            server = SimulatedTokenServer(
                configuration: .init(apiKey: "lifecycle-api-key-7h", accessTokenLifetime: 600), now: now)
            keychain = KeychainSimulator(configuration: .init(accessGroups: [AppSessionLifecycleTests.group]))
            store = KeychainTokenStore(
                configuration: .init(service: "com.example.tokens", accessGroup: AppSessionLifecycleTests.group),
                keychain: keychain)
            let token = TestSecrets.shared.register(await server.issueSession(userID: "user-1"))
            try await store.save(
                StoredSession(token: token, userID: "user-1", generation: 1), account: "default", condition: .absent)
            client = TokenRefreshClient(
                strategy: JSONEndpointRefreshStrategy(
                    baseURL: URL(string: "https://auth.example.com")!, apiKey: "lifecycle-api-key-7h",
                    transport: server, now: now),
                store: store, now: now)
            lifecycle = AppSessionLifecycle(client: client, store: store)
            self.clock = clock
        }

        func advance(_ seconds: TimeInterval) { clock.withLock { $0 = $0.addingTimeInterval(seconds) } }
    }

    @Test func aLaunchWhileLockedIsUnavailableThenSignedInAndNeverSignedOut() async throws {
        let rig = try await Rig()
        let states = Locked<[AuthState]>([])
        let stream = rig.client.states()
        let watcher = Task { for await state in stream { states.withLock { $0.append(state) } } }
        defer { watcher.cancel() }

        rig.keychain.reboot()  // a prewarmed launch before the first unlock
        #expect(await rig.lifecycle.restore() == .unavailable)
        #expect(rig.client.currentState != .signedOut)
        #expect(await rig.store.load(account: "default").error == .unavailable, "the item is still there")

        rig.keychain.unlock()
        #expect(await rig.lifecycle.protectedDataDidBecomeAvailable() == .available(.signedIn(userID: "user-1")))
        #expect(rig.client.currentState == .signedIn(userID: "user-1"))
        #expect(!states.withLock { $0 }.contains(.signedOut), "no ghost sign-out: \(states.withLock { $0 })")
    }

    @Test func aLaunchWhileLockedWithoutTheRetryStaysUnavailableNotSignedOut() async throws {
        let rig = try await Rig()
        rig.keychain.reboot()
        #expect(await rig.lifecycle.restore() == .unavailable)
        #expect(await rig.lifecycle.restore() == .unavailable)
        #expect(rig.client.currentToken == nil)
        #expect(rig.client.currentState == .unavailable)
    }

    @Test func theReturnToTheForegroundRefreshesADueToken() async throws {
        let rig = try await Rig()
        _ = await rig.lifecycle.restore()
        rig.advance(601)  // the app slept past the token's expiry
        #expect(await rig.lifecycle.willEnterForeground() == .available(.signedIn(userID: "user-1")))
        #expect(await rig.server.refreshCount == 1)
        let token = try #require(rig.client.currentToken)
        #expect(!token.isExpired(at: rig.clock.withLock { $0 }))
        #expect(await rig.store.load(account: "default").session?.generation == 2)
    }

    @Test func theReturnToTheForegroundAdoptsWhatAnExtensionSavedInsteadOfRefreshing() async throws {
        let rig = try await Rig()
        _ = await rig.lifecycle.restore()
        rig.advance(601)
        // A widget refreshed while the app slept and saved the new pair in the shared item.
        let widgetToken = TestSecrets.shared.register(await rig.server.issueSession(userID: "user-1"))
        try await rig.store.save(
            StoredSession(token: widgetToken, userID: "user-1", generation: 2), account: "default",
            condition: .generation(1))
        await rig.lifecycle.willEnterForeground()
        #expect(await rig.server.refreshCount == 0)
        #expect(rig.client.currentToken?.accessToken == widgetToken.accessToken)
    }

    @Test func aBackgroundLaunchBeforeTheFirstUnlockRefreshesNothingAndKeepsTheSession() async throws {
        let rig = try await Rig()
        rig.advance(601)
        rig.keychain.reboot()  // the system launched the app for a background refresh before the first unlock
        #expect(await rig.lifecycle.performBackgroundRefresh() == false)
        #expect(rig.client.currentState != .signedOut)
        #expect(await rig.server.refreshCount == 0)
        rig.keychain.unlock()
        #expect(await rig.lifecycle.performBackgroundRefresh() == true)
        #expect(await rig.server.refreshCount == 1)
        #expect(await rig.store.load(account: "default").session?.generation == 2)
    }
}
