import DemoAuthServer
import Foundation
import Logging
import Synchronization
import Testing
import TokenKitLogCheck

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A wall clock the test moves by hand: expiry without waiting.
final class TestWallClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date = Date(timeIntervalSince1970: 1_767_225_600)) { current = Mutex(start) }

    var now: @Sendable () -> Date { { self.current.withLock { $0 } } }

    func advance(seconds: TimeInterval) { current.withLock { $0 = $0.addingTimeInterval(seconds) } }
}

/// Declines every HTTP authentication challenge and keeps the `401` that carried it.
///
/// URLSession on Linux (swift-corelibs-foundation 6.3.1) never completes a request answered `401` with
/// `WWW-Authenticate: Basic` unless a delegate handles the challenge (swift-corelibs-foundation issue 5456), and
/// declining it cancels the task, body lost. So the tests keep the status and headers of the challenge response.
final class ChallengeRecorder: NSObject, URLSessionTaskDelegate, Sendable {
    private let lastChallenge = Mutex<(status: Int, headers: [String: String])?>(nil)

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        if let response = challenge.failureResponse as? HTTPURLResponse {
            let recorded = (response.statusCode, Reply.headers(of: response))
            lastChallenge.withLock { $0 = recorded }
        }
        completionHandler(.cancelAuthenticationChallenge, nil)
    }

    /// The challenge response recorded since the last call, if any.
    func takeChallenge() -> (status: Int, headers: [String: String])? {
        lastChallenge.withLock { last in
            defer { last = nil }
            return last
        }
    }
}

/// One HTTP exchange as the tests see it.
struct Reply: Sendable {
    let status: Int
    let headers: [String: String]
    let body: Data

    /// A header, by case-insensitive name.
    func header(_ name: String) -> String? {
        headers.first { $0.key.lowercased() == name.lowercased() }?.value
    }

    /// The body as a JSON object (fails the test when it is not one).
    func json(sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        let object = try JSONSerialization.jsonObject(with: body)
        return try #require(object as? [String: Any], sourceLocation: sourceLocation)
    }

    /// The header fields of a response, as strings.
    static func headers(of response: HTTPURLResponse) -> [String: String] {
        var fields: [String: String] = [:]
        for (name, value) in response.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name] = value }
        }
        return fields
    }

    /// The `error` member of an error body.
    var errorCode: String? { (try? JSONSerialization.jsonObject(with: body) as? [String: Any])?["error"] as? String }
}

/// The tokens of a token response.
struct Pair: Sendable, Equatable {
    let accessToken: String
    let refreshToken: String?
    let expiresIn: Int?

    init(_ reply: Reply, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let object = try reply.json(sourceLocation: sourceLocation)
        // The OAuth endpoints answer in snake_case, the FitIQ-style JSON endpoints in camelCase.
        accessToken = try #require(
            (object["access_token"] ?? object["accessToken"]) as? String, sourceLocation: sourceLocation)
        refreshToken = (object["refresh_token"] ?? object["refreshToken"]) as? String
        expiresIn = (object["expires_in"] ?? object["expiresIn"]) as? Int
    }
}

/// A URLSession client for a running demo server.
struct TestClient: Sendable {
    let baseURL: URL
    let session: URLSession
    private let challenges = ChallengeRecorder()
    static let apiKey = "demo-api-key"

    init(baseURL: URL) {
        self.baseURL = baseURL
        self.session = URLSession(configuration: .ephemeral, delegate: challenges, delegateQueue: nil)
    }

    /// Lets running tasks finish and releases the session.
    func close() { session.finishTasksAndInvalidate() }

    func send(
        _ method: String, _ path: String, headers: [String: String] = [:], body: Data? = nil
    ) async throws -> Reply {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = method
        // The log check searches the run's log lines for every credential sent and every token received.
        for (name, value) in headers {
            request.setValue(value, forHTTPHeaderField: name)
            TestSecrets.shared.registerHeader(name: name, value: value, origin: "TestClient request")
        }
        request.httpBody = body
        if let body { TestSecrets.shared.registerCredentials(inRequestBody: body, origin: "TestClient request") }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            // A declined authentication challenge: answer the 401 that carried it (without its body).
            if (error as NSError).code == NSURLErrorCancelled, let challenge = challenges.takeChallenge() {
                return Reply(status: challenge.status, headers: challenge.headers, body: Data())
            }
            throw error
        }
        let http = try #require(response as? HTTPURLResponse)
        TestSecrets.shared.registerTokens(inResponseBody: data, origin: "TestClient response")
        return Reply(status: http.statusCode, headers: Reply.headers(of: http), body: data)
    }

    /// A JSON request to the FitIQ-style API, with the API key unless told otherwise.
    func postJSON(_ path: String, _ object: [String: String], apiKey: String? = TestClient.apiKey) async throws -> Reply
    {
        var headers = ["Content-Type": "application/json"]
        if let apiKey { headers["X-API-Key"] = apiKey }
        return try await send("POST", path, headers: headers, body: try JSONSerialization.data(withJSONObject: object))
    }

    /// A form-encoded request to an OAuth endpoint.
    func postForm(_ path: String, _ parameters: [String: String], headers: [String: String] = [:]) async throws -> Reply
    {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = parameters.sorted { $0.key < $1.key }
            .map { name, value in
                "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value)"
            }
            .joined(separator: "&")
        var allHeaders = headers
        allHeaders["Content-Type"] = "application/x-www-form-urlencoded"
        return try await send("POST", path, headers: allHeaders, body: Data(body.utf8))
    }

    func jsonLogin(email: String = "demo@example.com", password: String = "password123") async throws -> Reply {
        try await postJSON("/api/v1/auth/login", ["email": email, "password": password])
    }

    func jsonRefresh(_ refreshToken: String?) async throws -> Reply {
        try await postJSON("/api/v1/auth/refresh", ["refreshToken": refreshToken ?? ""])
    }

    func oauthLogin(clientID: String = "demo-app") async throws -> Reply {
        try await postForm(
            "/oauth/token",
            [
                "grant_type": "password", "username": "demo@example.com", "password": "password123",
                "client_id": clientID,
            ]
        )
    }

    func oauthRefresh(_ refreshToken: String?, clientID: String = "demo-app") async throws -> Reply {
        try await postForm(
            "/oauth/token", ["grant_type": "refresh_token", "refresh_token": refreshToken ?? "", "client_id": clientID]
        )
    }

    func get(_ path: String, bearer token: String?) async throws -> Reply {
        try await send("GET", path, headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:])
    }

    func stats() async throws -> DemoAuthServer.Stats {
        try JSONDecoder().decode(DemoAuthServer.Stats.self, from: try await send("GET", "/debug/stats").body)
    }
}

/// The server's logger in tests: at trace, so every line of the server and of Hummingbird goes to the log
/// check's capture. Made on each use, after the check installed its logging backend.
var testLogger: Logger {
    var logger = Logger(label: "demo-auth-server-tests")
    logger.logLevel = .trace
    return logger
}

extension TestSecrets {
    /// Registers the secrets a demo server configuration holds: its users' passwords, its clients' secrets
    /// and its API key.
    func registerSecrets(of configuration: DemoAuthServer.Configuration) {
        for user in configuration.users { register(user.password, as: .password, origin: "demo server \(user.id)") }
        for client in configuration.clients {
            if let secret = client.secret { register(secret, as: .clientSecret, origin: "demo server \(client.id)") }
        }
        if let apiKey = configuration.apiKey { register(apiKey, as: .credential, origin: "demo server API key") }
    }
}

/// Starts a server on a free loopback port, runs the body with a client, and stops the server.
func withServer<T>(
    _ configuration: DemoAuthServer.Configuration = .init(),
    clock: TestWallClock = TestWallClock(),
    _ body: (DemoAuthServer, TestClient) async throws -> T
) async throws -> T {
    TestSecrets.shared.registerSecrets(of: configuration)
    let server = DemoAuthServer(configuration: configuration, now: clock.now, logger: testLogger)
    let client = TestClient(baseURL: try await server.start())
    do {
        let result = try await body(server, client)
        client.close()
        await server.stop()
        return result
    } catch {
        client.close()
        await server.stop()
        throw error
    }
}
