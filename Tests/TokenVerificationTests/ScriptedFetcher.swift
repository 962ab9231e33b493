import Foundation
import TokenKitTesting
import TokenVerification

/// A fake JWKS endpoint: answers fetches from a script (the last step repeats), counts them, and can hold
/// them until released. The discovery document, if any, is answered for any `openid-configuration` URL.
final class ScriptedFetcher: Sendable {
    static let url = URL(string: "https://clerk.example.com/.well-known/jwks.json")!

    enum Step: Sendable {
        case document(Data, maxAge: Duration?)
        case failure
    }

    private struct State {
        var steps: [Step]
        var count = 0
        var discoveryCount = 0
    }

    private let state: Locked<State>
    private let holds = Holds()
    let discovery: Data?

    init(steps: [Step], discovery: Data? = nil) {
        state = Locked(State(steps: steps))
        self.discovery = discovery
    }

    convenience init(_ documents: [Data], maxAge: Duration? = nil) {
        self.init(steps: documents.map { .document($0, maxAge: maxAge) })
    }

    /// Key set fetches so far (held ones included).
    var count: Int { state.withLock { $0.count } }
    /// Discovery fetches so far.
    var discoveryCount: Int { state.withLock { $0.discoveryCount } }

    /// Holds every fetch from now on until ``release()``.
    func hold() { holds.hold() }

    /// Lets held fetches (and later ones) go.
    func release() { holds.release() }

    var fetch: RemoteJWKSSource.Fetch {
        { url in try await self.answer(url) }
    }

    private func answer(_ url: URL) async throws -> RemoteJWKSSource.Response {
        if url.path.hasSuffix("openid-configuration") {
            state.withLock { $0.discoveryCount += 1 }
            guard let discovery else { throw URLError(.fileDoesNotExist) }
            return RemoteJWKSSource.Response(body: discovery)
        }
        state.withLock { $0.count += 1 }
        await holds.pass()
        let step = state.withLock { state in state.steps.count > 1 ? state.steps.removeFirst() : state.steps[0] }
        switch step {
        case .document(let data, let maxAge): return RemoteJWKSSource.Response(body: data, maxAge: maxAge)
        case .failure: throw URLError(.cannotConnectToHost)
        }
    }
}

/// Yields until `condition` holds (at most `limit` times), for work started in unstructured tasks.
func eventually(_ limit: Int = 100_000, _ condition: () -> Bool) async -> Bool {
    for _ in 0..<limit {
        if condition() { return true }
        await Task.yield()
    }
    return condition()
}
