import Foundation
import Persistence
import Testing
import TokenKitLogCheck

@testable import AuthToken
@testable import TokenRefresh

/// Every interleaving of callers, store answers, server answers, writes, cancellations, sign-in, sign-out, another
/// process and crashes, up to a depth, run through the pure session machine, with the invariants of a correct client
/// checked after every event (and again after every prefix is run to its end):
/// - a refresh token is presented at most once: never after the server rotated it, and never again after the server
///   rejected it (a crash forgets a rejection: the next process may present that dead token once more);
/// - a pair the server issued is persisted (its write landed or failed and was kept) before anyone is answered;
/// - nothing is written after sign-out or after a newer session began;
/// - every waiter is resolved (a crash ends its waiters with the process);
/// - the state is never `loading` once a call has returned, and shows a session (`signedIn`, `expired`) exactly while
///   one is held;
/// - a store that cannot be read at launch (the Keychain before the first unlock) reads `unavailable`, never
///   `signedOut`, also after a sign-in that failed meanwhile, and the stored session is back once the store can be
///   read;
/// - a pending pair written again (after a failed write) is written only under its own session, and a newer pair it
///   lost to is adopted.
///
/// The driver plays the actor: it carries out each ``FlightMachine/Action`` and feeds the answer back, one
/// refresh at a time under the store's lock, as `TokenRefreshClient` does. Another process rotates or removes the
/// stored pair only while this client does not hold the lock. A crash is not taken while a pair the server issued is
/// in memory only (its write on its way, or failed and waiting for a retry): that loss is cured only by a grace window
/// on the server.
@Suite(.logLeakCheck()) struct SessionMachineExplorationTests {
    /// Every world reachable in seven events (about 19 s of CPU in a debug build). Seven events reach a refreshed pair
    /// whose write failed, a 401 on it, and then its refresh token refused, or the store changed by another process
    /// before the re-read (rotated, then unreadable or removed). The floors are the figures of the first depth-7 run (30,260 distinct worlds expanded, 287,729
    /// transitions checked): a key that leaves out something that tells worlds apart merges them and explores fewer
    /// (at depth 6, leaving out the consumed refresh tokens explored 7,201 worlds instead of 7,205; the flights,
    /// 4,794), and a search that explores nothing fails.
    @Test func everyInterleavingUpToDepthSevenKeepsTheInvariants() async {
        let report = await onThreadOfItsOwn { Explorer(depth: 7, mutation: nil).run() }
        print(
            "session machine exploration: depth \(report.depthReached), \(report.worlds) distinct worlds expanded "
                + "(by depth: \(report.worldsAtDepth)), \(report.transitions) transitions checked, "
                + "\(report.refreshes) refreshes presented, \(report.violations.count) violations")
        #expect(report.depthReached == 7)
        #expect(report.worlds >= 30_260)
        #expect(report.transitions >= 287_729)
        #expect(report.blind.isEmpty, "the key cannot see inside \(report.blind)")
        #expect(report.violations.isEmpty, "\(report.violations.prefix(3))")
    }

    /// The same exploration against a driver with one planted bug each, to depth 5: the invariants catch every one (the
    /// exploration stops once they have).
    @Test(arguments: Explorer.Mutation.allCases)
    func aPlantedBugIsCaught(_ mutation: Explorer.Mutation) async {
        let report = await onThreadOfItsOwn {
            Explorer(depth: 5, mutation: mutation, stopsAt: mutation.caughtAs).run()
        }
        print(
            "planted bug \(mutation): \(report.violations.count) violations in \(report.worlds) distinct worlds, "
                + "\(report.transitions) transitions; first: " + (report.violations.first ?? "none"))
        #expect(report.violations.contains { $0.hasPrefix(mutation.caughtAs) })
    }
}

/// Runs `work` on a thread of its own and returns its result. The exploration computes for seconds without a
/// suspension point; run as a test's body it would hold one of the few threads that every async test of the process
/// shares (two on a two-core machine), and tests bounded by real timeouts would then miss them.
func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.stackSize = 16 << 20
        thread.start()
    }
}

/// Explores every world reachable from a fresh one in up to `depth` events, breadth first, each distinct world once.
///
/// Two worlds are the same when their ``World/key(using:)`` is: every stored property of the world, the machine
/// included, but the trace and the statistics counter. Every transition out of a distinct world is taken and checked
/// (``World/step(_:)`` runs ``World/checkStep()`` on the world it leads to, knowing the event); a transition that
/// leads to a world already explored stops there, since everything that can happen after it has been, or will be,
/// explored from that world. Every distinct world is also run to its end and checked (``World/drain()``,
/// ``World/checkEnd()``). At the last depth nothing is expanded, so no key is taken: every transition's world is run
/// to its end and checked, duplicates included (a key costs more than the run to the end). Breadth first, a world is
/// first met at its shallowest depth, so none is cut short by a deeper first visit. A violation carries the trace of
/// the first path that reached its world.
struct Explorer {
    /// A bug planted in the driver, to show the invariants catch it.
    enum Mutation: String, CaseIterable, CustomStringConvertible, Sendable {
        /// The refresh presents the held refresh token without re-reading the store first.
        case skipsTheReread
        /// The callers are answered as soon as the write starts, before it has landed.
        case answersBeforeTheWriteLands
        /// A refresh that fails forgets to answer the callers waiting for it.
        case failureLeavesWaiters
        /// A write goes ahead although the session ended while the server answered.
        case writesAfterSignOut
        /// A store that cannot be read at launch is taken as holding nothing (the ghost sign-out).
        case unavailableReadsAsSignedOut
        /// A sign-in that fails while the store cannot be read settles on signed out (nothing held taken as nothing
        /// stored).
        case failedSignInForgetsTheLockedStore
        /// A sign-out leaves the state showing the ended session as expired (the state set by hand, apart from the
        /// session it describes).
        case signOutShowsTheSessionExpired
        /// A session action (`SessionMachine.Action`) is carried out without its callers' part: the store step and
        /// the events are, but a flight made void is not failed and a flight that ended is not answered.
        case dropsTheCallersPart
        /// A pending removal made again is reported to the machine as landed, but never made: the queue forgets it.
        case reportsTheRemovalUnmade
        /// A flight event of an older session reaches the refresh's flight machine unchecked: the session machine's
        /// one guard (the epoch and the current flight) is skipped.
        case refusesNoStaleFlightEvent

        var description: String { rawValue }

        /// The violation that names it.
        var caughtAs: String {
            switch self {
            case .skipsTheReread: "presented a consumed refresh token"
            case .answersBeforeTheWriteLands: "answered before the pair was persisted"
            case .failureLeavesWaiters: "a waiter was never resolved"
            case .writesAfterSignOut: "wrote after sign-out or a newer session"
            case .unavailableReadsAsSignedOut: "a locked store read as signed out"
            case .failedSignInForgetsTheLockedStore: "a locked store read as signed out"
            case .signOutShowsTheSessionExpired: "the state shown disagrees with the session held"
            case .dropsTheCallersPart: "a waiter was never resolved"
            case .reportsTheRemovalUnmade: "wrote after sign-out or a newer session (an ended session is still stored)"
            case .refusesNoStaleFlightEvent: "wrote after sign-out or a newer session"
            }
        }
    }

    struct Report {
        /// Distinct worlds expanded: every transition out of each was taken (depths 0 to `depth - 1`).
        var worlds = 0
        /// Transitions taken and checked: into new worlds, into ones already explored, and at the last depth.
        var transitions = 0
        /// Distinct worlds first met at each depth below the last (index 0: the start).
        var worldsAtDepth: [Int] = []
        /// The deepest depth a transition reached.
        var depthReached = 0
        /// Refresh tokens presented over the checked transitions and the runs to the end.
        var refreshes = 0
        var violations: [String] = []
        /// Whether the violation the exploration stops at was found.
        var stopped = false
        /// The types whose contents the key could not see (must be empty).
        var blind: Set<String> = []
    }

    let depth: Int
    let mutation: Mutation?
    /// A violation to stop at once it is found (a planted bug's).
    var stopsAt: String? = nil

    func run() -> Report {
        var report = Report()
        let writer = StateKeyWriter()
        var start = World(mutation: mutation)
        start.start()
        var visited: Set<World.Key> = [start.key(using: writer)]
        visit(start, report: &report)
        var frontier = [start]
        report.worldsAtDepth = [1]
        for level in 1...max(depth, 1) where !frontier.isEmpty && !report.stopped {
            var next: [World] = []
            for world in frontier where world.violations.isEmpty {
                for event in World.Event.allCases where !report.stopped {
                    var successor = world
                    guard successor.step(event) else { continue }
                    report.transitions += 1
                    report.depthReached = level
                    report.refreshes += successor.presented - world.presented
                    if !successor.violations.isEmpty {
                        record(successor.violations[0], in: successor, report: &report)
                        continue
                    }
                    guard level < depth else {
                        visit(successor, report: &report)
                        continue
                    }
                    guard visited.insert(successor.key(using: writer)).inserted else { continue }
                    visit(successor, report: &report)
                    next.append(successor)
                }
            }
            if level < depth { report.worldsAtDepth.append(next.count) }
            frontier = next
        }
        report.worlds = visited.count
        report.blind = writer.blind
        return report
    }

    /// Runs `world` to its end and checks it.
    private func visit(_ world: World, report: inout Report) {
        var drained = world
        drained.drain()
        drained.checkEnd()
        report.refreshes += drained.presented - world.presented
        if let violation = drained.violations.first { record(violation, in: world, report: &report) }
    }

    private func record(_ violation: String, in world: World, report: inout Report) {
        if let stopsAt, violation.hasPrefix(stopsAt) { report.stopped = true }
        guard report.violations.count < 50 else { return }
        report.violations.append("\(violation) after \(world.trace.joined(separator: ", "))")
    }
}

/// The machine, a store, a rotating server and the actor's bookkeeping, as one value (copied at every branch).
struct World {
    enum Event: String, CaseIterable, CustomStringConvertible {
        case caller, rejected401, cancel, signIn, signOut, later, crash, otherProcessRotates, removedElsewhere
        /// A sign-out whose removal fails (a locked Keychain): the removal is queued and made again later.
        case signOutFails
        case lockTimesOut, storeAnswers, storeUnavailable
        case serverRotates, serverKeepsRefreshToken, serverRejects, serverFailsTransiently
        case writeLands, writeFails
        /// The process restarts while the store cannot be read (the Keychain before the first unlock), and the app
        /// restores the session: the read fails.
        case crashIntoLockedStore
        /// Protected data became available: the app restores the session again.
        case unlock
        /// A sign-in whose grant the server refuses (wrong password), also while the store cannot be read.
        case signInFails
        /// A call makes the first pending write again (a pair whose first write failed), as the actor does before
        /// deciding.
        case writeRetry

        var description: String { rawValue }
    }

    /// A refresh waiting for the world to answer, in the order of the store's lock.
    struct Procedure {
        var flight: Int
        var epoch: UInt64
        var seed: String?
        var waiting: Waiting?
        /// The refresh's flight machine as last seen (kept only for ``Explorer/Mutation/refusesNoStaleFlightEvent``).
        var unchecked: FlightMachine? = nil
    }

    enum Waiting {
        /// The store is read (`first`: the re-read right after the lock was taken).
        case readStore(first: Bool)
        case present(String?)
        case persist(StoredSession, WriteCondition)
    }

    struct FlightRecord {
        let flight: RefreshFlight
        var waiters = 1
        var resolved = false
        var died = false
        /// The token its waiters were answered with (nil until answered, and after a failure).
        var answered: AuthToken?
    }

    enum Deferred {
        case removal(epoch: UInt64, fails: Bool)
        case save(SessionMachine.SignInAction)
    }

    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let configuration = TokenRefreshClient.Configuration(backoff: .init(retries: 0))

    let mutation: Explorer.Mutation?
    var machine = SessionMachine(configuration: World.configuration, requiresRefreshToken: true)
    var store: StoredSession?
    var live = Set<String>()
    /// Refresh tokens the server rotated away.
    var consumed = Set<String>()
    /// Refresh tokens the server rejected since this process started.
    var rejectedHere = Set<String>()
    var issued = Set<String>()
    var finishedWrites = Set<String>()
    var minted = 0
    var seconds = 3500.0
    var flights: [FlightRecord] = []
    var procedures: [Procedure] = []
    var deferred: [Deferred] = []
    var presented = 0
    /// Whether the store cannot be read now.
    var locked = false
    /// Whether the last event of the path was ``Event/unlock`` (an end check looks back at it, so it is state).
    var unlockedLast = false
    var violations: [String] = []
    /// The events of the first path that reached this world (not part of ``key(using:)``).
    var trace: [String] = []

    init(mutation: Explorer.Mutation?) { self.mutation = mutation }

    var now: Date { Self.start.addingTimeInterval(seconds) }
    var elapsed: Duration { .seconds(seconds) }
    var writing: Bool {
        if case .persist = procedures.first?.waiting { return true }
        return false
    }

    /// A stored session with a one-hour token received at `start`, due for a refresh now.
    mutating func start() {
        let token = mint(receivedAt: Self.start)
        store = StoredSession(token: token, userID: "user-1", generation: 1)
        _ = machine.loaded(store, now: now)
    }

    mutating func mint(receivedAt: Date) -> AuthToken {
        minted += 1
        live.insert("explore-refresh-\(minted)")
        return AuthToken(
            accessToken: "explore-access-\(minted)", refreshToken: "explore-refresh-\(minted)", receivedAt: receivedAt,
            lifetime: 3600)
    }

    // MARK: - Events

    /// Takes `event` as the next event of the path, if it can happen now, and checks the world it leads to.
    mutating func step(_ event: Event) -> Bool {
        guard apply(event) else { return false }
        unlockedLast = event == .unlock
        trace.append("\(event)")
        checkStep()
        return true
    }

    mutating func apply(_ event: Event) -> Bool {
        // While the store cannot be read, only callers, time and the unlock happen (nothing can be written).
        guard !locked || [.caller, .later, .unlock, .signInFails].contains(event) else { return false }
        seconds += 1
        switch event {
        case .caller:
            request(.validToken)
        case .rejected401:
            guard let session = machine.session else { return false }
            request(.afterRejection(of: session.token.accessToken))
        case .cancel:
            guard let index = flights.firstIndex(where: { !$0.resolved && !$0.died && $0.waiters > 1 }) else {
                return false
            }
            flights[index].waiters -= 1  // it leaves; the refresh goes on for the others
        case .signIn:
            let token = mint(receivedAt: now)
            let signIn = machine.signingIn(
                token, userID: "user-1", stateBefore: machine.authState, profile: nil, sessionID: "session-\(minted)")
            resolve(signIn.flight, with: .failure(.sessionChanged))
            writeLater(.save(signIn))
        case .signOut, .signOutFails:
            guard event == .signOut || machine.session != nil else { return false }
            let ended = machine.session
            let signOut = machine.signingOut()
            if mutation == .signOutShowsTheSessionExpired, let ended {
                machine.authState = .expired(lastUserID: ended.userID)  // the bug: a state apart from the session
            }
            carryOutCallers(signOut)
            writeLater(.removal(epoch: machine.epoch, fails: event == .signOutFails))
        case .signInFails:
            signInFails()
        case .writeRetry:
            return writeRetry()
        case .later:
            seconds += 3500
        case .crash:
            // Not while a pair the server issued is in memory only (being written, or kept after a failed write):
            // a crash then loses the rotated pair, which only a grace window on the server cures. Nor while a
            // removal is pending: a crash loses it (the sign-out told the app it failed), and the next launch
            // restores the session it was to remove.
            guard !writing, machine.session?.persisted != false, machine.pendingWrites.queue.isEmpty else {
                return false
            }
            for index in flights.indices where !flights[index].resolved { flights[index].died = true }
            procedures = []
            deferred = []
            rejectedHere = []
            machine = SessionMachine(configuration: Self.configuration, requiresRefreshToken: true)
            _ = machine.loaded(store, now: now)
        case .crashIntoLockedStore:
            guard !writing, machine.session?.persisted != false, machine.pendingWrites.queue.isEmpty, !locked else {
                return false
            }
            for index in flights.indices where !flights[index].resolved { flights[index].died = true }
            procedures = []
            deferred = []
            rejectedHere = []
            machine = SessionMachine(configuration: Self.configuration, requiresRefreshToken: true)
            locked = true
            restore()
        case .unlock:
            guard locked else { return false }
            locked = false
            restore()
        case .otherProcessRotates:
            guard procedures.isEmpty, let stored = store, let refresh = stored.token.refreshToken,
                live.contains(refresh)
            else { return false }
            consume(refresh)
            store = StoredSession(
                token: mint(receivedAt: now), userID: "user-1", generation: stored.generation + 1,
                sessionID: stored.sessionID)
        case .removedElsewhere:
            guard procedures.isEmpty, store != nil else { return false }
            store = nil
        case .lockTimesOut:
            // Another process held the store's lock too long: this refresh re-reads without it.
            guard case .readStore(first: true) = procedures.first?.waiting, machine.isCurrent(procedures[0].epoch)
            else {
                return false
            }
            run(flightEvent(.lockTimedOut(.lockTimedOut)))
        case .storeAnswers, .storeUnavailable:
            guard case .readStore = procedures.first?.waiting else { return false }
            let read: TokenStoreRead =
                event == .storeUnavailable ? .unavailable(.unavailable) : store.map(TokenStoreRead.found) ?? .absent
            run(flightEvent(.storeRead(read)))
        case .serverRotates, .serverKeepsRefreshToken, .serverRejects, .serverFailsTransiently:
            guard case .present(let sent) = procedures.first?.waiting, let sent else { return false }
            return serverAnswers(event, to: sent)
        case .writeLands, .writeFails:
            guard case .persist(let stored, let condition) = procedures.first?.waiting else { return false }
            var failure: PersistenceError? = event == .writeFails ? .writeFailed : nil
            if failure == nil, condition.allows(stored: store) {
                store = stored
            } else if failure == nil {
                failure = .conflict
            }
            if failure != .conflict { finishedWrites.insert(stored.token.accessToken) }
            run(flightEvent(.writeFinished(failure)))
            runDeferred()
        }
        return true
    }

    mutating func serverAnswers(_ event: Event, to sent: String) -> Bool {
        let epoch = procedures[0].epoch
        switch event {
        case .serverRotates, .serverKeepsRefreshToken:
            guard live.contains(sent) else { return false }
            minted += 1
            let access = "explore-access-\(minted)"
            issued.insert(access)
            var newRefresh: String?
            if event == .serverRotates {
                consume(sent)
                newRefresh = "explore-refresh-\(minted)"
                live.insert(newRefresh!)
            }
            let response = TokenResponse(accessToken: access, refreshToken: newRefresh, expiresIn: 3600)
            let action = flightEvent(.answered(response))
            if mutation == .writesAfterSignOut, case .fail = action.callers {
                // The bug: the seed's pattern, saving whatever a refresh returned, whatever happened meanwhile.
                if !machine.isCurrent(epoch) { violations.append("wrote after sign-out or a newer session") }
                let token = response.token(receivedAt: now, keeping: sent)
                store = StoredSession(
                    token: token, userID: "user-1", generation: (store?.generation ?? 0) + 1,
                    sessionID: machine.session?.sessionID)
            }
            run(action)
        case .serverRejects:
            live.remove(sent)
            rejectedHere.insert(sent)
            callFailed(.refreshTokenRejected, epoch: epoch)
        default:
            callFailed(.transient, epoch: epoch)
        }
        return true
    }

    /// The actor's `carryOut` after the strategy failed (no retries are configured).
    mutating func callFailed(_ failure: TokenRefreshError, epoch: UInt64) {
        let action = flightEvent(.callFailed(failure))
        if case .sleep = action.work { return violations.append("a retry was planned with no retries configured") }
        run(action)
    }

    /// The actor's `signIn(_:)` with a grant the server refuses: the state settles once the store has been read (if it
    /// can be), never on `loading`, and never on `signedOut` while the store cannot be read.
    mutating func signInFails() {
        let start = machine.signInStarting()
        let action = machine.grantAnswered(
            .failure(TokenRefreshError.signInRejected), userID: nil, receivedAt: now, epoch: start.epoch)
        switch action {
        case .startSession:
            violations.append("a refused grant started a session")
        case .fail:
            violations.append("a refused grant left the state to a call that never came")
        case .settleThenFail:
            restore()
            if mutation == .failedSignInForgetsTheLockedStore, machine.session == nil {
                machine.authState = .signedOut  // the bug: nothing held taken as nothing stored
            } else {
                machine.failedSignInSettled(previous: start.previous)
            }
        }
    }

    /// The actor's retry of the first pending write (`callerArrived` answering `retryWrite`): a pending pair is written
    /// under its own session only (conditional on the generation stored), and a newer pair it lost to is adopted; a
    /// removal is made under its condition. Taken between refreshes (the store's writes are sequential here).
    mutating func writeRetry() -> Bool {
        guard procedures.isEmpty, let write = machine.writeRetryStarting(elapsed: elapsed) else { return false }
        let turn = machine.writeRetryTurn(write).store
        if turn != .none, !machine.isCurrent(write.epoch) {
            violations.append("wrote after sign-out or a newer session")
        }
        if case .remove(let condition) = turn {
            let landed = condition.allows(stored: store)
            if landed, mutation != .reportsTheRemovalUnmade { store = nil }  // the bug: reported, never made
            _ = machine.writeRetryEnded(write, landed ? .success(()) : .failure(.conflict))
            return true
        }
        guard case .save(let stored, let condition) = turn else { return true }
        let landed = condition.allows(stored: store)
        if landed {
            store = stored
            finishedWrites.insert(stored.token.accessToken)
        }
        let outcome: Result<Void, PersistenceError> = landed ? .success(()) : .failure(.conflict)
        let ended = machine.writeRetryEnded(write, outcome)
        switch ended.store {
        case .readAfterConflict(let epoch):
            let read = machine.conflictRead(
                store.map(TokenStoreRead.found) ?? .absent, epoch: epoch, now: now, elapsed: elapsed)
            switch (read.work, read.callers) {
            case (_, .failTakenFlight(let flight, let failure)): resolve(flight, with: .failure(failure))
            case (.endSession(let reason, _), _): endSession(reason: reason)
            default: break
            }
        default:
            break
        }
        if !ended.events.isEmpty, store != stored {
            violations.append("a pending pair reported stored was not in the store")
        }
        return true
    }

    mutating func consume(_ refreshToken: String) {
        live.remove(refreshToken)
        consumed.insert(refreshToken)
    }

    /// The actor's `ensureLoaded`: reads the store once, unless it has been read.
    mutating func restore() {
        guard !machine.loaded else { return }
        var read: TokenStoreRead = locked ? .unavailable(.unavailable) : store.map(TokenStoreRead.found) ?? .absent
        if mutation == .unavailableReadsAsSignedOut, locked {
            read = .absent  // the bug: "interaction not allowed" taken as "no item"
        }
        if case .discard(let condition) = machine.storeRead(atLoad: read, now: now).store,
            condition.allows(stored: store)
        {
            store = nil
        }
    }

    @discardableResult
    mutating func request(_ request: SessionMachine.Request) -> SessionMachine.CallerAction {
        restore()
        guard machine.loaded else { return .fail(.storageUnavailable) }
        let decided = machine.decide(request, now: now, elapsed: elapsed)
        switch decided {
        case .token, .fail, .refreshStatelessly:
            break
        case .readStore, .retryWrite:
            break  // callerArrived's steps around decide: decide never answers them
        case .join(let flight):
            if let index = flights.firstIndex(where: { $0.flight === flight }) { flights[index].waiters += 1 }
        case .endSessionThenFail(let error):
            endSession(reason: .expired, error: error)
        case .run(let flight, let epoch, let seed):
            flights.append(FlightRecord(flight: flight))
            procedures.append(Procedure(flight: flights.count - 1, epoch: epoch, seed: seed))
            if procedures.count == 1 { takeLock() }
        }
        return decided
    }

    // MARK: - Carrying out the machine's actions, as the actor does

    /// The actor's `flightEvent`: hands `event` of the refresh at the head of the lock to the machine, under the epoch
    /// that refresh started under.
    mutating func flightEvent(_ event: FlightMachine.Event) -> FlightMachine.Action {
        let epoch = procedures[0].epoch
        if mutation == .refusesNoStaleFlightEvent, !machine.isCurrent(epoch), var unchecked = procedures[0].unchecked {
            // The bug: the event reaches the refresh's own flight machine, unchecked against the epoch.
            let action = unchecked.receive(event, in: machine, now: now, elapsed: elapsed)
            procedures[0].unchecked = unchecked
            return action
        }
        let action = machine.flightEvent(event, epoch: epoch, now: now, elapsed: elapsed, random: { 0.5 })
        if mutation == .refusesNoStaleFlightEvent, machine.flight?.epoch == epoch {
            procedures[0].unchecked = machine.flight
        }
        return action
    }

    /// The head refresh takes the store's lock.
    mutating func takeLock() {
        var action = flightEvent(.lockTaken)
        if mutation == .skipsTheReread, case .readStore = action.work {
            // The bug: the store is taken to hold what memory holds.
            let held = machine.session.map {
                TokenStoreRead.found(
                    StoredSession(
                        token: $0.token, userID: $0.userID, generation: $0.generation, sessionID: $0.sessionID))
            }
            action = flightEvent(.storeRead(held ?? .absent))
        }
        run(action, afterLock: true)
    }

    /// Carries out the flight's actions, as the actor does, until the refresh waits for the world or is answered.
    mutating func run(_ first: FlightMachine.Action, afterLock: Bool = false) {
        var action = first
        while true {
            switch action.work {
            case .readStore:
                procedures[0].waiting = .readStore(first: afterLock)
                return
            case .call(let sent, _):
                if let sent, consumed.contains(sent) || rejectedHere.contains(sent) {
                    violations.append("presented a consumed refresh token")
                }
                presented += 1
                procedures[0].waiting = .present(sent)
                return
            case .blocked(let error):
                action = flightEvent(.gaveUp(error))
                continue
            case .sleep:
                return violations.append("a retry was planned before any attempt")
            case .persist(let stored, let condition):
                if !machine.isCurrent(procedures[0].epoch) {
                    violations.append("wrote after sign-out or a newer session")
                }
                procedures[0].waiting = .persist(stored, condition)
                if mutation == .answersBeforeTheWriteLands {
                    resolve(flights[procedures[0].flight].flight, with: .success(stored.token))
                }
                return
            case .endSession(let reason, let error):
                endSession(reason: reason, error: error)
            case .endSessionIfHeld(let reason, let error):
                carryOut(machine.endingSessionIfHeld(reason: reason, error: error))
            case .none:
                break
            }
            switch action.callers {
            case .adopted(let stored): return endProcedure(.success(stored.token))
            case .token(let token): return endProcedure(.success(token))
            case .fail(let error): return endProcedure(.failure(error))
            case .failTakenFlight(let taken, let failure):
                resolve(taken, with: .failure(failure))
                return endProcedure(.failure(failure))
            case nil: return violations.append("an action with neither work nor an answer")
            }
        }
    }

    /// The refresh at the head of the lock ends: its flight is answered, and the next refresh takes the lock.
    mutating func endProcedure(_ result: Result<AuthToken, TokenRefreshError>) {
        let ended = procedures.removeFirst()
        let end = machine.flightEnded(result, flights[ended.flight].flight, epoch: ended.epoch)
        switch end.callers {
        case .finish(_, .failure, _) where mutation == .failureLeavesWaiters:
            break  // The bug: an error path that returns without answering the flight.
        case .finish where mutation == .dropsTheCallersPart:
            break  // The bug: the callers' part is dropped.
        case .finish(let flight, let result, _):
            resolve(flight, with: result)
        default:
            violations.append("a flight's end was not answered as its end")
        }
        runDeferred()
        guard let next = procedures.first, case .none = next.waiting else { return }
        takeLock()
    }

    mutating func resolve(_ flight: RefreshFlight?, with result: Result<AuthToken, TokenRefreshError>) {
        guard let flight, let index = flights.firstIndex(where: { $0.flight === flight }) else { return }
        guard !flights[index].resolved else { return }
        flights[index].resolved = true
        if case .success(let token) = result { flights[index].answered = token }
        if case .success(let token) = result, issued.contains(token.accessToken),
            !finishedWrites.contains(token.accessToken)
        {
            violations.append("answered before the pair was persisted")
        }
    }

    /// The actor's `endSession`: memory first, then the store, conditional on the generation.
    mutating func endSession(reason: AuthEvent.SignOutReason = .revoked, error: TokenRefreshError? = nil) {
        carryOut(machine.endingSession(reason: reason, error: error))
    }

    mutating func carryOut(_ ending: SessionMachine.Action) {
        carryOutCallers(ending)
        guard case .removeEnded(let removal) = ending.store else { return }
        let landed = removal.condition.allows(stored: store)
        if landed { store = nil }
        machine.removalEnded(landed ? nil : .conflict, removal, overtaken: false, elapsed: elapsed)
        if landed && machine.inStore != nil { violations.append("a removal's end was misreported") }
    }

    /// The callers' part of a session action: a flight made void fails.
    mutating func carryOutCallers(_ action: SessionMachine.Action) {
        guard mutation != .dropsTheCallersPart, case .failFlight(let flight, let failure) = action.callers else {
            return
        }
        resolve(flight, with: .failure(failure))
    }

    /// A sign-in's save or a sign-out's removal lands after every write of an older session (the write fence).
    mutating func writeLater(_ write: Deferred) {
        deferred.append(write)
        runDeferred()
    }

    mutating func runDeferred() {
        guard !writing else { return }
        let writes = deferred
        deferred = []
        for write in writes {
            switch write {
            case .removal(let epoch, let fails):
                guard machine.isCurrent(epoch) else { continue }
                if !fails { store = nil }
                _ = machine.signOutRemovalFinished(fails ? .unavailable : nil, epoch: epoch, elapsed: elapsed)
            case .save(let signIn):
                // The actor's sign-in save: skipped when a sign-out or another sign-in came first.
                guard case .saveAboveStored(let stored) = machine.signInWriteTurn(signIn).store else {
                    _ = machine.signInWriteFinished(nil, signIn, elapsed: elapsed)
                    continue
                }
                store = stored
                _ = machine.signInWriteFinished(.success(stored.generation), signIn, elapsed: elapsed)
            }
        }
    }

    // MARK: - Invariants

    mutating func checkStep() {
        if machine.authState == .loading { violations.append("the state read loading after a call returned") }
        if machine.authState.hasSession != (machine.session != nil) {
            violations.append("the state shown disagrees with the session held")
        }
        if locked, store != nil, machine.authState == .signedOut {
            violations.append("a locked store read as signed out")
        }
        if locked, !machine.loaded, machine.authState != .unavailable {
            violations.append("a locked store did not read unavailable")
        }
        if !locked, machine.loaded, machine.session == nil, store != nil, procedures.isEmpty, deferred.isEmpty,
            unlockedLast
        {
            violations.append("the stored session was not back after the unlock")
        }
    }

    /// Runs every refresh to its end with the kindest answers.
    mutating func drain() {
        var steps = 0
        while let head = procedures.first, steps < 20 {
            steps += 1
            switch head.waiting {
            case .readStore: _ = apply(.storeAnswers)
            case .present(let sent):
                if !(sent.map(live.contains) ?? false) || !apply(.serverRotates) { _ = apply(.serverRejects) }
            case .persist: _ = apply(.writeLands)
            case nil: takeLock()
            }
        }
        runDeferred()
        // The pending writes are made again, one per retry interval, as the next calls would.
        while procedures.isEmpty, !locked, !machine.pendingWrites.queue.isEmpty, steps < 24 {
            steps += 1
            seconds += Double(Self.configuration.persistRetryInterval.components.seconds)
            _ = writeRetry()
        }
    }

    mutating func checkEnd() {
        checkStep()
        if flights.contains(where: { !$0.resolved && !$0.died }) { violations.append("a waiter was never resolved") }
        if machine.session == nil, machine.loaded, store != nil, deferred.isEmpty {
            violations.append("wrote after sign-out or a newer session (an ended session is still stored)")
        }
    }

    // MARK: - The key

    /// What the rest of the exploration can depend on: every stored property of the world and of the machine in it,
    /// walked by reflection (a new property is part of it without a change here), but for
    /// - ``trace``: the path that first reached the world, kept for the report;
    /// - ``presented``: a statistics counter; nothing reads it but the report;
    /// - the machine's `visibleVersion`: a counter of the state's changes that only the actor reads (to republish
    ///   after a change); no transition of the machine and no check here reads it;
    /// - the machine's `configuration`: a constant, the same ``configuration`` in every world.
    /// A refresh flight (a class) counts by identity, numbered in the order the walk meets it: the driver only
    /// compares flights with `===`. A value whose own mirror hides its contents (a token, the machine's hashed sets of
    /// rejected and held tokens) is read through its own API (``StateKeyWriter``); any other such value fails the
    /// exploration.
    func key(using writer: StateKeyWriter) -> Key {
        writer.begin(minted: minted)
        writer.write(self)
        return Key(bytes: writer.bytes)
    }

    struct Key: Hashable {
        let bytes: [UInt8]

        func hash(into hasher: inout Hasher) {
            bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
        }
    }
}

/// Writes a value's whole content, found by reflection, as bytes: equal bytes, equal worlds. One per exploration (it
/// remembers what it learned of each type).
final class StateKeyWriter {
    /// Properties left out of the key (see ``World/key(using:)``).
    static let excluded: Set<String> = ["trace", "presented", "visibleVersion", "configuration"]
    /// The standard library's own mirrors (optionals, collections), which show every element.
    static let listsItsContents: Set<Mirror.DisplayStyle?> = [.optional, .collection, .set, .dictionary]

    private enum Kind {
        case plain, string, strings, stringSet, token, rejected, lineage, object, reflected
    }

    private(set) var bytes: [UInt8] = []
    /// The types whose contents the key could not see (a mirror of their own that hides them).
    private(set) var blind: Set<String> = []
    private var kinds: [ObjectIdentifier: Kind] = [:]
    private var objects: [ObjectIdentifier: Int] = [:]
    private var refreshTokens: [String] = []
    private var accessTokens: [String] = []
    private var minted = 0

    init() { bytes.reserveCapacity(4096) }

    /// Starts a key for a world that minted `minted` pairs: the hashed token sets are probed for each of them.
    func begin(minted: Int) {
        bytes.removeAll(keepingCapacity: true)
        objects.removeAll(keepingCapacity: true)
        self.minted = minted
        while refreshTokens.count <= minted {
            refreshTokens.append("explore-refresh-\(refreshTokens.count)")
            accessTokens.append("explore-access-\(accessTokens.count)")
        }
    }

    func write(_ value: Any) {
        let type = Swift.type(of: value)
        let typeID = ObjectIdentifier(type)
        append(UInt(bitPattern: typeID))
        let kind = kinds[typeID] ?? classify(value, type)
        switch kind {
        case .plain:
            bytes += _openExistential(value, do: plainBytes)
        case .string:
            write(value as! String)
        case .strings:
            let strings = value as! [String]
            append(UInt(strings.count))
            for string in strings { write(string) }
        case .stringSet:
            // Equal sets may iterate in different orders.
            let strings = (value as! Set<String>).sorted()
            append(UInt(strings.count))
            for string in strings { write(string) }
        case .token:
            write(value as! AuthToken)
        case .object:
            let object = ObjectIdentifier(value as AnyObject)
            if let number = objects[object] { return append(UInt(number)) }
            objects[object] = objects.count
            append(UInt(objects.count - 1))
        case .rejected:
            let rejected = value as! RejectedRefreshTokens
            let mirror = Mirror(reflecting: rejected)
            write(children: mirror)
            guard mirror.children.first?.value as? Int != 0 else { return }
            for token in refreshTokens[...minted].dropFirst() { bytes.append(rejected.contains(token) ? 1 : 0) }
        case .lineage:
            let lineage = value as! SessionLineage
            let mirror = Mirror(reflecting: lineage)
            write(children: mirror)
            if mirror.children.first?.value as? Int != 0 {
                for token in accessTokens[...minted].dropFirst() {
                    bytes.append(lineage.contains(accessToken: token) ? 1 : 0)
                }
            }
            if mirror.children.dropFirst().first?.value as? Int != 0 {
                for token in refreshTokens[...minted].dropFirst() {
                    bytes.append(lineage.contains(refreshToken: token) ? 1 : 0)
                }
            }
        case .reflected:
            write(mirror: Mirror(reflecting: value), of: value)
        }
    }

    private func classify(_ value: Any, _ type: Any.Type) -> Kind {
        // By the exact type: a cast would also unwrap an optional.
        let kind: Kind =
            if type is AnyClass { .object } else if type == String.self { .string } else if type == [String].self {
                .strings
            } else if type == Set<String>.self { .stringSet } else if type == AuthToken.self {
                .token
            } else if type == RejectedRefreshTokens.self { .rejected } else if type == SessionLineage.self {
                .lineage
            } else if _openExistential(value, do: isPlain), Mirror(reflecting: value).children.isEmpty {
                // A number, or an enum without payloads: no padding (a struct's could hold any bytes).
                .plain
            } else { .reflected }
        if case .reflected = kind, value is any CustomReflectable,
            !Self.listsItsContents.contains(Mirror(reflecting: value).displayStyle)
        {
            blind.insert("\(type)")
        }
        kinds[ObjectIdentifier(type)] = kind
        return kind
    }

    private func write(mirror: Mirror, of value: Any) {
        switch mirror.displayStyle {
        case .set, .dictionary:
            // Equal sets may iterate in different orders: the elements' bytes are sorted.
            let start = bytes.count
            var elements: [[UInt8]] = []
            for child in mirror.children {
                write(child.value)
                elements.append(Array(bytes[start...]))
                bytes.removeSubrange(start...)
            }
            append(UInt(elements.count))
            for element in elements.sorted(by: { $0.lexicographicallyPrecedes($1) }) { bytes += element }
        case .enum:
            // A case with a payload: its name, then the payload. A case without one, of an enum with payloads in
            // other cases: its bytes, which hold no reference in such a case (only the case's number).
            if mirror.children.isEmpty { bytes += _openExistential(value, do: caseBytes) }
            for child in mirror.children { write(child.label ?? "") }
            write(children: mirror)
        default:
            write(children: mirror)
        }
    }

    private func write(children mirror: Mirror) {
        append(UInt(mirror.children.count))
        for child in mirror.children where !Self.excluded.contains(child.label ?? "") { write(child.value) }
    }

    private func writePlain<T>(_ value: T) {
        withUnsafeBytes(of: value) { bytes += $0 }
    }

    private func write(_ string: String) {
        append(UInt(string.utf8.count))
        bytes += string.utf8
    }

    /// A token's mirror shows no token text: every stored property, read one by one.
    private func write(_ token: AuthToken) {
        write(token.accessToken)
        write(token.refreshToken.map { "some " + $0 } ?? "none")
        write(token.tokenType)
        write(token.scope.map { "some " + $0 } ?? "none")
        writePlain(token.receivedAt)
        writePlain(token.lifetime)
        writePlain(token.expirationClaim)
        writePlain(token.knownLifetime)
        writePlain(token.expiresAt)
    }

    private func append(_ number: UInt) {
        withUnsafeBytes(of: number) { bytes += $0 }
    }
}

/// Whether a value holds no references (numbers, `Date`, `Duration`, an enum without payloads).
private func isPlain<T>(_ value: T) -> Bool { _isPOD(T.self) }

/// The bytes of a value with no references.
private func plainBytes<T>(_ value: T) -> [UInt8] {
    withUnsafeBytes(of: value) { Array($0) }
}

/// The bytes of an enum case without a payload (of an enum with payloads in other cases).
private func caseBytes<T>(_ value: T) -> [UInt8] {
    withUnsafeBytes(of: value) { Array($0) }
}
