import CoreMetrics

/// The metrics a ``TokenRefreshClient`` records, through swift-metrics (a no-op until the app bootstraps a
/// backend such as swift-prometheus).
///
/// | Name | Kind | Dimensions | What |
/// | --- | --- | --- | --- |
/// | `tokenkit_refreshes_total` | counter | `result`: `success`, `failure` | Calls to the strategy (each retry counts) |
/// | `tokenkit_refresh_failures_total` | counter | `class`: `transient`, `connectivity`, `timeout`, `rejected`, `session_ended`, `configuration`, `storage`, `response`, `cancelled`, `other` | Failed calls, by class |
/// | `tokenkit_refresh_blocked_total` | counter | `reason`: `breaker`, `backoff` | Refreshes held back by the rate breaker or by a backoff or `Retry-After` |
/// | `tokenkit_refresh_duration_seconds` | timer | | How long each call to the strategy took |
/// | `tokenkit_store_lock_wait_seconds` | timer | | How long a refresh waited for the store's exclusive access (another replica's or process's refresh) |
/// | `tokenkit_tokens_adopted_total` | counter | | Pairs another process or replica saved, taken from the store instead of refreshing (no call to the strategy) |
///
/// No dimension carries an account, a user or a token, so the series stay few and nothing secret leaves.
struct RefreshMetrics: Sendable {
    let successes: Counter
    let failures: Counter
    let failureClasses: [String: Counter]
    let breakerTrips: Counter
    let backoffHolds: Counter
    let duration: Timer
    let lockWait: Timer
    let adoptions: Counter

    static let failureClassNames = [
        "transient", "connectivity", "timeout", "rejected", "session_ended", "configuration", "storage", "response",
        "cancelled", "other",
    ]

    init(factory: any MetricsFactory) {
        successes = Counter(label: "tokenkit_refreshes_total", dimensions: [("result", "success")], factory: factory)
        failures = Counter(label: "tokenkit_refreshes_total", dimensions: [("result", "failure")], factory: factory)
        var classes: [String: Counter] = [:]
        for name in Self.failureClassNames {
            classes[name] = Counter(
                label: "tokenkit_refresh_failures_total", dimensions: [("class", name)], factory: factory)
        }
        failureClasses = classes
        breakerTrips = Counter(
            label: "tokenkit_refresh_blocked_total", dimensions: [("reason", "breaker")], factory: factory)
        backoffHolds = Counter(
            label: "tokenkit_refresh_blocked_total", dimensions: [("reason", "backoff")], factory: factory)
        duration = Timer(label: "tokenkit_refresh_duration_seconds", factory: factory)
        lockWait = Timer(label: "tokenkit_store_lock_wait_seconds", factory: factory)
        adoptions = Counter(label: "tokenkit_tokens_adopted_total", factory: factory)
    }

    func recordSuccess(after duration: Duration) {
        successes.increment()
        self.duration.recordNanoseconds(duration.nanoseconds)
    }

    func recordFailure(_ error: TokenRefreshError, after duration: Duration) {
        failures.increment()
        failureClasses[Self.failureClass(of: error)]?.increment()
        self.duration.recordNanoseconds(duration.nanoseconds)
    }

    func recordAdoption() { adoptions.increment() }

    func recordLockWait(_ wait: Duration) {
        lockWait.recordNanoseconds(wait.nanoseconds)
    }

    func recordBlocked(_ error: TokenRefreshError) {
        (error == .rateLimited ? breakerTrips : backoffHolds).increment()
    }

    /// Records `error`, with which a caller fails before any refresh starts, if it is a hold (the breaker, backoff or
    /// `Retry-After`).
    func recordIfBlocked(_ error: TokenRefreshError) {
        if error == .rateLimited || error.retryAfter != nil { recordBlocked(error) }
    }

    /// The `class` dimension for `error`.
    static func failureClass(of error: TokenRefreshError) -> String {
        switch error {
        case .timeout: "timeout"
        case .refreshTokenRejected: "rejected"
        case .sessionInvalidated, .sessionExpired, .signedOut: "session_ended"
        case .configuration, .invalidArgument, .insecureEndpoint: "configuration"
        case .storageUnavailable: "storage"
        case .malformedResponse, .unexpectedResponse: "response"
        case .cancelled: "cancelled"
        default: error.isTransient ? (error.isConnectivityFailure ? "connectivity" : "transient") : "other"
        }
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        guard !overflow else { return seconds < 0 ? .min : .max }
        return product.addingReportingOverflow(attoseconds / 1_000_000_000).overflow
            ? .max : product + attoseconds / 1_000_000_000
    }
}
