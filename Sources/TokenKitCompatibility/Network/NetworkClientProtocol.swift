public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The FitIQ apps' network client: sends a `URLRequest` and returns the body and the response, throwing
/// ``APIError/unauthorized`` on a 401.
///
/// An app that keeps its own error type works too: a 401 is recognised when the client returns the 401
/// response, or throws an error that ``httpStatus(of:)`` recognises (an enum case named `unauthorized`, or an
/// error carrying the status or the `HTTPURLResponse`).
///
/// ``executeWithAutoRetry(request:tokenRefreshClient:authTokenPersistence:retryCount:)`` adds the refresh and
/// the retry. ``HTTPTransportNetworkClient`` is a conformance over any TokenKit `HTTPTransport`, and
/// ``NetworkClientTransport`` goes the other way, so that a `TokenRefreshClient` refreshes through the app's
/// client.
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
    /// found this way, and ``NetworkClientTransport`` hands the status to the refresh strategy.
    ///
    /// The default implementation recognises, in this order: TokenKit's ``APIError`` (its
    /// ``APIError/statusCode``); an enum case named `unauthorized`, in any letter case, with or without associated
    /// values (401); an `HTTPURLResponse` or `HTTPResponse` the error carries (its status); an integer from 100 to
    /// 599 the error carries under the label `statusCode`, `status`, `httpStatus` or `httpStatusCode` (not a bare
    /// `code`, which apps use for codes of their own).
    /// It looks into the error with `Mirror`, two levels deep. So an app that keeps its own `APIError` (which
    /// shadows TokenKit's in its files) still refreshes. Implement it when your client's errors carry the status
    /// some other way (a case without associated values whose type has its own `description` is not recognised
    /// by name):
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
