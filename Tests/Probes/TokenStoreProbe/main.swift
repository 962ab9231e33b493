// A child process for the Persistence tests (not a product): it drives a FileTokenStore so the tests can
// kill it mid-write or run several of it against one store.
//
//   TokenStoreProbe save-loop <directory> <account> <first-generation>
//       Saves generation g, g+1, ... forever, printing "saved <g>" after each save returns.
//   TokenStoreProbe increment <directory> <account> <count> <worker>
//       <count> times, under withExclusiveAccess: load, add one to this worker's counter, save. Prints "done".
//   TokenStoreProbe hang-refresh <directory> <account> 0
//       A TokenRefreshClient over the store whose token request never answers: it asks for a valid token,
//       prints "refreshing" once the request is under way (the store's lock is then held), and hangs.
//   TokenStoreProbe stale-refresh <directory> <account> 0
//       A TokenRefreshClient over the store restores the session and prints "restored"; after a line on standard
//       input, it refreshes as after a 401 of its token. Its token server answers any refresh token `<r>` with the
//       pair `<r>-next`, printing "presented <r>". Prints "answered" or "failed <error>", then "held <access token>".
//   TokenStoreProbe callers <directory> <account> <count> <gated|open>
//       A TokenRefreshClient over the store (a lock timeout of zero, so any wait for another process's lock outlasts
//       it; the wait for a running holder is the default) makes <count> concurrent validToken() calls. Its token
//       server answers any refresh token `<r>` with the pair `<r>-next`; when gated, it prints "refreshing" and
//       answers only after a line on standard input. Prints "contended" when the store finds another process
//       holding the lock, then "done ok <n> failed <n> refreshes <n>" and, for the first failure, "error <error>".
//   TokenStoreProbe lifecycle <directory> <account> <true-time> <skew>
//       An app process of the hostile-lifecycle tests, driven by commands on standard input (see Lifecycle.swift).
//   TokenStoreProbe messages
//       Prints the localizedDescription of a few TokenKit errors, one a line, in the language the environment
//       (LANGUAGE, LC_ALL, LC_MESSAGES, LANG) asks for: the localization tests run it under each locale.
//
// Sessions are derived from their generation (see `probeSession`), so a reader can check one is intact.
import AuthToken
import Foundation
import Persistence
import TokenRefresh

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("TokenStoreProbe: " + message + "\n").utf8))
    exit(2)
}

/// The session for generation `g`: every field derived from `g`, with a length that varies.
func probeSession(generation: UInt64, scope: String? = nil) -> StoredSession {
    let padding = String(repeating: "x", count: 64 + Int(generation % 512))
    let token = AuthToken(
        accessToken: "access-\(generation)-\(padding)", refreshToken: "refresh-\(generation)", scope: scope,
        receivedAt: Date(timeIntervalSince1970: Double(generation)), lifetime: 3600)
    return StoredSession(token: token, userID: "user-\(generation)", generation: generation)
}

func runProbe(_ arguments: [String]) async {
    guard arguments.count >= 5 else {
        fail("usage: save-loop|increment|hang-refresh <directory> <account> <number> [worker]")
    }
    // A generous lock timeout: the increment test counts lost updates, not waits on a loaded machine.
    let store = FileTokenStore(
        directory: URL(fileURLWithPath: arguments[2]), configuration: .init(lockTimeout: .seconds(120)))
    let account = arguments[3]
    guard let number = UInt64(arguments[4]) else { fail("not a number") }

    switch arguments[1] {
    case "save-loop":
        var generation = number
        while true {
            do {
                try await store.save(probeSession(generation: generation), account: account, condition: .always)
            } catch {
                fail("save failed: \(error)")
            }
            say("saved \(generation)")
            generation += 1
        }
    case "increment":
        guard arguments.count >= 6 else { fail("increment needs a worker name") }
        let worker = arguments[5]
        for _ in 0..<number {
            do {
                try await store.withExclusiveAccess(account: account) {
                    var counters: [String: Int] = [:]
                    var generation: UInt64 = 0
                    switch await store.load(account: account) {
                    case .absent: break
                    case .found(let session):
                        generation = session.generation
                        for pair in (session.token.scope ?? "").split(separator: ",") {
                            let parts = pair.split(separator: ":")
                            if parts.count == 2, let count = Int(parts[1]) { counters[String(parts[0])] = count }
                        }
                    case .unavailable(let error): throw error
                    }
                    counters[worker, default: 0] += 1
                    let scope = counters.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(
                        separator: ",")
                    // Unconditional on purpose: only the lock stands between this write and a lost update.
                    try await store.save(
                        probeSession(generation: generation + 1, scope: scope), account: account, condition: .always)
                }
            } catch {
                fail("increment failed: \(error)")
            }
        }
        say("done")
    case "hang-refresh":
        let client = TokenRefreshClient(
            strategy: ClosureRefreshStrategy(requiresRefreshToken: true) { _ in
                say("refreshing")
                while true { try await Task.sleep(for: .seconds(3600)) }
            },
            store: store, configuration: .init(account: account, refreshTimeout: nil))
        _ = try? await client.validToken()
        fail("the hung refresh ended")
    case "stale-refresh":
        let client = TokenRefreshClient(
            strategy: ClosureRefreshStrategy(requiresRefreshToken: true) { refreshToken in
                let presented = refreshToken ?? ""
                say("presented \(presented)")
                return TokenResponse(
                    accessToken: "\(presented)-next-access", refreshToken: "\(presented)-next", expiresIn: 3600)
            },
            store: store, configuration: .init(account: account))
        _ = await client.restoreSession()
        guard let held = client.currentToken else { fail("nothing restored") }
        say("restored")
        _ = readLine()
        do {
            _ = try await client.refreshToken(afterRejectionOf: held.accessToken)
            say("answered")
        } catch {
            say("failed \(error)")
        }
        say("held \(client.currentToken?.accessToken ?? "nothing")")
    case "callers":
        guard arguments.count >= 6 else { fail("callers needs gated or open") }
        await runCallers(directory: arguments[2], account: account, count: Int(number), gated: arguments[5] == "gated")
    default:
        fail("unknown mode \(arguments[1])")
    }
}

/// The `callers` mode: `count` concurrent callers of one client, whose refresh may wait for a line on standard input.
func runCallers(directory: String, account: String, count: Int, gated: Bool) async {
    var configuration = FileTokenStore.Configuration(lockTimeout: .zero)
    configuration.lockContended = { say("contended") }
    let store = FileTokenStore(directory: URL(fileURLWithPath: directory), configuration: configuration)
    let refreshes = LockedValue(0)
    let client = TokenRefreshClient(
        strategy: ClosureRefreshStrategy(requiresRefreshToken: true) { refreshToken in
            refreshes.withLock { $0 += 1 }
            let presented = refreshToken ?? ""
            if gated {
                say("refreshing")
                // Blocks a thread of its own until the test opens the gate.
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    Thread {
                        _ = readLine()
                        done.resume()
                    }.start()
                }
            }
            return TokenResponse(
                accessToken: "\(presented)-next-access", refreshToken: "\(presented)-next", expiresIn: 3600)
        },
        store: store, configuration: .init(account: account))
    let errors = await withTaskGroup(of: String?.self) { group in
        for _ in 0..<count {
            group.addTask {
                do {
                    _ = try await client.validToken()
                    return nil
                } catch {
                    return "\(error)"
                }
            }
        }
        var errors: [String] = []
        for await error in group { if let error { errors.append(error) } }
        return errors
    }
    say("done ok \(count - errors.count) failed \(errors.count) refreshes \(refreshes.withLock { $0 })")
    if let first = errors.first { say("error \(first)") }
}

if CommandLine.arguments.count == 2 && CommandLine.arguments[1] == "messages" {
    let errors: [any Error] = [
        AuthTokenError.expired, PersistenceError.unavailable, TokenRefreshError.refreshTokenRejected,
    ]
    for error in errors { say(error.localizedDescription) }
    exit(0)
}
if CommandLine.arguments.count == 6 && CommandLine.arguments[1] == "lifecycle" {
    guard let truth = TimeInterval(CommandLine.arguments[4]), let skew = TimeInterval(CommandLine.arguments[5]) else {
        fail("lifecycle needs the true time and the skew in seconds")
    }
    await runLifecycle(directory: CommandLine.arguments[2], account: CommandLine.arguments[3], truth: truth, skew: skew)
    exit(0)
}
await runProbe(CommandLine.arguments)
