extension DemoAuthServer {
    /// Counters the server keeps so a demo can prove what happened ("one refresh per expiry").
    ///
    /// `GET /debug/stats` answers them as JSON with snake_case names.
    public struct Stats: Sendable, Hashable, Codable {
        /// Successful password logins (JSON login and password grant).
        public var logins: Int = 0

        /// Logins refused for a wrong email or password.
        public var failedLogins: Int = 0

        /// Refresh requests received on either refresh endpoint, whatever their outcome.
        public var refreshAttempts: Int = 0

        /// Refreshes that issued new tokens (rotations, or new access tokens when rotation is off). A refresh
        /// that rotated and then had its response dropped by an injected fault counts here too.
        public var refreshes: Int = 0

        /// Retired refresh tokens presented within the grace window, answered with the pair already issued.
        public var graceReuses: Int = 0

        /// Retired refresh tokens presented outside the grace window (each revoked its family when reuse
        /// detection is on).
        public var reuseDetections: Int = 0

        /// Refresh requests refused with `invalid_grant` (unknown, expired, revoked or reused tokens).
        public var rejectedRefreshes: Int = 0

        /// Revocations that revoked something (RFC 7009, the FitIQ-style logout, and `/debug/revoke-sessions`).
        public var revocations: Int = 0

        /// Client-credentials grants answered.
        public var clientCredentialsGrants: Int = 0

        /// Protected-resource requests answered `200`.
        public var resourceRequests: Int = 0

        /// Protected-resource requests answered `401`.
        public var rejectedResourceRequests: Int = 0

        /// Responses altered by an injected fault.
        public var faultsInjected: Int = 0

        /// Creates zeroed counters.
        public init() {}

        enum CodingKeys: String, CodingKey {
            case logins
            case failedLogins = "failed_logins"
            case refreshAttempts = "refresh_attempts"
            case refreshes
            case graceReuses = "grace_reuses"
            case reuseDetections = "reuse_detections"
            case rejectedRefreshes = "rejected_refreshes"
            case revocations
            case clientCredentialsGrants = "client_credentials_grants"
            case resourceRequests = "resource_requests"
            case rejectedResourceRequests = "rejected_resource_requests"
            case faultsInjected = "faults_injected"
        }
    }
}
