public import Foundation
public import HTTPTypes
public import NetworkRetry

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An `HTTPTransport` over an app's ``NetworkClientProtocol``, so that a `TokenRefreshClient` reaches the
/// refresh endpoint through the app's own client (its headers, its session, its logging).
///
/// Errors that report an HTTP error status, 400 to 599 (``APIError/unauthorized``, ``APIError/httpStatus(_:)``, or an
/// app's own error as ``NetworkClientProtocol/httpStatus(of:)`` reads it), come back as responses with that status and
/// an empty body, so the refresh strategy classifies them; other errors are passed on.
public struct NetworkClientTransport: HTTPTransport {
    /// The app's network client.
    package let networkClient: any NetworkClientProtocol

    /// Creates the transport.
    ///
    /// - Parameter networkClient: The app's network client.
    public init(_ networkClient: any NetworkClientProtocol) {
        self.networkClient = networkClient
    }

    /// Sends `request` through the network client.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - body: The body, if any.
    /// - Returns: The response head and body.
    /// - Throws: What the network client throws, except errors that report an HTTP error status.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let urlRequest = try FoundationConversion.urlRequest(request, body: body)
        do {
            let (data, response) = try await networkClient.executeRequest(request: urlRequest)
            return (FoundationConversion.httpResponse(response), data)
        } catch {
            // Only an error status becomes a response: an error that carries a success (a body the client could not
            // decode, say) is passed on, never read as an empty answer.
            guard let status = networkClient.httpStatus(of: error), (400...599).contains(status) else { throw error }
            return (HTTPResponse(status: .init(code: status)), Data())
        }
    }
}
