// A child process for the shared-session tests (not a product): one app or extension sharing a session through
// the Keychain simulator's file, a lock file and notifications in a shared directory (the App Group container's
// stand-in), against a token server on loopback.
//
//   KeychainSessionProbe <keychain-file> <container> <server-url> [sdk] <name>
//
// With `sdk`, the app is a Clerk-like SDK app instead: the SDK keeps its long-lived client credential (in
// <container>/sdk-client, its own Keychain item's stand-in) and caches a 60-s session token, which it fetches from
// the server when less than 10 s of it are left (Clerk's `getToken()` default) or when TokenKit forces it after a
// 401; TokenKit keeps only that token, in a FileTokenStore in <container>/sessions shared by the processes.
//
// Reads commands from stdin, one a line, and answers on stdout:
//   restore  -> "state <state>"         the launch: AppSessionLifecycle.restore()
//   use      -> "token <fingerprint>"   a request's validToken() (refreshes if due)
//   use <n>  -> "used <ok> <failed>"    n concurrent requests' validToken()
//   state    -> "state <state>"         the client's current state
//   show     -> "holding <fingerprint>" the token the client holds now
//   quit     -> exits
// Whenever it adopts a pair another process saved, it prints "adopted <fingerprint>"; whenever it asks for the
// store's lock, "lock-wait <clock>". The wall clock is the number of seconds in <container>/clock, which the test
// moves.
import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import PersistenceKeychain
import TokenKitAppLifecycle
import TokenKitKeychainTesting
import TokenRefresh

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let output = NSLock()
func say(_ line: String) {
    output.withLock { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
}

let arguments = CommandLine.arguments
let sdkMode = arguments.count == 6 && arguments[4] == "sdk"
guard arguments.count == 5 || sdkMode, let serverURL = URL(string: arguments[3]) else {
    FileHandle.standardError.write(Data("usage: KeychainSessionProbe <keychain> <container> <url> [sdk] <name>\n".utf8))
    exit(2)
}
let container = URL(fileURLWithPath: arguments[2], isDirectory: true)
let name = arguments[arguments.count - 1]
let clockFile = container.appendingPathComponent("clock")
let now: @Sendable () -> Date = {
    let text = (try? String(contentsOf: clockFile, encoding: .utf8)) ?? "0"
    return Date(timeIntervalSince1970: Double(text.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0)
}

let sharedGroup = "ABCDE12345.com.example.shared"
let keychain = KeychainSimulator(
    file: URL(fileURLWithPath: arguments[1]),
    configuration: .init(accessGroups: ["ABCDE12345.com.example.\(name)", sharedGroup]))
let notifier = FileSessionChangeNotifier(directory: container)
let store = NotifyingTokenStore(
    KeychainTokenStore(
        configuration: .init(service: "com.example.fitiq.tokens", accessGroup: sharedGroup, sharedContainer: container),
        keychain: keychain),
    notifier)
/// Says "lock-wait <clock>" each time the client asks for the store's lock, so a test can act while it waits.
///
/// The store gives up waiting for another process's lock after 5 s (`lockTimedOut`), a bound meant for a device,
/// not for three processes sharing two loaded cores with a whole test run: there a refresh under the lock can take
/// longer, and the waiters' `validToken()` would fail instead of adopting the pair. So a wait that times out is
/// taken again (saying "lock-timeout <clock>"), up to 200 s in all: a waiter that never ran its body waiting
/// longer, nothing else. The refresh client's own answer to a lock timeout is tested in its suite.
struct AnnouncingStore: TokenStore {
    let base: any TokenStore
    func load(account: String) async -> TokenStoreRead { await base.load(account: account) }
    func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await base.save(session, account: account, condition: condition)
    }
    func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await base.remove(account: account, condition: condition)
    }
    func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        say("lock-wait \(now().timeIntervalSince1970)")
        let deadline = ContinuousClock.now.advanced(by: .seconds(200))
        let ran = LockedFlag()
        while true {
            do {
                return try await base.withExclusiveAccess(account: account) {
                    ran.set()
                    return try await body()
                }
            } catch let error as PersistenceError
                where error == .lockTimedOut && !ran.isSet && ContinuousClock.now < deadline
            {
                say("lock-timeout \(now().timeIntervalSince1970)")
            }
        }
    }
}
/// Whether a body under the lock has started (a wait is taken again only when it has not).
final class LockedFlag: Sendable {
    private let lock = NSLock()
    nonisolated(unsafe) private var value = false  // protected by `lock`
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
/// Tags each request with the process, so a test that holds one at the server knows whose it is.
struct TaggingTransport: HTTPTransport {
    let base: any HTTPTransport
    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        var request = request
        request.headerFields[HTTPField.Name("X-Client-Tag")!] = "probe-\(ProcessInfo.processInfo.processIdentifier)"
        return try await base.send(request, body: body)
    }
}
let transport = TaggingTransport(base: URLSessionTransport())
let endpoint = JSONEndpointRefreshStrategy(
    baseURL: serverURL, apiKey: "probe-api-key-51c", transport: transport, now: now)

/// A Clerk-like SDK: a long-lived client credential the app never sees, and a cached short-lived session token.
actor SessionSDK {
    private var cached: (token: String, expires: Date)?

    /// `session.getToken(.init(skipCache:))`: the cached token unless it expires within 10 s.
    func getToken(skipCache: Bool) async throws -> String? {
        if !skipCache, let cached, cached.expires.timeIntervalSince(now()) > 10 { return cached.token }
        let credential = try? String(contentsOf: container.appendingPathComponent("sdk-client"), encoding: .utf8)
        guard let credential, !credential.isEmpty else { return nil }
        let response = try await endpoint.refresh(using: credential)
        let expires = response.expiresIn.map { now().addingTimeInterval($0) } ?? now()
        cached = (response.accessToken, expires)
        return response.accessToken
    }
}
let sdk = SessionSDK()
let announcing = AnnouncingStore(
    base: sdkMode ? FileTokenStore(directory: container.appendingPathComponent("sessions")) : store)
let client =
    sdkMode
    ? TokenRefreshClient(
        strategy: SDKTokenStrategy { try await sdk.getToken(skipCache: $0) }, store: announcing, now: now)
    : TokenRefreshClient(strategy: endpoint, store: announcing, now: now)
let lifecycle = AppSessionLifecycle(client: client, store: announcing, notifier: notifier)

let observer = Task { await lifecycle.observeChanges { say("adopted \($0)") } }
while let line = readLine() {
    switch line {
    case "restore":
        switch await lifecycle.restore() {
        case .unavailable: say("state unavailable")
        case .available(let state): say("state \(state)")
        }
    case "use":
        do {
            say("token \(try await client.validToken().fingerprint)")
        } catch {
            say("error \(error)")
        }
    case let command where command.hasPrefix("use "):
        let count = Int(command.dropFirst(4)) ?? 1
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<count { group.addTask { (try? await client.validToken()) != nil } }
            var results: [Bool] = []
            for await result in group { results.append(result) }
            return results
        }
        say("used \(results.filter { $0 }.count) \(results.filter { !$0 }.count)")
    case "state":
        say("state \(client.currentState)")
    case "show":
        say("holding \(client.currentToken?.fingerprint ?? "none")")
    case "quit":
        observer.cancel()
        exit(0)
    default:
        say("error unknown command")
    }
}
observer.cancel()
