import AuthToken
import Crypto
import Foundation
import _CryptoExtras

/// A public key from a JSON Web Key (RFC 7517), ready to verify signatures.
///
/// Parsed by ``JWKSet``; only signing keys that pass every check become a `JWK`: RSA with a modulus of
/// 2048 to 8192 bits and an odd public exponent of at least 3, EC on P-256 or P-384 with a point on the
/// curve, OKP Ed25519, and symmetric `oct` keys only where the set's limits allow them explicitly (a
/// ``RemoteJWKSSource`` never does: a published secret is no secret). An `oct` key verifies HMAC tokens that
/// name its `kid`.
public struct JWK: Sendable {
    enum Material: Sendable {
        case rsa(_RSA.Signing.PublicKey)
        case p256(P256.Signing.PublicKey)
        case p384(P384.Signing.PublicKey)
        case ed25519(Curve25519.Signing.PublicKey)
        case symmetric(SymmetricKey)
    }

    /// The key's `kid`, if it has one.
    public let keyID: String?
    /// The key's own `alg`, if it names one: the key then verifies that algorithm only.
    public let algorithm: JWSAlgorithm?
    /// The key type: `RSA`, `EC`, `OKP` or `oct`.
    package let keyType: String
    /// The RFC 7638 thumbprint (SHA-256, base64url): identifies the key material whatever its `kid`.
    public let thumbprint: String
    let material: Material

    /// Why a key in a set could not be used.
    enum Failure: String, Error {
        case notAnObject, unsupportedKeyType, notForSigning, unsupportedAlgorithm, invalidKeyID
        case missingParameter, invalidBase64URL, rsaModulusTooSmall, rsaModulusTooLarge, rsaExponentInvalid
        case unsupportedCurve, invalidCoordinates, pointNotOnCurve, symmetricKeyNotAllowed, rejectedByCrypto
    }

    /// Parses one member of a key set's `keys` array.
    init(_ value: JSONValue, allowsSymmetricKeys: Bool) throws(Failure) {
        guard let members = value.objectValue else { throw .notAnObject }
        func string(_ name: String) throws(Failure) -> String {
            guard let value = members[name]?.stringValue else { throw .missingParameter }
            return value
        }
        func bytes(_ name: String) throws(Failure) -> [UInt8] {
            guard let bytes = Base64URL.decode(try string(name)) else { throw .invalidBase64URL }
            return bytes
        }
        if let kid = members["kid"] {
            guard let kid = kid.stringValue, KeyID.isValid(kid) else { throw .invalidKeyID }
            keyID = kid
        } else {
            keyID = nil
        }
        if let use = members["use"] {
            guard use.stringValue == "sig" else { throw .notForSigning }
        }
        if let operations = members["key_ops"] {
            guard operations.arrayValue?.contains(.string("verify")) == true else { throw .notForSigning }
        }
        if let alg = members["alg"] {
            guard let name = alg.stringValue, let algorithm = JWSAlgorithm(name: name) else {
                throw .unsupportedAlgorithm
            }
            self.algorithm = algorithm
        } else {
            algorithm = nil
        }
        let kty = try string("kty")
        keyType = kty
        switch kty {
        case "RSA":
            let nText = try string("n")
            let eText = try string("e")
            guard var n = Base64URL.decode(nText), var e = Base64URL.decode(eText) else { throw .invalidBase64URL }
            n = Array(n.drop { $0 == 0 })
            e = Array(e.drop { $0 == 0 })
            let bits = n.isEmpty ? 0 : (n.count - 1) * 8 + (8 - n[0].leadingZeroBitCount)
            guard bits >= 2048 else { throw .rsaModulusTooSmall }
            guard bits <= 8192 else { throw .rsaModulusTooLarge }
            // An exponent of 1 makes every "signature" its own message; even or huge exponents are invalid too.
            guard !e.isEmpty, e.count <= 4, e.last! & 1 == 1, e.count > 1 || e[0] >= 3 else {
                throw .rsaExponentInvalid
            }
            if let algorithm, algorithm.family != .rsaPKCS1, algorithm.family != .rsaPSS {
                throw .unsupportedAlgorithm
            }
            do {
                material = .rsa(try _RSA.Signing.PublicKey(n: n, e: e))
            } catch {
                throw .rejectedByCrypto
            }
            thumbprint = Self.thumbprint([("e", eText), ("kty", kty), ("n", nText)])
        case "EC":
            let crv = try string("crv")
            let size: Int
            switch crv {
            case "P-256": size = 32
            case "P-384": size = 48
            default: throw .unsupportedCurve
            }
            let xText = try string("x")
            let yText = try string("y")
            guard let x = Base64URL.decode(xText), let y = Base64URL.decode(yText) else { throw .invalidBase64URL }
            guard x.count == size, y.count == size else { throw .invalidCoordinates }
            let point = [0x04] + x + y
            do {
                if size == 32 {
                    guard algorithm == nil || algorithm == .es256 else { throw Failure.unsupportedAlgorithm }
                    material = .p256(try P256.Signing.PublicKey(x963Representation: point))
                } else {
                    guard algorithm == nil || algorithm == .es384 else { throw Failure.unsupportedAlgorithm }
                    material = .p384(try P384.Signing.PublicKey(x963Representation: point))
                }
            } catch let failure as Failure {
                throw failure
            } catch {
                throw .pointNotOnCurve
            }
            thumbprint = Self.thumbprint([("crv", crv), ("kty", kty), ("x", xText), ("y", yText)])
        case "OKP":
            let crv = try string("crv")
            guard crv == "Ed25519" else { throw .unsupportedCurve }
            guard algorithm == nil || algorithm == .edDSA else { throw .unsupportedAlgorithm }
            let xText = try string("x")
            guard let x = Base64URL.decode(xText) else { throw .invalidBase64URL }
            guard x.count == 32 else { throw .invalidCoordinates }
            do {
                material = .ed25519(try Curve25519.Signing.PublicKey(rawRepresentation: x))
            } catch {
                throw .rejectedByCrypto
            }
            thumbprint = Self.thumbprint([("crv", crv), ("kty", kty), ("x", xText)])
        case "oct":
            guard allowsSymmetricKeys else { throw .symmetricKeyNotAllowed }
            guard algorithm == nil || algorithm?.family == .hmac else { throw .unsupportedAlgorithm }
            let kText = try string("k")
            let k = try bytes("k")
            guard !k.isEmpty else { throw .missingParameter }
            material = .symmetric(SymmetricKey(data: k))
            thumbprint = Self.thumbprint([("k", kText), ("kty", kty)])
        default:
            throw .unsupportedKeyType
        }
    }

    /// RFC 7638: SHA-256 of the required members, sorted, without whitespace.
    private static func thumbprint(_ members: [(String, String)]) -> String {
        let json = "{" + members.map { #""\#($0.0)":"\#($0.1)""# }.joined(separator: ",") + "}"
        return Base64URL.encode(SHA256.hash(data: Array(json.utf8)))
    }

    /// Whether this key may verify `algorithm`: the key type and curve must match, and the key's own `alg`
    /// (if any) must be the same. Only an `oct` key verifies HMAC, so an asymmetric key's bytes never serve as
    /// an HMAC secret.
    func canVerify(_ algorithm: JWSAlgorithm) -> Bool {
        if let own = self.algorithm, own != algorithm { return false }
        switch (material, algorithm.family) {
        case (.rsa, .rsaPKCS1), (.rsa, .rsaPSS), (.p256, .ecdsaP256), (.p384, .ecdsaP384), (.ed25519, .ed25519),
            (.symmetric, .hmac):
            return true
        default:
            return false
        }
    }

    /// Checks `signature` over `input` (the signing input, read in place); `false` for any mismatch or malformed
    /// signature, never a trap. `inputSHA256`, when given, is the SHA-256 of `input`, already computed.
    func isValidSignature(
        _ signature: [UInt8], for input: UnsafeRawBufferPointer, algorithm: JWSAlgorithm,
        inputSHA256: SHA256Digest? = nil
    ) -> Bool {
        guard canVerify(algorithm) else { return false }
        switch material {
        case .rsa(let key):
            let rsaSignature = _RSA.Signing.RSASignature(rawRepresentation: signature)
            let padding: _RSA.Signing.Padding = algorithm.family == .rsaPSS ? .PSS : .insecurePKCS1v1_5
            switch algorithm.hash {
            case .sha256:
                return key.isValidSignature(
                    rsaSignature, for: inputSHA256 ?? SHA256.hash(data: input), padding: padding)
            case .sha384:
                return key.isValidSignature(rsaSignature, for: SHA384.hash(data: input), padding: padding)
            case .sha512:
                return key.isValidSignature(rsaSignature, for: SHA512.hash(data: input), padding: padding)
            }
        case .p256(let key):
            guard let ecdsa = try? P256.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(ecdsa, for: inputSHA256 ?? SHA256.hash(data: input))
        case .p384(let key):
            guard let ecdsa = try? P384.Signing.ECDSASignature(rawRepresentation: signature) else { return false }
            return key.isValidSignature(ecdsa, for: SHA384.hash(data: input))
        case .ed25519(let key):
            return key.isValidSignature(signature, for: input)
        case .symmetric(let key):
            return Self.isValidHMAC(signature, for: input, key: key, hash: algorithm.hash)
        }
    }

    /// Checks an HMAC `signature` over `input` in constant time.
    static func isValidHMAC(
        _ signature: [UInt8], for input: UnsafeRawBufferPointer, key: SymmetricKey, hash: JWSAlgorithm.Hash
    ) -> Bool {
        switch hash {
        case .sha256: HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: input, using: key)
        case .sha384: HMAC<SHA384>.isValidAuthenticationCode(signature, authenticating: input, using: key)
        case .sha512: HMAC<SHA512>.isValidAuthenticationCode(signature, authenticating: input, using: key)
        }
    }
}
