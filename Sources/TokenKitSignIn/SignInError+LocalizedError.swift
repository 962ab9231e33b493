import AuthToken
public import Foundation

/// Messages for the app's user, in their language (English or Japanese). They never contain a code, a token, a
/// `state`, a nonce or the server's own text.
extension SignInError: LocalizedError {
    /// What happened, as a sentence for the user ("The sign-in was declined."), in the user's language.
    public var errorDescription: String? {
        Self.messages.text(messageKey, english: englishDescription)
    }

    /// The translations of these messages.
    static let messages = MessageCatalog(module: "TokenKitSignIn")
}
