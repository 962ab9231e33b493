import AsyncHTTPClient
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import TokenKit
import TokenKitAsyncHTTPClient
import TokenKitLogCheck

/// A loopback HTTP proxy in front of a real server (django-oauth-toolkit, the demo server), for fault tests
/// whose clients are other processes.
///
/// It forwards every request. On the test's command it holds the next refresh (a form `grant_type=refresh_token`
/// or the demo's JSON `/auth/refresh`) until the test releases it: before the server sees it (nothing rotated),
/// or after the server answered (the server rotated; the answer is on the wire). The test waits for the proxy's
/// "held" signal, does its fault (a database restart, a killed connection), and releases. It counts what passed
/// and keeps a timeline of every refresh, to which the test adds its own steps. Every credential and token that
/// crosses it is registered with the log check.
///
/// ```swift
/// let proxy = HoldingProxy(upstream: djangoURL)
/// let url = try await proxy.start()
/// proxy.holdNextRefresh(.response)
/// // ... launch clients against `url` ...
/// let held = await proxy.waitUntilHeld(within: .seconds(30))
/// // ... the fault ...
/// proxy.release()
/// await proxy.stop()
/// ```
final class HoldingProxy: Sendable {
    /// Where a held refresh waits.
    enum Hold: String, Sendable {
        /// Before the server sees it: nothing rotated yet.
        case request = "request held before the server"
        /// After the server answered: it rotated, and its answer waits here.
        case response = "response held after the server answered"
    }

    /// What passed through the proxy.
    struct Counts: Sendable, Equatable {
        /// Every request received.
        var requests = 0
        /// The refresh requests among them.
        var refreshRequests = 0
        /// The server's answers to refreshes, by HTTP status.
        var refreshAnswers: [Int: Int] = [:]
        /// Answers to other requests that were not 2xx, by HTTP status.
        var otherFailures: [Int: Int] = [:]
        /// Requests the server could not be reached for (answered 502 by the proxy).
        var upstreamErrors = 0
        /// Refreshes held so far.
        var held = 0
    }

    /// One step of the timeline.
    struct Event: Sendable {
        let at: Date
        let what: String
    }

    private struct State {
        var counts = Counts()
        var armed: Hold?
        var holding: Hold?
        var gate: CheckedContinuation<Void, Never>?
        var waiters: [CheckedContinuation<Hold?, Never>] = []
        var events: [Event] = []
        var running: (group: ServiceGroup, task: Task<Void, any Error>, client: HTTPClient)?
    }

    private let upstream: URL
    private let state = Mutex(State())

    /// Creates a proxy for `upstream` (such as `http://127.0.0.1:8765`); it listens once started.
    init(upstream: URL) { self.upstream = upstream }

    /// What passed so far.
    var counts: Counts { state.withLock { $0.counts } }

    /// Whether a refresh is held now.
    var isHolding: Bool { state.withLock { $0.holding != nil } }

    /// Starts listening on 127.0.0.1 (a free port).
    ///
    /// - Returns: The proxy's base URL.
    /// - Throws: When it cannot bind.
    func start() async throws -> URL {
        let client = HTTPClient(
            eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        let transport = SecretRegisteringTransport(AsyncHTTPClientTransport(client: client, timeout: .seconds(60)))
        let (ports, continuation) = AsyncStream<Int>.makeStream()
        var logger = Logger(label: "holding-proxy")
        logger.logLevel = .trace
        let app = Application(
            responder: CallbackResponder { (request: Request, _: BasicRequestContext) in
                try await self.forward(request, over: transport)
            },
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in
                continuation.yield(channel.localAddress?.port ?? 0)
                continuation.finish()
            },
            logger: logger)
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [], logger: logger))
        let task = Task {
            defer { continuation.finish() }
            try await group.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next(), port > 0, let url = URL(string: "http://127.0.0.1:\(port)") else {
            _ = await task.result
            try? await client.shutdown()
            throw ProxyError(description: "the holding proxy could not listen on 127.0.0.1")
        }
        state.withLock { $0.running = (group, task, client) }
        return url
    }

    /// Releases what is held, stops listening and closes the upstream client.
    func stop() async {
        release()
        guard
            let running = state.withLock({ state in
                defer { state.running = nil }; return state.running
            })
        else { return }
        await running.group.triggerGracefulShutdown()
        _ = await running.task.result
        try? await running.client.shutdown()
    }

    /// Holds the next refresh that arrives, at `hold`, until ``release()``. One refresh at a time.
    func holdNextRefresh(_ hold: Hold) { state.withLock { $0.armed = hold } }

    /// Waits until a refresh is held (returns at once when one is), at most `limit`.
    ///
    /// - Parameter limit: The longest wait.
    /// - Returns: Where the refresh is held, or `nil` when none was held within `limit`.
    func waitUntilHeld(within limit: Duration) async -> Hold? {
        let timer = Task {
            try? await Task.sleep(for: limit)
            self.wakeWaiters()
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { waiter in
            let holding: Hold?? = state.withLock { state in
                if let holding = state.holding { return .some(holding) }
                state.waiters.append(waiter)
                return .none
            }
            if let holding { waiter.resume(returning: holding) }
        }
    }

    /// Lets the held refresh go on (to the server, or its answer to the client). Does nothing when none is held.
    func release() {
        let gate = state.withLock { state in
            defer { state.gate = nil }
            return state.gate
        }
        gate?.resume()
    }

    /// Adds a step of the test's to the timeline.
    func note(_ what: String) { record(what) }

    /// The timeline, one line per step, in seconds since `origin` (the first step by default).
    func timeline(since origin: Date? = nil) -> [String] {
        let events = state.withLock { $0.events }
        guard let start = origin ?? events.first?.at else { return [] }
        return events.map { event in
            String(format: "%+.3f s: ", event.at.timeIntervalSince(start)) + event.what
        }
    }

    // MARK: - Forwarding

    private func forward(_ request: Request, over transport: some HTTPTransport) async throws -> Response {
        let body = Data(try await request.body.collect(upTo: 1 << 20).readableBytesView)
        let isRefresh = Self.isRefresh(request.head, body: body)
        let number = state.withLock { state in
            state.counts.requests += 1
            if isRefresh { state.counts.refreshRequests += 1 }
            return state.counts.refreshRequests
        }
        if isRefresh { record("refresh \(number) arrived") }
        var hold = isRefresh ? takeArmedHold() : nil
        if hold == .request {
            await holdHere(.request, refresh: number)
            hold = nil
        }

        var outgoing = HTTPRequest(
            method: request.head.method, scheme: upstream.scheme ?? "http",
            authority: upstream.port.map { "\(upstream.host ?? "127.0.0.1"):\($0)" } ?? upstream.host,
            path: request.head.path)
        for field in request.head.headerFields where !Self.hopByHop.contains(field.name) {
            outgoing.headerFields.append(field)
        }
        let sent = body.isEmpty && (request.head.method == .get || request.head.method == .head) ? nil : body
        let response: HTTPResponse
        let data: Data
        do {
            if isRefresh { record("refresh \(number) forwarded to the server") }
            (response, data) = try await transport.send(outgoing, body: sent)
        } catch {
            state.withLock { $0.counts.upstreamErrors += 1 }
            if isRefresh { record("refresh \(number): the server could not be reached") }
            return Response(status: .badGateway)
        }
        let status = response.status.code
        state.withLock { state in
            if isRefresh {
                state.counts.refreshAnswers[status, default: 0] += 1
            } else if response.status.kind != .successful {
                state.counts.otherFailures[status, default: 0] += 1
            }
        }
        if isRefresh { record("refresh \(number) answered \(status) by the server") }
        if hold == .response { await holdHere(.response, refresh: number) }
        if isRefresh { record("refresh \(number): answer \(status) sent to the client") }

        var fields = HTTPFields()
        for field in response.headerFields where !Self.hopByHop.contains(field.name) { fields.append(field) }
        return Response(status: response.status, headers: fields, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// The armed hold, disarmed (one refresh per command).
    private func takeArmedHold() -> Hold? {
        state.withLock { state in
            defer { state.armed = nil }
            return state.armed
        }
    }

    /// Waits here until ``release()``, after telling the test's waiters.
    private func holdHere(_ hold: Hold, refresh number: Int) async {
        await withCheckedContinuation { (gate: CheckedContinuation<Void, Never>) in
            let waiters = state.withLock { state in
                state.counts.held += 1
                state.holding = hold
                state.gate = gate
                defer { state.waiters = [] }
                return state.waiters
            }
            record("refresh \(number): \(hold.rawValue)")
            for waiter in waiters { waiter.resume(returning: hold) }
        }
        state.withLock { $0.holding = nil }
        record("refresh \(number) released")
    }

    private func wakeWaiters() {
        let (waiters, holding) = state.withLock { state in
            defer { state.waiters = [] }
            return (state.waiters, state.holding)
        }
        for waiter in waiters { waiter.resume(returning: holding) }
    }

    private func record(_ what: String) {
        let event = Event(at: Date(), what: what)
        state.withLock { $0.events.append(event) }
    }

    /// Headers that belong to one connection, not to the request or answer the proxy passes on.
    private static let hopByHop: Set<HTTPField.Name> = [
        .connection, .contentLength, .transferEncoding, HTTPField.Name("Keep-Alive")!, .te, .upgrade,
        HTTPField.Name("Proxy-Connection")!,
    ]

    /// A refresh: a form-encoded `grant_type=refresh_token`, or the demo server's JSON refresh endpoint.
    static func isRefresh(_ request: HTTPRequest, body: Data) -> Bool {
        guard request.method == .post else { return false }
        if request.path?.hasSuffix("/auth/refresh") == true { return true }
        guard request.headerFields[.contentType]?.hasPrefix("application/x-www-form-urlencoded") == true else {
            return false
        }
        return String(decoding: body, as: UTF8.self).split(separator: "&").contains("grant_type=refresh_token")
    }
}

/// The proxy could not do what the test asked.
struct ProxyError: Error, CustomStringConvertible {
    let description: String
}
