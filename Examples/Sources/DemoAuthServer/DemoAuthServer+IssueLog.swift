extension DemoAuthServer {
    /// One access token the server issued, without its text: when, for which login, and until when it is valid.
    ///
    /// `GET /debug/issued` answers the log (the last ``kept`` records) as JSON with snake_case names, so a demo
    /// can count how many access tokens actually expired while it ran, whatever the speed of the machine.
    public struct IssueRecord: Sendable, Hashable, Codable {
        /// How the token was obtained.
        public enum Grant: String, Sendable, Hashable, Codable {
            /// A password login (JSON login or password grant): the start of a family.
            case login
            /// A refresh of the family's refresh token.
            case refresh
        }

        /// How many records the server keeps.
        public static let kept = 10_000

        /// How the token was obtained.
        public var grant: Grant
        /// The first eight characters of the family (login) ID, as the server's log lines print it.
        public var family: String
        /// When it was issued, in seconds since 1970, to the server's clock (fractions included).
        public var issuedAt: Double
        /// Its `exp` claim: it is refused from this second on.
        public var expiresAt: Int

        /// Creates a record.
        ///
        /// - Parameters:
        ///   - grant: How the token was obtained.
        ///   - family: The family ID's first eight characters.
        ///   - issuedAt: When it was issued, in seconds since 1970.
        ///   - expiresAt: Its `exp` claim.
        public init(grant: Grant, family: String, issuedAt: Double, expiresAt: Int) {
            self.grant = grant
            self.family = family
            self.issuedAt = issuedAt
            self.expiresAt = expiresAt
        }

        enum CodingKeys: String, CodingKey {
            case grant, family
            case issuedAt = "issued_at"
            case expiresAt = "expires_at"
        }
    }
}
