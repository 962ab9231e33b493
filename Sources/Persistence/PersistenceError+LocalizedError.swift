public import Foundation

/// User-facing English messages. They never contain token material or the ``PersistenceError/detail``
/// (a path or an errno name is for logs, not for users).
extension PersistenceError: LocalizedError {
    /// A sentence a user may read, such as "Your saved session cannot be read right now."
    public var errorDescription: String? {
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
        default: "Your session could not be stored."
        }
    }
}
