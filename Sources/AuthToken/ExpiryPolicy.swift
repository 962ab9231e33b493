public import Foundation

/// How early a token counts as expired or "expiring soon".
///
/// Both margins scale down with the token's lifetime, so short-lived tokens (Clerk's live 60 s) are not
/// "expiring soon" for their whole life:
/// - effective leeway = min(``leeway``, 10% of the lifetime)
/// - effective refresh threshold = min(``refreshThreshold``, ``refreshFraction`` × the lifetime)
///
/// A token is expired when `now >= expiresAt - leeway`, and expiring soon when fewer than
/// `leeway + threshold` seconds remain. For a one-hour token with the defaults that is 310 s before
/// expiry; for a 60-second token, 18 s.
public struct ExpiryPolicy: Sendable, Hashable {
    /// Seconds before expiry at which a token already counts as expired (network latency, clock skew).
    public var leeway: TimeInterval
    /// Seconds before expiry at which a token counts as expiring soon and is refreshed ahead of time.
    public var refreshThreshold: TimeInterval
    /// The largest share of the lifetime the refresh threshold may take.
    public var refreshFraction: Double

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - leeway: Seconds of leeway; 10 by default.
    ///   - refreshThreshold: Seconds ahead of expiry to refresh; 300 by default.
    ///   - refreshFraction: The largest share of the lifetime for the threshold; 0.2 by default.
    public init(leeway: TimeInterval = 10, refreshThreshold: TimeInterval = 300, refreshFraction: Double = 0.2) {
        self.leeway = max(0, leeway)
        self.refreshThreshold = max(0, refreshThreshold)
        self.refreshFraction = min(max(0, refreshFraction), 1)
    }

    /// The default policy: 10 s leeway, refresh 300 s (at most 20% of the lifetime) ahead.
    public static let `default` = ExpiryPolicy()

    /// The leeway for a token with this lifetime.
    ///
    /// - Parameter lifetime: The token's lifetime, if known.
    /// - Returns: The leeway in seconds.
    public func effectiveLeeway(lifetime: TimeInterval?) -> TimeInterval {
        guard let lifetime else { return leeway }
        return min(leeway, lifetime * 0.1)
    }

    /// The refresh threshold for a token with this lifetime.
    ///
    /// - Parameter lifetime: The token's lifetime, if known.
    /// - Returns: The threshold in seconds.
    public func effectiveRefreshThreshold(lifetime: TimeInterval?) -> TimeInterval {
        guard let lifetime else { return refreshThreshold }
        return min(refreshThreshold, lifetime * refreshFraction)
    }
}
