import AuthToken
import Foundation
import HTTPTypes
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// What a sign-in leaves behind when it fails: the state, the error's reason, and the store.
@Suite(.logLeakCheck()) struct SignInOutcomeTests {
    func passwordClient(
        store: any TokenStore = InMemoryTokenStore(), configuration: TokenRefreshClient.Configuration = .init()
    )
        -> (TokenRefreshClient, TokenEndpoint, ManualClock)
    {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "app"), transport: server)
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store, configuration: configuration,
            clock: clock, now: clock.wallClock)
        return (client, endpoint, clock)
    }

    // MARK: Defect 3: the state after a failed sign-in

    @Test func aFailedFirstSignInOverAnEmptyStoreLeavesTheClientSignedOut() async throws {
        let (client, endpoint, _) = passwordClient()
        #expect(client.currentState == .loading)
        await #expect(throws: TokenRefreshError.signInRejected) {
            try await client.signIn(.password(username: "alice", password: "wrong-password-x3", at: endpoint))
        }
        #expect(client.currentState == .signedOut)
    }

    @Test func aFailedSignInOverAStoredSessionKeepsThatSession() async throws {
        let store = InMemoryTokenStore()
        let stored = TestSecrets.shared.register(
            AuthToken(
                accessToken: "stored-before-access-x4", refreshToken: "stored-before-refresh-x4",
                receivedAt: ManualClock().date, lifetime: 3600))
        try await store.save(
            StoredSession(token: stored, userID: "bob", generation: 3), account: account, condition: .always)
        let (client, endpoint, _) = passwordClient(store: store)
        await #expect(throws: TokenRefreshError.signInRejected) {
            try await client.signIn(.password(username: "alice", password: "wrong-password-x3", at: endpoint))
        }
        #expect(client.currentState == .signedIn(userID: "bob"))
        #expect(client.currentToken?.accessToken == stored.accessToken)
    }

    // MARK: Defect 4: the server's reason survives classification

    @Test func aRejectedSignInKeepsTheOAuthCode() async throws {
        let (client, endpoint, _) = passwordClient()
        let error = await refreshError {
            try await client.signIn(.password(username: "alice", password: "wrong-password-x3", at: endpoint))
        }
        #expect(error == .signInRejected)
        #expect(error?.oauthError == "invalid_grant")
        #expect(error?.status == 400)
    }

    /// Answers servers are known to give to a password grant, and what each must mean to an app.
    struct KnownAnswer: Sendable, CustomTestStringConvertible {
        let server: String
        let status: Int
        let body: String
        let expected: TokenRefreshError
        let code: String?
        var testDescription: String { "\(server): \(status) \(code ?? "no code")" }
    }

    static let passwordAnswers: [KnownAnswer] = [
        // django-oauth-toolkit (oauthlib): wrong password.
        .init(
            server: "django-oauth-toolkit", status: 400,
            body: #"{"error": "invalid_grant", "error_description": "Invalid credentials given."}"#,
            expected: .signInRejected, code: "invalid_grant"),
        // authlib: wrong password is an invalid_request.
        .init(
            server: "authlib", status: 400,
            body:
                #"{"error": "invalid_request", "error_description": "Invalid \"username\" or \"password\" in request."}"#,
            expected: .signInRejected, code: "invalid_request"),
        // Keycloak: wrong password, with 401.
        .init(
            server: "Keycloak", status: 401,
            body: #"{"error":"invalid_grant","error_description":"Invalid user credentials"}"#,
            expected: .signInRejected, code: "invalid_grant"),
        // Auth0: wrong password, with 403.
        .init(
            server: "Auth0", status: 403,
            body: #"{"error":"invalid_grant","error_description":"Wrong email or password."}"#,
            expected: .signInRejected, code: "invalid_grant"),
        // Auth0: too many attempts.
        .init(
            server: "Auth0", status: 429,
            body: #"{"error":"too_many_attempts","error_description":"Your account has been blocked."}"#,
            expected: .transient, code: "too_many_attempts"),
        // Wrong client secret (RFC 6749 section 5.2).
        .init(
            server: "django-oauth-toolkit", status: 401, body: #"{"error": "invalid_client"}"#,
            expected: .configuration, code: "invalid_client"),
        // A client not allowed the password grant.
        .init(
            server: "django-oauth-toolkit", status: 400, body: #"{"error": "unauthorized_client"}"#,
            expected: .configuration, code: "unauthorized_client"),
        .init(
            server: "any", status: 400, body: #"{"error": "unsupported_grant_type"}"#,
            expected: .configuration, code: "unsupported_grant_type"),
        .init(
            server: "any", status: 503, body: #"{"error": "temporarily_unavailable"}"#,
            expected: .transient, code: "temporarily_unavailable"),
    ]

    @Test(arguments: passwordAnswers)
    func aPasswordSignInAnswerIsClassifiedWithItsCode(_ answer: KnownAnswer) async throws {
        let transport = MockTransport(script: [
            .response(
                status: .init(code: answer.status), headers: [.contentType: "application/json"],
                body: Data(answer.body.utf8))
        ])
        let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "app"), transport: transport)
        let client = TokenRefreshClient(strategy: OAuthRefreshStrategy(endpoint: endpoint))
        let error = await refreshError {
            try await client.signIn(.password(username: "alice", password: "known-answer-password", at: endpoint))
        }
        #expect(error == answer.expected)
        #expect(error?.oauthError == answer.code)
        #expect(error?.status == answer.status)
        #expect(client.currentState == .signedOut)
    }

    @Test func anInvalidRequestOutsideAPasswordSignInStaysAConfigurationError() async throws {
        let transport = MockTransport(script: [
            .response(status: .badRequest, body: Data(#"{"error": "invalid_request"}"#.utf8)),
            .response(status: .badRequest, body: Data(#"{"error": "invalid_request"}"#.utf8)),
        ])
        let endpoint = TokenEndpoint(url: tokenURL, client: OAuthClient(id: "app"), transport: transport)
        let client = TokenRefreshClient(strategy: OAuthRefreshStrategy(endpoint: endpoint))
        let pkce = PKCE.generate()
        let code = await refreshError {
            try await client.signIn(
                .authorizationCode(
                    "authorization-code-x5", redirectURI: URL(string: "app:/cb")!, pkce: pkce, at: endpoint))
        }
        #expect(code == .configuration)
        #expect(code?.oauthError == "invalid_request")
        let refresh = await refreshError { try await client.refreshToken("refresh-token-for-x5-test") }
        #expect(refresh == .configuration)
        #expect(refresh?.oauthError == "invalid_request")
    }

    // MARK: Defect 7: a sign-in that cannot be stored

    @Test func aSignInThatCannotBeStoredThrowsAndKeepsNothing() async throws {
        let store = FlakyStore()
        await store.setFailSaves(true)
        let (client, endpoint, _) = passwordClient(store: store)
        let events = client.events()
        let error = await refreshError {
            try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        }
        #expect(error == .storageUnavailable)
        #expect((error?.underlying as? PersistenceError) == .writeFailed)
        #expect(error?.description.contains("PersistenceError.writeFailed") == true)
        #expect(client.currentState == .signedOut)
        #expect(client.currentToken == nil)
        #expect(await refreshError { try await client.validToken() } == .signedOut)
        var kinds: [AuthEvent.Kind] = []
        for await event in events {
            kinds.append(event.kind)
            if event.kind == .persistenceFailed { break }
        }
        #expect(kinds == [.persistenceFailed])
    }

    @Test func aSignInIntoAWideDirectoryWithOtherFilesNamesThePathAndModes() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokenkit-\(UUID())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        try Data("keep".utf8).write(to: directory.appendingPathComponent("other-file.txt"))
        let (client, endpoint, _) = passwordClient(store: FileTokenStore(directory: directory))
        let error = await refreshError {
            try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        }
        #expect(error == .storageUnavailable)
        let text = error?.description ?? ""
        #expect(text.contains(directory.standardizedFileURL.path))
        #expect(text.contains("mode 755"))
        #expect(text.contains("needs 700"))
        #expect(client.currentState == .signedOut)
    }

    @Test func anAppThatOptsIntoMemoryOnlySessionsKeepsTheSessionInMemory() async throws {
        let store = FlakyStore()
        await store.setFailSaves(true)
        let (client, endpoint, _) = passwordClient(
            store: store, configuration: .init(allowsMemoryOnlySessions: true))
        let token = try await client.signIn(.password(username: "alice", password: "correct horse", at: endpoint))
        #expect(client.currentState == .signedIn(userID: "alice"))
        #expect(try await client.validToken() == token)
    }
}
