public import DemoAuthServer
public import Foundation
import HTTPTypes
import HTTPTypesFoundation
public import Logging
import TokenKit

/// The auth server a demo talks to: the demo server started in this process (the default), or the one at
/// `--server`. Both are driven over HTTP (`/debug/stats`, `/debug/faults`, `/debug/revoke-sessions`), so a
/// demo runs the same against either.
public final class DemoBackend: Sendable {
    /// The server's base URL.
    public let baseURL: URL
    /// The in-process server, or `nil` when the demo uses an external one.
    public let server: DemoAuthServer?
    /// Seconds a request waits for an answer.
    public let timeout: Int
    private let transport: URLSessionTransport

    private init(baseURL: URL, server: DemoAuthServer?, timeout: Int) {
        self.baseURL = baseURL
        self.server = server
        self.timeout = timeout
        self.transport = DemoTransport.urlSession(timeout: timeout)
    }

    /// Starts the demo server in this process on a free loopback port, or checks that `external` answers.
    ///
    /// - Parameters:
    ///   - external: The `--server` URL, or `nil` to start one in-process.
    ///   - configuration: The in-process server's configuration.
    ///   - logger: The in-process server's logger; `nil` (the default) logs errors only, as the demo prints its
    ///     own lines. Tests pass one at trace level.
    ///   - timeout: Seconds a request waits for an answer.
    ///   - report: Where a `waiting` line goes while an external server takes more than a moment to answer.
    /// - Returns: The backend.
    /// - Throws: ``DemoFailure`` when the server cannot be started or reached, or answers but is not the demo
    ///   auth server.
    public static func start(
        external: String?, configuration: DemoAuthServer.Configuration, logger: Logger? = nil,
        timeout: Int = DemoTransport.defaultTimeout, report: DemoReport? = nil
    ) async throws -> DemoBackend {
        guard let external else {
            let server = DemoAuthServer(configuration: configuration, logger: logger ?? quietLogger)
            let url = try await server.start()
            return DemoBackend(baseURL: url, server: server, timeout: timeout)
        }
        guard let url = URL(string: external), url.scheme == "http" || url.scheme == "https", url.host != nil else {
            throw DemoFailure("--server \(external) is not an http(s) URL")
        }
        let backend = DemoBackend(baseURL: url, server: nil, timeout: timeout)
        do {
            if let report {
                _ = try await report.waiting(for: "the auth server at \(external)", timeout: timeout) {
                    try await backend.stats()
                }
            } else {
                _ = try await backend.stats()
            }
        } catch let error as NotAnAuthServer {
            throw DemoFailure("reached \(external), but it is not a TokenKit demo auth server: \(error.detail)")
        } catch {
            throw DemoFailure("cannot reach the auth server at \(external): \(DemoFailure.describe(error))")
        }
        return backend
    }

    /// The in-process server's logger in a demo: errors only, as the demo prints its own lines.
    private static var quietLogger: Logger {
        var logger = Logger(label: "demo-auth-server")
        logger.logLevel = .error
        return logger
    }

    /// `in-process at <url>` or `external at <url>`.
    public var summary: String {
        (server == nil ? "external server at " : "in-process demo server at ") + baseURL.absoluteString
    }

    /// The server's counters (`/debug/stats`): `logins`, `refreshes`, `reuse_detections`, ...
    ///
    /// - Returns: The counters by their snake_case names.
    /// - Throws: ``NotAnAuthServer`` when the answer is not the counters.
    public func stats() async throws -> [String: Int] {
        let data = try await call(.get, "debug/stats")
        guard let stats = try? JSONDecoder().decode([String: Int].self, from: data) else {
            throw NotAnAuthServer(detail: "GET /debug/stats did not answer the demo server's counters")
        }
        return stats
    }

    /// The access tokens the server issued (`/debug/issued`), oldest first, without their text.
    ///
    /// - Returns: The server's issue log.
    /// - Throws: ``NotAnAuthServer`` when the answer is not the log.
    public func issueLog() async throws -> [DemoAuthServer.IssueRecord] {
        let data = try await call(.get, "debug/issued")
        guard let log = try? JSONDecoder().decode([DemoAuthServer.IssueRecord].self, from: data) else {
            throw NotAnAuthServer(detail: "GET /debug/issued did not answer the demo server's issue log")
        }
        return log
    }

    /// Replaces the server's fault plan (`POST /debug/faults`), for example `{"html_everywhere": true}`.
    ///
    /// - Parameter json: The plan, as the README's fault table describes.
    /// - Throws: ``DemoFailure`` when the server refuses it.
    public func setFaults(_ json: String) async throws {
        _ = try await call(.post, "debug/faults", body: Data(json.utf8))
    }

    /// Revokes every session on the server, as an administrator would (`POST /debug/revoke-sessions`).
    ///
    /// - Throws: ``DemoFailure`` when the server refuses it.
    public func revokeAllSessions() async throws {
        _ = try await call(.post, "debug/revoke-sessions", body: Data("{}".utf8))
    }

    /// Stops the in-process server (the port stays known, so ``restart()`` binds it again).
    public func stop() async {
        await server?.stop()
    }

    /// Starts the in-process server again on the same port; its sessions are kept.
    ///
    /// - Throws: What ``DemoAuthServer/start(onPort:)`` throws.
    public func restart() async throws {
        try await server?.start(onPort: baseURL.port)
    }

    private func call(_ method: HTTPRequest.Method, _ path: String, body: Data? = nil) async throws -> Data {
        var request = HTTPRequest(method: method, url: baseURL.appending(path: path))
        if body != nil { request.headerFields[.contentType] = "application/json" }
        let (response, data) = try await transport.send(request, body: body)
        guard response.status.kind == .successful else {
            let type = response.headerFields[.contentType].map { ", \($0)" } ?? ""
            throw NotAnAuthServer(detail: "\(method) /\(path) answered HTTP \(response.status.code)\(type)")
        }
        return data
    }
}

/// A server answered, but not as the demo auth server does: the URL points at something else.
public struct NotAnAuthServer: Error, CustomStringConvertible {
    /// What it answered.
    public let detail: String

    /// `reached, but not the demo auth server: <detail>`.
    public var description: String { "the server answered, but not as the demo auth server: \(detail)" }
}

extension DemoBackend {
    /// Runs one demo from start to end: starts the backend (in-process, or `external`), runs `demo`, turns
    /// any error into one `FAIL` line of `report`, clears a fault the demo set on an external server, and
    /// stops the backend. The caller exits non-zero when `report.failed`.
    ///
    /// - Parameters:
    ///   - external: The `--server` URL, or `nil` to start the demo server in this process.
    ///   - tokenLifetime: The access-token lifetime in seconds for the in-process server.
    ///   - timeout: Seconds a request waits for an answer.
    ///   - resetsFaults: Whether the demo set a fault that must be cleared afterwards.
    ///   - report: Where steps and failures go.
    ///   - demo: The demo's steps.
    public static func run(
        external: String?, tokenLifetime: Int, timeout: Int = DemoTransport.defaultTimeout, resetsFaults: Bool,
        report: DemoReport, _ demo: (DemoBackend) async throws -> Void
    ) async {
        do {
            let backend = try await start(
                external: external, configuration: .init(accessTokenLifetime: .seconds(tokenLifetime)),
                timeout: timeout, report: report)
            do {
                try await demo(backend)
            } catch {
                report.fatal(error)
            }
            if resetsFaults { try? await backend.setFaults("{}") }  // leave an external server as it was
            await backend.stop()
        } catch {
            report.fatal(error)
        }
    }
}
