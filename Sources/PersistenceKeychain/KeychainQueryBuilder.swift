package import Foundation
package import Persistence

/// Builds the dictionaries of the four Keychain calls for one kind of item: a generic password under a service,
/// in an access group or the app's default one, synchronizable or not. Platform-neutral, so it is tested
/// everywhere; `SystemKeychain` only turns each entry into its `kSec…` key.
package struct KeychainQueryBuilder: Sendable, Hashable {
    /// The `kSecAttrService`.
    package var service: String
    /// The `kSecAttrAccessGroup`, or `nil` for the app's default group (the first of its entitlements).
    package var accessGroup: String?
    /// When the item can be read.
    package var accessibility: KeychainTokenStore.Accessibility
    /// Whether the item is synchronized through iCloud Keychain.
    package var synchronizable: Bool
    /// Whether reading the item needs user presence (a `SecAccessControl` with `.userPresence`).
    package var requiresUserPresence: Bool
    /// Whether the calls name the data protection keychain (`kSecUseDataProtectionKeychain`). Only macOS tells
    /// the two apart: there an older app's items, added without it, are in the file-based keychain and are
    /// found only by queries without it.
    package var usesDataProtectionKeychain: Bool

    package init(
        service: String, accessGroup: String? = nil,
        accessibility: KeychainTokenStore.Accessibility = .afterFirstUnlockThisDeviceOnly,
        synchronizable: Bool = false, requiresUserPresence: Bool = false, usesDataProtectionKeychain: Bool = true
    ) {
        self.usesDataProtectionKeychain = usesDataProtectionKeychain
        self.service = service
        self.accessGroup = accessGroup
        self.accessibility = accessibility
        self.synchronizable = synchronizable
        self.requiresUserPresence = requiresUserPresence
    }

    /// A configuration the Keychain would refuse, explained; `nil` when it is fine.
    ///
    /// A synchronizable item cannot use a "this device only" class, and a user-presence item cannot be
    /// synchronized (Apple's `kSecAttrSynchronizable` and `SecAccessControl` documentation).
    package var configurationProblem: String? {
        if synchronizable && accessibility.isThisDeviceOnly {
            return "a synchronizable item cannot use a this-device-only accessibility class"
        }
        if synchronizable && requiresUserPresence {
            return "an item behind user presence cannot be synchronizable"
        }
        if service.isEmpty { return "the Keychain service is empty" }
        return nil
    }

    /// The item's class and primary key: what finds it.
    package func itemQuery(account: String) -> [KeychainAttribute] {
        var query: [KeychainAttribute] = [.genericPasswordClass, .service(service), .account(account)]
        if let accessGroup { query.append(.accessGroup(accessGroup)) }
        // Left out, a query matches non-synchronizable items only: say so only for the synchronizable kind.
        if synchronizable { query.append(.synchronizable(true)) }
        if usesDataProtectionKeychain { query.append(.dataProtectionKeychain) }
        return query
    }

    /// `SecItemCopyMatching`: the item's data, one item.
    package func readQuery(account: String) -> [KeychainAttribute] {
        itemQuery(account: account) + [.returnData, .matchLimitOne]
    }

    /// `SecItemAdd`: the item with its data and protection.
    package func addAttributes(account: String, data: Data) -> [KeychainAttribute] {
        itemQuery(account: account) + [protection, .valueData(data)]
    }

    /// `SecItemUpdate`: the data and protection to set.
    package func updateAttributes(data: Data) -> [KeychainAttribute] {
        [.valueData(data), protection]
    }

    /// Accessibility, or the access control that carries it (the two keys are mutually exclusive).
    private var protection: KeychainAttribute {
        requiresUserPresence ? .userPresence(accessibility) : .accessible(accessibility)
    }
}

/// What a Keychain status means for a store: the table every Keychain call goes through.
///
/// | Status | Read | Write |
/// |---|---|---|
/// | `errSecSuccess` | found | done |
/// | `errSecItemNotFound` | absent | (delete: done; update: add instead) |
/// | `errSecDuplicateItem` | - | update instead |
/// | `errSecInteractionNotAllowed` | unavailable | unavailable |
/// | `errSecUserCanceled`, `errSecAuthFailed` | unavailable | unavailable |
/// | `errSecMissingEntitlement` (-34018) | missing entitlement | missing entitlement |
/// | any other | read failed | write failed |
package enum KeychainStatusMapping {
    /// The read's outcome: the data, `nil` for absent, or the error.
    package static func read(
        _ status: KeychainStatus, data: Data?, accessGroup: String?
    ) -> Result<Data?, PersistenceError> {
        switch status {
        case .success:
            guard let data else { return .failure(PersistenceError.corrupt.with(detail: "the item has no data")) }
            return .success(data)
        case .itemNotFound:
            return .success(nil)
        default:
            return .failure(error(status, accessGroup: accessGroup, fallback: .readFailed))
        }
    }

    /// The error a failed call stands for; `fallback` for statuses without a meaning of their own.
    package static func error(
        _ status: KeychainStatus, accessGroup: String?, fallback: PersistenceError
    ) -> PersistenceError {
        switch status {
        case .interactionNotAllowed:
            PersistenceError.unavailable.with(
                detail: "\(status): protected data is unavailable until the device is unlocked")
        case .userCanceled, .authFailed:
            PersistenceError.unavailable.with(detail: "\(status): user presence was not confirmed")
        case .missingEntitlement:
            PersistenceError.missingEntitlement.with(detail: missingEntitlementDetail(accessGroup: accessGroup))
        default:
            fallback.with(detail: "\(status)")
        }
    }

    /// Names the entitlement that is missing.
    static func missingEntitlementDetail(accessGroup: String?) -> String {
        if let accessGroup {
            return
                "\(KeychainStatus.missingEntitlement): the app is not entitled to the access group \"\(accessGroup)\"; "
                + "list it in the keychain-access-groups entitlement (Keychain Sharing capability) of the app and "
                + "of each extension, with the team ID prefix"
        }
        return "\(KeychainStatus.missingEntitlement): the process has no Keychain entitlement "
            + "(application-identifier or keychain-access-groups); sign the app, or the unit tests' host app, "
            + "with the Keychain Sharing capability"
    }
}
