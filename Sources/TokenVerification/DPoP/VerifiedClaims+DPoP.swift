import AuthToken

extension VerifiedClaims {
    /// `cnf.jkt` (RFC 9449 section 6): the thumbprint of the DPoP key the token is bound to, from a JWT's claims or
    /// an introspection answer; `nil` for a token bound to no key.
    public var confirmationKeyThumbprint: String? {
        members["cnf"]?.objectValue?["jkt"]?.stringValue
    }
}
