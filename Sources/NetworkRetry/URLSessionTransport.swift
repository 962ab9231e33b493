public import Foundation
public import HTTPTypes

#if canImport(FoundationNetworking)
    public import FoundationNetworking
#endif

/// An ``HTTPTransport`` over `URLSession` (FoundationNetworking on Linux).
///
/// It owns its session, whose delegate refuses every redirect, so a 3xx comes back as it is and
/// ``AuthenticatedClient`` decides whether to follow it and whether `Authorization` goes along. This is
/// enforced on Linux too: tasks are driven by the session delegate (FoundationNetworking follows redirects of
/// completion-handler tasks without asking any delegate).
///
/// Errors are mapped: a timeout to ``NetworkRetryError/timedOut``, refused or unreachable hosts to
/// ``NetworkRetryError/cannotConnect``, a cancelled task to `CancellationError`, anything else to
/// ``NetworkRetryError/transport``; the `URLError` is kept in ``NetworkRetryError/underlying``, and
/// ``NetworkRetryError/reason`` tells a host name that does not resolve, a refused connection and a failed TLS
/// handshake apart.
///
/// `URLSession` may add headers of its own (`User-Agent`, `Accept-Encoding`) and joins repeated response
/// headers with commas, which list fields such as `WWW-Authenticate` allow. `Set-Cookie` is not such a list
/// (an `Expires` date has a comma of its own), so joined `Set-Cookie` lines are split back into one field per
/// cookie: a server that sets two cookies in one answer (Django's login: `csrftoken` and `sessionid`) keeps both.
///
/// A response body is read into memory up to ``maximumResponseBytes``: a longer `Content-Length`, or a body that
/// grows past it, cancels the task and throws ``NetworkRetryError/responseTooLarge``.
public final class URLSessionTransport: HTTPTransport {
    private let session: URLSession
    private let delegate: SessionDelegate
    /// The largest response body read into memory, in bytes.
    public let maximumResponseBytes: Int

    /// Creates a transport with its own session.
    ///
    /// Cookies are turned off whatever the configuration says: no cookie jar stores a `Set-Cookie`, and none
    /// adds a `Cookie`. A session cookie is a credential that TokenKit keeps and presents itself
    /// (``CredentialPresentation/cookie(named:)``), only to configured origins.
    ///
    /// - Parameters:
    ///   - configuration: The session configuration; defaults to `.ephemeral` (no disk cache).
    ///   - maximumResponseBytes: The largest response body to read; 16 MiB by default. A longer one is
    ///     ``NetworkRetryError/responseTooLarge``.
    public init(configuration: URLSessionConfiguration = .ephemeral, maximumResponseBytes: Int = 16 * 1024 * 1024) {
        // A copy: the caller's configuration object is left as it was.
        let copy = (configuration.copy() as? URLSessionConfiguration) ?? configuration
        copy.httpCookieStorage = nil
        copy.httpShouldSetCookies = false
        copy.httpCookieAcceptPolicy = .never
        self.maximumResponseBytes = max(0, maximumResponseBytes)
        let delegate = SessionDelegate(maximumResponseBytes: self.maximumResponseBytes)
        self.delegate = delegate
        self.session = URLSession(configuration: copy, delegate: delegate, delegateQueue: nil)
    }

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// Sends `request` and returns the response without following redirects.
    ///
    /// - Parameters:
    ///   - request: The request, with an absolute `http` or `https` URL.
    ///   - body: The request body, if any.
    /// - Returns: The response head and its body.
    /// - Throws: ``NetworkRetryError`` (see the type's discussion) or `CancellationError`.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let urlRequest = try Self.urlRequest(request, body: body)
        let task = session.dataTask(with: urlRequest)
        let (response, data): (URLResponse, Data) = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                delegate.register(task, continuation: continuation)
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
        return (try Self.httpResponse(response), data)
    }

    /// A `URLRequest` for a head and body (also FitIQCore's conversion for an app's own network client).
    package static func urlRequest(_ request: HTTPRequest, body: Data?) throws -> URLRequest {
        // Built with URLComponents and checked against the request's origin, never pasted together as text: a path
        // such as "@evil.example/x" would otherwise become the user info of a URL to another host.
        guard let origin = HTTPOrigin(request),
            let url = origin.requestURL(target: request.path ?? "/", method: request.method.rawValue)
        else { throw NetworkRetryError.invalidRequest }
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method.rawValue
        for field in request.headerFields where field.name != .cookie {
            urlRequest.addValue(field.value, forHTTPHeaderField: field.name.rawName)
        }
        // Cookie crumbs join with "; " (RFC 6265 section 5.4), not with the ", " of other repeated fields.
        if let cookies = request.headerFields[.cookie] { urlRequest.setValue(cookies, forHTTPHeaderField: "Cookie") }
        urlRequest.httpBody = body
        return urlRequest
    }

    static func httpResponse(_ response: URLResponse) throws -> HTTPResponse {
        guard let response = response as? HTTPURLResponse, (100...999).contains(response.statusCode) else {
            throw NetworkRetryError.invalidResponse
        }
        return httpResponse(converting: response)
    }

    /// The response head of an `HTTPURLResponse`: its status and every header field with a valid name.
    package static func httpResponse(converting response: HTTPURLResponse) -> HTTPResponse {
        var fields = HTTPFields()
        for (key, value) in response.allHeaderFields {
            guard let key = key as? String, let value = value as? String, let name = HTTPField.Name(key) else {
                continue
            }
            if name == .setCookie {
                for cookie in splitJoinedSetCookie(value) { fields.append(HTTPField(name: name, value: cookie)) }
            } else {
                fields.append(HTTPField(name: name, value: value))
            }
        }
        return HTTPResponse(status: .init(code: response.statusCode), headerFields: fields)
    }

    /// Splits a `Set-Cookie` value that Foundation joined from several lines (with ", ") into one value per line.
    ///
    /// A comma starts a new cookie only when the text after it, up to the next `;` or `,`, is `name=...` with a
    /// name free of whitespace and quotes; the comma in `Expires=Tue, 23 Nov 2027 07:21:15 GMT` does not. A cookie
    /// value that itself holds `,x=y` (outside RFC 6265's cookie-octets) would be split there.
    ///
    /// - Parameter value: The joined value.
    /// - Returns: The original values, trimmed, without empty ones.
    package static func splitJoinedSetCookie(_ value: String) -> [String] {
        var parts: [String] = []
        var start = value.startIndex
        var index = value.startIndex
        while index < value.endIndex {
            let next = value.index(after: index)
            if value[index] == ",", startsCookie(value[next...]) {
                parts.append(value[start..<index].trimmingCharacters(in: .whitespaces))
                start = next
            }
            index = next
        }
        parts.append(value[start...].trimmingCharacters(in: .whitespaces))
        return parts.filter { !$0.isEmpty }
    }

    private static func startsCookie(_ rest: Substring) -> Bool {
        let segment = rest.drop { $0 == " " || $0 == "\t" }.prefix { $0 != ";" && $0 != "," }
        guard let equals = segment.firstIndex(of: "=") else { return false }
        let name = segment[..<equals]
        return !name.isEmpty && !name.contains { $0 == " " || $0 == "\t" || $0 == "\"" }
    }

    static func mapped(_ error: any Error) -> any Error {
        guard let urlError = error as? URLError else { return NetworkRetryError.transport(error) }
        switch urlError.code {
        case .cancelled:
            return CancellationError()
        case .timedOut:
            return NetworkRetryError.timedOut.with(underlying: urlError)
        case .cannotConnectToHost, .cannotFindHost, .notConnectedToInternet, .networkConnectionLost,
            .dnsLookupFailed:
            return NetworkRetryError.cannotConnect.with(underlying: urlError)
        default:
            return NetworkRetryError.transport(urlError)
        }
    }
}

/// Collects each task's response and body and resumes its continuation when the task completes; refuses
/// redirects. `@unchecked Sendable`: `pending` is only touched while holding `lock`.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private struct Pending {
        var continuation: CheckedContinuation<(URLResponse, Data), any Error>
        var response: URLResponse?
        var rejectedChallengeResponse: URLResponse?
        var data = Data()
        var tooLarge = false
    }
    private let lock = NSLock()
    private var pending: [Int: Pending] = [:]
    private let maximumResponseBytes: Int

    init(maximumResponseBytes: Int) {
        self.maximumResponseBytes = maximumResponseBytes
    }

    func register(_ task: URLSessionTask, continuation: CheckedContinuation<(URLResponse, Data), any Error>) {
        lock.lock()
        pending[task.taskIdentifier] = Pending(continuation: continuation)
        lock.unlock()
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        completionHandler(nil)
    }

    /// HTTP authentication (a `Basic` or `Digest` challenge on a 401) is not URLSession's business here: the
    /// 401 goes back to the caller. FoundationNetworking on Linux never completes such a task with the default
    /// handling, and cancels it when the protection space is rejected; so the 401 is kept here and delivered
    /// when the task ends cancelled (without its body). TLS server trust keeps the default handling.
    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        let httpAuthentication: Set<String> = [
            NSURLAuthenticationMethodDefault, NSURLAuthenticationMethodHTTPBasic, NSURLAuthenticationMethodHTTPDigest,
            NSURLAuthenticationMethodNTLM, NSURLAuthenticationMethodNegotiate,
        ]
        if httpAuthentication.contains(challenge.protectionSpace.authenticationMethod) {
            lock.lock()
            pending[task.taskIdentifier]?.rejectedChallengeResponse = challenge.failureResponse
            lock.unlock()
            completionHandler(.rejectProtectionSpace, nil)
        } else {
            completionHandler(.performDefaultHandling, nil)
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        // A declared length past the bound is refused before any of the body is read.
        let tooLarge = response.expectedContentLength > Int64(maximumResponseBytes)
        lock.lock()
        pending[dataTask.taskIdentifier]?.response = response
        if tooLarge { pending[dataTask.taskIdentifier]?.tooLarge = true }
        lock.unlock()
        completionHandler(tooLarge ? .cancel : .allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let id = dataTask.taskIdentifier
        lock.lock()
        // Read without copying the entry, so the append below does not copy the buffer.
        let received = pending[id]?.tooLarge == false ? pending[id]?.data.count : nil
        let tooLarge = received.map { $0 + data.count > maximumResponseBytes } ?? false
        if tooLarge {
            // Stop reading: what came so far is dropped, and the task ends cancelled.
            pending[id]?.tooLarge = true
            pending[id]?.data = Data()
        } else if received != nil {
            pending[id]?.data.append(data)
        }
        lock.unlock()
        if tooLarge { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.lock()
        let entry = pending.removeValue(forKey: task.taskIdentifier)
        lock.unlock()
        guard let entry else { return }
        if entry.tooLarge {
            entry.continuation.resume(throwing: NetworkRetryError.responseTooLarge)
        } else if let error, let response = entry.rejectedChallengeResponse, (error as? URLError)?.code == .cancelled {
            entry.continuation.resume(returning: (response, entry.data))
        } else if let error {
            entry.continuation.resume(throwing: URLSessionTransport.mapped(error))
        } else if let response = entry.response ?? task.response {
            entry.continuation.resume(returning: (response, entry.data))
        } else {
            entry.continuation.resume(throwing: NetworkRetryError.invalidResponse)
        }
    }
}
