import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenVerification

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The default send against a real HTTP server on loopback: a redirect answer is passed on as it is, and the token
/// and the credentials go to the configured endpoint only.
@Suite(.logLeakCheck()) struct IntrospectionURLSessionSendTests {
    @Test func aRedirectIsNotFollowedSoTheTokenGoesToTheConfiguredEndpointOnly() async throws {
        let secret = "send-secret-" + UUID().uuidString
        let token = "sendtoken" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
        TestSecrets.shared.register(secret, as: .clientSecret)
        TestSecrets.shared.register(token, as: .accessToken)
        let server = try LoopbackServer { request, port in
            if request.path == "/o/introspect/" {
                return .init(status: 307, headers: [("Location", "http://127.0.0.1:\(port)/elsewhere")])
            }
            return .init(status: 200, body: Data(#"{"active": true, "sub": "user-1"}"#.utf8))
        }
        defer { server.stop() }
        let verifier = IntrospectionVerifier(
            configuration: .init(
                endpoint: URL(string: "http://127.0.0.1:\(server.port)/o/introspect/")!,
                clientAuthentication: .clientSecretPost(id: "orders-api", secret: secret),
                audience: .notChecked(reason: "the test server binds no audience")))
        await #expect(throws: TokenVerificationError.introspectionUnavailable) { try await verifier.verify(token) }
        #expect(server.received.map(\.path) == ["/o/introspect/"], "the 307 must not carry the form elsewhere")
    }
}
