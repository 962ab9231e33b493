// A child process for the shared-session tests (not a product): one app or extension sharing a session through
// the Keychain simulator's file, a lock file and notifications in a shared directory (the App Group container's
// stand-in), against a token server on loopback.
//
//   KeychainSessionProbe <keychain-file> <container> <server-url> <name>
//
// Reads commands from stdin, one a line, and answers on stdout:
//   restore  -> "state <state>"         the launch: AppSessionLifecycle.restore()
//   use      -> "token <fingerprint>"   a request's validToken() (refreshes if due)
//   show     -> "holding <fingerprint>" the token the client holds now
//   quit     -> exits
// Whenever it adopts a pair another process saved, it prints "adopted <fingerprint>"; whenever it asks for the
// store's lock, "lock-wait <clock>". The wall clock is the number of seconds in <container>/clock, which the test
// moves.
import AuthToken
import Foundation
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
guard arguments.count == 5, let serverURL = URL(string: arguments[3]) else {
    FileHandle.standardError.write(Data("usage: KeychainSessionProbe <keychain> <container> <url> <name>\n".utf8))
    exit(2)
}
let container = URL(fileURLWithPath: arguments[2], isDirectory: true)
let name = arguments[4]
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
        return try await base.withExclusiveAccess(account: account, body)
    }
}
let announcing = AnnouncingStore(base: store)
let strategy = JSONEndpointRefreshStrategy(
    baseURL: serverURL, apiKey: "probe-api-key-51c", transport: URLSessionTransport(), now: now)
let client = TokenRefreshClient(strategy: strategy, store: announcing, now: now)
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
