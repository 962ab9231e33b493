public import Foundation

/// User-facing messages in the user's language (English or Japanese). They name what is wrong, never token text
/// or a claim's value.
extension AuthTokenError: LocalizedError {
    /// A sentence a user may read, such as "Your session has expired. Please sign in again.", in the user's
    /// language.
    public var errorDescription: String? {
        Self.messages.text(messageKey, english: englishDescription ?? "The sign-in token is not valid.")
    }

    /// The English sentence for this error's code; `nil` for a code that has none of its own.
    package var englishDescription: String? {
        switch self {
        case .emptyAccessToken: "The sign-in token is missing."
        case .missingExpiration, .expirationUnknown: "The sign-in token does not say when it expires."
        case .expired: "Your session has expired. Please sign in again."
        case .notYetValid, .issuedInFuture:
            "The sign-in token is not valid yet. Check that this device's date and time are correct."
        case .emptyRefreshToken, .missingRefreshToken: "The session cannot be renewed. Please sign in again."
        default:
            if messageKey == "AuthTokenError.malformedJWT" {
                "The sign-in token could not be read."
            } else if messageKey == "AuthTokenError.invalidClaim" {
                "The sign-in token has an invalid date or field."
            } else {
                nil
            }
        }
    }

    /// The translations of these messages.
    static let messages = MessageCatalog(module: "AuthToken")
}
