import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitKeychainTesting
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

/// The fault scorecard's "60-s sessionless SDK token" column: a Clerk-like SDK app (its SDK keeps a long-lived
/// client credential and caches a 60-s session token; TokenKit keeps only that token), in one process and in four
/// processes on one `FileTokenStore`, against `SimulatedTokenServer.Configuration.sessionlessSDK` over loopback, under
/// the scorecard's faults. Each run signs in once, then at each of 2 expiries every process makes 20 concurrent
/// requests; the fault strikes at the first, while the server holds the token request at a gate. The wall clock is
/// a file the processes read, moved by the test: nothing waits for a token to expire.
///
/// A cell reads: token requests per expiry · reuse detections · sessions lost · failed requests. With
/// `TOKENKIT_SCORECARD_SDK_OUTPUT` set, the column is also written there as Markdown (`.ci/scorecard --full`).
@Suite(.serialized, .logLeakCheck()) struct SessionlessSDKScorecardTests {
    enum Fault: CaseIterable {
        case none
        case killBeforeAnswer
        case killAfterIssue
        case unavailableRetryAfter

        var title: String {
            switch self {
            case .none: "none (baseline)"
            case .killBeforeAnswer: "holder killed before the server answered"
            case .killAfterIssue: "holder killed after the server rotated"
            case .unavailableRetryAfter: "503 with Retry-After"
            }
        }
    }

    enum Mode: CaseIterable {
        case oneProcess
        case fileProcesses

        var title: String { self == .oneProcess ? "one process" : "4 processes, one FileTokenStore" }
        var processes: Int { self == .oneProcess ? 1 : 4 }
    }

    struct Result {
        var refreshes = 0
        var reuseDetections = 0
        var sessionsLost = 0
        var failedRequests = 0
        var notes: [String] = []

        var cell: String {
            let text =
                "\(String(format: "%.2f", Double(refreshes) / Double(SessionlessSDKScorecardTests.expiries))) · "
                + "\(reuseDetections) · \(sessionsLost) · \(failedRequests)"
            return sessionsLost > 0 ? "**\(text)**" : text
        }
    }

    static let expiries = 2
    static let requests = 20
    static let start = 1_800_000_000.0

    /// Holds the first token request that reaches it, before the server sees it or after the server answered,
    /// until the test lets it go on (or drops it: the process that sent it was killed).
    final class Hold: Sendable {
        let point: LoopbackHoldPoint
        private let entered = DispatchSemaphore(value: 0)
        private let released = DispatchSemaphore(value: 0)
        private let state = Locked<(armed: Bool, holder: String?, dropped: Bool)>((false, nil, false))

        init(_ point: LoopbackHoldPoint) { self.point = point }

        func arm() { state.withLock { $0.armed = true } }

        /// Called by the server for each request at `point`: blocks the first one after `arm()`. Returns whether
        /// the request is dropped.
        func pass(tag: String?) -> Bool {
            let held = state.withLock { state in
                guard state.armed else { return false }
                state.armed = false
                state.holder = tag
                return true
            }
            guard held else { return false }
            entered.signal()
            released.wait()
            return state.withLock { $0.dropped }
        }

        /// The tag of the held request, once one is held (`nil` after 30 s without one).
        func holder() async -> String? {
            await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    let entered = self.entered.wait(timeout: .now() + 30) == .success
                    continuation.resume(returning: entered ? self.state.withLock { $0.holder } : nil)
                }
            }
        }

        func release(dropping: Bool = false) {
            state.withLock { $0.dropped = dropping }
            released.signal()
        }
    }

    /// Runs one cell with real processes.
    static func measure(_ fault: Fault, _ mode: Mode) async throws -> Result {
        let hold: Hold? =
            switch fault {
            case .killBeforeAnswer: Hold(.beforeServer)
            case .killAfterIssue: Hold(.afterAnswer)
            case .none, .unavailableRetryAfter: nil
            }
        // A safety net, not a wait: if an expected line never comes, the processes are killed and the cell fails.
        let processes = try SharedSessionProcessTests.processes(watchdog: .seconds(90)) {
            hold?.release(dropping: true)
        }
        defer { processes.stop() }
        let container = processes.container
        let server = SimulatedTokenServer(
            configuration: .sessionlessSDK(apiKey: "probe-api-key-51c"), now: processes.now)
        let loopback = try serveOverLoopback(server) { point, tag in
            guard let hold, hold.point == point else { return false }
            return hold.pass(tag: tag)
        }
        defer {
            hold?.release()
            loopback.stop()
        }
        // The user signed in earlier: the SDK keeps its client credential; TokenKit's store is empty.
        let credential = TestSecrets.shared.register(await server.issueSession(userID: "user_2ada"))
        try (credential.refreshToken ?? "").write(
            to: container.appendingPathComponent("sdk-client"), atomically: true, encoding: .utf8)

        let arguments = ["http://127.0.0.1:\(loopback.port)", "sdk"]
        var launched = 0
        func launch() throws -> SharedSessionProcess {
            launched += 1
            return try processes.launch("app\(launched)", arguments: arguments)
        }
        var workers = try (0..<mode.processes).map { _ in try launch() }

        var result = Result()
        // Each process makes its first request (the SDK's first token, or the one another process stored).
        for worker in workers {
            worker.send("use 1")
            if await worker.next("used") != "1 0" { result.notes.append("\(worker.name) could not start") }
        }
        let startRefreshes = await server.refreshCount
        for expiry in 1...expiries {
            try processes.setClock(start + 60 * Double(expiry) + 1)
            if expiry == 1, fault == .unavailableRetryAfter { await server.enqueue(.serviceUnavailable(retryAfter: 1)) }
            if expiry == 1 { hold?.arm() }
            workers.forEach { $0.send("use \(requests)") }
            if expiry == 1, let hold {
                guard let tag = await hold.holder(),
                    let holder = workers.first(where: { tag == "probe-\($0.processIdentifier)" })
                else {
                    result.notes.append("no token request reached the gate")
                    hold.release()
                    break
                }
                holder.kill()
                hold.release(dropping: fault == .killBeforeAnswer)
                workers.removeAll { $0 === holder }
                if mode == .oneProcess {
                    // The app is launched again and makes this expiry's requests.
                    let relaunched = try launch()
                    relaunched.send("use \(requests)")
                    workers.append(relaunched)
                }
            }
            for worker in workers {
                let answer = await worker.next("used")
                let failed = answer?.split(separator: " ").last.flatMap { Int($0) } ?? requests
                result.failedRequests += failed
            }
        }
        result.refreshes = await server.refreshCount - startRefreshes
        result.reuseDetections = await server.reuseDetections
        for worker in workers {
            worker.send("state")
            let state = await worker.next("state") ?? "none"
            if !state.hasPrefix("signedIn") {
                result.sessionsLost = 1
                result.notes.append("\(worker.name) ended \(state)")
            }
        }
        let stored = await FileTokenStore(directory: container.appendingPathComponent("sessions"))
            .load(account: "default").session
        if stored == nil {
            result.sessionsLost = 1
            result.notes.append("the store holds no session")
        }
        return result
    }

    @Test(.timeLimit(.minutes(5)))
    func aSessionlessSDKAppLosesNoSessionAndFailsNoRequestUnderTheScorecardsFaults() async throws {
        var lines = [
            "| Fault | Mode | 60-s sessionless SDK token |", "|---|---|---|",
        ]
        for fault in Fault.allCases {
            for mode in Mode.allCases {
                let result = try await Self.measure(fault, mode)
                let notes = result.notes.isEmpty ? "" : " (\(result.notes.joined(separator: "; ")))"
                lines.append("| \(fault.title) | \(mode.title) | \(result.cell)\(notes) |")
                #expect(result.notes.isEmpty, "\(fault.title), \(mode.title): \(result.notes)")
                #expect(result.reuseDetections == 0, "\(fault.title), \(mode.title)")
                #expect(result.sessionsLost == 0, "\(fault.title), \(mode.title)")
                #expect(result.failedRequests == 0, "\(fault.title), \(mode.title)")
                // One token request per expiry for all the processes (they share it through the store), plus the
                // one a holder killed after the server answered took with it.
                #expect(
                    result.refreshes <= Self.expiries + (fault == .killAfterIssue ? 1 : 0),
                    "\(fault.title), \(mode.title): \(result.refreshes) token requests")
            }
        }
        let table = lines.joined(separator: "\n") + "\n"
        if let path = ProcessInfo.processInfo.environment["TOKENKIT_SCORECARD_SDK_OUTPUT"], !path.isEmpty {
            try table.write(toFile: path, atomically: true, encoding: .utf8)
        }
        print(table)
    }
}
