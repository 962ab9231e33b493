public import Foundation

/// User-facing English messages. They name what is wrong, never token text or a claim's value.
extension AuthTokenError: LocalizedError {
    /// A sentence a user may read, such as "Your session has expired. Please sign in again."
    public var errorDescription: String? {
        if part != nil { return "The sign-in token could not be read." }
        if claim != nil { return "The sign-in token has an invalid date or field." }
        switch self {
        case .emptyAccessToken: return "The sign-in token is missing."
        case .missingExpiration: return "The sign-in token does not say when it expires."
        case .expired: return "Your session has expired. Please sign in again."
        case .notYetValid, .issuedInFuture:
            return "The sign-in token is not valid yet. Check that this device's date and time are correct."
        case .emptyRefreshToken, .missingRefreshToken:
            return "The session cannot be renewed. Please sign in again."
        case .expirationUnknown: return "The sign-in token does not say when it expires."
        default: return "The sign-in token is not valid."
        }
    }
}
