import AuthToken
import Crypto
import Foundation
import HTTPTypes
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import NetworkRetry

/// Decodes a base64url segment (no padding).
func base64URLDecoded(_ text: Substring) -> Data? {
    var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while base64.count % 4 != 0 { base64 += "=" }
    return Data(base64Encoded: base64)
}

/// A proof taken apart: its header and payload as JSON objects, and whether its signature verifies with its `jwk`.
struct DecodedProof {
    let header: [String: Any]
    let payload: [String: Any]
    let signatureVerifies: Bool
    let jwkThumbprint: String

    struct Malformed: Error {}

    init(_ proof: String) throws {
        let parts = proof.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerData = base64URLDecoded(parts[0]),
            let payloadData = base64URLDecoded(parts[1]), let signatureData = base64URLDecoded(parts[2]),
            let header = try JSONSerialization.jsonObject(with: headerData) as? [String: Any],
            let payload = try JSONSerialization.jsonObject(with: payloadData) as? [String: Any],
            let jwk = header["jwk"] as? [String: String], let xText = jwk["x"], let yText = jwk["y"],
            let x = base64URLDecoded(Substring(xText)), let y = base64URLDecoded(Substring(yText))
        else { throw Malformed() }
        self.header = header
        self.payload = payload
        let key = try P256.Signing.PublicKey(rawRepresentation: x + y)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: signatureData)
        signatureVerifies = key.isValidSignature(signature, for: Data((parts[0] + "." + parts[1]).utf8))
        // RFC 7638: the required members in lexicographic order, no whitespace.
        let canonical = #"{"crv":"P-256","kty":"EC","x":""# + jwk["x"]! + #"","y":""# + jwk["y"]! + #""}"#
        jwkThumbprint = Data(SHA256.hash(data: Data(canonical.utf8))).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

@Suite(.logLeakCheck()) struct DPoPProofTests {
    static let clock = Date(timeIntervalSince1970: 1_800_000_000)
    let prover = DPoPProver(key: SoftwareDPoPKey(), now: { DPoPProofTests.clock })

    @Test func aProofCarriesTheHeaderClaimsAndAValidSignature() throws {
        let token = "dpop-access-token-secret"
        TestSecrets.shared.register(token, as: .accessToken)
        let url = try #require(URL(string: "https://api.example.com/v1/items?page=2#top"))
        let proof = try DecodedProof(prover.proof(method: "POST", url: url, accessToken: token))
        #expect(proof.header["typ"] as? String == "dpop+jwt")
        #expect(proof.header["alg"] as? String == "ES256")
        let jwk = try #require(proof.header["jwk"] as? [String: String])
        #expect(Set(jwk.keys) == ["kty", "crv", "x", "y"])  // never "d"
        #expect(proof.payload["htm"] as? String == "POST")
        #expect(proof.payload["htu"] as? String == "https://api.example.com/v1/items")
        #expect(proof.payload["iat"] as? Int == 1_800_000_000)
        #expect(proof.payload["ath"] as? String == DPoPProver.ath(token))
        #expect(proof.payload["nonce"] == nil)
        #expect((proof.payload["jti"] as? String)?.count == 22)
        #expect(proof.signatureVerifies)
        #expect(proof.jwkThumbprint == prover.thumbprint)
    }

    @Test func athIsTheBase64URLSHA256OfTheToken() {
        // SHA-256("abc") = ba7816bf..., base64url without padding.
        #expect(DPoPProver.ath("abc") == "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0")
    }

    @Test func everyProofHasItsOwnJTI() throws {
        let url = try #require(URL(string: "https://api.example.com/"))
        let ids = try (0..<50).map { _ in
            try DecodedProof(prover.proof(method: "GET", url: url)).payload["jti"] as? String
        }
        #expect(Set(ids).count == 50)
    }

    @Test(arguments: [
        ("https", "API.Example.COM", "/v1/items?x=1", "https://api.example.com/v1/items"),
        ("https", "api.example.com:443", "/a", "https://api.example.com/a"),
        ("http", "localhost:80", "/a", "http://localhost/a"),
        ("https", "api.example.com:8443", "/a#f", "https://api.example.com:8443/a"),
        ("https", "api.example.com", "", "https://api.example.com/"),
        ("https", "api.example.com", "/%7euser/%2fx/%41", "https://api.example.com/~user/%2Fx/A"),
        ("https", "[::1]:8443", "/a", "https://[::1]:8443/a"),
    ])
    func htuIsNormalised(scheme: String, authority: String, path: String, expected: String) throws {
        let request = HTTPRequest(method: .get, scheme: scheme, authority: authority, path: path)
        let proof = try DecodedProof(prover.proof(for: request, accessToken: nil))
        #expect(proof.payload["htu"] as? String == expected)
    }

    @Test func noncesAreKeptPerOriginAndLearnedFromAnyAnswer() throws {
        let api = try #require(HTTPOrigin(string: "https://api.example.com"))
        let auth = try #require(HTTPOrigin(string: "https://auth.example.com"))
        var headers = HTTPFields()
        headers[.dpopNonce] = "n-api-1"
        #expect(prover.learnNonce(from: HTTPResponse(status: .ok, headerFields: headers), origin: api))
        #expect(!prover.learnNonce(from: HTTPResponse(status: .ok, headerFields: headers), origin: api))
        let toAPI = try DecodedProof(
            prover.proof(method: "GET", url: try #require(URL(string: "https://api.example.com/x"))))
        let toAuth = try DecodedProof(
            prover.proof(method: "POST", url: try #require(URL(string: "https://auth.example.com/token"))))
        #expect(toAPI.payload["nonce"] as? String == "n-api-1")
        #expect(toAuth.payload["nonce"] == nil)
        #expect(prover.nonce(for: auth) == nil)
    }

    @Test(arguments: ["", "with space", "quote\"d", "back\\slash", String(repeating: "n", count: 1025)])
    func aNonceOutsideTheGrammarIsIgnored(_ value: String) throws {
        let api = try #require(HTTPOrigin(string: "https://api.example.com"))
        var headers = HTTPFields()
        if let field = HTTPField.Name("DPoP-Nonce"), !value.isEmpty {
            headers.append(HTTPField(name: field, value: value))
        }
        #expect(!prover.learnNonce(from: HTTPResponse(status: .ok, headerFields: headers), origin: api))
        #expect(prover.nonce(for: api) == nil)
    }

    @Test func aNewKeyChangesTheThumbprintAndHeaderButKeepsNonces() throws {
        let api = try #require(HTTPOrigin(string: "https://api.example.com"))
        var headers = HTTPFields()
        headers[.dpopNonce] = "kept"
        prover.learnNonce(from: HTTPResponse(status: .ok, headerFields: headers), origin: api)
        let before = prover.thumbprint
        let key = SoftwareDPoPKey()
        prover.use(key)
        #expect(prover.thumbprint != before)
        #expect(prover.thumbprint == DPoPProver.thumbprint(of: key))
        let proof = try DecodedProof(
            prover.proof(method: "GET", url: try #require(URL(string: "https://api.example.com/"))))
        #expect(proof.jwkThumbprint == prover.thumbprint)
        #expect(proof.signatureVerifies)
        #expect(proof.payload["nonce"] as? String == "kept")
    }

    @Test func aSoftwareKeyRoundTripsThroughItsRawRepresentation() throws {
        let key = SoftwareDPoPKey()
        let restored = try SoftwareDPoPKey(rawRepresentation: key.rawRepresentation)
        #expect(DPoPProver.thumbprint(of: restored) == DPoPProver.thumbprint(of: key))
        #expect("\(key)" == "SoftwareDPoPKey(P-256)")
        #expect(throws: (any Error).self) { try SoftwareDPoPKey(rawRepresentation: Data([1, 2, 3])) }
    }

    @Test func aJWTBoundToAnotherKeyIsRefused() throws {
        let other = DPoPProver.thumbprint(of: SoftwareDPoPKey())
        let bound = JWTBuilder.token(claims: #"{"sub":"u","cnf":{"jkt":""# + other + #""}}"#)
        #expect(throws: NetworkRetryError.dpopKeyUnavailable) { try prover.checkBinding(of: bound) }
        let ours = JWTBuilder.token(claims: #"{"sub":"u","cnf":{"jkt":""# + prover.thumbprint + #""}}"#)
        try prover.checkBinding(of: ours)
        try prover.checkBinding(of: "opaque-token")
    }
}
