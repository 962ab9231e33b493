extension TokenRules {
    /// The rules of a verifier's configuration.
    ///
    /// - Parameters:
    ///   - configuration: The configuration.
    ///   - hmacConfigured: Whether an HMAC token can find a key at all (a secret, or a key source that may hold
    ///     `oct` keys); without one, HMAC tokens are refused with the header.
    init(_ configuration: TokenVerifier.Configuration, hmacConfigured: Bool) {
        self.init(
            issuer: configuration.issuer, audiences: configuration.audience.audiences,
            algorithms: configuration.algorithms, leeway: configuration.leeway,
            maximumTokenAge: configuration.maximumTokenAge, requiredClaims: configuration.requiredClaims,
            requiredType: configuration.requiredType, allowedParties: configuration.allowedParties,
            hmacConfigured: hmacConfigured, requiresExpiration: configuration.requiresExpiration,
            requiresSubject: configuration.requiresSubject,
            requiresAuthorizedParty: configuration.requiresAuthorizedParty)
    }
}
