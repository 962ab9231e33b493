import AuthToken
import Foundation
import Testing
import TokenKitLogCheck

@testable import TokenKitSignIn

@Suite(.logLeakCheck())
struct SignInErrorTests {
    @Test(arguments: SignInError.everyCode)
    func everyErrorHasAnEnglishAndAJapaneseMessage(_ error: SignInError) {
        #expect(!error.englishDescription.isEmpty)
        let japanese = SignInError.messages.text(error.messageKey, english: "", in: .japanese)
        #expect(!japanese.isEmpty, "no Japanese message for \(error)")
        #expect(
            error.localizedDescription == SignInError.messages.text(error.messageKey, english: error.englishDescription)
        )
    }

    @Test func theServersCodeIsKeptButNeverItsText() {
        let error = SignInError.authorizationFailed.with(oauthError: "login_required")
        #expect(error == .authorizationFailed)
        #expect(error.oauthError == "login_required")
        #expect("\(error)" == "SignInError.authorizationFailed(login_required)")
    }
}
