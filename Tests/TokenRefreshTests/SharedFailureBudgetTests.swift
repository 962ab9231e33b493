import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitCompatibility
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// The failure budget is the session's: every process and replica sharing the session's store counts the server
/// failures the others met (``StoredSession/recentServerFailures``), so a token endpoint failing for an hour gets
/// `failureBudget` requests for the session, not that many per process.
@Suite(.logLeakCheck()) struct SharedFailureBudgetTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let failure = TokenRefreshError.transient.with(status: 500)
    static let sessionID = "5e55104d0000000000000000000000aa"

    /// The session every machine starts from: a one-hour token received at `start`, stored at generation 3.
    static func stored(failures: [Date]? = nil) -> StoredSession {
        let token = AuthToken(
            accessToken: "access-token-budget-one", refreshToken: "refresh-token-budget-one", receivedAt: start,
            lifetime: 3600)
        return StoredSession(
            token: token, userID: "user-1", generation: 3, sessionID: sessionID, dpopKey: nil,
            recentServerFailures: failures)
    }

    /// A machine (one process) that has read the stored session, with a budget of `budget` failures an hour and no
    /// retries inside a refresh.
    static func machine(budget: Int = 3) -> SessionMachine {
        var backoff = TokenRefreshClient.Backoff(retries: 0, initialDelay: .seconds(1))
        backoff.failureBudget = budget
        var machine = SessionMachine(
            configuration: .init(maximumRefreshes: 100, backoff: backoff), requiresRefreshToken: true)
        _ = machine.loaded(stored(), now: start)
        return machine
    }

    /// One refresh under the store's lock at wall time `now` (`elapsed` on this machine's clock), driven as the actor
    /// drives it: the store holds `stored`; an attempt that is made fails with a 500. Returns the error the attempt was
    /// held back with (`nil` when it was made), and the write the machine asks for before the lock is released.
    static func refreshFailing(
        _ machine: inout SessionMachine, stored: StoredSession, now: Date, elapsed: Duration
    ) -> (blocked: TokenRefreshError?, write: SessionMachine.StoreStep) {
        let flight = RefreshFlight()
        let epoch = machine.beginFlight(flight, seed: nil, forced: false)
        _ = machine.flightEvent(.lockTaken, epoch: epoch, now: now, elapsed: elapsed)
        // The stored failures are counted before the attempt is admitted, in the same event.
        let action = machine.flightEvent(.storeRead(.found(stored)), epoch: epoch, now: now, elapsed: elapsed)
        var blocked: TokenRefreshError?
        switch action.work {
        case .call:
            _ = machine.flightEvent(.callFailed(failure), epoch: epoch, now: now, elapsed: elapsed, random: { 0 })
        case .blocked(let error):
            blocked = error
        case let other:
            Issue.record("expected the refresh token to be presented, got \(other)")
        }
        let write = machine.serverFailuresWrite(now: now, elapsed: elapsed).store
        _ = machine.flightEnded(.failure(blocked ?? failure), flight, epoch: epoch)
        return (blocked, write)
    }

    /// The session `write` stores, after checking that it is the stored session itself (same tokens, user, identity
    /// and generation), written only over that one.
    static func recorded(_ write: SessionMachine.StoreStep, over stored: StoredSession) -> StoredSession? {
        guard case .save(let session, let condition) = write else {
            Issue.record("expected the record to be written, got \(write)")
            return nil
        }
        #expect(session.token == stored.token && session.userID == stored.userID)
        #expect(session.sessionID == stored.sessionID && session.generation == stored.generation)
        #expect(condition == .session(stored.sessionID, generation: stored.generation))
        return session
    }

    // MARK: - The machine

    @Test func failuresAnotherProcessRecordedHoldBackTheAttemptThatWouldSpendTheBudget() throws {
        // Process A fails twice; process B (whose monotonic clock started 1,000 s later) reads A's record and fails
        // once: the budget of 3 is spent, and A's next attempt is held back though A itself failed twice only.
        var processA = Self.machine()
        var processB = Self.machine()
        var stored = Self.stored()
        for second in [0, 30] {
            let now = Self.start.addingTimeInterval(4000 + Double(second))
            let (blocked, write) = Self.refreshFailing(
                &processA, stored: stored, now: now, elapsed: .seconds(4000 + second))
            #expect(blocked == nil)
            stored = try #require(Self.recorded(write, over: stored))
            processA.serverFailuresWriteEnded(.success(nil))
        }
        #expect(stored.recentServerFailures?.count == 2)
        let atSixty = Self.start.addingTimeInterval(4060)
        let (blockedB, writeB) = Self.refreshFailing(&processB, stored: stored, now: atSixty, elapsed: .seconds(3060))
        #expect(blockedB == nil)
        stored = try #require(Self.recorded(writeB, over: stored))
        processB.serverFailuresWriteEnded(.success(nil))
        #expect(stored.recentServerFailures == [0, 30, 60].map { Self.start.addingTimeInterval(4000 + Double($0)) })

        // A's 4th request of the session (its 3rd) is held back until the first failure leaves the hour's window.
        let atNinety = Self.start.addingTimeInterval(4090)
        let (blockedA, writeA) = Self.refreshFailing(
            &processA, stored: stored, now: atNinety, elapsed: .seconds(4090))
        #expect(blockedA?.retryAfter == .seconds(3600 - 90))
        #expect(writeA == .none)
        // Held back outside the lock too: no refresh starts until then.
        let expiredAt = atNinety.addingTimeInterval(60)
        guard case .fail = processA.decide(.validToken, now: expiredAt, elapsed: .seconds(4150)) else {
            Issue.record("the spent budget must hold the next call back")
            return
        }
        // One process alone (A's own two failures) would have sent it.
        var alone = Self.machine()
        var own = Self.stored()
        for second in [0, 30] {
            let now = Self.start.addingTimeInterval(4000 + Double(second))
            let (_, write) = Self.refreshFailing(&alone, stored: own, now: now, elapsed: .seconds(4000 + second))
            own = try #require(Self.recorded(write, over: own))
            alone.serverFailuresWriteEnded(.success(nil))
        }
        #expect(Self.refreshFailing(&alone, stored: own, now: atNinety, elapsed: .seconds(4090)).blocked == nil)
    }

    @Test func aRecordOfAnotherSessionAnAbsurdOneAndOldFailuresAreNotCounted() {
        let now = Self.start.addingTimeInterval(8000)
        let cases: [(String, StoredSession)] = [
            (
                "older than the window",
                Self.stored(failures: (0..<3).map { now.addingTimeInterval(-3700 - Double($0)) })
            ),
            (
                "an hour ahead of the clock",
                Self.stored(failures: (0..<3).map { now.addingTimeInterval(3600 + Double($0)) })
            ),
            (
                "another session's",
                StoredSession(
                    token: Self.stored().token, userID: "user-1", generation: 3, sessionID: "another-session-id",
                    dpopKey: nil, recentServerFailures: (0..<3).map { now.addingTimeInterval(-Double($0)) })
            ),
        ]
        for (name, stored) in cases {
            var machine = Self.machine()
            machine.storedFailuresRead(.found(stored), now: now, elapsed: .seconds(500))
            #expect(machine.blockedError(at: .seconds(500)) == nil, "a record \(name) held the attempt back")
        }
        // Within the leeway (another process's clock a little ahead), a record counts.
        var machine = Self.machine()
        let ahead = Self.stored(failures: (0..<3).map { now.addingTimeInterval(30 + Double($0)) })
        machine.storedFailuresRead(.found(ahead), now: now, elapsed: .seconds(500))
        #expect(machine.blockedError(at: .seconds(500)) != nil)
    }

    @Test func theRecordStaysBoundedAndASuccessClearsIt() throws {
        // A record of 20 failures from a process with a larger budget: this one keeps its own budget's newest.
        let now = Self.start.addingTimeInterval(8000)
        var stored = Self.stored(failures: (0..<20).map { now.addingTimeInterval(Double($0 * 10) - 400) })
        var machine = Self.machine(budget: 3)
        let (blocked, write) = Self.refreshFailing(&machine, stored: stored, now: now, elapsed: .seconds(100))
        #expect(blocked != nil)
        #expect(write == .none)
        // Its own failure after the hold: written with at most 3 instants, all within the window.
        let later = now.addingTimeInterval(3600)
        let (_, next) = Self.refreshFailing(&machine, stored: stored, now: later, elapsed: .seconds(3700))
        stored = try #require(Self.recorded(next, over: stored))
        let record = try #require(stored.recentServerFailures)
        #expect(record.count <= 3 && record.allSatisfy { later.timeIntervalSince($0) < 3600 })
        machine.serverFailuresWriteEnded(.success(nil))
        machine.attemptSucceeded()
        #expect(machine.blockedError(at: .seconds(3800)) == nil)
        #expect(machine.serverFailuresWrite(now: later, elapsed: .seconds(3800)).store == .none)
    }

    @Test func aFailedWriteOfTheRecordKeepsTheFailuresForTheNextOne() throws {
        var machine = Self.machine()
        let stored = Self.stored()
        let now = Self.start.addingTimeInterval(4000)
        let (_, first) = Self.refreshFailing(&machine, stored: stored, now: now, elapsed: .seconds(10))
        _ = try #require(Self.recorded(first, over: stored))
        machine.serverFailuresWriteEnded(.failure(.writeFailed))
        let (_, second) = Self.refreshFailing(
            &machine, stored: stored, now: now.addingTimeInterval(20), elapsed: .seconds(30))
        let written = try #require(Self.recorded(second, over: stored))
        #expect(written.recentServerFailures == [now, now.addingTimeInterval(20)])
    }

    @Test func aHeldAttemptIsToldTheLaterOfTheBudgetsHoldAndRetryAfter() {
        var breaker = SessionMachine.Breaker()
        var backoff = TokenRefreshClient.Backoff(retries: 0, initialDelay: .seconds(1))
        backoff.failureBudget = 1
        // The budget is spent at 10 s (held for its hour), and the server asked for two hours.
        let spent = breaker.recordServerFailure(at: .seconds(10), backoff: backoff)
        #expect(spent)
        breaker.holdBack(until: .seconds(7210), after: Self.failure.with(retryAfter: .seconds(7200)))
        let blocked = breaker.blocked(at: .seconds(10), maximum: 5, window: .seconds(30))
        #expect(blocked == .transient && blocked?.retryAfter == .seconds(7200))
        // The network is back: Retry-After is forgotten, the spent budget still holds.
        breaker.clearBackoff()
        #expect(breaker.blocked(at: .seconds(10), maximum: 5, window: .seconds(30))?.retryAfter == .seconds(3600))
    }

    // MARK: - The stored field

    @Test func aSessionWithoutTheRecordOrWithACorruptOneStillLoads() throws {
        let session = Self.stored(failures: [Self.start])
        let encoded = try JSONEncoder().encode(session)
        #expect(try JSONDecoder().decode(StoredSession.self, from: encoded) == session)
        var object = try #require(try JSONSerialization.jsonObject(with: encoded) as? [String: Any])
        object["recentServerFailures"] = nil
        let old = try JSONDecoder().decode(
            StoredSession.self, from: JSONSerialization.data(withJSONObject: object))
        #expect(old == Self.stored())
        for corrupt in ["a string" as Any, ["x", 1] as [Any], ["nested": true] as Any] {
            object["recentServerFailures"] = corrupt
            let loaded = try JSONDecoder().decode(
                StoredSession.self, from: JSONSerialization.data(withJSONObject: object))
            #expect(loaded == Self.stored(), "a corrupt record must load as none")
        }
    }

    // MARK: - Through the public API

    /// A strategy whose token endpoint answers 500 while `failing` is set, and counts the requests it refused.
    final class Outage: RefreshStrategy {
        let failing = Locked(true)
        let refused = Locked(0)
        let refreshed = Locked(0)

        func refresh(using refreshToken: String?) async throws -> TokenResponse {
            if failing.withLock({ $0 }) {
                refused.withLock { $0 += 1 }
                throw TokenRefreshError.transient.with(status: 500)
            }
            let count = refreshed.withLock { count in
                count += 1
                return count
            }
            return TokenResponse(
                accessToken: "access-token-budget-\(count + 1)", refreshToken: "refresh-token-budget-\(count + 1)",
                expiresIn: 3600)
        }
    }

    @Test func twoClientsOnOneStoreSpendOneBudgetInAnHourOf500s() async throws {
        let store = InMemoryTokenStore()
        let outage = Outage()
        // Two processes: their monotonic clocks started 1,000 s apart; their wall clocks agree.
        let clockA = ManualClock(startDate: Self.start)
        let clockB = ManualClock(startDate: Self.start.addingTimeInterval(-1000))
        clockB.advance(by: .seconds(1000))
        let configuration = TokenRefreshClient.Configuration(refreshTimeout: nil, backoff: .init(retries: 0))
        let clients = [clockA, clockB].map { clock in
            TokenRefreshClient(
                strategy: outage, store: store, configuration: configuration, clock: clock, now: clock.wallClock,
                random: { 0.5 })
        }
        let signedIn = AuthToken(
            accessToken: "access-token-budget-1", refreshToken: "refresh-token-budget-1", receivedAt: Self.start,
            lifetime: 3600)
        _ = try await clients[0].signIn(with: signedIn, userID: "user-1")
        guard case .found(let before) = await store.load(account: "default") else {
            Issue.record("the session was not stored")
            return
        }
        let advance = { (step: Duration) in
            clockA.advance(by: step)
            clockB.advance(by: step)
        }
        advance(.seconds(3600))  // expired

        // For an hour each client asks for a token every 10 s; then the endpoint recovers, and they ask until both
        // have one.
        var tokens: [AuthToken?] = [nil, nil]
        for tick in 0..<420 where tokens.contains(where: { $0 == nil }) {
            if tick == 360 {
                // The hour is over: the session as it was signed in, with the record of the session's failures.
                guard case .found(let during) = await store.load(account: "default") else {
                    Issue.record("the session was lost during the outage")
                    return
                }
                #expect(during.token == before.token && during.generation == before.generation)
                #expect(during.sessionID == before.sessionID)
                #expect((during.recentServerFailures?.count ?? 0) <= 12)
                outage.failing.withLock { $0 = false }
            }
            for (index, client) in clients.enumerated() where tokens[index] == nil {
                let token = try? await client.validToken()
                if tick >= 360 { tokens[index] = token }
            }
            advance(.seconds(10))
        }
        let refused = outage.refused.withLock { $0 }
        #expect(refused == 12, "token requests in an hour of 500s by two clients of one session: \(refused)")
        #expect(tokens.allSatisfy { $0 != nil }, "a client had no token within 10 min of the recovery")
        #expect(outage.refreshed.withLock { $0 } == 1)
        guard case .found(let after) = await store.load(account: "default") else {
            Issue.record("the session was lost")
            return
        }
        #expect(after.sessionID == before.sessionID && after.generation == before.generation + 1)
        #expect(after.recentServerFailures == nil, "a success clears the record")
    }

    // MARK: - Stores that cannot keep the record

    /// The FitIQ and Lume adapters keep the pair alone: a failed refresh's record write changes nothing there, so
    /// the generation the client knows stays the stored one, and the sign-out that follows removes the session.
    @Test(arguments: ["FitIQ", "Lume"])
    func aStoreThatCannotKeepTheRecordKeepsItsGenerationAndTheSignOutRemovesTheSession(kind: String) async throws {
        let backing = InMemoryTokenStore()
        let store: any TokenStore =
            kind == "FitIQ"
            ? AuthTokenPersistenceStore(try await TokenStoreAuthTokenPersistence(store: backing))
            : TokenStorageStore(TokenStoreTokenStorage(store: backing))
        let clock = ManualClock(startDate: Self.start)
        let client = TokenRefreshClient(
            strategy: Outage(), store: store,
            configuration: .init(refreshTimeout: nil, backoff: .init(retries: 0)), clock: clock,
            now: clock.wallClock, random: { 0.5 })
        let signedIn = AuthToken(
            accessToken: "access-token-budget-1", refreshToken: "refresh-token-budget-1", receivedAt: Self.start,
            lifetime: 3600)
        _ = try await client.signIn(with: signedIn, userID: nil)
        guard case .found(let before) = await store.load(account: "default") else {
            Issue.record("the session was not stored")
            return
        }
        clock.advance(by: .seconds(3600))  // expired
        let failed = try? await client.validToken()
        #expect(failed == nil)
        guard case .found(let after) = await store.load(account: "default") else {
            Issue.record("the session was lost")
            return
        }
        #expect(after.generation == before.generation, "the record's write moved the generation")
        try await client.signOut()
        let left = await store.load(account: "default")
        guard case .absent = left else {
            Issue.record("the sign-out left the session stored: \(left)")
            return
        }
    }
}
