extension TokenRules {
    /// The rules of a verifier's configuration.
    init(_ configuration: TokenVerifier.Configuration) {
        self.init(
            issuer: configuration.issuer, audiences: configuration.audiences, algorithms: configuration.algorithms,
            leeway: configuration.leeway, maximumTokenAge: configuration.maximumTokenAge,
            requiredClaims: configuration.requiredClaims, requiredType: configuration.requiredType,
            allowedParties: configuration.allowedParties, hmacConfigured: configuration.hmacSecret != nil)
    }
}
