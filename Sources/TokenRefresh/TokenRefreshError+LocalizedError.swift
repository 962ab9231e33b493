package import AuthToken
public import Foundation

/// User-facing messages in the user's language (English or Japanese). They never contain token text, a client
/// secret, a password, the OAuth code or the underlying error's text.
extension TokenRefreshError: LocalizedError {
    /// A sentence a user may read, such as "Your session has ended. Please sign in again.", in the user's
    /// language. A refused sign-in or sign-up that carries the server's known answer (``AuthServerError``, such as
    /// "Username already exists") reads as that answer.
    public var errorDescription: String? {
        if self == .signInRejected, let answer = underlying as? AuthServerError { return answer.localizedText }
        return Self.messages.text(messageKey, english: englishDescription ?? "Signing in failed.")
    }

    /// The English sentence for this error's code; `nil` for a code that has none of its own.
    package var englishDescription: String? {
        switch self {
        case .refreshTokenRejected, .sessionExpired, .missingRefreshToken:
            "Your session has ended. Please sign in again."
        case .sessionInvalidated: "You were signed out on the server. Please sign in again."
        case .configuration: "The app cannot sign in because of a configuration problem."
        case .transient where isConnectivityFailure:
            "The server could not be reached. Check your connection and try again."
        case .transient: "The server is not available right now. Please try again later."
        case .timeout: "The server took too long to answer. Please try again."
        case .rateLimited: "Too many sign-in attempts. Please wait a moment and try again."
        case .signedOut: "You are not signed in."
        case .storageUnavailable: "Your saved session cannot be read right now. Unlock the device and try again."
        case .cancelled: "The request was cancelled."
        case .malformedResponse, .unexpectedResponse: "The sign-in server sent an answer that could not be used."
        case .signInRejected: "The sign-in was not accepted. Check your details and try again."
        case .serverRefused: "The server refused the request. Your session was kept."
        case .invalidArgument: "The sign-in request could not be made."
        case .sessionChanged: "The account changed while this request was under way, so it was not sent again."
        case .insecureEndpoint: "The app cannot connect securely to the sign-in server."
        default: nil
        }
    }

    /// The translations of this module's messages (`Messages/Resources/ja.json`).
    package static let messages = MessageCatalog(module: "TokenRefresh")
}
