import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitCompatibility
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

@Suite(.logLeakCheck()) struct SessionMigratorTests {
    static let now = Date(timeIntervalSince1970: 1_750_000_000)

    /// An unsigned JWT with the given claims.
    static func jwt(_ claims: String) -> String {
        JWTBuilder.token(claims: claims, header: #"{"alg":"HS256","typ":"JWT"}"#, signature: Data("signature".utf8))
    }

    static let fitIQAccessToken: String = {
        let token = jwt(#"{"sub":"u-42","iat":1749999000,"exp":1750002600}"#)
        TestSecrets.shared.register(token, as: .accessToken)  // made at run time: the literal scan cannot see it
        return token
    }()

    static func fitIQSource() -> InMemoryLegacyKeyValueSource {
        InMemoryLegacyKeyValueSource(strings: [
            "accessToken": fitIQAccessToken, "refreshToken": "fitiq-refresh", "userProfileID": "profile-7",
            "unrelated": "kept",
        ])
    }

    static func migrator(
        _ layout: LegacySessionLayout, _ source: any LegacyKeyValueSource, _ store: any TokenStore
    ) -> SessionMigrator {
        SessionMigrator(layout: layout, source: source, store: store, account: "default", now: { now })
    }

    @Test func fitIQSessionMovesIntoTheStoreWithItsExpiryFromTheJWTAndTheOldKeysGo() async throws {
        let source = Self.fitIQSource()
        let store = InMemoryTokenStore()
        #expect(try await Self.migrator(.fitIQ(), source, store).migrate() == .migrated)

        let session = try #require(await store.load(account: "default").session)
        #expect(session.generation == 1)
        // A migrated session gets an identity, as a sign-in's does: 128 bits as 32 hex digits.
        #expect(session.sessionID?.count == 32)
        #expect(session.userID == "profile-7")
        #expect(session.token.accessToken == Self.fitIQAccessToken)
        #expect(session.token.refreshToken == "fitiq-refresh")
        #expect(session.token.receivedAt == Self.now)
        #expect(session.token.expirationClaim == Date(timeIntervalSince1970: 1_750_002_600))
        // When the strings were received is unknown: no lifetime from "receipt", the raw exp against the clock.
        #expect(session.token.lifetime == nil)
        #expect(session.token.expiresAt == Date(timeIntervalSince1970: 1_750_002_600))
        #expect(await source.values.keys.sorted() == ["unrelated"])
    }

    @Test func aFitIQTokenWhoseExpIsPastMigratesAsExpired() async throws {
        let expired = Self.jwt(#"{"sub":"u-42","iat":1690000000,"exp":1690003600}"#)
        TestSecrets.shared.register(expired, as: .accessToken)
        let source = InMemoryLegacyKeyValueSource(strings: ["accessToken": expired, "refreshToken": "fitiq-refresh"])
        let store = InMemoryTokenStore()
        #expect(try await Self.migrator(.fitIQ(), source, store).migrate() == .migrated)
        let session = try #require(await store.load(account: "default").session)
        #expect(session.token.isExpired(at: Self.now))
        #expect(session.token.validate(now: Self.now).contains(.expired))
    }

    @Test func lumeTokenMovesIntoTheStoreWithItsExpiry() async throws {
        let expiresAt = Date(timeIntervalSince1970: 1_750_000_900)
        struct LumeToken: Encodable {
            let accessToken: String
            let refreshToken: String
            let expiresAt: Date
        }
        TestSecrets.shared.register("lume-refresh", as: .refreshToken)
        let encoded = try JSONEncoder().encode(
            LumeToken(accessToken: "lume-access", refreshToken: "lume-refresh", expiresAt: expiresAt))
        let source = InMemoryLegacyKeyValueSource(values: ["authToken": encoded, "userID": Data("lume-user".utf8)])
        let store = InMemoryTokenStore()
        #expect(try await Self.migrator(.lume(userIDKey: "userID"), source, store).migrate() == .migrated)

        let session = try #require(await store.load(account: "default").session)
        #expect(session.token.accessToken == "lume-access")
        #expect(session.token.refreshToken == "lume-refresh")
        #expect(session.token.expiresAt == expiresAt)
        #expect(session.userID == "lume-user")
        #expect(await source.values.isEmpty)
    }

    @Test func lumeExpiryWrittenAsAnISO8601StringIsRead() async throws {
        let json =
            #"{"accessToken":"lume-iso-access","refreshToken":"lume-iso-refresh","expiresAt":"2025-06-15T15:21:40Z"}"#
        let source = InMemoryLegacyKeyValueSource(strings: ["authToken": json])
        let store = InMemoryTokenStore()
        #expect(try await Self.migrator(.lume(), source, store).migrate() == .migrated)
        let session = try #require(await store.load(account: "default").session)
        #expect(session.token.expiresAt == Date(timeIntervalSince1970: 1_750_000_900))
    }

    @Test func anOldIdAliasSessionIsClearedAndTheUserAskedToSignInAgain() async throws {
        let source = InMemoryLegacyKeyValueSource(strings: ["auth_session": #"{"idAlias":"alias-42"}"#, "other": "x"])
        let store = InMemoryTokenStore()
        #expect(try await Self.migrator(.idAlias(), source, store).migrate() == .signInRequired)
        #expect(await source.values.keys.sorted() == ["other"])
        #expect(await store.load(account: "default").session == nil)
        // Once only: the next launch finds nothing.
        #expect(try await Self.migrator(.idAlias(), source, store).migrate() == .nothingToMigrate)
    }

    @Test func aNewFormatSessionUnderTheOldKeyIsLeftAlone() async throws {
        let value = #"{"auth_user":{"id":"user-1"}}"#
        let source = InMemoryLegacyKeyValueSource(strings: ["auth_session": value])
        #expect(try await Self.migrator(.idAlias(), source, InMemoryTokenStore()).migrate() == .nothingToMigrate)
        #expect(await source.values["auth_session"] == Data(value.utf8))
    }

    @Test func aSecondRunFindsNothingToMigrateAndChangesNothing() async throws {
        let source = Self.fitIQSource()
        let store = InMemoryTokenStore()
        _ = try await Self.migrator(.fitIQ(), source, store).migrate()
        let first = await store.load(account: "default").session
        #expect(try await Self.migrator(.fitIQ(), source, store).migrate() == .nothingToMigrate)
        #expect(await store.load(account: "default").session == first)
    }

    /// A source whose removals fail after `removals` of them until it is healed: a crash after the save,
    /// before (or during) the removal of the legacy keys.
    final class InterruptingSource: LegacyKeyValueSource {
        let inner: InMemoryLegacyKeyValueSource
        private let state: Locked<(removals: Int, healthy: Bool)>

        init(_ inner: InMemoryLegacyKeyValueSource, failAfter removals: Int) {
            self.inner = inner
            self.state = Locked((removals, false))
        }

        func heal() { state.withLock { $0.healthy = true } }

        func value(forKey key: String) async throws(PersistenceError) -> Data? {
            await inner.value(forKey: key)
        }

        func removeValue(forKey key: String) async throws(PersistenceError) {
            let allowed = state.withLock { state in
                if state.healthy { return true }
                state.removals -= 1
                return state.removals >= 0
            }
            guard allowed else { throw PersistenceError.writeFailed.with(detail: "simulated crash") }
            await inner.removeValue(forKey: key)
        }
    }

    @Test(arguments: [0, 1, 2])
    func anInterruptedFitIQMigrationIsCompletedOnTheNextLaunchWithoutLossOrDuplication(
        removalsBeforeCrash: Int
    )
        async throws
    {
        let inner = Self.fitIQSource()
        let source = InterruptingSource(inner, failAfter: removalsBeforeCrash)
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)

        await #expect(throws: PersistenceError.writeFailed) {
            try await Self.migrator(.fitIQ(), source, store).migrate()
        }
        let saved = try #require(await store.load(account: "default").session)
        #expect(await inner.values.count == 4 - removalsBeforeCrash)

        // Next launch: a fresh store over the same directory, the removals work again.
        source.heal()
        let relaunched = FileTokenStore(directory: temporary.storeDirectory)
        let later = Date(timeIntervalSince1970: 1_760_000_000)
        let migrator = SessionMigrator(
            layout: .fitIQ(), source: source, store: relaunched, account: "default", now: { later })
        #expect(try await migrator.migrate() == .finishedEarlierMigration)
        #expect(await relaunched.load(account: "default").session == saved, "the first save stands, not a second copy")
        #expect(await inner.values.keys.sorted() == ["unrelated"])
        #expect(try await migrator.migrate() == .nothingToMigrate)
    }

    @Test func anInterruptedLumeMigrationIsCompletedOnTheNextLaunch() async throws {
        let inner = InMemoryLegacyKeyValueSource(strings: [
            "authToken": #"{"accessToken":"interrupted-lume-access","expiresAt":1}"#
        ])
        let source = InterruptingSource(inner, failAfter: 0)
        let store = InMemoryTokenStore()
        await #expect(throws: PersistenceError.writeFailed) {
            try await Self.migrator(.lume(), source, store).migrate()
        }
        #expect(await store.load(account: "default").session?.token.accessToken == "interrupted-lume-access")
        source.heal()
        #expect(try await Self.migrator(.lume(), source, store).migrate() == .finishedEarlierMigration)
        #expect(await inner.values.isEmpty)
        #expect(await store.load(account: "default").session?.generation == 1)
    }

    @Test func aStoreThatCannotBeWrittenKeepsTheLegacyEntries() async throws {
        let source = Self.fitIQSource()
        let store = ClosureTokenStore(
            load: { _ in .absent }, save: { _, _, _ in throw PersistenceError.writeFailed }, remove: { _, _ in })
        await #expect(throws: PersistenceError.writeFailed) {
            try await Self.migrator(.fitIQ(), source, store).migrate()
        }
        #expect(await source.values.count == 4)
    }

    @Test func anUnavailableStoreKeepsTheLegacyEntriesAndIsNotTreatedAsEmpty() async throws {
        let source = Self.fitIQSource()
        let saves = Locked(0)
        let store = ClosureTokenStore(
            load: { _ in .unavailable(.unavailable) }, save: { _, _, _ in saves.withLock { $0 += 1 } },
            remove: { _, _ in })
        await #expect(throws: PersistenceError.unavailable) {
            try await Self.migrator(.fitIQ(), source, store).migrate()
        }
        #expect(saves.withLock { $0 } == 0)
        #expect(await source.values.count == 4)
    }

    @Test func anUnavailableSourceIsReportedAndNothingChanges() async throws {
        let source = ClosureLegacyKeyValueSource(
            value: { _ in throw PersistenceError.unavailable }, remove: { _ in })
        let store = InMemoryTokenStore()
        await #expect(throws: PersistenceError.unavailable) {
            try await Self.migrator(.fitIQ(), source, store).migrate()
        }
        #expect(await store.load(account: "default").isAbsent)
    }

    @Test func anUnreadableLumeTokenIsAMigrationFailureAndIsKept() async throws {
        let source = InMemoryLegacyKeyValueSource(strings: ["authToken": #"{"token":"what"}"#])
        let store = InMemoryTokenStore()
        await #expect(throws: PersistenceError.migrationFailed) {
            try await Self.migrator(.lume(), source, store).migrate()
        }
        #expect(await source.values.count == 1)
        #expect(await store.load(account: "default").isAbsent)
    }

    @Test func fitIQLeftoversWithoutAnAccessTokenAreNotASessionAndAreLeftAlone() async throws {
        let source = InMemoryLegacyKeyValueSource(strings: ["userProfileID": "profile-7"])
        let store = InMemoryTokenStore()
        #expect(try await Self.migrator(.fitIQ(), source, store).migrate() == .nothingToMigrate)
        #expect(await source.values.count == 1)
        #expect(await store.load(account: "default").isAbsent)
    }

    @Test func aNewerSessionInTheStoreWinsOverLegacyLeftovers() async throws {
        let newer = StoredSession(
            token: TestSecrets.shared.register(
                AuthToken(
                    accessToken: "secret-access-5", refreshToken: "secret-refresh-5", receivedAt: Self.now,
                    lifetime: 900)),
            userID: "user-1", generation: 5)
        let store = InMemoryTokenStore(sessions: ["default": newer])
        let source = Self.fitIQSource()
        #expect(try await Self.migrator(.fitIQ(), source, store).migrate() == .finishedEarlierMigration)
        #expect(await store.load(account: "default").session == newer)
        #expect(await source.values.keys.sorted() == ["unrelated"])
    }

    @Test func userDefaultsSourceReadsStringsAndDataAndRemovesThem() async throws {
        let suite = "tokenkit-tests-\(UUID().uuidString)"
        let defaults = try #require(UserDefaults(suiteName: suite))
        defer { defaults.removePersistentDomain(forName: suite) }
        defaults.set(Self.fitIQAccessToken, forKey: "accessToken")
        defaults.set(Data("fitiq-refresh".utf8), forKey: "refreshToken")
        let source = UserDefaultsLegacyKeyValueSource(suiteName: suite)
        #expect(try await source.value(forKey: "accessToken") == Data(Self.fitIQAccessToken.utf8))
        let store = InMemoryTokenStore()
        #expect(try await Self.migrator(.fitIQ(), source, store).migrate() == .migrated)
        #expect(await store.load(account: "default").session?.token.refreshToken == "fitiq-refresh")
        #expect(defaults.object(forKey: "accessToken") == nil)
        #expect(defaults.object(forKey: "refreshToken") == nil)
    }
}
