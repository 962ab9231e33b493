public import Foundation

/// The four Keychain calls TokenKit makes, and nothing else: the seam between TokenKit's Keychain code, which is
/// tested on every platform, and the system call.
///
/// `SystemKeychain` (Apple platforms) passes each call to `SecItemAdd`, `SecItemCopyMatching`, `SecItemUpdate`
/// and `SecItemDelete`. `KeychainSimulator`, in the `TokenKitKeychainTesting` product, follows the same
/// documented semantics in memory, for tests on any platform. The calls are synchronous, like the system's. A
/// conformance that finds nothing:
///
/// ```swift
/// final class EmptyKeychain: KeychainBackend {
///     func add(_ attributes: [KeychainAttribute]) -> KeychainStatus { .missingEntitlement }
///     func copyMatching(_ query: [KeychainAttribute]) -> (status: KeychainStatus, data: Data?) {
///         (.itemNotFound, nil)
///     }
///     func update(_ query: [KeychainAttribute], with changes: [KeychainAttribute]) -> KeychainStatus {
///         .itemNotFound
///     }
///     func delete(_ query: [KeychainAttribute]) -> KeychainStatus { .itemNotFound }
/// }
/// ```
public protocol KeychainBackend: Sendable {
    /// Adds an item (`SecItemAdd`).
    ///
    /// - Parameter attributes: The item's class, primary key, accessibility and data.
    /// - Returns: `success`, `duplicateItem` when an item with the same primary key exists, or another status.
    func add(_ attributes: [KeychainAttribute]) -> KeychainStatus

    /// Reads the data of the one item matching `query` (`SecItemCopyMatching` with `kSecReturnData` and
    /// `kSecMatchLimitOne`).
    ///
    /// - Parameter query: The item's class and primary key, plus ``KeychainAttribute/returnData`` and
    ///   ``KeychainAttribute/matchLimitOne``.
    /// - Returns: The status and, on success, the item's data.
    func copyMatching(_ query: [KeychainAttribute]) -> (status: KeychainStatus, data: Data?)

    /// Changes the items matching `query` (`SecItemUpdate`).
    ///
    /// - Parameters:
    ///   - query: The item's class and primary key.
    ///   - changes: The attributes to set (data, accessibility).
    /// - Returns: `success`, `itemNotFound`, or another status.
    func update(_ query: [KeychainAttribute], with changes: [KeychainAttribute]) -> KeychainStatus

    /// Deletes the items matching `query` (`SecItemDelete`).
    ///
    /// - Parameter query: The item's class and primary key.
    /// - Returns: `success`, `itemNotFound`, or another status.
    func delete(_ query: [KeychainAttribute]) -> KeychainStatus

    /// Whether protected data is available now, when the backend knows (`UIApplication.isProtectedDataAvailable`):
    /// while it is `false`, a read that finds nothing is "unavailable", never "absent" (during prewarming the
    /// Keychain has been seen to answer "not found" for an item that is there). `nil` when the backend cannot tell.
    var protectedDataAvailability: Bool? { get }
}

extension KeychainBackend {
    /// `nil`: the backend cannot tell (``KeychainTokenStore/Configuration/isProtectedDataAvailable`` can).
    public var protectedDataAvailability: Bool? { nil }
}
