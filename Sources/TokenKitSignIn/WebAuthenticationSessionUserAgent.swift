#if canImport(AuthenticationServices)
    public import AuthenticationServices
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
            let httpsSupported: Bool
            if #available(macOS 14.4, iOS 17.4, visionOS 1.1, *) {
                httpsSupported = true
            } else {
                httpsSupported = false
            }
            let driver = WebAuthenticationSessionDriver(httpsSupported: httpsSupported) {
                url, callback, ephemeral, completion in
                SystemWebAuthenticationSession(
                    url: url, callback: callback, ephemeral: ephemeral, completion: completion)
            }
            return try await driver.authorize(url, redirectURI: redirectURI, ephemeral: prefersEphemeralSession)
        }
    }

    /// The system calls, and nothing else: an `ASWebAuthenticationSession` for the driver's callback, its options,
    /// and its answer mapped (`canceledLogin` is a cancellation).
    @available(macOS 13, iOS 16, visionOS 1, *)
    @MainActor
    private final class SystemWebAuthenticationSession: WebAuthenticationSessionHandle {
        private let session: ASWebAuthenticationSession

        init(
            url: URL, callback: WebAuthenticationCallback, ephemeral: Bool,
            completion: @escaping @Sendable (WebAuthenticationAnswer) -> Void
        ) {
            let handler: ASWebAuthenticationSession.CompletionHandler = { callbackURL, error in
                if let callbackURL {
                    completion(.callback(callbackURL))
                } else if let error = error as? ASWebAuthenticationSessionError, error.code == .canceledLogin {
                    completion(.cancelled)
                } else {
                    completion(error.map { .failed($0) } ?? .cancelled)
                }
            }
            switch callback {
            case .https(let host, let path):
                if #available(macOS 14.4, iOS 17.4, visionOS 1.1, *) {
                    session = ASWebAuthenticationSession(
                        url: url, callback: .https(host: host, path: path), completionHandler: handler)
                } else {
                    session = ASWebAuthenticationSession(
                        url: url, callbackURLScheme: "https", completionHandler: handler)
                }
            case .customScheme(let scheme):
                session = ASWebAuthenticationSession(url: url, callbackURLScheme: scheme, completionHandler: handler)
            }
            session.prefersEphemeralWebBrowserSession = ephemeral
            session.presentationContextProvider = KeyWindowAnchor.shared
        }

        func start() -> Bool { session.start() }
        func cancel() { session.cancel() }
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
