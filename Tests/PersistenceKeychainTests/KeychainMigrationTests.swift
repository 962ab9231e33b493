import AuthToken
import Foundation
import Persistence
import PersistenceKeychain
import Testing
import TokenKitCompatibility
import TokenKitKeychainTesting
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

/// FitIQ's and Lume's Keychain items, laid out as those apps wrote them, moved into the Keychain store once.
///
/// What the apps stored is known (FitIQ: the access token, the refresh token and the user profile ID; Lume: its
/// `Codable` `AuthToken` with `expiresAt: Date`); how their Keychain code laid it out is assumed, as the migration
/// layouts' defaults do: generic passwords under one service, the key as the account, in the app's default access
/// group, without `kSecAttrAccessible` (so the Keychain's default, `kSecAttrAccessibleWhenUnlocked`). FitIQ's
/// values are UTF-8 strings (the profile ID a `UUID`'s `uuidString`); Lume's token is its own type encoded by a
/// default `JSONEncoder` (so `expiresAt` is seconds since 2001-01-01).
@Suite(.logLeakCheck()) struct KeychainMigrationTests {
    static let appGroup = "ABCDE12345.com.example.fitiq"

    static func keychain() -> KeychainSimulator {
        KeychainSimulator(configuration: .init(accessGroups: [appGroup]))
    }

    /// Adds an item as the old app did: no access group, no accessibility key.
    static func writeAsTheOldApp(_ keychain: KeychainSimulator, service: String, key: String, _ data: Data) {
        let status = keychain.add([.genericPasswordClass, .service(service), .account(key), .valueData(data)])
        #expect(status == .success)
    }

    static func jwt(subject: String, expiry: Int) -> String {
        JWTBuilder.token(
            claims: #"{"sub":"\#(subject)","exp":\#(expiry)}"#, header: #"{"alg":"HS256","typ":"JWT"}"#,
            signature: Data("signature-not-checked".utf8))
    }

    static func secret(_ value: String) -> String {
        TestSecrets.shared.register(value, as: .refreshToken)
        return value
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func store(_ keychain: KeychainSimulator) -> KeychainTokenStore {
        KeychainTokenStore(
            configuration: .init(service: "com.example.fitiq.tokens", accessGroup: appGroup), keychain: keychain)
    }

    @Test func fitIQsThreeItemsBecomeOneSessionAndAreRemoved() async throws {
        let keychain = Self.keychain()
        let access = Self.secret(Self.jwt(subject: "fitiq-user-7", expiry: 1_800_003_600))
        let refresh = Self.secret("fitiq-legacy-refresh-8f2k")
        let profileID = UUID(uuidString: "6F1B2C3D-0000-4000-8000-00000000A1B2")!.uuidString
        Self.writeAsTheOldApp(keychain, service: "com.example.fitiq", key: "accessToken", Data(access.utf8))
        Self.writeAsTheOldApp(keychain, service: "com.example.fitiq", key: "refreshToken", Data(refresh.utf8))
        Self.writeAsTheOldApp(keychain, service: "com.example.fitiq", key: "userProfileID", Data(profileID.utf8))

        let source = KeychainLegacyKeyValueSource(service: "com.example.fitiq", keychain: keychain)
        let store = Self.store(keychain)
        let migrator = SessionMigrator(
            layout: .fitIQ(), source: source, store: store, account: "default", now: { Self.now })
        #expect(try await migrator.migrate() == .migrated)

        let session = try #require(await store.load(account: "default").session)
        #expect(session.token.accessToken == access)
        #expect(session.token.refreshToken == refresh)
        #expect(session.userID == profileID)
        #expect(session.generation == 1)
        for key in ["accessToken", "refreshToken", "userProfileID"] {
            #expect(try await source.value(forKey: key) == nil)
        }
        #expect(try await migrator.migrate() == .nothingToMigrate)
    }

    @Test func lumesEncodedTokenBecomesASessionWithItsExpiry() async throws {
        let keychain = Self.keychain()
        let access = Self.secret("lume-legacy-access-3j9d")
        let refresh = Self.secret("lume-legacy-refresh-3j9d")
        let expiresAt = Self.now.addingTimeInterval(1800)
        let encoded = try JSONEncoder().encode(
            LumeAuthToken(accessToken: access, refreshToken: refresh, expiresAt: expiresAt))
        Self.writeAsTheOldApp(keychain, service: "com.example.lume", key: "authToken", encoded)

        let source = KeychainLegacyKeyValueSource(service: "com.example.lume", keychain: keychain)
        let store = Self.store(keychain)
        let migrator = SessionMigrator(
            layout: .lume(), source: source, store: store, account: "default", now: { Self.now })
        #expect(try await migrator.migrate() == .migrated)
        let session = try #require(await store.load(account: "default").session)
        #expect(session.token.refreshToken == refresh)
        #expect(session.token.expiresAt == expiresAt)
        #expect(try await source.value(forKey: "authToken") == nil)
    }

    @Test func onAMacTheOldAppsFileBasedKeychainItemsAreFoundAndMoved() async throws {
        // On macOS an item added without kSecUseDataProtectionKeychain lives in the file-based keychain, which a
        // query for the data protection keychain does not search.
        let keychain = KeychainSimulator(
            configuration: .init(accessGroups: [Self.appGroup], separatesFileBasedKeychain: true))
        let access = Self.secret(Self.jwt(subject: "fitiq-user-5", expiry: 1_800_003_600))
        Self.writeAsTheOldApp(keychain, service: "com.example.fitiq", key: "accessToken", Data(access.utf8))
        let source = KeychainLegacyKeyValueSource(service: "com.example.fitiq", keychain: keychain)
        let store = Self.store(keychain)
        let migrator = SessionMigrator(
            layout: .fitIQ(), source: source, store: store, account: "default", now: { Self.now })
        #expect(try await migrator.migrate() == .migrated)
        #expect(await store.load(account: "default").session?.token.accessToken == access)
        #expect(try await source.value(forKey: "accessToken") == nil)
    }

    @Test func aMigrationAtALockedLaunchKeepsTheItemsAndCompletesAfterTheUnlock() async throws {
        let keychain = Self.keychain()
        let access = Self.secret(Self.jwt(subject: "fitiq-user-9", expiry: 1_800_003_600))
        Self.writeAsTheOldApp(keychain, service: "com.example.fitiq", key: "accessToken", Data(access.utf8))
        let source = KeychainLegacyKeyValueSource(service: "com.example.fitiq", keychain: keychain)
        let store = Self.store(keychain)
        let migrator = SessionMigrator(
            layout: .fitIQ(), source: source, store: store, account: "default", now: { Self.now })

        keychain.reboot()  // a background launch before the first unlock
        await #expect(throws: PersistenceError.unavailable) { try await migrator.migrate() }
        keychain.unlock()
        #expect(try await source.value(forKey: "accessToken") != nil, "the old item was kept")
        #expect(try await migrator.migrate() == .migrated)
        #expect(await store.load(account: "default").session?.token.accessToken == access)
    }

    @Test func theOldAppsWhenUnlockedItemsAreUnavailableWhileLockedNotMissing() async throws {
        let keychain = Self.keychain()
        let access = Self.secret(Self.jwt(subject: "fitiq-user-3", expiry: 1_800_003_600))
        Self.writeAsTheOldApp(keychain, service: "com.example.fitiq", key: "accessToken", Data(access.utf8))
        keychain.lock()  // unlocked since boot, locked now: the old items are "when unlocked"
        let source = KeychainLegacyKeyValueSource(service: "com.example.fitiq", keychain: keychain)
        await #expect(throws: PersistenceError.unavailable) { try await source.value(forKey: "accessToken") }
    }

    @Test func aRefreshStartedFromAnOlderGenerationCannotOverwriteTheMigratedSession() async throws {
        let keychain = Self.keychain()
        let store = Self.store(keychain)
        try await store.save(keychainTestSession("gen", generation: 1), account: "default", condition: .absent)
        try await store.save(
            keychainTestSession("gen", generation: 2), account: "default", condition: .generation(1))
        await #expect(throws: PersistenceError.conflict) {
            try await store.save(
                keychainTestSession("late", generation: 2), account: "default", condition: .generation(1))
        }
        await #expect(throws: PersistenceError.conflict) {
            try await store.remove(account: "default", condition: .generation(1))
        }
        #expect(await store.load(account: "default").session == keychainTestSession("gen", generation: 2))
    }
}

/// Lume's token, as the app declares it.
private struct LumeAuthToken: Codable, Equatable {
    let accessToken: String
    let refreshToken: String
    let expiresAt: Date
}
