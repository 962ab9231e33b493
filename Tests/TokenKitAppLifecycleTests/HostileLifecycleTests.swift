import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import PersistenceKeychain
import Testing
import TokenKitAppLifecycle
import TokenKitKeychainTesting
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenRefresh

/// What an app lives through, each case through the public API with injected clocks: a sign-out while offline, a
/// locked or prewarmed launch, a refresh timer hours late, a process suspended mid-refresh, a device clock an hour
/// off, and a token endpoint failing for an hour. Each case prints one line of figures
/// (`hostile-lifecycle: <case> | refreshes N | sessions lost N | failed requests N | usable after X`): refreshes the
/// server made (for the failing endpoint, the token requests it refused), sessions lost, the app's calls that failed,
/// and the time by the injected clock until the app was usable again (signed out, or holding a valid token).
@Suite(.logLeakCheck()) struct HostileLifecycleTests {
    static let tokenURL = URL(string: "https://auth.example.com/oauth/token")!
    static let revokeURL = URL(string: "https://auth.example.com/oauth/revoke")!

    /// The figures of one case, printed as one line for the scorecard.
    struct Figures {
        var refreshes = 0
        var sessionsLost = 0
        var failedRequests = 0
        var usableAfter: Duration = .zero

        func report(_ name: String) {
            print(
                "hostile-lifecycle: \(name) | refreshes \(refreshes) | sessions lost \(sessionsLost) "
                    + "| failed requests \(failedRequests) | usable after \(Self.text(usableAfter))")
        }

        static func text(_ duration: Duration) -> String {
            let (seconds, attoseconds) = duration.components
            let milliseconds = seconds * 1000 + attoseconds / 1_000_000_000_000_000
            return milliseconds < 1000 ? "\(milliseconds) ms" : "\(Double(milliseconds) / 1000) s"
        }
    }

    /// The network between the app and the token server: up, down (a connection error at once), or hanging (no
    /// answer until the request is cancelled).
    final class Network: HTTPTransport, Sendable {
        enum Mode { case up, down, hanging }
        let server: SimulatedTokenServer
        let mode = Locked(Mode.up)
        private let failed = Locked(0)
        private let hung = Locked(0)

        init(_ server: SimulatedTokenServer) { self.server = server }

        /// The requests that failed because the network was down.
        var failures: Int { failed.withLock { $0 } }

        /// The requests that reached the network while it hung.
        var hangs: Int { hung.withLock { $0 } }

        func set(_ mode: Mode) { self.mode.withLock { $0 = mode } }

        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            switch mode.withLock({ $0 }) {
            case .up: return try await server.send(request, body: body)
            case .down:
                failed.withLock { $0 += 1 }
                throw URLError(.notConnectedToInternet)
            case .hanging:
                hung.withLock { $0 += 1 }
                try await Self.hang()
            }
        }

        /// Waits until the task is cancelled.
        private static func hang() async throws -> Never {
            let waiting = Locked<CheckedContinuation<Void, any Error>?>(nil)
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    waiting.withLock { $0 = continuation }
                    if Task.isCancelled { waiting.withLock { $0.take() }?.resume(throwing: CancellationError()) }
                }
            } onCancel: {
                waiting.withLock { $0.take() }?.resume(throwing: CancellationError())
            }
            throw CancellationError()
        }
    }

    /// A store whose removals fail while `failsRemovals` is set (another process holds its lock too long, say).
    final class StubbornStore: TokenStore, Sendable {
        let base = InMemoryTokenStore()
        let failsRemovals = Locked(false)

        func load(account: String) async -> TokenStoreRead { await base.load(account: account) }

        func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
            try await base.save(session, account: account, condition: condition)
        }

        func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
            if failsRemovals.withLock({ $0 }) { throw PersistenceError.lockTimedOut }
            try await base.remove(account: account, condition: condition)
        }
    }

    /// A client of `server` through `transport`, with revocation at sign-out.
    static func client(
        _ transport: any HTTPTransport, store: any TokenStore, clock: ManualClock,
        now: (@Sendable () -> Date)? = nil,
        configure: (inout TokenRefreshClient.Configuration) -> Void = { _ in }
    ) -> (TokenRefreshClient, TokenEndpoint) {
        let now = now ?? clock.wallClock
        let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "app"), transport: transport, now: now)
        var configuration = TokenRefreshClient.Configuration(revocation: .rfc7009(url: revokeURL, using: endpoint))
        configure(&configuration)
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store, configuration: configuration,
            clock: clock, now: now, random: { 0.5 })
        return (client, endpoint)
    }

    /// Runs `body` while moving `clock` forward by `step` whenever at least `sleepers` tasks sleep on it; returns how
    /// far the clock moved until `body` returned (at most `limit`).
    static func driving(
        _ clock: ManualClock, step: Duration = .milliseconds(10), limit: Duration = .seconds(60), sleepers: Int = 1,
        _ body: @escaping @Sendable () async -> Void
    ) async -> Duration {
        let start = clock.now
        let done = Locked<Duration?>(nil)
        let task = Task {
            await body()
            done.withLock { $0 = start.duration(to: clock.now) }
        }
        while done.withLock({ $0 }) == nil && start.duration(to: clock.now) < limit {
            if clock.sleeperCount >= sleepers { clock.advance(by: step) }
            await Task.yield()
        }
        await task.value
        return done.withLock { $0 } ?? limit
    }

    // MARK: - Sign-out offline

    @Test(.timeLimit(.minutes(1)))
    func signingOutWhileTheRevocationHangsReturnsWithinAHundredMillisecondsWithTheSessionGone() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let network = Network(server)
        let store = InMemoryTokenStore()
        let (client, endpoint) = Self.client(network, store: store, clock: clock)
        try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))

        network.set(.hanging)
        // Two sleep on the clock: the sign-out's wait for the revocation and the revocation's timeout. The clock moves
        // only while both do: moved while the revocation's timeout alone slept (its task ran first), it would leave the
        // sign-out's wait, once it sleeps, that much later by the clock.
        let took = await Self.driving(clock, sleepers: 2) { try? await client.signOut() }
        #expect(took <= .milliseconds(100), "sign-out took \(took) by the injected clock")
        #expect(client.currentState == .signedOut)
        #expect(client.currentToken == nil)
        #expect(await store.load(account: "default").isAbsent, "the session is still stored")
        #expect(await server.revocationCount == 0)
        Figures(usableAfter: took).report("sign-out offline (revocation hangs)")
    }

    @Test func aSignOutWhoseRemovalFailedIsNotRestoredAfterTheProcessIsKilled() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let store = StubbornStore()
        let (client, endpoint) = Self.client(server, store: store, clock: clock)
        try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        store.failsRemovals.withLock { $0 = true }
        await #expect(throws: TokenRefreshError.storageUnavailable) { try await client.signOut() }
        #expect(client.currentState == .signedOut)

        // The process is killed before the removal is retried; at the next launch the store works again.
        store.failsRemovals.withLock { $0 = false }
        let (relaunched, _) = Self.client(server, store: store, clock: clock)
        let state = await relaunched.restoreSession()
        #expect(state == .signedOut, "the signed-out session came back at launch")
        #expect(await store.load(account: "default").isAbsent)
    }

    // MARK: - Locked and prewarmed launches

    /// A session stored in a simulated Keychain, then a reboot: the next launch is before the first unlock.
    static func prewarmedLaunch(
        _ keychainConfiguration: KeychainSimulator.Configuration
    ) async throws -> (KeychainSimulator, KeychainTokenStore, TokenRefreshClient, AppSessionLifecycle, ManualClock) {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let keychain = KeychainSimulator(configuration: keychainConfiguration)
        let store = KeychainTokenStore(configuration: .init(service: "com.example.tokens"), keychain: keychain)
        let (first, endpoint) = Self.client(server, store: store, clock: clock)
        try await first.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        keychain.reboot()
        let (client, _) = Self.client(server, store: store, clock: clock)
        return (keychain, store, client, AppSessionLifecycle(client: client, store: store), clock)
    }

    @Test(arguments: [false, true])
    func aPrewarmedLaunchWithNothingReadableLosesNoSessionOnceProtectedDataIsAvailable(
        readsAnswerNotFound: Bool
    ) async throws {
        let (keychain, store, client, lifecycle, clock) = try await Self.prewarmedLaunch(
            .init(readsBeforeFirstUnlockAnswerNotFound: readsAnswerNotFound))
        var figures = Figures()
        #expect(await lifecycle.restore() == .unavailable)
        #expect(client.currentState != .signedOut)
        do {
            _ = try await client.validToken()
        } catch {
            figures.failedRequests += 1
        }
        #expect(client.currentState != .signedOut)

        clock.advance(by: .seconds(30))  // the user unlocks the device
        keychain.unlock()
        let unlocked = clock.now
        let availability = await lifecycle.protectedDataDidBecomeAvailable()
        #expect(availability.hasSession)
        let token = try? await client.validToken()
        #expect(token != nil)
        if token == nil || !client.currentState.hasSession { figures.sessionsLost += 1 }
        #expect(await store.load(account: "default").session != nil, "the stored session is gone")
        figures.usableAfter = unlocked.duration(to: clock.now)  // from the unlock
        figures.report("prewarm, nothing readable (\(readsAnswerNotFound ? "not found" : "locked")), then unlocked")
    }

    // MARK: - Late refreshes

    @Test func aRefreshTimerFiringSixHoursLateRefreshesAndNeverSignsOut() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let (client, endpoint) = Self.client(server, store: InMemoryTokenStore(), clock: clock)
        let signedIn = try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))

        // The timer was due 5 minutes before expiry; the OS starved it for six hours.
        clock.advance(by: .seconds(3300 + 6 * 3600))
        var figures = Figures()
        let fresh = try await client.validToken()
        #expect(fresh.accessToken != signedIn.accessToken)
        // A request sent with the old token before the timer fired comes back 401.
        let retried = try await client.refreshToken(afterRejectionOf: signedIn.accessToken)
        #expect(retried.accessToken == fresh.accessToken)
        await client.sessionRejected(afterRefreshOf: signedIn.accessToken, endSession: true)
        #expect(client.currentState.hasSession)
        figures.refreshes = await server.refreshCount
        figures.sessionsLost = client.currentState.hasSession ? 0 : 1
        #expect(figures.refreshes == 1)
        figures.report("refresh timer 6 h late")
    }

    /// An API whose first request is held at `gate`; it refuses any token but the client's current one.
    final class StaleAPI: HTTPTransport, Sendable {
        let gate = HoldGate()
        let client: TokenRefreshClient
        private let calls = Locked(0)

        init(client: TokenRefreshClient) { self.client = client }

        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            if calls.withLock({
                $0 += 1; return $0
            }) == 1 {
                await gate.wait()
            }
            let current = client.currentToken.map { "Bearer \($0.accessToken)" }
            let accepted = current != nil && request.headerFields[.authorization] == current
            return (HTTPResponse(status: accepted ? .ok : .unauthorized), Data())
        }
    }

    @Test func aRequestRefusedAfterTheLateRefreshWithTheTokenItReplacedKeepsTheSession() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let (client, endpoint) = Self.client(server, store: InMemoryTokenStore(), clock: clock)
        try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        let transport = StaleAPI(client: client)
        let api = AuthenticatedClient(
            transport: transport, tokenProvider: client,
            configuration: .init(
                allowedOrigins: [HTTPOrigin(string: "https://api.example.com")].compactMap { $0 },
                endsSessionWhenRefreshDoesNotHelp: true))
        let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v1/me")

        // The request leaves with the signed-in token, and the process is suspended for six hours before its answer.
        let sent = Task { try await api.executeWithAutoRetry(request) }
        await transport.gate.waitForArrivals(1)
        clock.advance(by: .seconds(6 * 3600))
        _ = try await client.validToken()  // the starved timer fires on resume: a refresh
        transport.gate.open()  // the answer to the old request: 401 for the token just replaced
        let (response, _) = try await sent.value

        var figures = Figures()
        figures.refreshes = await server.refreshCount
        figures.sessionsLost = client.currentState.hasSession ? 0 : 1
        #expect(response.status == .ok)
        #expect(figures.refreshes == 1)
        #expect(client.currentState.hasSession)
        figures.report("a 401 for a token already replaced")
    }

    /// The token server behind a connection whose answers wait at `gate` while `holdsAnswers` is set: the server has
    /// handled the request (and rotated), and the answer sits in the socket while the process is suspended.
    final class HeldAnswers: HTTPTransport, Sendable {
        let server: SimulatedTokenServer
        let gate = HoldGate()
        let holdsAnswers = Locked(false)

        init(_ server: SimulatedTokenServer) { self.server = server }

        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            let answer = try await server.send(request, body: body)
            if holdsAnswers.withLock({ $0 }) { await gate.wait() }
            return answer
        }
    }

    @Test(.timeLimit(.minutes(1)), arguments: [false, true])
    func aProcessSuspendedMidRefreshAndResumedAfterExpiryRefreshesOnceAndKeepsTheSession(
        monotonicClockJumps: Bool
    ) async throws {
        // The wall clock jumps by the suspension; the monotonic clock stops (a suspending clock) or jumps with it (a
        // continuous clock, the default, whose jump wakes the refresh timeout of the request in flight).
        let clock = ManualClock()
        let wall = Locked(clock.date)
        let deviceWall: @Sendable () -> Date = { wall.withLock { $0 } }
        let now = monotonicClockJumps ? clock.wallClock : deviceWall
        let suspend: @Sendable (Duration) -> Void = { duration in
            if monotonicClockJumps {
                clock.advance(by: duration)
            } else {
                wall.withLock { $0 = $0.addingTimeInterval(Double(duration.components.seconds)) }
            }
        }
        let server = SimulatedTokenServer(now: now)
        let connection = HeldAnswers(server)
        let (client, endpoint) = Self.client(connection, store: InMemoryTokenStore(), clock: clock, now: now)
        let signedIn = try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))

        suspend(.seconds(3400))  // due
        connection.holdsAnswers.withLock { $0 = true }
        let refresh = Task { try await client.validToken() }
        await connection.gate.waitForArrivals(1)
        // Suspended here for two hours, the answer unread: the token expires. On resume the answer is read.
        suspend(.seconds(7200))
        var yields = 0
        while monotonicClockJumps && clock.sleeperCount == 0 && yields < 1000 {
            await Task.yield()  // the woken refresh timeout runs first
            yields += 1
        }
        let expiredCaller = Task { try await client.validToken() }
        connection.gate.open()
        // The held answer needs no time; only the refresh's timeout sleeps on the clock. The clock moves only if
        // something sleeps beside it (a retry's backoff): moved while the timeout alone slept, at the pace of this
        // loop, it reached the 30-s timeout whenever the answer's task was slow to run (a loaded machine).
        let took = await Self.driving(clock, sleepers: 2) { _ = try? await refresh.value }
        var figures = Figures()
        figures.usableAfter = took
        figures.refreshes = await server.refreshCount
        let token = try? await refresh.value
        let joined = try? await expiredCaller.value
        let stale = try? await client.refreshToken(afterRejectionOf: signedIn.accessToken)
        figures.sessionsLost = client.currentState.hasSession ? 0 : 1
        figures.failedRequests = [token, joined, stale].filter { $0 == nil }.count
        #expect(figures.refreshes == 1)
        #expect(figures.failedRequests == 0)
        #expect(joined?.accessToken == token?.accessToken && stale?.accessToken == token?.accessToken)
        #expect(await server.reuseDetections == 0)
        #expect(client.currentState.hasSession)
        figures.report(
            "suspended mid-refresh, resumed after expiry (monotonic clock \(monotonicClockJumps ? "jumps" : "stops"))")
    }

    // MARK: - A device clock an hour off

    @Test(arguments: [3600.0, -3600.0])
    func aDeviceClockAnHourOffNeitherLoopsNorExpiresFalselyAndRefreshesAheadOfExpiry(skew: TimeInterval) async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(configuration: .init(omitsLifetime: true), now: clock.wallClock)
        let serverClock = ServerClock(deviceNow: { clock.date.addingTimeInterval(skew) })
        let (client, endpoint) = Self.client(
            ServerClockTransport(server, clock: serverClock), store: InMemoryTokenStore(), clock: clock,
            now: serverClock.wallClock)
        try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        var figures = Figures()
        var falseExpiries = 0
        var leastLeft = TimeInterval.infinity
        for _ in 0...120 {
            if case .expired = client.currentState { falseExpiries += 1 }
            do {
                let token = try await client.validToken()
                let expiry = try #require(try JWT(parsing: token.accessToken).claims.expiration)
                leastLeft = min(leastLeft, expiry.timeIntervalSince(clock.date))
            } catch {
                figures.failedRequests += 1
            }
            clock.advance(by: .seconds(60))
        }
        figures.refreshes = await server.refreshCount
        figures.sessionsLost = client.currentState.hasSession ? 0 : 1
        let requests = await server.tokenRequestCount
        #expect(figures.refreshes == 2, "two hours of 1-hour tokens: \(figures.refreshes) refreshes")
        #expect(requests == 3, "a refresh loop: \(requests) token requests")
        #expect(falseExpiries == 0 && figures.failedRequests == 0)
        #expect(leastLeft >= 250, "a token handed out with \(leastLeft) s left")
        figures.report("device clock \(skew > 0 ? "+1 h" : "-1 h")")
    }

    // MARK: - A token endpoint failing for an hour

    /// A token endpoint that answers 500 to every request while `failing` is set, and counts those requests.
    final class Outage: HTTPTransport, Sendable {
        let server: SimulatedTokenServer
        let failing = Locked(false)
        private let refused = Locked(0)

        init(_ server: SimulatedTokenServer) { self.server = server }

        /// The requests answered 500.
        var refusedRequests: Int { refused.withLock { $0 } }

        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            guard failing.withLock({ $0 }) else { return try await server.send(request, body: body) }
            refused.withLock { $0 += 1 }
            return (HTTPResponse(status: .internalServerError), Data())
        }
    }

    @Test func aTokenEndpointAnswering500ForAnHourGetsAtMostTwelveTokenRequests() async throws {
        let clock = ManualClock()
        let outage = Outage(SimulatedTokenServer(now: clock.wallClock))
        // No refresh timeout: its timer would sleep on the manual clock beside the backoff.
        let (client, endpoint) = Self.client(
            outage, store: InMemoryTokenStore(), clock: clock, configure: { $0.refreshTimeout = nil })
        try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        outage.failing.withLock { $0 = true }
        clock.advance(by: .seconds(3600))  // expired

        // For an hour, the app asks for a token every 10 s (its requests, its timers, its retries); then the
        // endpoint recovers, and the app goes on asking until it gets one.
        var figures = Figures()
        let start = clock.now
        var token: AuthToken?
        while token == nil && start.duration(to: clock.now) < .seconds(3 * 3600) {
            if start.duration(to: clock.now) >= .seconds(3600) { outage.failing.withLock { $0 = false } }
            let got = Locked<AuthToken?>(nil)
            _ = await Self.driving(clock, step: .milliseconds(100), limit: .seconds(3600)) {
                let token = try? await client.validToken()
                got.withLock { $0 = token }
            }
            token = got.withLock { $0 }
            if token == nil {
                figures.failedRequests += 1
                clock.advance(by: .seconds(10))
            }
        }
        figures.refreshes = outage.refusedRequests
        figures.sessionsLost = client.currentState.hasSession ? 0 : 1
        figures.usableAfter = start.duration(to: clock.now) - .seconds(3600)
        #expect(outage.refusedRequests <= 12, "token requests in an hour of 500s: \(outage.refusedRequests)")
        #expect(token != nil, "no token within two hours of the recovery")
        #expect(figures.usableAfter <= .seconds(60), "usable \(figures.usableAfter) after the recovery")
        #expect(client.currentState.hasSession, "a server failure ended the session")
        figures.report("token endpoint answering 500 for an hour")
    }
}

extension AppSessionLifecycle.Availability {
    /// Whether the store was read and holds a session.
    var hasSession: Bool {
        if case .available(let state) = self { return state.hasSession }
        return false
    }
}

// MARK: - Sign-outs finished later

/// Processes sharing one token store and one pending sign-outs directory, with a token server behind a network the
/// test turns off and on.
struct SharedSignOutQueue {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
        "hostile-sign-outs-\(UUID().uuidString)", isDirectory: true)
    let clock = ManualClock()
    let server: SimulatedTokenServer
    let network: HostileLifecycleTests.Network
    let store = InMemoryTokenStore()

    init() {
        server = SimulatedTokenServer(now: clock.wallClock)
        network = HostileLifecycleTests.Network(server)
    }

    /// One more process: a client over the shared store and queue.
    func launch() -> (TokenRefreshClient, TokenEndpoint) {
        let directory = directory
        return HostileLifecycleTests.client(
            network, store: store, clock: clock,
            configure: { $0.pendingSignOuts = PendingSignOuts(store: FileSignOutQueueStore(directory: directory)) })
    }

    /// A process signs alice in and out while the network is down, so her revocation is left pending; the network is
    /// back afterwards.
    func leaveAPendingRevocation() async throws {
        let (process, endpoint) = launch()
        try await process.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        network.set(.down)
        try? await process.signOut()
        network.set(.up)
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// The sign-outs the network or the store could not finish at once: kept, sent again, bounded.
extension HostileLifecycleTests {
    @Test(.timeLimit(.minutes(1)))
    func aRevocationLeftByAnOfflineSignOutIsSentOnceTheNetworkIsBackEvenAfterARelaunch() async throws {
        let world = SharedSignOutQueue()
        defer { world.remove() }
        let (clock, server, network, store) = (world.clock, world.server, world.network, world.store)
        let (client, endpoint) = world.launch()
        let signedIn = try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        let refreshToken = try #require(signedIn.refreshToken)

        network.set(.down)
        var figures = Figures()
        // The clock moves only while the sign-out's 50-ms wait and the revocation's timeout both sleep (the failed
        // revocation is slow to end): moved while the timeout alone slept, it would start the wait that much later.
        figures.usableAfter = await Self.driving(clock, sleepers: 2) { try? await client.signOut() }
        #expect(figures.usableAfter <= .milliseconds(100), "sign-out took \(figures.usableAfter)")
        #expect(client.currentState == .signedOut)
        #expect(await store.load(account: "default").isAbsent)
        #expect(await client.sendPendingSignOuts() == 1, "the revocation is kept while offline")
        figures.failedRequests = network.failures

        // The app is killed and launched again, still offline; then the network comes back.
        let (relaunched, _) = world.launch()
        #expect(await relaunched.restoreSession() == .signedOut)
        #expect(await relaunched.sendPendingSignOuts() == 1)
        #expect(await server.revocationCount == 0)
        network.set(.up)
        _ = await relaunched.networkRestored()
        #expect(await relaunched.sendPendingSignOuts() == 0)
        #expect(await server.revocationCount == 1)
        #expect(await !server.isActive(refreshToken: refreshToken), "the refresh token still works")
        figures.failedRequests = network.failures
        let (third, _) = world.launch()
        #expect(await third.restoreSession() == .signedOut)
        #expect(await third.sendPendingSignOuts() == 0)
        #expect(await server.revocationCount == 1, "a revocation sent twice")
        figures.report("sign-out offline, revoked after a relaunch")
    }

    /// Two processes over one store and one pending sign-outs directory: the second read the (empty) queue at its
    /// launch; the first then signs out offline, and later the second signs another session out offline. Both
    /// revocations are kept: the second's write does not replace the queue the first wrote since its read.
    @Test(.timeLimit(.minutes(1)))
    func offlineSignOutsOfTwoProcessesSharingOneQueueAreBothSent() async throws {
        let world = SharedSignOutQueue()
        defer { world.remove() }
        let (server, network) = (world.server, world.network)
        let (first, endpoint) = world.launch()
        let (second, _) = world.launch()
        let firstSession = try await first.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        #expect(await second.restoreSession().hasSession)

        network.set(.down)
        try? await first.signOut()
        network.set(.up)
        let secondSession = try await second.signIn(
            .password(username: "alice", password: "correct horse", at: endpoint))
        network.set(.down)
        try? await second.signOut()

        network.set(.up)
        let (third, _) = world.launch()
        #expect(await third.restoreSession() == .signedOut)
        #expect(await third.sendPendingSignOuts() == 0)
        let revocations = await server.revocationCount
        #expect(revocations == 2, "revocations sent: \(revocations)")
        for refreshToken in [firstSession.refreshToken, secondSession.refreshToken] {
            #expect(await !server.isActive(refreshToken: try #require(refreshToken)), "a refresh token still works")
        }
    }

    /// Two processes over one pending sign-outs directory sign out offline at the same moment, round after round:
    /// both revocations are kept every time (neither process's write replaces what the other wrote after its read).
    @Test(.timeLimit(.minutes(2)))
    func offlineSignOutsOfTwoProcessesAtTheSameMomentAreBothKept() async throws {
        let rounds = 40
        var kept = 0
        for _ in 0..<rounds {
            let world = SharedSignOutQueue()
            defer { world.remove() }
            let (first, endpoint) = world.launch()
            let (second, _) = world.launch()
            for process in [first, second] {
                try await process.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
            }
            world.network.set(.down)
            await withTaskGroup(of: Void.self) { group in
                for process in [first, second] { group.addTask { try? await process.signOut() } }
            }
            let (third, _) = world.launch()
            kept += await third.sendPendingSignOuts()
        }
        #expect(kept == 2 * rounds, "revocations kept: \(kept) of \(2 * rounds)")
    }

    /// A revocation left by an offline sign-out, sent by two processes at the same moment once the network is back,
    /// round after round: the provider is asked once each time.
    @Test(.timeLimit(.minutes(2)))
    func aPendingRevocationSentByTwoProcessesAtTheSameMomentIsSentOnce() async throws {
        let rounds = 20
        var sent = 0
        var left = 0
        for _ in 0..<rounds {
            let world = SharedSignOutQueue()
            defer { world.remove() }
            try await world.leaveAPendingRevocation()
            let (second, _) = world.launch()
            let (third, _) = world.launch()
            await withTaskGroup(of: Void.self) { group in
                for process in [second, third] { group.addTask { _ = await process.sendPendingSignOuts() } }
            }
            let (fourth, _) = world.launch()
            left += await fourth.sendPendingSignOuts()
            sent += await world.server.revocationCount
        }
        #expect(sent == rounds, "revocations sent: \(sent) for \(rounds) sign-outs")
        #expect(left == 0, "revocations left: \(left)")
    }

    /// A process of this machine claimed the pending revocation and ended mid-send: the next process sends it at
    /// once, without waiting for the claim to expire. A claim of a process still running is left to it.
    @Test(.timeLimit(.minutes(1)))
    func aRevocationClaimedByAProcessThatEndedIsSentByTheNextAtOnce() async throws {
        let world = SharedSignOutQueue()
        defer { world.remove() }
        try await world.leaveAPendingRevocation()
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()

        try await Self.claimThePendingRevocation(in: world, by: getpid())
        let (second, _) = world.launch()
        #expect(await second.sendPendingSignOuts() == 0, "a revocation this process is sending counts as its own")
        #expect(await world.server.revocationCount == 0, "a revocation a running process is sending was sent again")
        try await Self.claimThePendingRevocation(in: world, by: ended.processIdentifier)
        #expect(await second.sendPendingSignOuts() == 0)
        #expect(await world.server.revocationCount == 1, "the revocation of a process that ended was not sent")
    }

    /// A process relaunched offline starts sending the pending revocation at its launch, and that send is still
    /// waiting on the dead network when the app sees the network come back and asks for the pending sign-outs to be
    /// sent: the revocation is sent now, not left to the next trigger because the launch's send failed.
    @Test(.timeLimit(.minutes(1)))
    func aSendAskedForWhileTheLaunchsSendStillWaitsOnTheDeadNetworkSendsAgain() async throws {
        let world = SharedSignOutQueue()
        defer { world.remove() }
        try await world.leaveAPendingRevocation()
        world.network.set(.hanging)
        let (relaunched, _) = world.launch()
        #expect(await relaunched.restoreSession() == .signedOut)
        while world.network.hangs == 0 { await Task.yield() }  // the launch's send waits on the dead network

        world.network.set(.up)
        let asked = Task { await relaunched.sendPendingSignOuts() }
        // The launch's send times out once its timer sleeps on the clock: a move made before the timer sleeps would
        // leave it 10 s ahead of the clock for ever (the test would hang). The yields only give the asked send its
        // turn to start waiting for the launch's; the result is the same if it starts after the timeout.
        await world.clock.waitForSleepers(count: 1)
        for _ in 0..<200 { await Task.yield() }
        world.clock.advance(by: .seconds(10))  // the launch's send times out
        #expect(await asked.value == 0, "a revocation is still pending after the send the app asked for")
        let sent = await world.server.revocationCount
        #expect(sent == 1)
    }

    /// Writes a claim on the first pending revocation of `world`'s queue by process `id` of this machine, valid for
    /// ever.
    static func claimThePendingRevocation(in world: SharedSignOutQueue, by id: Int32) async throws {
        let store = FileSignOutQueueStore(directory: world.directory)
        let claimed = try await store.updateSignOutQueue(account: "default") { data in
            guard let data, var queue = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                var revocations = queue["revocations"] as? [[String: Any]], !revocations.isEmpty
            else { return data }
            revocations[0]["claim"] = [
                "id": "claim-\(id)", "until": Date.distantFuture.timeIntervalSinceReferenceDate, "process": id,
                "host": SenderProcess.host,
            ]
            queue["revocations"] = revocations
            return try? JSONSerialization.data(withJSONObject: queue)
        }
        #expect(claimed.map { String(decoding: $0, as: UTF8.self).contains("claim-\(id)") } == true)
    }

    @Test func aRevocationTheProviderNeverTakesIsDroppedAfterFiveSends() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let network = Network(server)
        let (client, endpoint) = Self.client(network, store: InMemoryTokenStore(), clock: clock)
        try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        network.set(.down)
        try await client.signOut()
        var left: [Int] = []
        for _ in 0..<8 { left.append(await client.sendPendingSignOuts()) }
        #expect(network.failures == 5, "revocation sends: \(network.failures)")
        #expect(left == [1, 1, 1, 0, 0, 0, 0, 0])
    }

    @Test func aPendingRemovalIsKeptInTheKeychainBesideTheSession() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let keychain = KeychainSimulator()
        let store = KeychainTokenStore(configuration: .init(service: "com.example.tokens"), keychain: keychain)
        let stubborn = StubbornKeychainStore(base: store)
        let (client, endpoint) = Self.client(server, store: stubborn, clock: clock)
        try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        stubborn.failsRemovals.withLock { $0 = true }
        await #expect(throws: TokenRefreshError.storageUnavailable) { try await client.signOut() }
        #expect(try await store.loadSignOutQueue(account: "default") != nil, "nothing written down in the Keychain")

        stubborn.failsRemovals.withLock { $0 = false }
        let (relaunched, _) = Self.client(server, store: store, clock: clock)
        #expect(await relaunched.restoreSession() == .signedOut)
        #expect(await store.load(account: "default").isAbsent)
        #expect(try await store.loadSignOutQueue(account: "default") == nil)
    }

    @Test func aNotifyingStoreKeepsPendingSignOutsInTheKeychainItWraps() async throws {
        struct Silent: SessionChangeNotifier {
            func post() {}
            func changes() -> AsyncStream<Void> { AsyncStream { $0.finish() } }
        }
        let keychain = KeychainSimulator()
        let store = KeychainTokenStore(configuration: .init(service: "com.example.tokens"), keychain: keychain)
        let notifying = NotifyingTokenStore(store, Silent())
        try await notifying.saveSignOutQueue(Data("pending".utf8), account: "default")
        #expect(try await store.loadSignOutQueue(account: "default") == Data("pending".utf8))
        keychain.reboot()
        await #expect(throws: PersistenceError.unavailable) {
            _ = try await notifying.loadSignOutQueue(account: "default")
        }
        let inMemory = NotifyingTokenStore(StubbornStore(), Silent())
        try await inMemory.saveSignOutQueue(Data("kept".utf8), account: "default")
        #expect(try await inMemory.loadSignOutQueue(account: "default") == Data("kept".utf8))
    }

    @Test func aNotifyingStoreChangesPendingSignOutsInOneStepOfTheStoreItWraps() async throws {
        struct Silent: SessionChangeNotifier {
            func post() {}
            func changes() -> AsyncStream<Void> { AsyncStream { $0.finish() } }
        }
        /// A store whose one-step change is its own (as a lock file's or a row lock's is): counted, so a wrapper that
        /// reads and writes instead is seen.
        actor OneStepStore: TokenStore, SignOutQueueStore {
            var blob: Data?
            var oneStepChanges = 0
            func load(account: String) async -> TokenStoreRead { .absent }
            func save(
                _ session: StoredSession, account: String, condition: WriteCondition
            ) async throws(PersistenceError) {}
            func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {}
            func loadSignOutQueue(account: String) async throws(PersistenceError) -> Data? { blob }
            func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError) { blob = data }
            func updateSignOutQueue(
                account: String, _ update: @escaping @Sendable (Data?) -> Data?
            ) async throws(PersistenceError) -> Data? {
                oneStepChanges += 1
                blob = update(blob)
                return blob
            }
        }
        let base = OneStepStore()
        let notifying = NotifyingTokenStore(base, Silent())
        let kept = try await notifying.updateSignOutQueue(account: "default") { _ in Data("pending".utf8) }
        #expect(kept == Data("pending".utf8))
        #expect(await base.oneStepChanges == 1, "the wrapped store's one-step change was not used")
    }

    @Test func theSessionJournalShowsTheServerTimeOffset() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(configuration: .init(omitsLifetime: true), now: clock.wallClock)
        let serverClock = ServerClock(deviceNow: { clock.date.addingTimeInterval(3600) })
        let (client, endpoint) = Self.client(
            ServerClockTransport(server, clock: serverClock), store: InMemoryTokenStore(), clock: clock,
            configure: { $0.serverClock = serverClock })
        try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        let entry = try #require(client.sessionJournal().last)
        #expect(entry.serverTimeOffset.map { abs($0 + 3600) <= 1 } == true)
        #expect(entry.description.contains("serverTimeOffset=-3600s"))
        #expect(client.currentState == .signedIn(userID: "alice") || client.currentState.hasSession)
    }
}

/// A Keychain store whose session removals fail while `failsRemovals` is set; its pending sign-outs go to the
/// Keychain.
final class StubbornKeychainStore: TokenStore, SignOutQueueStore, Sendable {
    let base: KeychainTokenStore
    let failsRemovals = Locked(false)

    init(base: KeychainTokenStore) { self.base = base }

    func load(account: String) async -> TokenStoreRead { await base.load(account: account) }

    func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await base.save(session, account: account, condition: condition)
    }

    func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        if failsRemovals.withLock({ $0 }) { throw PersistenceError.lockTimedOut }
        try await base.remove(account: account, condition: condition)
    }

    func loadSignOutQueue(account: String) async throws(PersistenceError) -> Data? {
        try await base.loadSignOutQueue(account: account)
    }

    func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError) {
        try await base.saveSignOutQueue(data, account: account)
    }
}

extension HostileLifecycleTests.StubbornStore: SignOutQueueStore {
    func loadSignOutQueue(account: String) async throws(PersistenceError) -> Data? {
        try await base.loadSignOutQueue(account: account)
    }

    func saveSignOutQueue(_ data: Data?, account: String) async throws(PersistenceError) {
        try await base.saveSignOutQueue(data, account: account)
    }
}
