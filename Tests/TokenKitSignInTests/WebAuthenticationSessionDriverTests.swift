import Foundation
import Testing
import TokenKitLogCheck
import TokenKitSignIn

/// What the Apple user agent does around `ASWebAuthenticationSession`, on any platform: the session is a fake that
/// answers as the system documents (the callback URL, or `canceledLogin` when closed or cancelled).
@Suite(.logLeakCheck()) @MainActor struct WebAuthenticationSessionDriverTests {
    /// A system session that answers what the test scripts, and records what it was asked.
    final class FakeSession: WebAuthenticationSessionHandle {
        enum Behaviour { case answer(WebAuthenticationAnswer), refuseToStart, waitForCancel }
        let behaviour: Behaviour
        let completion: @Sendable (WebAuthenticationAnswer) -> Void
        var started = false
        var cancelled = false

        init(_ behaviour: Behaviour, completion: @escaping @Sendable (WebAuthenticationAnswer) -> Void) {
            self.behaviour = behaviour
            self.completion = completion
        }

        func start() -> Bool {
            started = true
            switch behaviour {
            case .answer(let answer):
                completion(answer)
                return true
            case .refuseToStart: return false
            case .waitForCancel: return true
            }
        }

        func cancel() {
            cancelled = true
            completion(.cancelled)
        }
    }

    /// The sessions a driver made, with what each was made for.
    final class Sessions {
        var made: [(callback: WebAuthenticationCallback, ephemeral: Bool, session: FakeSession)] = []
    }

    static func driver(
        _ behaviour: FakeSession.Behaviour, httpsSupported: Bool = true, sessions: Sessions
    ) -> WebAuthenticationSessionDriver {
        WebAuthenticationSessionDriver(httpsSupported: httpsSupported) { _, callback, ephemeral, completion in
            let session = FakeSession(behaviour, completion: completion)
            sessions.made.append((callback, ephemeral, session))
            return session
        }
    }

    static let authorize = URL(string: "https://id.example.com/authorize?client_id=app")!
    static let schemeRedirect = URL(string: "com.example.app:/oauth/callback")!

    @Test func theCallbackURLComesBackAndTheRedirectSchemeIsTheCallback() async throws {
        let sessions = Sessions()
        let back = URL(string: "com.example.app:/oauth/callback?code=abc&state=xyz")!
        let url = try await Self.driver(.answer(.callback(back)), sessions: sessions)
            .authorize(Self.authorize, redirectURI: Self.schemeRedirect, ephemeral: true)
        #expect(url == back)
        #expect(sessions.made.map(\.callback) == [.customScheme("com.example.app")])
        #expect(sessions.made.map(\.ephemeral) == [true])
    }

    @Test func anHTTPSRedirectUsesTheAssociatedDomainCallbackWhereTheSystemHasIt() async throws {
        let redirect = URL(string: "https://app.example.com/oauth/callback")!
        let back = URL(string: "https://app.example.com/oauth/callback?code=abc")!
        let newer = Sessions()
        _ = try await Self.driver(.answer(.callback(back)), sessions: newer)
            .authorize(Self.authorize, redirectURI: redirect, ephemeral: false)
        #expect(newer.made.map(\.callback) == [.https(host: "app.example.com", path: "/oauth/callback")])
        let older = Sessions()
        _ = try await Self.driver(.answer(.callback(back)), httpsSupported: false, sessions: older)
            .authorize(Self.authorize, redirectURI: redirect, ephemeral: false)
        #expect(older.made.map(\.callback) == [.customScheme("https")])
    }

    @Test func aUserWhoClosesTheSheetGetsCancelled() async throws {
        let sessions = Sessions()
        await #expect(throws: SignInError.cancelled) {
            try await Self.driver(.answer(.cancelled), sessions: sessions)
                .authorize(Self.authorize, redirectURI: Self.schemeRedirect, ephemeral: false)
        }
    }

    @Test func aSessionThatCannotStartIsCancelledNotAHang() async throws {
        let sessions = Sessions()
        await #expect(throws: SignInError.cancelled) {
            try await Self.driver(.refuseToStart, sessions: sessions)
                .authorize(Self.authorize, redirectURI: Self.schemeRedirect, ephemeral: false)
        }
    }

    @Test func anotherFailureOfTheSessionIsPassedOn() async throws {
        struct PresentationContextInvalid: Error, Equatable {}
        let sessions = Sessions()
        await #expect(throws: PresentationContextInvalid()) {
            try await Self.driver(.answer(.failed(PresentationContextInvalid())), sessions: sessions)
                .authorize(Self.authorize, redirectURI: Self.schemeRedirect, ephemeral: false)
        }
    }

    @Test func cancellingTheTaskCancelsTheOpenSession() async throws {
        let sessions = Sessions()
        let driver = Self.driver(.waitForCancel, sessions: sessions)
        let signIn = Task {
            try await driver.authorize(Self.authorize, redirectURI: Self.schemeRedirect, ephemeral: false)
        }
        while sessions.made.first?.session.started != true { await Task.yield() }
        signIn.cancel()
        await #expect(throws: SignInError.cancelled) { try await signIn.value }
        #expect(sessions.made.first?.session.cancelled == true)
    }

    @Test func aTaskCancelledBeforeTheSheetOpensNeverOpensIt() async throws {
        let sessions = Sessions()
        let driver = Self.driver(.waitForCancel, sessions: sessions)
        let signIn = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await driver.authorize(Self.authorize, redirectURI: Self.schemeRedirect, ephemeral: false)
        }
        await #expect(throws: SignInError.cancelled) { try await signIn.value }
        #expect(sessions.made.isEmpty)
    }
}
