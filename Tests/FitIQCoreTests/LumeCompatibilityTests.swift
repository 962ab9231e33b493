import Foundation
import Testing
import TokenKit
import TokenKitLogCheck
import TokenKitTesting

// Lume's widget, or an older build sharing the Keychain item, still reads the token with Lume's old struct
// (`OldLumeAuthToken`, declared beside Lume's call sites as Lume wrote it).

@Suite(.logLeakCheck()) struct LumeCompatibilityTests {
    static let lumeJSON = Data(
        (#"{"accessToken":"lume-compat-access-token","refreshToken":"lume-compat-refresh-token","#
            + #""expiresAt":821000000}"#).utf8)

    @Test func theSameLumeJSONDecodedTwiceIsTheSameToken() throws {
        let first = try JSONDecoder().decode(AuthToken.self, from: Self.lumeJSON)
        let second = try JSONDecoder().decode(AuthToken.self, from: Self.lumeJSON)
        #expect(first == second)
        #expect(Set([first, second]).count == 1)
        #expect(first.expiresAt == Date(timeIntervalSinceReferenceDate: 821_000_000))
    }

    @Test func lumesOldStructReadsWhatTokenKitEncodes() throws {
        let received = Date(timeIntervalSince1970: 1_800_000_000)
        let token = TestSecrets.shared.register(
            AuthToken.withParsedExpiration(
                accessToken: "lume-compat-fresh-access", refreshToken: "lume-compat-fresh-refresh", expiresIn: 900,
                receivedAt: received))
        let data = try JSONEncoder().encode(token)

        let old = try JSONDecoder().decode(OldLumeAuthToken.self, from: data)
        #expect(old.accessToken == token.accessToken && old.refreshToken == token.refreshToken)
        #expect(old.expiresAt == received.addingTimeInterval(900))

        // TokenKit reads its own output back whole.
        let decoded = try JSONDecoder().decode(AuthToken.self, from: data)
        #expect(decoded == token)
        #expect(decoded.receivedAt == received && decoded.lifetime == 900)
    }
}
