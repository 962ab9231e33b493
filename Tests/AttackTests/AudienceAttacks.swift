import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

// What an attacker (or an unlucky app) tried against one session that serves several APIs, each with its own access
// token (RFC 8707 resource indicators, multi-resource refresh tokens): getting one API's token sent to another,
// making a 401 of one API refresh or answer for another, and losing or replaying the shared rotating refresh token
// while the APIs' clients take turns with it. The server mints access tokens whose `aud` is the resource asked for,
// rotates the refresh token at every refresh, and revokes the whole session when a rotated one comes back.

@Suite(.logLeakCheck()) struct AudienceAttacks {
    static let billing = "https://billing.example.com"
    static let profile = "https://profile.example.com"
    static let account = "alice-session"
    static let accountAPI = "https://account.example.com"

    @Test func aCallerForTheBillingAPINeverGetsTheProfileAPIsToken() async throws {
        let rig = try await AudienceRig.make()
        // The billing API holds a fresh token (from the sign-in); the profile API has none yet. 100 callers of each
        // ask at once.
        let results = try await withThrowingTaskGroup(of: (String, AuthToken).self) { group in
            for index in 0..<200 {
                let key = index.isMultiple(of: 2) ? "billing" : "profile"
                let client = rig.clients[key]!
                group.addTask { (key, try await client.validToken()) }
            }
            return try await group.reduce(into: [(String, AuthToken)]()) { $0.append($1) }
        }
        for (key, token) in results {
            let expected = key == "billing" ? Self.billing : Self.profile
            #expect(Self.audience(of: token) == [expected], "a \(key) caller got another API's token")
        }
        #expect(await rig.server.refreshes == [Self.profile: 1])
        #expect(await rig.server.reuseDetections == 0)
    }

    @Test func aFreshTokenStoredBeforeTheAPIsWereSplitIsNeverHandedToEitherAPI() async throws {
        let rig = AudienceRig.empty()
        // The app kept one session with one still-fresh access token, for no API in particular.
        let old = await rig.server.signIn(userID: "alice", resource: "https://api.example.com")
        try await rig.store.save(
            StoredSession(token: old, userID: "alice", generation: 7), account: Self.account, condition: .always)
        let billing = try await rig.billing.validToken()
        let profile = try await rig.profile.validToken()
        #expect(Self.audience(of: billing) == [Self.billing])
        #expect(Self.audience(of: profile) == [Self.profile])
        #expect(billing.accessToken != old.accessToken && profile.accessToken != old.accessToken)
        #expect(await rig.server.refreshes == [Self.billing: 1, Self.profile: 1])
        #expect(await rig.server.reuseDetections == 0)
    }

    @Test func aRejectionOfTheProfileTokenNeverRefreshesOrAnswersWithTheBillingToken() async throws {
        let rig = try await AudienceRig.make()
        let billingToken = try await rig.billing.validToken()
        let profileToken = try await rig.profile.validToken()
        // The profile API answers 401 to its token: the retry gets a new profile token, refreshed for the profile API.
        let retried = try await rig.profile.refreshToken(afterRejectionOf: profileToken.accessToken)
        #expect(Self.audience(of: retried) == [Self.profile])
        #expect(retried.accessToken != billingToken.accessToken)
        #expect(await rig.server.refreshes == [Self.profile: 2])
        // The billing client is not touched by the profile API's 401: it keeps answering with its own token.
        #expect(try await rig.billing.validToken().accessToken == billingToken.accessToken)
        // A 401 for the billing token reported to the profile client (a request sent to the wrong API) is not the
        // profile client's to retry: no refresh, and no token of either API as the answer.
        await #expect(throws: TokenRefreshError.sessionChanged) {
            try await rig.profile.refreshToken(afterRejectionOf: billingToken.accessToken)
        }
        #expect(await rig.server.refreshes == [Self.profile: 2])
        #expect(await rig.server.reuseDetections == 0)
    }

    @Test func anotherUsersSignInNeverLeavesTheFirstUsersTokenWithAnyAPI() async throws {
        let rig = try await AudienceRig.make()
        let alicesProfileToken = try await rig.profile.validToken()
        #expect(alicesProfileToken.claims?.subject == "alice")
        // Bob signs in through the billing client. The profile client held Alice's still-fresh profile token.
        let bobsPair = await rig.server.signIn(userID: "bob", resource: Self.billing)
        try await rig.billing.signIn(with: bobsPair, userID: "bob")
        let profileToken = try await rig.profile.validToken()
        #expect(profileToken.claims?.subject == "bob")
        #expect(Self.audience(of: profileToken) == [Self.profile])
        await #expect(throws: TokenRefreshError.sessionChanged) {
            try await rig.profile.refreshToken(afterRejectionOf: alicesProfileToken.accessToken)
        }
    }

    @Test func aSignOutWithOneAPIsClientStopsEveryAPIsTokenAtOnce() async throws {
        let rig = try await AudienceRig.make()
        _ = try await rig.profile.validToken()
        try await rig.billing.signOut()
        // The profile token is still fresh, but its session was signed out.
        await #expect(throws: TokenRefreshError.signedOut) { try await rig.profile.validToken() }
        #expect(rig.profile.currentToken == nil)
        #expect(await rig.stored() == nil)
    }

    /// The sign-out's removal from the store fails (a locked Keychain): the session still ends for every API's
    /// client in the process, not only the one signed out with.
    @Test func aSignOutWhoseRemovalFailsStillStopsEveryAPIsToken() async throws {
        let rig = try await AudienceRig.make()
        _ = try await rig.profile.validToken()
        await rig.store.failNextRemovals(1)
        await #expect(throws: TokenRefreshError.storageUnavailable) { try await rig.billing.signOut() }
        await #expect(throws: TokenRefreshError.signedOut) { try await rig.profile.validToken() }
        #expect(rig.profile.currentToken == nil)
    }

    /// The profile client restored the session before its API had a token: it shows no token rather than an empty
    /// one a caller could send as `Bearer `.
    @Test func anAPIWithNoTokenYetShowsNoCurrentToken() async throws {
        let rig = try await AudienceRig.make()
        let elsewhere = rig.moreClients()
        _ = await elsewhere["profile"]!.restoreSession()
        #expect(elsewhere["profile"]!.currentToken == nil)
        #expect(elsewhere["billing"]!.currentToken == nil)
        _ = await elsewhere["billing"]!.restoreSession()
        #expect(elsewhere["billing"]!.currentToken != nil)
    }

    @Test func aRotationTheStoreCouldNotKeepIsNeverLostToAnotherAPIsRefresh() async throws {
        let rig = try await AudienceRig.make()
        rig.clock.advance(by: .seconds(7200))
        // The billing refresh rotates the refresh token, and the store fails to keep the new one.
        await rig.store.failNextSaves(1)
        let billingToken = try await rig.billing.validToken()
        #expect(Self.audience(of: billingToken) == [Self.billing])
        // The profile client refreshes next: it must present the rotated refresh token, which only the billing
        // client's memory holds, or nothing at all; never the consumed one still in the store.
        await rig.store.failNextSaves(1)
        _ = try? await rig.profile.validToken()
        #expect(await rig.server.reuseDetections == 0)
        // Once the store works again, the profile API gets its token and the session survives.
        let profileToken = try await rig.profile.validToken()
        #expect(Self.audience(of: profileToken) == [Self.profile])
        #expect(await rig.server.reuseDetections == 0)
        #expect(await rig.server.isCurrent(rig.stored()?.token.refreshToken))
    }

    /// Bob's sign-in through the billing client cannot be stored, so it fails and the client keeps Alice's session;
    /// then another process signs Carol in. The failed sign-in is never written later, over Carol's session.
    @Test func aSignInThatFailedIsNeverWrittenLaterOverAnotherProcessesSession() async throws {
        let rig = try await AudienceRig.make()
        let bobsPair = await rig.server.signIn(userID: "bob", resource: Self.billing)
        await rig.store.failNextSaves(1)
        await #expect(throws: TokenRefreshError.storageUnavailable) {
            try await rig.billing.signIn(with: bobsPair, userID: "bob")
        }
        let elsewhere = rig.moreClients()
        let carolsPair = await rig.server.signIn(userID: "carol", resource: Self.billing)
        try await elsewhere["billing"]!.signIn(with: carolsPair, userID: "carol")
        _ = try? await rig.profile.validToken()
        #expect(try #require(await rig.stored()).userID == "carol")
    }

    @Test func aSignInElsewhereDuringAProfileRefreshNeverAnswersWithoutAProfileToken() async throws {
        let rig = try await AudienceRig.make()
        rig.clock.advance(by: .seconds(7200))
        // Another process with its own clients over the same store.
        let elsewhere = rig.moreClients()
        // The profile refresh is on the wire when the other process signs a new session in.
        await rig.server.requestHold.arm()
        let caller = Task { try await rig.profile.validToken() }
        await rig.server.requestHold.waitUntilHeld()
        let pair = await rig.server.signIn(userID: "alice", resource: Self.billing)
        try await elsewhere["billing"]!.signIn(with: pair, userID: "alice")
        await rig.server.requestHold.release()
        // The profile answer lost to the newer session; the caller is never handed what the store now has for the
        // profile API (nothing): it fails, or gets a real profile token.
        if let token = try? await caller.value {
            #expect(Self.audience(of: token) == [Self.profile])
            #expect(!token.accessToken.isEmpty)
        }
        // The sign-in elsewhere is another session: the call that finds it (the first after the lost write, which
        // could not read this API's token) fails with `sessionChanged`, and the next one is the new session's.
        let token: AuthToken
        do {
            token = try await rig.profile.validToken()
        } catch let error as TokenRefreshError where error == .sessionChanged {
            token = try await rig.profile.validToken()
        }
        #expect(Self.audience(of: token) == [Self.profile])
        #expect(!token.isExpired(at: rig.clock.date))
    }

    @Test func aSignInInAnotherProcessIsNeverOverwrittenByAnAPIClientStillHoldingTheOldSession() async throws {
        let rig = try await AudienceRig.make()
        let app = rig.moreClients()  // another process, which reads the session now
        _ = await app["billing"]!.restoreSession()
        _ = try await rig.profile.validToken()  // Alice's session, rotated by this process: the app never sees it
        let bobsPair = await rig.server.signIn(userID: "bob", resource: Self.billing)
        try await app["billing"]!.signIn(with: bobsPair, userID: "bob")
        rig.clock.advance(by: .seconds(7200))
        _ = try? await rig.profile.validToken()
        let stored = try #require(await rig.stored())
        #expect(stored.userID == "bob")
        let token = try await app["profile"]!.validToken()
        #expect(token.claims?.subject == "bob")
        #expect(Self.audience(of: token) == [Self.profile])
        #expect(await rig.server.reuseDetections == 0)
    }

    /// Bob's session is the one stored, and the app that signed him in hands out his token.
    static func expectBobsSessionKept(in store: any TokenStore, by app: TokenRefreshClient) async throws {
        guard case .found(let stored) = await store.load(account: Self.account) else {
            Issue.record("no session stored")
            return
        }
        #expect(stored.userID == "bob")
        #expect(try await app.validToken().claims?.subject == "bob")
    }

    /// Two processes sharing `store` (an app and its extension), a client each, after both restored Alice's session:
    /// issued by `server` two hours ago (so expired) and stored at generation 1; their requests go through
    /// `transport`. Also returns Alice's pair as issued.
    static func twoProcessesHoldingAlicesSession(
        server: SimulatedTokenServer, transport: any HTTPTransport, store: any TokenStore, clock: ManualClock,
        configuration: TokenRefreshClient.Configuration
    ) async throws -> (extension: TokenRefreshClient, app: TokenRefreshClient, alices: AuthToken) {
        let endpoint = TokenEndpoint(
            url: URL(string: "https://auth.example.com/oauth/token")!, client: OAuthClient(id: "app"),
            transport: transport, now: clock.wallClock)
        let alices = await server.issueSession(userID: "alice", receivedAt: clock.date.addingTimeInterval(-7200))
        try await store.save(
            StoredSession(token: alices, userID: "alice", generation: 1), account: Self.account, condition: .always)
        func process() -> TokenRefreshClient {
            TokenRefreshClient(
                strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store, configuration: configuration,
                clock: clock, now: clock.wallClock, random: { 0.5 })
        }
        let processes = (extension: process(), app: process(), alices: alices)
        await processes.extension.restoreSession()
        await processes.app.restoreSession()
        return processes
    }

    /// The generation rule the audience clients rely on, between two processes sharing one store with one client each
    /// (an app and its extension): Alice's session is refreshed in one process, then Bob signs in in the other, which
    /// never saw that refresh. Bob's session must be stored above Alice's refreshed one, or the first process, still
    /// holding Alice's session, takes Bob's stored session for its own (same generation), presents Alice's refresh
    /// token, and writes Alice's pair over Bob's; Bob's process then adopts Alice's session. A sign-in stores its session
    /// above every stored generation, read under the store's lock.
    @Test func aSignInInOneProcessIsNeverOverwrittenByAnotherProcessStillHoldingTheOldSession() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let store = InMemoryTokenStore()
        let (extensionProcess, appProcess, _) = try await Self.twoProcessesHoldingAlicesSession(
            server: server, transport: server, store: store, clock: clock,
            configuration: .init(account: Self.account))
        _ = try await extensionProcess.validToken()  // Alice's session, refreshed by the extension
        let bobs = await server.issueSession(userID: "bob")
        try await appProcess.signIn(with: bobs, userID: "bob")  // the app never saw that refresh
        clock.advance(by: .seconds(7200))
        _ = try? await extensionProcess.validToken()
        try await Self.expectBobsSessionKept(in: store, by: appProcess)
    }

    /// Another process's billing client is still reading the store (it read Alice's session, its answer not yet back)
    /// when Bob signs in through that process's profile client. The read that started before the sign-in never
    /// restores Alice's session: the billing client never hands out Alice's still-fresh billing token.
    @Test func aReadStartedBeforeAnotherAPIsSignInNeverHandsOutTheReplacedSessionsToken() async throws {
        let rig = try await AudienceRig.make()
        let app = rig.moreClients()
        await rig.store.loadHold.arm()
        let caller = Task { try await app["billing"]!.validToken() }
        await rig.store.loadHold.waitUntilHeld()
        let bobsPair = await rig.server.signIn(userID: "bob", resource: Self.profile)
        try await app["profile"]!.signIn(with: bobsPair, userID: "bob")
        await rig.store.loadHold.release()
        let token = try await caller.value
        #expect(token.claims?.subject == "bob", "the billing client answered with the replaced session's token")
        #expect(Self.audience(of: token) == [Self.billing])
        #expect(app["billing"]!.currentToken?.claims?.subject == "bob")
        #expect(try #require(await rig.stored()).userID == "bob")
        #expect(await rig.server.reuseDetections == 0)
    }

    /// As above, with a sign-out through the profile client: the billing client's read that started before it never
    /// restores the signed-out session.
    @Test func aReadStartedBeforeAnotherAPIsSignOutNeverHandsOutTheSignedOutSessionsToken() async throws {
        let rig = try await AudienceRig.make()
        let app = rig.moreClients()
        await rig.store.loadHold.arm()
        let caller = Task { try await app["billing"]!.validToken() }
        await rig.store.loadHold.waitUntilHeld()
        try await app["profile"]!.signOut()
        await rig.store.loadHold.release()
        await #expect(throws: TokenRefreshError.signedOut) { try await caller.value }
        #expect(app["billing"]!.currentToken == nil)
        #expect(app["billing"]!.currentState == .signedOut)
        #expect(await rig.stored() == nil)
    }

    /// What an API's client knew before the sign-in its held read is about.
    enum SiblingBefore: String, CaseIterable, Sendable {
        /// It had not read the store yet.
        case notRead
        /// It had read the store and found nobody signed in.
        case signedOut
        /// It held Alice's session, which the sign-in replaced.
        case alicesSession
    }

    /// Which client the app signs out with while the read is held.
    enum SignOutWith: String, CaseIterable, Sendable {
        /// The client whose read is held.
        case theReadingClient
        /// Another API's client, which has taken the session up already.
        case anotherAPIsClient
    }

    /// Bob signs in through the account API's client; the billing and profile clients take his session up, one after
    /// the other. The second one's read of the store has found Bob's session but is not back yet when the app signs
    /// out (with that client, or with the one that took the session up already). That read never brings the
    /// signed-out session back: no client hands out a token of it or presents its refresh token, whatever the reading
    /// client knew before.
    @Test(arguments: SiblingBefore.allCases, SignOutWith.allCases)
    func aSiblingsReadStartedBeforeASignOutNeverBringsTheSignedOutSessionBack(
        before: SiblingBefore, signOutWith: SignOutWith
    ) async throws {
        let rig = AudienceRig.empty()
        let (_, signingIn, siblings) = try await Self.threeAPIs(rig, before: before)
        let (signIn, tookUp, reading) = try await Self.signInBobHoldingASiblingsRead(rig, signingIn, siblings)
        switch signOutWith {
        case .theReadingClient: try await reading.signOut()
        case .anotherAPIsClient: try await tookUp.signOut()
        }
        await rig.store.loadHold.release()
        // The sign-out came before Bob's sign-in was over: the sign-in reports it.
        await #expect(throws: TokenRefreshError.signedOut) { try await signIn.value }
        for client in [signingIn] + siblings {
            #expect(client.currentState == .signedOut)
            #expect(client.currentToken == nil)
            await #expect(throws: TokenRefreshError.signedOut) { try await client.validToken() }
        }
        #expect(await rig.stored() == nil)
        #expect(await rig.server.refreshes.isEmpty, "a refresh token of the signed-out session was presented")
    }

    /// As above, with a sign-in instead of the sign-out: while its read of Bob's session is held, the app signs Carol
    /// in with the reading client. The older read never brings Bob's session back over Carol's: every API's client
    /// hands out Carol's tokens for its own API, and the store keeps Carol's session.
    @Test(arguments: SiblingBefore.allCases)
    func aSiblingsReadStartedBeforeAnotherSignInNeverBringsTheReplacedSessionBack(
        before: SiblingBefore
    ) async throws {
        let rig = AudienceRig.empty()
        let (clients, signingIn, siblings) = try await Self.threeAPIs(rig, before: before)
        let (bobsSignIn, _, reading) = try await Self.signInBobHoldingASiblingsRead(rig, signingIn, siblings)
        let api = { (client: TokenRefreshClient) in
            client === clients["account"]
                ? Self.accountAPI : client === clients["billing"] ? Self.billing : Self.profile
        }
        let carolsPair = await rig.server.signIn(userID: "carol", resource: api(reading))
        let carolsSignIn = Task { try await reading.signIn(with: carolsPair, userID: "carol") }
        // Carol's session has begun in the reading client (its save waits for Bob's sign-in to be over).
        for await state in reading.states() where state == .signedIn(userID: "carol") { break }
        await rig.store.loadHold.release()
        // Bob's sign-in is over: stored, or (when Carol's took the session up before it finished) reported as ended.
        switch await bobsSignIn.result {
        case .success(let token): #expect(token.claims?.subject == "bob")
        case .failure(let error): #expect(error as? TokenRefreshError == .signedOut)
        }
        #expect(try await carolsSignIn.value.claims?.subject == "carol")
        for client in [signingIn] + siblings {
            let token = try await client.validToken()
            #expect(token.claims?.subject == "carol", "an API's client handed out the replaced session's token")
            #expect(Self.audience(of: token) == [api(client)])
        }
        #expect(try #require(await rig.stored()).userID == "carol")
        #expect(await rig.server.reuseDetections == 0)
    }

    /// Three APIs' clients over `rig`'s store: the account API's one, which signs in, and the billing and profile
    /// ones, its siblings, which know what `before` says.
    private static func threeAPIs(
        _ rig: AudienceRig, before: SiblingBefore
    ) async throws -> (all: [String: TokenRefreshClient], signingIn: TokenRefreshClient, siblings: [TokenRefreshClient])
    {
        let clients = rig.clients(
            ["account": accountAPI, "billing": billing, "profile": profile].mapValues {
                OAuthRefreshStrategy(endpoint: rig.endpoint, resource: URL(string: $0)!)
            })
        let signingIn = try #require(clients["account"])
        let siblings = [try #require(clients["billing"]), try #require(clients["profile"])]
        switch before {
        case .notRead:
            break
        case .signedOut:
            for sibling in siblings { #expect(await sibling.restoreSession() == .signedOut) }
        case .alicesSession:
            let alicesPair = await rig.server.signIn(userID: "alice", resource: accountAPI)
            try await signingIn.signIn(with: alicesPair, userID: "alice")
        }
        return (clients, signingIn, siblings)
    }

    /// Signs Bob in with `signingIn` and holds the second sibling's read of his session once it has read it: the
    /// sign-in in progress, the sibling that took his session up, and the sibling whose read is held.
    private static func signInBobHoldingASiblingsRead(
        _ rig: AudienceRig, _ signingIn: TokenRefreshClient, _ siblings: [TokenRefreshClient]
    ) async throws -> (signIn: Task<AuthToken, any Error>, tookUp: TokenRefreshClient, reading: TokenRefreshClient) {
        await rig.store.holdReadAfterNextSave(lettingThrough: 1)
        let bobsPair = await rig.server.signIn(userID: "bob", resource: accountAPI)
        let signIn = Task { try await signingIn.signIn(with: bobsPair, userID: "bob") }
        await rig.store.loadHold.waitUntilHeld()
        let tookUp = try #require(siblings.first { user(in: $0.currentState) == "bob" })
        let reading = try #require(siblings.first { $0 !== tookUp })
        #expect(user(in: reading.currentState) != "bob")
        return (signIn, tookUp, reading)
    }

    /// Two clients for the same API with different scopes (a read-only one for a widget, a read-write one for the
    /// app), in one process and across two processes that use the same key for them: a refresh for one scope is
    /// never answered with the other scope's token, from the server or from the store.
    @Test func aRefreshForOneScopeIsNeverAnsweredWithAnotherScopesToken() async throws {
        let rig = try await AudienceRig.make()
        let resource = URL(string: Self.billing)!
        func clients(_ scopes: [String: String]) -> [String: TokenRefreshClient] {
            rig.clients(
                scopes.mapValues { OAuthRefreshStrategy(endpoint: rig.endpoint, scope: $0, resource: resource) })
        }
        let both = clients(["read": "invoices:read", "write": "invoices:write"])
        let results = try await withThrowingTaskGroup(of: (String, AuthToken).self) { group in
            for index in 0..<100 {
                let key = index.isMultiple(of: 2) ? "read" : "write"
                let client = both[key]!
                group.addTask { (key, try await client.validToken()) }
            }
            return try await group.reduce(into: [(String, AuthToken)]()) { $0.append($1) }
        }
        for (key, token) in results {
            #expect(token.claims?.string("scope") == "invoices:\(key)", "a \(key) caller got another scope's token")
        }
        // The app's process and its widget's process both name the billing client "billing", with different scopes.
        let app = clients(["billing": "invoices:write"])
        let widget = clients(["billing": "invoices:read"])
        let written = try await app["billing"]!.validToken()
        #expect(written.claims?.string("scope") == "invoices:write")
        let read = try await widget["billing"]!.validToken()
        #expect(read.claims?.string("scope") == "invoices:read", "the read-only client got the read-write token")
        let sameToken = read.accessToken == written.accessToken
        #expect(!sameToken)
        #expect(await rig.server.reuseDetections == 0)
    }

    /// The worst moment for the rule above: Bob signs in in the app while the extension's refresh of Alice's session
    /// holds the store's lock, after the server rotated Alice's pair and before the extension stored it. The app's
    /// sign-in waits for the lock, or (its lock wait over) writes only over what it read. Bob's session survives,
    /// Alice's refresh tokens are never presented again, and the extension never takes Bob's session for Alice's.
    @Test(arguments: [false, true])
    func aSignInWhileAnotherProcessesRefreshHoldsTheLockIsNeverLostOrTakenForTheOldUsers(
        lockWaitEnds: Bool
    )
        async throws
    {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let wire = AnswerHoldingTransport(server)
        let store = LockingStore()
        let (extensionProcess, appProcess, alices) = try await Self.twoProcessesHoldingAlicesSession(
            server: server, transport: wire, store: store, clock: clock,
            configuration: .init(account: Self.account, backoff: .init(retries: 0)))
        // The extension's refresh: the server has rotated Alice's pair, the answer is not back, the lock is held.
        await wire.answerHold.arm()
        let refresh = Task { try await extensionProcess.validToken() }
        await wire.answerHold.waitUntilHeld()
        let bobs = await server.issueSession(userID: "bob")
        if lockWaitEnds { await store.endNextLockWait() }
        let signIn = Task { try await appProcess.signIn(with: bobs, userID: "bob") }
        if !lockWaitEnds { await store.waitForLockWaiters(1) } else { _ = try await signIn.value }
        await wire.answerHold.release()
        _ = try await signIn.value
        // Alice's caller gets Alice's token when her refresh was stored first; when Bob's sign-in was, the refresh
        // finds his session and fails. Never Bob's token.
        let answer = await refresh.result
        if lockWaitEnds {
            #expect(throws: TokenRefreshError.sessionChanged) { try answer.get() }
        } else {
            #expect(try answer.get().claims?.subject == "alice")
        }
        clock.advance(by: .seconds(7200))
        // The extension still holding Alice's session finds Bob's at its next refresh: that call fails (it was for
        // Alice's session), and the next one answers with Bob's token.
        if !lockWaitEnds {
            await #expect(throws: TokenRefreshError.sessionChanged) { try await extensionProcess.validToken() }
        }
        #expect(try await extensionProcess.validToken().claims?.subject == "bob")
        try await Self.expectBobsSessionKept(in: store, by: appProcess)
        let presented = await server.presentedRefreshTokens
        #expect(presented.filter { $0 == alices.refreshToken }.count == 1, "Alice's refresh token was presented again")
        #expect(await server.reuseDetections == 0)
        // Bob's session goes on: what is stored now is the live refresh token of Bob's family.
        guard case .found(let last) = await store.load(account: Self.account) else {
            Issue.record("no session stored")
            return
        }
        #expect(last.userID == "bob")
        #expect(await server.isActive(refreshToken: try #require(last.token.refreshToken)))
    }

    static func audience(of token: AuthToken) -> [String] { token.claims?.audience ?? [] }

    /// The user a state shows a session of, if any.
    static func user(in state: AuthState) -> String? {
        switch state {
        case .signedIn(let userID), .expired(let userID): userID
        case .signedOut, .loading, .unavailable: nil
        }
    }
}

/// Two API clients over one session, a server and a store that can fail.
private struct AudienceRig {
    let clock: ManualClock
    let server: AudienceAttackServer
    let store: FailingStore
    let endpoint: TokenEndpoint
    let clients: [String: TokenRefreshClient]
    var billing: TokenRefreshClient { clients["billing"]! }
    var profile: TokenRefreshClient { clients["profile"]! }

    /// Two API clients over an empty store, nobody signed in.
    static func empty() -> AudienceRig {
        let clock = ManualClock()
        let server = AudienceAttackServer(now: clock.wallClock)
        let store = FailingStore()
        let endpoint = TokenEndpoint(
            url: URL(string: "https://auth.example.com/oauth/token")!, client: OAuthClient(id: "app"),
            transport: server, now: clock.wallClock)
        return AudienceRig(
            clock: clock, server: server, store: store, endpoint: endpoint,
            clients: makeClients(store: store, endpoint: endpoint, clock: clock))
    }

    /// Two API clients with Alice signed in through the billing client.
    static func make() async throws -> AudienceRig {
        let rig = empty()
        let pair = await rig.server.signIn(userID: "alice", resource: AudienceAttacks.billing)
        try await rig.billing.signIn(with: pair, userID: "alice")
        return rig
    }

    static func makeClients(
        store: any TokenStore, endpoint: TokenEndpoint, clock: ManualClock
    ) -> [String: TokenRefreshClient] {
        TokenRefreshClient.sharingSession(
            audiences: [
                "billing": OAuthRefreshStrategy(endpoint: endpoint, resource: URL(string: AudienceAttacks.billing)!),
                "profile": OAuthRefreshStrategy(endpoint: endpoint, resource: URL(string: AudienceAttacks.profile)!),
            ], store: store,
            configuration: .init(account: AudienceAttacks.account, backoff: .init(retries: 0)), clock: clock,
            now: clock.wallClock, random: { 0.5 })
    }

    /// Clients of another process sharing the store.
    func moreClients() -> [String: TokenRefreshClient] {
        Self.makeClients(store: store, endpoint: endpoint, clock: clock)
    }

    /// Clients of another process sharing the store, with these strategies.
    func clients(_ strategies: [String: any RefreshStrategy]) -> [String: TokenRefreshClient] {
        TokenRefreshClient.sharingSession(
            audiences: strategies, store: store,
            configuration: .init(account: AudienceAttacks.account, backoff: .init(retries: 0)), clock: clock,
            now: clock.wallClock, random: { 0.5 })
    }

    func stored() async -> StoredSession? {
        if case .found(let session) = await store.load(account: AudienceAttacks.account) { return session }
        return nil
    }
}

/// An in-memory store whose next saves can be made to fail, as a full disk or a locked Keychain would, and whose next
/// read can be held after it has read (a slow disk, a Keychain under load) until the test releases it.
private actor FailingStore: TokenStore {
    let base = InMemoryTokenStore()
    private var failures = 0

    private var removalFailures = 0
    /// Holds the next read after it has read the store, until the test releases it.
    let loadHold = HoldPoint()

    /// Reads to let through after the next save lands before ``loadHold`` is armed (`nil`: none pending).
    private var readsBeforeHoldAfterSave: Int?

    func failNextSaves(_ count: Int) { failures = count }
    func failNextRemovals(_ count: Int) { removalFailures = count }
    /// Once the next save has landed, holds the read that follows the next `reads` reads (as ``loadHold`` does).
    func holdReadAfterNextSave(lettingThrough reads: Int) { readsBeforeHoldAfterSave = reads }

    func load(account: String) async -> TokenStoreRead {
        let read = await base.load(account: account)
        await loadHold.pass()
        return read
    }

    func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
        if failures > 0 {
            failures -= 1
            throw .writeFailed
        }
        try await base.save(session, account: account, condition: condition)
        if let reads = readsBeforeHoldAfterSave {
            readsBeforeHoldAfterSave = nil
            await loadHold.arm(lettingThrough: reads)
        }
    }

    func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        if removalFailures > 0 {
            removalFailures -= 1
            throw .writeFailed
        }
        try await base.remove(account: account, condition: condition)
    }
}

/// A token server with resource indicators and rotating refresh tokens with reuse detection, one family per sign-in;
/// access tokens carry the requested resource as `aud`. Its next request can be held on the wire.
private actor AudienceAttackServer: HTTPTransport {
    private struct Family {
        let userID: String
        var current: String
        var revoked = false
    }

    private let now: @Sendable () -> Date
    private var families: [Family] = []
    /// The family of every refresh token issued, current or rotated.
    private var familyOf: [String: Int] = [:]
    private var serial = 0
    /// Holds the next request on the wire, until the test releases it.
    let requestHold = HoldPoint()
    private(set) var refreshes: [String: Int] = [:]
    private(set) var reuseDetections = 0

    init(now: @escaping @Sendable () -> Date) { self.now = now }

    func signIn(userID: String, resource: String) -> AuthToken {
        let refresh = newRefreshToken()
        familyOf[refresh] = families.count
        families.append(Family(userID: userID, current: refresh))
        return AuthToken(
            accessToken: accessToken(userID: userID, audience: resource), refreshToken: refresh, receivedAt: now(),
            lifetime: 3600)
    }

    /// Whether `refreshToken` is the live refresh token of the newest session.
    func isCurrent(_ refreshToken: String?) -> Bool {
        guard let newest = families.last else { return false }
        return refreshToken != nil && refreshToken == newest.current && !newest.revoked
    }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let body = body ?? Data()
        TestSecrets.shared.registerCredentials(inRequestBody: body, origin: "AudienceAttackServer request")
        var form: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.replacingOccurrences(of: "+", with: " ").split(separator: "=", maxSplits: 1)
            guard parts.count == 2, let name = parts[0].removingPercentEncoding else { continue }
            form[name] = parts[1].removingPercentEncoding
        }
        await requestHold.pass()
        guard form["grant_type"] == "refresh_token", let presented = form["refresh_token"] else {
            return answer(400, ["error": "unsupported_grant_type"])
        }
        guard let index = familyOf[presented] else { return answer(400, ["error": "invalid_grant"]) }
        if presented != families[index].current {
            reuseDetections += 1
            families[index].revoked = true
        }
        guard !families[index].revoked else { return answer(400, ["error": "invalid_grant"]) }
        let next = newRefreshToken()
        familyOf[next] = index
        families[index].current = next
        let resource = form["resource"] ?? ""
        refreshes[resource, default: 0] += 1
        let user = families[index].userID
        return answer(
            200,
            [
                "access_token": accessToken(userID: user, audience: resource, scope: form["scope"]),
                "token_type": "Bearer",
                "expires_in": 3600, "refresh_token": next,
            ])
    }

    private func answer(_ status: Int, _ fields: [String: Any]) -> (HTTPResponse, Data) {
        let data = (try? JSONSerialization.data(withJSONObject: fields)) ?? Data()
        TestSecrets.shared.registerTokens(inResponseBody: data, origin: "AudienceAttackServer response")
        var headers = HTTPFields()
        headers[.contentType] = "application/json"
        return (HTTPResponse(status: .init(code: status), headerFields: headers), data)
    }

    private func newRefreshToken() -> String {
        serial += 1
        return "rt-\(serial)-\(UUID().uuidString)"
    }

    private func accessToken(userID: String, audience: String, scope: String? = nil) -> String {
        serial += 1
        let issuedAt = Int(now().timeIntervalSince1970)
        var claims: [String: Any] = ["sub": userID, "aud": audience, "iat": issuedAt, "exp": issuedAt + 3600]
        if let scope { claims["scope"] = scope }
        let payload = (try? JSONSerialization.data(withJSONObject: claims, options: .sortedKeys)) ?? Data()
        let token = [Data(#"{"alg":"HS256","typ":"JWT"}"#.utf8), payload, Data("sig-\(serial)".utf8)]
            .map {
                $0.base64EncodedString().replacingOccurrences(of: "+", with: "-")
                    .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            }
            .joined(separator: ".")
        TestSecrets.shared.register(AuthToken(accessToken: token, receivedAt: now()), origin: "AudienceAttackServer")
        return token
    }
}

/// A transport in front of a server whose next answer is held after the server has answered (the refresh token is
/// rotated there) and before the client sees it.
private actor AnswerHoldingTransport: HTTPTransport {
    let server: SimulatedTokenServer
    /// Holds the next answer after the server gave it, until the test releases it.
    let answerHold = HoldPoint()

    init(_ server: SimulatedTokenServer) { self.server = server }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        let answer = try await server.send(request, body: body)
        await answerHold.pass()
        return answer
    }
}

/// An in-memory store with the exclusive access a store shared by processes has: one holder per account, the others
/// wait in order (or, when the test says so, give up at once as at the end of a lock wait). A nested call in the
/// holder's task runs at once.
private actor LockingStore: TokenStore {
    @TaskLocal static var held = false

    let base = InMemoryTokenStore()
    private var locked = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    private var waiterWatchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    private var endsNextLockWait = false

    func endNextLockWait() { endsNextLockWait = true }

    func waitForLockWaiters(_ count: Int) async {
        if waiters.count >= count { return }
        await withCheckedContinuation { waiterWatchers.append((count, $0)) }
    }

    func load(account: String) async -> TokenStoreRead { await base.load(account: account) }

    func save(_ session: StoredSession, account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await base.save(session, account: account, condition: condition)
    }

    func remove(account: String, condition: WriteCondition) async throws(PersistenceError) {
        try await base.remove(account: account, condition: condition)
    }

    nonisolated func withExclusiveAccess<T: Sendable>(
        account: String, _ body: @Sendable () async throws -> T
    ) async throws -> T {
        if Self.held { return try await body() }
        try await acquire()
        do {
            let result = try await Self.$held.withValue(true) { try await body() }
            await release()
            return result
        } catch {
            await release()
            throw error
        }
    }

    private func acquire() async throws(PersistenceError) {
        guard locked else {
            locked = true
            return
        }
        if endsNextLockWait {
            endsNextLockWait = false
            throw .lockTimedOut
        }
        await withCheckedContinuation { continuation in
            waiters.append(continuation)
            let ready = waiterWatchers.filter { $0.count <= waiters.count }
            waiterWatchers.removeAll { $0.count <= waiters.count }
            for watcher in ready { watcher.continuation.resume() }
        }
    }

    private func release() {
        if waiters.isEmpty {
            locked = false
        } else {
            waiters.removeFirst().resume()  // the lock passes on, still held
        }
    }
}

/// One place where the next pass waits until the test releases it: arm it, wait until a pass is held there, act at that
/// instant, release.
private actor HoldPoint {
    private var armed = false
    /// Passes to let go on before the one that waits.
    private var passesBeforeHold = 0
    /// Where the held pass waits; a new closed one after each release.
    private var gate = HoldGate()

    /// The next ``pass()`` after `passes` more waits for ``release()``.
    func arm(lettingThrough passes: Int = 0) {
        armed = true
        passesBeforeHold = passes
    }

    /// Returns once a pass is held here.
    func waitUntilHeld() async {
        await gate.waitForArrivals(1)
    }

    /// Lets the held pass go on.
    func release() {
        let held = gate
        gate = HoldGate()
        held.open()
    }

    /// Called where the hold applies: waits for ``release()`` when armed, else returns at once.
    func pass() async {
        guard armed else { return }
        guard passesBeforeHold == 0 else {
            passesBeforeHold -= 1
            return
        }
        armed = false
        await gate.wait()
    }
}
