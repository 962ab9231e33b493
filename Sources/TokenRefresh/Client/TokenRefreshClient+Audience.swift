public import AuthToken
public import CoreMetrics
public import Foundation
public import Logging
public import Persistence

extension TokenRefreshClient {
    /// Makes one client per API that all share one session: one refresh token, and an access token per API.
    ///
    /// Servers with resource indicators (RFC 8707) or multi-resource refresh tokens (Auth0) give an access token for
    /// one API at a time; give each API's strategy its resource or audience and scope (see
    /// ``OAuthRefreshStrategy/init(endpoint:scope:resource:audience:)``). Each client hands out only its own API's
    /// token and refreshes it in a single flight of its own, so requests for different APIs are never merged and a
    /// caller never gets another API's token. The clients take turns with the shared refresh token under one
    /// exclusive access (the store's own, shared by processes, inside an in-process one): each refresh re-reads the
    /// session, presents the refresh token the last rotation left, and stores the rotated one before answering. So
    /// every rotation is stored once and no refresh token is presented twice.
    ///
    /// Sign in with any of the clients; the others take the session up (and refresh for their API at first use).
    /// Signing out with any of them ends the session for all. An API whose client has no token yet refreshes before
    /// it answers.
    ///
    /// - Parameters:
    ///   - strategies: The refresh strategy of each API, by a key of your own (one key per API and scope). Each API's
    ///     token is stored under its key and the resource, audience and scope its strategy asks for.
    ///   - store: Where the session is kept, shared by the clients; an ``/Persistence/InMemoryTokenStore`` by default.
    ///   - configuration: The clients' options; their ``Configuration/account`` is the session's.
    ///   - clock: The clock for timeouts, backoff and the breaker; `ContinuousClock()` by default.
    ///   - now: The wall clock for token expiry; ``/AuthToken/AuthToken/systemNow`` by default.
    ///   - random: Numbers in `0..<1` for backoff jitter; the system generator by default.
    ///   - logger: Where debug lines go (fingerprints only, never token text).
    ///   - metricsFactory: Where refresh metrics go; the bootstrapped swift-metrics backend by default.
    /// - Returns: The clients, by the keys of `strategies`.
    public static func sharingSession(
        audiences strategies: [String: any RefreshStrategy],
        store: any TokenStore = InMemoryTokenStore(),
        configuration: Configuration = Configuration(),
        clock: any Clock<Duration> = ContinuousClock(),
        now: @escaping @Sendable () -> Date = AuthToken.systemNow,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        logger: Logger = Logger(label: "TokenKit.TokenRefresh"),
        metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) -> [String: TokenRefreshClient] {
        let hub = AudienceHub(base: store)
        let metrics = RefreshMetrics(factory: metricsFactory)
        var clients: [String: TokenRefreshClient] = [:]
        for (key, strategy) in strategies {
            var audienceLogger = logger
            audienceLogger[metadataKey: "audience"] = "\(key)"
            let slot = AudienceTokenStore.slot(key, strategy)
            let client = TokenRefreshClient(
                strategy: strategy, store: AudienceTokenStore(hub: hub, key: slot, now: now),
                configuration: configuration, clock: clock, now: now, random: random, logger: audienceLogger,
                metrics: metrics)
            hub.register(client, for: slot)
            clients[key] = client
        }
        return clients
    }

    /// Another audience's client stored a new session: take it up (its token for this audience is refreshed at the
    /// first call). A session this client held before ends first, so nothing of it (its token, a request that
    /// carried it) carries over; callers waiting on its refresh fail with ``TokenRefreshError/sessionChanged``.
    ///
    /// A client that has not read the store yet may be reading it now, and that read may have found the session
    /// this one replaced: the client loads from this read instead, so the older read finds the client loaded and is
    /// dropped.
    ///
    /// This read is dropped in turn when the session is started or ended again before it is back (a sign-out or
    /// sign-in with this client, or with any audience's client of `hub`): it may have found the session that ended,
    /// and the newer change has set this client's session already.
    func adoptAudienceSession(in hub: AudienceHub) async {
        let (epoch, changes) = (machine.epoch, hub.sessionChanges)
        let read = await loadSession()
        try? await carryOut(
            machine.audienceSessionRead(read, epoch: epoch, overtaken: hub.sessionChanges != changes, now: now()))
    }

    /// Code other than this client wrote the store (the app, through its own persistence): read it, and take up a
    /// session stored there as ``adoptAudienceSession(in:)`` does (another session replaces the one held, whose
    /// waiting callers fail with ``TokenRefreshError/sessionChanged``), or end the session when none is stored.
    func adoptExternalWrite() async {
        let epoch = machine.epoch
        let read = await loadSession()
        if case .absent = read {
            guard machine.isCurrent(epoch) else { return }
            await carryOut(ending: machine.audienceSessionRemoved(now: now()))
            return
        }
        try? await carryOut(machine.audienceSessionRead(read, epoch: epoch, overtaken: false, now: now()))
    }

    /// Another audience's client removed the session (a sign-out, a revocation): end it here too, without touching
    /// the store again. A client that has not read the store yet reads as signed out from now on, so a read it
    /// started before (which may have found the removed session) is dropped.
    func endAudienceSession() async {
        await carryOut(ending: machine.audienceSessionRemoved(now: now()))
    }
}
