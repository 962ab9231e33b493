// The Keychain store exists on Apple platforms only. On Linux this file compiles to nothing.
//
// UNTESTED HERE: TokenKit is built and tested on Linux, where `Security` does not exist, so this code has
// never been compiled or run by its test suite. Keep it small, and test it on a device before relying on it.
#if canImport(Security)
    import Foundation
    public import Persistence
    import Security

    /// A token store in the Keychain (Apple platforms), one generic-password item per account.
    ///
    /// - Items are readable after the first unlock since boot and never leave the device
    ///   (``Accessibility/afterFirstUnlockThisDeviceOnly``, the default), so background refreshes work while the
    ///   device is locked, and backups do not carry the tokens.
    /// - An ``Configuration/accessGroup`` shares the items with app extensions.
    /// - `errSecInteractionNotAllowed` (the device has not been unlocked since boot, or the item needs a stricter
    ///   accessibility) is reported as `.unavailable(.unavailable)`, never as absent: a locked Keychain is not
    ///   "signed out".
    /// - Conditional writes and ``withExclusiveAccess(account:_:)`` are serialised within this process only; the
    ///   Keychain offers no lock shared with extensions.
    ///
    /// This type is not compiled or tested by TokenKit's Linux CI.
    public struct KeychainTokenStore: TokenStore {
        /// When Keychain items can be read.
        public struct Accessibility: Sendable, Hashable {
            private enum Kind: Hashable, Sendable {
                case afterFirstUnlockThisDeviceOnly, afterFirstUnlock, whenUnlockedThisDeviceOnly, whenUnlocked
            }
            private let kind: Kind

            /// After the first unlock since boot, on this device only (not in backups). The default.
            public static let afterFirstUnlockThisDeviceOnly = Accessibility(kind: .afterFirstUnlockThisDeviceOnly)
            /// After the first unlock since boot; included in encrypted backups.
            public static let afterFirstUnlock = Accessibility(kind: .afterFirstUnlock)
            /// Only while the device is unlocked, on this device only. Background refreshes will see `.unavailable`.
            public static let whenUnlockedThisDeviceOnly = Accessibility(kind: .whenUnlockedThisDeviceOnly)
            /// Only while the device is unlocked; included in encrypted backups.
            public static let whenUnlocked = Accessibility(kind: .whenUnlocked)

            var attribute: CFString {
                switch kind {
                case .afterFirstUnlockThisDeviceOnly: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
                case .afterFirstUnlock: kSecAttrAccessibleAfterFirstUnlock
                case .whenUnlockedThisDeviceOnly: kSecAttrAccessibleWhenUnlockedThisDeviceOnly
                case .whenUnlocked: kSecAttrAccessibleWhenUnlocked
                }
            }
        }

        /// Options for a ``KeychainTokenStore``.
        public struct Configuration: Sendable {
            /// The `kSecAttrService` of the items, for example the app's bundle identifier plus `.tokens`.
            public var service: String
            /// The Keychain access group to share items with app extensions, or `nil` for the app's default.
            public var accessGroup: String?
            /// When the items can be read.
            public var accessibility: Accessibility

            /// Creates a configuration.
            ///
            /// - Parameters:
            ///   - service: The `kSecAttrService` of the items.
            ///   - accessGroup: An access group shared with extensions, or `nil`.
            ///   - accessibility: When the items can be read; after first unlock, this device only, by default.
            public init(
                service: String, accessGroup: String? = nil,
                accessibility: Accessibility = .afterFirstUnlockThisDeviceOnly
            ) {
                self.service = service
                self.accessGroup = accessGroup
                self.accessibility = accessibility
            }
        }

        /// The store's options.
        public let configuration: Configuration

        /// Creates a store.
        ///
        /// - Parameter configuration: Service, access group and accessibility.
        public init(configuration: Configuration) {
            self.configuration = configuration
        }

        /// The stored item's format: a version, so a newer app's items are not misread.
        private struct Envelope: Codable {
            let formatVersion: Int
            let session: StoredSession
        }
        private struct VersionHeader: Decodable {
            let formatVersion: Int
        }
        private static let formatVersion = 1

        /// Reads the session for `account`.
        ///
        /// - Parameter account: The account key.
        /// - Returns: `.found`, `.absent`, or `.unavailable` (locked Keychain, unreadable item).
        public func load(account: String) async -> TokenStoreRead {
            switch read(account: account) {
            case .success(nil): .absent
            case .success(let session?): .found(session)
            case .failure(let error): .unavailable(error)
            }
        }

        /// Stores `session` for `account` if `condition` holds (checked within this process).
        ///
        /// - Parameters:
        ///   - session: The session.
        ///   - account: The account key.
        ///   - condition: When the write may happen.
        /// - Throws: ``/Persistence/PersistenceError/conflict``, ``/Persistence/PersistenceError/unavailable`` when the Keychain is locked, or
        ///   another ``/Persistence/PersistenceError``; what was stored before is intact.
        public func save(
            _ session: StoredSession, account: String, condition: WriteCondition
        ) async throws(PersistenceError) {
            let bytes: Data
            do {
                bytes = try JSONEncoder().encode(Envelope(formatVersion: Self.formatVersion, session: session))
            } catch {
                throw PersistenceError.writeFailed.with(detail: "encoding the session failed")
            }
            try await locked(account) { () throws(PersistenceError) in
                let current = try read(account: account).get()
                guard condition.allows(current: current?.generation) else { throw PersistenceError.conflict }
                let status: OSStatus
                if current == nil {
                    var attributes = baseQuery(account: account)
                    attributes[kSecValueData as String] = bytes
                    attributes[kSecAttrAccessible as String] = configuration.accessibility.attribute
                    status = SecItemAdd(attributes as CFDictionary, nil)
                } else {
                    let changes: [String: Any] = [
                        kSecValueData as String: bytes,
                        kSecAttrAccessible as String: configuration.accessibility.attribute,
                    ]
                    status = SecItemUpdate(baseQuery(account: account) as CFDictionary, changes as CFDictionary)
                }
                switch status {
                case errSecSuccess: return
                case errSecDuplicateItem: throw PersistenceError.conflict.with(detail: "added by another process")
                default: throw Self.error(status, default: .writeFailed)
                }
            }
        }

        /// Removes the session for `account` if `condition` holds (checked within this process).
        ///
        /// - Parameters:
        ///   - account: The account key.
        ///   - condition: When the removal may happen.
        /// - Throws: ``/Persistence/PersistenceError/conflict``, ``/Persistence/PersistenceError/unavailable``, or another ``/Persistence/PersistenceError``.
        public func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
            try await locked(account) { () throws(PersistenceError) in
                let current: StoredSession?
                switch read(account: account) {
                case .success(let session): current = session
                case .failure(let error) where condition == .always && error != .unavailable: current = nil
                case .failure(let error): throw error
                }
                guard condition.allows(current: current?.generation) else { throw PersistenceError.conflict }
                let status = SecItemDelete(baseQuery(account: account) as CFDictionary)
                guard status == errSecSuccess || status == errSecItemNotFound else {
                    throw Self.error(status, default: .writeFailed)
                }
            }
        }

        /// Runs `body` holding this process's lock for the account (the Keychain has no lock across processes).
        ///
        /// - Parameters:
        ///   - account: The account key.
        ///   - body: The work to run.
        /// - Returns: What `body` returns.
        /// - Throws: What `body` throws, or ``/Persistence/PersistenceError/lockFailed`` when cancelled while waiting.
        public func withExclusiveAccess<T: Sendable>(
            account: String, _ body: @Sendable () async throws -> T
        ) async throws -> T {
            try await ProcessLocalLocks.shared.withLock(lockKey(account)) { try await body() }
        }

        // MARK: Internals

        private func lockKey(_ account: String) -> String {
            "keychain|\(configuration.accessGroup ?? "")|\(configuration.service)|\(account)"
        }

        private func locked(
            _ account: String, _ operation: () throws(PersistenceError) -> Void
        ) async throws(PersistenceError) {
            do {
                try await ProcessLocalLocks.shared.withLock(lockKey(account)) { try operation() }
            } catch let error as PersistenceError {
                throw error
            } catch {
                throw PersistenceError.lockFailed
            }
        }

        private func baseQuery(account: String) -> [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: configuration.service,
                kSecAttrAccount as String: account,
                kSecUseDataProtectionKeychain as String: true,
            ]
            if let accessGroup = configuration.accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        private func read(account: String) -> Result<StoredSession?, PersistenceError> {
            var query = baseQuery(account: account)
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            switch status {
            case errSecSuccess:
                guard let data = result as? Data else {
                    return .failure(PersistenceError.corrupt.with(detail: "no data"))
                }
                let decoder = JSONDecoder()
                guard let header = try? decoder.decode(VersionHeader.self, from: data) else {
                    return .failure(PersistenceError.corrupt.with(detail: "no format version"))
                }
                guard header.formatVersion <= Self.formatVersion else {
                    return .failure(
                        PersistenceError.unsupportedFormatVersion.with(detail: "format version \(header.formatVersion)")
                    )
                }
                guard let envelope = try? decoder.decode(Envelope.self, from: data) else {
                    return .failure(PersistenceError.corrupt.with(detail: "unexpected shape"))
                }
                return .success(envelope.session)
            case errSecItemNotFound:
                return .success(nil)
            default:
                return .failure(Self.error(status, default: .readFailed))
            }
        }

        private static func error(_ status: OSStatus, default fallback: PersistenceError) -> PersistenceError {
            switch status {
            case errSecInteractionNotAllowed:
                PersistenceError.unavailable.with(detail: "errSecInteractionNotAllowed: the Keychain is locked")
            default:
                fallback.with(detail: "OSStatus \(status)")
            }
        }
    }
#endif
