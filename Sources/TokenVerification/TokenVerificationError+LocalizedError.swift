import AuthToken
public import Foundation

/// Messages for a person reading a backend's logs or an error page, in their language (English or Japanese).
/// They never contain token text, a claim's value or key material.
extension TokenVerificationError: LocalizedError {
    /// ``safeDescription`` as a sentence ("The token has expired."), in the user's language.
    public var errorDescription: String? {
        Self.messages.text(messageKey, english: englishDescription)
    }

    /// The English sentence: ``safeDescription`` and a full stop.
    package var englishDescription: String { safeDescription + "." }

    /// The translations of these messages.
    static let messages = MessageCatalog(module: "TokenVerification")
}
