import AuthToken
import Crypto
import Foundation
import TokenRefresh
import TokenVerification

/// The ID token checks of OpenID Connect Core 1.0 section 3.1.3.7 (and 3.3.2.11 for `c_hash`): the signature,
/// `iss`, `aud`, `exp` and `iat` by ``TokenVerifier``; then `azp`, `nonce`, `at_hash` and `c_hash` here.
struct IDTokenCheck: Sendable {
    let verifier: TokenVerifier
    let clientID: String

    init(issuer: String, clientID: String, keySource: any JWKSSource, now: @escaping @Sendable () -> Date) {
        self.clientID = clientID
        verifier = TokenVerifier(
            configuration: .init(
                issuer: issuer, audience: .oneOf([clientID]), algorithms: JWSAlgorithm.asymmetric,
                // A phone's clock may be off by a little; more than two minutes and the token is refused.
                leeway: .seconds(120), requiredClaims: ["iat"], allowedParties: [clientID], tokenCacheCapacity: 0),
            keySource: keySource, now: now)
    }

    /// The same checks as of `date`: a stored ID token, verified as it was when it arrived (its `exp` has usually
    /// passed at the next launch; its signature, issuer and audience have not changed).
    func asOf(_ date: Date) -> IDTokenCheck {
        IDTokenCheck(
            verifier: TokenVerifier(
                configuration: verifier.configuration, keySource: verifier.keySource, now: { date }),
            clientID: clientID)
    }

    private init(verifier: TokenVerifier, clientID: String) {
        self.verifier = verifier
        self.clientID = clientID
    }

    /// The verified claims of `idToken`, sent in answer to a request with `nonce`.
    ///
    /// - Parameters:
    ///   - nonce: The nonce of the authorization request, or `nil` when none was sent (a refresh, a device grant).
    ///   - accessToken: The access token issued with it, for `at_hash`.
    ///   - code: The authorization code, for `c_hash`.
    func verify(
        _ idToken: String, nonce: String?, accessToken: String?, code: String?
    ) async throws(SignInError) -> VerifiedClaims {
        let claims: VerifiedClaims
        do {
            claims = try await verifier.verify(idToken)
        } catch {
            throw SignInError.idTokenRejected.with(underlying: error)
        }
        // 3.1.3.7 items 4 and 5: with several audiences, `azp` must be there (and be this client, which the
        // verifier's `allowedParties` checked).
        if claims.audience.count > 1, claims.authorizedParty == nil { throw .idTokenRejected }
        if let nonce {
            guard let sent = claims.string("nonce"), Self.equal(sent, nonce) else { throw .nonceMismatch }
        }
        if let hash = claims.string("at_hash"), let accessToken {
            guard Self.equal(hash, Self.halfHash(accessToken, algorithm: claims.algorithm)) else {
                throw .idTokenRejected
            }
        }
        if let hash = claims.string("c_hash"), let code {
            guard Self.equal(hash, Self.halfHash(code, algorithm: claims.algorithm)) else { throw .idTokenRejected }
        }
        return claims
    }

    /// The user the verified claims describe.
    static func user(_ claims: VerifiedClaims) -> AuthUser {
        AuthUser(
            id: claims.subject, firstName: claims.string("given_name"), lastName: claims.string("family_name"),
            name: claims.string("name"), email: claims.string("email"), imageURL: claims.string("picture"),
            sessionID: claims.sessionID)
    }

    /// base64url of the left half of the hash of `text`, with the hash of the token's algorithm (OIDC Core
    /// 3.1.3.6; SHA-512 for EdDSA with Ed25519).
    static func halfHash(_ text: String, algorithm: JWSAlgorithm) -> String {
        let data = Data(text.utf8)
        let digest: [UInt8]
        if algorithm.name.hasSuffix("384") {
            digest = Array(SHA384.hash(data: data))
        } else if algorithm.name.hasSuffix("512") || algorithm == .edDSA {
            digest = Array(SHA512.hash(data: data))
        } else {
            digest = Array(SHA256.hash(data: data))
        }
        return PKCE.base64URL(Data(digest.prefix(digest.count / 2)))
    }

    /// Compares without stopping at the first difference.
    static func equal(_ lhs: String, _ rhs: String) -> Bool {
        let left = Array(lhs.utf8)
        let right = Array(rhs.utf8)
        guard left.count == right.count else { return false }
        var difference: UInt8 = 0
        for index in left.indices { difference |= left[index] ^ right[index] }
        return difference == 0
    }
}
