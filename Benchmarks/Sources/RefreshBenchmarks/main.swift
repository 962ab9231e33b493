// Refresh benchmarks: ratios against baselines measured in the same run.
// Run: swift run -c release --package-path Benchmarks RefreshBenchmarks
import AuthToken
import BenchmarkSupport
import Foundation
import Synchronization
import TokenRefresh

/// Consumes a value so the optimizer cannot drop the read that produced it.
@inline(never) func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

/// The baseline for `validToken()`: an actor that returns a cached token.
actor CachedTokenActor {
    let token: AuthToken
    init(token: AuthToken) { self.token = token }
    func get() -> AuthToken { token }
}

/// A gate the refresh closure waits at until every waiter has joined.
actor Gate {
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var isOpen = false
    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }
    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters = []
    }
}

let fresh = AuthToken(accessToken: "fresh-access-token", refreshToken: "refresh", receivedAt: Date(), lifetime: 3600)
let expired = AuthToken(
    accessToken: "expired-access-token", refreshToken: "refresh", receivedAt: Date().addingTimeInterval(-7200),
    lifetime: 3600)

/// A client with an expired session whose refresh waits at `gate`.
func clientWaitingAtGate(_ gate: Gate) async -> TokenRefreshClient {
    let client = TokenRefreshClient(
        strategy: ClosureRefreshStrategy(requiresRefreshToken: true) { _ in
            await gate.wait()
            return TokenResponse(accessToken: "refreshed-access-token", refreshToken: "refresh-2", expiresIn: 3600)
        })
    try! await client.signIn(with: expired)
    return client
}

/// Nanoseconds for `count` callers to get a token through one shared refresh.
func waiters(_ count: Int, inTaskGroup: Bool) async -> Double {
    await Harness.nanosecondsPerRun(samples: 1) {
        let gate = Gate()
        let client = await clientWaitingAtGate(gate)
        if inTaskGroup {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<count { group.addTask { _ = try? await client.validToken() } }
                while client.refreshWaiterCount < count { await Task.yield() }
                await gate.open()
                await group.waitForAll()
            }
        } else {
            var tasks: [Task<Void, Never>] = []
            tasks.reserveCapacity(count)
            for _ in 0..<count { tasks.append(Task { _ = try? await client.validToken() }) }
            while client.refreshWaiterCount < count { await Task.yield() }
            await gate.open()
            for task in tasks { await task.value }
        }
    }
}

/// Nanoseconds for `count` callers that each make a bare actor hop: the cost of the tasks themselves.
func bareHops(_ count: Int, inTaskGroup: Bool) async -> Double {
    let cached = CachedTokenActor(token: fresh)
    return await Harness.nanosecondsPerRun(samples: 1) {
        if inTaskGroup {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<count { group.addTask { blackHole(await cached.get()) } }
                await group.waitForAll()
            }
        } else {
            var tasks: [Task<Void, Never>] = []
            tasks.reserveCapacity(count)
            for _ in 0..<count { tasks.append(Task { blackHole(await cached.get()) }) }
            for task in tasks { await task.value }
        }
    }
}

/// Continuations parked in a list and resumed in a loop: the least any "wait for one result" can cost.
final class ParkedWaiters: Sendable {
    private let parked = Mutex<[UnsafeContinuation<Void, Never>]>([])
    var count: Int { parked.withLock { $0.count } }
    func wait() async { await withUnsafeContinuation { continuation in parked.withLock { $0.append(continuation) } } }
    func resumeAll() {
        let all = parked.withLock { parked in
            defer { parked = [] }
            return parked
        }
        for continuation in all { continuation.resume() }
    }
}

/// Nanoseconds for `count` tasks that park on a bare continuation and are resumed together.
func bareContinuations(_ count: Int, inTaskGroup: Bool) async -> Double {
    await Harness.nanosecondsPerRun(samples: 1) {
        let waiters = ParkedWaiters()
        if inTaskGroup {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<count { group.addTask { await waiters.wait() } }
                while waiters.count < count { await Task.yield() }
                waiters.resumeAll()
                await group.waitForAll()
            }
        } else {
            var tasks: [Task<Void, Never>] = []
            tasks.reserveCapacity(count)
            for _ in 0..<count { tasks.append(Task { await waiters.wait() }) }
            while waiters.count < count { await Task.yield() }
            waiters.resumeAll()
            for task in tasks { await task.value }
        }
    }
}

func run() async throws {
    print("RefreshBenchmarks (release build, medians; ratios measured in this run)")

    // 1. validToken() for a fresh token vs a bare actor hop returning a cached value. The machine is shared,
    // so the two are measured in alternating rounds and the verdict uses the median of the per-round ratios.
    let cached = CachedTokenActor(token: fresh)
    let client = TokenRefreshClient(strategy: ClosureRefreshStrategy { _ in TokenResponse(accessToken: "unused") })
    // Signed in as "user-1", so its state is the value the Mutex baselines below hold: the copies compared are of
    // the same value.
    try! await client.signIn(with: fresh, userID: "user-1")
    let fixedNow = Date()
    let clockless = TokenRefreshClient(
        strategy: ClosureRefreshStrategy { _ in TokenResponse(accessToken: "unused") }, now: { fixedNow })
    try! await clockless.signIn(with: fresh)
    var hops: [Double] = []
    var valids: [Double] = []
    var clocklessValids: [Double] = []
    var dates: [Double] = []
    for _ in 0..<7 {
        hops.append(
            await Harness.nanosecondsPerOperation(samples: 5, iterations: 100_000) { blackHole(await cached.get()) })
        valids.append(
            try await Harness.nanosecondsPerOperation(samples: 5, iterations: 100_000) {
                blackHole(try await client.validToken())
            })
        clocklessValids.append(
            try await Harness.nanosecondsPerOperation(samples: 5, iterations: 100_000) {
                blackHole(try await clockless.validToken())
            })
        dates.append(
            Harness.nanosecondsPerOperation(samples: 5, iterations: 100_000) { blackHole(AuthToken.systemNow()) })
    }
    let hop = Harness.median(hops)
    let valid = Harness.median(valids)
    let ratio = Harness.median(zip(valids, hops).map { $0 / $1 })
    Harness.report(
        "validToken() fresh vs actor hop",
        "\(Harness.format(valid)) vs \(Harness.format(hop)) = " + String(format: "%.2fx", ratio),
        target: "<= 1.5x", passed: ratio <= 1.5)
    let clocklessRatio = Harness.median(zip(clocklessValids, hops).map { $0 / $1 })
    print(
        "      (diagnostic: one wall-clock read (Date()) costs \(Harness.format(Harness.median(dates))) here; "
            + "validToken() with an injected constant `now` costs \(Harness.format(Harness.median(clocklessValids))) = "
            + String(format: "%.2fx", clocklessRatio) + " of the hop)")

    // 2. The synchronous snapshot read vs a plain Mutex read of the same token, alternating rounds too.
    snapshotVersusMutex(client)

    // 2b. The session state: the synchronous read, and the first element of a new states() stream, each
    // against a Mutex read of an AuthState (target: within 2x). The first element is read with `await`: it is
    // timed in a loop inside one async call (an async call per turn, through the harness's closure, costs more than
    // the read), against the same Mutex read in the same kind of loop; the ratio against the synchronous harness's
    // Mutex read is printed beside it. A bare AsyncStream made, fed one value and read once is printed too: the
    // floor any stream-based first element pays.
    let stateMutex = Mutex<AuthState>(.signedIn(userID: "user-1"))
    var statePlains: [Double] = []
    var asyncStatePlains: [Double] = []
    var stateReads: [Double] = []
    var firstElements: [Double] = []
    var bareStreams: [Double] = []
    for _ in 0..<7 {
        statePlains.append(
            Harness.nanosecondsPerOperation(samples: 5, iterations: 500_000) { blackHole(stateMutex.withLock { $0 }) })
        stateReads.append(
            Harness.nanosecondsPerOperation(samples: 5, iterations: 500_000) { blackHole(client.currentState) })
        asyncStatePlains.append(
            await Harness.nanosecondsPerOperation(samples: 5, iterations: 1) { () async -> Void in
                for _ in 0..<100_000 { blackHole(stateMutex.withLock { $0 }) }
            } / 100_000)
        firstElements.append(
            await Harness.nanosecondsPerOperation(samples: 5, iterations: 1) {
                for _ in 0..<100_000 {
                    var iterator = client.states().makeAsyncIterator()
                    blackHole(await iterator.next())
                }
            } / 100_000)
        bareStreams.append(
            await Harness.nanosecondsPerOperation(samples: 5, iterations: 20_000) {
                let (stream, continuation) = AsyncStream.makeStream(of: AuthState.self)
                continuation.yield(.signedOut)
                var iterator = stream.makeAsyncIterator()
                blackHole(await iterator.next())
            })
    }
    let stateRatio = Harness.median(zip(stateReads, statePlains).map { $0 / $1 })
    Harness.report(
        "currentState read vs Mutex read",
        "\(Harness.format(Harness.median(stateReads))) vs \(Harness.format(Harness.median(statePlains))) = "
            + String(format: "%.2fx", stateRatio), target: "<= 1.5x", passed: stateRatio <= 1.5)
    let firstRatio = Harness.median(zip(firstElements, asyncStatePlains).map { $0 / $1 })
    Harness.report(
        "first element of states() vs Mutex read, both in a loop in an async function",
        "\(Harness.format(Harness.median(firstElements))) vs \(Harness.format(Harness.median(asyncStatePlains))) = "
            + String(format: "%.2fx", firstRatio), target: "<= 2x", passed: firstRatio <= 2)
    let overSyncMutex = Harness.median(zip(firstElements, statePlains).map { $0 / $1 })
    print(
        "      (diagnostic: against the Mutex read of the synchronous harness (\(Harness.format(Harness.median(statePlains)))), "
            + "the first element is " + String(format: "%.2fx", overSyncMutex) + ")")
    let overBare = Harness.median(zip(firstElements, bareStreams).map { $0 / $1 })
    print(
        "      (diagnostic: a bare AsyncStream made, fed and read once costs "
            + "\(Harness.format(Harness.median(bareStreams))); states()'s first element is "
            + String(format: "%.2fx", overBare) + " of that)")

    // 3. Many waiters on one refresh: added cost per waiter, and growth from 10k to 20k. Each round measures
    // every variant once, in turn; verdicts use medians over rounds of the per-round differences and ratios.
    for inTaskGroup in [false, true] {
        let label = inTaskGroup ? "task-group children" : "unstructured tasks"
        var bases: [Double] = []
        var parkeds: [Double] = []
        var tens: [Double] = []
        var twenties: [Double] = []
        var parkedTwenties: [Double] = []
        for _ in 0..<11 {
            bases.append(await bareHops(10_000, inTaskGroup: inTaskGroup))
            parkeds.append(await bareContinuations(10_000, inTaskGroup: inTaskGroup))
            tens.append(await waiters(10_000, inTaskGroup: inTaskGroup))
            twenties.append(await waiters(20_000, inTaskGroup: inTaskGroup))
            parkedTwenties.append(await bareContinuations(20_000, inTaskGroup: inTaskGroup))
        }
        let wait10 = Harness.median(tens)
        let added = Harness.median(zip(tens, bases).map { ($0 - $1) / 10_000 })
        let overParked = Harness.median(zip(tens, parkeds).map { ($0 - $1) / 10_000 })
        let growth = Harness.median(zip(twenties, tens).map { $0 / $1 })
        Harness.report(
            "10,000 waiters on one refresh (\(label))",
            "\(Harness.format(wait10)) total, \(Harness.format(wait10 / 10_000))/waiter, "
                + "\(Harness.format(added)) added over a task making one bare actor hop "
                + "(\(Harness.format(Harness.median(bases) / 10_000)))",
            target: "<= 2 us added per waiter", passed: added <= 2_000)
        print(
            "      (diagnostic: a task parked on a bare continuation and resumed costs "
                + "\(Harness.format(Harness.median(parkeds) / 10_000)); the refresh waiter costs "
                + "\(Harness.format(overParked)) more than that)")
        // The growth of bare continuations from 10k to 20k tasks (no TokenKit code) is the baseline that scales
        // the same way: it was measured between 2.16x and 2.48x on this machine, so an absolute bound is noise.
        let parkedGrowth = Harness.median(zip(parkedTwenties, parkeds).map { $0 / $1 })
        let growthOverBare = Harness.median(
            zip(zip(twenties, tens), zip(parkedTwenties, parkeds)).map { ($0.0 / $0.1) / ($1.0 / $1.1) })
        Harness.report(
            "20,000 vs 10,000 waiters, growth over bare continuations' growth (\(label))",
            String(format: "%.2fx (TokenKit) vs %.2fx (bare) = %.2fx", growth, parkedGrowth, growthOverBare),
            target: "<= 1.1x", passed: growthOverBare <= 1.1)
    }

    // 4. A cold start: 101 callers of an expired session share one refresh. The added cost of each caller past the
    // first, over the same callers making a bare actor hop: the client, its sign-in and the refresh are paid once
    // and cancel out of (101 callers - 1 caller). Rounds alternate; the verdict is the median.
    var coldAdded: [Double] = []
    for _ in 0..<201 {
        let many = await waiters(101, inTaskGroup: true)
        let one = await waiters(1, inTaskGroup: true)
        let bareMany = await bareHops(101, inTaskGroup: true)
        let bareOne = await bareHops(1, inTaskGroup: true)
        coldAdded.append(((many - one) - (bareMany - bareOne)) / 100)
    }
    let coldStart = Harness.median(coldAdded)
    Harness.report(
        "101 callers at cold start, one refresh (task-group children)",
        "\(Harness.format(coldStart)) added per caller over a task making one bare actor hop",
        target: "<= 2 us added per waiter", passed: coldStart <= 2_000)
}

/// Section 2: the synchronous `currentToken` snapshot read vs a plain `Mutex` read of the same token, in
/// alternating rounds (also run alone by `--only snapshot`).
func snapshotVersusMutex(_ client: TokenRefreshClient) {
    let mutex = Mutex<AuthToken?>(fresh)
    var plains: [Double] = []
    var snapshots: [Double] = []
    for _ in 0..<7 {
        plains.append(
            Harness.nanosecondsPerOperation(samples: 5, iterations: 500_000) { blackHole(mutex.withLock { $0 }) })
        snapshots.append(
            Harness.nanosecondsPerOperation(samples: 5, iterations: 500_000) { blackHole(client.currentToken) })
    }
    let snapshotRatio = Harness.median(zip(snapshots, plains).map { $0 / $1 })
    Harness.report(
        "currentToken snapshot vs Mutex read",
        "\(Harness.format(Harness.median(snapshots))) vs \(Harness.format(Harness.median(plains))) = "
            + String(format: "%.2fx", snapshotRatio), target: "<= 2x", passed: snapshotRatio <= 2)
}

/// `--loop <kind> <count>`: one operation, `count` times, for an instruction count under callgrind
/// (`Benchmarks/callgrind refresh`) or `perf record -g`. Kinds: `valid` (`validToken()` for a fresh token) and `hop`
/// (its baseline, an actor hop returning a cached token); `current` (`currentState`) and `mutex` (a `Mutex` read of
/// an `AuthState`); `states` (the first element of a new `states()` sequence); `none` (the empty loop).
func loop(_ kind: String, _ count: Int) async {
    let client = TokenRefreshClient(strategy: ClosureRefreshStrategy { _ in TokenResponse(accessToken: "unused") })
    try! await client.signIn(with: fresh, userID: "user-1")  // the state the Mutex baseline holds (see `run`)
    let cached = CachedTokenActor(token: fresh)
    let stateMutex = Mutex<AuthState>(.signedIn(userID: "user-1"))
    // The kind is read once, before the loop: a `switch` on the string in the loop compared strings on every turn,
    // more of them the later its case came, which the empty loop's figure could not cancel evenly.
    let kind = LoopKind(rawValue: kind) ?? .none
    for _ in 0..<count {
        switch kind {
        case .states:
            var iterator = client.states().makeAsyncIterator()
            blackHole(await iterator.next())
        case .valid: blackHole(try! await client.validToken())
        case .hop: blackHole(await cached.get())
        case .current: blackHole(client.currentState)
        case .mutex: blackHole(stateMutex.withLock { $0 })
        case .none: blackHole(count)
        }
    }
}

/// The operations `loop` can repeat.
enum LoopKind: String {
    case states, valid, hop, current, mutex, none
}

/// Runs `loop` on the global executor while the main thread waits on a semaphore and exits once it is done. Under
/// valgrind 3.19 the process is killed when the main thread parks in libdispatch's main queue (`_dispatch_sigsuspend`),
/// where an `await` here would leave it; a semaphore wait does not park it there.
func loopBlocking(_ kind: String, _ count: Int) {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        await loop(kind, count)
        done.signal()
    }
    done.wait()
    exit(0)
}

let arguments = CommandLine.arguments
if arguments.count == 3, arguments[1] == "--only", arguments[2] == "snapshot" {
    await Task.detached {
        let client = TokenRefreshClient(strategy: ClosureRefreshStrategy { _ in TokenResponse(accessToken: "unused") })
        try! await client.signIn(with: fresh)
        snapshotVersusMutex(client)
    }.value
} else if arguments.count == 4, arguments[1] == "--loop", let count = Int(arguments[3]) {
    loopBlocking(arguments[2], count)
} else {
    try await Task.detached { try await run() }.value
}
