import AuthToken
import Foundation
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

@Suite(.logLeakCheck()) struct RedactionTests {
    @Test func noTokenOrSecretAppearsInAnyErrorOrEventDescription() async throws {
        var secrets: [String] = []
        var texts: [String] = []
        let events: AsyncStream<AuthEvent>
        do {
            let store = FlakyStore()
            let rig = try await Rig.make(server: .init(clientSecret: "client-secret-value"), store: store)
            events = rig.client.events()
            secrets += [rig.initial.accessToken, rig.initial.refreshToken!, "client-secret-value", "correct horse"]
            await store.setFailSaves(true)
            let refreshed = try await rig.client.validToken()
            secrets += [refreshed.accessToken, refreshed.refreshToken!]
            await rig.server.enqueue(.serviceUnavailable(retryAfter: 60))
            if let error = await refreshError({
                try await rig.client.refreshToken(afterRejectionOf: refreshed.accessToken)
            }) {
                texts += [error.description, String(reflecting: error)]
            }
            rig.clock.advance(by: .seconds(60))
            await rig.server.enqueue(.invalidGrant)
            if let error = await refreshError({
                try await rig.client.refreshToken(afterRejectionOf: refreshed.accessToken)
            }) {
                texts += [error.description, String(reflecting: error)]
            }
            let grant = SignInGrant.password(username: "alice", password: "correct horse", at: rig.endpoint)
            texts += [grant.description, rig.endpoint.client.description, String(reflecting: rig.endpoint.client)]
            let response = TokenResponse(accessToken: refreshed.accessToken, refreshToken: refreshed.refreshToken)
            texts += [response.description, String(reflecting: response)]
            var dumped = ""
            dump(response, to: &dumped)
            texts.append(dumped)
            let pkce = PKCE.generate()
            secrets.append(pkce.verifier)
            texts.append(pkce.description)
        }
        let all = await drain(events)
        #expect(all.count >= 3)
        texts += all.map(\.description)
        texts += all.compactMap(\.error).map { String(reflecting: $0) }
        for text in texts {
            for secret in secrets {
                #expect(
                    !text.contains(secret),
                    "a description contains a secret (fingerprint \(AuthToken.fingerprint(secret)))")
            }
        }
    }

    /// `dump(client)` used to print the rejected refresh tokens the actor kept.
    @Test func dumpingClientsAfterARejectedRefreshShowsNoToken() async throws {
        let rig = try await Rig.make()
        var seen = [rig.initial.accessToken, rig.initial.refreshToken!]
        let refreshed = try await rig.client.validToken()
        seen += [refreshed.accessToken, refreshed.refreshToken!]
        rig.clock.advance(by: .seconds(7200))
        await rig.server.enqueue(.invalidGrant)
        #expect(await refreshError { try await rig.client.validToken() } == .refreshTokenRejected)
        // Rejected again from memory, without a request: the client still recognises the dead token.
        #expect(
            await refreshError { try await rig.client.refreshToken(refreshed.refreshToken!) } == .refreshTokenRejected)

        let authenticated = AuthenticatedClient(
            transport: rig.server, tokenProvider: rig.client,
            configuration: .init(allowedOrigins: [HTTPOrigin(string: "https://127.0.0.1")!]))
        var dumped = ""
        dump(rig.client, to: &dumped)
        dump(authenticated, to: &dumped)
        dumped += String(reflecting: rig.client) + "\n" + String(reflecting: authenticated)
        #expect(dumped.contains("signedOut"))
        #expect(dumped.contains("allowedOrigins"))
        for secret in seen {
            #expect(!dumped.contains(secret), "the dump shows a token (fingerprint \(AuthToken.fingerprint(secret)))")
        }
    }
}
