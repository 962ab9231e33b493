public import Foundation

extension AuthToken {
    /// The lifetime used to scale margins: ``lifetime``, or the time from receipt to the `exp` claim.
    var effectiveLifetime: TimeInterval? {
        if let lifetime { return lifetime }
        guard let expirationClaim else { return nil }
        return max(0, expirationClaim.timeIntervalSince(receivedAt))
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
        return remaining <= policy.effectiveLeeway(lifetime: effectiveLifetime)
    }

    /// Whether the token should be refreshed ahead of expiry at `now` (true once expired, too).
    ///
    /// - Parameters:
    ///   - now: The current wall-clock time.
    ///   - policy: The margins to apply.
    /// - Returns: `true` when a proactive refresh is due.
    public func willExpireSoon(at now: Date, policy: ExpiryPolicy = .default) -> Bool {
        guard let remaining = secondsUntilExpiration(at: now) else { return false }
        let lifetime = effectiveLifetime
        return remaining <= policy.effectiveLeeway(lifetime: lifetime)
            + policy.effectiveRefreshThreshold(lifetime: lifetime)
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
    /// ``willExpireSoon(at:policy:)`` against the system clock and the default policy.
    public var willExpireSoon: Bool { willExpireSoon(at: Self.systemNow()) }
    /// ``secondsUntilExpiration(at:)`` against the system clock.
    public var secondsUntilExpiration: TimeInterval? { secondsUntilExpiration(at: Self.systemNow()) }
    /// ``isValid(at:policy:)`` against the system clock and the default policy.
    public var isValid: Bool { isValid(at: Self.systemNow()) }
}
