public import Foundation

/// User-facing English messages. They never contain header values, tokens, bodies or the cause's text.
extension NetworkRetryError: LocalizedError {
    /// A sentence a user may read, such as "The server could not be reached. Check your connection."
    public var errorDescription: String? {
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
        case .invalidRequest: "The request could not be made."
        case .noToken: "You are not signed in."
        case .tooManyRedirects, .invalidRedirect:
            "The server redirected the request too often or to an invalid address."
        case .bodyTooLarge: "The server's answer was too large."
        case .bodyNotReplayable: "The request could not be sent again."
        default: "The request failed."
        }
    }
}
