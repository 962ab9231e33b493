import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitCompatibility
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

/// Every public error type reads as a user-facing English sentence through `localizedDescription`, never
/// Foundation's "The operation could not be completed" fallback, and never with token text in it.
@Suite(.logLeakCheck()) struct LocalizedErrorTests {
    /// A transport error whose own description carries a token, as a careless HTTP client's might.
    struct LeakyError: Error, CustomStringConvertible {
        let description = "failed sending Bearer access-token-in-cause-7f3a"
    }

    static let secrets = ["access-token-in-cause-7f3a", "refresh-token-in-detail-91cc"]

    static func check(_ error: any Error, sourceLocation: SourceLocation = #_sourceLocation) {
        let text = error.localizedDescription
        #expect(!text.isEmpty, sourceLocation: sourceLocation)
        #expect(!text.contains("operation could not be completed"), "\(error)", sourceLocation: sourceLocation)
        #expect(!text.contains("error "), "\(error)", sourceLocation: sourceLocation)
        #expect(text == (error as? any LocalizedError)?.errorDescription, sourceLocation: sourceLocation)
        for secret in secrets { #expect(!text.contains(secret), sourceLocation: sourceLocation) }
    }

    @Test func tokenRefreshErrorsReadAsSentences() {
        let leaky = LeakyError()
        let errors: [TokenRefreshError] = [
            .refreshTokenRejected, .configuration.with(oauthError: "invalid_client"), .transient, .timeout,
            .rateLimited.with(retryAfter: .seconds(30)), .signedOut, .sessionExpired, .missingRefreshToken,
            .storageUnavailable.with(underlying: PersistenceError.unavailable.with(detail: Self.secrets[1])),
            .cancelled, .malformedResponse.with(status: 200), .unexpectedResponse, .signInRejected,
            .invalidArgument, .serverRefused.with(status: 500), .sessionInvalidated,
            .transient.with(underlying: leaky).with(connectivityFailure: true),
        ]
        for error in errors { Self.check(error) }
        #expect(
            TokenRefreshError.refreshTokenRejected.localizedDescription
                == "Your session has ended. Please sign in again.")
        #expect(
            TokenRefreshError.transient.with(connectivityFailure: true).localizedDescription
                == "The server could not be reached. Check your connection and try again.")
        #expect(TokenRefreshError.transient.localizedDescription != TokenRefreshError.timeout.localizedDescription)
    }

    @Test func networkRetryErrorsReadAsSentences() {
        let errors: [NetworkRetryError] = [
            .unauthorizedAfterRefresh, .unauthorized, .insufficientScope, .insufficientUserAuthentication,
            .transport(LeakyError()), .timedOut.with(underlying: LeakyError()), .cannotConnect, .invalidResponse,
            .insecureTransport, .originNotAllowed, .invalidRequest, .noToken, .tooManyRedirects, .invalidRedirect,
            .bodyTooLarge, .bodyNotReplayable,
        ]
        for error in errors { Self.check(error) }
        #expect(NetworkRetryError.insufficientScope.localizedDescription == "You do not have permission to do this.")
    }

    @Test func persistenceErrorsLeaveTheirDetailOut() {
        let errors: [PersistenceError] = [
            .unavailable, .conflict, .corrupt, .unsupportedFormatVersion, .permissionsTooWide, .wrongKey, .writeFailed,
            .readFailed, .lockFailed, .lockTimedOut, .notAFile, .migrationFailed,
        ]
        for error in errors { Self.check(error.with(detail: "/var/lib/app " + Self.secrets[1])) }
        #expect(
            PersistenceError.unavailable.localizedDescription
                == "Your saved session cannot be read right now. Unlock the device and try again.")
    }

    @Test func authTokenErrorsReadAsSentences() {
        let errors: [AuthTokenError] = [
            .emptyAccessToken, .malformedJWT(.payload, .notJSON), .missingExpiration, .invalidClaim("exp"), .expired,
            .notYetValid, .issuedInFuture, .emptyRefreshToken, .missingRefreshToken, .expirationUnknown,
        ]
        for error in errors { Self.check(error) }
        #expect(AuthTokenError.expired.localizedDescription == "Your session has expired. Please sign in again.")
    }

    @Test func theRemainingPublicErrorsReadAsSentences() async throws {
        let exhausted = await #expect(throws: MockTransport.ScriptExhausted.self) {
            try await MockTransport().send(HTTPRequest(url: URL(string: "https://api.example.com/")!), body: nil)
        }
        let server = SimulatedTokenServer(now: { Date(timeIntervalSince1970: 1_800_000_000) })
        await server.enqueue(.connectionError)
        let dropped = await #expect(throws: SimulatedTokenServer.ConnectionError.self) {
            var request = HTTPRequest(method: .post, url: URL(string: "https://auth.example.com/oauth/token")!)
            request.headerFields[.contentType] = "application/x-www-form-urlencoded"
            _ = try await server.send(request, body: Data("grant_type=client_credentials".utf8))
        }
        let errors: [any Error] = [
            try #require(exhausted), try #require(dropped),
            APIError.unauthorized, APIError.invalidResponse, APIError.httpStatus(503),
            SetCookie.Refusal.malformed, SetCookie.Refusal.tooLarge, SetCookie.Refusal.invalidCharacters,
            SetCookie.Refusal.foreignDomain, SetCookie.Refusal.secureOverInsecureTransport,
        ]
        for error in errors { Self.check(error) }
    }

    /// A log line says why a refresh failed: the transport's error kind and reason, the HTTP client's error type,
    /// a URL or POSIX error's code; never the cause's own text (it may carry a URL or a header).
    @Test func theDescriptionNamesTheTransportCauseButNotItsText() {
        let offline = TokenRefreshError.transient
            .with(underlying: NetworkRetryError.cannotConnect.with(underlying: URLError(.cannotFindHost)))
            .with(connectivityFailure: true)
        #expect(
            "\(offline)"
                == "TokenRefreshError.transient(connectivity, cause: NetworkRetryError.cannotConnect, cannotResolveHost, "
                + "URLError \(URLError.Code.cannotFindHost.rawValue))")
        let leaky = TokenRefreshError.transient.with(underlying: NetworkRetryError.transport(LeakyError()))
        #expect("\(leaky)" == "TokenRefreshError.transient(cause: NetworkRetryError.transport, LeakyError)")
        let posix = TokenRefreshError.transient.with(underlying: POSIXError(.ECONNREFUSED))
        #expect("\(posix)" == "TokenRefreshError.transient(cause: POSIXError \(POSIXErrorCode.ECONNREFUSED.rawValue))")
        let url = TokenRefreshError.transient.with(
            underlying: URLError(
                .timedOut, userInfo: [NSURLErrorFailingURLErrorKey: URL(string: "https://x/?t=\(Self.secrets[0])")!]))
        #expect(!"\(url)".contains(Self.secrets[0]))
        for error in [offline, leaky, posix, url] {
            for secret in Self.secrets { #expect(!"\(error)".contains(secret)) }
        }
    }

    /// The failure a user meets first: signing in against a server that refuses the password.
    @Test func aRejectedSignInReadsAsASentence() async throws {
        let clock = ManualClock()
        let server = SimulatedTokenServer(now: clock.wallClock)
        let endpoint = TokenEndpoint(
            url: URL(string: "https://auth.example.com/oauth/token")!, client: OAuthClient(id: "app"),
            transport: server, now: clock.wallClock)
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), clock: clock, now: clock.wallClock)
        let error = await #expect(throws: TokenRefreshError.self) {
            try await client.signIn(.password(username: "ada", password: "not-the-password-4d2", at: endpoint))
        }
        let text = try #require(error).localizedDescription
        #expect(text == "The sign-in was not accepted. Check your details and try again.")
        #expect(!text.contains("not-the-password-4d2"))
    }
}
