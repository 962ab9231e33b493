import AuthToken
public import Foundation

/// User-facing messages in the user's language (English or Japanese). They never contain header values, tokens,
/// bodies or the cause's text.
extension NetworkRetryError: LocalizedError {
    /// A sentence a user may read, such as "The server could not be reached. Check your connection.", in the
    /// user's language.
    public var errorDescription: String? {
        Self.messages.text(messageKey, english: englishDescription ?? "The request failed.")
    }

    /// The English sentence for this error's code; `nil` for a code that has none of its own.
    package var englishDescription: String? {
        switch self {
        case .unauthorizedAfterRefresh, .unauthorized: "Your session is no longer valid. Please sign in again."
        case .insufficientScope: "You do not have permission to do this."
        case .insufficientUserAuthentication: "Please sign in again to confirm it is you."
        case .timedOut: "The server took too long to answer. Please try again."
        case .cannotConnect: "The server could not be reached. Check your connection and try again."
        case .transport: "The request could not be sent. Check your connection and try again."
        case .invalidResponse: "The server sent an answer that could not be read."
        case .insecureTransport: "The request was not sent because the connection is not secure."
        case .originNotAllowed: "The request was not sent because the server is not a trusted one."
        case .invalidRequest, .clientFollowsRedirects: "The request could not be made."
        case .noToken: "You are not signed in."
        case .tooManyRedirects, .invalidRedirect:
            "The server redirected the request too often or to an invalid address."
        case .bodyTooLarge, .responseTooLarge: "The server's answer was too large."
        case .bodyNotReplayable: "The request could not be sent again."
        case .dpopKeyUnavailable: "Your session cannot be used on this device. Please sign in again."
        case .dpopProofRejected: "The server did not accept this device's proof of sign-in. Please try again."
        default: nil
        }
    }

    /// The translations of this module's messages.
    static let messages = MessageCatalog(module: "NetworkRetry")
}
