package import Foundation

/// How the system's web authentication session recognises the redirect back to the app.
package enum WebAuthenticationCallback: Equatable, Sendable {
    /// A redirect URI with this custom scheme (`nil`: the session matches none and the user must close it).
    case customScheme(String?)
    /// An `https` redirect URI on this host and path (an associated domain).
    case https(host: String, path: String)

    /// The callback for `redirectURI`: its `https` host and path when the system supports them, else its scheme.
    ///
    /// - Parameters:
    ///   - redirectURI: The redirect URI.
    ///   - httpsSupported: Whether the system has the associated-domain callback (macOS 14.4, iOS 17.4 and later).
    package init(redirectURI: URL, httpsSupported: Bool) {
        if httpsSupported, redirectURI.scheme?.lowercased() == "https", let host = redirectURI.host {
            self = .https(host: host, path: redirectURI.path)
        } else {
            self = .customScheme(redirectURI.scheme)
        }
    }
}

/// How the system's session ended.
package enum WebAuthenticationAnswer: Sendable {
    /// The browser came back to the redirect URI.
    case callback(URL)
    /// The user closed the sheet or declined, or the session was cancelled.
    case cancelled
    /// Another failure of the session.
    case failed(any Error)
}

/// One system web authentication session: the seam between ``WebAuthenticationSessionUserAgent`` and
/// `ASWebAuthenticationSession`, whose conformer holds nothing but the system calls.
@MainActor
package protocol WebAuthenticationSessionHandle: AnyObject {
    /// Shows the session; `false` when it could not start.
    func start() -> Bool
    /// Ends the session, which then answers ``WebAuthenticationAnswer/cancelled``.
    func cancel()
}

/// Makes a system session for `url`, recognising `callback`, private to this sign-in when `ephemeral`; it calls
/// `completion` once when it ends.
package typealias MakeWebAuthenticationSession =
    @MainActor (
        _ url: URL, _ callback: WebAuthenticationCallback, _ ephemeral: Bool,
        _ completion: @escaping @Sendable (WebAuthenticationAnswer) -> Void
    ) -> any WebAuthenticationSessionHandle

/// Everything the Apple user agent does around the system call, on every platform: the callback chosen from the
/// redirect URI, the session kept alive until it answers, the answer turned into a URL or a ``SignInError``, and
/// task cancellation passed on to the session.
package struct WebAuthenticationSessionDriver: Sendable {
    let makeSession: MakeWebAuthenticationSession
    let httpsSupported: Bool

    /// A driver over `makeSession`.
    ///
    /// - Parameters:
    ///   - httpsSupported: Whether the system has the associated-domain callback.
    ///   - makeSession: Makes one system session.
    package init(httpsSupported: Bool, makeSession: @escaping MakeWebAuthenticationSession) {
        self.httpsSupported = httpsSupported
        self.makeSession = makeSession
    }

    /// Shows `url` in a system session and returns the callback URL.
    ///
    /// - Parameters:
    ///   - url: The authorization or end-session URL.
    ///   - redirectURI: The redirect URI.
    ///   - ephemeral: Whether the session keeps no cookies.
    /// - Returns: The callback URL.
    /// - Throws: ``SignInError/cancelled`` when the user closed the sheet, the session could not start, or the task
    ///   was cancelled (before the sheet opened, it never opens); the session's other errors.
    @MainActor
    package func authorize(_ url: URL, redirectURI: URL, ephemeral: Bool) async throws -> URL {
        let run = SessionRun()
        let callback = WebAuthenticationCallback(redirectURI: redirectURI, httpsSupported: httpsSupported)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<URL, any Error>) in
                run.begin(continuation)
                guard !Task.isCancelled else {
                    run.finish(.cancelled)
                    return
                }
                let session = makeSession(url, callback, ephemeral) { answer in run.finish(answer) }
                run.keep(session)
                if !session.start() { run.finish(.cancelled) }
            }
        } onCancel: {
            Task { @MainActor in run.session?.cancel() }
        }
    }
}

/// One sign-in's session: kept alive until it answers, and answered once (a second answer is ignored, never a
/// crash). `@unchecked Sendable`: every field is behind `lock`.
private final class SessionRun: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<URL, any Error>?  // protected by `lock`
    private var kept: (any WebAuthenticationSessionHandle)?  // protected by `lock`

    var session: (any WebAuthenticationSessionHandle)? { lock.withLock { kept } }

    func begin(_ continuation: CheckedContinuation<URL, any Error>) {
        lock.withLock { self.continuation = continuation }
    }

    func keep(_ session: any WebAuthenticationSessionHandle) {
        lock.withLock {
            // A session that answered during `makeSession` is not kept.
            if continuation != nil { kept = session }
        }
    }

    func finish(_ answer: WebAuthenticationAnswer) {
        let continuation = lock.withLock {
            defer {
                self.continuation = nil
                kept = nil
            }
            return self.continuation
        }
        switch answer {
        case .callback(let url): continuation?.resume(returning: url)
        case .cancelled: continuation?.resume(throwing: SignInError.cancelled)
        case .failed(let error): continuation?.resume(throwing: error)
        }
    }
}
