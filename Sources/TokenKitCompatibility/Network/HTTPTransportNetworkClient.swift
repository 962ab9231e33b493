public import Foundation
import HTTPTypes
public import NetworkRetry

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// A ``NetworkClientProtocol`` over any `HTTPTransport` (URLSession, AsyncHTTPClient, a test's mock
/// transport): a 401 throws ``APIError/unauthorized``; every other status is returned as it is.
public struct HTTPTransportNetworkClient: NetworkClientProtocol {
    /// The transport.
    package let transport: any HTTPTransport

    /// Creates the client.
    ///
    /// - Parameter transport: The transport.
    public init(transport: any HTTPTransport) {
        self.transport = transport
    }

    /// Sends `request` through the transport.
    ///
    /// - Parameter request: The request, with an absolute `http` or `https` URL.
    /// - Returns: The body and the response.
    /// - Throws: ``APIError/unauthorized`` on a 401, ``APIError/invalidResponse`` when the request or response
    ///   cannot be converted, or the transport's error.
    public func executeRequest(request: URLRequest) async throws -> (Data, HTTPURLResponse) {
        let (head, body) = try FoundationConversion.httpRequest(request)
        let (response, data) = try await transport.send(head, body: body)
        guard response.status.code != 401 else { throw APIError.unauthorized }
        guard let url = request.url, let http = FoundationConversion.httpURLResponse(response, url: url) else {
            throw APIError.invalidResponse
        }
        return (data, http)
    }
}

/// Conversions between swift-http-types and Foundation's request and response types.
enum FoundationConversion {
    /// The head and body of a `URLRequest`.
    static func httpRequest(_ request: URLRequest) throws -> (HTTPRequest, Data?) {
        // The path and query stay percent-encoded as the app wrote them: decoding "%2F" or "%3F" would turn an
        // encoded name into another endpoint.
        guard let url = request.url,
            let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            components.user == nil, components.password == nil,
            let host = components.percentEncodedHost, !host.isEmpty
        else { throw APIError.invalidResponse }
        let authority = components.port.map { "\(host):\($0)" } ?? host
        var path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        if let query = components.percentEncodedQuery { path += "?" + query }
        var head = HTTPRequest(
            method: HTTPRequest.Method(request.httpMethod ?? "GET") ?? .get, scheme: scheme, authority: authority,
            path: path)
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            guard let field = HTTPField.Name(name) else { continue }
            head.headerFields.append(HTTPField(name: field, value: value))
        }
        return (head, request.httpBody)
    }

    /// A `URLRequest` for a head and body (cookies joined as RFC 6265 says).
    static func urlRequest(_ request: HTTPRequest, body: Data?) throws -> URLRequest {
        try URLSessionTransport.urlRequest(request, body: body)
    }

    /// An `HTTPURLResponse` for a response head.
    static func httpURLResponse(_ response: HTTPResponse, url: URL) -> HTTPURLResponse? {
        var fields: [String: String] = [:]
        for field in response.headerFields {
            fields[field.name.rawName] = fields[field.name.rawName].map { $0 + ", " + field.value } ?? field.value
        }
        return HTTPURLResponse(
            url: url, statusCode: response.status.code, httpVersion: "HTTP/1.1", headerFields: fields)
    }

    /// The response head of an `HTTPURLResponse`.
    static func httpResponse(_ response: HTTPURLResponse) -> HTTPResponse {
        URLSessionTransport.httpResponse(converting: response)
    }
}
