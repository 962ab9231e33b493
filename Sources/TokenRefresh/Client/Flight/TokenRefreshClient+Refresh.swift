import AuthToken
import Foundation
import Logging
import Persistence

extension TokenRefreshClient {
    /// What a caller does next: take a token, or wait for a shared refresh.
    enum Next: Sendable {
        case token(AuthToken)
        case wait(RefreshFlight)
    }

    // MARK: - Deciding what a caller does

    /// The actor half of ``validToken()`` and the forced refreshes: one round trip into the machine
    /// (``SessionMachine/callerArrived(_:pairedAccessToken:now:elapsed:stateless:)``), then what it says.
    /// Only a store never read, or a write to make again, brings the caller back for another.
    ///
    /// `pairedAccessToken` is the access token a caller held with a seed: when the seed starts a session, it counts
    /// as one of that session's (a request that carried it may then be retried with the new token).
    func prepare(
        _ request: SessionMachine.Request, pairedAccessToken: String? = nil
    ) async throws(TokenRefreshError) -> Next {
        while true {
            let action = machine.callerArrived(
                request, pairedAccessToken: pairedAccessToken, now: now(), elapsed: clock.elapsed, stateless: stateless)
            switch action {
            case .readStore:
                let read = await loadSession()
                try await carryOut(machine.storeRead(atLoad: read, now: now()))
            case .retryWrite(let write):
                await retryWrite(write)
            case .token(let token):
                return .token(token)
            case .join(let flight):
                return .wait(flight)
            case .run(let flight, let epoch, let seed):
                run(flight, epoch: epoch, seed: seed)
                return .wait(flight)
            case .refreshStatelessly(let refreshToken):
                return refreshStatelessly(refreshToken)
            case .fail(let error):
                metrics.recordIfBlocked(error)
                throw error
            case .endSessionThenFail(let error):
                await endSession(reason: .expired, error: error)
                throw error
            }
        }
    }

    // MARK: - Loading

    /// Before a sign-in or sign-out over a store never read: keeps what is stored as the session (see
    /// ``SessionMachine/storeReadBeforeSessionChange(_:)``).
    func noteStoredSessionIfUnread() async {
        try? await carryOut(machine.sessionChangeStarting())
    }

    /// Reads the stored session once. Throws ``TokenRefreshError/storageUnavailable`` while the store cannot
    /// be read and nothing is held in memory.
    func ensureLoaded() async throws(TokenRefreshError) {
        try await carryOut(machine.loadStarting())
    }

    /// Carries out a session action (``SessionMachine/Action``): a refresh made void fails first, then the store step
    /// is taken (a write waits for its turn: ``perform(_:)``), the events are published, and the call answers.
    func carryOut(_ action: SessionMachine.Action) async throws(TokenRefreshError) {
        switch action.callers {
        case .failFlight(let flight, let error):
            flightTask = nil
            flight?.finish(.failure(error))
        case .goOn, .fail, .finish, .retry:
            break
        }
        switch action.store {
        case .readAtLoad:
            // A removal an unfinished sign-out left is made first.
            let read = noteServerTime(in: await signOuts.load(from: store))
            try await carryOut(machine.storeRead(atLoad: read, now: now()))
        case .readBeforeSessionChange:
            machine.storeReadBeforeSessionChange(await loadSession())
        case .readAfterConflict(let epoch):
            await adoptAfterConflict(epoch: epoch)
        case .discard(let condition):
            try? await store.remove(account: configuration.account, condition: condition)
        case .removeEnded(let removal):
            await remove(removal)
        case .none, .saveAboveStored, .save, .remove:
            break
        }
        for event in action.events { publish(event) }
        switch action.callers {
        case .fail(let error): throw error
        case .finish(let flight, let result, forgetTask: true):
            flightTask = nil
            flight.finish(result)
        case .finish(let flight, let result, forgetTask: false): flight.finish(result)
        case .goOn, .failFlight, .retry: break
        }
    }

    // MARK: - The shared refresh

    /// Runs the refresh `flight`, recorded as started under `epoch`, in its own task.
    func run(_ flight: RefreshFlight, epoch: UInt64, seed: String?) {
        let task = Task { await self.runFlight(flight, epoch: epoch, seed: seed) }
        flightTask = task
        lastFlightTask = task
    }

    /// Waits until the most recent refresh task has ended, abandoned or not (for tests).
    func waitForLastRefreshTask() async {
        await lastFlightTask?.value
    }

    func runFlight(_ flight: RefreshFlight, epoch startEpoch: UInt64, seed: String?) async {
        var result: Result<AuthToken, TokenRefreshError>
        // An older session's write still landing (a sign-out's removal, say) goes first; waiting for it here, before
        // the store's lock is taken, cannot block it.
        await drainWrites(before: startEpoch)
        attempts: while true {
            let asked = clock.elapsed
            let locked = await Result<AuthToken, any Error>.of {
                try await store.withExclusiveAccess(account: configuration.account) {
                    try await self.refreshLocked(epoch: startEpoch, askedForLockAt: asked)
                }
            }
            switch locked {
            case .success(let token):
                result = .success(token)
            case .failure(let error):
                logger.debug("the refresh under the store's lock failed", metadata: ["error": "\(error)"])
                let action = machine.exclusiveAccessFailed(error, epoch: startEpoch, now: now(), elapsed: clock.elapsed)
                result = await carryOut(action, epoch: startEpoch)
            }
            // A transient failure with retries left: wait with the lock released (other processes need not
            // wait behind the backoff), then take it again and re-read the store before the next attempt.
            var action = machine.flightEnded(result, flight, epoch: startEpoch)
            switch action.callers {
            case .retry(let delay, _):
                switch await Result<Void, any Error>.of({ try await clock.sleep(for: delay) }) {
                case .success: continue attempts
                case .failure: action = machine.flightEnded(.failure(.cancelled), flight, epoch: startEpoch)
                }
            case .goOn, .fail, .failFlight, .finish:
                break
            }
            try? await carryOut(action)
            return
        }
    }

    /// The refresh proper, under the store's exclusive access: carries out what the machine asks
    /// (``FlightMachine/Action``) and hands each answer back, until the callers are answered.
    func refreshLocked(
        epoch startEpoch: UInt64, askedForLockAt asked: Duration
    ) async throws(TokenRefreshError) -> AuthToken {
        metrics.recordLockWait(clock.elapsed - asked)
        let result = await carryOut(flightEvent(.lockTaken, epoch: startEpoch), epoch: startEpoch)
        await storeServerFailures(epoch: startEpoch)
        return try result.get()
    }

    /// Hands `event` of the refresh started under `epoch` to the machine (``SessionMachine/flightEvent(_:epoch:now:elapsed:random:)``).
    func flightEvent(_ event: FlightMachine.Event, epoch startEpoch: UInt64) -> FlightMachine.Action {
        machine.flightEvent(event, epoch: startEpoch, now: now(), elapsed: clock.elapsed, random: random)
    }

    /// Records the server failures this hold of the store's lock met with the session, before the lock is released
    /// (``SessionMachine/serverFailuresWrite(now:elapsed:)``): every process and replica of the session counts them.
    func storeServerFailures(epoch startEpoch: UInt64) async {
        let write = recordWrite(epoch: startEpoch)
        let outcome = await perform(machine.serverFailuresWrite(now: now(), elapsed: clock.elapsed))
        endWrite(write)
        machine.serverFailuresWriteEnded(outcome)
    }

    /// Carries out `first` and every action the machine answers with, until the callers are answered: the actor's
    /// whole part of the shared refresh. Each action's events are published, its work done (the work's outcome goes
    /// back to the machine as the next event), and then the callers are answered.
    func carryOut(
        _ first: FlightMachine.Action, epoch startEpoch: UInt64
    ) async -> Result<AuthToken, TokenRefreshError> {
        var action = first
        while true {
            for event in action.events { publish(event) }
            switch action.work {
            case .readStore:
                action = flightEvent(.storeRead(await loadSession()), epoch: startEpoch)
            case .call(let sent, let forced):
                action = flightEvent(await attempt(sent, forced: forced), epoch: startEpoch)
            case .sleep(let delay):
                switch await Result<Void, any Error>.of({ try await clock.sleep(for: delay) }) {
                case .success: action = flightEvent(.retryStarting, epoch: startEpoch)
                case .failure: action = flightEvent(.gaveUp(.cancelled), epoch: startEpoch)
                }
            case .blocked(let blocked):
                metrics.recordBlocked(blocked)
                action = flightEvent(.gaveUp(blocked), epoch: startEpoch)
            case .persist(let stored, let condition):
                let write = recordWrite(epoch: startEpoch)
                let saved = await Result.of { () async throws(PersistenceError) in
                    try await store.save(
                        stampingServerTime(stored), account: configuration.account, condition: condition)
                }
                endWrite(write)
                action = flightEvent(.writeFinished(saved.failure), epoch: startEpoch)
            case .endSession(let reason, let error):
                await endSession(reason: reason, error: error)
                return answer(action)
            case .endSessionIfHeld(let reason, let error):
                await endSessionOnce(reason: reason, error: error)
                return answer(action)
            case .none:
                return answer(action)
            }
        }
    }

    /// One call of the strategy in the shared refresh: the event its answer or failure is.
    func attempt(_ sent: String?, forced: Bool) async -> FlightMachine.Event {
        switch await callStrategy(sent, forced: forced, startedAt: clock.elapsed) {
        case .success(let response): return .answered(response)
        case .failure(let failure):
            logger.debug("refresh attempt failed", metadata: ["error": "\(failure)"])
            return .callFailed(failure)
        }
    }

    /// Answers the callers of the shared refresh as `action` says.
    func answer(_ action: FlightMachine.Action) -> Result<AuthToken, TokenRefreshError> {
        switch action.callers {
        case .adopted(let stored):
            noteAdopted(stored)
            return .success(stored.token)
        case .token(let token):
            logger.debug("token refreshed", metadata: ["token": "\(token.fingerprint)"])
            return .success(token)
        case .fail(let error):
            return .failure(error)
        case .failTakenFlight(let flight, let failure):
            // The refresh in flight (made for the old user) is void: its callers fail too.
            flightTask = nil
            flight?.finish(.failure(failure))
            return .failure(failure)
        case nil:
            return .failure(.signedOut)  // never: an action without work answers the callers
        }
    }

    /// Ends the session with `reason` if there is one; otherwise just reads signed out.
    func endSessionOnce(reason: AuthEvent.SignOutReason, error: TokenRefreshError) async {
        await carryOut(ending: machine.endingSessionIfHeld(reason: reason, error: error))
    }

    /// One call of the strategy with `refreshToken` (`forced`: skipping its cache), started at `started`, under the
    /// refresh timeout: its answer, or its failure classified. Both are measured.
    func callStrategy(
        _ refreshToken: String?, forced: Bool, startedAt started: Duration
    ) async -> Result<TokenResponse, TokenRefreshError> {
        let (strategy, timeout) = (self.strategy, configuration.refreshTimeout)
        let outcome = await Result<TokenResponse, any Error>.of {
            try await clock.withTimeout(timeout) { try await strategy.refresh(using: refreshToken, forced: forced) }
        }.mapError(Self.classify)
        switch outcome {
        case .success: metrics.recordSuccess(after: clock.elapsed - started)
        case .failure(let failure): metrics.recordFailure(failure, after: clock.elapsed - started)
        }
        return outcome
    }

    /// A pair another process saved was adopted instead of refreshing: say so, apart from a refresh.
    func noteAdopted(_ stored: StoredSession) {
        metrics.recordAdoption()
        logger.debug("adopted a pair saved elsewhere", metadata: ["token": "\(stored.token.fingerprint)"])
        publish(.tokenAdopted(userID: stored.userID, tokenFingerprint: stored.token.fingerprint))
    }

    /// A retried write of the session of `epoch` met a newer pair: read it, and carry out what the machine makes of it.
    func adoptAfterConflict(epoch startEpoch: UInt64) async {
        let read = await loadSession()
        let action = machine.conflictRead(read, epoch: startEpoch, now: now(), elapsed: clock.elapsed)
        _ = await carryOut(action, epoch: startEpoch)
    }

    /// Ends the session in memory and in the store (conditional on the generation), and says so. The flight in
    /// progress (if this is not it) resolves with `error`.
    func endSession(reason: AuthEvent.SignOutReason, error: TokenRefreshError?) async {
        await carryOut(ending: machine.endingSession(reason: reason, error: error))
    }

    /// Carries out the end of a session (``SessionMachine/Action``): fail the flight, remove the session from the
    /// store, say so.
    func carryOut(ending: SessionMachine.Action) async {
        try? await carryOut(ending)
        for event in ending.events {
            // The reason and the error, never the event's description: it names the user (often an e-mail address).
            var metadata: Logger.Metadata = ["reason": "\(event.reason.map { "\($0)" } ?? "none")"]
            metadata["error"] = event.error.map { "\($0)" }
            logger.debug("session ended", metadata: metadata)
        }
    }

    /// Removes an ended session from the store when the machine asks for it.
    ///
    /// This may run under the store's lock, so it does not wait for older writes; one still landing (a sign-in's
    /// save) could land after this removal, which is then made again once it has.
    func remove(_ removal: SessionMachine.Removal) async {
        let overtaken = writeFence.hasWrites(before: removal.epoch)
        let write = recordWrite(epoch: removal.epoch)
        let removed = await Result.of { () async throws(PersistenceError) in
            try await store.remove(account: configuration.account, condition: removal.condition)
        }
        machine.removalEnded(removed.failure, removal, overtaken: overtaken, elapsed: clock.elapsed)
        switch removed {
        case .success: break
        case .failure(let error):
            logger.debug("clearing the ended session did not happen", metadata: ["error": "\(error)"])
        }
        endWrite(write)
    }

    // MARK: - Sessions

    func startSession(
        _ token: AuthToken, userID: String?, previousState: AuthState, profile: AuthUser? = nil
    ) async throws(TokenRefreshError) -> AuthToken {
        // Kept so that a sign-in that cannot be stored falls back to the stored session.
        await noteStoredSessionIfUnread()
        let signIn = machine.signingIn(token, userID: userID, stateBefore: previousState, profile: profile)
        flightTask?.cancel()
        flightTask = nil
        signIn.flight?.finish(.failure(.sessionChanged))
        let write = await beginWrite(epoch: signIn.epoch)
        // Saved once older writes have landed, unless a sign-out or another sign-in came first.
        let written = await perform(machine.signInWriteTurn(signIn))
        endWrite(write)
        let action = machine.signInWriteFinished(written, signIn, elapsed: clock.elapsed)
        switch await Result.of({ () async throws(TokenRefreshError) in try await carryOut(action) }) {
        case .success:
            logger.debug("signed in", metadata: ["token": "\(token.fingerprint)"])
            return token
        case .failure(let error):
            logger.debug("sign-in not kept", metadata: ["token": "\(token.fingerprint)", "error": "\(error)"])
            throw error
        }
    }
}

extension TokenRefreshClient {
    // MARK: - Refresh tokens that are not the session's

    /// The seed's stateless `refreshToken(_:)` for a refresh token the session never held: one shared refresh per
    /// refresh token, whose pair is neither stored nor made the session (see ``StatelessRefreshes``).
    func refreshStatelessly(_ presented: String) -> Next {
        let flight = RefreshFlight()
        stateless.begin(flight, for: presented)
        logger.debug(
            "refreshing a refresh token that is not the session's",
            metadata: ["token": "\(AuthToken.fingerprint(presented))"])
        Task { await self.runStatelessFlight(flight, refreshToken: presented) }
        return .wait(flight)
    }

    func runStatelessFlight(_ flight: RefreshFlight, refreshToken: String) async {
        let result = await statelessAttempt(refreshToken)
        stateless.end(refreshToken, result: result)
        flight.finish(result)
    }

    /// One call of the strategy for a refresh token the session never held.
    func statelessAttempt(_ refreshToken: String) async -> Result<AuthToken, TokenRefreshError> {
        let admitted = clock.elapsed
        switch machine.statelessAttemptStarting(at: admitted) {
        case .some(let blocked):
            metrics.recordBlocked(blocked)
            return .failure(blocked)
        case .none:
            break
        }
        switch await callStrategy(refreshToken, forced: false, startedAt: clock.elapsed) {
        case .success(let response):
            return .success(response.token(receivedAt: now(), keeping: refreshToken))
        case .failure(let failure):
            machine.statelessAttemptFailed(failure, refreshToken: refreshToken, startedAt: admitted)
            return .failure(failure)
        }
    }
}
