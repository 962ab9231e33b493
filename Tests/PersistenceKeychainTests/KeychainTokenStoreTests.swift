import AuthToken
import Foundation
import Persistence
import PersistenceKeychain
import Testing
import TokenKitKeychainTesting
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

/// The Keychain store against the simulator: the store contract, the locked device, duplicates, entitlements and
/// user presence.
@Suite(.logLeakCheck()) struct KeychainTokenStoreTests {
    static let group = "ABCDE12345.com.example.shared"

    static func store(
        _ keychain: KeychainSimulator, _ configure: (inout KeychainTokenStore.Configuration) -> Void = { _ in }
    )
        -> KeychainTokenStore
    {
        var configuration = KeychainTokenStore.Configuration(service: "com.example.tokens", accessGroup: group)
        configure(&configuration)
        return KeychainTokenStore(configuration: configuration, keychain: keychain)
    }

    static func simulator() -> KeychainSimulator {
        KeychainSimulator(configuration: .init(accessGroups: ["ABCDE12345.com.example.app", group]))
    }

    @Test func twoStoresOnOneSimulatedKeychainKeepEveryClauseOfTheStoreContract() async throws {
        let keychain = Self.simulator()
        // Without a lock timeout: a waiting handle waits as long as the check holds the lock.
        try await TokenStoreConformance { Self.store(keychain) { $0.lockTimeout = nil } }.check()
    }

    @Test func twoStoresSharingAContainerLockKeepEveryClause() async throws {
        let keychain = Self.simulator()
        let container = try TemporaryDirectory()
        defer { container.remove() }
        // With a lock timeout (a long one, for a loaded test run): a waiting handle polls the lock file.
        try await TokenStoreConformance {
            Self.store(keychain) {
                $0.sharedContainer = container.url
                $0.lockTimeout = .seconds(60)
            }
        }.check()
    }

    /// The lock files in the shared container are named by a keyed hash: a listing of the container does not
    /// confirm a guessed account (its plain SHA-256, or that of the lock's name, appears nowhere).
    @Test func theLockFilesInTheSharedContainerDoNotConfirmAGuessedAccount() async throws {
        let keychain = Self.simulator()
        let container = try TemporaryDirectory()
        defer { container.remove() }
        let store = Self.store(keychain) { $0.sharedContainer = container.url }
        let account = "ada@example.com"
        try await store.save(keychainTestSession("shared", generation: 1), account: account, condition: .absent)
        try await store.withExclusiveAccess(account: account) {}
        let locks = container.url.appendingPathComponent("TokenKitKeychainLocks")
        let names = try FileManager.default.contentsOfDirectory(atPath: locks.path)
        #expect(names.contains { $0.hasSuffix(".lock") })
        // SHA-256 of the account, and of the lock's name (`<access group>|<service>|<account>`).
        let guesses = [
            "b5fc85e55755f9e0d030a10ab4429b6b2944855f9a0d60077fe832becbc41d72",
            "98300c88017f64cae51f362394c2dee4d5884a4b79bc5277af080c137b290e51",
        ]
        for name in names {
            for guess in guesses { #expect(!name.contains(guess), "\(name) is a plain SHA-256 of the account") }
        }
    }

    @Test func aRecordOfServerFailuresIsKeptWithTheSessionAtTheSameGeneration() async throws {
        let keychain = Self.simulator()
        let store = Self.store(keychain)
        let session = keychainTestSession("failures", generation: 5)
        try await store.save(session, account: "default", condition: .always)
        let failures = [Date(timeIntervalSince1970: 1_800_000_000)]
        try await store.save(
            session.with(recentServerFailures: failures), account: "default",
            condition: .session(session.sessionID, generation: 5))
        let loaded = await Self.store(keychain).load(account: "default").session
        #expect(loaded?.recentServerFailures == failures && loaded?.generation == 5 && loaded?.token == session.token)
    }

    @Test func aReadBeforeTheFirstUnlockIsUnavailableNeverAbsent() async throws {
        let keychain = Self.simulator()
        let store = Self.store(keychain)
        try await store.save(keychainTestSession("boot", generation: 1), account: "default", condition: .always)
        keychain.reboot()
        let locked = await store.load(account: "default")
        #expect(locked.error == .unavailable)
        #expect(!locked.isAbsent)
        await #expect(throws: PersistenceError.unavailable) {
            try await store.save(keychainTestSession("boot", generation: 2), account: "default", condition: .always)
        }
        keychain.unlock()
        #expect(await store.load(account: "default").session?.generation == 1)
    }

    @Test func anAfterFirstUnlockItemStaysReadableWhileTheDeviceIsLockedAgain() async throws {
        let keychain = Self.simulator()
        let store = Self.store(keychain)
        let strict = Self.store(keychain) {
            $0.service = "com.example.strict"
            $0.accessibility = .whenUnlockedThisDeviceOnly
        }
        try await store.save(keychainTestSession("bg", generation: 1), account: "default", condition: .always)
        try await strict.save(keychainTestSession("fg", generation: 1), account: "default", condition: .always)
        keychain.lock()
        #expect(await store.load(account: "default").session?.generation == 1)
        #expect(await strict.load(account: "default").error == .unavailable)
    }

    @Test func anItemAddedByAnotherProcessBetweenTheReadAndTheAddBecomesAnUpdate() async throws {
        let keychain = Self.simulator()
        // The other process's add lands after this store's read found nothing and before its own add.
        let theirs = keychainTestSession("theirs", generation: 4)
        let racing = RacingKeychain(base: keychain) {
            let bytes = try! JSONEncoder().encode(Wrapped(formatVersion: 1, session: theirs))
            _ = keychain.add(
                KeychainQueryBuilder(service: "com.example.tokens", accessGroup: Self.group)
                    .addAttributes(account: "default", data: bytes))
        }
        let store = KeychainTokenStore(
            configuration: .init(service: "com.example.tokens", accessGroup: Self.group), keychain: racing)
        let session = keychainTestSession("dup", generation: 1)
        // An unconditional write lands as an update of the item the other process added.
        try await store.save(session, account: "default", condition: .always)
        #expect(await Self.store(keychain).load(account: "default").session == session)
        #expect(racing.sawDuplicate)
    }

    @Test func aConditionalWriteThatLosesTheRaceToAnAddIsAConflictNotAnOverwrite() async throws {
        let keychain = Self.simulator()
        let other = Self.store(keychain)
        let otherSession = keychainTestSession("other", generation: 5)
        let racing = RacingKeychain(base: keychain) {
            let bytes = try! JSONEncoder().encode(Wrapped(formatVersion: 1, session: otherSession))
            _ = keychain.add(
                KeychainQueryBuilder(service: "com.example.tokens", accessGroup: Self.group)
                    .addAttributes(account: "default", data: bytes))
        }
        let store = KeychainTokenStore(
            configuration: .init(service: "com.example.tokens", accessGroup: Self.group), keychain: racing)
        await #expect(throws: PersistenceError.conflict) {
            try await store.save(keychainTestSession("mine", generation: 1), account: "default", condition: .absent)
        }
        #expect(await other.load(account: "default").session == otherSession)
    }

    @Test func anAccessGroupTheAppIsNotEntitledToIsAMissingEntitlementNamingIt() async throws {
        let keychain = KeychainSimulator(configuration: .init(accessGroups: ["ABCDE12345.com.example.app"]))
        let store = Self.store(keychain)
        let read = await store.load(account: "default")
        #expect(read.error == .missingEntitlement)
        #expect(read.error?.detail?.contains(Self.group) == true)
        await #expect(throws: PersistenceError.missingEntitlement) {
            try await store.save(keychainTestSession("ent", generation: 1), account: "default", condition: .always)
        }
    }

    @Test func aProcessWithoutAnyKeychainEntitlementGetsMissingEntitlementNotSignedOut() async throws {
        let store = Self.store(KeychainSimulator(configuration: .init(accessGroups: []))) { $0.accessGroup = nil }
        let read = await store.load(account: "default")
        #expect(read.error == .missingEntitlement)
        #expect(read.error?.detail?.contains("application-identifier") == true)
    }

    @Test func theUserPresenceOptionReachesTheKeychainAndADismissedPromptIsUnavailable() async throws {
        let keychain = Self.simulator()
        let store = Self.store(keychain) { $0.requiresUserPresence = true }
        try await store.save(keychainTestSession("bio", generation: 1), account: "default", condition: .always)
        #expect(await store.load(account: "default").session?.generation == 1)
        keychain.configuration.userPresence = false
        let read = await store.load(account: "default")
        #expect(read.error == .unavailable, "a dismissed Face ID prompt is not a sign-out")
    }

    @Test func aSynchronizableThisDeviceOnlyConfigurationFailsWithAReason() async throws {
        let store = Self.store(Self.simulator()) { $0.synchronizable = true }
        await #expect(throws: PersistenceError.writeFailed) {
            try await store.save(keychainTestSession("sync", generation: 1), account: "default", condition: .always)
        }
    }

    @Test func itemsInTheDefaultGroupAndASharedGroupAreApart() async throws {
        let keychain = Self.simulator()
        let privateStore = Self.store(keychain) { $0.accessGroup = nil }
        let sharedStore = Self.store(keychain)
        try await privateStore.save(keychainTestSession("p", generation: 1), account: "default", condition: .always)
        #expect(await sharedStore.load(account: "default").isAbsent)
        // A query without a group sees every group the app is entitled to, as the Keychain does.
        #expect(await privateStore.load(account: "default").session?.generation == 1)
    }

    @Test func aStoreSeesAnExtensionsSaveThroughTheSharedGroup() async throws {
        let app = KeychainSimulator(configuration: .init(accessGroups: ["ABCDE12345.com.example.app", Self.group]))
        let scratch = try TemporaryDirectory()
        defer { scratch.remove() }
        let file = scratch.url.appendingPathComponent("keychain.json")
        let appKeychain = KeychainSimulator(file: file, configuration: app.configuration)
        let widgetKeychain = KeychainSimulator(
            file: file, configuration: .init(accessGroups: ["ABCDE12345.com.example.app.widget", Self.group]))
        let session = keychainTestSession("share", generation: 3)
        try await Self.store(widgetKeychain).save(session, account: "default", condition: .always)
        #expect(await Self.store(appKeychain).load(account: "default").session == session)
    }

    @Test func anItemWrittenByANewerAppVersionReadsAsUnsupportedAndIsNotOverwritten() async throws {
        let keychain = Self.simulator()
        let queries = KeychainQueryBuilder(service: "com.example.tokens", accessGroup: Self.group)
        // A newer format whose shape an older app could still decode.
        let newer = try JSONEncoder().encode(
            Wrapped(formatVersion: 2, session: keychainTestSession("newer", generation: 7)))
        #expect(keychain.add(queries.addAttributes(account: "default", data: newer)) == .success)
        let store = Self.store(keychain)
        #expect(await store.load(account: "default").error == .unsupportedFormatVersion)
        await #expect(throws: PersistenceError.unsupportedFormatVersion) {
            try await store.save(keychainTestSession("older", generation: 8), account: "default", condition: .always)
        }
        #expect(keychain.copyMatching(queries.readQuery(account: "default")).data == newer)
    }

    @Test func anItemThatIsNotASessionReadsAsCorruptNotAbsent() async throws {
        let queries = KeychainQueryBuilder(service: "com.example.tokens", accessGroup: Self.group)
        for bytes in [#"not json"#, #"{"formatVersion":1,"session":{"unexpected":true}}"#, #"{"formatVersion":3}"#] {
            let keychain = Self.simulator()
            #expect(keychain.add(queries.addAttributes(account: "default", data: Data(bytes.utf8))) == .success)
            let expected: PersistenceError = bytes.contains("3") ? .unsupportedFormatVersion : .corrupt
            #expect(await Self.store(keychain).load(account: "default").error == expected, "\(bytes)")
        }
    }

    private struct Wrapped: Encodable {
        let formatVersion: Int
        let session: StoredSession
    }
}

/// A Keychain whose first add is preceded by another process's action (run once).
final class RacingKeychain: KeychainBackend, @unchecked Sendable {
    private let base: KeychainSimulator
    private let lock = NSLock()
    private var before: (() -> Void)?  // protected by `lock`
    private var duplicate = false  // protected by `lock`

    init(base: KeychainSimulator, before: @escaping () -> Void) {
        self.base = base
        self.before = before
    }

    var sawDuplicate: Bool { lock.withLock { duplicate } }

    func add(_ attributes: [KeychainAttribute]) -> KeychainStatus {
        let action = lock.withLock {
            defer { before = nil }
            return before
        }
        action?()
        let status = base.add(attributes)
        if status == .duplicateItem { lock.withLock { duplicate = true } }
        return status
    }
    func copyMatching(_ query: [KeychainAttribute]) -> (status: KeychainStatus, data: Data?) {
        base.copyMatching(query)
    }
    func update(_ query: [KeychainAttribute], with changes: [KeychainAttribute]) -> KeychainStatus {
        base.update(query, with: changes)
    }
    func delete(_ query: [KeychainAttribute]) -> KeychainStatus { base.delete(query) }
}

/// A Keychain that answers "not found" while the app is prewarmed before the first unlock.
@Suite(.logLeakCheck()) struct KeychainPrewarmTests {
    /// A backend that cannot tell whether protected data is available (the simulator's calls, not its flag).
    struct Unaware: KeychainBackend {
        let base: KeychainSimulator
        func add(_ attributes: [KeychainAttribute]) -> KeychainStatus { base.add(attributes) }
        func copyMatching(_ query: [KeychainAttribute]) -> (status: KeychainStatus, data: Data?) {
            base.copyMatching(query)
        }
        func update(_ query: [KeychainAttribute], with changes: [KeychainAttribute]) -> KeychainStatus {
            base.update(query, with: changes)
        }
        func delete(_ query: [KeychainAttribute]) -> KeychainStatus { base.delete(query) }
    }

    /// A store over a simulator whose reads before the first unlock answer "not found": guarded by the
    /// configuration's flag, by the backend's own (`backendKnows`), or by neither.
    static func rig(guarded: Bool, backendKnows: Bool = false) async throws -> (KeychainSimulator, KeychainTokenStore) {
        let keychain = KeychainSimulator(
            configuration: .init(accessGroups: ["TEAM.app"], readsBeforeFirstUnlockAnswerNotFound: true))
        var configuration = KeychainTokenStore.Configuration(service: "com.example.tokens")
        if guarded { configuration.isProtectedDataAvailable = { keychain.isProtectedDataAvailable } }
        let backend: any KeychainBackend = backendKnows ? keychain : Unaware(base: keychain)
        let store = KeychainTokenStore(configuration: configuration, keychain: backend)
        try await store.save(keychainTestSession("pre", generation: 1), account: "default", condition: .always)
        keychain.reboot()
        return (keychain, store)
    }

    @Test func aNotFoundWhileProtectedDataIsUnavailableIsUnavailableNotSignedOut() async throws {
        let (keychain, store) = try await Self.rig(guarded: true)
        #expect(await store.load(account: "default").error == .unavailable)
        keychain.unlock()
        #expect(await store.load(account: "default").session?.generation == 1)
    }

    @Test func withoutTheProtectedDataCheckThePrewarmedReadLooksSignedOut() async throws {
        let (_, store) = try await Self.rig(guarded: false)
        #expect(await store.load(account: "default").isAbsent, "what the check exists for")
    }

    @Test func aBackendThatKnowsProtectedDataIsUnavailableMakesANotFoundUnavailable() async throws {
        let (keychain, store) = try await Self.rig(guarded: false, backendKnows: true)
        #expect(await store.load(account: "default").error == .unavailable)
        keychain.unlock()
        #expect(await store.load(account: "default").session?.generation == 1)
    }
}
