extension DemoAuthServer {
    /// Refresh-token behaviours of real authorization servers, each following the vendor documentation named in
    /// its comment. ``configuration(accessTokenLifetime:window:)`` turns one into a server configuration.
    public enum Profile: String, Sendable, CaseIterable {
        /// Rotation with reuse detection and no grace: every refresh retires the presented token, and presenting
        /// a retired one revokes the whole family (RFC 6819 section 5.2.2.3; django-oauth-toolkit with
        /// `ROTATE_REFRESH_TOKEN`, `REFRESH_TOKEN_REUSE_PROTECTION` on and `REFRESH_TOKEN_GRACE_PERIOD_SECONDS`
        /// 0; Okta's "Refresh token rotation" guide, "Refresh token reuse detection", with no grace period).
        case reuseDetection = "reuse-detection"

        /// Rotation with reuse detection and a grace window: after a rotation the previous token stays valid for
        /// the window and returns the pair already issued (Okta's "Refresh token rotation" guide, "Grace period
        /// for token rotation"; Amazon Cognito's `RefreshTokenRotationType.RetryGracePeriodSeconds`, up to 60 s).
        case graceWindow = "grace-window"

        /// No rotation: a refresh answers an access token only, and the refresh token stays valid (RFC 6749
        /// section 6; Amazon Cognito's `RefreshTokenRotationType` with `Feature` `DISABLED`: "token refresh issues
        /// only ID and access tokens"). The Microsoft identity platform ("Refresh tokens in the Microsoft identity
        /// platform") hands out a new refresh token on each use but does not revoke the old one, so concurrent
        /// and repeated use behave as here.
        case nonRotating = "non-rotating"

        /// Auth0's overlap: rotation with reuse detection and a leeway in which the previous token may be
        /// exchanged again and gets a new rotating pair; once its successor was rotated, the second-to-last token
        /// triggers breach detection (Auth0's "Configure Refresh Token Rotation", Reuse Interval, also called
        /// Rotation Overlap Period; the Management API's `refresh_token.leeway`).
        case overlap

        /// One-time use: each refresh token is accepted once and then refused with `invalid_grant`, without
        /// revoking the family (Amazon Cognito with rotation on and `RetryGracePeriodSeconds` 0: "a successful
        /// request immediately invalidates the submitted refresh token").
        case oneTimeUse = "one-time-use"

        /// A short title for tables.
        public var title: String {
            switch self {
            case .reuseDetection: "rotation + reuse detection, no grace"
            case .graceWindow: "grace window (Okta)"
            case .nonRotating: "non-rotating"
            case .overlap: "overlap (Auth0 reuse interval)"
            case .oneTimeUse: "one-time use"
            }
        }

        /// A demo server configuration that behaves like this profile.
        ///
        /// - Parameters:
        ///   - accessTokenLifetime: The access tokens' lifetime.
        ///   - window: The grace window or leeway of the profiles that have one; 30 s by default (Okta and
        ///     Cognito allow up to 60 s).
        /// - Returns: The configuration; everything else keeps its default.
        public func configuration(
            accessTokenLifetime: Duration, window: Duration = .seconds(30)
        ) -> Configuration {
            var configuration = Configuration(accessTokenLifetime: accessTokenLifetime)
            switch self {
            case .reuseDetection:
                configuration.reuseDetection = true
                configuration.graceWindow = .zero
            case .graceWindow:
                configuration.reuseDetection = true
                configuration.graceWindow = window
            case .nonRotating:
                configuration.rotateRefreshTokens = false
            case .overlap:
                configuration.reuseDetection = true
                configuration.graceWindow = window
                configuration.graceIssuesNewPair = true
            case .oneTimeUse:
                configuration.reuseDetection = false
                configuration.graceWindow = .zero
            }
            return configuration
        }
    }
}
