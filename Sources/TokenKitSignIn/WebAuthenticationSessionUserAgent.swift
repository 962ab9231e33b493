#if canImport(AuthenticationServices)
    public import AuthenticationServices
    public import Foundation
    #if canImport(UIKit)
        import UIKit
    #elseif canImport(AppKit)
        import AppKit
    #endif

    /// The user agent on Apple platforms: `ASWebAuthenticationSession`, and nothing else.
    ///
    /// ```swift
    /// try await flow.signIn(using: WebAuthenticationSessionUserAgent())
    /// ```
    ///
    /// The redirect URI's scheme (`com.example.app` for `com.example.app:/oauth/callback`) is the callback scheme;
    /// an `https` redirect URI uses the associated-domain callback (macOS 14.4, iOS 17.4 and later). The sheet is
    /// shown over the key window. Cancelling the task cancels the session.
    @available(macOS 13, iOS 16, visionOS 1, *)
    @available(tvOS, unavailable)
    @available(watchOS, unavailable)
    public struct WebAuthenticationSessionUserAgent: AuthorizationUserAgent {
        /// Whether the session keeps no cookies and shares none with Safari. Default `false`: the user's browser
        /// login is reused, and the system asks the user before the sheet opens.
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
        ///   - redirectURI: The redirect URI; its scheme (or `https` host and path) is the callback.
        /// - Returns: The callback URL.
        /// - Throws: ``SignInError/cancelled`` when the user closed the sheet, the session could not start, or the
        ///   task was cancelled; the session's other errors.
        @MainActor
        public func authorize(_ url: URL, redirectURI: URL) async throws -> URL {
            let holder = SessionHolder()
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    let completion: ASWebAuthenticationSession.CompletionHandler = { callbackURL, error in
                        // Keeps the session alive until it completes, then lets it go.
                        holder.session = nil
                        if let callbackURL {
                            continuation.resume(returning: callbackURL)
                        } else if let error = error as? ASWebAuthenticationSessionError,
                            error.code == .canceledLogin
                        {
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
                            url: url, callback: .https(host: host, path: redirectURI.path),
                            completionHandler: completion)
                    } else {
                        session = ASWebAuthenticationSession(
                            url: url, callbackURLScheme: redirectURI.scheme, completionHandler: completion)
                    }
                    session.prefersEphemeralWebBrowserSession = prefersEphemeralSession
                    session.presentationContextProvider = KeyWindowAnchor.shared
                    holder.session = session
                    if !session.start() {
                        holder.session = nil
                        continuation.resume(throwing: SignInError.cancelled)
                    }
                }
            } onCancel: {
                Task { @MainActor in holder.session?.cancel() }
            }
        }
    }

    /// The session while it runs. `@unchecked Sendable`: only touched on the main actor (the session's completion
    /// and the cancellation hop there).
    @available(macOS 13, iOS 16, visionOS 1, *)
    private final class SessionHolder: @unchecked Sendable {
        var session: ASWebAuthenticationSession?
    }

    /// The key window, for the session's sheet.
    @available(macOS 13, iOS 16, visionOS 1, *)
    private final class KeyWindowAnchor: NSObject, ASWebAuthenticationPresentationContextProviding {
        @MainActor static let shared = KeyWindowAnchor()

        func presentationAnchor(for session: ASWebAuthenticationSession) -> ASPresentationAnchor {
            // AuthenticationServices asks on the main thread.
            MainActor.assumeIsolated {
                #if canImport(UIKit)
                    let windows = UIApplication.shared.connectedScenes.compactMap { $0 as? UIWindowScene }
                        .flatMap(\.windows)
                    return windows.first(where: \.isKeyWindow) ?? windows.first ?? ASPresentationAnchor()
                #elseif canImport(AppKit)
                    return NSApplication.shared.keyWindow ?? NSApplication.shared.windows.first
                        ?? ASPresentationAnchor()
                #else
                    return ASPresentationAnchor()
                #endif
            }
        }
    }
#endif
