/// A Keychain result code (an `OSStatus`), as the ``KeychainBackend`` seam returns it.
///
/// The named codes are the ones TokenKit acts on; any other code keeps its number and reads as `OSStatus <n>`.
/// The numbers are those of Apple's Security framework (`SecBase.h`).
public struct KeychainStatus: Sendable, Hashable, CustomStringConvertible {
    /// The `OSStatus` number.
    public let rawValue: Int32

    /// Wraps an `OSStatus`.
    ///
    /// - Parameter rawValue: The number a `SecItem` call returned.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// `errSecSuccess` (0).
    public static let success = KeychainStatus(rawValue: 0)
    /// `errSecItemNotFound` (-25300): no item matches. TokenKit reads it as "absent".
    public static let itemNotFound = KeychainStatus(rawValue: -25300)
    /// `errSecDuplicateItem` (-25299): an item with the same primary key exists. TokenKit turns the add into an
    /// update.
    public static let duplicateItem = KeychainStatus(rawValue: -25299)
    /// `errSecInteractionNotAllowed` (-25308): protected data is unavailable (the device has not been unlocked
    /// since boot, or the item needs an unlocked device). TokenKit reads it as "unavailable", never as absent.
    public static let interactionNotAllowed = KeychainStatus(rawValue: -25308)
    /// `errSecMissingEntitlement` (-34018): the process is not entitled to the access group (or to the Keychain at
    /// all). TokenKit reports a configuration error naming the entitlement.
    public static let missingEntitlement = KeychainStatus(rawValue: -34018)
    /// `errSecUserCanceled` (-128): the user dismissed the Face ID, Touch ID or passcode prompt.
    public static let userCanceled = KeychainStatus(rawValue: -128)
    /// `errSecAuthFailed` (-25293): user presence was not confirmed.
    public static let authFailed = KeychainStatus(rawValue: -25293)

    /// The code's name and number, such as `errSecItemNotFound (-25300)`.
    public var description: String {
        let name: String? =
            switch self {
            case .success: "errSecSuccess"
            case .itemNotFound: "errSecItemNotFound"
            case .duplicateItem: "errSecDuplicateItem"
            case .interactionNotAllowed: "errSecInteractionNotAllowed"
            case .missingEntitlement: "errSecMissingEntitlement"
            case .userCanceled: "errSecUserCanceled"
            case .authFailed: "errSecAuthFailed"
            default: nil
            }
        return name.map { "\($0) (\(rawValue))" } ?? "OSStatus \(rawValue)"
    }
}
