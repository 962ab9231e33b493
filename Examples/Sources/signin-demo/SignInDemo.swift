import ArgumentParser
import DemoAppSupport
import DemoAuthServer
import Foundation
import TokenKit
import TokenKitSignIn

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `signin-demo`: a command-line sign-in through the browser, over a loopback redirect (RFC 8252), against the demo
/// auth server: PKCE, `state`, `nonce`, the ID token verified, the profile shown, then sign-out with revocation.
@main
struct SignInDemo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signin-demo",
        abstract: "Command-line sign-in through the browser over a loopback redirect, with OpenID Connect.",
        discussion: """
            Starts the demo auth server in-process (or uses --server), listens on 127.0.0.1 at a port the system \
            picks, and opens the server's /authorize page. The demo server signs the user in and consents at once, \
            so this demo plays the browser itself (a GET that follows the redirect back to the listener) unless \
            --print-url asks you to open the page. Then it shows the verified profile, refreshes once, and signs \
            out (the refresh token is revoked). Exits non-zero when an expectation fails.
            """
    )

    @Option(help: ArgumentHelp("Use this demo auth server instead of starting one in-process.", valueName: "url"))
    var server: String?

    @Option(help: ArgumentHelp("The user to sign in (login_hint).", valueName: "email"))
    var user = DemoAuthServer.User.demo.email

    @Flag(help: "Print the sign-in URL for you to open in a browser, instead of following it here.")
    var printURL = false

    func run() async throws {
        let backend = try await DemoBackend.start(external: server, configuration: .init())
        let base = backend.baseURL
        let transport = URLSessionTransport()
        // The demo server's issuer is a fixed name, not its URL, so its metadata is written here rather than
        // discovered.
        let metadata = AuthorizationServer(
            issuer: DemoAuthServer.Configuration().issuer, authorizationEndpoint: base.appending(path: "authorize"),
            tokenEndpoint: base.appending(path: "oauth/token"), jwksURI: base.appending(path: ".well-known/jwks.json"),
            revocationEndpoint: base.appending(path: "oauth/revoke"), sendsIssuerInRedirect: true)
        let client = OAuthClient(id: DemoAuthServer.Client.publicApp.id)
        let tokens = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(
                endpoint: TokenEndpoint(url: metadata.tokenEndpoint, client: client, transport: transport)))
        let printsURL = printURL
        let browser = try LoopbackRedirectUserAgent { url in
            if printsURL {
                print("Open this page to sign in:\n  \(url)")
            } else {
                print("Opening \(url.host ?? "")\(url.path) (the demo server consents at once)")
                // The browser: follows the server's 302 back to the loopback listener.
                Task { _ = try? await URLSession(configuration: .ephemeral).data(from: url) }
            }
        }
        let flow = AuthorizationCodeFlow(
            server: metadata, client: client, configuration: .init(redirectURI: browser.redirectURI), tokens: tokens,
            transport: transport)
        print("Listening for the redirect at \(browser.redirectURI)")

        do {
            try await flow.signIn(using: browser, loginHint: user)
        } catch let error as SignInError {
            // The error's description names the check that failed (never a token or code).
            throw DemoFailure("sign-in refused: \(error)")
        }
        guard let signedIn = tokens.currentUser else { throw DemoFailure("no user after the sign-in") }
        print("Signed in: \(signedIn.id), \(signedIn.email ?? "no e-mail") (ID token verified)")
        let refreshed = try await tokens.refreshToken(afterRejectionOf: tokens.currentToken?.accessToken ?? "")
        print("Refreshed: \(refreshed.sanitizedDescription)")
        let refreshToken = refreshed.refreshToken
        try await flow.signOut()
        print("Signed out; the refresh token was revoked at the server.")
        if let refreshToken {
            let endpoint = TokenEndpoint(url: metadata.tokenEndpoint, client: client, transport: transport)
            do {
                _ = try await endpoint.requestToken([("grant_type", "refresh_token"), ("refresh_token", refreshToken)])
                throw DemoFailure("the revoked refresh token still worked")
            } catch let error as TokenRefreshError where error == .refreshTokenRejected {
                print("A refresh with it now answers invalid_grant, as it should.")
            }
        }
        await backend.server?.stop()
    }
}
