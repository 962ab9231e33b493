public import Foundation
public import HTTPTypes

/// Sends one HTTP request and returns the whole response.
///
/// Bodies are buffered (`Data`), so a request can be replayed after a refresh. Adapters exist for
/// URLSession (``URLSessionTransport``), AsyncHTTPClient (the separate `Integrations` package) and a scripted
/// mock in `TokenKitTesting`.
///
/// A complete small conformance:
///
/// ```swift
/// struct Echo: HTTPTransport {
///     func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
///         (HTTPResponse(status: .ok), body ?? Data())
///     }
/// }
/// ```
public protocol HTTPTransport: Sendable {
    /// Sends `request` with `body` and returns the response and its body.
    ///
    /// - Parameters:
    ///   - request: The request, with an absolute URL (scheme, authority and path).
    ///   - body: The request body, if any.
    /// - Returns: The response head and its body.
    /// - Throws: Any error of the underlying client (connection refused, timeout, cancellation).
    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data)
}
