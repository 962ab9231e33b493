import Crypto
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenVerification

/// What an attacker tried with HTTP redirects against the URLSession transports, over real loopback servers (two
/// ports are two origins): a key-set URL that redirects to a host the attacker controls.
@Suite(.logLeakCheck()) struct RedirectAttackTests {
    static let issuer = "https://clerk.example.com"
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let key = P256.Signing.PrivateKey()

    static func b64(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// A key set holding `key` (the attacker's or the issuer's) under `kid`.
    static func keySet(_ key: P256.Signing.PrivateKey, kid: String) -> Data {
        let raw = key.publicKey.rawRepresentation
        let jwk =
            #"{"kty":"EC","crv":"P-256","kid":"\#(kid)","alg":"ES256","use":"sig","#
            + #""x":"\#(b64(raw.prefix(32)))","y":"\#(b64(raw.suffix(32)))"}"#
        return Data(#"{"keys":[\#(jwk)]}"#.utf8)
    }

    /// An ES256 token for `issuer`, signed with `key`.
    static func token(_ key: P256.Signing.PrivateKey, kid: String) throws -> String {
        let header = b64(Data(#"{"alg":"ES256","typ":"JWT","kid":"\#(kid)"}"#.utf8))
        let iat = Int(now.timeIntervalSince1970)
        let payload = b64(Data(#"{"iss":"\#(issuer)","sub":"user_1","iat":\#(iat),"exp":\#(iat + 300)}"#.utf8))
        let signature = try key.signature(for: Data("\(header).\(payload)".utf8)).rawRepresentation
        return "\(header).\(payload).\(b64(signature))"
    }

    static func verifier(jwksURL: URL) -> TokenVerifier {
        TokenVerifier(
            configuration: .init(
                issuer: issuer, audience: .notChecked(reason: "the test issuer binds no audience"),
                algorithms: [.es256]),
            keySource: RemoteJWKSSource(jwksURL: jwksURL), now: { now })
    }

    @Test func aJWKSURLRedirectingToAnotherHostNeverReachesThatHostNorGetsItsKeysTrusted() async throws {
        let attackerKey = P256.Signing.PrivateKey()
        let attacker = try LoopbackServer { _, _ in
            .init(
                status: 200, headers: [("Content-Type", "application/json")],
                body: Self.keySet(attackerKey, kid: "attacker"))
        }
        defer { attacker.stop() }
        let jwksHost = try LoopbackServer { _, _ in
            .init(status: 302, headers: [("Location", "http://127.0.0.1:\(attacker.port)/jwks.json")])
        }
        defer { jwksHost.stop() }
        let url = URL(string: "http://127.0.0.1:\(jwksHost.port)/.well-known/jwks.json")!

        await #expect(throws: (any Error).self) { _ = try await RemoteJWKSSource.urlSessionFetch()(url) }
        let verifier = Self.verifier(jwksURL: url)
        await #expect(throws: (any Error).self) {
            _ = try await verifier.verify(try Self.token(attackerKey, kid: "attacker"))
        }
        #expect(jwksHost.received.count >= 2)
        #expect(attacker.received.isEmpty, "the redirect to another origin must not be followed at all")
    }

    @Test func aJWKSRedirectWithinTheSameOriginIsStillFollowed() async throws {
        let key = Self.key
        let jwksHost = try LoopbackServer { request, port in
            if request.path == "/moved" {
                return .init(status: 302, headers: [("Location", "http://127.0.0.1:\(port)/jwks.json")])
            }
            return .init(
                status: 200, headers: [("Content-Type", "application/json")], body: Self.keySet(key, kid: "issuer"))
        }
        defer { jwksHost.stop() }
        let verifier = Self.verifier(jwksURL: URL(string: "http://127.0.0.1:\(jwksHost.port)/moved")!)
        #expect(try await verifier.verify(try Self.token(key, kid: "issuer")).subject == "user_1")
        #expect(jwksHost.received.map(\.path) == ["/moved", "/jwks.json"])
    }
}
