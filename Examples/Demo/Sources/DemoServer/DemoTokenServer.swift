public import Foundation
import TokenKit
import TokenKitTesting

/// The demo's server, in the demo's process: TokenKitTesting's ``SimulatedTokenServer`` (OAuth 2.0 token endpoint,
/// password and refresh grants, rotating refresh tokens with reuse detection) behind a ``LoopbackHTTPServer``, and a
/// protected API beside it that answers a Bearer token until its `exp` and 401 after.
///
/// The user `demo@example.com` with the password `password123` and the public client `demo-app` exist.
public final class DemoTokenServer: Sendable {
    /// What the server has done since it started.
    public struct Stats: Sendable, Equatable {
        /// Password sign-ins that issued a session.
        public var signIns = 0
        /// Refreshes that issued tokens.
        public var refreshes = 0
        /// Requests to the protected API.
        public var apiRequests = 0
        /// Requests to the protected API answered 401.
        public var unauthorized = 0
    }

    /// `http://127.0.0.1:<port>`.
    public let baseURL: URL
    /// The token endpoint.
    public var tokenURL: URL { baseURL.appending(path: "oauth/token") }
    private let tokens: SimulatedTokenServer
    private let http: LoopbackHTTPServer
    private let state: Counters

    /// Starts the server on a free loopback port.
    ///
    /// - Parameters:
    ///   - accessTokenLifetime: Seconds an access token lives (`exp - iat`, `expires_in`).
    ///   - port: The loopback port; 0 (the default) lets the system pick a free one.
    /// - Throws: A `POSIXError` when no loopback socket can be had on that port.
    public init(accessTokenLifetime: Int, port: Int = 0) throws {
        let tokens = SimulatedTokenServer(
            configuration: .init(
                clientID: "demo-app", accessTokenLifetime: TimeInterval(accessTokenLifetime),
                users: ["demo@example.com": "password123"]),
            now: { Date() })
        let state = Counters()
        let http = try LoopbackHTTPServer(port: port) { request in
            await Self.route(request, tokens: tokens, state: state)
        }
        self.tokens = tokens
        self.state = state
        self.http = http
        baseURL = URL(string: "http://127.0.0.1:\(http.port)")!
    }

    /// The counters.
    ///
    /// - Returns: What the server has done so far.
    public func stats() async -> Stats {
        var stats = state.snapshot
        stats.refreshes = await tokens.refreshCount
        return stats
    }

    /// When the newest access token the server issued expires (its `exp`), if it issued any.
    public var latestExpiry: Date? { state.latestExpiry }

    /// Stops accepting connections.
    public func stop() { http.stop() }

    private static func route(
        _ request: LoopbackHTTPServer.Request, tokens: SimulatedTokenServer, state: Counters
    ) async -> LoopbackHTTPServer.Response {
        let path = String(request.path.split(separator: "?", maxSplits: 1).first ?? "")
        if path == "/oauth/token" { return await token(request, tokens: tokens, state: state) }
        guard path.hasPrefix("/api/") else { return .init(status: 404) }
        guard request.method == "GET" else { return .init(status: 405) }
        state.apiRequest()
        guard let authorization = request.header("authorization"), authorization.hasPrefix("Bearer "),
            let expiry = Self.expiry(ofJWT: String(authorization.dropFirst(7)))
        else {
            state.unauthorized()
            return .init(status: 401, headers: [("WWW-Authenticate", #"Bearer realm="demo""#)])
        }
        guard expiry > Date() else {
            state.unauthorized()
            let challenge = #"Bearer realm="demo", error="invalid_token", error_description="expired""#
            return .init(status: 401, headers: [("WWW-Authenticate", challenge)])
        }
        let body = Data(#"{"path":"\#(path)"}"#.utf8)
        return .init(status: 200, headers: [("Content-Type", "application/json")], body: body)
    }

    private static func token(
        _ request: LoopbackHTTPServer.Request, tokens: SimulatedTokenServer, state: Counters
    ) async -> LoopbackHTTPServer.Response {
        var fields = HTTPFields()
        for (name, value) in request.headers {
            if let field = HTTPField.Name(name) { fields.append(HTTPField(name: field, value: value)) }
        }
        let method = HTTPRequest.Method(request.method) ?? .get
        let forwarded = HTTPRequest(
            method: method, scheme: "http", authority: "127.0.0.1", path: request.path, headerFields: fields)
        guard let (response, body) = try? await tokens.send(forwarded, body: request.body) else {
            return .init(status: 503)
        }
        if response.status == .ok,
            let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let accessToken = object["access_token"] as? String
        {
            let form = String(decoding: request.body, as: UTF8.self)
            state.issued(expiry: Self.expiry(ofJWT: accessToken), signIn: form.contains("grant_type=password"))
        }
        var headers: [(name: String, value: String)] = []
        for field in response.headerFields { headers.append((field.name.rawName, field.value)) }
        return .init(status: response.status.code, headers: headers, body: body)
    }

    /// The `exp` of a JWT-shaped token (its signature is not checked: the demo's API trusts its own server).
    private static func expiry(ofJWT token: String) -> Date? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
            let claims = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let exp = claims["exp"] as? Int
        else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(exp))
    }
}

/// The server's counters. `@unchecked Sendable`: every field is only touched while holding `lock`.
private final class Counters: @unchecked Sendable {
    private let lock = NSLock()
    private var stats = DemoTokenServer.Stats()
    private var expiry: Date?

    var snapshot: DemoTokenServer.Stats { locked { stats } }
    var latestExpiry: Date? { locked { expiry } }

    func apiRequest() { locked { stats.apiRequests += 1 } }
    func unauthorized() { locked { stats.unauthorized += 1 } }
    func issued(expiry: Date?, signIn: Bool) {
        locked {
            if let expiry { self.expiry = max(self.expiry ?? expiry, expiry) }
            if signIn { stats.signIns += 1 }
        }
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }
}
