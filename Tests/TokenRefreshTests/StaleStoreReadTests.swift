import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// A read of the store made for another writer (the app writing its own persistence, another audience's sign-in) is
/// answered late: the client's own refresh has replaced the pair it found meanwhile. The older pair is not taken up
/// over the newer one, whether the newer one was stored or is held in memory only (its write failed).
@Suite(.logLeakCheck()) struct StaleStoreReadTests {
    /// A store the app writes too, so a client asks it before handing out a fresh token whether the stored session
    /// may have changed (it always says it may); its saves can be made to fail, and its next read can be held after
    /// it has read, as a slow store holds an answer.
    final class AppWrittenStore: ExternallyWrittenTokenStore {
        struct State {
            var sessions: [String: StoredSession] = [:]
            var failSaves = false
            var holdNextRead: HoldGate?
        }

        let state = Locked(State())

        func mayHaveChanged(account: String) -> Bool { true }

        func load(account: String) async -> TokenStoreRead {
            let (read, gate) = state.withLock { state in
                defer { state.holdNextRead = nil }
                return (state.sessions[account].map(TokenStoreRead.found) ?? .absent, state.holdNextRead)
            }
            await gate?.wait()
            return read
        }

        func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
            try state.withLock { (state: inout State) throws(PersistenceError) in
                guard !state.failSaves else { throw .writeFailed }
                guard condition.allows(stored: state.sessions[account]) else { throw .conflict }
                state.sessions[account] = session
            }
        }

        func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
            try state.withLock { (state: inout State) throws(PersistenceError) in
                guard condition.allows(stored: state.sessions[account]) else { throw .conflict }
                state.sessions[account] = nil
            }
        }
    }

    /// Whether the refresh that lands while the read is held could store its pair.
    enum RefreshWrite: String, CaseIterable, Sendable {
        case lands
        case fails
    }

    /// A caller asks for a token while the client checks the app's writes: the check's read finds the session at
    /// generation 1 and is held. Meanwhile a 401 refreshes the session here (its pair stored at generation 2, or kept in
    /// memory only). The read, answered now, changes nothing: the client keeps the refreshed pair, hands it out, and
    /// refreshes it after a 401 of it.
    @Test(arguments: RefreshWrite.allCases)
    func aReadAnsweredAfterTheClientsOwnRefreshDoesNotBringTheOlderPairBack(_ write: RefreshWrite) async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let store = AppWrittenStore()
        let first = await server.issueSession(userID: "alice")
        try await store.save(
            StoredSession(token: first, userID: "alice", generation: 1, sessionID: StoredSession.newSessionID()),
            account: account, condition: .always)
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: "app"), transport: server, now: clock.wallClock)
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store, clock: clock, now: clock.wallClock)
        #expect(await client.restoreSession() == .signedIn(userID: "alice"))

        let gate = HoldGate()
        store.state.withLock { $0.holdNextRead = gate }
        let checking = Task { try await client.validToken() }
        await gate.waitForArrivals(1)  // the check's read found generation 1 and waits

        store.state.withLock { $0.failSaves = write == .fails }
        let refreshed = try await client.refreshToken(afterRejectionOf: first.accessToken)
        store.state.withLock { $0.failSaves = false }
        gate.open()
        let handedOut = try await checking.value

        #expect(handedOut == refreshed, "the check handed out the pair its read found, refused already")
        #expect(client.currentToken == refreshed)
        #expect(client.currentState == .signedIn(userID: "alice"))
        let error = await refreshError { try await client.refreshToken(afterRejectionOf: refreshed.accessToken) }
        #expect(error == nil, "a 401 of the refreshed token no longer refreshes the session")
    }

    /// The session ended here because the server rejected its refresh token, and its removal failed: a read made for
    /// another writer that finds it still stored does not bring it back (a re-read under the lock never does either).
    @Test func aReadFindingASessionWhoseRefreshTokenWasRejectedHereDoesNotBringItBack() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var machine = SessionMachine(configuration: .init(), requiresRefreshToken: true)
        _ = machine.storeRead(atLoad: .absent, now: now)
        machine.rejected.insert("refresh-token-stale-read-rejected")
        let ended = AuthToken(
            accessToken: "access-token-stale-read-ended", refreshToken: "refresh-token-stale-read-rejected",
            receivedAt: now, lifetime: 3600)
        let stored = StoredSession(token: ended, userID: "alice", generation: 3, sessionID: "ended-session")
        #expect(!machine.shouldAdopt(stored))
        let action = machine.audienceSessionRead(.found(stored), epoch: machine.epoch, overtaken: false, now: now)
        #expect(action == SessionMachine.Action())
        #expect(machine.session == nil)
        #expect(machine.authState == .signedOut)
    }
}
