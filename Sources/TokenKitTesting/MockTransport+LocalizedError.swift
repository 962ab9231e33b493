import Foundation

/// An English message, so a test's failure reads as what happened.
extension MockTransport.ScriptExhausted: LocalizedError {
    /// "The mock transport has no reply for request n."
    public var errorDescription: String? { "The mock transport has no reply for request \(requestNumber)." }
}
