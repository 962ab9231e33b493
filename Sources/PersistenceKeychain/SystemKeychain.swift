// The only file of TokenKit that calls the Keychain. Apple platforms only; everything it is given was built and
// tested on every platform (KeychainQueryBuilder, KeychainStatusMapping, KeychainSimulator).
#if canImport(Security)
    public import Foundation
    import Security

    /// The system Keychain as a ``KeychainBackend``: each call is one `SecItem` function, each
    /// ``KeychainAttribute`` one `kSec…` key and value.
    ///
    /// Checked line by line against Apple's documentation:
    /// - `SecItemAdd(_:_:)`: https://developer.apple.com/documentation/security/secitemadd(_:_:)
    /// - `SecItemCopyMatching(_:_:)`: https://developer.apple.com/documentation/security/secitemcopymatching(_:_:)
    /// - `SecItemUpdate(_:_:)`: https://developer.apple.com/documentation/security/secitemupdate(_:_:)
    /// - `SecItemDelete(_:)`: https://developer.apple.com/documentation/security/secitemdelete(_:)
    /// - `kSecAttrAccessGroup` and "Sharing access to keychain items among a collection of apps":
    ///   https://developer.apple.com/documentation/security/ksecattraccessgroup,
    ///   https://developer.apple.com/documentation/security/sharing-access-to-keychain-items-among-a-collection-of-apps
    /// - `kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly` and its siblings:
    ///   https://developer.apple.com/documentation/security/ksecattraccessibleafterfirstunlockthisdeviceonly
    /// - `kSecAttrAccessControl` (mutually exclusive with `kSecAttrAccessible`) and `.userPresence`:
    ///   https://developer.apple.com/documentation/security/ksecattraccesscontrol,
    ///   https://developer.apple.com/documentation/security/secaccesscontrolcreateflags/userpresence
    /// - `errSecMissingEntitlement` (-34018): https://developer.apple.com/documentation/security/errsecmissingentitlement
    public struct SystemKeychain: KeychainBackend {
        /// Creates the backend.
        public init() {}

        /// `SecItemAdd(attributes, nil)`.
        ///
        /// - Parameter attributes: The item.
        /// - Returns: The status.
        public func add(_ attributes: [KeychainAttribute]) -> KeychainStatus {
            KeychainStatus(rawValue: SecItemAdd(Self.dictionary(attributes), nil))
        }

        /// `SecItemCopyMatching(query, &result)`; the result is the item's data (`kSecReturnData`).
        ///
        /// - Parameter query: The query.
        /// - Returns: The status and the data.
        public func copyMatching(_ query: [KeychainAttribute]) -> (status: KeychainStatus, data: Data?) {
            var result: CFTypeRef?
            let status = SecItemCopyMatching(Self.dictionary(query), &result)
            return (KeychainStatus(rawValue: status), result as? Data)
        }

        /// `SecItemUpdate(query, changes)`.
        ///
        /// - Parameters:
        ///   - query: The query.
        ///   - changes: The attributes to set.
        /// - Returns: The status.
        public func update(_ query: [KeychainAttribute], with changes: [KeychainAttribute]) -> KeychainStatus {
            KeychainStatus(rawValue: SecItemUpdate(Self.dictionary(query), Self.dictionary(changes)))
        }

        /// `SecItemDelete(query)`.
        ///
        /// - Parameter query: The query.
        /// - Returns: The status.
        public func delete(_ query: [KeychainAttribute]) -> KeychainStatus {
            KeychainStatus(rawValue: SecItemDelete(Self.dictionary(query)))
        }

        /// Each entry as its `kSec…` key and value.
        static func dictionary(_ attributes: [KeychainAttribute]) -> CFDictionary {
            var dictionary: [String: Any] = [:]
            for attribute in attributes {
                switch attribute {
                case .genericPasswordClass: dictionary[kSecClass as String] = kSecClassGenericPassword
                case .service(let service): dictionary[kSecAttrService as String] = service
                case .account(let account): dictionary[kSecAttrAccount as String] = account
                case .accessGroup(let group): dictionary[kSecAttrAccessGroup as String] = group
                case .synchronizable(let value): dictionary[kSecAttrSynchronizable as String] = value
                case .accessible(let accessibility):
                    dictionary[kSecAttrAccessible as String] = protectionClass(accessibility)
                case .userPresence(let accessibility):
                    // nil when the flags are refused: SecItemAdd then fails with errSecParam, reported as such.
                    dictionary[kSecAttrAccessControl as String] = SecAccessControlCreateWithFlags(
                        nil, protectionClass(accessibility), .userPresence, nil)
                case .dataProtectionKeychain: dictionary[kSecUseDataProtectionKeychain as String] = true
                case .valueData(let data): dictionary[kSecValueData as String] = data
                case .returnData: dictionary[kSecReturnData as String] = true
                case .matchLimitOne: dictionary[kSecMatchLimit as String] = kSecMatchLimitOne
                }
            }
            return dictionary as CFDictionary
        }

        static func protectionClass(_ accessibility: KeychainTokenStore.Accessibility) -> CFString {
            switch accessibility.kind {
            case .afterFirstUnlockThisDeviceOnly: kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            case .afterFirstUnlock: kSecAttrAccessibleAfterFirstUnlock
            case .whenUnlockedThisDeviceOnly: kSecAttrAccessibleWhenUnlockedThisDeviceOnly
            case .whenUnlocked: kSecAttrAccessibleWhenUnlocked
            }
        }
    }
#endif
