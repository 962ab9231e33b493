#if canImport(AuthenticationServices)
    public import AuthenticationServices
    public import Foundation

    /// The user agent on Apple platforms: `ASWebAuthenticationSession`, and nothing else.
    ///
    /// ```swift
    /// try await flow.signIn(using: WebAuthenticationSessionUserAgent())
    /// ```
    ///
    /// The redirect URI's scheme (`com.example.app` for `com.example.app:/oauth/callback`) is the callback scheme;
    /// an `https` redirect URI uses the associated-domain callback (macOS 14.4, iOS 17.4 and later).
    @available(macOS 13, iOS 16, visionOS 1, *)
    @available(tvOS, unavailable)
    @available(watchOS, unavailable)
    public struct WebAuthenticationSessionUserAgent: AuthorizationUserAgent {
        /// Whether the session shares cookies with Safari. Default `false` (ephemeral: no prompt, no shared login).
        public var prefersEphemeralSession: Bool

        /// A user agent.
        ///
        /// - Parameter prefersEphemeralSession: Whether to use a private browser session.
        public init(prefersEphemeralSession: Bool = false) {
            self.prefersEphemeralSession = prefersEphemeralSession
        }

        /// Shows `url` in an `ASWebAuthenticationSession` and returns the callback URL.
        ///
        /// - Parameters:
        ///   - url: The authorization or end-session URL.
        ///   - redirectURI: The redirect URI; its scheme (or https host and path) is the callback.
        /// - Returns: The callback URL.
        /// - Throws: ``SignInError/cancelled`` when the user closed the sheet; the session's other errors.
        @MainActor
        public func authorize(_ url: URL, redirectURI: URL) async throws -> URL {
            let ephemeral = prefersEphemeralSession
            return try await withCheckedThrowingContinuation { continuation in
                let completion: ASWebAuthenticationSession.CompletionHandler = { callbackURL, error in
                    if let callbackURL {
                        continuation.resume(returning: callbackURL)
                    } else if let error = error as? ASWebAuthenticationSessionError, error.code == .canceledLogin {
                        continuation.resume(throwing: SignInError.cancelled)
                    } else {
                        continuation.resume(throwing: error ?? SignInError.cancelled)
                    }
                }
                let session: ASWebAuthenticationSession
                if #available(macOS 14.4, iOS 17.4, visionOS 1.1, *), redirectURI.scheme?.lowercased() == "https",
                    let host = redirectURI.host
                {
                    session = ASWebAuthenticationSession(
                        url: url, callback: .https(host: host, path: redirectURI.path), completionHandler: completion)
                } else {
                    session = ASWebAuthenticationSession(
                        url: url, callbackURLScheme: redirectURI.scheme, completionHandler: completion)
                }
                session.prefersEphemeralWebBrowserSession = ephemeral
                session.presentationContextProvider = PresentationAnchor.shared
                if !session.start() { continuation.resume(throwing: SignInError.cancelled) }
            }
        }
    }

    /// The key window, for the session's sheet.
    @available(macOS 13, iOS 16, visionOS 1, *)
    @available(tvOS, unavailable)
    @available(watchOS, unavailable)
    private final class PresentationAnchor: NSObject, ASWebAuthenticationPresentationContextProviding {
        @MainActor static let shared = PresentationAnchor()

        func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor {
            MainActor.assumeIsolated { ASPresentationAnchor() }
        }
    }
#endif
