/// An error from a token store. Its description never contains token material.
public struct PersistenceError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Hashable, Sendable, CaseIterable {
        case unavailable, conflict, corrupt, unsupportedFormatVersion, permissionsTooWide, wrongKey
        case writeFailed, readFailed, lockFailed, lockTimedOut, notAFile, migrationFailed
        case ownedByAnotherUser, wrongAccount
        case missingEntitlement
    }
    private let code: Code
    /// A short, secret-free explanation (a path, an errno name), if any.
    public let detail: String?

    private init(_ code: Code, detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    /// The store cannot be read or written right now (locked Keychain, device not unlocked). Not "signed out".
    public static let unavailable = PersistenceError(.unavailable)
    /// A conditional write found a different generation stored.
    public static let conflict = PersistenceError(.conflict)
    /// The stored data could not be decoded; it has been kept aside, not deleted.
    public static let corrupt = PersistenceError(.corrupt)
    /// The stored data was written by a newer format version.
    public static let unsupportedFormatVersion = PersistenceError(.unsupportedFormatVersion)
    /// The file or directory on disk is readable by others.
    public static let permissionsTooWide = PersistenceError(.permissionsTooWide)
    /// The encryption key does not open the stored data.
    public static let wrongKey = PersistenceError(.wrongKey)
    /// Writing failed (disk full, read-only directory); what was stored before is intact.
    public static let writeFailed = PersistenceError(.writeFailed)
    /// Reading failed for a reason other than absence.
    public static let readFailed = PersistenceError(.readFailed)
    /// The store's lock could not be taken.
    public static let lockFailed = PersistenceError(.lockFailed)
    /// Another process (or task) held the store's lock longer than the configured wait
    /// (``FileTokenStore/Configuration/lockTimeout``). Nothing was changed; trying again later may succeed.
    public static let lockTimedOut = PersistenceError(.lockTimedOut)
    /// Something other than a regular file stands where the session file should be.
    public static let notAFile = PersistenceError(.notAFile)
    /// Migrating an older stored format failed; the old entries are kept.
    public static let migrationFailed = PersistenceError(.migrationFailed)
    /// The store's directory or a file in it belongs to another user, who could have planted or changed it; it
    /// was not used. The detail names the path and both user IDs.
    public static let ownedByAnotherUser = PersistenceError(.ownedByAnotherUser)
    /// The store keeps one account's session and was asked for another's (the detail names neither).
    public static let wrongAccount = PersistenceError(.wrongAccount)
    /// The app is not entitled to the Keychain access group it asked for (`errSecMissingEntitlement`, -34018): a
    /// configuration error, not "signed out". The detail names the entitlement to add.
    public static let missingEntitlement = PersistenceError(.missingEntitlement)

    /// Returns this error with a secret-free detail attached, for a token store written outside TokenKit as for
    /// TokenKit's own. The detail shows in ``detail`` and ``description`` (for logs), never in the message shown
    /// to users, and takes no part in `==`.
    ///
    /// ```swift
    /// throw PersistenceError.corrupt.with(detail: "row 7 is not a session")
    /// ```
    ///
    /// - Parameter detail: A short explanation: never token text, a user ID or anything else secret.
    /// - Returns: The same error with the detail.
    public func with(detail: String) -> PersistenceError { PersistenceError(code, detail: detail) }

    /// One error of each code, for the tests that check every code has its messages.
    package static var everyCode: [PersistenceError] { Code.allCases.map { PersistenceError($0) } }
    /// The key of the error's message in the translations: `PersistenceError.<code>`.
    package var messageKey: String { "PersistenceError.\(code.rawValue)" }

    /// Two errors are equal when their codes are, whatever their detail.
    public static func == (lhs: PersistenceError, rhs: PersistenceError) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, to agree with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    /// `PersistenceError.<code>` and the detail, if any.
    public var description: String {
        "PersistenceError.\(code.rawValue)" + (detail.map { " (\($0))" } ?? "")
    }
}
