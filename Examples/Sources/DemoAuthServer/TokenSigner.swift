import Crypto
import Foundation

/// Signs access tokens as ES256 JWTs and checks the ones it signed.
struct TokenSigner: Sendable {
    /// The claims of an access token this server issues.
    struct Claims: Codable, Sendable, Equatable {
        var sub: String
        var iss: String
        var aud: String
        var iat: Int
        var exp: Int
        var jti: String
        var scope: String?
        var clientID: String?

        enum CodingKeys: String, CodingKey {
            case sub, iss, aud, iat, exp, jti, scope
            case clientID = "client_id"
        }
    }

    /// Why a presented access token is refused.
    enum Rejection: Error, Equatable {
        case malformed
        case badSignature
        case wrongIssuerOrAudience
        case expired
    }

    private struct Header: Codable {
        var alg: String
        var typ: String?
        var kid: String?
    }

    private let privateKey: P256.Signing.PrivateKey
    /// The `kid` header: a fingerprint of the public key.
    let keyID: String

    /// Creates a signer with a fresh P-256 key.
    init(privateKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) {
        self.privateKey = privateKey
        let digest = SHA256.hash(data: privateKey.publicKey.x963Representation)
        self.keyID = Base64URL.encode(digest.prefix(8))
    }

    /// Signs the claims: `header.payload.signature`, the signature the 64-byte `r || s` of RFC 7518 section 3.4.
    func sign(_ claims: Claims) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let header = Base64URL.encode(try encoder.encode(Header(alg: "ES256", typ: "JWT", kid: keyID)))
        let payload = Base64URL.encode(try encoder.encode(claims))
        let signingInput = header + "." + payload
        let signature = try privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Signs any claims (an OpenID Connect ID token) the same way.
    func sign(json claims: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let header = Base64URL.encode(try encoder.encode(Header(alg: "ES256", typ: "JWT", kid: keyID)))
        let payload = Base64URL.encode(try encoder.encode(claims))
        let signingInput = header + "." + payload
        let signature = try privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// Checks the signature, issuer, audience and expiry of a token and returns its claims.
    ///
    /// - Parameters:
    ///   - token: The compact JWT.
    ///   - issuer: The expected `iss`.
    ///   - audience: The expected `aud`.
    ///   - now: The current time; the token is expired from its `exp` second on.
    func verify(_ token: String, issuer: String, audience: String, now: Date) throws(Rejection) -> Claims {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerData = Base64URL.decode(parts[0]),
            let header = try? JSONDecoder().decode(Header.self, from: headerData),
            let payloadData = Base64URL.decode(parts[1]),
            let signatureData = Base64URL.decode(parts[2])
        else { throw .malformed }
        guard header.alg == "ES256", header.kid == nil || header.kid == keyID,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureData),
            privateKey.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
        else { throw .badSignature }
        guard let claims = try? JSONDecoder().decode(Claims.self, from: payloadData) else { throw .malformed }
        guard claims.iss == issuer, claims.aud == audience else { throw .wrongIssuerOrAudience }
        guard now.timeIntervalSince1970 < Double(claims.exp) else { throw .expired }
        return claims
    }

    /// The public key as a JSON Web Key Set (RFC 7517), for `/.well-known/jwks.json`.
    var jwks: [String: [[String: String]]] {
        // x9.63 form: 0x04 || X (32 bytes) || Y (32 bytes).
        let point = privateKey.publicKey.x963Representation
        let x = point.dropFirst().prefix(32)
        let y = point.dropFirst(33).prefix(32)
        let key = [
            "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": keyID,
            "x": Base64URL.encode(x), "y": Base64URL.encode(y),
        ]
        return ["keys": [key]]
    }
}
