import AuthToken
import Foundation
import Persistence
import Testing
import TokenKit
import TokenKitCompatibility
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenRefresh

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// What an attacker (or plain bad timing) tried against sign-out and the stores: a write that lands after
/// sign-out, copies left on disk, files planted by another user, an app's own writes overwritten.
@Suite(.logLeakCheck())
struct SessionEndAndStorageAttacks {
    // MARK: - Sign-out sticks

    @Test func aSignInWriteHeldInTheStoreUntilAfterSignOutDoesNotBringTheSessionBack() async throws {
        let store = HeldWriteStore()
        let clock = ManualClock()
        let client = TokenRefreshClient(
            strategy: Self.refusingStrategy(), store: store, clock: clock, now: clock.wallClock)
        let token = Self.token("alice-held-signin", clock: clock)
        await store.holdNextSave()
        let events = client.events()
        let signIn = Task { try await client.signIn(with: token, userID: "alice") }
        await store.waitUntilSaveIsHeld()

        // Sign out while the sign-in's write is still on its way to the store, and let the write land only once
        // sign-out has said the session is over.
        let signOut = Task { try await client.signOut() }
        for await event in events where event.kind == .signedOut { break }
        await store.releaseSave()
        await store.waitUntilReleasedSaveEnded()
        _ = try? await signIn.value
        try await signOut.value

        #expect(await store.load(account: "default").isAbsent, "the sign-in's late write was not removed")
        let nextLaunch = TokenRefreshClient(
            strategy: Self.refusingStrategy(), store: store, clock: clock, now: clock.wallClock)
        #expect(await nextLaunch.restoreSession() == .signedOut)
    }

    @Test func aFirstRefreshWriteHeldInTheStoreUntilAfterSignOutDoesNotBringTheSessionBack() async throws {
        let store = HeldWriteStore()
        let clock = ManualClock()
        TestSecrets.shared.register("first-refresh-access", as: .accessToken)
        TestSecrets.shared.register("first-refresh-rotated", as: .refreshToken)
        TestSecrets.shared.register("first-refresh-seed", as: .refreshToken)
        let strategy = ClosureRefreshStrategy(requiresRefreshToken: true) { _ in
            TokenResponse(accessToken: "first-refresh-access", refreshToken: "first-refresh-rotated", expiresIn: 3600)
        }
        let client = TokenRefreshClient(strategy: strategy, store: store, clock: clock, now: clock.wallClock)
        await store.holdNextSave()
        let events = client.events()
        // The seed apps' migration path: a refresh token kept from before starts the session.
        let refresh = Task { try await client.refreshToken("first-refresh-seed") }
        await store.waitUntilSaveIsHeld()

        let signOut = Task { try await client.signOut() }
        for await event in events where event.kind == .signedOut { break }
        await store.releaseSave()
        await store.waitUntilReleasedSaveEnded()
        _ = try? await refresh.value
        try await signOut.value

        #expect(await store.load(account: "default").isAbsent, "the refresh's late write was not removed")
        let nextLaunch = TokenRefreshClient(strategy: strategy, store: store, clock: clock, now: clock.wallClock)
        #expect(await nextLaunch.restoreSession() == .signedOut)
    }

    @Test func aSessionTheServerEndsWhileItsSignInWriteIsHeldIsNotRestoredAtTheNextLaunch() async throws {
        let store = HeldWriteStore()
        let clock = ManualClock()
        let client = TokenRefreshClient(
            strategy: Self.refusingStrategy(), store: store, clock: clock, now: clock.wallClock)
        let token = Self.token("alice-ended-by-server", clock: clock)
        await store.holdNextSave()
        let signIn = Task { try await client.signIn(with: token, userID: "alice") }
        await store.waitUntilSaveIsHeld()

        // The API refuses the new token even after a refresh: the client ends the session while its write is held.
        await client.sessionRejected(afterRefreshOf: token.accessToken, endSession: true)
        await store.releaseSave()
        await store.waitUntilReleasedSaveEnded()
        _ = try? await signIn.value
        // The app goes on: its next call finishes the removal the late write overtook.
        _ = try? await client.validToken()

        #expect(await store.load(account: "default").isAbsent, "the late write outlived the ended session")
    }

    @Test func aSignOutWhoseRemovalTimesOutOnceIsRetriedUntilTheSessionIsGone() async throws {
        let store = HeldWriteStore()
        let clock = ManualClock()
        let client = TokenRefreshClient(
            strategy: Self.refusingStrategy(), store: store,
            configuration: .init(persistRetryInterval: .seconds(5)), clock: clock, now: clock.wallClock)
        try await client.signIn(with: Self.token("alice-removal-fails", clock: clock), userID: "alice")
        await store.failNextRemoval(with: .lockTimedOut)

        await #expect(throws: TokenRefreshError.storageUnavailable) { try await client.signOut() }
        #expect(await store.load(account: "default").session != nil, "the failed removal removed something")

        // The app goes on (its sign-in screen asks for a token, or restores at the next foreground).
        clock.advance(by: .seconds(5))
        await #expect(throws: TokenRefreshError.signedOut) { try await client.validToken() }

        #expect(await store.load(account: "default").isAbsent, "the failed removal was never retried")
        let nextLaunch = TokenRefreshClient(
            strategy: Self.refusingStrategy(), store: store, clock: clock, now: clock.wallClock)
        #expect(await nextLaunch.restoreSession() == .signedOut)
    }

    // MARK: - The app's own persistence (FitIQ's AuthTokenPersistenceProtocol)

    @Test func aRefreshOfAlicesSessionDoesNotOverwriteBobsPairThatTheAppSavedItself() async throws {
        let persistence = AppKeychainPersistence()
        let alice = UUID()
        let bob = UUID()
        let aliceAccess = Self.secret("alice-app-access", as: .accessToken)
        try persistence.save(
            accessToken: aliceAccess, refreshToken: Self.secret("alice-app-refresh", as: .refreshToken))
        try persistence.saveUserProfileID(alice)
        TestSecrets.shared.register("alice-rotated-access", as: .accessToken)
        TestSecrets.shared.register("alice-rotated-refresh", as: .refreshToken)
        let client = TokenRefreshClient(
            strategy: ClosureRefreshStrategy(requiresRefreshToken: true) { _ in
                TokenResponse(
                    accessToken: "alice-rotated-access", refreshToken: "alice-rotated-refresh", expiresIn: 3600)
            },
            store: AuthTokenPersistenceStore(persistence))
        #expect(await client.restoreSession() == .signedIn(userID: alice.uuidString))

        // The app signs Bob in through its own login screen and saves his pair itself, as FitIQ does.
        let bobRefresh = Self.secret("bob-app-refresh", as: .refreshToken)
        try persistence.save(accessToken: Self.secret("bob-app-access", as: .accessToken), refreshToken: bobRefresh)
        try persistence.saveUserProfileID(bob)
        // Then a request still carrying Alice's token is refused, and the client refreshes.
        _ = try? await client.refreshToken(afterRejectionOf: aliceAccess)

        #expect(try persistence.fetchRefreshToken() == bobRefresh, "Bob's pair was overwritten")
        #expect(try persistence.fetchUserProfileID() == bob)
    }

    @Test func validTokenHandsOutThePairTheAppSavedItselfNotTheOneInMemory() async throws {
        let persistence = AppKeychainPersistence()
        let alice = UUID()
        let bob = UUID()
        let aliceAccess = Self.secret("alice-own-write-access", as: .accessToken)
        try persistence.save(
            accessToken: aliceAccess, refreshToken: Self.secret("alice-own-write-refresh", as: .refreshToken))
        try persistence.saveUserProfileID(alice)
        let client = TokenRefreshClient(
            strategy: Self.refusingStrategy(), store: AuthTokenPersistenceStore(persistence))
        #expect(await client.restoreSession() == .signedIn(userID: alice.uuidString))
        #expect(try await client.validToken().accessToken == aliceAccess)

        // The app signs Bob in through its own login screen and saves his pair itself, as FitIQ does.
        let bobAccess = Self.secret("bob-own-write-access", as: .accessToken)
        try persistence.save(
            accessToken: bobAccess, refreshToken: Self.secret("bob-own-write-refresh", as: .refreshToken))
        try persistence.saveUserProfileID(bob)

        let token = try await client.validToken()
        #expect(token.accessToken == bobAccess, "validToken() handed out the pair held in memory")
        #expect(client.currentState == .signedIn(userID: bob.uuidString))
        // A second call takes the fast path again: nothing changed since.
        #expect(try await client.validToken().accessToken == bobAccess)
    }

    @Test func aClientForAnotherAccountNeitherReadsNorOverwritesTheAppsSession() async throws {
        let persistence = AppKeychainPersistence()
        let alice = UUID()
        let aliceRefresh = Self.secret("alice-only-refresh", as: .refreshToken)
        try persistence.save(
            accessToken: Self.secret("alice-only-access", as: .accessToken), refreshToken: aliceRefresh)
        try persistence.saveUserProfileID(alice)
        let clock = ManualClock()
        let bobsClient = TokenRefreshClient(
            strategy: Self.refusingStrategy(), store: AuthTokenPersistenceStore(persistence),
            configuration: .init(account: "bob"), clock: clock, now: clock.wallClock)

        #expect(await bobsClient.restoreSession() != .signedIn(userID: alice.uuidString), "Bob's client read Alice")
        _ = try? await bobsClient.signIn(with: Self.token("bob-other-account", clock: clock), userID: UUID().uuidString)
        #expect(try persistence.fetchRefreshToken() == aliceRefresh, "Bob's client overwrote Alice's pair")
        #expect(try persistence.fetchUserProfileID() == alice)
    }

    @Test func aSessionStoredWithoutAProfileIDDoesNotInheritThePreviousUsersProfileID() async throws {
        let persistence = AppKeychainPersistence()
        try persistence.save(
            accessToken: Self.secret("alice-before-carol-access", as: .accessToken),
            refreshToken: Self.secret("alice-before-carol-refresh", as: .refreshToken))
        try persistence.saveUserProfileID(UUID())
        let clock = ManualClock()
        let client = TokenRefreshClient(
            strategy: Self.refusingStrategy(), store: AuthTokenPersistenceStore(persistence), clock: clock,
            now: clock.wallClock)

        // Carol's user ID is not a UUID (a JWT `sub` such as Clerk's), so no profile ID can be stored for her.
        try await client.signIn(with: Self.token("carol", clock: clock), userID: "user_carol")

        #expect(try persistence.fetchUserProfileID() == nil, "Carol's tokens carry Alice's profile ID")
    }

    // MARK: - Copies left on disk

    @Test func signingOutLeavesNoTemporaryOrCorruptCopyOfTheRefreshToken() async throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let store = FileTokenStore(directory: directory.store)
        let clock = ManualClock()
        let token = Self.token("copies", clock: clock)
        let refreshToken = try #require(token.refreshToken)
        let client = TokenRefreshClient(
            strategy: Self.refusingStrategy(), store: store, clock: clock, now: clock.wallClock)
        try await client.signIn(with: token, userID: "alice")
        let path = store.filePath(account: "default")
        let bytes = try Data(contentsOf: URL(filePath: path))
        // A writer killed between writing its temporary file and renaming it leaves a whole copy behind...
        try bytes.write(to: URL(filePath: path + ".tmp-4242-killed"))
        _ = chmod(path + ".tmp-4242-killed", 0o600)
        // ...and a torn write makes the session file unreadable; the next launch moves it aside as `.corrupt-1`.
        try (bytes.prefix(bytes.count / 2) + Data("torn".utf8)).write(to: URL(filePath: path))
        _ = chmod(path, 0o600)
        let nextLaunch = TokenRefreshClient(
            strategy: Self.refusingStrategy(), store: store, clock: clock, now: clock.wallClock)
        await nextLaunch.restoreSession()
        #expect(directory.names().contains { $0.contains(".corrupt-") }, "no corrupt copy was set aside")

        try await nextLaunch.signOut()

        for name in directory.names() {
            let contents = try Data(contentsOf: directory.store.appending(path: name))
            #expect(
                contents.range(of: Data(refreshToken.utf8)) == nil && contents.range(of: Data("copies".utf8)) == nil,
                "\(name) still holds the session after sign-out")
        }
    }

    // MARK: - Files another user could have planted

    @Test func aWorldWritableSessionDirectoryIsRefusedNotTightened() async throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let store = FileTokenStore(directory: directory.store)
        try await store.save(Self.session("world-writable"), account: "default", condition: .always)
        _ = chmod(directory.store.path, 0o777)

        let read = await store.load(account: "default")

        #expect(read.error == .permissionsTooWide, "a directory anyone could write to was trusted")
        #expect(Self.mode(directory.store.path) == 0o777, "the directory was changed behind the user's back")
    }

    @Test(.enabled(if: geteuid() == 0, "chown to another user needs root"))
    func aSessionFilePlantedByAnotherUserIsRefused() async throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let store = FileTokenStore(directory: directory.store)
        // Another user's session, with the right name and mode, in the store's directory.
        try await store.save(Self.session("planted"), account: "default", condition: .always)
        try #require(chown(store.filePath(account: "default"), 4242, 4242) == 0)

        let read = await store.load(account: "default")

        #expect(read.error == .ownedByAnotherUser, "a file another user owns was loaded")
        await #expect(throws: PersistenceError.ownedByAnotherUser) {
            try await store.save(Self.session("overwrite"), account: "default", condition: .always)
        }
    }

    @Test(.enabled(if: geteuid() == 0, "chown to another user needs root"))
    func aSessionDirectoryOwnedByAnotherUserIsRefused() async throws {
        let directory = try ScratchDirectory()
        defer { directory.remove() }
        let store = FileTokenStore(directory: directory.store)
        try await store.save(Self.session("foreign-directory"), account: "default", condition: .always)
        try #require(chown(directory.store.path, 4242, 4242) == 0)

        let read = await store.load(account: "default")

        #expect(read.error == .ownedByAnotherUser, "a directory another user owns was trusted")
        await #expect(throws: PersistenceError.ownedByAnotherUser) {
            try await store.save(Self.session("foreign-directory-2"), account: "default", condition: .always)
        }
    }

    // MARK: - Where the convenience factories keep tokens

    /// On Apple platforms the FitIQ and Lume apps kept tokens in the Keychain; a factory must not quietly move them into an
    /// unencrypted file that backups carry. (Only the Linux branch of this test runs in TokenKit's CI.)
    @Test func theConvenienceFactoriesDoNotKeepTokensInAPlainFileWhereTheKeychainExists() {
        let fitIQ = AuthClient.fitIQ(
            baseURL: URL(string: "https://api.example.com")!, apiKey: "attack-api-key", appName: "AttackApp")
        let oauth = AuthClient.oauth(
            tokenURL: URL(string: "https://auth.example.com/oauth/token")!, clientID: "attack-app",
            apiURL: URL(string: "https://api.example.com")!, appName: "AttackApp")
        for client in [fitIQ, oauth] {
            let store = Mirror(reflecting: client.tokens).children.first { $0.label == "store" }?.value as? String
            #if canImport(Security)
                #expect(store == "KeychainTokenStore")
            #else
                #expect(store == "FileTokenStore")
            #endif
        }
    }

    // MARK: - Helpers

    static func refusingStrategy() -> ClosureRefreshStrategy {
        ClosureRefreshStrategy(requiresRefreshToken: true) { _ in throw TokenRefreshError.transient }
    }

    static func secret(_ name: String, as kind: TestSecrets.Kind) -> String {
        let value = "\(name)-\(UUID().uuidString)"
        TestSecrets.shared.register(value, as: kind)
        return value
    }

    static func session(_ name: String) -> StoredSession {
        StoredSession(token: token(name, clock: ManualClock()), userID: "user-\(name)", generation: 1)
    }

    static func mode(_ path: String) -> UInt32 {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        return UInt32(info.st_mode) & 0o7777
    }

    /// A pair valid for an hour from the clock's now, registered with the leak check.
    static func token(_ name: String, clock: ManualClock) -> AuthToken {
        TestSecrets.shared.register(
            AuthToken(
                accessToken: "\(name)-access-\(UUID().uuidString)",
                refreshToken: "\(name)-refresh-\(UUID().uuidString)",
                receivedAt: clock.date, lifetime: 3600))
    }
}

/// An in-memory store whose next save can be held (the test releases it) and whose next removal can fail.
actor HeldWriteStore: TokenStore {
    private var sessions: [String: StoredSession] = [:]
    private var holdSave = false
    private var held: CheckedContinuation<Void, Never>?
    private var heldWatchers: [CheckedContinuation<Void, Never>] = []
    private var removalFailure: PersistenceError?
    private var releasedSaveEnded = false
    private var endWatchers: [CheckedContinuation<Void, Never>] = []

    func holdNextSave() { holdSave = true }

    func failNextRemoval(with error: PersistenceError) { removalFailure = error }

    /// Returns once a save is being held.
    func waitUntilSaveIsHeld() async {
        if held != nil { return }
        await withCheckedContinuation { heldWatchers.append($0) }
    }

    func releaseSave() {
        held?.resume()
        held = nil
    }

    /// Returns once the released save has been applied or refused.
    func waitUntilReleasedSaveEnded() async {
        if releasedSaveEnded { return }
        await withCheckedContinuation { endWatchers.append($0) }
    }

    func load(account: String) async -> TokenStoreRead {
        sessions[account].map(TokenStoreRead.found) ?? .absent
    }

    func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
        // The condition is checked and the write applied together, after the hold: the write is "on the wire".
        if holdSave {
            holdSave = false
            await withCheckedContinuation { continuation in
                held = continuation
                for watcher in heldWatchers { watcher.resume() }
                heldWatchers = []
            }
            defer {
                releasedSaveEnded = true
                for watcher in endWatchers { watcher.resume() }
                endWatchers = []
            }
            guard condition.allows(stored: sessions[account]) else { throw .conflict }
            sessions[account] = session
            return
        }
        guard condition.allows(stored: sessions[account]) else { throw .conflict }
        sessions[account] = session
    }

    func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        if let removalFailure {
            self.removalFailure = nil
            throw removalFailure
        }
        guard condition.allows(stored: sessions[account]) else { throw .conflict }
        sessions[account] = nil
    }
}

/// The app's own Keychain adapter, in the FitIQ app's shape: seven synchronous methods over one slot.
final class AppKeychainPersistence: AuthTokenPersistenceProtocol, @unchecked Sendable {
    // `values` is only touched while holding `lock`.
    private let lock = NSLock()
    private var values: [String: String] = [:]

    func save(accessToken: String, refreshToken: String) throws {
        lock.withLock {
            values["access"] = accessToken
            values["refresh"] = refreshToken
        }
    }
    func fetchAccessToken() throws -> String? { lock.withLock { values["access"] } }
    func fetchRefreshToken() throws -> String? { lock.withLock { values["refresh"] } }
    func deleteTokens() throws {
        lock.withLock {
            values["access"] = nil
            values["refresh"] = nil
        }
    }
    func saveUserProfileID(_ userID: UUID) throws { lock.withLock { values["user"] = userID.uuidString } }
    func fetchUserProfileID() throws -> UUID? { lock.withLock { values["user"].flatMap(UUID.init(uuidString:)) } }
    func deleteUserProfileID() throws { lock.withLock { values["user"] = nil } }
}

/// A fresh private directory; the store gets `store` inside it.
struct ScratchDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appending(path: "tokenkit-attack-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        _ = chmod(url.path, 0o700)
    }

    var store: URL { url.appending(path: "sessions", directoryHint: .isDirectory) }

    func names() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: store.path)) ?? [] }

    func remove() { try? FileManager.default.removeItem(at: url) }
}
