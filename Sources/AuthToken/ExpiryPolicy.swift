public import Foundation

/// How early a token counts as expired or "expiring soon".
///
/// The default is the FitIQ app's rule: a token is expiring soon 5 minutes (``refreshThreshold``) plus a
/// 10-second ``leeway`` before expiry, and expired 10 seconds before it.
///
/// Only when a token's whole lifetime is known (the OAuth `expires_in`, `exp - iat` of a JWT, or the time from
/// receipt to `exp` of a JWT that came from an endpoint) do the margins shrink for short lifetimes, so that a
/// 60-second token (Clerk's) is not "expiring soon" for its whole life:
/// - effective leeway = min(``leeway``, 10% of the lifetime)
/// - effective refresh threshold = min(``refreshThreshold``, `refreshFraction` × the lifetime)
///
/// A token rebuilt from stored strings without `iat`, or from an absolute `expiresAt` alone, has no known
/// lifetime and gets the fixed margins. For a token living 15 minutes or more both rules give the same 310 s;
/// for a 60-second token the scaled rule gives 26 s. Pass `scalesWithLifetime: false` (or use ``fixed``) to
/// apply the fixed margins to every token.
///
/// A token is expired when `now >= expiresAt - leeway`, and expiring soon when `leeway + threshold` seconds or
/// fewer remain.
public struct ExpiryPolicy: Sendable, Hashable {
    /// Seconds before expiry at which a token already counts as expired (network latency, clock skew).
    public var leeway: TimeInterval
    /// Seconds before expiry at which a token counts as expiring soon and is refreshed ahead of time.
    public var refreshThreshold: TimeInterval
    /// The largest share of a known lifetime the refresh threshold may take.
    package var refreshFraction: Double
    /// Whether the margins shrink for a token whose lifetime is known and short.
    package var scalesWithLifetime: Bool

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - leeway: Seconds of leeway; 10 by default.
    ///   - refreshThreshold: Seconds ahead of expiry to refresh; 300 (FitIQ's 5 minutes) by default.
    ///   - refreshFraction: The largest share of a known lifetime for the threshold; a third by default.
    ///   - scalesWithLifetime: Whether the margins shrink for short known lifetimes; `true` by default.
    public init(
        leeway: TimeInterval = 10, refreshThreshold: TimeInterval = 300, refreshFraction: Double = 1.0 / 3.0,
        scalesWithLifetime: Bool = true
    ) {
        self.leeway = max(0, leeway)
        self.refreshThreshold = max(0, refreshThreshold)
        self.refreshFraction = min(max(0, refreshFraction), 1)
        self.scalesWithLifetime = scalesWithLifetime
    }

    /// The default policy: 10 s leeway, refresh 300 s ahead; at most a third of a known lifetime.
    public static let `default` = ExpiryPolicy()

    /// 10 s leeway and refresh 300 s ahead for every token, whatever its lifetime. A token that lives less than
    /// 5 minutes is then always expiring soon.
    public static let fixed = ExpiryPolicy(scalesWithLifetime: false)

    /// The leeway for a token with this lifetime.
    ///
    /// - Parameter lifetime: The token's whole lifetime, if known.
    /// - Returns: The leeway in seconds.
    public func effectiveLeeway(lifetime: TimeInterval?) -> TimeInterval {
        guard scalesWithLifetime, let lifetime else { return leeway }
        return min(leeway, lifetime * 0.1)
    }

    /// The refresh threshold for a token with this lifetime.
    ///
    /// - Parameter lifetime: The token's whole lifetime, if known.
    /// - Returns: The threshold in seconds.
    public func effectiveRefreshThreshold(lifetime: TimeInterval?) -> TimeInterval {
        guard scalesWithLifetime, let lifetime else { return refreshThreshold }
        return min(refreshThreshold, lifetime * refreshFraction)
    }
}
