import Foundation
import Testing
import TokenKitLogCheck
import TokenVerification

/// `dpop.json` of the fixture directory: DPoP proofs minted by PyJWT and by jwcrypto, and access tokens bound to
/// their keys (`Interop/jose/dpop.py`).
struct DPoPFixtures: Sendable {
    struct Document: Decodable, Sendable {
        let issuer: String
        let audience: String
        let generatedAt: Int
        let uri: String
        let libraries: [String: String]
        let cases: [Case]
    }

    /// One proof, the token it came with, the request it is for, and what the check must give.
    struct Case: Decodable, Sendable {
        let name: String
        let library: String
        let alg: String
        let token: String
        let proof: String
        let method: String
        let uri: String
        /// Whether the verifier requires server nonces for this case.
        let nonces: Bool
        /// `valid`, or the error's description without `TokenVerificationError.`.
        let expect: String

        var isValid: Bool { expect == "valid" }
    }

    let document: Document
    let jwks: Data

    /// The fixtures, or `nil` when `TOKENKIT_JOSE_FIXTURES` is unset.
    static let shared: DPoPFixtures? = {
        guard let path = ProcessInfo.processInfo.environment[JOSEFixtures.variable], !path.isEmpty else { return nil }
        let file = URL(fileURLWithPath: path, isDirectory: true).appendingPathComponent("dpop.json")
        do {
            let data = try Data(contentsOf: file)
            let document = try JSONDecoder().decode(Document.self, from: data)
            for entry in document.cases {
                TestSecrets.shared.register(entry.token, as: .accessToken, origin: "dpop fixture \(entry.name) token")
                TestSecrets.shared.register(entry.proof, as: .accessToken, origin: "dpop fixture \(entry.name) proof")
            }
            // The issuer's key set, re-serialized on its own.
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            let jwks = try JSONSerialization.data(withJSONObject: object?["jwks"] ?? [:])
            return DPoPFixtures(document: document, jwks: jwks)
        } catch {
            // A set variable without readable DPoP fixtures must fail the run, not skip it.
            fatalError("\(JOSEFixtures.variable) is set but \(file.path) cannot be read: \(error)")
        }
    }()

    static var validNames: [String] { shared?.document.cases.filter(\.isValid).map(\.name) ?? [] }
    static var hostileNames: [String] { shared?.document.cases.filter { !$0.isValid }.map(\.name) ?? [] }

    func entry(_ name: String) -> Case? { document.cases.first { $0.name == name } }

    /// An authenticator at the fixtures' generation time: the issuer's ES256 access tokens, every DPoP algorithm,
    /// one replay cache, and server nonces when `nonces`.
    func authenticator(
        cache: any DPoPReplayCache = InMemoryDPoPReplayCache(), nonces: Bool = false
    ) throws
        -> DPoPAuthenticator
    {
        let now = Date(timeIntervalSince1970: TimeInterval(document.generatedAt))
        let verifier = TokenVerifier(
            configuration: .init(
                issuer: document.issuer, audience: .oneOf([document.audience]), algorithms: [.es256],
                requiredType: "at+jwt"),
            keySource: StaticJWKSSource(try JWKSet(json: jwks)), now: { now })
        let proofs = DPoPVerifier(
            configuration: .init(
                nonces: nonces ? DPoPNonces(secret: Array(repeating: 9, count: 32)) : nil),
            replayCache: cache, now: { now })
        return DPoPAuthenticator(tokens: BearerAuthenticator(verifier: verifier), proofs: proofs)
    }
}

/// DPoP proofs minted by PyJWT and jwcrypto, two implementations nobody here wrote, verified by TokenKit's
/// resource-server check, with access tokens bound to their keys by a thumbprint jwcrypto computed; the hostile
/// ones are refused with the expected reason, and every valid one is refused when replayed.
///
/// Needs `TOKENKIT_JOSE_FIXTURES` (`.ci/jose-interop` sets it); skipped without it.
@Suite(
    .logLeakCheck(),
    .enabled(
        if: DPoPFixtures.shared != nil,
        "TOKENKIT_JOSE_FIXTURES is not set: run .ci/jose-interop, or Interop/jose/generate.py DIR and set it to DIR")
)
struct DPoPInteropTests {
    let fixtures: DPoPFixtures

    init() throws { fixtures = try #require(DPoPFixtures.shared) }

    @Test func everyAlgorithmIsCoveredByBothLibraries() {
        for library in ["pyjwt", "jwcrypto"] {
            let algorithms = Set(fixtures.document.cases.filter { $0.library == library && $0.isValid }.map(\.alg))
            #expect(algorithms == ["ES256", "ES384", "RS256", "PS256", "EdDSA"], "\(library)")
        }
    }

    @Test(arguments: DPoPFixtures.validNames)
    func aValidProofIsAcceptedOnceThenRefusedAsAReplay(_ name: String) async throws {
        let entry = try #require(fixtures.entry(name))
        let authenticator = try fixtures.authenticator()
        let first = await authenticator.authenticate(
            authorization: "DPoP " + entry.token, proofs: [entry.proof], method: entry.method, uri: entry.uri)
        guard case .authenticated(let claims, let proof?) = first else {
            if case .rejected(let rejection) = first { Issue.record("\(name): refused with \(rejection.error)") }
            return
        }
        #expect(claims.subject == "user_dpop")
        #expect(proof.algorithm.name == entry.alg)
        #expect(proof.keyThumbprint == claims.confirmationKeyThumbprint)
        let replay = await authenticator.authenticate(
            authorization: "DPoP " + entry.token, proofs: [entry.proof], method: entry.method, uri: entry.uri)
        guard case .rejected(let rejection) = replay else {
            Issue.record("\(name): a replay was accepted")
            return
        }
        #expect(rejection.error == .dpopProofReplayed)
    }

    @Test(arguments: DPoPFixtures.hostileNames)
    func aHostileProofIsRefusedWithItsReason(_ name: String) async throws {
        let entry = try #require(fixtures.entry(name))
        let authenticator = try fixtures.authenticator(nonces: entry.nonces)
        let outcome = await authenticator.authenticate(
            authorization: "DPoP " + entry.token, proofs: [entry.proof], method: entry.method, uri: entry.uri)
        guard case .rejected(let rejection) = outcome else {
            Issue.record("\(name) was accepted")
            return
        }
        #expect(rejection.error.description == "TokenVerificationError." + entry.expect, "\(name)")
        #expect(rejection.status == 401)
        #expect(rejection.wwwAuthenticate?.hasPrefix("DPoP error=") == true)
    }

    @Test func aValidProofPresentedAsBearerOrForAnotherRequestIsRefused() async throws {
        let entry = try #require(fixtures.document.cases.first { $0.isValid })
        let authenticator = try fixtures.authenticator()
        let asBearer = await authenticator.authenticate(
            authorization: "Bearer " + entry.token, proofs: [entry.proof], method: entry.method, uri: entry.uri)
        guard case .rejected(let bearer) = asBearer else {
            Issue.record("a bound token was accepted as Bearer")
            return
        }
        #expect(bearer.error == .dpopBoundTokenAsBearer)
        let otherMethod = await authenticator.authenticate(
            authorization: "DPoP " + entry.token, proofs: [entry.proof], method: "DELETE", uri: entry.uri)
        guard case .rejected(let method) = otherMethod else {
            Issue.record("a proof for GET was accepted for DELETE")
            return
        }
        #expect(method.error == .invalidDPoPProof("htm"))
    }
}
