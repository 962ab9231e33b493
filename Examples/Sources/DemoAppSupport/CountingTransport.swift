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
        AttemptLog.current?.record(request, response)
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

/// What the attempts of one logical request met, filled by ``CountingTransport`` while it is the task-local
/// ``current`` (set it around one `executeWithAutoRetry` call). It tells a retry whose fresh token expired before
/// the server saw it (a machine slower than the token lifetime) from a failure of the library. Only hashes of the
/// `Authorization` values are kept, in memory, to compare them.
public final class AttemptLog: Sendable {
    /// The log of the request being sent by this task, if any.
    @TaskLocal public static var current: AttemptLog?

    private struct Attempt {
        let credential: Int?
        let expiredRejection: Bool
    }
    private let attempts = Mutex<[Attempt]>([])

    /// Creates an empty log.
    public init() {}

    func record(_ request: HTTPRequest, _ response: HTTPResponse) {
        let credential = request.headerFields[.authorization].map { $0.hashValue }
        let expired =
            response.status == .unauthorized
            && (response.headerFields[.wwwAuthenticate]?.contains("expired") ?? false)
        attempts.withLock { $0.append(Attempt(credential: credential, expiredRejection: expired)) }
    }

    /// Whether the request was retried with a newer token than its first attempt carried, and the server refused
    /// that token as expired.
    public var retryOutlivedItsToken: Bool {
        attempts.withLock { attempts in
            guard attempts.count >= 2, let first = attempts.first, let last = attempts.last else { return false }
            return last.expiredRejection && last.credential != nil && last.credential != first.credential
        }
    }
}

/// A request whose retry carried a fresh token that expired before the server saw it: the machine is slower than
/// the token's lifetime. The library did its part (one refresh, one retry with the new token).
public struct TokenOutlivedRequest: Error, CustomStringConvertible {
    /// Creates the error.
    public init() {}

    /// What happened.
    public var description: String {
        "the retry's fresh token expired before the server saw it (the machine is slower than the token lifetime)"
    }
}
