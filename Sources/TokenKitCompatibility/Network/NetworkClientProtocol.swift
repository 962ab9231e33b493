public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The FitIQ apps' network client: sends a `URLRequest` and returns the body and the response, throwing
/// ``APIError/unauthorized`` on a 401.
///
/// ``executeWithAutoRetry(request:tokenRefreshClient:authTokenPersistence:retryCount:)`` adds the refresh and the
/// retry, also for an app that keeps its own error type (<doc:RetryingAfterA401>).
///
/// Conformers must be `Sendable` (the FitIQ and Lume apps' protocol is not). A complete small conformance:
///
/// ```swift
/// struct URLSessionNetworkClient: NetworkClientProtocol {
///     func executeRequest(request: URLRequest) async throws -> (Data, HTTPURLResponse) {
///         let (data, response) = try await URLSession.shared.data(for: request)
///         guard let http = response as? HTTPURLResponse else { throw APIError.invalidResponse }
///         guard http.statusCode != 401 else { throw APIError.unauthorized }
///         return (data, http)
///     }
/// }
/// ```
public protocol NetworkClientProtocol: Sendable {
    /// Sends `request` and returns the response body and head.
    ///
    /// - Parameter request: The request.
    /// - Returns: The body and the response.
    /// - Throws: ``APIError/unauthorized`` on a 401 (what the auto-retry looks for); anything else on other
    ///   failures.
    func executeRequest(request: URLRequest) async throws -> (Data, HTTPURLResponse)

    /// The HTTP status that an error thrown by ``executeRequest(request:)`` reports, if it reports one.
    ///
    /// ``executeWithAutoRetry(request:tokenRefreshClient:authTokenPersistence:retryCount:)`` refreshes on a 401
    /// found this way, and ``NetworkClientTransport`` hands the status to the refresh strategy. The default
    /// implementation recognises TokenKit's ``APIError``, an enum case named `unauthorized`, and a status or response
    /// the error carries (<doc:RetryingAfterA401>); implement it when your client's errors carry the status some
    /// other way:
    ///
    /// ```swift
    /// func httpStatus(of error: any Error) -> Int? {
    ///     (error as? MyNetworkError)?.response?.statusCode
    /// }
    /// ```
    ///
    /// - Parameter error: An error ``executeRequest(request:)`` threw.
    /// - Returns: The status, or `nil` when the error is not about an HTTP answer.
    func httpStatus(of error: any Error) -> Int?
}

extension NetworkClientProtocol {
    /// The HTTP status the error reports: see the requirement for what is recognised.
    ///
    /// - Parameter error: An error ``executeRequest(request:)`` threw.
    /// - Returns: The status, or `nil`.
    public func httpStatus(of error: any Error) -> Int? {
        recognizedHTTPStatus(of: error)
    }
}
