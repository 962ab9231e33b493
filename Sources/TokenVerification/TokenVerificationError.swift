/// Why a token was not accepted, or why keys could not be had. Safe to log: no description, property or
/// challenge ever contains token text, a claim value or key material.
///
/// Compare with the static members: `error == .expired`, `error == .invalidClaim("exp")`. Every error has a
/// stable ``reason`` code, and maps to an RFC 6750 challenge through ``wwwAuthenticate``.
public struct TokenVerificationError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: String, Hashable, Sendable, CaseIterable {
        // The token's shape, checked before any key is looked up.
        case malformedToken, tokenTooLong, duplicateJSONName, unsignedToken, algorithmNotAllowed
        case unsupportedCriticalHeader, untrustedKeyReference, invalidKeyID, typeMismatch
        // Claims, also checked before any key is looked up.
        case missingClaim, invalidClaim, expired, notYetValid, issuedInFuture, tokenTooOld
        case issuerMismatch, audienceMismatch, partyNotAllowed
        // Keys and the signature.
        case missingKeyID, unknownKeyID, keyAlgorithmMismatch, weakKey, invalidSignature, unusableKey
        // The key set.
        case keySetUnavailable, keySetInvalid, keySetTooLarge, tooManyKeys, fetchTimedOut, insecureKeySetURL
        // The Authorization header (see BearerAuthenticator).
        case missingAuthorization
        // RFC 7662 introspection (see IntrospectionVerifier).
        case tokenInactive, introspectionUnavailable, introspectionClientRejected, insecureIntrospectionURL
        // RFC 9449 DPoP (see DPoPVerifier and DPoPAuthenticator).
        case invalidDPoPProof, dpopProofReplayed, useDPoPNonce, dpopKeyMismatch, dpopTokenNotBound
        case dpopBoundTokenAsBearer, dpopReplayCacheUnavailable
    }
    private let code: Code
    /// For ``missingClaim(_:)`` and ``invalidClaim(_:)``: the claim's name (never its value).
    public let claim: String?

    private init(_ code: Code, claim: String? = nil) {
        self.code = code
        self.claim = claim
    }

    /// The token is not a JWS in compact serialization: not three base64url segments, a header or payload
    /// that is not a JSON object, or a signature of the wrong length for its algorithm.
    public static let malformedToken = TokenVerificationError(.malformedToken)
    /// The token is longer than ``TokenVerifier/Configuration/maximumTokenLength``.
    public static let tokenTooLong = TokenVerificationError(.tokenTooLong)
    /// A JSON object in the header, the claims or a key set names a member twice (RFC 7515 section 5.2).
    public static let duplicateJSONName = TokenVerificationError(.duplicateJSONName)
    /// The header says `alg: none` (in any letter case): an unsigned token is never accepted.
    public static let unsignedToken = TokenVerificationError(.unsignedToken)
    /// The header's `alg` is missing, unknown, or not in ``TokenVerifier/Configuration/algorithms``.
    public static let algorithmNotAllowed = TokenVerificationError(.algorithmNotAllowed)
    /// The header has a `crit` member: no JWS extension is understood here, so every one is refused
    /// (RFC 7515 section 4.1.11).
    public static let unsupportedCriticalHeader = TokenVerificationError(.unsupportedCriticalHeader)
    /// The header names its own key (`jku`, `x5u`, `jwk` or `x5c`). Those are never fetched or trusted; a token
    /// carrying one is refused, so a key from an attacker cannot even be considered.
    public static let untrustedKeyReference = TokenVerificationError(.untrustedKeyReference)
    /// The header's `kid` is not a string of at most 256 characters from `A-Z a-z 0-9 - _ . : + / =`
    /// without `..` (so no path or SQL syntax ever reaches a key lookup).
    public static let invalidKeyID = TokenVerificationError(.invalidKeyID)
    /// The header's `typ` is not ``TokenVerifier/Configuration/requiredType``.
    public static let typeMismatch = TokenVerificationError(.typeMismatch)
    /// A claim the configuration requires is absent.
    ///
    /// - Parameter name: The claim's name.
    /// - Returns: The error.
    public static func missingClaim(_ name: String) -> TokenVerificationError {
        TokenVerificationError(.missingClaim, claim: name)
    }
    /// A claim has the wrong type or a value out of range (`exp` as a string, `aud` as a number).
    ///
    /// - Parameter name: The claim's name.
    /// - Returns: The error.
    public static func invalidClaim(_ name: String) -> TokenVerificationError {
        TokenVerificationError(.invalidClaim, claim: name)
    }
    /// `exp` has passed, beyond the leeway.
    public static let expired = TokenVerificationError(.expired)
    /// `nbf` is in the future, beyond the leeway.
    public static let notYetValid = TokenVerificationError(.notYetValid)
    /// `iat` is in the future, beyond the leeway.
    public static let issuedInFuture = TokenVerificationError(.issuedInFuture)
    /// `iat` is longer ago than ``TokenVerifier/Configuration/maximumTokenAge``.
    public static let tokenTooOld = TokenVerificationError(.tokenTooOld)
    /// `iss` is not exactly ``TokenVerifier/Configuration/issuer``.
    public static let issuerMismatch = TokenVerificationError(.issuerMismatch)
    /// `aud` names none of ``TokenVerifier/Configuration/audience``.
    public static let audienceMismatch = TokenVerificationError(.audienceMismatch)
    /// `azp` is not one of ``TokenVerifier/Configuration/allowedParties``.
    public static let partyNotAllowed = TokenVerificationError(.partyNotAllowed)
    /// The token has no `kid` and the key set has more than one key that could verify it.
    public static let missingKeyID = TokenVerificationError(.missingKeyID)
    /// No key in the key set has the token's `kid`, also after the refetch the cooldown allowed (if any).
    public static let unknownKeyID = TokenVerificationError(.unknownKeyID)
    /// The key set has a key with the token's `kid`, but skipped it as unusable (an RSA modulus under 2048 bits,
    /// a bad exponent, a point off its curve, an unsupported curve: ``JWKSet/skipped`` says which).
    public static let unusableKey = TokenVerificationError(.unusableKey)
    /// The key with the token's `kid` cannot verify the header's `alg`: another key type or curve, or the
    /// key's own `alg` differs. The algorithm comes from the key and the allow-list, never the token alone.
    public static let keyAlgorithmMismatch = TokenVerificationError(.keyAlgorithmMismatch)
    /// The configured HMAC secret is shorter than the hash of the token's algorithm (RFC 7518 section 3.2).
    public static let weakKey = TokenVerificationError(.weakKey)
    /// The signature does not verify with the key.
    public static let invalidSignature = TokenVerificationError(.invalidSignature)
    /// No usable key set: the first fetch failed, or the last good set is older than the staleness bound.
    /// A problem of the server, not of the token (``BearerAuthenticator`` answers 503).
    public static let keySetUnavailable = TokenVerificationError(.keySetUnavailable)
    /// A key set document is not a JSON object with a `keys` array (or a discovery document has no
    /// `jwks_uri`).
    public static let keySetInvalid = TokenVerificationError(.keySetInvalid)
    /// A key set document is larger than ``JWKSet/Limits/maximumBytes``.
    public static let keySetTooLarge = TokenVerificationError(.keySetTooLarge)
    /// A key set has more keys than ``JWKSet/Limits/maximumKeys``.
    public static let tooManyKeys = TokenVerificationError(.tooManyKeys)
    /// Fetching the key set took longer than ``RemoteJWKSSource/Configuration/fetchTimeout``.
    public static let fetchTimedOut = TokenVerificationError(.fetchTimedOut)
    /// The JWKS URL, the discovery issuer or the discovered `jwks_uri` is plain `http` to a host that is not
    /// loopback, so nothing was fetched (``RemoteJWKSSource/Configuration/dangerouslyAllowsPlainHTTP`` turns
    /// this off).
    public static let insecureKeySetURL = TokenVerificationError(.insecureKeySetURL)
    /// The request has no `Authorization: Bearer` credential.
    public static let missingAuthorization = TokenVerificationError(.missingAuthorization)
    /// The issuer's introspection endpoint answered `"active": false`: the token is unknown, revoked or expired
    /// there (RFC 7662 section 2.2).
    public static let tokenInactive = TokenVerificationError(.tokenInactive)
    /// The introspection endpoint could not answer: unreachable, too slow, a status other than 200, an answer
    /// that is not a JSON object with a Boolean `active`, or already
    /// ``IntrospectionVerifier/Configuration/maximumConcurrentCalls`` calls in flight. A problem of the server, not
    /// of the token (``BearerAuthenticator`` answers 503).
    public static let introspectionUnavailable = TokenVerificationError(.introspectionUnavailable)
    /// The introspection endpoint refused this resource server's own credentials (401 or 403): a configuration
    /// error to fix, not a problem of the token (``BearerAuthenticator`` answers 503).
    public static let introspectionClientRejected = TokenVerificationError(.introspectionClientRejected)
    /// The introspection endpoint is plain `http` to a host that is not loopback, so no token or client secret was
    /// sent (``IntrospectionVerifier/Configuration/dangerouslyAllowsPlainHTTP`` turns this off).
    public static let insecureIntrospectionURL = TokenVerificationError(.insecureIntrospectionURL)

    /// The `DPoP` proof is not acceptable (RFC 9449 section 4.3); ``claim`` names the part that failed, never its
    /// value: `proof` (missing, repeated, too long or not a JWS), `typ`, `alg`, `jwk`, `crit`, `signature`, `jti`,
    /// `htm`, `htu`, `iat` or `ath`. Answered with `WWW-Authenticate: DPoP error="invalid_dpop_proof"`.
    ///
    /// - Parameter part: The header member, claim or part that failed.
    /// - Returns: The error.
    public static func invalidDPoPProof(_ part: String) -> TokenVerificationError {
        TokenVerificationError(.invalidDPoPProof, claim: part)
    }
    /// The proof's `jti` was already spent for its key: a replayed proof (`invalid_dpop_proof`).
    public static let dpopProofReplayed = TokenVerificationError(.dpopProofReplayed)
    /// The proof carries no `nonce`, or one this server did not issue or that is too old: the client must retry
    /// with the nonce of the answer's `DPoP-Nonce` header (`use_dpop_nonce`, RFC 9449 section 9).
    public static let useDPoPNonce = TokenVerificationError(.useDPoPNonce)
    /// The proof was signed with a key other than the one the access token is bound to (its `cnf.jkt`)
    /// (`invalid_dpop_proof`).
    public static let dpopKeyMismatch = TokenVerificationError(.dpopKeyMismatch)
    /// The token came with the `DPoP` scheme but is bound to no key (no `cnf.jkt`) (`invalid_token`).
    public static let dpopTokenNotBound = TokenVerificationError(.dpopTokenNotBound)
    /// A DPoP-bound token (one with `cnf.jkt`) came with the `Bearer` scheme, or the `Bearer` scheme is not
    /// accepted here (`invalid_token`, RFC 9449 section 7.2).
    public static let dpopBoundTokenAsBearer = TokenVerificationError(.dpopBoundTokenAsBearer)
    /// The replay cache could not answer, so the proof's `jti` could not be spent: the request is refused (fail
    /// closed) as a problem of the server, not of the proof (a 503, as for an unavailable key set).
    public static let dpopReplayCacheUnavailable = TokenVerificationError(.dpopReplayCacheUnavailable)

    /// The RFC 9449 section 7.1 `error` for a DPoP failure: `invalid_dpop_proof`, `use_dpop_nonce` or
    /// `invalid_token`; `nil` for an error that is no DPoP failure of the request.
    package var dpopErrorCode: String? {
        switch code {
        case .invalidDPoPProof, .dpopProofReplayed, .dpopKeyMismatch: "invalid_dpop_proof"
        case .useDPoPNonce: "use_dpop_nonce"
        case .dpopTokenNotBound, .dpopBoundTokenAsBearer: "invalid_token"
        case .dpopReplayCacheUnavailable, .missingAuthorization: nil
        default: isTokenProblem ? "invalid_token" : nil
        }
    }

    /// One error of each code, for the tests that check every code has its messages.
    package static var everyCode: [TokenVerificationError] { Code.allCases.map { TokenVerificationError($0) } }
    /// The key of the error's message in the translations: `TokenVerificationError.<code>`.
    package var messageKey: String { "TokenVerificationError.\(code.rawValue)" }

    /// A stable code for logs and metrics, such as `expired` or `unknownKeyID`.
    public var reason: String { code.rawValue }

    /// Whether the token itself is at fault (a 401), rather than the verifier's access to keys or to the
    /// introspection endpoint (a 503).
    public var isTokenProblem: Bool {
        switch code {
        case .keySetUnavailable, .keySetInvalid, .keySetTooLarge, .tooManyKeys, .fetchTimedOut, .insecureKeySetURL:
            false
        case .introspectionUnavailable, .introspectionClientRejected, .insecureIntrospectionURL: false
        case .dpopReplayCacheUnavailable: false
        default: true
        }
    }

    /// A fixed English sentence for `error_description`: never token text, only characters RFC 6750 allows.
    public var safeDescription: String {
        switch code {
        case .malformedToken: "The token is malformed"
        case .tokenTooLong: "The token is too long"
        case .duplicateJSONName: "The token repeats a JSON member"
        case .unsignedToken: "Unsigned tokens are not accepted"
        case .algorithmNotAllowed: "The signing algorithm is not accepted"
        case .unsupportedCriticalHeader: "The token has an unsupported critical header"
        case .untrustedKeyReference: "The token references its own key"
        case .invalidKeyID: "The key ID is invalid"
        case .typeMismatch: "The token type is not accepted"
        case .missingClaim: "The token lacks a required claim"
        case .invalidClaim: "The token has an invalid claim"
        case .expired: "The token has expired"
        case .notYetValid: "The token is not valid yet"
        case .issuedInFuture: "The token is issued in the future"
        case .tokenTooOld: "The token is too old"
        case .issuerMismatch: "The token issuer is not accepted"
        case .audienceMismatch: "The token audience is not accepted"
        case .partyNotAllowed: "The authorized party is not accepted"
        case .missingKeyID: "The token has no key ID"
        case .unknownKeyID: "The signing key is unknown"
        case .keyAlgorithmMismatch: "The key does not match the algorithm"
        case .weakKey: "The key is too weak for the algorithm"
        case .invalidSignature: "The signature is invalid"
        case .unusableKey: "The signing key is not usable"
        case .keySetUnavailable, .keySetInvalid, .keySetTooLarge, .tooManyKeys, .fetchTimedOut, .insecureKeySetURL:
            "The signing keys are unavailable"
        case .missingAuthorization: "No bearer token"
        case .tokenInactive: "The token is not active"
        case .introspectionUnavailable, .introspectionClientRejected, .insecureIntrospectionURL:
            "Token introspection is unavailable"
        case .invalidDPoPProof: "The DPoP proof is invalid"
        case .dpopProofReplayed: "The DPoP proof was already used"
        case .useDPoPNonce: "The DPoP proof needs the server nonce"
        case .dpopKeyMismatch: "The DPoP proof key does not match the token"
        case .dpopTokenNotBound: "The token is not bound to a DPoP key"
        case .dpopBoundTokenAsBearer: "The token must be sent with the DPoP scheme"
        case .dpopReplayCacheUnavailable: "DPoP replay checking is unavailable"
        }
    }

    /// The RFC 6750 challenge for a 401: `Bearer error="invalid_token", error_description="..."`, or a bare
    /// `Bearer` for a request without a credential (section 3.1); `nil` for a problem of the key set or the
    /// introspection endpoint. A DPoP failure gets RFC 9449's `DPoP error="...", error_description="..."` (a
    /// ``DPoPAuthenticator`` adds the accepted `algs`).
    public var wwwAuthenticate: String? {
        if code == .missingAuthorization { return "Bearer" }
        switch code {
        case .invalidDPoPProof, .dpopProofReplayed, .useDPoPNonce, .dpopKeyMismatch, .dpopTokenNotBound,
            .dpopBoundTokenAsBearer:
            return #"DPoP error="\#(dpopErrorCode ?? "invalid_token")", error_description="\#(safeDescription)""#
        default: break
        }
        guard isTokenProblem else { return nil }
        return #"Bearer error="invalid_token", error_description="\#(safeDescription)""#
    }

    /// `TokenVerificationError.<reason>`, with the claim name for claim errors; never a value.
    public var description: String {
        var text = "TokenVerificationError.\(code.rawValue)"
        if let claim { text += "(\(claim))" }
        return text
    }
}
