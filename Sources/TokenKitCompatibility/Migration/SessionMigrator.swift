public import AuthToken
public import Foundation
public import Logging
public import Persistence

/// Moves a session from an older app version's storage into a ``/Persistence/TokenStore``, once.
///
/// ``migrate()`` is safe to call on every launch: a crash between the save and the removal of the legacy keys is
/// completed on the next launch, the session is never lost or saved twice, a session already in the store wins, and the
/// legacy keys are kept while the store cannot be read or written. Each step: ``TokenKitCompatibility``.
///
/// ```swift
/// let migrator = SessionMigrator(
///     layout: .fitIQ(), source: UserDefaultsLegacyKeyValueSource(), store: store, account: "default")
/// _ = try await migrator.migrate()
/// ```
public struct SessionMigrator: Sendable {
    /// What ``SessionMigrator/migrate()`` did.
    public enum Outcome: Sendable, Hashable {
        /// The legacy keys hold no session; nothing was changed.
        case nothingToMigrate
        /// The legacy session was saved in the store and the legacy keys removed.
        case migrated
        /// The store already had a session; the leftover legacy keys were removed.
        case finishedEarlierMigration
        /// The legacy session cannot move over (the sign-in method changed): it was removed, and the app asks the
        /// user to sign in again (as a BetterAuth app shows "認証方式が更新されました").
        case signInRequired
    }

    /// The legacy layout.
    package let layout: LegacySessionLayout
    /// Where the legacy values are.
    package let source: any LegacyKeyValueSource
    /// The store to move the session into.
    package let store: any TokenStore
    /// The account to store the session under.
    package let account: String
    private let now: @Sendable () -> Date
    private let logger: Logger

    /// Creates a migrator.
    ///
    /// - Parameters:
    ///   - layout: How the legacy session is laid out.
    ///   - source: Where the legacy values are.
    ///   - store: The store to move the session into.
    ///   - account: The account to store it under.
    ///   - now: The wall clock, used as the migrated token's receipt time.
    ///   - logger: Where debug messages go (never token text).
    public init(
        layout: LegacySessionLayout,
        source: any LegacyKeyValueSource,
        store: any TokenStore,
        account: String,
        now: @escaping @Sendable () -> Date = AuthToken.systemNow,
        logger: Logger = Logger(label: "TokenKit.Persistence.SessionMigrator")
    ) {
        self.layout = layout
        self.source = source
        self.store = store
        self.account = account
        self.now = now
        self.logger = logger
    }

    /// Migrates the legacy session, if any, and removes the legacy keys.
    ///
    /// - Returns: What was done.
    /// - Throws: The source's error when it cannot be read (for example ``/Persistence/PersistenceError/unavailable``);
    ///   the store's error when it cannot be read or written; ``/Persistence/PersistenceError/migrationFailed`` when the
    ///   legacy values cannot be understood. In every case the legacy keys that were not yet removed are kept,
    ///   and calling again later completes the migration.
    public func migrate() async throws(PersistenceError) -> Outcome {
        var values: [String: Data] = [:]
        for key in layout.keys {
            if let value = try await source.value(forKey: key) { values[key] = value }
        }
        guard !values.isEmpty else { return .nothingToMigrate }
        let presentKeys = layout.keys.filter { values[$0] != nil }
        let legacyValues = values
        let layout = layout
        let source = source
        let store = store
        let account = account
        let now = now
        let logger = logger
        do {
            return try await store.withExclusiveAccess(account: account) { () async throws -> Outcome in
                let outcome: Outcome
                switch await store.load(account: account) {
                case .unavailable(let error):
                    throw error
                case .found:
                    outcome = .finishedEarlierMigration
                case .absent:
                    switch layout.read(legacyValues, now()) {
                    case .nothing:
                        logger.debug("legacy keys hold no session", metadata: ["layout": "\(layout.name)"])
                        return .nothingToMigrate
                    case .unreadable(let reason):
                        throw PersistenceError.migrationFailed.with(
                            detail: "\(layout.name): \(reason); the entries are kept")
                    case .retired:
                        outcome = .signInRequired
                    case .session(let token, let userID):
                        // Its first store in TokenKit's format: a session identity is made here, as at a sign-in.
                        let session = StoredSession(
                            token: token, userID: userID, generation: 1, sessionID: StoredSession.newSessionID())
                        try await store.save(session, account: account, condition: .absent)
                        outcome = .migrated
                    }
                }
                for key in presentKeys {
                    try await source.removeValue(forKey: key)
                }
                logger.debug(
                    "legacy session migration done",
                    metadata: ["layout": "\(layout.name)", "outcome": "\(outcome)", "keys": "\(presentKeys.count)"])
                return outcome
            }
        } catch let error as PersistenceError {
            throw error
        } catch {
            throw PersistenceError.migrationFailed.with(detail: "\(type(of: error))")
        }
    }
}
