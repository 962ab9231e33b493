import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting
import TokenRefresh

/// Expiry and proactive refresh judged by the server's clock when the device's is off, and the offset estimate
/// that makes it so.
@Suite(.logLeakCheck()) struct ServerClockTests {
    /// What a session saw over two hours of use, one `validToken()` a minute.
    struct Run {
        var refreshes = 0
        var tokenRequests = 0
        /// The fewest seconds any returned token had left, by the server's clock.
        var leastRemaining: TimeInterval = .infinity
        var offset: TimeInterval = 0
    }

    /// A device whose clock is `skew` seconds ahead of the server's, a server whose answers carry a `Date` header
    /// and tokens whose expiry is only their `exp` (no `expires_in`, no `iat`: server time), and a client judging
    /// time through a ``ServerClock``.
    private func twoHoursOfUse(deviceAheadBy skew: TimeInterval) async throws -> Run {
        let clock = ManualClock()
        let server = SimulatedTokenServer(configuration: .init(omitsLifetime: true), now: clock.wallClock)
        let deviceNow: @Sendable () -> Date = { clock.date.addingTimeInterval(skew) }
        let serverClock = ServerClock(deviceNow: deviceNow)
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: "app"),
            transport: ServerClockTransport(server, clock: serverClock), now: serverClock.wallClock)
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), store: InMemoryTokenStore(), clock: clock,
            now: serverClock.wallClock, random: { 0.5 })
        try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))

        var run = Run()
        for _ in 0...120 {
            let token = try await client.validToken()
            let expiry = try #require(try JWT(parsing: token.accessToken).claims.expiration)
            run.leastRemaining = min(run.leastRemaining, expiry.timeIntervalSince(clock.date))
            clock.advance(by: .seconds(60))
        }
        run.refreshes = await server.refreshCount
        run.tokenRequests = await server.tokenRequestCount
        run.offset = serverClock.offset
        return run
    }

    @Test(arguments: [3600.0, -3600.0])
    func deviceClockAnHourOffNeitherLoopsNorExpiresNorRefreshesLate(skew: TimeInterval) async throws {
        let run = try await twoHoursOfUse(deviceAheadBy: skew)
        // Tokens live 3600 s and are due 310 s ahead: issued at 0 s, refreshed at 3300 s and 6600 s.
        #expect(run.refreshes == 2, "refreshes over two hours: \(run.refreshes)")
        #expect(run.tokenRequests == 3, "token requests (sign-in included): \(run.tokenRequests)")
        #expect(run.leastRemaining >= 250, "least time left on a returned token: \(run.leastRemaining) s")
        #expect(abs(run.offset + skew) <= 1, "learned offset \(run.offset) s for a device \(skew) s ahead")
    }

    /// A session signed in by one process (whose sign-in taught it the server's time), restored by another on the same
    /// device that has not talked to the token server yet: it judges the token by the server's time stored with the
    /// session, so it neither reads it as expired (device ahead) nor hands it out past its refresh time (behind).
    @Test(arguments: [3600.0, -3600.0])
    func aRestoredSessionIsJudgedByTheServerTimeStoredWithIt(skew: TimeInterval) async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(configuration: .init(omitsLifetime: true), now: clock.wallClock)
        let store = InMemoryTokenStore()
        func process() -> (TokenRefreshClient, ServerClock, TokenEndpoint) {
            let serverClock = ServerClock(deviceNow: { clock.date.addingTimeInterval(skew) })
            let endpoint = TokenEndpoint(
                url: tokenURL, client: OAuthClient(id: "app"),
                transport: ServerClockTransport(server, clock: serverClock), now: serverClock.wallClock)
            let client = TokenRefreshClient(
                strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store,
                configuration: .init(serverClock: serverClock), clock: clock, now: serverClock.wallClock,
                random: { 0.5 })
            return (client, serverClock, endpoint)
        }
        let (first, _, endpoint) = process()
        try await first.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        let stored = try #require(await store.load(account: "default").session)
        #expect(
            abs((stored.serverTimeOffset ?? 0) + skew) <= 1,
            "stored offset: \(String(describing: stored.serverTimeOffset))")

        let (second, secondClock, _) = process()
        #expect(
            await second.restoreSession() == .signedIn(userID: stored.userID), "restored with the device \(skew) s off")
        #expect(abs(secondClock.offset + skew) <= 1, "the restoring process's offset: \(secondClock.offset)")
        clock.advance(by: .seconds(3500))  // 100 s left by the server's clock: due
        let token = try await second.validToken()
        let expiry = try #require(try JWT(parsing: token.accessToken).claims.expiration)
        #expect(expiry.timeIntervalSince(clock.date) >= 250, "time left: \(expiry.timeIntervalSince(clock.date)) s")
        #expect(await server.refreshCount == 1)
    }

    @Test func aStoredOffsetSeedsOnlyAClockThatLearnedNoneItself() {
        let clock = ServerClock(deviceNow: { Date(timeIntervalSince1970: 1_800_000_000) })
        #expect(clock.learnedOffset == nil)
        clock.seed(storedOffset: -3600)
        #expect(clock.offset == -3600 && clock.learnedOffset == -3600)
        clock.seed(storedOffset: -1800)  // a later read of a session another process stored: a seed replaces a seed
        #expect(clock.offset == -1800)
        for unusable in [TimeInterval.nan, .infinity, 2 * 86_400] {
            clock.seed(storedOffset: unusable)
            #expect(clock.offset == -1800)
        }

        let learned = ServerClock(deviceNow: { Date(timeIntervalSince1970: 1_800_000_000) })
        learned.record(
            serverTime: Date(timeIntervalSince1970: 1_799_996_400),
            deviceTime: Date(timeIntervalSince1970: 1_800_000_000))
        learned.seed(storedOffset: 600)
        #expect(learned.offset == -3600, "a stored offset replaced one the clock learned: \(learned.offset)")

        learned.reset()  // the device's clock was changed: an offset stored before may be stale
        learned.seed(storedOffset: -3600)
        #expect(learned.offset == 0 && learned.learnedOffset == nil)
    }

    @Test func oneWildDateAfterASeedDoesNotMoveTheOffset() async throws {
        let estimate = Estimate()
        estimate.clock.seed(storedOffset: -3600)
        try await estimate.answer(date: Self.httpDate(estimate.serverNow.addingTimeInterval(3 * 3600)))
        #expect(abs(estimate.clock.offset + 3600) <= 1, "offset after a wild first Date: \(estimate.clock.offset)")
        try await estimate.answer()
        #expect(abs(estimate.clock.offset + 3600) <= 1)
        #expect(abs(estimate.clock.now().timeIntervalSince(estimate.serverNow)) <= 1)
    }

    // MARK: - The estimate

    /// A token endpoint that answers `200 {}` with the `Date` header it is given for each request.
    private actor DatedAnswers: HTTPTransport {
        var headers: [HTTPFields] = []
        var body = Data("{}".utf8)

        func next(date: String?, age: String? = nil, body: Data = Data("{}".utf8)) {
            var fields = HTTPFields()
            if let date { fields[.date] = date }
            if let age { fields[.age] = age }
            headers.append(fields)
            self.body = body
        }

        func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
            let fields = headers.isEmpty ? HTTPFields() : headers.removeFirst()
            return (HTTPResponse(status: .ok, headerFields: fields), self.body)
        }
    }

    private static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    /// A clock fed by `answers`, for a device 3600 s ahead of a server whose time is `serverNow()`.
    private struct Estimate {
        let device = ManualClock()
        let answers = DatedAnswers()
        let clock: ServerClock
        let transport: ServerClockTransport

        init() {
            let device = device
            clock = ServerClock(deviceNow: { device.date.addingTimeInterval(3600) })
            transport = ServerClockTransport(answers, clock: clock)
        }

        var serverNow: Date { device.date }

        /// One answer dated `date` (the server's time when `nil`).
        func answer(date: String? = nil, age: String? = nil, body: Data = Data("{}".utf8)) async throws {
            await answers.next(date: date ?? ServerClockTests.httpDate(serverNow), age: age, body: body)
            _ = try await transport.send(
                HTTPRequest(method: .post, scheme: "https", authority: "127.0.0.1", path: "/oauth/token"), body: nil)
            device.advance(by: .seconds(30))
        }
    }

    @Test func oneWildDateAmongSaneOnesDoesNotMoveTheOffset() async throws {
        let estimate = Estimate()
        try await estimate.answer()
        try await estimate.answer()
        #expect(abs(estimate.clock.offset + 3600) <= 1)
        let threeHoursOff = Self.httpDate(estimate.serverNow.addingTimeInterval(3 * 3600))
        for wild in ["Sat, 01 Jan 2000 00:00:00 GMT", threeHoursOff] {
            try await estimate.answer(date: wild)
            #expect(abs(estimate.clock.offset + 3600) <= 1, "offset after a wild Date: \(estimate.clock.offset)")
            try await estimate.answer()
            try await estimate.answer()
        }
        #expect(abs(estimate.clock.now().timeIntervalSince(estimate.serverNow)) <= 1)
    }

    @Test func aWildFirstDateIsReplacedOnceTwoOthersAgree() async throws {
        let estimate = Estimate()
        try await estimate.answer(date: Self.httpDate(estimate.serverNow.addingTimeInterval(3 * 3600)))
        #expect(abs(estimate.clock.offset - 7200) <= 1, "the first sample is taken: \(estimate.clock.offset)")
        try await estimate.answer()
        #expect(abs(estimate.clock.offset - 7200) <= 1, "two samples that disagree move nothing")
        try await estimate.answer()
        #expect(abs(estimate.clock.offset + 3600) <= 1, "offset after two sane samples: \(estimate.clock.offset)")
    }

    @Test func aTokensIssuedAtCountsOnlyWhenItAgreesWithItsDate() async throws {
        let estimate = Estimate()
        let issuedAt = Int(estimate.serverNow.timeIntervalSince1970)
        let token = JWTBuilder.token(claims: #"{"sub":"user-1","iat":\#(issuedAt),"exp":\#(issuedAt + 3600)}"#)
        let body = Data(#"{"access_token":"\#(token)","token_type":"Bearer"}"#.utf8)
        try await estimate.answer(body: body)
        #expect(abs(estimate.clock.offset + 3600) <= 1)
        // Two wild Dates in a row: with the iat's weight the first answer still holds its own.
        for _ in 0..<2 {
            try await estimate.answer(date: Self.httpDate(estimate.serverNow.addingTimeInterval(3 * 3600)))
        }
        #expect(abs(estimate.clock.offset + 3600) <= 1, "offset after two wild Dates: \(estimate.clock.offset)")

        let stale = Estimate()
        let staleToken = JWTBuilder.token(claims: #"{"sub":"user-1","iat":\#(issuedAt - 600)}"#)
        try await stale.answer(body: Data(#"{"access_token":"\#(staleToken)"}"#.utf8))
        #expect(abs(stale.clock.offset + 3600) <= 1, "the Date alone is the first sample")
        // A Date that agrees with the stale iat only: had the iat counted, the two would outvote the first Date.
        try await stale.answer(date: Self.httpDate(stale.serverNow.addingTimeInterval(-600)))
        #expect(abs(stale.clock.offset + 3600) <= 1, "an iat that disagrees with its Date added no weight")
    }

    @Test func unusableDatesAreIgnored() async throws {
        let estimate = Estimate()
        for date in ["", "yesterday", String(repeating: "9", count: 500), "Sat, 01 Jan 2000 00:00:00 GMT"] {
            try await estimate.answer(date: date)
            try await estimate.answer(date: date)
        }
        try await estimate.answer(age: "120")
        try await estimate.answer(age: "120")
        #expect(estimate.clock.offset == 0)
    }

    @Test func anOffsetUnderTwoSecondsIsNone() async {
        let clock = ServerClock(deviceNow: { Date(timeIntervalSince1970: 1_800_000_000) })
        for _ in 0..<3 {
            clock.record(
                serverTime: Date(timeIntervalSince1970: 1_800_000_001.5),
                deviceTime: Date(timeIntervalSince1970: 1_800_000_000))
        }
        #expect(clock.offset == 0)
        // Three samples 10 s ahead outnumber the three small ones among the last five.
        for _ in 0..<3 {
            clock.record(
                serverTime: Date(timeIntervalSince1970: 1_800_000_010),
                deviceTime: Date(timeIntervalSince1970: 1_800_000_000))
        }
        #expect(clock.offset == 10)
        clock.reset()
        #expect(clock.offset == 0)
        #expect(clock.now() == Date(timeIntervalSince1970: 1_800_000_000))
    }
}
