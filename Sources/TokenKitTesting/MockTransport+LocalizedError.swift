import AuthToken
import Foundation

/// A message in the user's language (English or Japanese), so a test's failure reads as what happened.
extension MockTransport.ScriptExhausted: LocalizedError {
    /// "The mock transport has no reply for request n."
    package var errorDescription: String? {
        testKitMessages.text(
            "MockTransport.ScriptExhausted",
            english: "The mock transport has no reply for request \(requestNumber).", number: requestNumber)
    }
}

/// The translations of the test kit's messages.
let testKitMessages = MessageCatalog(module: "TokenKitTesting")
