public import Foundation

extension AuthToken {
    /// When the token becomes due for a proactive refresh under `policy` (``willExpireSoon(at:policy:)`` is true
    /// from then on), or `nil` when its expiry is unknown.
    ///
    /// - Parameter policy: The margins to apply.
    /// - Returns: The instant.
    package func refreshDueDate(policy: ExpiryPolicy) -> Date? {
        guard let expiresAt else { return nil }
        let margin =
            policy.effectiveLeeway(lifetime: knownLifetime) + policy.effectiveRefreshThreshold(lifetime: knownLifetime)
        return expiresAt.addingTimeInterval(-margin)
    }

    /// Seconds until ``expiresAt`` at `now` (negative once past), or `nil` when the expiry is unknown.
    ///
    /// - Parameter now: The current wall-clock time.
    /// - Returns: The seconds remaining.
    public func secondsUntilExpiration(at now: Date) -> TimeInterval? {
        expiresAt.map { $0.timeIntervalSince(now) }
    }

    /// Whether the token counts as expired at `now`, leeway included. Never true when the expiry is unknown.
    ///
    /// - Parameters:
    ///   - now: The current wall-clock time.
    ///   - policy: The margins to apply.
    /// - Returns: `true` when the token must not be used any more.
    public func isExpired(at now: Date, policy: ExpiryPolicy = .default) -> Bool {
        guard let remaining = secondsUntilExpiration(at: now) else { return false }
        return remaining <= policy.effectiveLeeway(lifetime: knownLifetime)
    }

    /// Whether the token should be refreshed ahead of expiry at `now` (true once expired, too).
    ///
    /// With the default policy: from 5 minutes and 10 seconds before expiry; for a token whose whole lifetime is
    /// known and shorter than 15 minutes, from a third of its lifetime (plus a tenth as leeway) before expiry.
    ///
    /// - Parameters:
    ///   - now: The current wall-clock time.
    ///   - policy: The margins to apply.
    /// - Returns: `true` when a proactive refresh is due.
    public func willExpireSoon(at now: Date, policy: ExpiryPolicy = .default) -> Bool {
        guard let remaining = secondsUntilExpiration(at: now) else { return false }
        return remaining <= policy.effectiveLeeway(lifetime: knownLifetime)
            + policy.effectiveRefreshThreshold(lifetime: knownLifetime)
    }

    /// Whether the access token is non-empty and not expired at `now`.
    ///
    /// - Parameters:
    ///   - now: The current wall-clock time.
    ///   - policy: The margins to apply.
    /// - Returns: `true` when the token can be sent.
    public func isValid(at now: Date, policy: ExpiryPolicy = .default) -> Bool {
        !accessToken.isEmpty && !isExpired(at: now, policy: policy)
    }

    /// ``isExpired(at:policy:)`` against the system clock and the default policy.
    public var isExpired: Bool { isExpired(at: Self.systemNow()) }
    /// ``willExpireSoon(at:policy:)`` against the system clock and the default policy: true within 5 minutes
    /// (plus the 10-second leeway) of expiry, or a third of the lifetime when that is known and shorter.
    public var willExpireSoon: Bool { willExpireSoon(at: Self.systemNow()) }
    /// ``secondsUntilExpiration(at:)`` against the system clock.
    public var secondsUntilExpiration: TimeInterval? { secondsUntilExpiration(at: Self.systemNow()) }
    /// ``isValid(at:policy:)`` against the system clock and the default policy.
    public var isValid: Bool { isValid(at: Self.systemNow()) }
}
