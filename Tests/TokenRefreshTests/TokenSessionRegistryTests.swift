import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

@Suite(.logLeakCheck()) struct TokenSessionRegistryTests {
    /// A registry over one simulated server (reuse detection on) and one store, on a manual clock.
    struct RegistryRig {
        let clock = ManualClock()
        let server: SimulatedTokenServer
        let store: any TokenStore
        let registry: TokenSessionRegistry

        init(
            store: any TokenStore = InMemoryTokenStore(), refreshedLifetime: TimeInterval = 3600,
            configuration: TokenSessionRegistry.Configuration = .init()
        ) {
            let clock = clock
            let server = SimulatedTokenServer(
                configuration: .init(accessTokenLifetime: refreshedLifetime, detectsReuse: true), now: clock.wallClock)
            let endpoint = TokenEndpoint(
                url: tokenURL, client: OAuthClient(id: "app"), transport: server, now: clock.wallClock)
            self.server = server
            self.store = store
            self.registry = TokenSessionRegistry(
                store: store, configuration: configuration, clock: clock, now: clock.wallClock
            ) { _ in OAuthRefreshStrategy(endpoint: endpoint) }
        }

        /// Stores a session for `account` received `age` seconds ago and valid for `lifetime` seconds.
        func seed(_ account: String, age: TimeInterval = 7200, lifetime: TimeInterval = 3600) async throws {
            let token = await server.issueSession(
                userID: account, receivedAt: clock.date.addingTimeInterval(-age), lifetime: lifetime)
            try await store.save(
                StoredSession(token: token, userID: account, generation: 1), account: account, condition: .always)
        }
    }

    @Test func concurrentCallersForOneAccountShareOneRefresh() async throws {
        let rig = RegistryRig()
        try await rig.seed("alice")
        try await rig.seed("bob")
        let registry = rig.registry
        let tokens = try await withThrowingTaskGroup(of: (String, String).self) { group in
            for index in 0..<200 {
                let account = index.isMultiple(of: 2) ? "alice" : "bob"
                group.addTask { (account, try await registry.validToken(for: account).accessToken) }
            }
            return try await group.reduce(into: [String: Set<String>]()) { $0[$1.0, default: []].insert($1.1) }
        }
        #expect(await rig.server.refreshCount == 2)
        #expect(await rig.server.reuseDetections == 0)
        #expect(tokens["alice"]?.count == 1 && tokens["bob"]?.count == 1)
        #expect(registry.count == 2)
        #expect(registry.client(for: "alice") === registry.client(for: "alice"))
    }

    /// A backend acting for several users sends each user's requests through an `AuthenticatedClient` whose
    /// provider is that account's: each request carries its own account's token, a 401 refreshes that account
    /// only, and the provider keeps working after its client was evicted.
    @Test func eachAccountsProviderSendsItsOwnTokenAndRefreshesOnlyThatAccount() async throws {
        let rig = RegistryRig(configuration: .init(idleTimeout: .seconds(60)))
        try await rig.seed("alice", age: 0)
        try await rig.seed("bob", age: 0)
        let registry = rig.registry
        let alice = registry.tokenProvider(for: "alice")
        let bob = registry.tokenProvider(for: "bob")
        let aliceFirst = try await alice.validToken()
        let bobFirst = try await bob.validToken()
        #expect(aliceFirst != bobFirst)
        // The API has revoked Alice's first access token early; it echoes the bearer it accepted.
        let api = MockTransport { request, _ in
            let bearer = request.headerFields[.authorization] ?? ""
            if bearer == "Bearer \(aliceFirst.accessToken)" {
                return (
                    HTTPResponse(
                        status: .unauthorized, headerFields: [.wwwAuthenticate: #"Bearer error="invalid_token""#]),
                    Data()
                )
            }
            return (HTTPResponse(status: .ok), Data(bearer.utf8))
        }
        let configuration = AuthenticatedClient.Configuration(
            allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!])
        let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v1/me")
        let forAlice = AuthenticatedClient(transport: api, tokenProvider: alice, configuration: configuration)
        let forBob = AuthenticatedClient(transport: api, tokenProvider: bob, configuration: configuration)

        let (aliceAnswer, aliceBody) = try await forAlice.executeWithAutoRetry(request)
        let (bobAnswer, bobBody) = try await forBob.executeWithAutoRetry(request)
        let aliceNow = try #require(registry.client(for: "alice").currentToken)
        #expect(aliceAnswer.status == .ok && bobAnswer.status == .ok)
        #expect(aliceNow != aliceFirst)
        #expect(String(decoding: aliceBody, as: UTF8.self) == "Bearer \(aliceNow.accessToken)")
        #expect(String(decoding: bobBody, as: UTF8.self) == "Bearer \(bobFirst.accessToken)")
        #expect(await rig.server.refreshCount == 1)

        // Idle clients are evicted; the providers held by the app go on through new ones.
        rig.clock.advance(by: .seconds(61))
        #expect(await registry.evictIdle() == 2)
        let (again, againBody) = try await forAlice.executeWithAutoRetry(request)
        #expect(again.status == .ok)
        #expect(String(decoding: againBody, as: UTF8.self) == "Bearer \(aliceNow.accessToken)")
        #expect(registry.count == 1)
        #expect(await rig.server.refreshCount == 1)
    }

    @Test func refreshesMatchExpiriesAcrossManyAccounts() async throws {
        // Refreshed tokens outlive the run, so each account's one expiry is its one refresh.
        let rig = RegistryRig(refreshedLifetime: 1_000_000)
        // Kept small enough for the thread sanitizer run in CI.
        let accounts = (0..<400).map { "account-\($0)" }
        for (index, account) in accounts.enumerated() {
            // Expiries spread over the next hour: received between 0 and 3600 s ago, valid for 3600 s.
            try await rig.seed(account, age: Double(index) * 3600 / Double(accounts.count), lifetime: 3600)
        }
        let registry = rig.registry
        for _ in 0..<13 {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for account in accounts {
                    group.addTask { _ = try await registry.validToken(for: account) }
                }
                try await group.waitForAll()
            }
            rig.clock.advance(by: .seconds(300))
        }
        #expect(await rig.server.refreshCount == accounts.count)
        #expect(await rig.server.reuseDetections == 0)
    }

    @Test func theBoundEvictsTheLeastRecentlyUsedIdleClients() async throws {
        let rig = RegistryRig(configuration: .init(maximumClients: 10, evictionTarget: 5))
        for index in 0..<20 {
            try await rig.seed("user-\(index)", age: 0)
            _ = try await rig.registry.validToken(for: "user-\(index)")
        }
        await rig.registry.evictIdle()
        await yield { rig.registry.count <= 10 }
        #expect(rig.registry.evictionCount >= 10)
        // The most recent account is still registered: its client is the same object.
        let recent = rig.registry.client(for: "user-19")
        #expect(rig.registry.client(for: "user-19") === recent)
        #expect(await rig.server.refreshCount == 0)
    }

    @Test func aPairNotYetPersistedKeepsItsClient() async throws {
        let store = FlakyStore()
        let rig = RegistryRig(
            store: store,
            configuration: .init(idleTimeout: .seconds(60), client: .init(persistRetryInterval: .seconds(5))))
        try await rig.seed("alice")
        await store.setFailSaves(true)
        let refreshed = try await rig.registry.validToken(for: "alice")
        #expect(await rig.server.refreshCount == 1)

        rig.clock.advance(by: .seconds(120))
        #expect(await rig.registry.evictIdle() == 0)
        #expect(rig.registry.count == 1)

        // The write succeeds on the next call past the retry interval; then the idle client may go.
        await store.setFailSaves(false)
        #expect(try await rig.registry.validToken(for: "alice") == refreshed)
        #expect(await rig.store.load(account: "alice").foundToken == refreshed)
        rig.clock.advance(by: .seconds(120))
        #expect(await rig.registry.evictIdle() == 1)
        #expect(rig.registry.count == 0)
        // A new client reads the stored pair: no refresh, no reuse.
        #expect(try await rig.registry.validToken(for: "alice") == refreshed)
        #expect(await rig.server.refreshCount == 1)
    }
}

extension TokenStoreRead {
    fileprivate var foundToken: AuthToken? {
        if case .found(let session) = self { return session.token }
        return nil
    }
}
