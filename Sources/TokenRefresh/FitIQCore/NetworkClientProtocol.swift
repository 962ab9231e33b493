public import Foundation

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// The FitIQ apps' network client: sends a `URLRequest` and returns the body and the response, throwing
/// ``APIError/unauthorized`` on a 401.
///
/// ``executeWithAutoRetry(request:tokenRefreshClient:authTokenPersistence:retryCount:)`` adds the refresh and
/// the retry. ``HTTPTransportNetworkClient`` is a conformance over any TokenKit `HTTPTransport`, and
/// ``NetworkClientTransport`` goes the other way, so that a `TokenRefreshClient` refreshes through the app's
/// client.
///
/// Conformers must be `Sendable` (the seed's protocol is not). A complete small conformance:
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
}
