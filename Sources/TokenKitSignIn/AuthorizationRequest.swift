public import Foundation

/// A started browser sign-in: the URL to open, and what its redirect will be checked against.
///
/// Get one from ``AuthorizationCodeFlow/start(prompt:loginHint:)``, open ``url`` in a browser, and hand the redirect
/// to ``AuthorizationCodeFlow/finish(redirect:for:)``. The PKCE verifier and the nonce stay inside the flow; the
/// description shows neither them nor the `state`.
public struct AuthorizationRequest: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
    /// The URL to open: the authorization endpoint with the request (or, after a pushed authorization request,
    /// with its `request_uri`).
    public let url: URL
    /// Where the server sends the browser back.
    public let redirectURI: URL
    let state: String

    init(url: URL, redirectURI: URL, state: String) {
        self.url = url
        self.redirectURI = redirectURI
        self.state = state
    }

    /// The authorization endpoint's host only.
    public var description: String { "AuthorizationRequest(\(url.host ?? "?"))" }

    /// The host and the redirect URI; never the URL's query (its `state`, `nonce` and challenge) (`dump()` shows this).
    public var customMirror: Mirror {
        Mirror(self, children: ["host": url.host ?? "?", "redirectURI": redirectURI], displayStyle: .struct)
    }
}
