import Foundation

/// An English message, so a test's failure reads as what happened.
extension SimulatedTokenServer.ConnectionError: LocalizedError {
    /// "The simulated token server dropped the connection."
    public var errorDescription: String? { "The simulated token server dropped the connection." }
}
