public import AuthToken
import Foundation

extension TokenRefreshClient {
    /// Options for a ``TokenRefreshClient``. The defaults suit a mobile app talking to an OAuth server.
    public struct Configuration: Sendable {
        /// The store key of the session.
        public var account: String
        /// When a token counts as expired or expiring soon.
        public var expiryPolicy: ExpiryPolicy
        /// How long one attempt at the token endpoint may take; `nil` for no limit.
        public var refreshTimeout: Duration?
        /// The refresh rate breaker: at most this many refresh requests sent to a server in ``breakerWindow``.
        ///
        /// Only requests that reach a server count: not a check of the session (at launch, after
        /// ``TokenRefreshClient/networkRestored()``), not a call a strategy may answer from its cache (an SDK's,
        /// unless forced after a 401), and not an attempt that could not connect (offline).
        public var maximumRefreshes: Int
        /// The breaker's window.
        public var breakerWindow: Duration
        /// Retries and backoff after transient failures.
        public var backoff: Backoff
        /// The RFC 7009 revocation done at sign-out, if any.
        public var revocation: TokenRevocation?
        /// How often a token pair that failed to persist is written again (on the next call after this).
        public var persistRetryInterval: Duration
        /// How long one send of the revocation may take before it counts as failed (it is then sent again later, see
        /// ``PendingSignOuts``).
        public var revocationTimeout: Duration
        /// Whether a sign-in whose session could not be written to the store still succeeds, with the session
        /// kept in memory and the write retried. `false` by default: such a sign-in throws
        /// ``TokenRefreshError/storageUnavailable`` (its ``TokenRefreshError/underlying`` says why), because a
        /// session that is never stored is lost at the next launch. An ``/Persistence/InMemoryTokenStore`` needs no opt-in.
        public var allowsMemoryOnlySessions: Bool
        /// Where unfinished sign-outs are kept and how they are finished (see ``PendingSignOuts``).
        public var pendingSignOuts: PendingSignOuts
        /// The server's clock, when expiry is judged by server time: the client's wall clock is then its
        /// ``ServerClock/now()``, and the session journal shows its offset (see ``ServerClock``).
        public var serverClock: ServerClock?

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - account: The store key; `default` by default.
        ///   - expiryPolicy: The expiry margins.
        ///   - refreshTimeout: The limit for one attempt; 30 s by default.
        ///   - maximumRefreshes: The breaker's cap; 5 by default.
        ///   - breakerWindow: The breaker's window; 30 s by default.
        ///   - backoff: Retries and backoff.
        ///   - revocation: The revocation at sign-out, if any.
        ///   - persistRetryInterval: The pause between write retries; 5 s by default.
        ///   - revocationTimeout: The limit for one send of the revocation; 10 s by default.
        ///   - allowsMemoryOnlySessions: Whether a sign-in that could not be stored still succeeds; `false` by
        ///     default.
        ///   - pendingSignOuts: Where unfinished sign-outs are kept and how they are sent again; by default in the
        ///     client's store when it can keep them.
        ///   - serverClock: The server's clock, to judge expiry by server time; `nil` (the device's clock) by default.
        public init(
            account: String = "default",
            expiryPolicy: ExpiryPolicy = .default,
            refreshTimeout: Duration? = .seconds(30),
            maximumRefreshes: Int = 5,
            breakerWindow: Duration = .seconds(30),
            backoff: Backoff = Backoff(),
            revocation: TokenRevocation? = nil,
            persistRetryInterval: Duration = .seconds(5),
            revocationTimeout: Duration = .seconds(10),
            allowsMemoryOnlySessions: Bool = false,
            pendingSignOuts: PendingSignOuts = PendingSignOuts(),
            serverClock: ServerClock? = nil
        ) {
            self.account = account
            self.expiryPolicy = expiryPolicy
            self.refreshTimeout = refreshTimeout
            self.maximumRefreshes = max(1, maximumRefreshes)
            self.breakerWindow = breakerWindow
            self.backoff = backoff
            self.revocation = revocation
            self.persistRetryInterval = persistRetryInterval
            self.revocationTimeout = revocationTimeout
            self.allowsMemoryOnlySessions = allowsMemoryOnlySessions
            self.pendingSignOuts = pendingSignOuts
            self.serverClock = serverClock
        }
    }

    /// Retries and backoff after transient failures (connection errors, timeouts, 5xx, 429).
    ///
    /// Within one refresh, a transient failure is retried up to ``retries`` times after an exponentially
    /// growing, jittered delay, or after the server's `Retry-After` when it is at most
    /// ``maximumRetryAfterWait``. After the last failure, new refreshes are held back (callers get the
    /// failure at once, or the still-valid token) until the next delay or the `Retry-After` has passed.
    public struct Backoff: Sendable {
        /// How many times one refresh retries a transient failure.
        public var retries: Int
        /// The first delay.
        public var initialDelay: Duration
        /// The longest delay.
        public var maximumDelay: Duration
        /// The factor between consecutive delays.
        public var multiplier: Double
        /// The longest `Retry-After` waited for inside a refresh; longer ones end the refresh at once and
        /// hold back the next one.
        public var maximumRetryAfterWait: Duration
        /// At most this many attempts that a server answered with a transient failure (5xx, 429) per
        /// ``failureBudgetWindow``: past it, refreshes are held back until the oldest leaves the window, so a token
        /// endpoint failing for an hour gets a dozen requests, not thousands. A success starts afresh. The budget is
        /// the session's: clients in other processes or replicas sharing the store count the same failures
        /// (``/Persistence/StoredSession/recentServerFailures``).
        public var failureBudget: Int = 12
        /// The window of ``failureBudget``; one hour by default.
        public var failureBudgetWindow: Duration = .seconds(3600)

        /// Creates a backoff.
        ///
        /// - Parameters:
        ///   - retries: Retries per refresh; 2 by default.
        ///   - initialDelay: The first delay; 0.5 s by default.
        ///   - maximumDelay: The longest delay; 60 s by default.
        ///   - multiplier: The growth factor; 2 by default.
        ///   - maximumRetryAfterWait: The longest `Retry-After` waited for in a refresh; 5 s by default.
        public init(
            retries: Int = 2, initialDelay: Duration = .milliseconds(500), maximumDelay: Duration = .seconds(60),
            multiplier: Double = 2, maximumRetryAfterWait: Duration = .seconds(5)
        ) {
            self.retries = max(0, retries)
            self.initialDelay = initialDelay
            self.maximumDelay = maximumDelay
            self.multiplier = max(1, multiplier)
            self.maximumRetryAfterWait = maximumRetryAfterWait
        }

        /// The delay before retry number `attempt` (from 0), with "equal jitter": half fixed, half random.
        ///
        /// - Parameters:
        ///   - attempt: The retry number, from 0.
        ///   - random: A number in `0..<1`.
        /// - Returns: The delay.
        package func delay(attempt: Int, random: Double) -> Duration {
            let initial = Double(initialDelay.components.seconds) + Double(initialDelay.components.attoseconds) / 1e18
            let maximum = Double(maximumDelay.components.seconds) + Double(maximumDelay.components.attoseconds) / 1e18
            let base = min(maximum, initial * pow(multiplier, Double(min(attempt, 60))))
            let jitter = min(max(random, 0), 1)
            return .milliseconds(Int64((base * (0.5 + 0.5 * jitter) * 1000).rounded()))
        }
    }
}

/// A client's options, held once: the actor and its session machine read this one copy instead of holding one each.
final class SharedConfiguration: Sendable {
    let value: TokenRefreshClient.Configuration

    init(_ value: TokenRefreshClient.Configuration) { self.value = value }
}
