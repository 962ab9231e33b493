// Compiled only with the `LifecycleServices` package trait.
#if LifecycleServices
    public import ServiceLifecycle
    public import TokenVerification

    /// A ``/TokenVerification/RemoteJWKSSource`` is a swift-service-lifecycle `Service`: its refresher runs as the
    /// service, so a graceful shutdown of the `ServiceGroup` waits for it and leaves no fetch behind.
    ///
    /// ```swift
    /// let keys = RemoteJWKSSource(jwksURL: jwksURL)
    /// let group = ServiceGroup(services: [keys, app], gracefulShutdownSignals: [.sigterm], logger: logger)
    /// try await group.run()
    /// ```
    extension RemoteJWKSSource: Service {
        /// Runs the source's refresher (``/TokenVerification/RemoteJWKSSource/runRefresher()``) until the task is
        /// cancelled or a graceful shutdown begins; a fetch in flight then finishes first (bounded by the fetch
        /// timeout).
        public func run() async throws {
            await cancelWhenGracefulShutdown { await self.runRefresher() }
        }
    }
#endif
