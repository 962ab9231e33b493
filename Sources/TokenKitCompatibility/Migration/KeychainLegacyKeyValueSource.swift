public import Foundation
public import Persistence
public import PersistenceKeychain

/// An older app version's Keychain items as a ``LegacyKeyValueSource``: one generic-password item per
/// key, the key as `kSecAttrAccount` under one `kSecAttrService` (FitIQ's and Lume's `KeychainManager` layout).
///
/// ```swift
/// let source = KeychainLegacyKeyValueSource(service: "com.example.fitiq")
/// let migrator = SessionMigrator(layout: .fitIQ(), source: source, store: store, account: "default")
/// ```
///
/// A locked Keychain (`errSecInteractionNotAllowed`) is ``/Persistence/PersistenceError/unavailable``, never
/// "no value", so a migration at a locked launch keeps the items and completes at the next one.
public struct KeychainLegacyKeyValueSource: LegacyKeyValueSource {
    /// The `kSecAttrService` the old app used.
    package let service: String
    /// The access group the old app used, if any.
    package let accessGroup: String?
    private let keychain: any KeychainBackend
    private let queries: KeychainQueryBuilder

    /// Creates a source over a Keychain backend.
    ///
    /// - Parameters:
    ///   - service: The `kSecAttrService` the old app used.
    ///   - accessGroup: The access group the old app used, if any.
    ///   - keychain: The Keychain: `SystemKeychain()` on Apple platforms, a `KeychainSimulator` in tests.
    public init(service: String, accessGroup: String? = nil, keychain: any KeychainBackend) {
        self.service = service
        self.accessGroup = accessGroup
        self.keychain = keychain
        // The old apps' items were added without kSecUseDataProtectionKeychain: on macOS, in the file-based keychain.
        self.queries = KeychainQueryBuilder(
            service: service, accessGroup: accessGroup, usesDataProtectionKeychain: false)
    }

    /// The item's data for `key`, or `nil` when there is no item.
    ///
    /// - Parameter key: The key (`kSecAttrAccount`).
    /// - Returns: The item's data, or `nil`.
    /// - Throws: ``/Persistence/PersistenceError/unavailable`` when the Keychain cannot be read now;
    ///   ``/Persistence/PersistenceError/missingEntitlement`` when the app is not entitled to the access group.
    public func value(forKey key: String) async throws(PersistenceError) -> Data? {
        let (status, data) = keychain.copyMatching(queries.readQuery(account: key))
        return try KeychainStatusMapping.read(status, data: data, accessGroup: accessGroup).get()
    }

    /// Deletes the item for `key`; a missing item is not an error.
    ///
    /// - Parameter key: The key (`kSecAttrAccount`).
    /// - Throws: ``/Persistence/PersistenceError/writeFailed`` (or `unavailable`) when the Keychain refuses.
    public func removeValue(forKey key: String) async throws(PersistenceError) {
        let status = keychain.delete(queries.itemQuery(account: key))
        guard status == .success || status == .itemNotFound else {
            throw KeychainStatusMapping.error(status, accessGroup: accessGroup, fallback: .writeFailed)
        }
    }
}

#if canImport(Security)
    extension KeychainLegacyKeyValueSource {
        /// Creates a source over the system Keychain.
        ///
        /// - Parameters:
        ///   - service: The `kSecAttrService` the old app used.
        ///   - accessGroup: The access group the old app used, if any.
        public init(service: String, accessGroup: String? = nil) {
            self.init(service: service, accessGroup: accessGroup, keychain: SystemKeychain())
        }
    }
#endif
