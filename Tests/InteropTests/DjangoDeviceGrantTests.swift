import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitSignIn
import TokenKitTesting
import TokenRefresh

extension Interop {
    /// `DeviceAuthorization` against django-oauth-toolkit's device authorization grant (RFC 8628): the device asks
    /// for a code, polls on a manual clock (DOT answers `authorization_pending`), alice approves or denies through
    /// DOT's confirmation form with her Django session, and the next poll gets the tokens or `access_denied`.
    /// DOT never answers `slow_down`; that rule is covered by the in-process provider's tests.
    @Suite(.logLeakCheck(), .enabled(if: ProcessInfo.processInfo.environment["TOKENKIT_INTEROP_URL"] != nil))
    struct DjangoDeviceGrant {
        static let clientID = "interop-device"

        static func device(_ server: InteropServer, clock: ManualClock) -> (DeviceAuthorization, TokenRefreshClient) {
            let endpoint = TokenEndpoint(
                url: server.tokenURL, client: OAuthClient(id: clientID), transport: RecordingTransport(server.transport)
            )
            let device = DeviceAuthorization(
                url: server.baseURL.appending(path: "o/device-authorization/"), tokenEndpoint: endpoint, clock: clock)
            return (device, TokenRefreshClient(strategy: OAuthRefreshStrategy(endpoint: endpoint)))
        }

        /// Alice answers DOT's confirmation form for `code`.
        static func answer(_ browser: DjangoSessionStack, _ code: DeviceAuthorization.Code, accept: Bool) async throws {
            // The user code page first: it binds the grant to alice.
            var enter = browser.server.request(.post, "/o/device/")
            enter.headerFields[.contentType] = "application/x-www-form-urlencoded"
            let (entered, _) = try await browser.api.executeWithAutoRetry(
                enter, body: Data("user_code=\(code.userCode)".utf8))
            #expect(entered.status.code == 302, "DOT took the user code")
            var request = browser.server.request(.post, "/o/device-confirm/\(clientID)/\(code.userCode)")
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            let (response, _) = try await browser.api.executeWithAutoRetry(
                request, body: Data("action=\(accept ? "accept" : "deny")".utf8))
            #expect(response.status.code == 302, "DOT took the answer")
        }

        /// Lets the poller sleep, then moves the clock by one interval.
        static func tick(_ clock: ManualClock, _ code: DeviceAuthorization.Code) async {
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(code.interval))
        }

        @Test func pendingThenApprovalStoresTheSessionAndDenialEndsWithAccessDenied() async throws {
            let server = try await InteropServer.prepared()
            try await server.deleteDjangoSessions()
            let browser = DjangoSessionStack(server, store: InMemoryTokenStore(), followsRedirects: false)
            TestSecrets.shared.register(try await browser.signIn().accessToken, as: .credential)

            // Pending twice, then approved.
            let clock = ManualClock()
            let (device, tokens) = Self.device(server, clock: clock)
            let code = try await device.start()
            #expect(code.verificationURI.absoluteString == "http://127.0.0.1/o/device/")
            #expect(code.interval == 5)
            let signIn = Task { try await device.signIn(code, into: tokens) }
            await Self.tick(clock, code)
            await Self.tick(clock, code)
            await clock.waitForSleepers(count: 1)
            try await Self.answer(browser, code, accept: true)
            clock.advance(by: .seconds(code.interval))
            let token = try await signIn.value
            TestSecrets.shared.register(token)
            #expect(token.refreshToken != nil)
            #expect(tokens.currentState.hasSession)

            // Denied.
            let (deniedDevice, deniedTokens) = Self.device(server, clock: clock)
            let deniedCode = try await deniedDevice.start()
            let denied = Task { try await deniedDevice.signIn(deniedCode, into: deniedTokens) }
            await clock.waitForSleepers(count: 1)
            try await Self.answer(browser, deniedCode, accept: false)
            clock.advance(by: .seconds(deniedCode.interval))
            await #expect(throws: SignInError.accessDenied) { try await denied.value }
            #expect(deniedTokens.currentToken == nil)
        }

        @Test func aCodeNobodyApprovesExpiresOnTheClientsClock() async throws {
            let server = try await InteropServer.prepared()
            let clock = ManualClock()
            let (device, tokens) = Self.device(server, clock: clock)
            let code = try await device.start()
            let signIn = Task { try await device.signIn(code, into: tokens) }
            // DOT gives the code minutes of life; the manual clock jumps through them at the first wait, so the
            // device polls DOT once (still pending) and then gives up on its own clock, without a poll per interval.
            await clock.waitForSleepers(count: 1)
            clock.advance(by: .seconds(code.expiresIn))
            await #expect(throws: SignInError.expired) { try await signIn.value }
            #expect(tokens.currentToken == nil)
        }
    }
}
