public import Foundation
public import HTTPTypes
import Synchronization
public import TokenKit

/// A transport that counts what passes through it: requests, and 401 answers (each one is a retry by
/// `executeWithAutoRetry`, after one shared refresh).
public final class CountingTransport: HTTPTransport {
    private let base: any HTTPTransport
    private let counts = Mutex((requests: 0, unauthorized: 0))

    /// Wraps a transport.
    ///
    /// - Parameter base: The transport that sends.
    public init(_ base: any HTTPTransport) {
        self.base = base
    }

    /// Requests sent so far.
    public var requests: Int { counts.withLock { $0.requests } }

    /// 401 answers seen so far.
    public var unauthorized: Int { counts.withLock { $0.unauthorized } }

    /// Sends through the wrapped transport and counts.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - body: The body, if any.
    /// - Returns: The response and its body.
    /// - Throws: What the wrapped transport throws.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        counts.withLock { $0.requests += 1 }
        let (response, data) = try await base.send(request, body: body)
        if response.status == .unauthorized { counts.withLock { $0.unauthorized += 1 } }
        return (response, data)
    }
}

extension AuthenticatedClient {
    /// Sends a request to `path` under `baseURL` with a Bearer token (refreshing once after a 401) and
    /// returns the body of a 2xx answer.
    ///
    /// - Parameters:
    ///   - method: The method.
    ///   - baseURL: The API's base URL.
    ///   - path: The path, such as `api/v1/sleep`.
    ///   - body: The body, if any.
    /// - Returns: The response body.
    /// - Throws: ``DemoFailure`` for a non-2xx answer; otherwise what `executeWithAutoRetry` throws.
    public func call(
        _ method: HTTPRequest.Method, _ baseURL: URL, _ path: String, body: Data? = nil
    ) async throws -> Data {
        let url = baseURL.appending(path: path)
        var request = HTTPRequest(method: method, scheme: url.scheme, authority: authority(of: url), path: url.path)
        if body != nil { request.headerFields[.contentType] = "application/octet-stream" }
        let (response, data) = try await executeWithAutoRetry(request, body: body)
        guard response.status.kind == .successful else {
            throw DemoFailure("\(method) /\(path) answered HTTP \(response.status.code)")
        }
        return data
    }

    private func authority(of url: URL) -> String? {
        guard let host = url.host else { return nil }
        return url.port.map { "\(host):\($0)" } ?? host
    }
}
