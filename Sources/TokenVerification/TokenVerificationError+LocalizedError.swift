public import Foundation

/// English messages for a person reading a backend's logs or an error page. They never contain token text,
/// a claim's value or key material.
extension TokenVerificationError: LocalizedError {
    /// ``safeDescription`` as a sentence: "The token has expired."
    public var errorDescription: String? { safeDescription + "." }
}
