import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

@testable import TokenVerification

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The URLSession key-set fetch and introspection send against a hostile server that streams a 64 MiB answer: the
/// read fails clearly at the documented bound and keeps nothing past it, instead of handing over the whole stream.
/// (`URLSession` reads ahead of its delegate, so how much the server got to write is not bounded here; the
/// AsyncHTTPClient fetch and send, with back-pressure, are held to that in TokenKitAsyncHTTPClientTests.)
@Suite(.logLeakCheck()) struct BoundedBodyReadTests {
    /// The introspection request for `token` to `server`, with the default bound (64 KiB).
    static func request(_ server: EndlessBodyServer) -> IntrospectionVerifier.Request {
        let token = "boundedtoken" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        TestSecrets.shared.register(token, as: .accessToken)
        return IntrospectionVerifier.request(
            token,
            configuration: .init(
                endpoint: URL(string: "http://127.0.0.1:\(server.port)/o/introspect/")!,
                clientAuthentication: .clientSecretPost(id: "orders-api", secret: "bounded-secret"),
                audience: .notChecked(reason: "the test server binds no audience")))
    }

    @Test(arguments: [false, true])
    func theURLSessionSendThrowsAtTheBoundInsteadOfHandingOverTheWholeStream(declaresLength: Bool) async throws {
        TestSecrets.shared.register("bounded-secret", as: .clientSecret)
        let server = try EndlessBodyServer(declaresLength: declaresLength)
        defer { server.stop() }
        let request = Self.request(server)
        #expect(request.maximumResponseBytes == 64 * 1024)
        await #expect(throws: URLError(.dataLengthExceedsMaximum)) {
            let response = try await IntrospectionVerifier.urlSessionSend()(request)
            Issue.record("the send handed over \(response.body.count) bytes")
        }
    }

    @Test func anIntrospectionEndpointThatStreamsWithoutEndIsUnavailableBeforeAnyTimeout() async throws {
        let server = try EndlessBodyServer()
        defer { server.stop() }
        let secret = "bounded-secret-" + UUID().uuidString
        let token = "boundedtoken" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        TestSecrets.shared.register(secret, as: .clientSecret)
        TestSecrets.shared.register(token, as: .accessToken)
        // A manual clock: the request timeout never fires, so only the bound can end the read.
        let verifier = IntrospectionVerifier(
            configuration: .init(
                endpoint: URL(string: "http://127.0.0.1:\(server.port)/o/introspect/")!,
                clientAuthentication: .clientSecretBasic(id: "orders-api", secret: secret),
                audience: .notChecked(reason: "the test server binds no audience")),
            clock: ManualClock())
        await #expect(throws: TokenVerificationError.introspectionUnavailable) { try await verifier.verify(token) }
    }

    @Test(arguments: [false, true])
    func aKeySetEndpointThatStreamsWithoutEndFailsTheFetchAtItsBound(declaresLength: Bool) async throws {
        let server = try EndlessBodyServer(declaresLength: declaresLength)
        defer { server.stop() }
        let fetch = RemoteJWKSSource.urlSessionFetch()
        await #expect(throws: TokenVerificationError.keySetTooLarge) {
            let response = try await fetch(URL(string: "http://127.0.0.1:\(server.port)/jwks.json")!)
            Issue.record("the fetch handed over \(response.body.count) bytes")
        }
    }

    @Test func aKeySetSourceOverTheDefaultFetchSaysTheSetIsTooLargeWhenItNeverEnds() async throws {
        let server = try EndlessBodyServer()
        defer { server.stop() }
        let source = RemoteJWKSSource(
            jwksURL: URL(string: "http://127.0.0.1:\(server.port)/jwks.json")!, clock: ManualClock())
        await #expect(throws: TokenVerificationError.keySetTooLarge) {
            _ = try await source.key(for: "k1", algorithm: .rs256)
        }
    }
}
