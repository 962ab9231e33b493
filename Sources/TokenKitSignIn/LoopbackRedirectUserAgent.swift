import AuthToken
public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A user agent for command-line tools, Linux apps and tests: the redirect comes back to a listener on
/// `http://127.0.0.1:<port>` (RFC 8252 sections 7.3 and 8.3), and the system browser (or any closure) shows the page.
///
/// ```swift
/// let agent = try LoopbackRedirectUserAgent { url in print("Open \(url) to sign in.") }
/// let flow = AuthorizationCodeFlow(
///     server: server, client: OAuthClient(id: "cli"), configuration: .init(redirectURI: agent.redirectURI),
///     tokens: tokens, transport: transport)
/// try await flow.signIn(using: agent)
/// ```
///
/// The listener binds the loopback address only (never every interface), on a port the system picks, so the client
/// must be registered for a loopback redirect with any port. It answers the redirect with a short page that tells
/// the user to go back to the app, and any other request with 404. It closes when the agent is released.
public final class LoopbackRedirectUserAgent: AuthorizationUserAgent, @unchecked Sendable {
    // `@unchecked Sendable`: `listener` is set once in `init`; `closed` is only touched under `state`'s lock.
    /// `http://127.0.0.1:<port><path>`: pass it as the flow's redirect URI.
    public let redirectURI: URL
    private let listener: Int32
    private let path: String
    private let open: @Sendable (URL) async throws -> Void
    private let state = LockedValue(false)

    /// Opens the listener.
    ///
    /// - Parameters:
    ///   - path: The redirect path; `/callback` by default.
    ///   - open: Shows the URL to the user: opens the system browser, or prints it.
    /// - Throws: A `POSIXError` when no loopback socket can be had.
    public init(path: String = "/callback", open: @escaping @Sendable (URL) async throws -> Void) throws {
        let (fd, port) = try LoopbackSocket.listening(backlog: 16)
        let path = path.hasPrefix("/") ? path : "/" + path
        guard let url = URL(string: "http://127.0.0.1:\(port)\(path)") else {
            close(fd)
            throw POSIXError(.EINVAL)
        }
        listener = fd
        self.path = path
        self.open = open
        redirectURI = url
    }

    deinit { close(listener) }

    /// Opens `url` with the closure given at creation, and waits for the browser to come back to the listener.
    ///
    /// - Parameters:
    ///   - url: The authorization or end-session URL.
    ///   - redirectURI: Unused: the listener answers at ``redirectURI``.
    /// - Returns: The redirect, as `http://127.0.0.1:<port><path>?<query>`.
    /// - Throws: ``SignInError/cancelled`` when the task is cancelled; what `open` throws.
    public func authorize(_ url: URL, redirectURI: URL) async throws -> URL {
        // Listen before the browser opens: a fast browser may come back before `open` returns.
        let waiter = Waiter()
        let thread = Thread { [self] in
            waiter.resume(with: self.waitForRedirect(until: { waiter.isCancelled }))
        }
        thread.start()
        do {
            try await open(url)
        } catch {
            waiter.cancel()
            throw error
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<URL, any Error>) in
                waiter.install(continuation)
            }
        } onCancel: {
            waiter.cancel()
        }
    }

    /// Accepts connections until one asks for the redirect path; polls so that a cancellation is seen.
    private func waitForRedirect(until cancelled: () -> Bool) -> Result<URL, any Error> {
        while !cancelled() {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 200)
            if ready < 0 && errno != EINTR { return .failure(SignInError.cancelled) }
            guard ready > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            defer { close(client) }
            guard let target = Self.readTarget(client) else { continue }
            let requestPath = String(target.prefix { $0 != "?" })
            if requestPath == path, let url = URL(string: redirectURI.absoluteString + target.dropFirst(path.count)) {
                Self.respond(client, status: "200 OK", body: Self.donePage)
                return .success(url)
            }
            Self.respond(client, status: "404 Not Found", body: "Not found")
        }
        return .failure(SignInError.cancelled)
    }

    private static let donePage =
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Signed in</title></head>"
        + "<body><p>You can close this window and return to the app.</p></body></html>"

    /// The request target of a `GET`, read from a head of at most 16 KiB; `nil` for anything else.
    private static func readTarget(_ client: Int32) -> String? {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 2048)
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while buffer.count < 16 * 1024 {
            var descriptor = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 5000) > 0 else { return nil }
            let count = read(client, &chunk, chunk.count)
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
            if buffer.count >= 4, (0...(buffer.count - 4)).contains(where: { buffer[$0..<($0 + 4)].elementsEqual(end) })
            {
                break
            }
        }
        let head = String(decoding: buffer, as: UTF8.self)
        guard let line = head.split(separator: "\r\n", maxSplits: 1).first else { return nil }
        let parts = line.split(separator: " ")
        guard parts.count == 3, parts[0] == "GET", parts[1].hasPrefix("/") else { return nil }
        return String(parts[1])
    }

    private static func respond(_ client: Int32, status: String, body: String) {
        let bytes = Array(
            ("HTTP/1.1 \(status)\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Cache-Control: no-store\r\nConnection: close\r\n\r\n" + body).utf8)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            written += count
        }
    }
}

/// One wait for a redirect: its result, kept until the continuation is there, and whether it was cancelled.
private final class Waiter: Sendable {
    private struct State {
        var continuation: CheckedContinuation<URL, any Error>?
        var cancelled = false
        var result: Result<URL, any Error>?
    }
    private let state = LockedValue(State())

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func install(_ continuation: CheckedContinuation<URL, any Error>) {
        let ready: Result<URL, any Error>? = state.withLock { state in
            if let result = state.result { return result }
            state.continuation = continuation
            return nil
        }
        if let ready { continuation.resume(with: ready) }
    }

    func resume(with result: Result<URL, any Error>) {
        let continuation: CheckedContinuation<URL, any Error>? = state.withLock { state in
            guard let continuation = state.continuation else {
                state.result = result
                return nil
            }
            state.continuation = nil
            return continuation
        }
        continuation?.resume(with: result)
    }

    func cancel() { state.withLock { $0.cancelled = true } }
}
