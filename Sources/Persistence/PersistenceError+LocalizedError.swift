import AuthToken
public import Foundation

/// User-facing messages in the user's language (English or Japanese). They never contain token material or the
/// ``PersistenceError/detail`` (a path or an errno name is for logs, not for users).
extension PersistenceError: LocalizedError {
    /// A sentence a user may read, such as "Your saved session cannot be read right now.", in the user's language.
    public var errorDescription: String? {
        Self.messages.text(messageKey, english: englishDescription ?? "Your session could not be stored.")
    }

    /// The English sentence for this error's code; `nil` for a code that has none of its own.
    package var englishDescription: String? {
        switch self {
        case .unavailable: "Your saved session cannot be read right now. Unlock the device and try again."
        case .conflict: "Your session was changed elsewhere. Please try again."
        case .corrupt, .unsupportedFormatVersion, .wrongKey:
            "Your saved session could not be read. Please sign in again."
        case .permissionsTooWide: "Your saved session is not stored safely, so it was not used."
        case .writeFailed: "Your session could not be saved."
        case .readFailed, .notAFile: "Your saved session could not be read."
        case .lockFailed, .lockTimedOut: "Your saved session is busy. Please try again."
        case .migrationFailed: "Your previous session could not be carried over. Please sign in again."
        case .ownedByAnotherUser: "Your saved session is not stored safely, so it was not used."
        case .wrongAccount: "This account's session cannot be stored here."
        case .missingEntitlement: "This app is not set up to keep your session. Please contact the developer."
        default: nil
        }
    }

    /// The translations of these messages.
    static let messages = MessageCatalog(module: "Persistence")
}
