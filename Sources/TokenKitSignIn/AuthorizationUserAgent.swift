public import Foundation

/// Opens an authorization URL in a browser and returns the URL the server redirected back to.
///
/// TokenKit ships two: `WebAuthenticationSessionUserAgent` (`ASWebAuthenticationSession`, Apple platforms) and
/// ``LoopbackRedirectUserAgent`` (a redirect to `http://127.0.0.1:<port>`, RFC 8252 section 7.3, for command-line
/// tools and Linux). A conformance of your own (an embedded browser, a test script) is one method:
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
}
