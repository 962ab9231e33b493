import Foundation
import Testing
import TokenKitLogCheck
import TokenVerification

/// A backend's errors read as sentences too, never Foundation's "The operation could not be completed".
@Suite(.logLeakCheck()) struct TokenVerificationErrorLocalizedTests {
    @Test func everyErrorReadsAsASentenceWithoutTheClaimName() {
        let errors: [TokenVerificationError] = [
            .malformedToken, .tokenTooLong, .duplicateJSONName, .unsignedToken, .algorithmNotAllowed,
            .unsupportedCriticalHeader, .untrustedKeyReference, .invalidKeyID, .typeMismatch,
            .missingClaim("org_secret_claim"), .invalidClaim("org_secret_claim"), .expired, .notYetValid,
            .issuedInFuture, .tokenTooOld, .issuerMismatch, .audienceMismatch, .partyNotAllowed, .missingKeyID,
            .unknownKeyID, .keyAlgorithmMismatch, .weakKey, .invalidSignature, .keySetUnavailable, .keySetInvalid,
            .keySetTooLarge, .tooManyKeys, .fetchTimedOut, .missingAuthorization,
        ]
        for error in errors {
            let text = error.localizedDescription
            #expect(text == error.safeDescription + ".")
            #expect(!text.contains("operation could not be completed"))
            #expect(!text.contains("org_secret_claim"))
        }
        #expect(TokenVerificationError.expired.localizedDescription == "The token has expired.")
    }
}
