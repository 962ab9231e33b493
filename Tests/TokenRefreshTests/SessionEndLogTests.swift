import AuthToken
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

/// The lines a session's end logs name why it ended, never whose it was: a user ID is often an e-mail address.
@Suite(.logLeakCheck()) struct SessionEndLogTests {
    enum Ending: String, CaseIterable, CustomStringConvertible {
        case signedOutInTheSDK, revokedOnTheServer
        var description: String { rawValue }
    }

    @Test(arguments: Ending.allCases)
    func theEndOfASessionIsLoggedWithoutItsUserID(_ ending: Ending) async throws {
        let userID = "ada.lovelace@example.com"
        let capture = LogCapture()
        let clock = ManualClock()
        let sdk = MockSessionProvider(now: clock.wallClock)
        let client = TokenRefreshClient(
            strategy: sdk.strategy, configuration: .init(backoff: .init(retries: 0)), clock: clock,
            now: clock.wallClock, logger: capture.logger())
        sdk.signIn(.init(id: userID))
        _ = try await client.validToken()
        switch ending {
        case .signedOutInTheSDK: sdk.signOut()
        case .revokedOnTheServer: sdk.revoke()
        }
        clock.advance(by: .seconds(120))
        await #expect(throws: TokenRefreshError.self) { try await client.validToken() }
        #expect(client.currentState == .signedOut)
        let ended = capture.lines.filter { $0.contains("session ended") }
        #expect(ended.count == 1)
        #expect(ended.first?.contains(ending == .signedOutInTheSDK ? "providerSignedOut" : "revoked") == true)
        #expect(!capture.lines.contains { $0.contains(userID) }, "a log line names the user")
    }
}
