import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// The session's rules, tested synchronously on the value type that holds them: no clock, store, task or actor.
@Suite(.logLeakCheck()) struct SessionMachineTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)

    /// A machine whose store has been read and holds a session with a one-hour token received at `start`.
    static func machine(
        configuration: TokenRefreshClient.Configuration = .init(backoff: .init(retries: 0)),
        refreshToken: String? = "refresh-token-machine-one",
        requiresRefreshToken: Bool = true
    ) -> SessionMachine {
        var machine = SessionMachine(configuration: configuration, requiresRefreshToken: requiresRefreshToken)
        let token = AuthToken(
            accessToken: "access-token-machine-one", refreshToken: refreshToken, receivedAt: start, lifetime: 3600)
        _ = machine.loaded(StoredSession(token: token, userID: "user-1", generation: 1), now: start)
        return machine
    }

    /// The session another audience's client read from the store: user-1's one-hour token received at `start`.
    static func storedSession(generation: UInt64) -> StoredSession {
        let token = AuthToken(
            accessToken: "access-token-machine-one", refreshToken: "refresh-token-machine-one", receivedAt: start,
            lifetime: 3600)
        return StoredSession(token: token, userID: "user-1", generation: generation)
    }

    static let fresh = start.addingTimeInterval(60)
    static let due = start.addingTimeInterval(3500)
    static let expired = start.addingTimeInterval(4000)

    func startedFlight(_ machine: inout SessionMachine, now: Date = due) throws -> (RefreshFlight, UInt64) {
        guard case .run(let flight, let epoch, _) = machine.decide(.validToken, now: now, elapsed: .zero) else {
            Issue.record("expected a refresh to start")
            throw CancellationError()
        }
        return (flight, epoch)
    }

    /// One refresh of the session, driven through the machine's events as the actor drives it: the store still holds
    /// the session's pair, the strategy answers with `token`'s access token (and refresh token, if any), and the
    /// new pair's write lands (`persisted`) or fails at `elapsed`.
    static func refresh(
        _ machine: inout SessionMachine, answering token: AuthToken, persisted: Bool, elapsed: Duration
    ) {
        let flight = RefreshFlight()
        let epoch = machine.beginFlight(flight, seed: nil, forced: true)
        _ = machine.flightEvent(.lockTaken, epoch: epoch, now: start, elapsed: elapsed)
        let held = machine.session.map { StoredSession(token: $0.token, userID: $0.userID, generation: $0.generation) }
        let read = machine.flightEvent(
            .storeRead(held.map(TokenStoreRead.found) ?? .absent), epoch: epoch, now: start, elapsed: elapsed)
        guard case .call = read.work else {
            Issue.record("expected the held refresh token to be presented, got \(read)")
            return
        }
        let response = TokenResponse(
            accessToken: token.accessToken, refreshToken: token.refreshToken, expiresIn: 3600)
        let answered = machine.flightEvent(.answered(response), epoch: epoch, now: token.receivedAt, elapsed: elapsed)
        guard case .persist = answered.work else {
            Issue.record("expected the new pair to be written, got \(answered)")
            return
        }
        _ = machine.flightEvent(
            .writeFinished(persisted ? nil : .writeFailed), epoch: epoch, now: start, elapsed: elapsed)
        _ = machine.flightFinished(flight)
    }

    /// The error an attempt of the strategy at `elapsed` is held back with, or `nil` when it is made (and counted).
    static func attemptBlocked(_ machine: inout SessionMachine, at elapsed: Duration) -> TokenRefreshError? {
        machine.statelessAttemptStarting(at: elapsed)
    }

    // MARK: - Single flight

    @Test func aFreshTokenIsHandedOutWithoutARefresh() {
        var machine = Self.machine()
        guard case .token(let token) = machine.decide(.validToken, now: Self.fresh, elapsed: .zero) else {
            Issue.record("expected the current token")
            return
        }
        #expect(token.accessToken == "access-token-machine-one")
        #expect(machine.flight == nil)
    }

    @Test func everyCallerWhileARefreshRunsJoinsIt() throws {
        var machine = Self.machine()
        let (flight, _) = try startedFlight(&machine)
        for request in [SessionMachine.Request.validToken, .afterRejection(of: "access-token-machine-one")] {
            guard case .join(let joined) = machine.decide(request, now: Self.due, elapsed: .zero) else {
                Issue.record("expected \(request) to join the flight")
                continue
            }
            #expect(joined === flight)
        }
        #expect(machine.snapshot().flight === flight)
    }

    @Test func aRejectionOfAnOlderTokenGetsTheCurrentOneWithoutARefresh() {
        var machine = Self.machine()
        let newer = AuthToken(
            accessToken: "access-token-machine-two", refreshToken: "refresh-token-machine-two", receivedAt: Self.start,
            lifetime: 3600)
        Self.refresh(&machine, answering: newer, persisted: true, elapsed: .zero)
        let decision = machine.decide(.afterRejection(of: "access-token-machine-one"), now: Self.fresh, elapsed: .zero)
        guard case .token(let token) = decision else {
            Issue.record("expected the current token, got \(decision)")
            return
        }
        #expect(token.accessToken == "access-token-machine-two")
    }

    @Test func aRejectionOfATokenThisSessionNeverHeldFailsWithSessionChanged() {
        var machine = Self.machine()
        let decision = machine.decide(.afterRejection(of: "access-token-machine-old"), now: Self.fresh, elapsed: .zero)
        guard case .fail(let error) = decision else {
            Issue.record("expected a failure, got \(decision)")
            return
        }
        #expect(error == .sessionChanged)
        #expect(machine.flight == nil)
    }

    @Test func aSeedThisSessionNeverHeldIsRefreshedWithoutTouchingTheSession() {
        var machine = Self.machine()
        let decision = machine.decide(.seed("refresh-token-of-another-user"), now: Self.due, elapsed: .zero)
        guard case .refreshStatelessly(let seed) = decision else {
            Issue.record("expected a refresh of that token alone, got \(decision)")
            return
        }
        #expect(seed == "refresh-token-of-another-user")
        #expect(machine.session?.token.accessToken == "access-token-machine-one")
    }

    @Test func aNewSessionForgetsTheTokensOfTheOldOne() {
        var machine = Self.machine()
        let bob = AuthToken(
            accessToken: "access-token-machine-bob", refreshToken: "refresh-token-machine-bob", receivedAt: Self.start,
            lifetime: 3600)
        _ = machine.signingIn(bob, userID: "bob", stateBefore: machine.authState, profile: nil)
        let decision = machine.decide(.afterRejection(of: "access-token-machine-one"), now: Self.fresh, elapsed: .zero)
        guard case .fail(.sessionChanged) = decision else {
            Issue.record("expected sessionChanged, got \(decision)")
            return
        }
    }

    @Test func aRejectionOfTheCurrentTokenForcesARefreshEvenWhileItLooksFresh() {
        var machine = Self.machine()
        let decision = machine.decide(.afterRejection(of: "access-token-machine-one"), now: Self.fresh, elapsed: .zero)
        guard case .run(_, _, seed: nil) = decision, machine.flight?.forced == true else {
            Issue.record("expected a forced refresh, got \(decision)")
            return
        }
    }

    @Test func aSessionCheckIsForcedButFollowsNoRefusal() {
        var machine = Self.machine()
        let decision = machine.decide(.sessionCheck, now: Self.fresh, elapsed: .zero)
        guard case .run(_, _, seed: nil) = decision else {
            Issue.record("expected a forced check, got \(decision)")
            return
        }
        #expect(machine.flight?.forced == true)
        #expect(machine.flight?.followsRefusal == false)
        var signedOut = SessionMachine(configuration: .init(), requiresRefreshToken: false)
        _ = signedOut.loaded(nil, now: Self.start)
        guard case .fail(.signedOut) = signedOut.decide(.sessionCheck, now: Self.start, elapsed: .zero) else {
            Issue.record("nothing to check without a session")
            return
        }
    }

    // MARK: - Generation guard

    @Test func aNewSessionVoidsTheRefreshInFlightAndHandsItsFlightOver() throws {
        var machine = Self.machine()
        let (flight, epoch) = try startedFlight(&machine)
        let token = AuthToken(accessToken: "access-token-machine-two", receivedAt: Self.due, lifetime: 3600)
        let started = machine.signingIn(token, userID: "user-2", stateBefore: machine.authState, profile: nil)
        #expect(started.flight === flight)
        #expect(!machine.isCurrent(epoch))
        #expect(machine.isCurrent(started.epoch))
        let stillCurrent =
            machine.flightEnded(.failure(.sessionChanged), flight, epoch: epoch).callers
            == .finish(flight, .failure(.sessionChanged), forgetTask: true)
        #expect(!stillCurrent)
        #expect(machine.session?.generation == 2)
        #expect(machine.session?.persisted == false)
        #expect(machine.authState == .signedIn(userID: "user-2"))
    }

    @Test func anEndedSessionVoidsTheRefreshInFlight() throws {
        var machine = Self.machine()
        let (flight, epoch) = try startedFlight(&machine)
        let ended = machine.signingOut()
        #expect(ended.callers == .failFlight(flight, .signedOut))
        #expect(ended.events.map(\.userID) == ["user-1"])
        #expect(!machine.isCurrent(epoch))
        #expect(machine.session == nil)
        #expect(machine.loaded)
        #expect(machine.authState == .signedOut)
        let flightEnd = machine.flightEnded(.failure(.transient), flight, epoch: epoch)
        #expect(flightEnd.callers == .finish(flight, .failure(.transient), forgetTask: false))
    }

    @Test func aSignInThatCannotBeStoredRollsBackToThePreviousSession() {
        var machine = Self.machine()
        let token = AuthToken(accessToken: "access-token-machine-two", receivedAt: Self.fresh, lifetime: 3600)
        let started = machine.signingIn(token, userID: "user-2", stateBefore: machine.authState, profile: nil)
        let finished = machine.signInWriteFinished(.failure(.writeFailed), started, elapsed: .zero)
        guard case .fail(.storageUnavailable) = finished.callers else {
            Issue.record("expected the sign-in to fail, got \(finished)")
            return
        }
        #expect(machine.session?.token.accessToken == "access-token-machine-one")
        #expect(machine.authState == .signedIn(userID: "user-1"))
        #expect(!machine.isCurrent(started.epoch))
    }

    // MARK: - Breaker and backoff

    @Test func theBreakerHoldsAttemptsBackUntilItsWindowHasPassed() {
        var machine = Self.machine(configuration: .init(maximumRefreshes: 2, breakerWindow: .seconds(30)))
        let first = Self.attemptBlocked(&machine, at: .seconds(0))
        #expect(first == nil)
        let second = Self.attemptBlocked(&machine, at: .seconds(1))
        #expect(second == nil)
        let blocked = Self.attemptBlocked(&machine, at: .seconds(2))
        #expect(blocked == .rateLimited)
        #expect(blocked?.retryAfter == .seconds(28))
        guard case .fail(.rateLimited) = machine.decide(.validToken, now: Self.expired, elapsed: .seconds(2)) else {
            Issue.record("an expired token must fail while the breaker is open")
            return
        }
        guard case .token = machine.decide(.validToken, now: Self.due, elapsed: .seconds(2)) else {
            Issue.record("a still-valid token is handed out while the breaker is open")
            return
        }
        let afterWindow = Self.attemptBlocked(&machine, at: .seconds(30))
        #expect(afterWindow == nil)
    }

    @Test func aTransientFailureIsRetriedThenHeldBackForTheBackoff() {
        let backoff = TokenRefreshClient.Backoff(retries: 1, initialDelay: .seconds(1), maximumDelay: .seconds(60))
        var machine = Self.machine(configuration: .init(backoff: backoff))
        let failure = TokenRefreshError.transient
        let first = machine.attemptFailed(failure, retry: 0, random: 0, now: Self.due, elapsed: .zero)
        #expect(first == .milliseconds(500))
        let second = machine.attemptFailed(failure, retry: 1, random: 0, now: Self.due, elapsed: .seconds(1))
        #expect(second == nil)
        let duringBackoff = machine.blockedError(at: .seconds(1))
        #expect(duringBackoff == .transient)
        let afterBackoff = machine.blockedError(at: .seconds(2))
        #expect(afterBackoff == nil)
        machine.attemptSucceeded()
        #expect(machine.breaker.consecutiveTransientFailures == 0)
    }

    @Test func aLongRetryAfterIsNotWaitedForInsideTheRefresh() {
        var machine = Self.machine(configuration: .init(backoff: .init(retries: 3, maximumRetryAfterWait: .seconds(5))))
        let failure = TokenRefreshError.transient.with(retryAfter: .seconds(120))
        let plan = machine.attemptFailed(failure, retry: 0, random: 0, now: Self.due, elapsed: .zero)
        #expect(plan == nil)
        let nearTheEnd = machine.blockedError(at: .seconds(119))
        #expect(nearTheEnd?.retryAfter == .seconds(1))
    }

    @Test func aNewSessionResetsTheBreakerAndAnEndedOneKeepsIt() {
        var machine = Self.machine(configuration: .init(maximumRefreshes: 1))
        let attempt = Self.attemptBlocked(&machine, at: .zero)
        #expect(attempt == nil)
        _ = machine.signingOut()
        let afterEnd = machine.blockedError(at: .seconds(1))
        #expect(afterEnd == .rateLimited)
        let token = AuthToken(accessToken: "access-token-machine-two", receivedAt: Self.fresh, lifetime: 3600)
        _ = machine.signingIn(token, userID: nil, stateBefore: machine.authState, profile: nil)
        let afterNewSession = machine.blockedError(at: .seconds(1))
        #expect(afterNewSession == nil)
    }

    // MARK: - Offline

    @Test func aConnectivityFailureMakesTheClientOfflineAndAnExpiredSessionExpired() {
        var machine = Self.machine()
        let failure = TokenRefreshError.transient.with(connectivityFailure: true)
        let plan = machine.attemptFailed(failure, retry: 0, random: 0, now: Self.expired, elapsed: .zero)
        #expect(plan == nil)
        #expect(machine.isOffline)
        #expect(machine.snapshot().isOffline)
        #expect(machine.authState == .expired(lastUserID: "user-1"))
        #expect(machine.session != nil)
        _ = machine.signingOut()
        #expect(!machine.isOffline)
    }

    @Test func aNewSessionIsNotOffline() {
        var machine = Self.machine()
        let failure = TokenRefreshError.transient.with(connectivityFailure: true)
        _ = machine.attemptFailed(failure, retry: 0, random: 0, now: Self.due, elapsed: .zero)
        #expect(machine.isOffline)
        #expect(machine.authState == .signedIn(userID: "user-1"))
        let token = AuthToken(accessToken: "access-token-machine-two", receivedAt: Self.fresh, lifetime: 3600)
        _ = machine.signingIn(token, userID: nil, stateBefore: machine.authState, profile: nil)
        #expect(!machine.isOffline)
    }

    // MARK: - Persist, then retry

    @Test func aPairThatCouldNotBeStoredIsWrittenAgainOncePerInterval() throws {
        var machine = Self.machine(configuration: .init(persistRetryInterval: .seconds(5)))
        let token = AuthToken(
            accessToken: "access-token-machine-two", refreshToken: "refresh-token-machine-two", receivedAt: Self.due,
            lifetime: 3600)
        Self.refresh(&machine, answering: token, persisted: false, elapsed: .seconds(10))
        #expect(machine.snapshot().needsActor)
        #expect(!machine.isEvictable)
        let tooSoon = machine.writeRetryStarting(elapsed: .seconds(14))
        #expect(tooSoon == nil)
        let dueNow = machine.writeRetryStarting(elapsed: .seconds(15))
        let due = try #require(dueNow)
        guard case .save(let pending, _) = due else {
            Issue.record("expected the pending pair's save, got \(due)")
            return
        }
        #expect(pending.generation == 2)
        let whileWriting = machine.writeRetryStarting(elapsed: .seconds(30))
        #expect(whileWriting == nil)  // one write at a time
        let stored = !machine.writeRetryEnded(due, .success(())).events.isEmpty
        #expect(stored)
        #expect(machine.session?.persisted == true)
        #expect(machine.inStore?.generation == 2)
        #expect(!machine.snapshot().needsActor)
        #expect(machine.isEvictable)
    }

    @Test func aWriteThatLandsAfterANewSessionMarksNothing() throws {
        var machine = Self.machine(configuration: .init(persistRetryInterval: .seconds(5)))
        let token = AuthToken(accessToken: "access-token-machine-two", receivedAt: Self.due, lifetime: 3600)
        Self.refresh(&machine, answering: token, persisted: false, elapsed: .zero)
        let dueNow = machine.writeRetryStarting(elapsed: .seconds(5))
        let due = try #require(dueNow)
        _ = machine.signingOut()
        let marked = !machine.writeRetryEnded(due, .success(())).events.isEmpty
        #expect(!marked)
        #expect(machine.inStore?.generation == 1)
    }

    // MARK: - Removing an ended session again

    @Test func aFailedRemovalIsTriedAgainOncePerIntervalUntilItIsDone() throws {
        var machine = Self.machine(configuration: .init(persistRetryInterval: .seconds(5)))
        _ = machine.signingOut()
        _ = machine.signOutRemovalFinished(.unavailable, epoch: machine.epoch, elapsed: .seconds(10))
        #expect(!machine.isEvictable)
        #expect(machine.writeRetryStarting(elapsed: .seconds(14)) == nil)
        let dueNow = machine.writeRetryStarting(elapsed: .seconds(15))
        let due = try #require(dueNow)
        #expect(due == .remove(.sessionAtAnyGeneration(nil), epoch: machine.epoch))
        let whileRemoving = machine.writeRetryStarting(elapsed: .seconds(30))
        #expect(whileRemoving == nil)  // one removal at a time
        _ = machine.writeRetryEnded(due, .failure(.unavailable))
        let tooSoon = machine.writeRetryStarting(elapsed: .seconds(19))
        #expect(tooSoon == nil)
        let againDue = machine.writeRetryStarting(elapsed: .seconds(20))
        let again = try #require(againDue)
        _ = machine.writeRetryEnded(again, .success(()))
        #expect(machine.pendingRemovals.isEmpty)
        #expect(machine.isEvictable)
    }

    @Test func aNewSessionCancelsThePendingRemovalOfTheEndedOne() {
        var machine = Self.machine(configuration: .init(persistRetryInterval: .seconds(5)))
        _ = machine.signingOut()
        _ = machine.signOutRemovalFinished(.unavailable, epoch: machine.epoch, elapsed: .zero)
        let token = AuthToken(accessToken: "access-token-machine-new", receivedAt: Self.due, lifetime: 3600)
        _ = machine.signingIn(token, userID: nil, stateBefore: machine.authState, profile: nil)
        let due = machine.writeRetryStarting(elapsed: .seconds(60))
        #expect(due == nil)
        #expect(machine.pendingRemovals.isEmpty)
    }

    @Test func aSignInThatCouldNotBeStoredKeepsThePendingRemoval() {
        var machine = Self.machine(configuration: .init(persistRetryInterval: .seconds(5)))
        _ = machine.signingOut()
        _ = machine.signOutRemovalFinished(.unavailable, epoch: machine.epoch, elapsed: .zero)
        let token = AuthToken(accessToken: "access-token-machine-new", receivedAt: Self.due, lifetime: 3600)
        let signIn = machine.signingIn(token, userID: nil, stateBefore: machine.authState, profile: nil)
        _ = machine.signInWriteFinished(.failure(.writeFailed), signIn, elapsed: .zero)
        let due = machine.writeRetryStarting(elapsed: .seconds(5))
        #expect(due == .remove(.sessionAtAnyGeneration(nil), epoch: machine.epoch))
    }

    /// A refresh of a new session (a request refused its first token) can store its pair while the sign-in's own save
    /// is still on its way; when that save then fails, the session held is stored already: nothing is queued to be
    /// saved again (the check in `queuePendingPair` is reachable from a sign-in).
    @Test func aSignInWhoseSaveFailsAfterARefreshStoredItsSessionQueuesNoSave() {
        var machine = SessionMachine(
            configuration: .init(persistRetryInterval: .seconds(5), allowsMemoryOnlySessions: true),
            requiresRefreshToken: true)
        _ = machine.storeRead(atLoad: .absent, now: Self.start)
        let token = AuthToken(
            accessToken: "access-token-machine-new", refreshToken: "refresh-token-machine-new", receivedAt: Self.start,
            lifetime: 3600)
        let signIn = machine.signingIn(token, userID: "user-1", stateBefore: machine.authState, profile: nil)
        let flight = RefreshFlight()
        let epoch = machine.beginFlight(flight, for: .afterRejection(of: token.accessToken), seed: nil, forced: true)
        _ = machine.flightEvent(.lockTaken, epoch: epoch, now: Self.fresh, elapsed: .zero)
        _ = machine.flightEvent(.storeRead(.absent), epoch: epoch, now: Self.fresh, elapsed: .zero)
        let response = TokenResponse(
            accessToken: "access-token-machine-refreshed", refreshToken: "refresh-token-machine-refreshed",
            expiresIn: 3600)
        _ = machine.flightEvent(.answered(response), epoch: epoch, now: Self.fresh, elapsed: .zero)
        _ = machine.flightEvent(.writeFinished(nil), epoch: epoch, now: Self.fresh, elapsed: .zero)
        #expect(machine.session?.persisted == true)
        _ = machine.signInWriteFinished(.failure(.writeFailed), signIn, elapsed: .zero)
        #expect(machine.pendingWrites.isEmpty)
        #expect(machine.writeRetryStarting(elapsed: .seconds(10)) == nil)
    }

    @Test func aRemovalQueuedBeforeAMemoryOnlyPairsSaveLandsFirst() throws {
        var machine = Self.machine(
            configuration: .init(persistRetryInterval: .seconds(5), allowsMemoryOnlySessions: true))
        _ = machine.signingOut()
        _ = machine.signOutRemovalFinished(.unavailable, epoch: machine.epoch, elapsed: .zero)
        let token = AuthToken(
            accessToken: "access-token-machine-new", refreshToken: "refresh-token-machine-new", receivedAt: Self.due,
            lifetime: 3600)
        let signIn = machine.signingIn(token, userID: nil, stateBefore: machine.authState, profile: nil)
        _ = machine.signInWriteFinished(.failure(.writeFailed), signIn, elapsed: .zero)
        let firstDue = machine.writeRetryStarting(elapsed: .seconds(5))
        let first = try #require(firstDue)
        #expect(first == .remove(.sessionAtAnyGeneration(nil), epoch: machine.epoch))
        _ = machine.writeRetryEnded(first, .success(()))
        let secondDue = machine.writeRetryStarting(elapsed: .seconds(10))
        let second = try #require(secondDue)
        guard case .save(let pending, _) = second, case .save(_, let condition) = machine.writeRetryTurn(second).store
        else {
            Issue.record("expected the pair's save after the removal, got \(second)")
            return
        }
        #expect(pending.token == token)
        #expect(condition == .absent)  // the ended session is gone: the pair goes where nothing is stored
    }

    // MARK: - A sign-in whose grant fails

    @Test func aRefusedGrantOverAnUnreadableStoreSettlesOnUnavailableNeverSignedOut() {
        var machine = SessionMachine(configuration: .init(), requiresRefreshToken: true)
        _ = machine.storeRead(atLoad: .unavailable(.unavailable), now: Self.start)
        let start = machine.signInStarting()
        #expect(machine.authState == .loading)
        let action = machine.grantAnswered(
            .failure(TokenRefreshError.signInRejected), userID: nil, receivedAt: Self.start, epoch: start.epoch)
        guard case .settleThenFail(let error) = action else {
            Issue.record("expected the state to be settled")
            return
        }
        #expect(error == .signInRejected)
        _ = machine.storeRead(atLoad: .unavailable(.unavailable), now: Self.start)  // still locked
        machine.failedSignInSettled(previous: start.previous)
        #expect(machine.authState == .unavailable)
    }

    @Test func aRefusedGrantOverAnEmptyStoreSettlesOnSignedOutAndOverASessionKeepsIt() {
        var empty = SessionMachine(configuration: .init(), requiresRefreshToken: true)
        _ = empty.storeRead(atLoad: .absent, now: Self.start)
        let emptyStart = empty.signInStarting()
        empty.failedSignInSettled(previous: emptyStart.previous)
        #expect(empty.authState == .signedOut)
        var held = Self.machine()
        let heldStart = held.signInStarting()
        held.failedSignInSettled(previous: heldStart.previous)
        #expect(held.authState == .signedIn(userID: "user-1"))
    }

    @Test func aRefusedGrantAfterAnotherSignInLeavesTheStateToIt() {
        var machine = Self.machine()
        let start = machine.signInStarting()
        _ = machine.signingOut()
        let action = machine.grantAnswered(
            .failure(TokenRefreshError.signInRejected), userID: nil, receivedAt: Self.start, epoch: start.epoch)
        guard case .fail = action else {
            Issue.record("expected the sign-out's state to stand")
            return
        }
        #expect(machine.authState == .signedOut)
    }

    // MARK: - Rejection

    @Test func aRejectedRefreshTokenIsNeverSentAgain() {
        var machine = Self.machine()
        machine.rejected.insert("refresh-token-machine-one")
        guard
            case .fail(.refreshTokenRejected) = machine.decide(
                .seed("refresh-token-machine-one"), now: Self.due, elapsed: .zero)
        else {
            Issue.record("a rejected seed must fail at once")
            return
        }
        let stored = StoredSession(
            token: AuthToken(
                accessToken: "access-token-machine-one", refreshToken: "refresh-token-machine-one",
                receivedAt: Self.start),
            userID: nil, generation: 7)
        #expect(!machine.shouldAdopt(stored))
        var fresh = SessionMachine(configuration: .init(), requiresRefreshToken: true)
        fresh.rejected.insert("refresh-token-machine-one")
        let outcome = fresh.loaded(stored, now: Self.start)
        #expect(outcome == SessionMachine.Action(store: .discard(.session(nil, generation: 7))))
        #expect(fresh.authState == .signedOut)
    }

    @Test func anExpiredSessionWithoutARefreshTokenEnds() {
        var machine = Self.machine(refreshToken: nil)
        guard case .token = machine.decide(.validToken, now: Self.due, elapsed: .zero) else {
            Issue.record("a still-valid token without a refresh token is handed out")
            return
        }
        guard case .endSessionThenFail(.sessionExpired) = machine.decide(.validToken, now: Self.expired, elapsed: .zero)
        else {
            Issue.record("an expired token without a refresh token ends the session")
            return
        }
    }

    @Test func withoutASessionOnlyASeedOrASessionlessStrategyStartsARefresh() {
        var machine = SessionMachine(configuration: .init(), requiresRefreshToken: true)
        _ = machine.loaded(nil, now: Self.start)
        guard case .fail(.signedOut) = machine.decide(.validToken, now: Self.start, elapsed: .zero) else {
            Issue.record("no session, no token")
            return
        }
        guard
            case .run(_, _, seed: "refresh-token-seeded-one") = machine.decide(
                .seed("refresh-token-seeded-one"), now: Self.start, elapsed: .zero), machine.flight?.forced == false
        else {
            Issue.record("a seed starts a session")
            return
        }
        var sessionless = SessionMachine(configuration: .init(), requiresRefreshToken: false)
        _ = sessionless.loaded(nil, now: Self.start)
        guard case .run(_, _, seed: nil) = sessionless.decide(.validToken, now: Self.start, elapsed: .zero),
            sessionless.flight?.forced == false
        else {
            Issue.record("a sessionless strategy starts its own session")
            return
        }
    }

    @Test func aTokenThatExpiredWhileTheAppWasClosedIsRestoredAsExpired() {
        var machine = SessionMachine(configuration: .init(), requiresRefreshToken: true)
        let token = AuthToken(accessToken: "access-token-machine-one", receivedAt: Self.start, lifetime: 60)
        let stored = StoredSession(token: token, userID: "user-1", generation: 3)
        let outcome = machine.loaded(stored, now: Self.expired)
        let restored = AuthEvent.sessionRestored(userID: "user-1", tokenFingerprint: token.fingerprint)
        #expect(outcome == SessionMachine.Action(events: [restored]))
        #expect(machine.authState == .expired(lastUserID: "user-1"))
        let again = machine.loaded(nil, now: Self.expired)
        #expect(again == SessionMachine.Action())
    }

    // MARK: - Another user's refresh token

    /// No session: a refresh of Alice's refresh token is running when Bob's refresh token asks for a refresh.
    @Test func aSeedOfAnotherRefreshTokenNeverJoinsTheSeedFlightWithoutASession() {
        var machine = SessionMachine(configuration: .init(backoff: .init(retries: 0)), requiresRefreshToken: true)
        _ = machine.loaded(nil, now: Self.start)
        guard case .run(let flight, _, _) = machine.decide(.seed("refresh-alice"), now: Self.start, elapsed: .zero)
        else {
            Issue.record("expected a refresh to start")
            return
        }
        guard case .join(let joined) = machine.decide(.seed("refresh-alice"), now: Self.start, elapsed: .zero) else {
            Issue.record("expected the same seed to join")
            return
        }
        #expect(joined === flight)
        let decision = machine.decide(.seed("refresh-bob"), now: Self.start, elapsed: .zero)
        guard case .refreshStatelessly(let presented) = decision else {
            Issue.record("expected another seed to be refreshed on its own, got \(decision)")
            return
        }
        #expect(presented == "refresh-bob")
    }

    // MARK: - Profiles

    /// Alice's profile is set; Bob's sign-in cannot be stored and is rolled back.
    @Test func aRolledBackSignInKeepsThePreviousUsersProfile() {
        var machine = Self.machine()
        let taken = machine.profileSupplied(AuthUser(id: "user-1", firstName: "Alice"))
        #expect(taken)
        let bob = AuthToken(
            accessToken: "access-token-machine-bob", refreshToken: "refresh-token-machine-bob", receivedAt: Self.start,
            lifetime: 3600)
        let started = machine.signingIn(bob, userID: "user-2", stateBefore: machine.authState, profile: nil)
        #expect(machine.profile == nil)
        _ = machine.signInWriteFinished(.failure(.writeFailed), started, elapsed: .zero)
        #expect(machine.profile?.firstName == "Alice")
        #expect(machine.authState == .signedIn(userID: "user-1"))
    }

    // MARK: - Adopting another user's pair

    /// A refresh for user-1 is in flight when another process's pair for user-2 is adopted.
    @Test func adoptingAnotherUsersPairVoidsTheRefreshInFlight() throws {
        var machine = Self.machine()
        let (flight, epoch) = try startedFlight(&machine)
        let bob = AuthToken(
            accessToken: "access-token-machine-bob", refreshToken: "refresh-token-machine-bob", receivedAt: Self.start,
            lifetime: 3600)
        let read = TokenStoreRead.found(StoredSession(token: bob, userID: "user-2", generation: 5))
        let action = machine.conflictRead(read, epoch: epoch, now: Self.start, elapsed: .zero)
        guard case .failTakenFlight(let taken, .sessionChanged) = action.callers else {
            Issue.record("expected another user's pair to switch the session")
            return
        }
        #expect(taken === flight, "taken, for the actor to fail with sessionChanged")
        #expect(!machine.isCurrent(epoch), "the refresh started for user-1 writes nothing")
        #expect(machine.flight == nil)
    }

    // MARK: - A request refused after a refresh

    /// A request refused after the refresh made for it ends the session only when the app asks and the refused token
    /// is still the session's.
    @Test func aRefusalAfterARefreshEndsTheSessionOnlyForItsCurrentToken() {
        let machine = Self.machine()
        let current = "access-token-machine-one"
        guard
            case .publishThenEnd(let event, .unauthorized) = machine.rejectedAfterRefresh(
                of: current, endsSession: true)
        else {
            Issue.record("expected the session to end")
            return
        }
        #expect(event.kind == .unauthorizedAfterRefresh)
        #expect(event.userID == "user-1")
        guard case .publish = machine.rejectedAfterRefresh(of: "access-token-machine-old", endsSession: true),
            case .publish = machine.rejectedAfterRefresh(of: current, endsSession: false)
        else {
            Issue.record("an older token's refusal, or one the app keeps the session after, ends nothing")
            return
        }
    }

    // MARK: - Another audience's session

    /// Another audience's client (same app, another API) stored Bob's session while a refresh of Alice's runs here.
    @Test func anotherAudiencesSessionReplacesTheHeldOneAndFailsItsRefresh() throws {
        var machine = Self.machine()
        _ = machine.profileSupplied(AuthUser(id: "user-1", firstName: "Alice"))
        let asked = machine.epoch
        let (flight, flightEpoch) = try startedFlight(&machine)
        let bob = AuthToken(
            accessToken: "access-token-machine-bob", refreshToken: "refresh-token-machine-bob", receivedAt: Self.start,
            lifetime: 3600)
        let stored = StoredSession(token: bob, userID: "user-2", generation: 5)
        let action = machine.audienceSessionRead(.found(stored), epoch: asked, overtaken: false, now: Self.fresh)
        guard case .failFlight(let failing, .sessionChanged) = action.callers else {
            Issue.record("expected the held session to be replaced, got \(action)")
            return
        }
        #expect(action.events == [.sessionRestored(userID: "user-2", tokenFingerprint: nil)])
        #expect(failing === flight, "taken, for the actor to fail with sessionChanged")
        #expect(!machine.isCurrent(flightEpoch), "the refresh started for Alice writes nothing")
        #expect(machine.flight == nil)
        #expect(machine.session?.token.accessToken == "access-token-machine-bob")
        #expect(machine.authState == .signedIn(userID: "user-2"))
        #expect(machine.profile == nil)
        #expect(machine.inStore?.generation == 5)
        let stale = machine.decide(.afterRejection(of: "access-token-machine-one"), now: Self.fresh, elapsed: .zero)
        guard case .fail(.sessionChanged) = stale else {
            Issue.record("a request made with Alice's token is never answered with Bob's, got \(stale)")
            return
        }
    }

    /// Another audience's client signed the same user in again: the held session still ends (its refresh would write
    /// over the new sign-in) and the new one starts.
    @Test func anotherAudiencesSignInOfTheSameUserStillEndsTheHeldSession() throws {
        var machine = Self.machine()
        let (flight, flightEpoch) = try startedFlight(&machine)
        let again = AuthToken(
            accessToken: "access-token-machine-again", refreshToken: "refresh-token-machine-again",
            receivedAt: Self.start, lifetime: 3600)
        let stored = StoredSession(token: again, userID: "user-1", generation: 3)
        let action = machine.audienceSessionRead(.found(stored), epoch: flightEpoch, overtaken: false, now: Self.fresh)
        guard case .failFlight(let failing, .sessionChanged) = action.callers else {
            Issue.record("expected the held session to be replaced, got \(action)")
            return
        }
        #expect(failing === flight)
        #expect(!machine.isCurrent(flightEpoch))
        #expect(machine.session?.token.accessToken == "access-token-machine-again")
    }

    /// Without a session held, the stored one is taken up; a read that a newer session change overtook, or that found
    /// the session held, changes nothing.
    @Test func anotherAudiencesSessionIsTakenUpUnlessTheReadIsStale() {
        var machine = SessionMachine(configuration: .init(), requiresRefreshToken: true)
        _ = machine.loaded(nil, now: Self.start)
        let stored = Self.storedSession(generation: 2)
        let overtaken = machine.audienceSessionRead(
            .found(stored), epoch: machine.epoch, overtaken: true, now: Self.fresh)
        let endedMeanwhile = machine.audienceSessionRead(
            .found(stored), epoch: machine.epoch &+ 1, overtaken: false, now: Self.fresh)
        guard overtaken == SessionMachine.Action(), endedMeanwhile == SessionMachine.Action() else {
            Issue.record("expected stale reads to be dropped, got \(overtaken) and \(endedMeanwhile)")
            return
        }
        #expect(machine.session == nil)
        let epoch = machine.epoch
        let adopted = machine.audienceSessionRead(.found(stored), epoch: epoch, overtaken: false, now: Self.fresh)
        guard adopted == SessionMachine.Action(events: [.sessionRestored(userID: "user-1", tokenFingerprint: nil)])
        else {
            Issue.record("expected the stored session to be taken up")
            return
        }
        #expect(machine.isCurrent(epoch), "nothing was held, so nothing in progress is voided")
        #expect(machine.authState == .signedIn(userID: "user-1"))
        guard
            machine.audienceSessionRead(.found(stored), epoch: epoch, overtaken: false, now: Self.fresh).events.isEmpty
        else {
            Issue.record("the session held already is not taken up again")
            return
        }
    }

    /// A client that has not read its store yet loads from the other audience's read.
    @Test func anUnreadStoreLoadsFromAnotherAudiencesRead() {
        var machine = SessionMachine(configuration: .init(), requiresRefreshToken: true)
        let stored = Self.storedSession(generation: 1)
        let action = machine.audienceSessionRead(
            .found(stored), epoch: machine.epoch, overtaken: false, now: Self.fresh)
        let restored = AuthEvent.sessionRestored(userID: "user-1", tokenFingerprint: stored.token.fingerprint)
        guard action == SessionMachine.Action(events: [restored]) else {
            Issue.record("expected a load from this read, got \(action)")
            return
        }
        #expect(machine.loaded)
        #expect(machine.authState == .signedIn(userID: "user-1"))
    }

    /// Another audience's client signed out: the session ends here without a removal of its own; a store never read
    /// reads signed out, with nothing to end.
    @Test func anotherAudiencesSignOutEndsTheSessionWithoutARemoval() throws {
        var machine = Self.machine()
        let (flight, epoch) = try startedFlight(&machine)
        let ending = machine.audienceSessionRemoved(now: Self.fresh)
        #expect(ending.store == .none, "the other audience's client removed it")
        #expect(ending.callers == .failFlight(flight, .signedOut))
        #expect(ending.events.map(\.reason) == [.removedElsewhere])
        #expect(ending.events.map(\.userID) == ["user-1"])
        #expect(!machine.isCurrent(epoch))
        #expect(machine.session == nil)
        #expect(machine.authState == .signedOut)

        var unread = SessionMachine(configuration: .init(), requiresRefreshToken: true)
        let nothingHeld = unread.audienceSessionRemoved(now: Self.fresh) == SessionMachine.Action()
        #expect(nothingHeld)
        #expect(unread.loaded)
        #expect(unread.authState == .signedOut)
    }

    // MARK: - A refresh that answers for another user

    static func jwt(sub: String) -> String {
        JWTBuilder.token(claims: #"{"sub":"\#(sub)"}"#, header: #"{"alg":"none"}"#)
    }

    struct SubjectCase: Sendable, CustomStringConvertible {
        let description: String
        let previousAccess: String
        let previousUserID: String?
        let newAccess: String
        let responseUserID: String?
        let switched: Bool
    }

    static let subjectCases = [
        SubjectCase(
            description: "subjects differ", previousAccess: jwt(sub: "alice"), previousUserID: "alice",
            newAccess: jwt(sub: "bob"), responseUserID: nil, switched: true),
        SubjectCase(
            description: "same subject, app user ID is not the subject", previousAccess: jwt(sub: "u-1"),
            previousUserID: "alice@example.com", newAccess: jwt(sub: "u-1"), responseUserID: nil, switched: false),
        SubjectCase(
            description: "opaque tokens, response names another user", previousAccess: "opaque-one",
            previousUserID: "alice", newAccess: "opaque-two", responseUserID: "bob", switched: true),
        SubjectCase(
            description: "opaque tokens, response names no user", previousAccess: "opaque-one",
            previousUserID: "alice", newAccess: "opaque-two", responseUserID: nil, switched: false),
        SubjectCase(
            description: "a subject is never compared with a user ID", previousAccess: "opaque-one",
            previousUserID: "alice@example.com", newAccess: jwt(sub: "u-1"), responseUserID: nil, switched: false),
    ]

    @Test(arguments: subjectCases)
    func aRefreshIsAnotherUsersOnlyWhenLikeIdentifiersDiffer(_ subject: SubjectCase) {
        let previous = SessionMachine.Session(
            token: AuthToken(accessToken: subject.previousAccess, receivedAt: Self.start, lifetime: 3600),
            userID: subject.previousUserID, generation: 1, persisted: true)
        let token = AuthToken(accessToken: subject.newAccess, receivedAt: Self.start, lifetime: 3600)
        let changed = SessionMachine.subjectChanged(
            from: previous, to: token, responseUserID: subject.responseUserID)
        #expect(changed == subject.switched)
    }

    /// The held refresh token is rejected; the re-read finds the pair another process rotated to, and the server says
    /// of that one too that the session is gone: the session ends, as it does when the first answer says so, and the
    /// refresh token is never presented again.
    @Test func aSessionInvalidatedAfterARejectionsRereadEnds() throws {
        var machine = Self.machine()
        let (_, epoch) = try startedFlight(&machine)
        _ = machine.flightEvent(.lockTaken, epoch: epoch, now: Self.due, elapsed: .zero)
        let held = Self.storedSession(generation: 1)
        let first = machine.flightEvent(.storeRead(.found(held)), epoch: epoch, now: Self.due, elapsed: .zero)
        guard case .call("refresh-token-machine-one", _) = first.work else { Issue.record("\(first.work)"); return }
        let reread = machine.flightEvent(
            .callFailed(.refreshTokenRejected), epoch: epoch, now: Self.due, elapsed: .zero)
        guard case .readStore = reread.work else { Issue.record("\(reread.work)"); return }
        let rotated = StoredSession(
            token: AuthToken(
                accessToken: "access-token-machine-two", refreshToken: "refresh-token-machine-two",
                receivedAt: Self.start, lifetime: 3600),
            userID: "user-1", generation: 2, sessionID: held.sessionID)
        let second = machine.flightEvent(.storeRead(.found(rotated)), epoch: epoch, now: Self.due, elapsed: .zero)
        guard case .call("refresh-token-machine-two", _) = second.work else { Issue.record("\(second.work)"); return }
        let gone = machine.flightEvent(.callFailed(.sessionInvalidated), epoch: epoch, now: Self.due, elapsed: .zero)
        guard case .endSessionIfHeld(.invalidatedOnServer, .sessionInvalidated) = gone.work else {
            Issue.record("the session was kept: \(gone.work)")
            return
        }
        #expect(machine.rejected.contains("refresh-token-machine-two"))
    }
}

extension SessionMachine {
    /// The store's answer at load time as the tests write it: `stored`, or nothing stored (``storeRead(atLoad:now:)``).
    mutating func loaded(_ stored: StoredSession?, now: Date) -> Action {
        storeRead(atLoad: stored.map { .found($0) } ?? .absent, now: now)
    }
}
