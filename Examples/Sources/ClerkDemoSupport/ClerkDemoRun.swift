public import DemoAppSupport
import DemoAuthServer
import DietBackend
import Foundation
import HTTPTypes
import HTTPTypesFoundation
import Logging
import Synchronization
import TokenKit
import TokenVerification

/// The clerk-demo scenario: the demo server's Clerk-like issuer and the diet backend in-process, a simulated
/// Clerk SDK, and the app's state loop over `states()`, through launch, sign-in, requests across an expiry, two
/// key rotations, a withdrawn key (a 401 cured by a forced refresh), offline and back, a revocation on the server,
/// sign-out and account deletion. Demo time moves forward by hand ("61 s later"), so it runs in a few seconds.
public struct ClerkDemoRun: Sendable {
    let report: DemoReport
    let email: String
    let password: String
    let timeout: Int

    /// A run.
    ///
    /// - Parameters:
    ///   - report: Where the steps go.
    ///   - email: The demo user's e-mail address.
    ///   - password: The password.
    ///   - timeout: Seconds a request waits.
    public init(report: DemoReport, email: String, password: String, timeout: Int) {
        self.report = report
        self.email = email
        self.password = password
        self.timeout = timeout
    }

    static let quiet = Logger(label: "clerk-demo", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Runs the scenario; failed expectations are counted in the report.
    ///
    /// - Throws: When a server cannot start or a step fails in a way the scenario did not expect.
    public func run() async throws {
        let time = DemoTime()
        let server = DemoAuthServer(now: time.wallClock, logger: Self.quiet)
        let issuerURL = try await server.start()
        let issuer = server.sessionIssuer
        // The backend finds the keys as the seed's does with Clerk: the issuer's discovery document names the JWKS.
        let backend = DietBackend(
            configuration: .init(issuer: issuer.issuer, authorizedParties: [issuer.configuration.authorizedParty]),
            keySource: RemoteJWKSSource(
                location: .openIDDiscovery(issuer: issuerURL), clock: time.clock, logger: Self.quiet),
            now: time.wallClock, logger: Self.quiet,
            onAccountDeleted: { userID in issuer.deleteUser(userID) })
        do {
            let backendURL = try await backend.start()
            report.step("servers", "Clerk-like issuer at \(issuerURL.absoluteString), diet backend at \(backendURL)")
            try await scenario(time: time, server: server, backend: backend, backendURL: backendURL)
        } catch {
            await backend.stop()
            await server.stop()
            throw error
        }
        await backend.stop()
        await server.stop()
    }

    // The steps read top to bottom, as the printed lines do.
    // swift-format-ignore
    private func scenario(time: DemoTime, server: DemoAuthServer, backend: DietBackend, backendURL: URL) async throws {
        let issuer = server.sessionIssuer
        let network = NetworkSwitch(DemoTransport.urlSession(timeout: timeout))
        let clerk = SimulatedClerk(frontendAPI: server.baseURL ?? backendURL, transport: network, now: time.wallClock)
        let app = ClerkApp(
            strategy: clerk.strategy, backendURL: backendURL, transport: network, now: time.wallClock,
            signOutSDK: { try await clerk.signOut() })
        let states = StateLog(app.states(), report: report)
        let events = EventLog(app.auth.events(), report: report)
        defer {
            states.task.cancel()
            events.task.cancel()
        }

        // 1. Launch: Clerk's load() finds no session.
        let launched = await app.checkSession()
        report.expect(
            launched == .signedOut, "launch", "no stored Clerk session; state \(launched)",
            proves: "restoreSession(validatingWithProvider:) asked the SDK and published signedOut")

        // 2. Sign-in through the SDK.
        let user = try await clerk.signIn(identifier: email, password: password)
        let signedIn = await app.checkSession()
        report.expect(
            signedIn == .signedIn(userID: user.id) && app.auth.currentUser?.sessionID == clerk.sessionID,
            "sign-in", "Clerk signed in \(user.id) (session \(clerk.sessionID ?? "none")); state \(signedIn)",
            proves: "the SDK's session JWT (sid, azp) became TokenKit's signed-in state and user")
        report.step("greeting", "Hello, \(user.firstName ?? "Friend")! (CommuteTimely's fallback for a user with no name)")

        // 3. The backend verifies the Bearer against the issuer's JWKS.
        let (created, _) = try await app.request(.post, "/users/me")
        let (me, meBody) = try await app.request(.get, "/users/me")
        let identity = (try? JSONDecoder().decode([String: String].self, from: meBody)) ?? [:]
        report.expect(
            created.status == .created && me.status == .ok && identity["userId"] == user.id
                && identity["sessionId"] == clerk.sessionID,
            "backend", "POST /users/me \(created.status.code), GET /users/me \(me.status.code) -> userId \(identity["userId"] ?? "none"), sessionId \(identity["sessionId"] ?? "none")",
            proves: "RS256 verified through the JWKS that discovery named; req.auth = {userId: sub, sessionId: sid}")
        let firstToken = app.auth.currentToken?.accessToken ?? ""

        // 4. Sixty-one seconds later the token has expired: five concurrent requests, one SDK call.
        time.advance(by: .seconds(61))
        let asked = clerk.tokenRequests
        let statuses = try await concurrently(5) { _ in try await app.request(.get, "/food-logs").0.status.code }
        report.expect(
            statuses.allSatisfy { $0 == 200 } && clerk.tokenRequests - asked == 1,
            "expiry", "61 s later, 5 concurrent GET /food-logs: \(statuses.map(String.init).joined(separator: ",")); SDK asked \(clerk.tokenRequests - asked) time(s)",
            proves: "one getToken() for every caller, the new token on every request")

        // 5. Key rotation: the next key was published before it signs; the old one stays until its tokens expire.
        let rejectedBefore = backend.stats.rejectedTotal
        let fetchesBefore = backend.jwksFetches ?? 0
        let oldKey = issuer.currentKeyID
        let newKey = try issuer.rotateKey()
        let (oldKeyStatus, _) = try await app.request(.get, "/food-logs")
        time.advance(by: .seconds(61))
        let (newKeyStatus, _) = try await app.request(.get, "/food-logs")
        let signedWith = Self.keyID(of: app.auth.currentToken?.accessToken)
        report.expect(
            oldKeyStatus.status == .ok && newKeyStatus.status == .ok && signedWith == newKey
                && backend.stats.rejectedTotal == rejectedBefore && backend.jwksFetches == fetchesBefore
                && !issuer.publishedKeyIDs.contains(oldKey),
            "rotation", "key \(oldKey) -> \(newKey): old-key token \(oldKeyStatus.status.code), new-key token \(newKeyStatus.status.code); JWKS fetches +\((backend.jwksFetches ?? 0) - fetchesBefore); old key published: \(issuer.publishedKeyIDs.contains(oldKey))",
            proves: "no failed request: the new key was already in the cached JWKS, the old one left after its last token expired")

        // 6. A second rotation, mid-run: the backend's cached set predates the new key, so it refetches once, and
        // the token the app holds, signed by the old key, keeps verifying until it expires.
        let servedBefore = issuer.stats.jwksServed
        let heldToken = app.auth.currentToken?.accessToken
        let previousKey = issuer.currentKeyID
        let thirdKey = try issuer.rotateKey()
        let (heldStatus, _) = try await app.request(.get, "/food-logs")
        let heldKept = app.auth.currentToken?.accessToken == heldToken && Self.keyID(of: heldToken) == previousKey
        let servedWhileHeld = issuer.stats.jwksServed - servedBefore
        time.advance(by: .seconds(61))
        let (thirdStatus, _) = try await app.request(.get, "/food-logs")
        let (againStatus, _) = try await app.request(.get, "/food-logs")
        let newKeyToken = Self.keyID(of: app.auth.currentToken?.accessToken) == thirdKey
        let refetches = issuer.stats.jwksServed - servedBefore
        report.expect(
            heldStatus.status == .ok && heldKept && servedWhileHeld == 0 && thirdStatus.status == .ok
                && againStatus.status == .ok && newKeyToken && refetches == 1
                && backend.jwksFetches == fetchesBefore + 1 && backend.stats.rejectedTotal == rejectedBefore
                && !issuer.publishedKeyIDs.contains(previousKey),
            "rotation 2", "key \(previousKey) -> \(thirdKey): the held old-key token \(heldStatus.status.code) (JWKS served +\(servedWhileHeld)); 61 s later, new-key token \(thirdStatus.status.code), \(againStatus.status.code); issuer served the JWKS +\(refetches) time(s); old key published: \(issuer.publishedKeyIDs.contains(previousKey))",
            proves: "the unknown kid cost exactly one refetch (counted by the issuer); the old key's token verified until it expired, then its key left the JWKS")

        // 7. A leaked key is withdrawn at once: the cached token is refused, TokenKit forces a refresh.
        let skipped = clerk.skipCacheRequests
        let withdrawn = try issuer.withdrawCurrentKey()
        await backend.reloadKeys()
        let rejectedBeforeWithdrawal = backend.stats.rejectedTotal
        let (cured, _) = try await app.request(.get, "/food-logs")
        report.expect(
            cured.status == .ok && clerk.skipCacheRequests - skipped == 1
                && backend.stats.rejectedTotal - rejectedBeforeWithdrawal == 1
                && Self.keyID(of: app.auth.currentToken?.accessToken) == issuer.currentKeyID,
            "401", "key \(withdrawn) withdrawn: one 401, getToken(skipCache: true) \(clerk.skipCacheRequests - skipped) time(s), then \(cured.status.code)",
            proves: "a 401 is answered by one forced refresh that skips the SDK's cache, and the retry succeeds")

        // 8. Offline: the token expires with no network; the session is kept as expired.
        network.isOffline = true
        time.advance(by: .seconds(61))
        var offlineError = "none"
        do { _ = try await app.request(.get, "/food-logs") } catch { offlineError = Self.describe(error) }
        let offlineState = app.auth.currentState
        report.expect(
            offlineState == .expired(lastUserID: user.id) && app.auth.isOfflineNow, "offline",
            "request failed (\(offlineError)); state \(offlineState)",
            proves: "no sign-out while offline: the session is kept as expired (canOperateOffline)")
        network.isOffline = false
        let restored = await app.networkRestored()
        let (afterRestore, _) = try await app.request(.get, "/food-logs")
        report.expect(
            restored == .signedIn(userID: user.id) && afterRestore.status == .ok, "online",
            "networkRestored() -> \(restored); GET /food-logs \(afterRestore.status.code)",
            proves: "handleNetworkRestore(): the SDK was asked again and the session renewed")

        // 9. The session is revoked on the server (the dashboard): the next token request fails.
        let signOutsBeforeRevocation = events.signOuts
        issuer.revokeSessions(userID: user.id)
        time.advance(by: .seconds(61))
        var revokedError = "none"
        do { _ = try await app.request(.get, "/food-logs") } catch { revokedError = DemoFailure.describe(error) }
        let revokedReason = await events.lastSignOutReason(after: signOutsBeforeRevocation)
        report.expect(
            app.auth.currentState == .signedOut && revokedReason == .revoked && clerk.sessionID == nil, "revoked",
            "request failed (\(revokedError)); state \(app.auth.currentState), reason \(revokedReason.map { "\($0)" } ?? "none")",
            proves: "a revoked SDK session ends TokenKit's session once, with reason revoked")

        // 10. Sign in again, then sign out.
        try await clerk.signIn(identifier: email, password: password)
        await app.checkSession()
        let signOutsBefore = events.signOuts
        try await app.signOut()
        let signOutReason = await events.lastSignOutReason(after: signOutsBefore)
        report.expect(
            app.auth.currentState == .signedOut && signOutReason == .userAction && clerk.sessionID == nil,
            "sign-out", "state \(app.auth.currentState), reason \(signOutReason.map { "\($0)" } ?? "none")",
            proves: "the SDK's session ended on the server, TokenKit's locally")

        // 11. Sign in again and delete the account.
        try await clerk.signIn(identifier: email, password: password)
        await app.checkSession()
        let deletionsBefore = events.signOuts
        try await app.deleteAccount()
        let deletedReason = await events.lastSignOutReason(after: deletionsBefore)
        report.expect(
            app.auth.currentState == .signedOut && deletedReason == .accountDeleted
                && backend.stats.accountsDeleted == 1,
            "delete", "DELETE /users/me accepted; state \(app.auth.currentState), reason \(deletedReason.map { "\($0)" } ?? "none")",
            proves: "deleteAccount sent the authenticated DELETE and ended the session with reason accountDeleted")

        // 12. The backend refuses what it must.
        let raw = DemoTransport.urlSession(timeout: timeout)
        let foreign = SessionIssuer(
            configuration: .init(issuer: "https://clerk.someone-else.test"), now: time.wallClock, logger: Self.quiet)
        let stranger = foreign.startSession(userID: user.id, email: email)
        let foreignToken = try foreign.sessionToken(sessionID: stranger.sessionID, clientToken: stranger.clientToken)
        var refusals: [String] = []
        let cases: [(String, String?)] = [
            ("no token", nil), ("expired token", firstToken), ("foreign issuer", foreignToken),
        ]
        for (label, token) in cases {
            var request = HTTPRequest(method: .get, url: backendURL.appendingPathComponent("users/me"))
            if let token { request.headerFields[.authorization] = "Bearer \(token)" }
            let (response, body) = try await raw.send(request, body: nil)
            let challenge = response.headerFields[.wwwAuthenticate] != nil
            refusals.append("\(label) \(response.status.code)\(challenge ? "+challenge" : "") \(String(decoding: body, as: UTF8.self))")
        }
        report.expect(
            refusals.allSatisfy { $0.contains(" 401+challenge ") }, "refusals", refusals.joined(separator: "; "),
            proves: "missing, expired and foreign tokens get 401 with the seed's bodies and an RFC 6750 challenge")

        // 13. The state loop saw each state once, in order.
        let expected: [AuthState] = [
            .loading, .signedOut, .signedIn(userID: user.id), .expired(lastUserID: user.id), .signedIn(userID: user.id),
            .signedOut, .signedIn(userID: user.id), .signedOut, .signedIn(userID: user.id), .signedOut,
        ]
        let seen = await states.wait(for: expected.count)
        report.expect(
            seen == expected, "state loop", seen.map(\.description).joined(separator: " > "),
            proves: "the RootView loop over states() saw launch, sign-in, offline, back, revoke, sign-out, delete")

        report.summary([
            ("SDK getToken() calls", "\(clerk.tokenRequests)"),
            ("  of which skipCache", "\(clerk.skipCacheRequests)"),
            ("session JWTs minted", "\(issuer.stats.tokensIssued)"),
            ("backend requests verified", "\(backend.stats.authenticated)"),
            ("backend requests refused", "\(backend.stats.rejectedTotal)"),
            ("backend JWKS fetches", "\(backend.jwksFetches ?? 0)"),
            ("issuer JWKS / discovery served", "\(issuer.stats.jwksServed) / \(issuer.stats.discoveryServed)"),
            ("key rotations", "\(issuer.stats.rotations)"),
            ("demo time moved forward", "\(time.shift.components.seconds) s"),
        ])
    }

    /// One line for an error; the airplane-mode `URLError` by its name.
    static func describe(_ error: any Error) -> String {
        if let error = error as? TokenRefreshError, error.isConnectivityFailure {
            return "TokenRefreshError.transient(connectivity): not connected to the internet"
        }
        if let error = error as? URLError, error.code == .notConnectedToInternet {
            return "not connected to the internet"
        }
        return DemoFailure.describe(error)
    }

    /// The `kid` in a JWT's header.
    static func keyID(of token: String?) -> String? {
        guard let header = token?.split(separator: ".").first else { return nil }
        var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64) else { return nil }
        return (try? JSONDecoder().decode([String: String].self, from: data))?["kid"]
    }

    private func concurrently<T: Sendable>(
        _ count: Int, _ body: @escaping @Sendable (Int) async throws -> T
    ) async throws -> [T] {
        try await withThrowingTaskGroup(of: T.self) { group in
            for index in 0..<count { group.addTask { try await body(index) } }
            var results: [T] = []
            for try await result in group { results.append(result) }
            return results
        }
    }
}
