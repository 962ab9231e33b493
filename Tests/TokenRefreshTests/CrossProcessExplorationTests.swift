import Foundation
import Persistence
import Testing
import TokenKitLogCheck

@testable import AuthToken
@testable import TokenRefresh

/// Two clients (an app and its extension, two CLI instances, two replicas) over one store, two users, and a server that
/// rotates refresh tokens and revokes the whole family when a rotated one comes back: every interleaving of sign-ins
/// and sign-outs in either client, the app's own writes, refreshes, store reads and writes that fail or land late,
/// up to a depth, through the pure session machines, with these invariants checked after every event:
/// - no token of one user is presented, attached (answered to a caller) or written for another;
/// - no refresh token is presented after it was rotated away or its family revoked;
/// - no sign-out is undone (a session signed out is never stored again);
/// - no session is lost while its refresh token is valid (only a sign-in, a sign-out or the app's own write replaces
///   or removes a stored session whose refresh token the server still honours).
///
/// Each world is explored twice over: with user IDs in every session, and with none (opaque tokens, a server that
/// names no user), where only the session's identity tells two sessions apart.
@Suite(.logLeakCheck()) struct CrossProcessExplorationTests {
    /// Depth 5 without user IDs (where only the identity tells sessions apart), 4 with them: both planted bugs show
    /// by depth 4 (a sign-out and a sign-in in one client, then the other's refresh reads the store), and each level
    /// costs about eight times the one before (depth 5 is about 4 s of CPU in a debug build, depth 6 about 40 s).
    /// The floors are the figures of the first run: a key that merges worlds it should not explores fewer.
    @Test(arguments: [true, false])
    func twoClientsOverOneStoreKeepTheInvariants(withUserIDs: Bool) async {
        let started = ContinuousClock.now
        let depth = withUserIDs ? 4 : 5
        let report = await onOwnThread { CrossExplorer(depth: depth, userIDs: withUserIDs, mutation: nil).run() }
        print(
            "cross-process exploration (user IDs: \(withUserIDs)): depth \(report.depthReached), \(report.worlds) "
                + "distinct worlds, \(report.transitions) transitions, \(report.violations.count) violations, "
                + "\(ContinuousClock.now - started)")
        #expect(report.depthReached == depth)
        #expect(report.worlds >= (withUserIDs ? 642 : 4_703))
        #expect(report.violations.isEmpty, "\(report.violations.prefix(3))")
    }

    /// The sessions of the previous release, planted in the driver: no identity. With user IDs the exploration
    /// catches the generation reuse; without them (and generations that never repeat) the merge of two users'
    /// sessions.
    @Test(arguments: CrossExplorer.Mutation.allCases)
    func aPlantedCrossProcessBugIsCaught(_ mutation: CrossExplorer.Mutation) async {
        let report = await onOwnThread {
            CrossExplorer(depth: 4, userIDs: mutation.userIDs, mutation: mutation, stopsAt: mutation.caughtAs).run()
        }
        print(
            "planted bug \(mutation): \(report.violations.count) violations in \(report.worlds) distinct worlds, "
                + "\(report.transitions) transitions; first: " + (report.violations.first ?? "none"))
        #expect(report.violations.contains { $0.hasPrefix(mutation.caughtAs) })
    }
}

/// Runs `work` on a thread of its own (the exploration computes for a while without a suspension point).
private func onOwnThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: work()) }
        thread.stackSize = 16 << 20
        thread.start()
    }
}

/// Breadth first over distinct worlds, as `Explorer` does for one client.
struct CrossExplorer {
    /// A bug of the previous release, planted in the driver.
    enum Mutation: String, CaseIterable, CustomStringConvertible, Sendable {
        /// Sessions without identity, and a sign-in over nothing stored starts again at generation 1.
        case generationReuse
        /// Sessions without identity and without user IDs, generations that never repeat: a pair stored by another
        /// process is taken as the held session rotated.
        case mergeWithoutUserIDs

        var description: String { rawValue }
        var userIDs: Bool { self == .generationReuse }
        var caughtAs: String {
            switch self {
            case .generationReuse: "a refresh token of a session the store no longer held"
            case .mergeWithoutUserIDs: "a token of one user was"
            }
        }
    }

    struct Report {
        var worlds = 0
        var transitions = 0
        var depthReached = 0
        var violations: [String] = []
        var stopped = false
    }

    let depth: Int
    let userIDs: Bool
    let mutation: Mutation?
    var stopsAt: String? = nil

    func run() -> Report {
        var report = Report()
        let writer = StateKeyWriter()
        var start = CrossWorld(userIDs: userIDs, mutation: mutation)
        start.start()
        var visited: Set<World.Key> = [start.key(using: writer)]
        var frontier = [start]
        for level in 1...depth where !frontier.isEmpty && !report.stopped {
            var next: [CrossWorld] = []
            for world in frontier {
                for event in CrossWorld.events where !report.stopped {
                    var successor = world
                    guard successor.step(event) else { continue }
                    report.transitions += 1
                    report.depthReached = level
                    if let violation = successor.violations.first {
                        if let stopsAt, violation.hasPrefix(stopsAt) { report.stopped = true }
                        if report.violations.count < 20 {
                            report.violations.append("\(violation) after \(successor.trace.joined(separator: ", "))")
                        }
                        continue
                    }
                    guard level < depth, visited.insert(successor.key(using: writer)).inserted else { continue }
                    next.append(successor)
                }
            }
            frontier = next
        }
        report.worlds = visited.count
        return report
    }
}

/// Two clients' machines, one store, a rotating server with reuse detection, and what the invariants need to know.
struct CrossWorld {
    enum Event: Equatable {
        case signIn(client: Int, user: Int)
        case signOut(client: Int)
        case caller(client: Int)
        case readLands(client: Int), readFails(client: Int)
        case serverAnswers(client: Int), serverFails(client: Int)
        case writeLands(client: Int), writeFails(client: Int)
        case persistRetry(client: Int)
        /// The app writes a pair of `user` through its own persistence (a new session nobody signed in with here).
        case appWrites(user: Int)
    }

    static let events: [Event] =
        [0, 1].flatMap { client in
            [
                .signIn(client: client, user: 0), .signIn(client: client, user: 1), .signOut(client: client),
                .caller(client: client), .readLands(client: client), .readFails(client: client),
                .serverAnswers(client: client), .serverFails(client: client), .writeLands(client: client),
                .writeFails(client: client), .persistRetry(client: client),
            ] as [Event]
        } + [.appWrites(user: 1)]

    enum Waiting {
        case readStore
        case present(String)
        case persist(StoredSession, WriteCondition)
    }

    /// One client: its machine and the refresh it runs (at most one; the store's lock orders refreshes).
    struct Client {
        var machine = SessionMachine(configuration: CrossWorld.configuration, requiresRefreshToken: true)
        var flight: RefreshFlight?
        var epoch: UInt64 = 0
        /// The session (by its sign-in number) the refresh was started for.
        var flightSession: Int?
        /// Whether the refresh's callers have been answered (a flight is answered once).
        var answered = false
        /// What the refresh's last read of the store found: the session stored (`nil` inside: none), if it read.
        var lastRead: Int??
        var waiting: Waiting?
    }

    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let configuration = TokenRefreshClient.Configuration(
        maximumRefreshes: 1_000, backoff: .init(retries: 0), persistRetryInterval: .zero)
    static let users = ["alice", "bob"]

    let userIDs: Bool
    let mutation: CrossExplorer.Mutation?
    var clients = [Client(), Client()]
    var store: StoredSession?
    /// By minted number: the session each token belongs to; by session number: its user.
    var tokenSession: [Int] = [0]
    var sessionUser: [Int] = [0]
    /// The server: each session's live refresh token (a family), the rotated-away ones, the revoked families.
    var live: [Int: String] = [:]
    var consumed = Set<String>()
    /// Rotated-away refresh tokens whose successor's write failed (see `writeFails`).
    var lostRotations = Set<String>()
    var revoked = Set<Int>()
    /// Sessions a sign-out ended.
    var signedOut = Set<Int>()
    var minted = 0
    var highestGeneration: UInt64 = 0
    var seconds = 3500.0
    var violations: [String] = []
    var trace: [String] = []

    init(userIDs: Bool, mutation: CrossExplorer.Mutation?) {
        self.userIDs = userIDs
        self.mutation = mutation
    }

    var now: Date { Self.start.addingTimeInterval(seconds) }
    var elapsed: Duration { .seconds(seconds) }

    /// The app signs the first user in; the other client restores that session.
    mutating func start() {
        signIn(client: 0, user: 0)
        _ = clients[1].machine.storeRead(atLoad: store.map(TokenStoreRead.found) ?? .absent, now: now)
        _ = clients[0].machine.storeRead(atLoad: store.map(TokenStoreRead.found) ?? .absent, now: now)
    }

    /// Mints a pair of session `session`, received an hour ago (due for a refresh, still valid).
    mutating func mint(session: Int) -> AuthToken {
        minted += 1
        tokenSession.append(session)
        return AuthToken(
            accessToken: "explore-access-\(minted)", refreshToken: "explore-refresh-\(minted)",
            receivedAt: now.addingTimeInterval(-3500), lifetime: 3600)
    }

    func session(of token: String?) -> Int? {
        guard let token, let number = Int(token.split(separator: "-").last ?? "") else { return nil }
        return tokenSession.indices.contains(number) ? tokenSession[number] : nil
    }

    func user(_ session: Int?) -> Int? { session.map { sessionUser[$0] } }

    /// A new session of `user`, with a live family at the server.
    mutating func newSession(user: Int) -> (number: Int, token: AuthToken) {
        sessionUser.append(user)
        let number = sessionUser.count - 1
        let token = mint(session: number)
        live[number] = token.refreshToken
        return (number, token)
    }

    var identityless: Bool { mutation != nil }

    // MARK: - Events

    mutating func step(_ event: Event) -> Bool {
        let before = store
        guard apply(event) else { return false }
        trace.append("\(event)")
        check(storeBefore: before, event: event)
        return true
    }

    mutating func apply(_ event: Event) -> Bool {
        seconds += 1
        switch event {
        case .signIn(let client, let user):
            guard !writing(client) else { return false }
            signIn(client: client, user: user)
        case .signOut(let client):
            guard !writing(client), clients[client].machine.session != nil else { return false }
            if let held = session(of: clients[client].machine.session?.token.accessToken) { signedOut.insert(held) }
            let signOut = clients[client].machine.signingOut()
            if case .failFlight(let flight, let failure) = signOut.callers {
                resolve(client, flight, .failure(failure))
            }
            store = nil
            let epoch = clients[client].machine.epoch
            _ = clients[client].machine.signOutRemovalFinished(nil, epoch: epoch, elapsed: elapsed)
        case .caller(let client):
            guard clients[client].flight == nil, !clients.contains(where: { $0.waiting != nil }) else { return false }
            return request(client)
        case .readLands(let client), .readFails(let client):
            guard case .readStore = clients[client].waiting else { return false }
            let read: TokenStoreRead =
                if case .readFails = event { .unavailable(.unavailable) } else {
                    store.map(TokenStoreRead.found) ?? .absent
                }
            if case .readLands = event { clients[client].lastRead = .some(session(of: store?.token.accessToken)) }
            run(client, flightEvent(client, .storeRead(read)))
        case .serverAnswers(let client):
            guard case .present(let sent) = clients[client].waiting else { return false }
            serverAnswers(client, sent)
        case .serverFails(let client):
            guard case .present = clients[client].waiting else { return false }
            callFailed(client, .transient)
        case .writeLands(let client), .writeFails(let client):
            guard case .persist(let stored, let condition) = clients[client].waiting else { return false }
            var failure: PersistenceError? = nil
            if case .writeFails = event {
                failure = .writeFailed
                // The documented loss no store prevents: the stored refresh token was rotated away and its successor
                // is in this client's memory only; the other client, re-reading the store, may present it once.
                for refresh in consumed where session(of: refresh) == session(of: stored.token.accessToken) {
                    lostRotations.insert(refresh)
                }
            } else if condition.allows(stored: store) {
                place(stored)
            } else {
                failure = .conflict
            }
            run(client, flightEvent(client, .writeFinished(failure)))
        case .persistRetry(let client):
            return persistRetry(client)
        case .appWrites(let user):
            // The app's own persistence numbers a change it did not make as a new generation and a new session.
            let (number, token) = newSession(user: user)
            store = StoredSession(
                token: token, userID: userIDs ? Self.users[user] : nil, generation: (store?.generation ?? 0) + 1,
                sessionID: identityless ? nil : "app-\(number)")
            highestGeneration = max(highestGeneration, store!.generation)
        }
        return true
    }

    func writing(_ client: Int) -> Bool {
        if case .persist = clients[client].waiting { return true }
        return false
    }

    mutating func place(_ stored: StoredSession) {
        store = stored
        highestGeneration = max(highestGeneration, stored.generation)
    }

    /// A sign-in, saved at once (the store's lock may be held by the other client: the save placed above what is
    /// stored, as `saveAboveStored` does).
    mutating func signIn(client: Int, user: Int) {
        let (number, token) = newSession(user: user)
        var machine = clients[client].machine
        let signIn = machine.signingIn(
            token, userID: userIDs ? Self.users[user] : nil, stateBefore: machine.authState, profile: nil,
            sessionID: identityless ? nil : "session-\(number)")
        clients[client].machine = machine
        resolve(client, signIn.flight, .failure(.sessionChanged))
        guard case .saveAboveStored(var stored) = clients[client].machine.signInWriteTurn(signIn).store else { return }
        var generation = stored.generation
        if let current = store { generation = max(generation, current.generation + 1) }
        if mutation == .mergeWithoutUserIDs { generation = max(generation, highestGeneration + 1) }
        stored = StoredSession(
            token: stored.token, userID: stored.userID, generation: generation, sessionID: stored.sessionID)
        place(stored)
        _ = clients[client].machine.signInWriteFinished(.success(generation), signIn, elapsed: elapsed)
    }

    mutating func request(_ client: Int) -> Bool {
        guard clients[client].machine.session != nil else { return false }
        switch clients[client].machine.decide(.validToken, now: now, elapsed: elapsed) {
        case .run(let flight, let epoch, _):
            clients[client].flight = flight
            clients[client].answered = false
            clients[client].lastRead = .none
            clients[client].epoch = epoch
            clients[client].flightSession = session(of: clients[client].machine.session?.token.accessToken)
            run(client, flightEvent(client, .lockTaken))
            return true
        case .token, .fail, .join, .refreshStatelessly, .endSessionThenFail:
            return false
        case .readStore, .retryWrite:
            return false  // callerArrived's steps around decide: decide never answers them
        }
    }

    mutating func serverAnswers(_ client: Int, _ sent: String) {
        let family = session(of: sent) ?? -1
        guard !revoked.contains(family), live[family] == sent else {
            if consumed.contains(sent) { revoked.insert(family) }  // reuse: the whole family is revoked
            callFailed(client, .refreshTokenRejected)
            return
        }
        consumed.insert(sent)
        let token = mint(session: family)
        live[family] = token.refreshToken
        let response = TokenResponse(
            accessToken: token.accessToken, refreshToken: token.refreshToken, expiresIn: 3600,
            userID: userIDs ? Self.users[sessionUser[family]] : nil)
        run(client, flightEvent(client, .answered(response), at: now.addingTimeInterval(-3500)))
    }

    mutating func callFailed(_ client: Int, _ failure: TokenRefreshError) {
        let action = flightEvent(client, .callFailed(failure))
        if case .sleep = action.work { return violations.append("a retry was planned with no retries configured") }
        run(client, action)
    }

    mutating func persistRetry(_ client: Int) -> Bool {
        guard clients[client].waiting == nil, !clients.contains(where: { $0.waiting != nil }) else { return false }
        var machine = clients[client].machine
        guard let write = machine.writeRetryStarting(elapsed: elapsed) else { return false }
        let epoch = write.epoch
        let landed: Bool
        switch machine.writeRetryTurn(write).store {
        case .save(let stored, let condition):
            landed = condition.allows(stored: store)
            if landed { place(stored) }
        case .remove(let condition):
            landed = condition.allows(stored: store)
            if landed { store = nil }
        default:
            clients[client].machine = machine
            return true
        }
        switch machine.writeRetryEnded(write, landed ? .success(()) : .failure(.conflict)).store {
        case .readAfterConflict:
            let read = machine.conflictRead(
                store.map(TokenStoreRead.found) ?? .absent, epoch: epoch, now: now, elapsed: elapsed)
            switch (read.work, read.callers) {
            case (_, .failTakenFlight(let flight, let failure)):
                clients[client].machine = machine
                resolve(client, flight, .failure(failure))
            case (.endSession(let reason, let error), _):
                clients[client].machine = machine
                endSession(client, reason: reason, error: error)
            default:
                clients[client].machine = machine
            }
        default:
            clients[client].machine = machine
        }
        return true
    }

    // MARK: - Carrying out the machine's actions

    /// The actor's `flightEvent`: hands `event` of the client's refresh to its machine, at wall time `now` unless
    /// `at` says otherwise.
    mutating func flightEvent(_ client: Int, _ event: FlightMachine.Event, at time: Date? = nil) -> FlightMachine.Action
    {
        clients[client].machine.flightEvent(
            event, epoch: clients[client].epoch, now: time ?? now, elapsed: elapsed, random: { 0.5 })
    }

    mutating func run(_ client: Int, _ first: FlightMachine.Action) {
        var action = first
        while true {
            switch action.work {
            case .readStore:
                clients[client].waiting = .readStore
                return
            case .call(let sent, _):
                guard let sent else { return endRefresh(client, .failure(.signedOut)) }
                if (consumed.contains(sent) && !lostRotations.contains(sent))
                    || revoked.contains(session(of: sent) ?? -1)
                {
                    violations.append("a refresh token was presented after it was rotated away or revoked")
                }
                if case .some(let found) = clients[client].lastRead, found != session(of: sent) {
                    violations.append("a refresh token of a session the store no longer held was presented")
                }
                if let flightUser = user(clients[client].flightSession), user(session(of: sent)) != flightUser {
                    violations.append("a token of one user was presented for another")
                }
                clients[client].waiting = .present(sent)
                return
            case .blocked(let error):
                action = flightEvent(client, .gaveUp(error))
                continue
            case .sleep:
                return violations.append("a retry was planned before any attempt")
            case .persist(let stored, let condition):
                clients[client].waiting = .persist(stored, condition)
                return
            case .endSession(let reason, let error):
                endSession(client, reason: reason, error: error)
            case .endSessionIfHeld(let reason, let error):
                carryOut(client, clients[client].machine.endingSessionIfHeld(reason: reason, error: error))
            case .none:
                break
            }
            switch action.callers {
            case .adopted(let stored): return endRefresh(client, .success(stored.token))
            case .token(let token): return endRefresh(client, .success(token))
            case .fail(let error): return endRefresh(client, .failure(error))
            case .failTakenFlight(let taken, let failure):
                resolve(client, taken, .failure(failure))
                return endRefresh(client, .failure(failure))
            case nil: return violations.append("an action with neither work nor an answer")
            }
        }
    }

    mutating func endRefresh(_ client: Int, _ result: Result<AuthToken, TokenRefreshError>) {
        clients[client].waiting = nil
        if let flight = clients[client].flight {
            _ = clients[client].machine.flightFinished(flight)
            resolve(client, flight, result)
        }
        clients[client].flight = nil
        clients[client].flightSession = nil
    }

    mutating func resolve(_ client: Int, _ flight: RefreshFlight?, _ result: Result<AuthToken, TokenRefreshError>) {
        guard let flight, flight === clients[client].flight, !clients[client].answered else { return }
        clients[client].answered = true
        if case .success(let token) = result, let asked = user(clients[client].flightSession),
            user(session(of: token.accessToken)) != asked
        {
            violations.append("a token of one user was attached for another")
        }
    }

    mutating func endSession(_ client: Int, reason: AuthEvent.SignOutReason, error: TokenRefreshError?) {
        carryOut(client, clients[client].machine.endingSession(reason: reason, error: error))
    }

    mutating func carryOut(_ client: Int, _ ending: SessionMachine.Action) {
        if case .failFlight(let flight, let failure) = ending.callers { resolve(client, flight, .failure(failure)) }
        guard case .removeEnded(let removal) = ending.store else { return }
        let landed = removal.condition.allows(stored: store)
        if landed { store = nil }
        clients[client].machine.removalEnded(landed ? nil : .conflict, removal, overtaken: false, elapsed: elapsed)
    }

    // MARK: - Invariants

    mutating func check(storeBefore before: StoredSession?, event: Event) {
        let after = session(of: store?.token.accessToken)
        if let after, signedOut.contains(after) { violations.append("a sign-out was undone") }
        if let stored = store, let named = stored.userID, let owner = user(after), named != Self.users[owner] {
            violations.append("a token of one user was written for another")
        }
        switch event {
        case .signIn, .signOut, .appWrites: return
        default: break
        }
        guard let before, let held = session(of: before.token.accessToken), after != held,
            before.token.refreshToken == live[held], !revoked.contains(held)
        else { return }
        violations.append("a session was lost while its refresh token was valid")
    }

    // MARK: - The key

    func key(using writer: StateKeyWriter) -> World.Key {
        writer.begin(minted: minted)
        writer.write(self)
        return World.Key(bytes: writer.bytes)
    }
}
