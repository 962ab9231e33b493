import AuthToken
import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting

@Suite(.logLeakCheck()) struct LogLeakSearchTests {
    private static let secret = "s3cret refresh/token+value&more"

    private func search(_ values: [String], kind: TestSecrets.Kind = .refreshToken) -> LogLeakSearch {
        let secrets = TestSecrets()
        for value in values { secrets.register(value, as: kind) }
        return LogLeakSearch(secrets: secrets.all)
    }

    @Test(arguments: [
        "debug token=\(secret)",
        "debug body=s3cret%20refresh%2Ftoken%2Bvalue%26more",
        "debug form=s3cret+refresh%2Ftoken%2Bvalue%26more",
        #"debug json={"refresh_token":"s3cret refresh\/token+value&more"}"#,
        "debug body=s3cret%20refresh%2ftoken%2bvalue%26more",
        "debug url=https://example.com/cb?t=s3cret%20refresh/token+value&more",
        "debug encoded=\(Data(secret.utf8).base64EncodedString())",
        "trace body=" + secret.utf8.map { String(format: "%02x", $0) }.joined(separator: " "),
        "trace body=" + secret.utf8.map { String(format: "%02x", $0) }.joined(),
    ])
    func aSecretIsFoundAsItIsAndEncoded(_ line: String) throws {
        let leaks = search([Self.secret]).leaks(in: line)
        let leak = try #require(leaks.first)
        #expect(leaks.count == 1)
        #expect(leak.secret.kind == .refreshToken)
        #expect(leak.redactedLine.contains("<refresh token \(AuthToken.fingerprint(Self.secret))>"))
        #expect(!leak.redactedLine.contains("s3cret"))
        #expect(!leak.description.contains("s3cret"), "a report must not print the secret it found")
    }

    @Test func aSearchExtendedWithLaterSecretsFindsTheEarlierAndTheLaterOnes() throws {
        let secrets = TestSecrets()
        secrets.register(Self.secret, as: .refreshToken)
        let first = LogLeakSearch(secrets: secrets.all)
        secrets.register("later-access-token-value", as: .accessToken)
        let extended = first.extended(to: secrets.all)
        let encoded = Data(Self.secret.utf8).base64EncodedString()
        #expect(try #require(extended.leaks(in: "a \(encoded) b").first).secret.kind == .refreshToken)
        #expect(try #require(extended.leaks(in: "x later-access-token-value y").first).secret.kind == .accessToken)
        #expect(first.leaks(in: "x later-access-token-value y").isEmpty)
    }

    @Test func theRedactedLineHidesTheSecretWhateverItsNormalization() throws {
        // "é" as e + combining accent: a character-based replace would not find the bytes the search found.
        let decomposed = "secret-cafe\u{301}-value"
        let leak = try #require(search([decomposed]).leaks(in: "x \(decomposed) y").first)
        #expect(!leak.redactedLine.contains("secret-cafe"))
        #expect(leak.redactedLine.hasPrefix("x <refresh token ") && leak.redactedLine.hasSuffix("> y"))
    }

    @Test func overlappingSecretsAreRedactedTogether() throws {
        let search = search(["overlap-secret-one", "secret-one-and-more"])
        let leaks = search.leaks(in: "a overlap-secret-one-and-more b")
        #expect(leaks.count == 2)
        let line = try #require(leaks.first).redactedLine
        #expect(line.hasPrefix("a <refresh token ") && line.hasSuffix("> b"))
        #expect(!line.contains("secret") && !line.contains("more"))
    }

    @Test func aPasswordIsNeverFingerprinted() throws {
        let search = search(["correct-horse-password"], kind: .password)
        let leak = try #require(search.leaks(in: "p=correct-horse-password").first)
        #expect(leak.redactedLine == "p=<password>")
        #expect(!leak.description.contains(AuthToken.fingerprint("correct-horse-password")))
    }

    @Test func aFingerprintOrAPrefixIsNoLeak() {
        let search = search([Self.secret])
        let lines = [
            "trace refreshing token=\(AuthToken.fingerprint(Self.secret))",
            "trace prefix=\(Self.secret.prefix(12))",
            "trace nothing at all",
            "",
        ]
        #expect(search.leaks(in: lines).isEmpty)
    }

    @Test func secretsSharingTheirFirstBytesAreToldApart() {
        let first = "eyJhbGciOiJIUzI1NiJ9.first-payload.sig"
        let second = "eyJhbGciOiJIUzI1NiJ9.second-payload.sig"
        let search = search([first, second], kind: .accessToken)
        let leaks = search.leaks(in: "info a=\(second) b=eyJhbGciOiJIUzI1NiJ9.third")
        #expect(leaks.map(\.secret.value) == [second])
    }

    @Test func aSecretAtTheVeryEndOrStartOfALineIsFound() {
        let search = search(["edge-of-line-secret"])
        #expect(search.leaks(in: "edge-of-line-secret").count == 1)
        #expect(search.leaks(in: "x edge-of-line-secret").count == 1)
        #expect(search.leaks(in: "edge-of-line-secre").isEmpty)
    }

    @Test func aSecretTooShortIsNotSearchedButListed() {
        let secrets = TestSecrets()
        secrets.register("abc", as: .password)
        secrets.register("long-enough-password", as: .password)
        #expect(secrets.tooShort.map(\.value) == ["abc"])
        #expect(LogLeakSearch(secrets: secrets.all).leaks(in: "abc abc abc").isEmpty)
    }

    @Test func tenThousandSecretsAreSearchedInOnePassPerLine() {
        let values = (0..<10_000).map { "refresh-token-\($0)-padding" }
        let search = search(values)
        let lines = (0..<1000).map { "debug request=\($0) status=200" } + ["warning leaked=refresh-token-4242-padding"]
        #expect(search.leaks(in: lines).map(\.secret.value) == ["refresh-token-4242-padding"])
    }
}
