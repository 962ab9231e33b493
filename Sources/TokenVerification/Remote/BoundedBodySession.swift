import AuthToken

#if canImport(FoundationNetworking)
    import Foundation
    import FoundationNetworking
#else
    import Foundation
#endif

/// A `URLSession` whose responses are kept up to a cap on the body, for the key-set fetch and the introspection send:
/// `URLSession.data(for:)` buffers a body whole and hands it over, so an endpoint that streams without end (or lies
/// about its length) would be read to its end before any check. Here a declared `Content-Length` over the cap fails
/// at the head, and a stream fails the moment the delegate sees it pass the cap; either way the task is cancelled
/// (the connection closed), nothing past the cap is kept, and the read throws `URLError(.dataLengthExceedsMaximum)`.
///
/// That bounds memory, not the read. `URLSession` has no back-pressure, and on Linux (`FoundationNetworking` in
/// swift-corelibs-foundation 6.3) nothing here can stop libcurl early: pausing a receive is not implemented, the
/// write callback always proceeds, every delegate call is queued, and `cancel()` runs on the session's serial work
/// queue, which libcurl's read loop holds while the socket has data. So the connection closes only when the server
/// pauses: against a server streaming 1 GiB without pause on loopback, it had written 10 MiB to the whole GiB
/// before the connection closed (a loaded two-core machine). The hard bound with back-pressure is the
/// AsyncHTTPClient fetch and send of `TokenKitAsyncHTTPClient`.
///
/// It is the session's own delegate (a delegate given to one task alone is ignored by `FoundationNetworking` on
/// Linux), so it also applies the redirect rule. `@unchecked Sendable`: the pending reads are only touched inside
/// `pending`'s lock; `redirects` is set once.
final class BoundedBodySession: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// Which redirects are followed.
    enum Redirects: Sendable {
        /// None: a 3xx is the answer.
        case none
        /// Only within the original request's origin (scheme, host and port).
        case sameOrigin
    }

    private struct Read {
        let continuation: CheckedContinuation<(Data, HTTPURLResponse), any Error>
        let maximumBytes: Int
        var body = Data()
        var response: HTTPURLResponse?
        var failure: (any Error)?
    }

    private let redirects: Redirects
    private let pending = LockedValue([Int: Read]())

    private init(redirects: Redirects) {
        self.redirects = redirects
    }

    /// A session with `configuration` whose delegate reads bodies under a cap and follows `redirects`.
    static func session(configuration: URLSessionConfiguration, redirects: Redirects) -> URLSession {
        URLSession(configuration: configuration, delegate: BoundedBodySession(redirects: redirects), delegateQueue: nil)
    }

    /// Sends `request` on a session made by ``session(configuration:redirects:)`` and reads the answer's body up to
    /// `maximumBytes`.
    ///
    /// - Throws: `URLError(.dataLengthExceedsMaximum)` past the cap, `URLError(.badServerResponse)` for an answer
    ///   that is not HTTP, what the session failed with, or `CancellationError`.
    static func data(
        for request: URLRequest, in session: URLSession, maximumBytes: Int
    ) async throws -> (Data, HTTPURLResponse) {
        guard let reader = session.delegate as? BoundedBodySession else { throw URLError(.unknown) }
        let task = session.dataTask(with: request)
        let id = task.taskIdentifier
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                reader.pending.withLock {
                    $0[id] = Read(continuation: continuation, maximumBytes: max(0, maximumBytes))
                }
                if Task.isCancelled { task.cancel() }
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let allowed = pending.withLock { pending -> Bool in
            guard var read = pending[dataTask.taskIdentifier] else { return false }
            read.response = response as? HTTPURLResponse
            // A declared length over the cap is refused before a byte of the body is read.
            if response.expectedContentLength > Int64(read.maximumBytes) {
                read.failure = URLError(.dataLengthExceedsMaximum)
            }
            pending[dataTask.taskIdentifier] = read
            return read.failure == nil
        }
        completionHandler(allowed ? .allow : .cancel)
        // FoundationNetworking ignores the disposition: cancel the task itself.
        if !allowed { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let over = pending.withLock { pending -> Bool in
            guard var read = pending[dataTask.taskIdentifier], read.failure == nil else { return false }
            guard read.body.count + data.count <= read.maximumBytes else {
                read.failure = URLError(.dataLengthExceedsMaximum)
                read.body = Data()
                pending[dataTask.taskIdentifier] = read
                return true
            }
            read.body.append(data)
            pending[dataTask.taskIdentifier] = read
            return false
        }
        if over { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let read = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let failure = read.failure {
            read.continuation.resume(throwing: failure)
        } else if let error {
            read.continuation.resume(throwing: error)
        } else if let response = read.response ?? task.response as? HTTPURLResponse {
            read.continuation.resume(returning: (read.body, response))
        } else {
            read.continuation.resume(throwing: URLError(.badServerResponse))
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        switch redirects {
        case .none:
            completionHandler(nil)
        case .sameOrigin:
            guard let from = task.originalRequest?.url, let to = request.url, isSameOrigin(from, to) else {
                completionHandler(nil)
                return
            }
            completionHandler(request)
        }
    }
}
