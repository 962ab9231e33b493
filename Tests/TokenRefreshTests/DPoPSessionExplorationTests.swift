import Foundation
import HTTPTypes
import Testing
import TokenKitLogCheck
import TokenKitTestSupport

@testable import AuthToken
@testable import NetworkRetry
@testable import TokenRefresh

/// DPoP calls on top of the session, explored: each call sends its request, reads the API's answer (a
/// `use_dpop_nonce` challenge, a 401 for an expired token, both at once, or a 200) with the client's own classifier
/// and ``RequestRetryMachine``, and asks the session machine for a refresh the way `AuthenticatedClient` asks
/// `TokenRefreshClient` (`refreshToken(afterRejectionOf:)`, sharing the refresh in flight), while the session's own
/// events (time, other callers, the refresh's store and server answers, sign-out, another process) interleave. After
/// every event, the session's invariants hold and no call has asked for a refresh twice or sent its request three
/// times; run to its end, every call has finished.
@Suite(.logLeakCheck()) struct DPoPSessionExplorationTests {
    /// Every world reachable in eight events, two calls at most (about 25 s of CPU in a debug build). The floors are
    /// the figures of the first run: a key that merges worlds explores fewer.
    @Test func dpopCallsNeverRefreshTwiceOrSendThreeTimes() async {
        let report = await onThreadOfItsOwn { DPoPExplorer(depth: 8, mutation: nil).run() }
        print("DPoP calls on the session machine: \(report)")
        #expect(report.depthReached == 8)
        #expect(report.worlds >= 22_987)
        #expect(report.transitions >= 154_166)
        #expect(report.blind.isEmpty, "the key cannot see inside \(report.blind)")
        #expect(report.violations.isEmpty, "\(report.violations.prefix(3))")
        // The search reached the cases the rule is about: an answer with both challenges cured by one refresh and
        // one retry, a nonce retried without a refresh, a second answer that ends the call, and two calls sharing
        // one refresh.
        #expect(report.refreshesForBoth > 0)
        #expect(report.nonceRetries > 0)
        #expect(report.failuresAfterTwoSends > 0)
        #expect(report.sharedRefreshes > 0)
    }

    /// The same exploration with calls whose retry rules give the nonce and the refresh a retry each: caught.
    @Test func dpopExplorationCatchesSeparateNonceAndRefreshRetries() async {
        let report = await onThreadOfItsOwn {
            DPoPExplorer(depth: 5, mutation: .retriesTheNonceAndTheRefreshSeparately).run()
        }
        print("planted bug (separate nonce and refresh retries): \(report)")
        // A nonce retry, then a rejected token: a third send. A rejected token, then both challenges: a second refresh.
        #expect(report.violations.contains { $0.hasPrefix("a call sent its request three times") })
        #expect(report.violations.contains { $0.hasPrefix("a call asked for a refresh twice") })
        print(report.violations.first { $0.hasPrefix("a call asked for a refresh twice") } ?? "")
    }
}

/// Explores the worlds of ``DPoPWorld`` breadth first, each distinct world once, as ``Explorer`` does for ``World``:
/// every transition out of a distinct world is taken and checked, and every distinct world is run to its end and
/// checked.
struct DPoPExplorer {
    /// A bug planted in the calls' retry rules.
    enum Mutation {
        /// One retry for a nonce challenge and another for a rejected token, each on its own (a nonce retry, then a
        /// rejected token: a third send).
        case retriesTheNonceAndTheRefreshSeparately
    }

    struct Report: CustomStringConvertible {
        var worlds = 0
        var transitions = 0
        var depthReached = 0
        var violations: [String] = []
        var blind: Set<String> = []
        /// Answers with a nonce challenge and an expired token that led to one refresh and a retry.
        var refreshesForBoth = 0
        /// Nonce challenges retried without a refresh.
        var nonceRetries = 0
        /// Calls that failed on the answer to their second send.
        var failuresAfterTwoSends = 0
        /// Refreshes a call asked for that joined one already in flight.
        var sharedRefreshes = 0

        var description: String {
            "depth \(depthReached), \(worlds) distinct worlds expanded, \(transitions) transitions checked; "
                + "\(refreshesForBoth) refreshes for a nonce challenge with an expired token, \(nonceRetries) nonce "
                + "retries, \(failuresAfterTwoSends) failures after two sends, \(sharedRefreshes) shared refreshes; "
                + "\(violations.count) violations" + (violations.first.map { "; first: \($0)" } ?? "")
        }
    }

    let depth: Int
    let mutation: Mutation?

    func run() -> Report {
        var report = Report()
        let writer = StateKeyWriter()
        let start = DPoPWorld(mutation: mutation)
        var visited: Set<World.Key> = [start.key(using: writer)]
        visit(start, report: &report)
        var frontier = [start]
        for level in 1...depth where !frontier.isEmpty {
            var next: [DPoPWorld] = []
            for world in frontier {
                for event in DPoPWorld.events {
                    var successor = world
                    guard successor.step(event) else { continue }
                    report.transitions += 1
                    report.depthReached = level
                    count(event, from: world, to: successor, in: &report)
                    if let violation = successor.violations.first {
                        record(violation, in: successor, report: &report)
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
            frontier = next
        }
        report.worlds = visited.count
        report.blind = writer.blind
        return report
    }

    /// Counts the cases the exploration is meant to reach.
    private func count(
        _ event: DPoPWorld.Event, from world: DPoPWorld, to successor: DPoPWorld, in report: inout Report
    ) {
        guard case .answer(let index, let answer) = event else { return }
        let before = world.calls[index]
        let after = successor.calls[index]
        if answer == .nonceAndExpiredToken, after.refreshes == 1, before.refreshes == 0 { report.refreshesForBoth += 1 }
        if answer == .nonce, after.sends == before.sends + 1, after.refreshes == before.refreshes {
            report.nonceRetries += 1
        }
        if before.sends == 2, case .finished(let outcome) = after.phase, outcome != "delivered" {
            report.failuresAfterTwoSends += 1
        }
        if after.refreshes > before.refreshes, case .waitingForToken(let flight) = after.phase,
            flight < world.session.flights.count
        {
            report.sharedRefreshes += 1
        }
    }

    /// Runs `world` to its end and checks it.
    private func visit(_ world: DPoPWorld, report: inout Report) {
        var drained = world
        drained.drain()
        if let violation = drained.violations.first {
            record(violation + " (the world run to its end)", in: world, report: &report)
        }
    }

    private func record(_ violation: String, in world: DPoPWorld, report: inout Report) {
        guard report.violations.count < 50 else { return }
        report.violations.append("\(violation) after \(world.trace.joined(separator: ", "))")
    }
}

/// The session's ``World`` with DPoP calls on top, as one value.
struct DPoPWorld {
    enum Event: CustomStringConvertible {
        /// An event of the session.
        case session(World.Event)
        /// A new call: it asks the session for a token (`validToken()`) and sends its request.
        case call
        /// The API answers the latest send of call `index`.
        case answer(Int, Answer)

        var description: String {
            switch self {
            case .session(let event): "\(event)"
            case .call: "call"
            case .answer(let index, let answer): "\(answer) to call \(index)"
            }
        }
    }

    /// What the API may answer to a send.
    enum Answer: String, CaseIterable, CustomStringConvertible {
        case ok, nonce, expiredToken, nonceAndExpiredToken

        var description: String { rawValue }

        /// The answer as a DPoP resource server sends it, with a nonce the client has not seen.
        func response(nonce: String) -> HTTPResponse {
            var fields = HTTPFields()
            switch self {
            case .ok:
                return HTTPResponse(status: .ok)
            case .nonce, .nonceAndExpiredToken:
                fields[.wwwAuthenticate] = #"DPoP error="use_dpop_nonce", algs="ES256""#
                if self == .nonceAndExpiredToken {
                    fields.append(HTTPField(name: .wwwAuthenticate, value: #"DPoP error="invalid_token""#))
                }
                fields[.dpopNonce] = nonce
            case .expiredToken:
                fields[.wwwAuthenticate] = #"DPoP error="invalid_token", algs="ES256""#
            }
            return HTTPResponse(status: .unauthorized, headerFields: fields)
        }
    }

    /// One call of `AuthenticatedClient.executeWithAutoRetry`.
    struct Call {
        enum Phase {
            /// Waiting for the session's refresh (the index of its flight in the session's), to send once answered.
            case waitingForToken(flight: Int)
            /// Sent with this token: waiting for the API's answer.
            case sent(AuthToken)
            /// Delivered, or failed with this error.
            case finished(String)
        }

        var phase: Phase
        var rules: Rules
        var sends = 0
        var refreshes = 0
        /// The access token the API rejected when the call asked for a refresh: its retry must not carry it.
        var rejected: String?
    }

    /// A call's retry rules: the client's own, or the planted bug.
    struct Rules {
        var machine = RequestRetryMachine()
        var separate: SeparateNonceAndRefreshRetries?

        mutating func answered(_ rejection: RequestRetryMachine.Rejection) -> RequestRetryMachine.Action {
            if separate != nil { return separate!.answered(rejection) }
            return machine.answered(rejection)
        }
    }

    /// The session's events that meet the calls: other callers, time (the token expires by the clock), the refresh's
    /// store and server answers, sign-out, and another process rotating the stored pair.
    static let sessionEvents: [World.Event] = [
        .caller, .later, .signOut, .otherProcessRotates, .storeAnswers, .serverRotates, .serverRejects,
        .serverFailsTransiently, .writeLands, .writeFails,
    ]
    static let maximumCalls = 2
    static let events: [Event] =
        sessionEvents.map(Event.session) + [.call]
        + (0..<maximumCalls).flatMap { index in Answer.allCases.map { Event.answer(index, $0) } }

    let mutation: DPoPExplorer.Mutation?
    var session = World(mutation: nil)
    var calls: [Call] = []
    var violations: [String] = []
    /// The events of the first path that reached this world (not part of the key).
    var trace: [String] = []

    /// A world whose session holds a fresh token (an hour's lifetime, received a second ago).
    init(mutation: DPoPExplorer.Mutation?) {
        self.mutation = mutation
        session.seconds = 0
        session.start()
    }

    func key(using writer: StateKeyWriter) -> World.Key {
        writer.begin(minted: session.minted)
        writer.write(self)
        return World.Key(bytes: writer.bytes)
    }

    /// Takes `event` as the next event of the path, if it can happen now, and checks the world it leads to.
    mutating func step(_ event: Event) -> Bool {
        switch event {
        case .session(let sessionEvent):
            guard session.step(sessionEvent) else { return false }
            violations += session.violations
            session.violations = []
        case .call:
            guard calls.count < Self.maximumCalls else { return false }
            session.seconds += 1
            let rules = Rules(
                separate: mutation == .retriesTheNonceAndTheRefreshSeparately ? SeparateNonceAndRefreshRetries() : nil)
            calls.append(Call(phase: .finished("not started"), rules: rules))
            ask(.validToken, for: calls.count - 1)
        case .answer(let index, let answer):
            guard index < calls.count, case .sent(let token) = calls[index].phase else { return false }
            session.seconds += 1
            answered(index, answer, token: token)
        }
        trace.append("\(event)")
        resumeWaiters()
        check()
        return true
    }

    /// `executeWithAutoRetry` reads the answer to call `index`'s send with `token`.
    mutating func answered(_ index: Int, _ answer: Answer, token: AuthToken) {
        let response = answer.response(nonce: "nonce-\(trace.count)")
        let rejection: RequestRetryMachine.Rejection =
            response.status.code == 401
            ? AuthenticatedClient.dpopRejection(
                response, code: 401, token: token, learnedNonce: answer != .expiredToken,
                now: { [now = session.now] in now })
            : .none
        switch calls[index].rules.answered(rejection) {
        case .deliver:
            calls[index].phase = .finished("delivered")
        case .fail(let error):
            calls[index].phase = .finished("\(error)")
        case .retry(refreshingFirst: false):
            send(index, token)
        case .retry(refreshingFirst: true):
            calls[index].refreshes += 1
            calls[index].rejected = token.accessToken
            ask(.afterRejection(of: token.accessToken), for: index)
        }
    }

    /// The call asks the session for a token, as `TokenRefreshClient` answers `validToken()` and
    /// `refreshToken(afterRejectionOf:)`.
    mutating func ask(_ request: SessionMachine.Request, for index: Int) {
        let flights = session.flights.count
        switch session.request(request) {
        case .token(let token):
            send(index, token)
        case .join(let flight):
            let joined = session.flights.firstIndex { $0.flight === flight }
            calls[index].phase = joined.map { .waitingForToken(flight: $0) } ?? .finished("joined an unknown refresh")
        case .run:
            calls[index].phase =
                session.flights.count > flights
                ? .waitingForToken(flight: session.flights.count - 1) : .finished("started no refresh")
        case let other:
            calls[index].phase = .finished("\(other)")
        }
    }

    mutating func send(_ index: Int, _ token: AuthToken) {
        if let rejected = calls[index].rejected, token.accessToken == rejected {
            violations.append("a call sent the token the API rejected again after a refresh")
        }
        calls[index].sends += 1
        calls[index].phase = .sent(token)
    }

    /// Calls whose refresh was answered go on: they send, or fail with the refresh's error.
    mutating func resumeWaiters() {
        for index in calls.indices {
            guard case .waitingForToken(let flight) = calls[index].phase else { continue }
            let record = session.flights[flight]
            if let token = record.answered {
                send(index, token)
            } else if record.resolved || record.died {
                calls[index].phase = .finished(record.died ? "died with the process" : "the refresh failed")
            }
        }
    }

    mutating func check() {
        for call in calls {
            if call.refreshes > 1 { violations.append("a call asked for a refresh twice") }
            if call.sends > 2 { violations.append("a call sent its request three times") }
        }
    }

    /// Runs every refresh and every call to its end with the kindest answers, then checks that every call finished
    /// (none loops) and the session's end invariants.
    mutating func drain() {
        for _ in 0..<6 {
            session.drain()
            resumeWaiters()
            for index in calls.indices {
                if case .sent(let token) = calls[index].phase { answered(index, .ok, token: token) }
            }
            resumeWaiters()
            check()
        }
        session.checkEnd()
        violations += session.violations
        if calls.contains(where: { if case .finished = $0.phase { false } else { true } }) {
            violations.append("a call never finished")
        }
    }
}
