import AuthToken
import BenchmarkSupport
import Foundation
import Persistence
import TokenKitTesting
import TokenRefresh

// Many users' sessions in one process through TokenSessionRegistry. A release build, figures from
// this run only:
// 1. 100,000 accounts with expiries spread over an hour, on a manual clock, under the default bound of 10,000
//    clients (so most accounts are evicted and read back from the store between uses): the refresh count must
//    equal the expiry count, with no reuse detected by the server.
// 2. The memory an idle registered session costs (resident set growth per client), target 4 KB.
// 3. validToken() through the registry for a fresh token against the same client called directly, target 2x.

let tokenURL = URL(string: "https://auth.example.com/oauth/token")!

/// The resident set size of this process, in bytes (Linux `/proc/self/statm`); 0 where unavailable.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func registry(
    clock: ManualClock, server: SimulatedTokenServer, store: any TokenStore,
    configuration: TokenSessionRegistry.Configuration = .init()
) -> TokenSessionRegistry {
    let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "app"), transport: server, now: clock.wallClock)
    return TokenSessionRegistry(store: store, configuration: configuration, clock: clock, now: clock.wallClock) { _ in
        OAuthRefreshStrategy(endpoint: endpoint)
    }
}

func seed(
    _ accounts: [String], server: SimulatedTokenServer, store: any TokenStore, clock: ManualClock,
    age: (Int) -> TimeInterval
) async throws {
    for (index, account) in accounts.enumerated() {
        let token = await server.issueSession(
            userID: account, receivedAt: clock.date.addingTimeInterval(-age(index)), lifetime: 3600)
        try await store.save(
            StoredSession(token: token, userID: account, generation: 1), account: account, condition: .always)
    }
}

func scale() async throws -> Bool {
    let clock = ManualClock()
    let server = SimulatedTokenServer(
        configuration: .init(accessTokenLifetime: 1_000_000, detectsReuse: true), now: clock.wallClock)
    let store = InMemoryTokenStore()
    let count = 100_000
    let accounts = (0..<count).map { "account-\($0)" }
    // Received between 0 and 3600 s ago, valid for 3600 s: one expiry each within the next hour.
    try await seed(accounts, server: server, store: store, clock: clock) { Double($0) * 3600 / Double(count) }
    let sessions = registry(clock: clock, server: server, store: store)
    let start = ContinuousClock.now
    for _ in 0..<5 {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for chunk in stride(from: 0, to: count, by: 10_000) {
                group.addTask {
                    for account in accounts[chunk..<min(count, chunk + 10_000)] {
                        _ = try await sessions.validToken(for: account)
                    }
                }
            }
            try await group.waitForAll()
        }
        clock.advance(by: .seconds(900))
    }
    let elapsed = ContinuousClock.now - start
    let refreshes = await server.refreshCount
    let reuse = await server.reuseDetections
    return Harness.report(
        "100,000 accounts over 5 rounds of 15 minutes (bound 10,000 clients)",
        "\(refreshes) refreshes for \(count) expiries, \(reuse) reuse detections, \(sessions.evictionCount) "
            + "evictions, \(elapsed) in all",
        target: "refreshes == expiries, 0 reuse", passed: refreshes == count && reuse == 0)
}

/// The idle-session line; with `exiting`, the process exits right after it, with every client still alive.
func idleMemory(count: Int = 20_000, exiting: Bool = false) async throws -> Bool {
    let clock = ManualClock()
    let server = SimulatedTokenServer(configuration: .init(detectsReuse: true), now: clock.wallClock)
    let store = InMemoryTokenStore()
    let accounts = (0..<count).map { "idle-\($0)" }
    try await seed(accounts, server: server, store: store, clock: clock) { _ in 0 }
    let sessions = registry(
        clock: clock, server: server, store: store, configuration: .init(maximumClients: count * 2))
    let before = residentBytes()
    for account in accounts { _ = try await sessions.validToken(for: account) }
    let after = residentBytes()
    let perSession = Double(after - before) / Double(count)
    let passed = Harness.report(
        "memory of an idle registered session (\(count) clients, resident set growth)",
        String(format: "%.0f bytes per session", perSession), target: "<= 4096 bytes",
        passed: before > 0 && perSession <= 4096)
    if exiting { withExtendedLifetime(sessions) { exit(passed ? 0 : 1) } }
    return passed
}

func registryOverDirect() async throws -> Bool {
    let clock = ManualClock()
    let server = SimulatedTokenServer(configuration: .init(detectsReuse: true), now: clock.wallClock)
    let store = InMemoryTokenStore()
    try await seed(["direct-user"], server: server, store: store, clock: clock) { _ in 0 }
    let sessions = registry(clock: clock, server: server, store: store)
    _ = try await sessions.validToken(for: "direct-user")
    let client = sessions.client(for: "direct-user")
    var directs: [Double] = []
    var viaRegistry: [Double] = []
    for _ in 0..<7 {
        directs.append(
            try await Harness.nanosecondsPerOperation(samples: 5, iterations: 100_000) {
                blackHole(try await client.validToken())
            })
        viaRegistry.append(
            try await Harness.nanosecondsPerOperation(samples: 5, iterations: 100_000) {
                blackHole(try await sessions.validToken(for: "direct-user"))
            })
    }
    let ratio = Harness.median(zip(viaRegistry, directs).map { $0 / $1 })
    return Harness.report(
        "validToken() through the registry vs the client directly (fresh token)",
        "\(Harness.format(Harness.median(viaRegistry))) vs \(Harness.format(Harness.median(directs))) = "
            + String(format: "%.2fx", ratio), target: "<= 2x", passed: ratio <= 2)
}

@inline(never) func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

func run() async throws {
    print("RegistryBenchmarks (release build; figures measured in this run)")
    _ = try await registryOverDirect()
    _ = try await idleMemory()
    _ = try await scale()
}

let arguments = CommandLine.arguments
if arguments.count == 3, arguments[1] == "--idle", let count = Int(arguments[2]) {
    // The idle-memory line alone, then an exit with every client still alive: for `valgrind --tool=dhat`, whose
    // blocks alive at the exit are what the idle sessions hold. The main thread waits on a semaphore: valgrind 3.19
    // is killed when it parks in libdispatch's main queue, where an `await` here would leave it.
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        _ = try await idleMemory(count: count, exiting: true)
        done.signal()
    }
    done.wait()
} else {
    try await Task.detached { try await run() }.value
}
