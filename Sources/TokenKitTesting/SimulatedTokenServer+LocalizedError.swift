import AuthToken
import Foundation

/// A message in the user's language (English or Japanese), so a test's failure reads as what happened.
extension SimulatedTokenServer.ConnectionError: LocalizedError {
    /// "The simulated token server dropped the connection."
    package var errorDescription: String? {
        testKitMessages.text(
            "SimulatedTokenServer.ConnectionError", english: "The simulated token server dropped the connection.")
    }
}
