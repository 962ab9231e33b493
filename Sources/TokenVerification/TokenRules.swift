import AuthToken
import Foundation

/// The header and claim checks of a ``TokenVerifier``, apart from any key or cryptography (so the fuzz target
/// can run them): everything the verifier decides before it looks a key up.
struct TokenRules: Sendable {
    let issuer: String
    let audiences: Set<String>?
    let algorithms: Set<JWSAlgorithm>
    let leeway: Duration
    let maximumTokenAge: Duration?
    let requiredClaims: [String]
    let requiredType: String?
    let allowedParties: Set<String>?
    let hmacConfigured: Bool

    init(
        issuer: String, audiences: Set<String>?, algorithms: Set<JWSAlgorithm>, leeway: Duration,
        maximumTokenAge: Duration?, requiredClaims: Set<String>, requiredType: String?, allowedParties: Set<String>?,
        hmacConfigured: Bool
    ) {
        self.issuer = issuer
        self.audiences = audiences
        self.algorithms = algorithms
        self.leeway = leeway
        self.maximumTokenAge = maximumTokenAge
        self.requiredClaims = requiredClaims.sorted()
        self.requiredType = requiredType
        self.allowedParties = allowedParties
        self.hmacConfigured = hmacConfigured
    }

    /// The header checks: the algorithm, `crit`, key references, `kid` and `typ`.
    func checkHeader(_ header: [String: JSONValue]) throws(TokenVerificationError) -> (JWSAlgorithm, String?) {
        guard let name = header["alg"]?.stringValue else { throw .algorithmNotAllowed }
        guard name.lowercased() != "none" else { throw .unsignedToken }
        guard let algorithm = JWSAlgorithm(name: name), algorithms.contains(algorithm) else {
            throw .algorithmNotAllowed
        }
        if algorithm.family == .hmac, !hmacConfigured { throw .algorithmNotAllowed }
        guard header["crit"] == nil else { throw .unsupportedCriticalHeader }
        for name in ["jku", "x5u", "jwk", "x5c"] where header[name] != nil { throw .untrustedKeyReference }
        var keyID: String?
        if let kid = header["kid"] {
            guard let kid = kid.stringValue, KeyID.isValid(kid) else { throw .invalidKeyID }
            keyID = kid
        }
        if let required = requiredType {
            guard let type = header["typ"]?.stringValue, Self.mediaType(type) == Self.mediaType(required) else {
                throw .typeMismatch
            }
        }
        return (algorithm, keyID)
    }

    /// RFC 7515 section 4.1.9: compared without case, `application/` optional.
    private static func mediaType(_ type: String) -> String {
        let lower = type.lowercased()
        return lower.hasPrefix("application/") ? String(lower.dropFirst("application/".count)) : lower
    }

    /// The claim checks, in a fixed order.
    func checkClaims(_ claims: [String: JSONValue], now: Date) throws(TokenVerificationError) {
        for name in requiredClaims where claims[name] == nil { throw .missingClaim(name) }
        guard let subject = claims["sub"] else { throw .missingClaim("sub") }
        guard subject.stringValue != nil else { throw .invalidClaim("sub") }
        guard let issuerClaim = claims["iss"] else { throw .missingClaim("iss") }
        guard let tokenIssuer = issuerClaim.stringValue else { throw .invalidClaim("iss") }
        guard tokenIssuer == self.issuer else { throw .issuerMismatch }

        let seconds = now.timeIntervalSince1970
        let leeway = Self.seconds(self.leeway)
        if let value = claims["exp"] {
            guard let expiration = NumericDate.seconds(value) else { throw .invalidClaim("exp") }
            guard seconds < expiration + leeway else { throw .expired }
        }
        if let value = claims["nbf"] {
            guard let notBefore = NumericDate.seconds(value) else { throw .invalidClaim("nbf") }
            guard seconds + leeway >= notBefore else { throw .notYetValid }
        }
        if let value = claims["iat"] {
            guard let issuedAt = NumericDate.seconds(value) else { throw .invalidClaim("iat") }
            guard issuedAt <= seconds + leeway else { throw .issuedInFuture }
            if let maximumAge = maximumTokenAge {
                guard seconds - issuedAt <= Self.seconds(maximumAge) + leeway else { throw .tokenTooOld }
            }
        } else if maximumTokenAge != nil {
            throw .missingClaim("iat")
        }

        if let audiences = self.audiences {
            guard let value = claims["aud"] else { throw .missingClaim("aud") }
            let names: [String]
            switch value {
            case .string(let name): names = [name]
            case .array(let elements):
                let strings = elements.compactMap(\.stringValue)
                guard strings.count == elements.count else { throw .invalidClaim("aud") }
                names = strings
            default: throw .invalidClaim("aud")
            }
            guard names.contains(where: audiences.contains) else { throw .audienceMismatch }
        }
        if let parties = allowedParties, let value = claims["azp"] {
            guard let party = value.stringValue else { throw .invalidClaim("azp") }
            guard parties.contains(party) else { throw .partyNotAllowed }
        }
        if let value = claims["sid"], value.stringValue == nil { throw .invalidClaim("sid") }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
