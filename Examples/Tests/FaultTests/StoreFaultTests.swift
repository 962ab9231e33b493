import DemoAuthServer
import Foundation
import Synchronization
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

/// A switch a test flips to make one store operation fail, and a count of the attempts it saw.
final class StoreSwitch: Sendable {
    private let state = Mutex((failing: false, attempts: 0))

    var failing: Bool {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }

    var attempts: Int { state.withLock { $0.attempts } }

    /// Counts an attempt and says whether it fails.
    func attempt() -> Bool {
        state.withLock { state in
            state.attempts += 1
            return state.failing
        }
    }
}

@Suite("TokenKit with a failing store, against the demo server", .logLeakCheck())
struct StoreFaultTests {
    /// Rule 4: the rotated pair is never dropped. It stays in memory, `persistenceFailed` is published, the next
    /// refresh sends the rotated refresh token (the server detects no reuse), and the write is retried until
    /// it lands.
    @Test func aStoreThatFailsWritesLosesNothing() async throws {
        let writes = StoreSwitch()
        try await Harness.run(
            store: { file in
                ClosureTokenStore(
                    forwardingTo: file,
                    save: { session, account, condition in
                        if writes.attempt() { throw PersistenceError.writeFailed }
                        try await file.save(session, account: account, condition: condition)
                    })
            }
        ) { harness in
            let signedIn = try #require(await harness.stored())
            writes.failing = true
            harness.expire()

            let first = try await harness.client.validToken()
            #expect(try await harness.fetch() == 200)
            let failed = await harness.events.waitFor(.persistenceFailed)
            #expect(failed.first?.error == .storageUnavailable)
            #expect(failed.first?.tokenFingerprint == first.fingerprint)
            #expect(await harness.stored() == signedIn)  // the store still has the old pair
            #expect(harness.client.currentToken == first)  // memory has the new one

            harness.expire()
            let second = try await harness.client.validToken()
            #expect(second.refreshToken != first.refreshToken)
            #expect(harness.server.stats.refreshes == 2)
            #expect(harness.server.stats.reuseDetections == 0)
            #expect(harness.server.stats.rejectedRefreshes == 0)
            await harness.events.waitFor(.persistenceFailed, count: 2)
            #expect(harness.client.currentState == .signedIn(userID: Demo.userID))

            writes.failing = false
            let attempts = writes.attempts
            harness.clock.advance(by: harness.client.configuration.persistRetryInterval)
            #expect(try await harness.fetch() == 200)
            await harness.events.waitFor(.persistenceRecovered)
            #expect(writes.attempts == attempts + 1)
            let stored = try #require(await harness.stored())
            #expect(stored.token.accessToken == second.accessToken)
            #expect(stored.token.refreshToken == second.refreshToken)
            #expect(stored.generation > signedIn.generation)
            #expect(harness.events.all(.signedOut).isEmpty)
        }
    }

    /// A store that cannot be read (a locked Keychain) is not "signed out": the client says the storage is
    /// unavailable, stays `loading`, wipes nothing, and resumes the session once the store answers.
    @Test func aStoreThatIsUnavailableOnLoadDoesNotSignOut() async throws {
        try await Harness.run { harness in
            let stored = try #require(await harness.stored())
            let reads = StoreSwitch()
            reads.failing = true
            let store = ClosureTokenStore(
                forwardingTo: harness.fileStore,
                load: { account in
                    if reads.attempt() { return .unavailable(.unavailable) }
                    return await harness.fileStore.load(account: account)
                })
            // The app's next launch, while the store is locked.
            let relaunched = TokenRefreshClient(
                strategy: JSONEndpointRefreshStrategy(
                    baseURL: harness.baseURL, apiKey: Demo.apiKey, transport: harness.transport,
                    now: harness.clock.wallClock),
                store: store, configuration: Harness.clientConfiguration(), clock: harness.clock,
                now: harness.clock.wallClock)
            let events = EventLog(relaunched)

            #expect(await relaunched.restoreSession() == .unavailable)
            let error = await #expect(throws: TokenRefreshError.self) { try await relaunched.validToken() }
            #expect(error == .storageUnavailable)
            let unavailable = await events.waitFor(.storageUnavailable, count: 2)
            #expect(unavailable.allSatisfy { $0.error == .storageUnavailable })
            #expect(relaunched.currentState == .unavailable)
            #expect(events.all(.signedOut).isEmpty)
            #expect(await harness.stored() == stored)

            reads.failing = false
            let token = try await relaunched.validToken()
            #expect(token.accessToken == stored.token.accessToken)
            #expect(relaunched.currentState == .signedIn(userID: Demo.userID))
            #expect(harness.server.stats.refreshAttempts == 0)
            #expect(harness.server.stats.logins == 1)
        }
    }
}
