import AuthToken
import Foundation

/// User-facing messages for a refused cookie, in the user's language (English or Japanese). They never contain the
/// cookie's name or value.
extension SetCookie.Refusal: LocalizedError {
    /// A sentence a user may read, in the user's language.
    package var errorDescription: String? {
        NetworkRetryError.messages.text(messageKey, english: englishDescription)
    }

    /// Every refusal, for the tests that check each has its messages.
    package static let everyRefusal: [SetCookie.Refusal] = [
        .malformed, .tooLarge, .invalidCharacters, .foreignDomain, .secureOverInsecureTransport, .publicSuffixDomain,
    ]

    /// The key of the refusal's message in the translations: `SetCookie.Refusal.<case>`.
    package var messageKey: String {
        switch self {
        case .malformed: "SetCookie.Refusal.malformed"
        case .tooLarge: "SetCookie.Refusal.tooLarge"
        case .invalidCharacters: "SetCookie.Refusal.invalidCharacters"
        case .foreignDomain: "SetCookie.Refusal.foreignDomain"
        case .secureOverInsecureTransport: "SetCookie.Refusal.secureOverInsecureTransport"
        case .publicSuffixDomain: "SetCookie.Refusal.publicSuffixDomain"
        }
    }

    /// The English sentence.
    package var englishDescription: String {
        switch self {
        case .malformed, .invalidCharacters: "The server sent a session cookie that could not be read."
        case .tooLarge: "The server sent a session cookie that is too large."
        case .foreignDomain: "The server sent a session cookie for another site."
        case .publicSuffixDomain: "The server sent a session cookie for a whole group of sites."
        case .secureOverInsecureTransport: "The server sent a secure session cookie over an insecure connection."
        }
    }
}
