// Compiled only with the `LifecycleServices` package trait.
#if LifecycleServices
    public import ServiceLifecycle
    public import TokenRefresh

    /// Evicts a ``/TokenRefresh/TokenSessionRegistry``'s idle clients on a schedule, as a swift-service-lifecycle
    /// `Service`: it stops at once on graceful shutdown or cancellation, between sweeps or while waiting for one (a
    /// sweep under way finishes first; it only evicts clients whose pair is persisted).
    ///
    /// ```swift
    /// let registry = TokenSessionRegistry(store: store) { _ in OAuthRefreshStrategy(endpoint: endpoint) }
    /// let sweeper = SessionRegistrySweeper(registry: registry)
    /// let group = ServiceGroup(services: [sweeper, app], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    public struct SessionRegistrySweeper: Service {
        /// The registry swept.
        package let registry: TokenSessionRegistry
        /// The time between sweeps.
        public let interval: Duration
        private let clock: any Clock<Duration>

        /// A sweeper for `registry`.
        ///
        /// - Parameters:
        ///   - registry: The registry whose idle clients are evicted.
        ///   - interval: The time between sweeps; half the registry's idle timeout by default.
        ///   - clock: The clock the sweeper waits on.
        public init(
            registry: TokenSessionRegistry, interval: Duration? = nil, clock: any Clock<Duration> = ContinuousClock()
        ) {
            self.registry = registry
            self.interval = interval ?? registry.configuration.idleTimeout / 2
            self.clock = clock
        }

        /// Sweeps every ``interval`` until the task is cancelled or a graceful shutdown begins.
        public func run() async throws {
            let registry = registry
            let interval = interval
            let clock = clock
            await cancelWhenGracefulShutdown {
                while !Task.isCancelled {
                    do {
                        try await clock.sleep(for: interval)
                    } catch {
                        return
                    }
                    await registry.evictIdle()
                }
            }
        }
    }
#endif
