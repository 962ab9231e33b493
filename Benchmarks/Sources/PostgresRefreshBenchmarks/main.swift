import AuthToken
import BenchmarkSupport
import Foundation
import Persistence
import PostgresNIO
import TokenKitPostgres
import TokenKitTesting
import TokenRefresh

// Target: a PostgreSQL-coordinated refresh adds at most 5 ms over a single-process refresh, PostgreSQL on
// loopback. Two clients in one run refresh against the same in-process token server (rotation and reuse detection
// on, no grace window): one over an `InMemoryTokenStore`, one over a `PostgresTokenStore` (advisory lock, the
// refresh lease taken in the session's row, re-read, fenced generation-conditional write that ends the lease, advisory
// unlock). The server's cost is the same for both, so the difference is the store's coordination, lease included.
// Forced refreshes in alternating batches; the verdict is the difference of the medians.
// Without TOKENKIT_POSTGRES_URL it says so and exits 0 (CI runs it through `.ci/postgres --run`).

let bound = 5.0  // milliseconds
let batch = 20
let rounds = 10

/// A client over `store` with a stored session from `server`, whose breaker allows a refresh loop.
func signedInClient(
    _ server: SimulatedTokenServer, store: any TokenStore, account: String
) async throws -> TokenRefreshClient {
    let endpoint = TokenEndpoint(
        url: URL(string: "https://127.0.0.1/oauth/token")!, client: OAuthClient(id: "app"), transport: server)
    let initial = await server.issueSession(userID: account)
    try await store.save(
        StoredSession(token: initial, userID: account, generation: 1), account: account, condition: .always)
    return TokenRefreshClient(
        strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store,
        configuration: .init(account: account, maximumRefreshes: 1_000_000, breakerWindow: .seconds(1)))
}

/// Milliseconds of each of `count` forced refreshes in a row.
func timedRefreshes(_ client: TokenRefreshClient, count: Int) async throws -> [Double] {
    var times: [Double] = []
    for _ in 0..<count {
        let current = try await client.validToken()
        let start = DispatchTime.now().uptimeNanoseconds
        _ = try await client.refreshToken(afterRejectionOf: current.accessToken)
        times.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
    }
    return times
}

func runBenchmark(_ configuration: PostgresClient.Configuration) async throws -> Bool {
    let postgres = PostgresClient(configuration: configuration)
    let table = "tokenkit_bench_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    let server = SimulatedTokenServer(
        configuration: .init(rotatesRefreshTokens: true, detectsReuse: true, graceWindow: 0), now: { Date() })
    let (local, coordinated, leases) = try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { await postgres.run() }
        defer { group.cancelAll() }
        let localClient = try await signedInClient(server, store: InMemoryTokenStore(), account: "local")
        let coordinatedClient = try await signedInClient(
            server, store: PostgresTokenStore(client: postgres, configuration: .init(tableName: table)),
            account: "coordinated")
        // Warm up both paths (the pool's connections, the table, the first rounds) before measuring.
        _ = try await timedRefreshes(localClient, count: batch)
        _ = try await timedRefreshes(coordinatedClient, count: batch)
        var localTimes: [Double] = []
        var coordinatedTimes: [Double] = []
        for _ in 0..<rounds {
            localTimes += try await timedRefreshes(localClient, count: batch)
            coordinatedTimes += try await timedRefreshes(coordinatedClient, count: batch)
        }
        // Each lease taken raises the row's fencing number: it shows the lease path was measured.
        var leases: Int64 = 0
        let rows = try await postgres.query(
            "SELECT lease_fence FROM \(unescaped: table) WHERE account = 'coordinated' AND lease_owner IS NULL")
        for try await fence in rows.decode(Int64.self) { leases = fence }
        _ = try? await postgres.query("DROP TABLE IF EXISTS \(unescaped: table)")
        return (Harness.median(localTimes), Harness.median(coordinatedTimes), leases)
    }
    let refreshes = batch * (rounds + 1)
    let reuseDetections = await server.reuseDetections
    let added = coordinated - local
    print(
        String(
            format: "info  single-process refresh %.2f ms, PostgreSQL-coordinated %.2f ms (medians of %d each)",
            local, coordinated, rounds * batch))
    let leased = Harness.report(
        "every coordinated refresh took the lease in the row (and its save ended it)",
        "\(leases) leases for \(refreshes) refreshes", target: "\(refreshes)", passed: leases == Int64(refreshes))
    let clean = Harness.report(
        "the server saw no reuse of a refresh token", "\(reuseDetections) reuse detections",
        target: "0", passed: reuseDetections == 0)
    let fast = Harness.report(
        "PostgreSQL coordination (lock, lease, re-read, fenced write) per refresh",
        String(format: "adds %.2f ms", added),
        target: String(format: "<= %.0f ms added", bound), passed: added <= bound)
    return leased && clean && fast
}

guard let url = ProcessInfo.processInfo.environment["TOKENKIT_POSTGRES_URL"], !url.isEmpty else {
    print("PostgresRefreshBenchmarks skipped: set TOKENKIT_POSTGRES_URL=postgres://USER@HOST:PORT/DATABASE")
    exit(0)
}
guard let configuration = PostgresTokenStore.loopbackClientConfiguration(url: url) else {
    print(
        "PostgresRefreshBenchmarks: TOKENKIT_POSTGRES_URL must look like postgres://USER[:PASSWORD]@HOST:PORT/DATABASE")
    exit(2)
}
do {
    exit(try await runBenchmark(configuration) ? 0 : 1)
} catch {
    print("PostgresRefreshBenchmarks failed: \(error)")
    exit(2)
}
