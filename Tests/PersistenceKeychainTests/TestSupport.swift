import AuthToken
import Foundation
import HTTPTypes
import Persistence
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

/// A session whose secrets are registered for the log leak check.
func keychainTestSession(_ name: String, generation: UInt64, userID: String? = "user-1") -> StoredSession {
    let token = TestSecrets.shared.register(
        AuthToken(
            accessToken: "kc-access-\(name)-\(generation)-q8", refreshToken: "kc-refresh-\(name)-\(generation)-q8",
            receivedAt: Date(timeIntervalSince1970: 1_800_000_000), lifetime: 3600))
    return StoredSession(token: token, userID: userID, generation: generation)
}

/// Where a request to ``serveOverLoopback(_:hold:)`` can be held: before the server sees it, or after it answered.
enum LoopbackHoldPoint { case beforeServer, afterAnswer }

/// Serves the simulated token server over HTTP on loopback, for token requests from other processes.
///
/// - Parameters:
///   - server: The server; its clock is the test's.
///   - hold: Called with each request's `X-Client-Tag` before the server sees it and after it answered; it may
///     block to hold the request, and returns whether the request is dropped (answered 502).
func serveOverLoopback(
    _ server: SimulatedTokenServer, hold: (@Sendable (LoopbackHoldPoint, String?) -> Bool)? = nil
) throws -> LoopbackServer {
    try LoopbackServer { request, port in
        var fields = HTTPFields()
        var tag: String?
        for (name, values) in request.headers {
            guard let fieldName = HTTPField.Name(name) else { continue }
            if name.lowercased() == "x-client-tag" { tag = values.first }
            for value in values { fields.append(HTTPField(name: fieldName, value: value)) }
        }
        if hold?(.beforeServer, tag) == true { return .init(status: 502) }
        let httpRequest = HTTPRequest(
            method: HTTPRequest.Method(request.method) ?? .get, scheme: "http", authority: "127.0.0.1:\(port)",
            path: request.path, headerFields: fields)
        let answer = Locked<(HTTPResponse, Data)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let result = try? await server.send(httpRequest, body: request.body)
            answer.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        if hold?(.afterAnswer, tag) == true { return .init(status: 502) }
        guard let (response, body) = answer.withLock({ $0 }) else { return .init(status: 502) }
        return .init(
            status: response.status.code,
            headers: response.headerFields.map { ($0.name.canonicalName, $0.value) }, body: body)
    }
}
