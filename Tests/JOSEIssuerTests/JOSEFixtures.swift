import Foundation
import TokenKitLogCheck
import TokenVerification

/// The fixture directory written by `Interop/jose/generate.py`: a JWKS and tokens minted by PyJWT and jwcrypto.
///
/// Read from `TOKENKIT_JOSE_FIXTURES`; every token and the HMAC secret are registered in `TestSecrets.shared`,
/// so the log leak check searches the run's log lines for them.
struct JOSEFixtures: Sendable {
    /// The environment variable naming the directory.
    static let variable = "TOKENKIT_JOSE_FIXTURES"

    /// What `manifest.json` says.
    struct Manifest: Decodable, Sendable {
        let issuer: String
        let audience: String
        let authorizedParty: String
        let hmacSecret: String
        let generatedAt: Int
        let libraries: [String: String]
        let tokens: [Entry]
    }

    /// One token: its name (safe to print), the library that minted it, and what verification must give.
    struct Entry: Decodable, Sendable {
        let name: String
        let library: String
        let alg: String
        let token: String
        /// `valid`, or the ``TokenVerificationError/reason`` it must be refused with.
        let expect: String
        let claims: ExpectedClaims?

        var isValid: Bool { expect == "valid" }
    }

    /// The claims a valid token must yield.
    struct ExpectedClaims: Decodable, Sendable {
        let sub: String
        let sid: String
        let azp: String
        let jti: String
        let iat: Int
        let nbf: Int
        let exp: Int
        let audience: [String]
        let names: [String]
        let custom: CustomClaims
    }

    /// The custom claims every valid token carries: a value of each JSON type.
    struct CustomClaims: Decodable, Sendable, Equatable {
        struct Nested: Decodable, Sendable, Equatable {
            let ok: Bool
            let list: [Int]
        }

        let name: String
        let roles: [String]
        let premium: Bool
        let level: Int
        let ratio: Double
        let nested: Nested
    }

    let manifest: Manifest
    let jwks: Data

    /// The fixtures, or `nil` when the variable is unset.
    static let shared: JOSEFixtures? = {
        guard let path = ProcessInfo.processInfo.environment[variable], !path.isEmpty else { return nil }
        let directory = URL(fileURLWithPath: path, isDirectory: true)
        do {
            let manifest = try JSONDecoder().decode(
                Manifest.self, from: Data(contentsOf: directory.appendingPathComponent("manifest.json")))
            let jwks = try Data(contentsOf: directory.appendingPathComponent("jwks.json"))
            for entry in manifest.tokens {
                TestSecrets.shared.register(entry.token, as: .accessToken, origin: "jose fixture \(entry.name)")
            }
            TestSecrets.shared.register(manifest.hmacSecret, as: .clientSecret, origin: "jose fixture HMAC secret")
            return JOSEFixtures(manifest: manifest, jwks: jwks)
        } catch {
            // A set variable with a broken directory must fail the run, not skip it.
            fatalError("\(variable) is set but its fixtures cannot be read: \(error)")
        }
    }()

    /// The names of the tokens that must verify (empty without fixtures).
    static var validNames: [String] { shared?.manifest.tokens.filter(\.isValid).map(\.name) ?? [] }
    /// The names of the tokens that must be refused (empty without fixtures).
    static var invalidNames: [String] { shared?.manifest.tokens.filter { !$0.isValid }.map(\.name) ?? [] }

    /// The token named `name`.
    func entry(_ name: String) -> Entry? { manifest.tokens.first { $0.name == name } }

    /// A verifier for the fixture issuer: every algorithm, the fixture audience, party and HMAC secret (the
    /// fixtures' HMAC tokens carry no `kid`).
    func verifier() throws -> TokenVerifier {
        guard let secret = Self.base64URLDecode(manifest.hmacSecret) else { throw BadFixture() }
        let configuration = TokenVerifier.Configuration(
            issuer: manifest.issuer, audience: .oneOf([manifest.audience]), algorithms: Set(JWSAlgorithm.all),
            allowedParties: [manifest.authorizedParty], hmacSecrets: [HMACSecret(keyID: nil, data: secret)])
        return TokenVerifier(configuration: configuration, keySource: StaticJWKSSource(try JWKSet(json: jwks)))
    }

    /// The manifest's HMAC secret is not base64url.
    struct BadFixture: Error {}

    static func base64URLDecode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
