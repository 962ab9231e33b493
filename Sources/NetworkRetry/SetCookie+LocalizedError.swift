public import Foundation

/// User-facing English messages for a refused cookie. They never contain the cookie's name or value.
extension SetCookie.Refusal: LocalizedError {
    /// A sentence a user may read.
    public var errorDescription: String? {
        switch self {
        case .malformed, .invalidCharacters: "The server sent a session cookie that could not be read."
        case .tooLarge: "The server sent a session cookie that is too large."
        case .foreignDomain: "The server sent a session cookie for another site."
        case .publicSuffixDomain: "The server sent a session cookie for a whole group of sites."
        case .secureOverInsecureTransport: "The server sent a secure session cookie over an insecure connection."
        }
    }
}
