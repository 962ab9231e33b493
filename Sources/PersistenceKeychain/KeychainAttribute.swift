public import Foundation

/// One entry of a Keychain query or attribute dictionary, as TokenKit builds it before the system call.
///
/// TokenKit builds every dictionary from these entries on every platform, so what it asks the Keychain for is
/// tested on Linux too. The system backend turns each entry into its `kSec…` key and value, one to one; a test
/// backend (such as `KeychainSimulator`) interprets them as the Keychain does.
public enum KeychainAttribute: Sendable, Hashable {
    /// `kSecClass: kSecClassGenericPassword`, the only item class TokenKit uses.
    case genericPasswordClass
    /// `kSecAttrService`.
    case service(String)
    /// `kSecAttrAccount`.
    case account(String)
    /// `kSecAttrAccessGroup`.
    case accessGroup(String)
    /// `kSecAttrSynchronizable`: `true` for an item synchronized through iCloud Keychain.
    case synchronizable(Bool)
    /// `kSecAttrAccessible` with the given class.
    case accessible(KeychainTokenStore.Accessibility)
    /// `kSecAttrAccessControl`: a `SecAccessControl` made from the accessibility class and the `.userPresence`
    /// flag (Face ID, Touch ID or the passcode). It replaces ``accessible(_:)``, which may not be given with it.
    case userPresence(KeychainTokenStore.Accessibility)
    /// `kSecUseDataProtectionKeychain: true` (on macOS, the iOS-style Keychain; ignored elsewhere).
    case dataProtectionKeychain
    /// `kSecValueData`.
    case valueData(Data)
    /// `kSecReturnData: true`.
    case returnData
    /// `kSecMatchLimit: kSecMatchLimitOne`.
    case matchLimitOne
}
