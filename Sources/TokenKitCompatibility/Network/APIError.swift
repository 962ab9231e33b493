import AuthToken
public import Foundation
import TokenRefresh

/// The error a ``NetworkClientProtocol`` throws for an HTTP failure, as the FitIQ API clients match it:
/// `if case .unauthorized = error`.
///
/// Compare with the static members; equality compares the kind (and the status of
/// ``httpStatus(_:)``). Descriptions name the kind and status only.
public struct APIError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    private enum Code: String, Hashable, Sendable, CaseIterable {
        case unauthorized, invalidResponse, httpStatus
    }
    private let code: Code
    /// The HTTP status, when the error is about one.
    public let statusCode: Int?

    private init(_ code: Code, statusCode: Int?) {
        self.code = code
        self.statusCode = statusCode
    }

    /// The server answered 401: the access token was missing, expired or revoked.
    /// ``NetworkClientProtocol/executeWithAutoRetry(request:tokenRefreshClient:authTokenPersistence:retryCount:)``
    /// refreshes and retries once on it.
    public static let unauthorized = APIError(.unauthorized, statusCode: 401)
    /// The answer was not an HTTP response.
    public static let invalidResponse = APIError(.invalidResponse, statusCode: nil)

    /// The server answered with an unsuccessful status other than 401.
    ///
    /// - Parameter status: The HTTP status code.
    /// - Returns: The error; a 401 is ``unauthorized``.
    public static func httpStatus(_ status: Int) -> APIError {
        status == 401 ? .unauthorized : APIError(.httpStatus, statusCode: status)
    }

    /// `APIError.<kind>`, with the status when there is one.
    public var description: String {
        code == .httpStatus ? "APIError.httpStatus(\(statusCode ?? 0))" : "APIError.\(code.rawValue)"
    }

    /// A user-facing message without secrets, in the user's language (English or Japanese).
    public var errorDescription: String? {
        TokenRefreshError.messages.text(messageKey, english: englishDescription, number: statusCode)
    }

    /// The English message.
    package var englishDescription: String {
        switch code {
        case .unauthorized: "Your session has expired. Please sign in again."
        case .invalidResponse: "The server sent an answer that could not be read."
        case .httpStatus: "The server could not complete the request (HTTP \(statusCode ?? 0))."
        }
    }

    /// One error of each kind, for the tests that check every kind has its messages.
    package static var everyCode: [APIError] {
        Code.allCases.map { APIError($0, statusCode: $0 == .httpStatus ? 500 : nil) }
    }
    /// The key of the error's message in the translations: `APIError.<kind>`.
    package var messageKey: String { "APIError.\(code.rawValue)" }
}
