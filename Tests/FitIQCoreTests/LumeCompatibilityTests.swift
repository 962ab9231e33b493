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

    @Test func theLumeShapeIsExactlyWhatLumesOldStructWrites() throws {
        let expiry = Date(timeIntervalSince1970: 1_800_000_900)
        let token = TestSecrets.shared.register(
            AuthToken(
                accessToken: "lume-shape-access", refreshToken: "lume-shape-refresh", scope: "read",
                receivedAt: expiry.addingTimeInterval(-900), lifetime: 900))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.userInfo[AuthToken.lumeShapeKey] = true
        let data = try encoder.encode(token)

        let old = OldLumeAuthToken(
            accessToken: "lume-shape-access", refreshToken: "lume-shape-refresh", expiresAt: expiry)
        #expect(data == (try encoder.encode(old)), "byte for byte what Lume's JSONEncoder wrote")
        #expect(try JSONDecoder().decode(OldLumeAuthToken.self, from: data) == old)
        // TokenKit reads it back as the same token (scope aside, which the old shape has no room for).
        let back = try JSONDecoder().decode(AuthToken.self, from: data)
        #expect(back.expiresAt == expiry && back.accessToken == token.accessToken)
    }

    @Test func theLumeShapeRefusesATokenItsOldReadersCouldNotRead() throws {
        let encoder = JSONEncoder()
        encoder.userInfo[AuthToken.lumeShapeKey] = true
        let withoutRefresh = AuthToken(
            accessToken: "lume-shape-no-refresh", refreshToken: nil, expiresAt: Date(timeIntervalSince1970: 5))
        let withoutExpiry = AuthToken(
            accessToken: "lume-shape-no-expiry", refreshToken: "lume-shape-refresh-2", expiresAt: nil)
        for token in [withoutRefresh, withoutExpiry] {
            TestSecrets.shared.register(token)
            #expect {
                try encoder.encode(token)
            } throws: { error in
                guard case EncodingError.invalidValue(_, let context) = error else { return false }
                return context.debugDescription.hasPrefix("Lume's token shape needs")
            }
        }
    }
}
