import AuthToken
import Foundation
import Logging
import Persistence

extension TokenRefreshClient {
    // MARK: - Deciding what a caller does

    /// The actor half of ``validToken()``: a token, or a flight to wait for.
    func prepareValidToken() async throws(TokenRefreshError) -> Next {
        // Callers that queued on the actor just before the refresh started join it at once.
        if loaded, let flight, let session, session.persisted,
            session.token.willExpireSoon(at: now(), policy: configuration.expiryPolicy)
        {
            return .wait(flight)
        }
        try await ensureLoaded()
        await retryPendingPersistIfDue()
        guard let session else {
            // Strategies that need no refresh token (client credentials, an SDK) start a session themselves.
            guard !strategy.requiresRefreshToken else { throw .signedOut }
            if let flight { return .wait(flight) }
            if let blocked = blockedRefreshError() { throw blocked }
            return .wait(startFlight(seed: nil))
        }
        let policy = configuration.expiryPolicy
        let time = now()
        if !session.token.willExpireSoon(at: time, policy: policy) { return .token(session.token) }
        if let flight { return .wait(flight) }
        let stillValid = !session.token.isExpired(at: time, policy: policy)
        if let blocked = blockedRefreshError() {
            if stillValid { return .token(session.token) }
            noteExpiredIfOffline()
            throw blocked
        }
        if strategy.requiresRefreshToken && session.token.refreshToken == nil {
            if stillValid { return .token(session.token) }
            await endSession(reason: .expired, error: .sessionExpired)
            throw .sessionExpired
        }
        return .wait(startFlight(seed: nil))
    }

    /// The actor half of the forced refreshes: after a rejection (`rejecting`) or with a seed refresh token.
    func prepareRefresh(rejecting accessToken: String?, seed: String?) async throws(TokenRefreshError) -> Next {
        try await ensureLoaded()
        await retryPendingPersistIfDue()
        if let seed, deadRefreshTokens.contains(seed) { throw .refreshTokenRejected }
        guard let session else {
            guard let seed, !seed.isEmpty else { throw .signedOut }
            if let flight { return .wait(flight) }
            if let blocked = blockedRefreshError() { throw blocked }
            return .wait(startFlight(seed: seed))
        }
        if let accessToken, accessToken != session.token.accessToken {
            logger.debug("stale rejection", metadata: ["current": "\(session.token.fingerprint)"])
            return try await prepareValidToken()
        }
        if let seed, seed != session.token.refreshToken { return try await prepareValidToken() }
        if let flight { return .wait(flight) }
        if let blocked = blockedRefreshError() {
            noteExpiredIfOffline()
            throw blocked
        }
        if strategy.requiresRefreshToken && session.token.refreshToken == nil {
            await endSession(reason: .expired, error: .sessionExpired)
            throw .sessionExpired
        }
        return .wait(startFlight(seed: nil, forced: accessToken != nil))
    }

    /// The error that holds a new refresh back (backoff, `Retry-After`, the breaker), if any.
    func blockedRefreshError() -> TokenRefreshError? {
        let elapsed = clock.elapsed
        if let retryNotBefore, elapsed < retryNotBefore {
            return (lastTransientError ?? .transient).with(retryAfter: retryNotBefore - elapsed)
        }
        attemptTimes.removeAll { elapsed - $0 >= configuration.breakerWindow }
        if attemptTimes.count >= configuration.maximumRefreshes, let oldest = attemptTimes.first {
            return TokenRefreshError.rateLimited.with(retryAfter: oldest + configuration.breakerWindow - elapsed)
        }
        return nil
    }

    func noteExpiredIfOffline() {
        guard let session, session.token.isExpired(at: now(), policy: configuration.expiryPolicy) else { return }
        if case .expired = state { return }
        setState(.expired(lastUserID: session.userID))
    }

    // MARK: - Loading

    /// Reads the stored session once. Throws ``TokenRefreshError/storageUnavailable`` while the store cannot
    /// be read and nothing is held in memory.
    func ensureLoaded() async throws(TokenRefreshError) {
        guard !loaded else { return }
        let read = await store.load(account: configuration.account)
        guard !loaded else { return }  // a sign-in or another reader got there first
        switch read {
        case .found(let stored):
            loaded = true
            storedGeneration = stored.generation
            if let refreshToken = stored.token.refreshToken, deadRefreshTokens.contains(refreshToken) {
                try? await store.remove(account: configuration.account, condition: .generation(stored.generation))
                setState(.signedOut)
                return
            }
            session = Session(
                token: stored.token, userID: stored.userID, generation: stored.generation, persisted: true)
            // A token that expired while the app was closed reads as expired until a refresh renews it.
            let expired = stored.token.isExpired(at: now(), policy: configuration.expiryPolicy)
            setState(expired ? .expired(lastUserID: stored.userID) : .signedIn(userID: stored.userID))
            publish(.sessionRestored(userID: stored.userID, tokenFingerprint: stored.token.fingerprint))
            logger.debug("session restored", metadata: ["token": "\(stored.token.fingerprint)"])
        case .absent:
            loaded = true
            setState(.signedOut)
        case .unavailable(let error):
            let failure = TokenRefreshError.storageUnavailable.with(underlying: error)
            publish(.storageUnavailable(failure))
            throw failure
        }
    }

    // MARK: - The shared refresh

    /// Starts the shared refresh in its own task and returns the flight callers wait on.
    func startFlight(seed: String?, forced: Bool = false) -> RefreshFlight {
        let flight = RefreshFlight(counter: waiterCounter)
        flightIsForced = forced
        self.flight = flight
        publishSnapshot()
        let startEpoch = epoch
        let task = Task { await self.runFlight(flight, epoch: startEpoch, seed: seed) }
        flightTask = task
        lastFlightTask = task
        return flight
    }

    /// Waits until the most recent refresh task has ended, abandoned or not (for tests).
    func waitForLastRefreshTask() async {
        await lastFlightTask?.value
    }

    func runFlight(_ flight: RefreshFlight, epoch startEpoch: UInt64, seed: String?) async {
        var result: Result<AuthToken, TokenRefreshError>
        var retry = 0
        while true {
            retryOutsideLock = nil
            do {
                let attempt = retry
                let token = try await store.withExclusiveAccess(account: configuration.account) {
                    try await self.refreshLocked(epoch: startEpoch, seed: seed, retry: attempt)
                }
                result = .success(token)
            } catch let error as PersistenceError where error == .lockTimedOut {
                result = await afterLockTimeout(error, epoch: startEpoch)
            } catch {
                result = .failure(Self.classify(error))
            }
            // A transient failure with retries left: wait with the lock released (other processes need not
            // wait behind the backoff), then take it again and re-read the store before the next attempt.
            guard case .failure = result, let pending = retryOutsideLock, pending.epoch == startEpoch,
                epoch == startEpoch
            else { break }
            retryOutsideLock = nil
            retry = pending.retry
            do {
                try await clock.sleep(for: pending.delay)
            } catch {
                result = .failure(.cancelled)
                break
            }
        }
        if self.flight === flight {
            self.flight = nil
            flightTask = nil
            publishSnapshot()
        }
        flight.finish(result)
    }

    /// Another process held the store's lock past its timeout (its refresh may hang). Never refresh without the
    /// lock: re-read the store and use the token there if it is still valid (the other process may have
    /// finished); otherwise fail transiently and keep the session.
    func afterLockTimeout(
        _ error: PersistenceError, epoch startEpoch: UInt64
    ) async -> Result<AuthToken, TokenRefreshError> {
        let failure = TokenRefreshError.transient.with(underlying: error)
        logger.debug("the store's lock was not free in time", metadata: ["error": "\(error)"])
        guard epoch == startEpoch else { return .failure(.signedOut) }
        if case .found(let stored) = await store.load(account: configuration.account), epoch == startEpoch,
            stored.generation != storedGeneration || session == nil,
            !stored.token.isExpired(at: now(), policy: configuration.expiryPolicy),
            !(stored.token.refreshToken.map(deadRefreshTokens.contains) ?? false)
        {
            adopt(stored)
            logger.debug("adopted a pair saved elsewhere", metadata: ["token": "\(stored.token.fingerprint)"])
            publish(.tokenRefreshed(userID: stored.userID, tokenFingerprint: stored.token.fingerprint))
            return .success(stored.token)
        }
        // The session is kept; while its token is still valid, validToken() callers get it (as after any
        // transient failure of a proactive refresh).
        publish(.refreshFailed(failure, userID: session?.userID))
        return .failure(failure)
    }

    /// The refresh proper, under the store's exclusive access.
    func refreshLocked(
        epoch startEpoch: UInt64, seed: String?, retry: Int
    ) async throws(TokenRefreshError) -> AuthToken {
        try checkEpoch(startEpoch)
        if seed == nil, let adopted = try await rereadStore(epoch: startEpoch) { return adopted }
        let current = session
        guard let refreshToken = seed ?? current?.token.refreshToken ?? (strategy.requiresRefreshToken ? nil : "")
        else {
            throw current == nil ? .signedOut : .missingRefreshToken
        }
        if deadRefreshTokens.contains(refreshToken) { throw .refreshTokenRejected }
        let sent = refreshToken.isEmpty ? nil : refreshToken
        do {
            let response = try await attemptWithRetries(sent, epoch: startEpoch, retry: retry, sleepsUnderLock: false)
            return try await completeRefresh(response, sent: sent, from: current, epoch: startEpoch)
        } catch .sessionInvalidated where epoch == startEpoch {
            // The server says the session is gone (a cookie session's check): end it once, with that reason.
            if let sent { deadRefreshTokens.insert(sent) }
            if session != nil || state.hasSession {
                await endSession(reason: .invalidatedOnServer, error: .sessionInvalidated)
            } else if state != .signedOut {
                setState(.signedOut)
            }
            throw .sessionInvalidated
        } catch .signedOut where sent == nil && epoch == startEpoch {
            // The token provider (an SDK) reports that it has no session: end ours once, with that reason.
            if session != nil || state.hasSession {
                await endSession(reason: .providerSignedOut, error: .signedOut)
            } else if state != .signedOut {
                setState(.signedOut)
            }
            throw .signedOut
        } catch .refreshTokenRejected {
            guard let sent else {
                // A strategy without a refresh token (an SDK, client credentials) was told the session is
                // over: end it once, like any other rejection, instead of handing out the rejected token.
                try checkEpoch(startEpoch)
                if session != nil || state.hasSession {
                    await endSession(reason: .revoked, error: .refreshTokenRejected)
                } else if state != .signedOut {
                    setState(.signedOut)
                }
                throw .refreshTokenRejected
            }
            return try await handleRejection(of: sent, epoch: startEpoch, seed: seed)
        }
    }

    func checkEpoch(_ startEpoch: UInt64) throws(TokenRefreshError) {
        guard epoch == startEpoch else {
            // Signed out or a new session meanwhile: this refresh is void and touches nothing.
            throw .signedOut
        }
    }

    /// Re-reads the store before refreshing. Returns a fresh token another process saved, if there is one;
    /// adopts a newer pair that still needs refreshing; ends the session when another process removed it.
    func rereadStore(epoch startEpoch: UInt64) async throws(TokenRefreshError) -> AuthToken? {
        let read = await store.load(account: configuration.account)
        try checkEpoch(startEpoch)
        switch read {
        case .found(let stored):
            guard stored.generation != storedGeneration || session == nil else { return nil }
            if let refreshToken = stored.token.refreshToken, deadRefreshTokens.contains(refreshToken) { return nil }
            adopt(stored)
            if !stored.token.willExpireSoon(at: now(), policy: configuration.expiryPolicy) {
                logger.debug("adopted a pair saved elsewhere", metadata: ["token": "\(stored.token.fingerprint)"])
                publish(.tokenRefreshed(userID: stored.userID, tokenFingerprint: stored.token.fingerprint))
                return stored.token
            }
            return nil
        case .absent:
            if let session, session.persisted, storedGeneration != nil {
                await endSession(reason: .removedElsewhere, error: nil)
                throw .signedOut
            }
            return nil
        case .unavailable(let error):
            publish(.storageUnavailable(TokenRefreshError.storageUnavailable.with(underlying: error)))
            if session == nil { throw TokenRefreshError.storageUnavailable.with(underlying: error) }
            return nil
        }
    }

    func adopt(_ stored: StoredSession) {
        session = Session(token: stored.token, userID: stored.userID, generation: stored.generation, persisted: true)
        storedGeneration = stored.generation
        setState(.signedIn(userID: stored.userID))
    }

    /// Calls the strategy, retrying transient failures with jittered backoff and `Retry-After`.
    ///
    /// With `sleepsUnderLock` false, a failure that is to be retried is thrown at once with the plan left in
    /// ``retryOutsideLock``: the caller waits with the store's lock released and comes back with `retry`.
    func attemptWithRetries(
        _ refreshToken: String?, epoch startEpoch: UInt64, retry startRetry: Int = 0, sleepsUnderLock: Bool = true
    ) async throws(TokenRefreshError)
        -> TokenResponse
    {
        var retry = startRetry
        while true {
            try checkEpoch(startEpoch)
            if let blocked = blockedRefreshError() { throw blocked }
            attemptTimes.append(clock.elapsed)
            let strategy = self.strategy
            let forced = flightIsForced
            let failure: TokenRefreshError
            do {
                let response = try await clock.withTimeout(configuration.refreshTimeout) {
                    try await strategy.refresh(using: refreshToken, forced: forced)
                }
                consecutiveTransientFailures = 0
                retryNotBefore = nil
                lastTransientError = nil
                return response
            } catch {
                failure = Self.classify(error)
            }
            try checkEpoch(startEpoch)
            guard failure.isTransient else {
                if failure != .refreshTokenRejected && failure != .cancelled {
                    publish(.refreshFailed(failure, userID: session?.userID))
                }
                throw failure
            }
            let delay =
                failure.retryAfter
                ?? configuration.backoff.delay(attempt: consecutiveTransientFailures, random: random())
            consecutiveTransientFailures += 1
            logger.debug("transient refresh failure", metadata: ["error": "\(failure)", "retry": "\(retry)"])
            let waitInside = failure.retryAfter.map { $0 <= configuration.backoff.maximumRetryAfterWait } ?? true
            guard retry < configuration.backoff.retries, waitInside else {
                retryNotBefore = clock.elapsed + delay
                lastTransientError = failure
                isOffline = failure.isConnectivityFailure
                publishSnapshot()
                noteExpiredIfOffline()
                publish(.refreshFailed(failure, userID: session?.userID))
                throw failure
            }
            retry += 1
            if !sleepsUnderLock {
                retryOutsideLock = (startEpoch, retry, delay)
                throw failure
            }
            do {
                try await clock.sleep(for: delay)
            } catch {
                throw .cancelled
            }
        }
    }

    /// Persists the new pair (generation-conditional), then makes it current.
    func completeRefresh(
        _ response: TokenResponse, sent: String?, from previous: Session?, epoch startEpoch: UInt64
    ) async throws(TokenRefreshError) -> AuthToken {
        try checkEpoch(startEpoch)
        let token = response.token(receivedAt: now(), keeping: sent)
        let userID = response.userID ?? previous?.userID ?? token.parseUserIdFromJWT()
        let generation = max(previous?.generation ?? 0, storedGeneration ?? 0) &+ 1
        let condition: WriteCondition = storedGeneration.map { .generation($0) } ?? .absent
        // Nobody sees the new pair before the write has landed or failed: not the waiters, not the snapshot.
        let stored = StoredSession(token: token, userID: userID, generation: generation)
        var writeFailure: TokenRefreshError?
        do {
            try await store.save(stored, account: configuration.account, condition: condition)
        } catch .conflict {
            // Someone stored a newer session meanwhile: it wins, and this refresh writes nothing.
            return try await adoptAfterConflict(epoch: startEpoch)
        } catch {
            writeFailure = TokenRefreshError.storageUnavailable.with(underlying: error)
        }
        // Signed out or a new session while writing: this refresh is void.
        try checkEpoch(startEpoch)
        // A failed write keeps the pair in memory (the rotated refresh token is never dropped) and is retried.
        session = Session(token: token, userID: userID, generation: generation, persisted: writeFailure == nil)
        isOffline = false
        if let writeFailure {
            lastPersistAttempt = clock.elapsed
            logger.debug("persisting the new pair failed; kept in memory", metadata: ["token": "\(token.fingerprint)"])
            publish(.persistenceFailed(writeFailure, tokenFingerprint: token.fingerprint))
        } else {
            storedGeneration = generation
        }
        setState(.signedIn(userID: userID))
        if previous == nil {
            publish(.signedIn(userID: userID, tokenFingerprint: token.fingerprint))
        } else {
            publish(.tokenRefreshed(userID: userID, tokenFingerprint: token.fingerprint))
        }
        logger.debug("token refreshed", metadata: ["token": "\(token.fingerprint)"])
        return token
    }

    func adoptAfterConflict(epoch startEpoch: UInt64) async throws(TokenRefreshError) -> AuthToken {
        let read = await store.load(account: configuration.account)
        try checkEpoch(startEpoch)
        switch read {
        case .found(let stored):
            adopt(stored)
            return stored.token
        case .absent:
            await endSession(reason: .removedElsewhere, error: nil)
            throw .signedOut
        case .unavailable(let error):
            throw TokenRefreshError.storageUnavailable.with(underlying: error)
        }
    }

    /// `invalid_grant`: re-read the store once (another process may have rotated), else end the session.
    func handleRejection(
        of refreshToken: String, epoch startEpoch: UInt64, seed: String?
    ) async throws(TokenRefreshError)
        -> AuthToken
    {
        deadRefreshTokens.insert(refreshToken)
        try checkEpoch(startEpoch)
        if seed == nil, case .found(let stored) = await store.load(account: configuration.account),
            let storedRefresh = stored.token.refreshToken, storedRefresh != refreshToken,
            !deadRefreshTokens.contains(storedRefresh)
        {
            try checkEpoch(startEpoch)
            adopt(stored)
            if !stored.token.willExpireSoon(at: now(), policy: configuration.expiryPolicy) { return stored.token }
            do {
                let response = try await attemptWithRetries(storedRefresh, epoch: startEpoch)
                return try await completeRefresh(response, sent: storedRefresh, from: session, epoch: startEpoch)
            } catch .refreshTokenRejected {
                deadRefreshTokens.insert(storedRefresh)
            }
        }
        try checkEpoch(startEpoch)
        if seed == nil {
            await endSession(reason: .revoked, error: .refreshTokenRejected)
        }
        throw .refreshTokenRejected
    }

    /// Ends the session in memory and in the store (conditional on the generation), and says so.
    func endSession(reason: AuthEvent.SignOutReason, error: TokenRefreshError?) async {
        let ended = session
        epoch &+= 1
        session = nil
        loaded = true
        isOffline = false
        abandonFlight(with: .failure(error ?? .signedOut), cancel: false)
        setState(.signedOut)
        if reason != .removedElsewhere {
            let condition: WriteCondition = storedGeneration.map { .generation($0) } ?? .always
            do {
                try await store.remove(account: configuration.account, condition: condition)
                storedGeneration = nil
            } catch {
                logger.debug("clearing the ended session failed", metadata: ["error": "\(error)"])
            }
        }
        publish(.signedOut(reason: reason, userID: ended?.userID, error: error))
        logger.debug("session ended", metadata: ["reason": "\(reason)"])
    }

    /// Resolves the flight in progress with `result` now; it will write nothing. `cancel` also stops its task
    /// (not wanted when the flight itself ends the session).
    func abandonFlight(with result: Result<AuthToken, TokenRefreshError>, cancel: Bool = true) {
        guard let flight else { return }
        self.flight = nil
        if cancel { flightTask?.cancel() }
        flightTask = nil
        publishSnapshot()
        flight.finish(result)
    }

    // MARK: - Sessions

    func startSession(
        _ token: AuthToken, userID: String?, previousState: AuthState
    ) async throws(TokenRefreshError) -> AuthToken {
        if !loaded, case .found(let stored) = await store.load(account: configuration.account) {
            storedGeneration = stored.generation
            if session == nil {
                // Kept so that a sign-in that cannot be stored falls back to the stored session.
                session = Session(
                    token: stored.token, userID: stored.userID, generation: stored.generation, persisted: true)
                loaded = true
            }
        }
        let prior = (session: session, loaded: loaded)
        epoch &+= 1
        let generation = max(storedGeneration ?? 0, session?.generation ?? 0) &+ 1
        session = Session(token: token, userID: userID, generation: generation, persisted: false)
        loaded = true
        isOffline = false
        attemptTimes = []
        retryNotBefore = nil
        lastTransientError = nil
        consecutiveTransientFailures = 0
        abandonFlight(with: .success(token))
        setState(.signedIn(userID: userID))
        let startEpoch = epoch
        do {
            try await store.save(
                StoredSession(token: token, userID: userID, generation: generation), account: configuration.account,
                condition: .always)
            if epoch == startEpoch {
                session?.persisted = true
                storedGeneration = generation
                publishSnapshot()
            }
        } catch {
            let failure = TokenRefreshError.storageUnavailable.with(underlying: error)
            publish(.persistenceFailed(failure, tokenFingerprint: token.fingerprint))
            if !configuration.allowsMemoryOnlySessions && epoch == startEpoch {
                // A session that is never stored is lost at the next launch: say so now, and keep what was
                // there before (the previous session, still in the store, or none).
                logger.debug("sign-in not stored; rolled back", metadata: ["error": "\(error)"])
                epoch &+= 1
                session = prior.session
                loaded = prior.loaded
                if prior.session != nil && previousState.hasSession {
                    setState(previousState)
                } else {
                    setState(prior.session.map { .signedIn(userID: $0.userID) } ?? .signedOut)
                }
                throw failure
            }
            lastPersistAttempt = clock.elapsed
        }
        publish(.signedIn(userID: userID, tokenFingerprint: token.fingerprint))
        logger.debug("signed in", metadata: ["token": "\(token.fingerprint)"])
        return token
    }

    /// Writes a pair that failed to persist earlier, at most once per ``Configuration/persistRetryInterval``.
    func retryPendingPersistIfDue() async {
        guard let pending = session, !pending.persisted, !persistInProgress else { return }
        let elapsed = clock.elapsed
        if let lastPersistAttempt, elapsed - lastPersistAttempt < configuration.persistRetryInterval { return }
        persistInProgress = true
        defer { persistInProgress = false }
        lastPersistAttempt = elapsed
        let startEpoch = epoch
        let condition: WriteCondition = storedGeneration.map { .generation($0) } ?? .absent
        let stored = StoredSession(token: pending.token, userID: pending.userID, generation: pending.generation)
        do {
            try await store.save(stored, account: configuration.account, condition: condition)
            guard epoch == startEpoch, session?.generation == pending.generation else { return }
            session?.persisted = true
            storedGeneration = pending.generation
            publishSnapshot()
            publish(.persistenceRecovered(tokenFingerprint: pending.token.fingerprint))
        } catch .conflict {
            guard epoch == startEpoch else { return }
            _ = try? await adoptAfterConflict(epoch: startEpoch)
        } catch {
            logger.debug(
                "persisting the pending pair failed again", metadata: ["token": "\(pending.token.fingerprint)"])
        }
    }
}
