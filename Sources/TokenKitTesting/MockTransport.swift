public import Foundation
public import HTTPTypes
public import NetworkRetry

/// A scripted ``/NetworkRetry/HTTPTransport`` for tests: it answers from a queue of replies (then from a handler, if any)
/// and records every request it was sent.
///
/// ```swift
/// let transport = MockTransport(script: [
///     .response(status: .unauthorized, headers: [.wwwAuthenticate: #"Bearer error="invalid_token""#]),
///     .response(status: .ok, body: Data("{}".utf8)),
/// ])
/// // ... run the code under test ...
/// #expect(transport.requests.count == 2)
/// #expect(transport.requests[1].bearerToken == "fresh")
/// ```
///
/// Every credential in a request and every token in a response body is registered with the log check of
/// `TokenKitLogCheck`, when a test target uses it, so it knows to look for them.
///
/// Its `description`, and that of each ``RecordedRequest``, print `Authorization`, `Proxy-Authorization`,
/// `Cookie` and `Set-Cookie` values as `<redacted>`. When the script is empty and there is no handler, `send`
/// throws an error that names the request.
public final class MockTransport: HTTPTransport, CustomStringConvertible {
    /// One scripted answer.
    public enum Reply: Sendable {
        /// Answer with this response and body.
        case response(HTTPResponse, Data)
        /// Throw this error.
        case failure(any Error)

        /// A response with a status, optional headers and a body.
        ///
        /// - Parameters:
        ///   - status: The status.
        ///   - headers: Header fields.
        ///   - body: The body; empty by default.
        /// - Returns: The reply.
        public static func response(
            status: HTTPResponse.Status, headers: HTTPFields = [:], body: Data = Data()
        )
            -> Reply
        {
            .response(HTTPResponse(status: status, headerFields: headers), body)
        }
    }

    /// Answers a request when the script is empty.
    typealias Handler = @Sendable (HTTPRequest, Data?) async throws -> (HTTPResponse, Data)

    /// Thrown by ``send(_:body:)`` when the script is used up and there is no handler.
    package struct ScriptExhausted: Error, Sendable, CustomStringConvertible {
        /// The number of the request (1-based) that found the script empty.
        package let requestNumber: Int
        /// `MockTransport.ScriptExhausted(request n)`.
        package var description: String { "MockTransport.ScriptExhausted(request \(requestNumber))" }
    }

    private struct State {
        var script: [Reply]
        var requests: [RecordedRequest] = []
    }

    private let state: Locked<State>
    private let handler: Handler?

    /// Creates a mock.
    ///
    /// - Parameters:
    ///   - script: Replies used in order, one per request.
    ///   - handler: Answers requests once the script is used up (every request, without a script).
    public init(
        script: [Reply] = [],
        handler: (@Sendable (HTTPRequest, Data?) async throws -> (HTTPResponse, Data))? = nil
    ) {
        self.state = Locked(State(script: script))
        self.handler = handler
    }

    /// Appends replies to the script.
    ///
    /// - Parameter replies: Replies to use after those already queued.
    package func enqueue(_ replies: Reply...) {
        state.withLock { $0.script += replies }
    }

    /// Every request sent so far, in order of arrival.
    public var requests: [RecordedRequest] { state.withLock { $0.requests } }

    /// The number of requests sent so far.
    package var requestCount: Int { state.withLock { $0.requests.count } }

    /// The number of scripted replies not used yet.
    package var remainingScriptCount: Int { state.withLock { $0.script.count } }

    /// Records the request, then answers from the script or the handler.
    ///
    /// - Parameters:
    ///   - request: The request.
    ///   - body: Its body.
    /// - Returns: The scripted response.
    /// - Throws: A scripted error, the handler's error, or an error naming the request when there is neither.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let (reply, number) = state.withLock { state -> (Reply?, Int) in
            state.requests.append(RecordedRequest(request, body: body))
            return (state.script.isEmpty ? nil : state.script.removeFirst(), state.requests.count)
        }
        SecretCrossings.report(.request(request, body: body), origin: "MockTransport request")
        let answer: (HTTPResponse, Data)
        switch reply {
        case .response(let response, let data)?: answer = (response, data)
        case .failure(let error)?: throw error
        case nil:
            guard let handler else { throw ScriptExhausted(requestNumber: number) }
            answer = try await handler(request, body)
        }
        SecretCrossings.report(.responseBody(answer.1), origin: "MockTransport response")
        return answer
    }

    /// The request count and each recorded request, with credentials redacted.
    public var description: String {
        let requests = self.requests
        return "MockTransport(\(requests.count) requests\(requests.map { "\n  \($0)" }.joined()))"
    }
}

/// A request as a ``MockTransport`` received it.
public struct RecordedRequest: Sendable, CustomStringConvertible {
    /// The full request head.
    public let request: HTTPRequest
    /// The body, if any.
    public let body: Data?

    /// Records a request.
    ///
    /// - Parameters:
    ///   - request: The request head.
    ///   - body: The body.
    package init(_ request: HTTPRequest, body: Data?) {
        self.request = request
        self.body = body
    }

    /// The method.
    package var method: HTTPRequest.Method { request.method }
    /// The scheme, such as `https`.
    package var scheme: String? { request.scheme }
    /// The authority, such as `api.example.com:8443`.
    package var authority: String? { request.authority }
    /// The path with its query.
    package var path: String? { request.path }
    /// The header fields (with their real values: do not print them; use `description`).
    package var headerFields: HTTPFields { request.headerFields }

    /// The token after `Bearer ` in `Authorization`, or `nil`. For assertions; never print it.
    public var bearerToken: String? {
        guard let value = request.headerFields[.authorization], value.hasPrefix("Bearer ") else { return nil }
        return String(value.dropFirst("Bearer ".count))
    }

    /// Method, URL and headers, with `Authorization`, `Proxy-Authorization`, `Cookie`, `Set-Cookie` and API-key
    /// values (``/NetworkRetry/AuthenticatedClient/Configuration/defaultSecretHeaderFields``) replaced by `<redacted>`, and
    /// the body's size.
    public var description: String {
        let url = "\(request.scheme ?? "")://\(request.authority ?? "")\(request.path ?? "")"
        let headers = request.headerFields.map { field in
            Self.redactedNames.contains(field.name) ? "\(field.name): <redacted>" : "\(field.name): \(field.value)"
        }
        let bodyText = body.map { "\($0.count) bytes" } ?? "no body"
        return "\(request.method.rawValue) \(url) [\(headers.joined(separator: ", "))] \(bodyText)"
    }

    private static let redactedNames: Set<HTTPField.Name> = Set([
        .authorization, .proxyAuthorization, .cookie, .setCookie,
    ]).union(AuthenticatedClient.Configuration.defaultSecretHeaderFields)
}
