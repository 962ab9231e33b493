/// Who a request is from, as a ``BearerAuthenticator`` verified it: the diet-app backend's
/// `req.auth = {userId: sub, sessionId: sid}`, with the full verified claims beside.
///
/// The server adapters put it where their framework looks: on a Hummingbird request context's `identity`, in
/// Vapor's `req.auth`.
public struct BearerIdentity: Sendable, Hashable, CustomStringConvertible {
    /// The token's `sub`.
    public let userId: String
    /// The token's `sid` (Clerk's session), if it has one.
    public let sessionId: String?
    /// Every verified claim, for custom claims (`claims.string("org_id")`, `claims.decode(MyClaims.self)`).
    public let claims: VerifiedClaims

    /// An identity from verified claims.
    ///
    /// - Parameter claims: Claims a ``TokenVerifier`` returned.
    public init(claims: VerifiedClaims) {
        self.claims = claims
        userId = claims.subject
        sessionId = claims.sessionID
    }

    /// Names what the identity holds, never the values (user and session IDs are personal data in logs).
    public var description: String {
        "BearerIdentity(algorithm: \(claims.algorithm), claims: \(claims.members.count))"
    }
}
