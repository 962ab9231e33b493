// The Keychain source exists on Apple platforms only. On Linux this file compiles to nothing.
//
// UNTESTED HERE: TokenKit is built and tested on Linux, where `Security` does not exist, so this code has
// never been compiled or run by its test suite. Keep it small, and test it on a device before relying on it.
#if canImport(Security)
    public import Foundation
    public import Persistence
    import Security

    /// An older app version's Keychain items as a ``/Persistence/LegacyKeyValueSource``: one generic-password item per key,
    /// the key as `kSecAttrAccount` under one `kSecAttrService` (FitIQ's and Lume's `KeychainManager` layout).
    ///
    /// ```swift
    /// let source = KeychainLegacyKeyValueSource(service: "com.example.fitiq")
    /// let migrator = SessionMigrator(layout: .fitIQ(), source: source, store: store, account: "default")
    /// ```
    ///
    /// A locked Keychain (`errSecInteractionNotAllowed`) is ``/Persistence/PersistenceError/unavailable``, never "no value",
    /// so a migration at a locked launch keeps the items and completes at the next one.
    ///
    /// This type is not compiled or tested by TokenKit's Linux CI.
    public struct KeychainLegacyKeyValueSource: LegacyKeyValueSource {
        /// The `kSecAttrService` the old app used.
        public let service: String
        /// The access group the old app used, if any.
        public let accessGroup: String?

        /// Creates a source.
        ///
        /// - Parameters:
        ///   - service: The `kSecAttrService` the old app used.
        ///   - accessGroup: The access group the old app used, if any.
        public init(service: String, accessGroup: String? = nil) {
            self.service = service
            self.accessGroup = accessGroup
        }

        private func query(forKey key: String) -> [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: service,
                kSecAttrAccount as String: key,
            ]
            if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        /// The item's data for `key`, or `nil` when there is no item.
        ///
        /// - Parameter key: The key (`kSecAttrAccount`).
        /// - Returns: The item's data, or `nil`.
        /// - Throws: ``/Persistence/PersistenceError/unavailable`` when the Keychain cannot be read now.
        public func value(forKey key: String) async throws(PersistenceError) -> Data? {
            var query = query(forKey: key)
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            switch status {
            case errSecSuccess: return result as? Data
            case errSecItemNotFound: return nil
            default: throw PersistenceError.unavailable.with(detail: "Keychain read failed (OSStatus \(status))")
            }
        }

        /// Deletes the item for `key`; a missing item is not an error.
        ///
        /// - Parameter key: The key (`kSecAttrAccount`).
        /// - Throws: ``/Persistence/PersistenceError/writeFailed`` when the Keychain refuses.
        public func removeValue(forKey key: String) async throws(PersistenceError) {
            let status = SecItemDelete(query(forKey: key) as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw PersistenceError.writeFailed.with(detail: "Keychain delete failed (OSStatus \(status))")
            }
        }
    }
#endif
