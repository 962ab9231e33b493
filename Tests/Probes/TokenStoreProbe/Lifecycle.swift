// The `lifecycle` mode: one app process of the hostile-lifecycle column's multi-process rows, on a FileTokenStore it
// shares with three others (or a PostgreSQL table, as a replica: see `lifecycleStore`), with injected clocks.
//
//   TokenStoreProbe lifecycle <directory> <account> <true-time> <skew>
//
// <true-time> is the real time (the token server's) at launch, in seconds since 1970; <skew> how far the device's
// clock is off it, in seconds. Nothing waits for real time: the client's clock is a ManualClock, and the true time
// moves only when the test says so. Commands come on standard input, one a line, `<id> <verb> [argument]`; each is
// answered by one line `<id> <answer>`, in the order they finish (commands run concurrently):
//   seed <refresh token> stores the session every run starts from (due in an hour); answers `ok` or `failed`
//   signin <refresh token> as `seed`, but by a sign-in of this process's client, whose token answer taught it the
//                       server's time (as a real sign-in's `Date` header does); answers `ok` or `failed`
//   stored              answers `refresh <the stored refresh token>`, `absent` or `unavailable`
//   restore             restoreSession(); answers `state <signedIn|signedOut|other>`
//   token               validToken(), the client's clock driven (10 ms steps) while it sleeps (backoff);
//                       answers `ok <seconds the token has left by the true time> <expired-before 0|1> <seconds of
//                       true time since launch>` or `failed`
//   tokens <n>          <n> concurrent validToken() calls; answers `ok <n> failed <n>`
//   stale               a 401 for the token restored first: refreshToken(afterRejectionOf:), then
//                       sessionRejected(afterRefreshOf:endSession: true); answers `kept` or `lost`, with `failed`
//                       when the refresh threw
//   advance <s>         the true time and the client's clock move by <s> seconds (a process that runs)
//   suspend <s>         the true time moves by <s> seconds, the client's clock does not (a suspended process)
//   net <up|down|outage[,<s>]|hold>   the token server's network: up; down (a connection error at once); outage (the
//                       token endpoint answers 500, for <s> seconds of true time when given); hold (up, but the next
//                       token answer waits for `release`)
//   release             lets the held answer go
//   signout             signOut() while the client's clock is driven; answers `signedout <ms of real time> <state>`
//   pending             sendPendingSignOuts(); answers `pending <n left>`
// Unasked lines: `presented <refresh token>` (a refresh the server made), `refused` (a token request answered 500),
// `unreachable` (a request while the network is down), `revoked <token>`, `held` (a token answer waits for `release`), `contended` (the store found another process's
// lock). The token server is stateless: it answers a refresh token `<r>` with `<r>-next` and an access token whose
// expiry is its `exp` claim (one hour after the true time; with a skew, `expires_in` is left out, so the device must
// learn the server's time from the `Date` header); the test finds reuse in the `presented` lines of all processes.
import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import TokenKitTesting
import TokenRefresh

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if PostgresStore
    import PostgresNIO
    import TokenKitPostgres
#endif

/// The store the processes share: the FileTokenStore in `root`, or, when TOKENKIT_PROBE_POSTGRES_URL names a database
/// (and the probe is built with the PostgresStore trait), a PostgresTokenStore on the table
/// TOKENKIT_PROBE_POSTGRES_TABLE, with a connection pool of its own, as a replica of a backend has.
/// TOKENKIT_PROBE_LOCK_TIMEOUT (whole seconds) sets the store's lock timeout: 0 makes any wait for another process's
/// lock outlast it.
func lifecycleStore(root: URL) -> any TokenStore {
    let environment = ProcessInfo.processInfo.environment
    let lockTimeout = environment["TOKENKIT_PROBE_LOCK_TIMEOUT"].flatMap(Int64.init).map { Duration.seconds($0) }
    if let url = environment["TOKENKIT_PROBE_POSTGRES_URL"], !url.isEmpty {
        #if PostgresStore
            guard let configuration = PostgresTokenStore.loopbackClientConfiguration(url: url) else {
                fail("TOKENKIT_PROBE_POSTGRES_URL is not a loopback PostgreSQL URL")
            }
            let client = PostgresClient(configuration: configuration)
            Task { await client.run() }
            var storeConfiguration = PostgresTokenStore.Configuration(
                tableName: environment["TOKENKIT_PROBE_POSTGRES_TABLE"] ?? "tokenkit_lifecycle")
            if let lockTimeout { storeConfiguration.lockTimeout = lockTimeout }
            storeConfiguration.testHooks.lockAttempt = { outcome in
                switch outcome {
                case .busy, .leaseHeld: say("contended")
                default: break
                }
            }
            return PostgresTokenStore(client: client, configuration: storeConfiguration)
        #else
            fail("built without the PostgresStore trait")
        #endif
    }
    var configuration = FileTokenStore.Configuration()
    if let lockTimeout { configuration.lockTimeout = lockTimeout }
    configuration.lockContended = { say("contended") }
    return FileTokenStore(directory: root, configuration: configuration)
}

/// The world a lifecycle probe lives in: the true time, the device's skew, the client's manual clock, the network.
final class ProbeWorld: Sendable {
    enum Network: String { case up, down, outage, hold }
    let truth: LockedValue<TimeInterval>
    let skew: TimeInterval
    let clock = ManualClock()
    let network = LockedValue(Network.up)
    /// The true time until which an outage lasts.
    let outageUntil = LockedValue(TimeInterval.infinity)
    /// The true time at launch.
    let launch: TimeInterval
    let held = LockedValue<CheckedContinuation<Void, Never>?>(nil)

    init(truth: TimeInterval, skew: TimeInterval) {
        self.truth = LockedValue(truth)
        self.launch = truth
        self.skew = skew
    }

    var trueNow: Date { Date(timeIntervalSince1970: truth.withLock { $0 }) }
    var deviceNow: Date { trueNow.addingTimeInterval(skew) }

    /// Moves the true time (and the client's clock when `running`).
    func move(by seconds: Double, running: Bool) {
        truth.withLock { $0 += seconds }
        if running { clock.advance(by: .milliseconds(Int64(seconds * 1000))) }
    }

    /// Runs `body`, moving the true time and the client's clock by 10 ms whenever something sleeps on the clock.
    func driving<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T {
        let result = LockedValue<T?>(nil)
        let task = Task {
            let value = await body()
            result.withLock { $0 = value }
        }
        var moved = 0.0
        while result.withLock({ $0 == nil }) && moved < 3600 {
            if clock.sleeperCount > 0 {
                move(by: 0.01, running: true)
                moved += 0.01
            }
            // Paces the manual clock (10 ms of it per real millisecond at most), so that work running meanwhile (an
            // answer on its way) is not overtaken by a timeout.
            try? await Task.sleep(for: .milliseconds(1))
        }
        await task.value
        return result.withLock { $0 }!
    }
}

/// The probe's token server: stateless, answering refresh tokens and revocations as described above.
struct ProbeTokenServer: HTTPTransport {
    let world: ProbeWorld

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let mode = world.network.withLock { $0 }
        if mode == .down {
            say("unreachable")
            throw URLError(.notConnectedToInternet)
        }
        let form = Self.form(body)
        var headers = HTTPFields()
        headers[.date] = HTTPDate.format(world.trueNow)
        if request.path?.hasSuffix("/revoke") == true {
            say("revoked \(form["token"] ?? "")")
            return (HTTPResponse(status: .ok, headerFields: headers), Data())
        }
        if mode == .outage && world.truth.withLock({ $0 }) < world.outageUntil.withLock({ $0 }) {
            say("refused")
            return (HTTPResponse(status: .internalServerError, headerFields: headers), Data())
        }
        guard let presented = form["refresh_token"] else {
            return (HTTPResponse(status: .badRequest, headerFields: headers), Data(#"{"error":"invalid_grant"}"#.utf8))
        }
        say("presented \(presented)")
        // With a skewed device clock the answer leaves out `expires_in`: the expiry is known only from `exp`.
        let lifetime = world.skew == 0 ? #","expires_in":3600"# : ""
        let access = Self.accessToken(expiring: world.trueNow.addingTimeInterval(3600))
        let answer = Data(
            #"{"access_token":"\#(access)","token_type":"Bearer","refresh_token":"\#(presented)-next"\#(lifetime)}"#
                .utf8)
        if mode == .hold {
            world.network.withLock { $0 = .up }
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                world.held.withLock { $0 = continuation }
                say("held")
            }
            headers[.date] = HTTPDate.format(world.trueNow)
        }
        headers[.contentType] = "application/json"
        return (HTTPResponse(status: .ok, headerFields: headers), answer)
    }

    /// A JWT-shaped access token whose only expiry is `exp`.
    static func accessToken(expiring expiry: Date) -> String {
        func base64URL(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let serial = UInt64.random(in: 0...UInt64.max)
        return base64URL(#"{"alg":"HS256","typ":"JWT"}"#) + "."
            + base64URL(#"{"sub":"user-1","exp":\#(Int(expiry.timeIntervalSince1970)),"jti":"\#(serial)"}"#) + ".c2ln"
    }

    static func form(_ body: Data?) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body ?? Data(), as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map {
                String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
            }
            if parts.count == 2 { fields[parts[0]] = parts[1] }
        }
        return fields
    }
}

/// The `lifecycle` mode (see the top of this file).
func runLifecycle(directory: String, account: String, truth: TimeInterval, skew: TimeInterval) async {
    let world = ProbeWorld(truth: truth, skew: skew)
    let root = URL(fileURLWithPath: directory)
    let store = lifecycleStore(root: root)
    let serverClock = ServerClock(deviceNow: { world.deviceNow })
    let endpoint = TokenEndpoint(
        url: URL(string: "https://auth.example.com/oauth/token")!, client: OAuthClient(id: "app"),
        transport: ServerClockTransport(ProbeTokenServer(world: world), clock: serverClock),
        now: serverClock.wallClock)
    let configuration = TokenRefreshClient.Configuration(
        account: account, refreshTimeout: nil,
        revocation: .rfc7009(url: URL(string: "https://auth.example.com/oauth/revoke")!, using: endpoint),
        // Processes on one disk share a queue file; replicas share no disk and keep the default (the store's own).
        pendingSignOuts: store is FileTokenStore
            ? PendingSignOuts(
                store: FileSignOutQueueStore(directory: root.appendingPathComponent("sign-outs", isDirectory: true)))
            : PendingSignOuts(),
        serverClock: serverClock)
    let client = TokenRefreshClient(
        strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store, configuration: configuration,
        clock: world.clock, now: serverClock.wallClock, random: { 0.5 })
    let first = LockedValue<String?>(nil)

    let stateName: @Sendable (AuthState) -> String = { state in
        if case .signedIn = state { return "signedIn" }
        if state == .signedOut { return "signedOut" }
        return "other"
    }

    let run: @Sendable (String, String?) async -> String = { verb, argument in
        switch verb {
        case "seed":
            let token = AuthToken(
                accessToken: "hostile-access-0", refreshToken: argument, receivedAt: world.trueNow, lifetime: 3600)
            let session = StoredSession(token: token, userID: "user-1", generation: 1)
            return (try? await store.save(session, account: account, condition: .always)) != nil ? "ok" : "failed"
        case "signin":
            serverClock.record(serverTime: world.trueNow, deviceTime: world.deviceNow)
            let token = AuthToken(
                accessToken: "hostile-access-0", refreshToken: argument, receivedAt: world.trueNow, lifetime: 3600)
            return (try? await client.signIn(with: token, userID: "user-1")) != nil ? "ok" : "failed"
        case "stored":
            switch await store.load(account: account) {
            case .found(let session): return "refresh \(session.token.refreshToken ?? "none")"
            case .absent: return "absent"
            case .unavailable: return "unavailable"
            }
        case "restore":
            let state = await client.restoreSession()
            if let token = client.currentToken { first.withLock { $0 = $0 ?? token.accessToken } }
            return "state \(stateName(state))"
        case "token":
            let expiredBefore: Bool
            if case .expired = client.currentState { expiredBefore = true } else { expiredBefore = false }
            let token = await world.driving { try? await client.validToken() }
            guard let token else { return "failed" }
            if first.withLock({ $0 == nil }) { first.withLock { $0 = token.accessToken } }
            let left = (token.expiresAt ?? .distantFuture).timeIntervalSince(world.trueNow)
            let elapsed = world.truth.withLock { $0 } - world.launch
            return "ok \(Int(left.rounded(.down))) \(expiredBefore ? 1 : 0) \(Int(elapsed.rounded(.down)))"
        case "tokens":
            let count = Int(argument ?? "") ?? 1
            let failures = await world.driving {
                await withTaskGroup(of: Bool.self) { group in
                    for _ in 0..<count { group.addTask { (try? await client.validToken()) != nil } }
                    var failures = 0
                    for await ok in group where !ok { failures += 1 }
                    return failures
                }
            }
            return "ok \(count - failures) failed \(failures)"
        case "stale":
            guard let old = first.withLock({ $0 }) else { return "lost failed" }
            let refreshed = (try? await client.refreshToken(afterRejectionOf: old)) != nil
            await client.sessionRejected(afterRefreshOf: old, endSession: true)
            return (client.currentState.hasSession ? "kept" : "lost") + (refreshed ? "" : " failed")
        case "advance", "suspend":
            world.move(by: Double(argument ?? "") ?? 0, running: verb == "advance")
            return "ok"
        case "net":
            let words = (argument ?? "").split(separator: ",").map(String.init)
            guard let mode = words.first.flatMap(ProbeWorld.Network.init(rawValue:)) else { return "bad" }
            let lasting = words.count > 1 ? TimeInterval(words[1]) ?? .infinity : .infinity
            world.outageUntil.withLock { $0 = world.truth.withLock { $0 } + lasting }
            world.network.withLock { $0 = mode }
            return "ok"
        case "release":
            world.held.withLock { $0.take() }?.resume()
            return "ok"
        case "signout":
            let started = ContinuousClock.now
            _ = await world.driving { (try? await client.signOut()) != nil }
            let took = started.duration(to: .now)
            let milliseconds = took.components.seconds * 1000 + took.components.attoseconds / 1_000_000_000_000_000
            return "signedout \(milliseconds) \(stateName(client.currentState))"
        case "pending":
            let left = await world.driving { await client.sendPendingSignOuts() }
            return "pending \(left)"
        default:
            return "unknown"
        }
    }

    await withTaskGroup(of: Void.self) { group in
        while let line = await readLineOnItsOwnThread() {
            let words = line.split(separator: " ").map(String.init)
            guard words.count >= 2 else { continue }
            if words[1] == "quit" { break }
            // Clock moves and network changes are applied before the next line is read, so they stay in order.
            if ["advance", "suspend", "net", "release"].contains(words[1]) {
                say("\(words[0]) \(await run(words[1], words.count > 2 ? words[2] : nil))")
                continue
            }
            group.addTask { say("\(words[0]) \(await run(words[1], words.count > 2 ? words[2] : nil))") }
        }
        await group.waitForAll()
    }
}

/// A line of standard input, read on a thread of its own so the client's tasks go on meanwhile.
func readLineOnItsOwnThread() async -> String? {
    await withCheckedContinuation { (done: CheckedContinuation<String?, Never>) in
        Thread { done.resume(returning: readLine()) }.start()
    }
}
