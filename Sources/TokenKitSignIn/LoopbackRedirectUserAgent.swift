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
/// must be registered for a loopback redirect with any port. It takes only the redirect that carries the `state` of
/// a sign-in waiting on it: a request to the redirect path with another `state`, or none (a local process or a web
/// page probing local ports), gets an error page and the wait goes on, until the real redirect or the timeout. It
/// answers the redirect with a short page that tells the user to go back to the app, and any other path with 404.
/// It closes when the agent is released.
public final class LoopbackRedirectUserAgent: AuthorizationUserAgent, @unchecked Sendable {
    // `@unchecked Sendable`: `listener` is set once in `init`; `waits` is only touched under its lock.
    /// `http://127.0.0.1:<port><path>`: pass it as the flow's redirect URI.
    public let redirectURI: URL
    private let listener: Int32
    private let path: String
    private let openURL: @Sendable (URL) async throws -> Void
    private let timeout: Duration
    private let sleep: @Sendable (Duration) async throws -> Void
    /// The open waits by the `state` they expect; `""` for a wait that takes any `state` (a URL without one).
    private let waits = LockedValue<[String: Waiter]>([:])

    /// Opens the listener.
    ///
    /// - Parameters:
    ///   - path: The redirect path; `/callback` by default.
    ///   - timeout: How long a wait for the redirect lasts; 10 minutes by default.
    ///   - clock: The clock the timeout runs on.
    ///   - open: Shows the URL to the user: opens the system browser, or prints it.
    /// - Throws: A `POSIXError` when no loopback socket can be had.
    public init(
        path: String = "/callback", timeout: Duration = .seconds(600), clock: any Clock<Duration> = ContinuousClock(),
        open: @escaping @Sendable (URL) async throws -> Void
    ) throws {
        let (fd, port) = try LoopbackSocket.listening(backlog: 16)
        let path = path.hasPrefix("/") ? path : "/" + path
        guard let url = URL(string: "http://127.0.0.1:\(port)\(path)") else {
            close(fd)
            throw POSIXError(.EINVAL)
        }
        listener = fd
        self.path = path
        openURL = open
        self.timeout = timeout
        sleep = Self.sleeper(clock)
        redirectURI = url
    }

    private static func sleeper(_ clock: some Clock<Duration>) -> @Sendable (Duration) async throws -> Void {
        { try await clock.sleep(for: $0) }
    }

    deinit { close(listener) }

    /// Opens `url` with the closure given at creation, and waits for the browser to come back to the listener with
    /// the `state` the URL carries (any `state` when it carries none, as after a pushed authorization request: prefer
    /// ``authorize(_:)`` then).
    ///
    /// - Parameters:
    ///   - url: The authorization or end-session URL.
    ///   - redirectURI: Unused: the listener answers at ``redirectURI``.
    /// - Returns: The redirect, as `http://127.0.0.1:<port><path>?<query>`.
    /// - Throws: ``SignInError/cancelled`` when the task is cancelled; ``SignInError/timedOut`` when no redirect came
    ///   within the timeout; what `open` throws.
    public func authorize(_ url: URL, redirectURI: URL) async throws -> URL {
        let state = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?
            .first { $0.name == "state" }?.value
        return try await wait(opening: url, state: state ?? "")
    }

    /// Opens the request's URL with the closure given at creation, and waits for the browser to come back to the
    /// listener with the request's `state`.
    ///
    /// - Parameter request: The started sign-in.
    /// - Returns: The redirect, as `http://127.0.0.1:<port><path>?<query>`.
    /// - Throws: ``SignInError/cancelled`` when the task is cancelled; ``SignInError/timedOut`` when no redirect came
    ///   within the timeout; what `open` throws.
    public func authorize(_ request: AuthorizationRequest) async throws -> URL {
        try await wait(opening: request.url, state: request.state)
    }

    /// Opens `url` with the closure given at creation and returns: nothing comes back to the listener.
    ///
    /// - Parameter url: The URL to show, such as an end-session URL without a post-logout redirect.
    /// - Throws: What `open` throws.
    public func open(_ url: URL) async throws {
        try await openURL(url)
    }

    private func wait(opening url: URL, state: String) async throws -> URL {
        // Listen before the browser opens: a fast browser may come back before `open` returns.
        let waiter = Waiter()
        let registered = waits.withLock { waits in
            guard waits[state] == nil else { return false }
            waits[state] = waiter
            return true
        }
        // Two waits for one `state` cannot be told apart.
        guard registered else { throw SignInError.stateMismatch }
        defer { waits.withLock { $0[state] = nil } }
        let thread = Thread { [self] in
            self.acceptRedirects(until: { waiter.isCancelled })
        }
        thread.start()
        let timer = Task { [sleep, timeout] in
            try await sleep(timeout)
            waiter.resume(with: .failure(SignInError.timedOut))
        }
        defer {
            timer.cancel()
            waiter.cancel()
        }
        try await openURL(url)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<URL, any Error>) in
                waiter.install(continuation)
            }
        } onCancel: {
            waiter.resume(with: .failure(SignInError.cancelled))
        }
    }

    /// Accepts connections until `cancelled`, and hands each redirect to the wait its `state` belongs to; polls so
    /// that a cancellation is seen.
    private func acceptRedirects(until cancelled: () -> Bool) {
        while !cancelled() {
            var descriptor = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 200)
            if ready < 0 && errno != EINTR { return }
            guard ready > 0 else { continue }
            let client = accept(listener, nil, nil)
            guard client >= 0 else { continue }
            defer { close(client) }
            guard let target = Self.readTarget(client) else { continue }
            let requestPath = String(target.prefix { $0 != "?" })
            guard requestPath == path, let url = URL(string: redirectURI.absoluteString + target.dropFirst(path.count))
            else {
                Self.respond(client, status: "404 Not Found", body: "Not found")
                continue
            }
            let state = URLComponents(url: url, resolvingAgainstBaseURL: false)?.queryItems?
                .first { $0.name == "state" }?.value
            let waiter = waits.withLock { waits in
                state.flatMap { waits[$0] } ?? waits[""]
            }
            guard let waiter, waiter.resume(with: .success(url)) else {
                Self.respond(client, status: "400 Bad Request", body: Self.unknownPage)
                continue
            }
            Self.respond(client, status: "200 OK", body: Self.donePage)
        }
    }

    private static let unknownPage =
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Not signed in</title></head>"
        + "<body><p>This page does not belong to a sign-in in progress.</p></body></html>"

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

/// One wait for a redirect: its first result, kept until the continuation is there, and whether it ended.
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

    /// Ends the wait with `result`, unless it has already ended; returns whether this call ended it.
    @discardableResult
    func resume(with result: Result<URL, any Error>) -> Bool {
        let (taken, continuation): (Bool, CheckedContinuation<URL, any Error>?) = state.withLock { state in
            guard state.result == nil, !state.cancelled else { return (false, nil) }
            state.result = result
            let continuation = state.continuation
            state.continuation = nil
            return (true, continuation)
        }
        continuation?.resume(with: result)
        return taken
    }

    /// Stops the listener thread; a wait that has not ended ends as cancelled.
    func cancel() {
        resume(with: .failure(SignInError.cancelled))
        state.withLock { $0.cancelled = true }
    }
}
