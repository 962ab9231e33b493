import AuthToken
import Foundation
import SignInTestSupport
import Testing
import TokenKitLogCheck
import TokenKitSignIn
import TokenKitTesting
import TokenRefresh

@Suite(.logLeakCheck())
struct DeviceAuthorizationTests {
    /// A device sign-in against the fake provider, on `clock`.
    private static func device(
        _ rig: SignInRig, clock: ManualClock
    ) -> DeviceAuthorization {
        DeviceAuthorization(
            url: rig.provider.server.deviceAuthorizationEndpoint!, tokenEndpoint: rig.endpoint,
            scopes: ["openid", "profile"], server: rig.provider.server, clock: clock)
    }

    /// Lets the poller sleep, then moves the clock by `seconds`.
    private static func tick(_ clock: ManualClock, _ seconds: Int64) async {
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(seconds))
    }

    @Test func theUserCodeAndVerificationURIGoToTheAppAndTheDeviceCodeStaysInside() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let code = try await Self.device(rig, clock: clock).start()
        #expect(code.userCode == "WDJB-MJHT")
        #expect(code.verificationURI.absoluteString == "https://id.example.com/activate")
        #expect(code.verificationURIComplete?.absoluteString == "https://id.example.com/activate?user_code=WDJB-MJHT")
        #expect(code.interval == 5)
        #expect(code.expiresIn == 60)
        #expect(!"\(code)".contains("device-"))
    }

    @Test func pendingThenApprovalPollsAtTheIntervalAndStoresTheSession() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        rig.provider.update { $0.deviceAnswers = [.pending, .pending, .approve] }
        let device = Self.device(rig, clock: clock)
        let code = try await device.start()
        let signIn = Task { try await device.signIn(code, into: rig.tokens) }

        await Self.tick(clock, 4)
        #expect(rig.provider.snapshot.devicePolls == 0, "polled before the interval")
        clock.advance(by: .seconds(1))
        for _ in 0..<2 { await Self.tick(clock, 5) }
        _ = try await signIn.value
        #expect(rig.provider.snapshot.devicePolls == 3)
        #expect(await rig.hasStoredSession())
        #expect(rig.tokens.currentUser?.id == "user-ada")
    }

    @Test func theVerifiedIDTokensClaimsBecomeTheUser() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        rig.provider.update { $0.deviceAnswers = [.approve] }
        let device = Self.device(rig, clock: clock)
        let code = try await device.start()
        let signIn = Task { try await device.signIn(code, into: rig.tokens) }
        await Self.tick(clock, 5)
        _ = try await signIn.value
        #expect(rig.tokens.currentUser?.id == "user-ada")
        #expect(rig.tokens.currentUser?.email == "ada@example.com")
    }

    @Test func anIDTokenSignedByAKeyTheServerNeverPublishedIsRefusedAndNothingIsStored() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        rig.provider.update {
            $0.deviceAnswers = [.approve]
            $0.behaviour.signsIDTokensWithUnpublishedKey = true
        }
        let device = Self.device(rig, clock: clock)
        let code = try await device.start()
        let signIn = Task { try await device.signIn(code, into: rig.tokens) }
        await Self.tick(clock, 5)
        await #expect(throws: SignInError.idTokenRejected) { try await signIn.value }
        #expect(!(await rig.hasStoredSession()))
        #expect(rig.tokens.currentUser == nil)
    }

    /// Without the server's metadata the ID token cannot be verified: the session is stored, its claims are not
    /// used.
    @Test func withoutTheServerAnUnverifiedIDTokenSuppliesNoProfile() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        rig.provider.update {
            $0.deviceAnswers = [.approve]
            $0.behaviour.signsIDTokensWithUnpublishedKey = true
        }
        let device = DeviceAuthorization(
            url: rig.provider.server.deviceAuthorizationEndpoint!, tokenEndpoint: rig.endpoint,
            scopes: ["openid", "profile"], clock: clock)
        let code = try await device.start()
        let signIn = Task { try await device.signIn(code, into: rig.tokens) }
        await Self.tick(clock, 5)
        _ = try await signIn.value
        #expect(await rig.hasStoredSession())
        #expect(rig.tokens.currentUser?.email == nil)
        #expect(rig.tokens.currentUser?.name == nil)
    }

    @Test func slowDownAddsFiveSecondsToEveryLaterInterval() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        rig.provider.update { $0.deviceAnswers = [.slowDown, .pending, .approve] }
        let device = Self.device(rig, clock: clock)
        let code = try await device.start()
        let signIn = Task { try await device.signIn(code, into: rig.tokens) }

        await Self.tick(clock, 5)
        // Now 10 seconds between polls: 9 are not enough.
        await Self.tick(clock, 9)
        #expect(rig.provider.snapshot.devicePolls == 1)
        clock.advance(by: .seconds(1))
        await Self.tick(clock, 10)
        _ = try await signIn.value
        #expect(rig.provider.snapshot.devicePolls == 3)
    }

    @Test func aCodeThatOutlivesItsExpiryEndsAsExpiredWithoutASession() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let device = Self.device(rig, clock: clock)
        let code = try await device.start()
        let signIn = Task { try await device.signIn(code, into: rig.tokens) }
        // 60 s of life at 5 s intervals: 12 polls, all pending, then expired without a 13th.
        for _ in 0..<12 { await Self.tick(clock, 5) }
        await #expect(throws: SignInError.expired) { try await signIn.value }
        #expect(rig.provider.snapshot.devicePolls == 12)
        #expect(!(await rig.hasStoredSession()))
    }

    @Test func aDeniedDeviceSignInIsAccessDenied() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        rig.provider.update { $0.deviceAnswers = [.pending, .deny] }
        let device = Self.device(rig, clock: clock)
        let code = try await device.start()
        let signIn = Task { try await device.signIn(code, into: rig.tokens) }
        for _ in 0..<2 { await Self.tick(clock, 5) }
        await #expect(throws: SignInError.accessDenied) { try await signIn.value }
        #expect(!(await rig.hasStoredSession()))
    }

    @Test func cancellingThePollStopsIt() async throws {
        let clock = ManualClock()
        let rig = SignInRig(now: clock.wallClock, clock: clock)
        let device = Self.device(rig, clock: clock)
        let code = try await device.start()
        let signIn = Task { try await device.signIn(code, into: rig.tokens) }
        await clock.waitForSleepers(count: 1)
        signIn.cancel()
        await #expect(throws: SignInError.cancelled) { try await signIn.value }
        #expect(rig.provider.snapshot.devicePolls == 0)
    }
}
