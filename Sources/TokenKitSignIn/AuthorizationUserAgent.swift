public import Foundation

/// Opens an authorization URL in a browser and returns the URL the server redirected back to.
///
/// TokenKit ships two: `WebAuthenticationSessionUserAgent` (`ASWebAuthenticationSession`, Apple platforms) and
/// ``LoopbackRedirectUserAgent`` (a redirect to `http://127.0.0.1:<port>`, RFC 8252 section 7.3, for command-line
/// tools and Linux). A conformance of your own (an embedded browser, a test script) needs one method:
///
/// ```swift
/// struct ScriptedUserAgent: AuthorizationUserAgent {
///     let answer: @Sendable (URL) async throws -> URL
///
///     func authorize(_ url: URL, redirectURI: URL) async throws -> URL {
///         try await answer(url)
///     }
/// }
/// ```
public protocol AuthorizationUserAgent: Sendable {
    /// Shows `url` to the user and returns the redirect that came back to `redirectURI`.
    ///
    /// - Parameters:
    ///   - url: The authorization (or end-session) URL.
    ///   - redirectURI: Where the server sends the browser back; return the first URL there.
    /// - Returns: The redirect URL, with its query.
    /// - Throws: ``SignInError/cancelled`` when the user closed the browser or the task was cancelled.
    func authorize(_ url: URL, redirectURI: URL) async throws -> URL

    /// Shows the request's URL to the user and returns the redirect that came back with the request's `state`.
    ///
    /// The default calls ``authorize(_:redirectURI:)``; the flow checks the `state` afterwards. A user agent that
    /// can tell redirects apart (``LoopbackRedirectUserAgent``) waits for the one with this `state`.
    ///
    /// - Parameter request: The started sign-in (or sign-out at the provider).
    /// - Returns: The redirect URL, with its query.
    /// - Throws: ``SignInError/cancelled`` when the user closed the browser or the task was cancelled.
    func authorize(_ request: AuthorizationRequest) async throws -> URL

    /// Shows `url` to the user when nothing comes back: an end-session URL without a post-logout redirect URI
    /// (OpenID Connect RP-Initiated Logout 1.0 section 3).
    ///
    /// The default calls ``authorize(_:redirectURI:)`` and returns when it does (the user closes the browser).
    /// ``LoopbackRedirectUserAgent`` opens the URL and returns at once.
    ///
    /// - Parameter url: The URL to show.
    /// - Throws: The user agent's errors.
    func open(_ url: URL) async throws
}

extension AuthorizationUserAgent {
    /// Calls ``authorize(_:redirectURI:)`` with the request's URL and redirect URI.
    ///
    /// - Parameter request: The started sign-in.
    /// - Returns: The redirect URL, with its query.
    /// - Throws: What ``authorize(_:redirectURI:)`` throws.
    public func authorize(_ request: AuthorizationRequest) async throws -> URL {
        try await authorize(request.url, redirectURI: request.redirectURI)
    }

    /// Calls ``authorize(_:redirectURI:)`` with `url` as both URLs, and ignores what comes back.
    ///
    /// - Parameter url: The URL to show.
    /// - Throws: What ``authorize(_:redirectURI:)`` throws.
    public func open(_ url: URL) async throws {
        _ = try await authorize(url, redirectURI: url)
    }
}
