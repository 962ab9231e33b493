import Foundation
import TokenKitTesting
import TokenVerification

/// An in-process RFC 7662 endpoint: answers per token from a table (`{"active": false}` for any other), or fails as
/// told; records every request and can hold calls until released.
final class FakeIntrospectionEndpoint: Sendable {
    static let url = URL(string: "https://auth.example.com/o/introspect/")!

    enum Behaviour: Sendable {
        /// Answer from the table.
        case answer
        /// Answer this status and body to every request.
        case fixed(status: Int, body: String)
        /// Throw, as a refused connection does.
        case unreachable
    }

    private struct State {
        var answers: [String: String] = [:]
        var behaviour = Behaviour.answer
        var requests: [IntrospectionVerifier.Request] = []
    }

    private let state = Locked(State())
    private let holds = Holds()

    /// Answers `json` for `token`.
    func answer(_ token: String, _ json: String) { state.withLock { $0.answers[token] = json } }

    func behave(_ behaviour: Behaviour) { state.withLock { $0.behaviour = behaviour } }

    /// Calls received so far (held ones included).
    var count: Int { state.withLock { $0.requests.count } }
    var requests: [IntrospectionVerifier.Request] { state.withLock { $0.requests } }

    func hold() { holds.hold() }

    func release() { holds.release() }

    var send: IntrospectionVerifier.Send {
        { request in try await self.handle(request) }
    }

    private func handle(_ request: IntrospectionVerifier.Request) async throws -> IntrospectionVerifier.Response {
        state.withLock { $0.requests.append(request) }
        await holds.pass()
        let form = Self.form(request.body)
        let (behaviour, answers) = state.withLock { ($0.behaviour, $0.answers) }
        switch behaviour {
        case .unreachable:
            throw URLError(.cannotConnectToHost)
        case .fixed(let status, let body):
            return IntrospectionVerifier.Response(status: status, body: Data(body.utf8))
        case .answer:
            let token = form["token"] ?? ""
            return IntrospectionVerifier.Response(
                status: 200, body: Data((answers[token] ?? #"{"active": false}"#).utf8))
        }
    }

    /// The form body, decoded.
    static func form(_ body: Data) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func decode(_ text: Substring) -> String {
                text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(text)
            }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }
}
