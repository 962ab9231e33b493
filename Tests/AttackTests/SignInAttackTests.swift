import Foundation
import SignInTestSupport
import Testing
import TokenKitLogCheck
import TokenKitSignIn
import TokenKitTesting
import TokenRefresh

/// What an attacker tried against the browser sign-in: a redirect meant for another sign-in or forged outright, a
/// redirect replayed, an answer from another server (mix-up), an ID token replayed, meant for another client, or
/// paired with a swapped access token. Each must end with its own error, no code exchanged where the redirect was
/// the fault, and no session stored.
@Suite(.logLeakCheck())
struct SignInAttackTests {
    /// Signs in through a provider that misbehaves as `misbehave` says, and checks that the sign-in ends with
    /// `error` and leaves neither a stored session nor a profile.
    @discardableResult
    private static func signIn(
        refusedWith error: SignInError, _ misbehave: (inout FakeOpenIDProvider.Behaviour) -> Void
    ) async -> SignInRig {
        let clock = ManualClock()
        var behaviour = FakeOpenIDProvider.Behaviour()
        misbehave(&behaviour)
        let rig = SignInRig(now: clock.wallClock, clock: clock, behaviour: behaviour)
        await #expect(throws: error) { try await rig.flow.signIn(using: rig.browser) }
        #expect(!(await rig.hasStoredSession()))
        #expect(rig.tokens.currentUser == nil)
        return rig
    }

    @Test func aRedirectWithAnotherFlightsStateIsRefused() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let victims = try await rig.flow.start()
        let attackers = try await rig.flow.start()
        // The attacker's own code, under the attacker's state, delivered to the victim's sign-in.
        let redirect = rig.provider.approve(attackers.url)

        await #expect(throws: SignInError.stateMismatch) { try await rig.flow.finish(redirect: redirect, for: victims) }
        #expect(rig.codeExchanges == 0)
        #expect(!(await rig.hasStoredSession()))
    }

    @Test func aForgedRedirectWithAStateNeverIssuedIsRefused() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let request = try await rig.flow.start()
        let forged = FakeOpenIDProvider.url(
            rig.redirectURI.absoluteString,
            [("code", "code-of-the-attacker"), ("state", "guessed-state"), ("iss", FakeOpenIDProvider.issuer)])
        await #expect(throws: SignInError.stateMismatch) { try await rig.flow.finish(redirect: forged, for: request) }
        let stateless = FakeOpenIDProvider.url(
            rig.redirectURI.absoluteString, [("code", "code-of-the-attacker"), ("iss", FakeOpenIDProvider.issuer)])
        await #expect(throws: SignInError.stateMismatch) {
            try await rig.flow.finish(redirect: stateless, for: request)
        }
        #expect(rig.codeExchanges == 0)
    }

    @Test func aRedirectReplayedAfterSuccessIsRefused() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let request = try await rig.flow.start()
        let redirect = rig.provider.approve(request.url)
        try await rig.flow.finish(redirect: redirect, for: request)
        try await rig.tokens.signOut()

        await #expect(throws: SignInError.unknownFlight) { try await rig.flow.finish(redirect: redirect, for: request) }
        #expect(rig.codeExchanges == 1)
        #expect(!(await rig.hasStoredSession()))
    }

    @Test func aRedirectReplayedAfterAFailedExchangeIsRefused() async throws {
        let clock = ManualClock()
        var behaviour = FakeOpenIDProvider.Behaviour()
        behaviour.idTokenNonce = "nonce-of-another-sign-in"
        let rig = SignInRig(now: clock.wallClock, clock: clock, behaviour: behaviour)
        let request = try await rig.flow.start()
        let redirect = rig.provider.approve(request.url)
        await #expect(throws: SignInError.nonceMismatch) { try await rig.flow.finish(redirect: redirect, for: request) }
        await #expect(throws: SignInError.unknownFlight) { try await rig.flow.finish(redirect: redirect, for: request) }
        #expect(rig.codeExchanges == 1)
    }

    @Test func aRedirectFromAnotherIssuerIsRefusedBeforeTheCodeIsSent() async throws {
        let rig = await Self.signIn(refusedWith: .issuerMismatch) { $0.redirectIssuer = "https://attacker.example.com" }
        #expect(rig.codeExchanges == 0)
    }

    @Test func aRedirectWithoutIssFromAServerThatPromisedItIsRefused() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let request = try await rig.flow.start()
        let redirect = rig.provider.approve(request.url)
        var components = URLComponents(url: redirect, resolvingAgainstBaseURL: false)!
        components.queryItems = components.queryItems?.filter { $0.name != "iss" }
        await #expect(throws: SignInError.issuerMismatch) {
            try await rig.flow.finish(redirect: components.url!, for: request)
        }
        #expect(rig.codeExchanges == 0)
    }

    @Test func aRedirectToAnotherPlaceIsRefused() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let request = try await rig.flow.start()
        let redirect = rig.provider.approve(request.url)
        let elsewhere = URL(
            string: redirect.absoluteString.replacingOccurrences(
                of: "com.example.app:/oauth/callback", with: "https://attacker.example.com/cb"))!
        await #expect(throws: SignInError.foreignRedirect) {
            try await rig.flow.finish(redirect: elsewhere, for: request)
        }
        #expect(rig.codeExchanges == 0)
    }

    @Test func aRedirectWithASecondCodeInjectedIsRefused() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let request = try await rig.flow.start()
        let redirect = rig.provider.approve(request.url)
        let injected = URL(string: redirect.absoluteString + "&code=code-of-the-attacker")!
        await #expect(throws: SignInError.foreignRedirect) {
            try await rig.flow.finish(redirect: injected, for: request)
        }
        #expect(rig.codeExchanges == 0)
    }

    @Test func anIDTokenWithAnotherSignInsNonceIsRefused() async throws {
        await Self.signIn(refusedWith: .nonceMismatch) { $0.idTokenNonce = "nonce-of-a-replayed-id-token" }
    }

    @Test func anIDTokenIssuedForAnotherClientIsRefused() async throws {
        await Self.signIn(refusedWith: .idTokenRejected) { $0.idTokenAudience = ["another-client"] }
    }

    @Test func anIDTokenForSeveralClientsWithoutAuthorizedPartyIsRefused() async throws {
        await Self.signIn(refusedWith: .idTokenRejected) {
            $0.idTokenAudience = [FakeOpenIDProvider.clientID, "another-client"]
        }
    }

    @Test func anIDTokenAuthorizedForAnotherPartyIsRefused() async throws {
        await Self.signIn(refusedWith: .idTokenRejected) { $0.authorizedParty = "another-client" }
    }

    @Test func anIDTokenFromAnotherIssuerIsRefused() async throws {
        await Self.signIn(refusedWith: .idTokenRejected) { $0.idTokenIssuer = "https://attacker.example.com" }
    }

    @Test func anAccessTokenSwappedUnderTheIDTokenIsRefused() async throws {
        await Self.signIn(refusedWith: .idTokenRejected) {
            $0.idTokenAtHash = FakeOpenIDProvider.halfHash("access-token-of-another-user")
        }
    }

    @Test func aStolenCodeWithoutTheVerifierGetsNoTokens() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let request = try await rig.flow.start()
        let redirect = rig.provider.approve(request.url)
        let code = try #require(FakeOpenIDProvider.query(redirect)["code"])
        // The attacker holds the code but not the verifier, which never left the flow.
        await #expect(throws: TokenRefreshError.signInRejected) {
            try await rig.endpoint.requestToken(
                [
                    ("grant_type", "authorization_code"), ("code", code),
                    ("redirect_uri", rig.redirectURI.absoluteString),
                    ("code_verifier", String(repeating: "a", count: 43)),
                ], isSignIn: true)
        }
    }
}
