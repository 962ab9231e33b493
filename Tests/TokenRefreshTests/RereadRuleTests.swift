import AuthToken
import Foundation
import HTTPTypes
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// Re-read before refresh, when the store cannot be read: the stored pair is the truth another process may have
/// rotated, and a new pair could not be kept there either, so nothing is presented to the server.
@Suite(.logLeakCheck()) struct RereadRuleTests {
    @Test func anExpiredSessionWhoseStoreCannotBeReadPresentsNothingAndIsKept() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(store: store)
        await rig.client.restoreSession()
        // Another process may have rotated the pair meanwhile; the store cannot tell, it cannot be read.
        await store.setUnavailable(true)

        let error = await refreshError { try await rig.client.validToken() }
        #expect(error == .storageUnavailable)
        #expect(await rig.server.refreshCount == 0)
        #expect(rig.client.currentState.hasSession)
    }

    @Test func aStillValidTokenIsHandedOutWhileTheStoreCannotBeRead() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(store: store, expired: false)
        await rig.client.restoreSession()
        rig.clock.advance(by: .seconds(3500))  // due for a proactive refresh, not yet expired
        await store.setUnavailable(true)

        #expect(try await rig.client.validToken() == rig.initial)
        #expect(await rig.server.refreshCount == 0)
    }
}

/// Re-read before refresh, while a refreshed pair waits in memory because its write failed: the refresh token the
/// client presents is never one it has reason to believe consumed (rotated away by this client, or by another process
/// sharing the store), whatever the store answers.
@Suite(.logLeakCheck()) struct PendingPairRereadTests {
    @Test func aRejectedPendingPairNeverFallsBackToTheStoredRefreshTokenItRotatedAway() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(store: store)
        await rig.client.restoreSession()
        // The server rotates the stored refresh token; the new pair cannot be written and waits in memory.
        await store.setFailSaves(true)
        let pending = try await rig.client.validToken()
        // A second later the server refuses the new refresh token (the session was revoked there). The store still
        // holds the pair whose refresh token this client itself rotated away.
        rig.clock.advance(by: .seconds(1))
        await rig.server.enqueue(.invalidGrant)

        let error = await refreshError { try await rig.client.refreshToken(afterRejectionOf: pending.accessToken) }
        #expect(error == .refreshTokenRejected)
        let presented = await rig.server.presentedRefreshTokens
        #expect(presented.filter { $0 == rig.initial.refreshToken }.count == 1, "a consumed refresh token was sent")
        #expect(await rig.server.reuseDetections == 0)
        #expect(!rig.client.currentState.hasSession)
    }

    @Test func aPendingPairThatKeptTheStoredRefreshTokenPresentsNothingWhileTheStoreCannotBeRead() async throws {
        let rig = try await SometimesRotatingRig.make()
        // The server keeps the refresh token (no `refresh_token` in its answer); the new pair cannot be written.
        await rig.store.setFailSaves(true)
        let pending = try await rig.client.validToken()
        await rig.store.setFailSaves(false)
        // Another process sharing the store refreshes the stored pair, and this time the server rotates it.
        let rotated = await rig.server.rotate(try #require(rig.initial.refreshToken), at: rig.clock.date)
        try await rig.store.save(
            StoredSession(token: rotated, userID: "user-1", generation: 2), account: account, condition: .always)
        await rig.store.setUnavailable(true)

        let error = await refreshError { try await rig.client.refreshToken(afterRejectionOf: pending.accessToken) }
        #expect(error == .storageUnavailable)
        #expect(await rig.server.presented(rig.initial.refreshToken) == 1, "a consumed refresh token was sent")
        #expect(await rig.server.reuseDetections == 0)
        #expect(rig.client.currentState.hasSession)
        // Once the store can be read again, the other process's pair is taken up.
        await rig.store.setUnavailable(false)
        #expect(try await rig.client.refreshToken(afterRejectionOf: pending.accessToken) == rotated)
    }

    @Test func aPendingPairThatKeptTheStoredRefreshTokenEndsWhenTheSessionWasRemovedElsewhere() async throws {
        let rig = try await SometimesRotatingRig.make()
        await rig.store.setFailSaves(true)
        let pending = try await rig.client.validToken()
        // Another process rotates the stored pair, then signs out there (the stored session is removed).
        _ = await rig.server.rotate(try #require(rig.initial.refreshToken), at: rig.clock.date)
        try await rig.store.remove(account: account, condition: .always)

        let error = await refreshError { try await rig.client.refreshToken(afterRejectionOf: pending.accessToken) }
        #expect(error == .signedOut)
        #expect(await rig.server.presented(rig.initial.refreshToken) == 1, "a consumed refresh token was sent")
        #expect(await rig.server.reuseDetections == 0)
        #expect(!rig.client.currentState.hasSession)
    }
}

/// A client over a ``FlakyStore`` and a token server that rotates refresh tokens only when asked to (a server may
/// issue a new refresh token or keep the old one, RFC 6749 section 6), with an expired session stored.
private struct SometimesRotatingRig {
    let server: SometimesRotatingServer
    let store: FlakyStore
    let client: TokenRefreshClient
    let initial: AuthToken
    let clock: ManualClock

    static func make() async throws -> Self {
        let clock = ManualClock()
        let server = SometimesRotatingServer()
        let store = FlakyStore()
        let initial = await server.issue(refreshToken: nil, receivedAt: clock.date.addingTimeInterval(-7200))
        try await store.save(
            StoredSession(token: initial, userID: "user-1", generation: 1), account: account, condition: .always)
        let transport = MockTransport { _, body in try await server.answer(body) }
        let endpoint = TokenEndpoint(
            url: tokenURL, client: OAuthClient(id: "app"), transport: transport, now: clock.wallClock)
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store, configuration: .init(), clock: clock,
            now: clock.wallClock)
        return Self(server: server, store: store, client: client, initial: initial, clock: clock)
    }
}

/// The token server of ``SometimesRotatingRig``: its refresh answers keep the refresh token, and ``rotate(_:at:)`` (another
/// process's refresh) rotates it. A rotated refresh token that comes back is reuse: the family is revoked.
private actor SometimesRotatingServer {
    private var live: Set<String> = []
    private var consumed: Set<String> = []
    private var presentedTokens: [String] = []
    private var serial = 0
    private(set) var reuseDetections = 0

    /// How many times `refreshToken` was presented.
    func presented(_ refreshToken: String?) -> Int { presentedTokens.filter { $0 == refreshToken }.count }

    /// A new pair: a new refresh token, or `refreshToken` kept.
    func issue(refreshToken: String?, receivedAt: Date) -> AuthToken {
        serial += 1
        let token = TestSecrets.shared.register(
            AuthToken(
                accessToken: "sometimes-access-\(serial)", refreshToken: refreshToken ?? "sometimes-refresh-\(serial)",
                receivedAt: receivedAt, lifetime: 3600))
        if let refresh = token.refreshToken { live.insert(refresh) }
        return token
    }

    /// Another process's refresh of `refreshToken`, rotated.
    func rotate(_ refreshToken: String, at now: Date) -> AuthToken {
        live.remove(refreshToken)
        consumed.insert(refreshToken)
        return issue(refreshToken: nil, receivedAt: now)
    }

    /// The token endpoint: a `refresh_token` grant answered with a new access token and the refresh token kept.
    func answer(_ body: Data?) throws -> (HTTPResponse, Data) {
        let form = URLComponents(string: "?" + String(decoding: body ?? Data(), as: UTF8.self))?.queryItems ?? []
        guard let refreshToken = form.first(where: { $0.name == "refresh_token" })?.value else {
            throw URLError(.badServerResponse)
        }
        presentedTokens.append(refreshToken)
        guard live.contains(refreshToken) else {
            if consumed.contains(refreshToken) {
                reuseDetections += 1
                live.removeAll()
            }
            return (HTTPResponse(status: .badRequest), Data(#"{"error":"invalid_grant"}"#.utf8))
        }
        let token = issue(refreshToken: refreshToken, receivedAt: .distantPast)  // the client times the answer itself
        let json = #"{"access_token":"\#(token.accessToken)","token_type":"Bearer","expires_in":3600}"#
        return (HTTPResponse(status: .ok), Data(json.utf8))
    }
}
