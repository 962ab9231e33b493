// swift-format-ignore-file
// Not a target: a stand-in for Apple's Security module, used by .ci/apple-typecheck. It declares the symbols the
// Apple-only code uses (PersistenceKeychain's SystemKeychain and the `canImport(Security)` branches that reach it)
// with Linux-expressible types; CF types are approximated. Names and arities follow Apple's documentation:
//   https://developer.apple.com/documentation/security/secitemadd(_:_:)
//   https://developer.apple.com/documentation/security/secitemcopymatching(_:_:)
//   https://developer.apple.com/documentation/security/secitemupdate(_:_:)
//   https://developer.apple.com/documentation/security/secitemdelete(_:)
//   https://developer.apple.com/documentation/security/secaccesscontrolcreatewithflags(_:_:_:_:)
//   https://developer.apple.com/documentation/security/item-attribute-keys-and-values
@_exported import Foundation

public typealias OSStatus = Int32
public typealias CFString = String
public typealias CFDictionary = [String: Any]
public typealias CFTypeRef = AnyObject
public typealias CFAllocator = AnyObject
public typealias CFError = NSError
public final class SecAccessControl {}
public struct SecAccessControlCreateFlags: OptionSet {
    public let rawValue: UInt; public init(rawValue: UInt) { self.rawValue = rawValue }
    public static let userPresence = SecAccessControlCreateFlags(rawValue: 1)
}
public func SecItemAdd(_ attributes: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus { 0 }
public func SecItemCopyMatching(_ query: CFDictionary, _ result: UnsafeMutablePointer<CFTypeRef?>?) -> OSStatus { 0 }
public func SecItemUpdate(_ query: CFDictionary, _ attributesToUpdate: CFDictionary) -> OSStatus { 0 }
public func SecItemDelete(_ query: CFDictionary) -> OSStatus { 0 }
public func SecAccessControlCreateWithFlags(
    _ allocator: CFAllocator?, _ protection: Any, _ flags: SecAccessControlCreateFlags,
    _ error: UnsafeMutablePointer<Unmanaged<CFError>?>?
) -> SecAccessControl? { nil }
public let kSecClass: CFString = "class", kSecClassGenericPassword: CFString = "genp",
    kSecAttrService: CFString = "svce"
public let kSecAttrAccount: CFString = "acct", kSecAttrAccessGroup: CFString = "agrp",
    kSecAttrSynchronizable: CFString = "sync"
public let kSecAttrAccessible: CFString = "pdmn", kSecAttrAccessControl: CFString = "accc",
    kSecUseDataProtectionKeychain: CFString = "nleg"
public let kSecValueData: CFString = "v_Data", kSecReturnData: CFString = "r_Data",
    kSecMatchLimit: CFString = "m_Limit", kSecMatchLimitOne: CFString = "m_LimitOne"
public let kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly: CFString = "cku",
    kSecAttrAccessibleAfterFirstUnlock: CFString = "ck"
public let kSecAttrAccessibleWhenUnlockedThisDeviceOnly: CFString = "aku",
    kSecAttrAccessibleWhenUnlocked: CFString = "ak"
