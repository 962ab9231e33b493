extension KeychainTokenStore {
    /// When Keychain items can be read (`kSecAttrAccessible`).
    public struct Accessibility: Sendable, Hashable, CustomStringConvertible {
        package enum Kind: String, Hashable, Sendable {
            case afterFirstUnlockThisDeviceOnly, afterFirstUnlock, whenUnlockedThisDeviceOnly, whenUnlocked
        }
        package let kind: Kind

        /// After the first unlock since boot, on this device only (not in backups). The default.
        public static let afterFirstUnlockThisDeviceOnly = Accessibility(kind: .afterFirstUnlockThisDeviceOnly)
        /// After the first unlock since boot; included in encrypted backups.
        public static let afterFirstUnlock = Accessibility(kind: .afterFirstUnlock)
        /// Only while the device is unlocked, on this device only. Background refreshes will see `.unavailable`.
        public static let whenUnlockedThisDeviceOnly = Accessibility(kind: .whenUnlockedThisDeviceOnly)
        /// Only while the device is unlocked; included in encrypted backups.
        public static let whenUnlocked = Accessibility(kind: .whenUnlocked)

        /// Whether the item stays on this device (never in a backup or iCloud Keychain).
        package var isThisDeviceOnly: Bool {
            kind == .afterFirstUnlockThisDeviceOnly || kind == .whenUnlockedThisDeviceOnly
        }

        /// Whether the item can be read while the device is locked, once it was unlocked since boot.
        package var isReadableWhileLocked: Bool {
            kind == .afterFirstUnlockThisDeviceOnly || kind == .afterFirstUnlock
        }

        /// The constant's name without its prefix, such as `afterFirstUnlockThisDeviceOnly`.
        public var description: String { kind.rawValue }
    }
}
