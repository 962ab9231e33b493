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
    let requiresExpiration: Bool
    let requiresSubject: Bool
    let requiredType: String?
    let allowedParties: Set<String>?
    let requiresAuthorizedParty: Bool
    let hmacConfigured: Bool
    /// `leeway` and `maximumTokenAge` in seconds, converted once.
    private let leewaySeconds: Double
    private let maximumAgeSeconds: Double?

    init(
        issuer: String, audiences: Set<String>?, algorithms: Set<JWSAlgorithm>, leeway: Duration,
        maximumTokenAge: Duration?, requiredClaims: Set<String>, requiredType: String?, allowedParties: Set<String>?,
        hmacConfigured: Bool, requiresExpiration: Bool = true, requiresSubject: Bool = true,
        requiresAuthorizedParty: Bool = false
    ) {
        self.issuer = issuer
        self.audiences = audiences
        self.algorithms = algorithms
        self.leeway = leeway
        self.maximumTokenAge = maximumTokenAge
        // `exp` and `sub` follow their own switches: a set that names them changes nothing, one that leaves them
        // out does not drop them.
        self.requiredClaims = requiredClaims.subtracting(["exp", "sub"]).sorted()
        self.requiresExpiration = requiresExpiration || requiredClaims.contains("exp")
        self.requiresSubject = requiresSubject || requiredClaims.contains("sub")
        self.requiredType = requiredType
        self.allowedParties = allowedParties
        self.requiresAuthorizedParty = requiresAuthorizedParty
        self.hmacConfigured = hmacConfigured
        leewaySeconds = Self.seconds(leeway)
        maximumAgeSeconds = maximumTokenAge.map(Self.seconds)
    }

    /// The header checks: the algorithm, `crit`, key references, `kid` and `typ`.
    func checkHeader(_ header: [String: JSONValue]) throws(TokenVerificationError) -> (JWSAlgorithm, String?) {
        // One pass over the members (a header has three or four) instead of a hashed lookup per name; the
        // checks below then run in their fixed order.
        var alg: JSONValue?
        var kid: JSONValue?
        var typ: JSONValue?
        var hasCritical = false
        var hasKeyReference = false
        for (name, value) in header {
            switch name {
            case "alg": alg = value
            case "kid": kid = value
            case "typ": typ = value
            case "crit": hasCritical = true
            case "jku", "x5u", "jwk", "x5c": hasKeyReference = true
            default: break
            }
        }
        guard let name = alg?.stringValue else { throw .algorithmNotAllowed }
        guard !Self.isNone(name) else { throw .unsignedToken }
        guard let algorithm = JWSAlgorithm(name: name), algorithms.contains(algorithm) else {
            throw .algorithmNotAllowed
        }
        if algorithm.family == .hmac, !hmacConfigured { throw .algorithmNotAllowed }
        guard !hasCritical else { throw .unsupportedCriticalHeader }
        guard !hasKeyReference else { throw .untrustedKeyReference }
        var keyID: String?
        if let kid {
            guard let kid = kid.stringValue, KeyID.isValid(kid) else { throw .invalidKeyID }
            keyID = kid
        }
        if let required = requiredType {
            guard let type = typ?.stringValue, Self.mediaType(type) == Self.mediaType(required) else {
                throw .typeMismatch
            }
        }
        return (algorithm, keyID)
    }

    /// Whether `name` is `none` in any letter case (no other string lowercases to it).
    private static func isNone(_ name: String) -> Bool {
        let utf8 = name.utf8
        return utf8.count == 4 && utf8.elementsEqual("none".utf8) { $0 | 0x20 == $1 }
    }

    /// RFC 7515 section 4.1.9: compared without case, `application/` optional.
    private static func mediaType(_ type: String) -> String {
        let lower = type.lowercased()
        return lower.hasPrefix("application/") ? String(lower.dropFirst("application/".count)) : lower
    }

    /// The claim checks, in a fixed order.
    ///
    /// - Returns: The token's times, so a verified-token cache hit repeats only the checks that depend on the
    ///   clock (``checkTimes(_:now:)``); every other check gives the same answer for the same claims.
    @discardableResult
    func checkClaims(_ claims: [String: JSONValue], now: Date) throws(TokenVerificationError) -> ClaimTimes {
        // One pass over the members for the registered claims, instead of a hashed lookup per name.
        var registered = RegisteredClaims()
        for (name, value) in claims {
            switch name {
            case "sub": registered.sub = value
            case "iss": registered.iss = value
            case "exp": registered.exp = value
            case "nbf": registered.nbf = value
            case "iat": registered.iat = value
            case "aud": registered.aud = value
            case "azp": registered.azp = value
            case "sid": registered.sid = value
            default: break
            }
        }
        if requiresExpiration, registered.exp == nil { throw .missingClaim("exp") }
        for name in requiredClaims where (registered[name] ?? claims[name]) == nil { throw .missingClaim(name) }
        if let subject = registered.sub {
            guard subject.stringValue != nil else { throw .invalidClaim("sub") }
        } else if requiresSubject {
            throw .missingClaim("sub")
        }
        guard let issuerClaim = registered.iss else { throw .missingClaim("iss") }
        guard let tokenIssuer = issuerClaim.stringValue else { throw .invalidClaim("iss") }
        guard tokenIssuer == self.issuer else { throw .issuerMismatch }

        // Each time claim's type, then its check, in this order, as ``checkTimes(_:now:)`` repeats them.
        let seconds = now.timeIntervalSince1970
        var times = ClaimTimes()
        if let value = registered.exp {
            guard let expiration = NumericDate.seconds(value) else { throw .invalidClaim("exp") }
            try checkExpiration(expiration, at: seconds)
            times.expiration = expiration
        }
        if let value = registered.nbf {
            guard let notBefore = NumericDate.seconds(value) else { throw .invalidClaim("nbf") }
            try checkNotBefore(notBefore, at: seconds)
            times.notBefore = notBefore
        }
        if let value = registered.iat {
            guard let issuedAt = NumericDate.seconds(value) else { throw .invalidClaim("iat") }
            try checkIssuedAt(issuedAt, at: seconds)
            times.issuedAt = issuedAt
        } else if maximumTokenAge != nil {
            throw .missingClaim("iat")
        }

        if let audiences = self.audiences {
            guard let value = registered.aud else { throw .missingClaim("aud") }
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
        if let value = registered.azp {
            guard let party = value.stringValue else { throw .invalidClaim("azp") }
            if let parties = allowedParties, !parties.contains(party) { throw .partyNotAllowed }
        } else if requiresAuthorizedParty {
            throw .missingClaim("azp")
        }
        if let value = registered.sid, value.stringValue == nil { throw .invalidClaim("sid") }
        return times
    }

    /// The checks that depend on the clock, for times that passed ``checkClaims(_:now:)`` before: `exp`, `nbf`,
    /// `iat` and the token age, each with the leeway, in the same order.
    func checkTimes(_ times: ClaimTimes, now: Date) throws(TokenVerificationError) {
        let seconds = now.timeIntervalSince1970
        if let expiration = times.expiration { try checkExpiration(expiration, at: seconds) }
        if let notBefore = times.notBefore { try checkNotBefore(notBefore, at: seconds) }
        if let issuedAt = times.issuedAt { try checkIssuedAt(issuedAt, at: seconds) }
    }

    private func checkExpiration(_ expiration: Double, at seconds: Double) throws(TokenVerificationError) {
        guard seconds < expiration + leewaySeconds else { throw .expired }
    }

    private func checkNotBefore(_ notBefore: Double, at seconds: Double) throws(TokenVerificationError) {
        guard seconds + leewaySeconds >= notBefore else { throw .notYetValid }
    }

    private func checkIssuedAt(_ issuedAt: Double, at seconds: Double) throws(TokenVerificationError) {
        guard issuedAt <= seconds + leewaySeconds else { throw .issuedInFuture }
        if let maximumAgeSeconds {
            guard seconds - issuedAt <= maximumAgeSeconds + leewaySeconds else { throw .tokenTooOld }
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}

/// A token's `exp`, `nbf` and `iat` in seconds since 1970, each `nil` when the token has none.
struct ClaimTimes: Sendable, Hashable {
    var expiration: Double?
    var notBefore: Double?
    var issuedAt: Double?
}

/// The registered claims the rules read, found in one pass over a payload's members.
private struct RegisteredClaims {
    var sub, iss, exp, nbf, iat, aud, azp, sid: JSONValue?

    /// The value of `name` if it is one of these claims and present; `nil` for any other name.
    subscript(name: String) -> JSONValue? {
        switch name {
        case "sub": sub
        case "iss": iss
        case "exp": exp
        case "nbf": nbf
        case "iat": iat
        case "aud": aud
        case "azp": azp
        case "sid": sid
        default: nil
        }
    }
}
