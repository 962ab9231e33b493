import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The listening socket of a test server here and the thread that accepts on it: one connection at a time, handed
/// to the server's `serve` and closed after it. `@unchecked Sendable`: `stopped` is only touched while holding
/// `lock`; `descriptor` and `port` are set once in `init`.
final class LoopbackListener: @unchecked Sendable {
    /// The port the socket listens on.
    let port: Int
    private let descriptor: Int32
    private let lock = NSLock()
    private var stopped = false

    /// Opens the socket on 127.0.0.1 at an ephemeral port; nothing is accepted before ``start(_:)``.
    ///
    /// - Parameter backlog: The listen queue's length.
    /// - Throws: A `POSIXError` when the socket cannot be opened or bound.
    init(backlog: Int32) throws {
        (descriptor, port) = try listenOnLoopback(backlog: backlog)
    }

    /// Starts the accept thread: it calls `serve` with each connection, closes the connection when `serve`
    /// returns, and ends at ``stop()``.
    ///
    /// - Parameter serve: Serves one connection (its descriptor).
    func start(_ serve: @escaping @Sendable (Int32) -> Void) {
        let thread = Thread { [self] in acceptLoop(serve) }
        thread.start()
    }

    /// Stops accepting connections. Only a shutdown: the accept thread closes the descriptor when it leaves, so the
    /// number cannot be reused by another server while that thread might still call `accept` on it.
    func stop() {
        lock.lock()
        let wasStopped = stopped
        stopped = true
        lock.unlock()
        guard !wasStopped else { return }
        shutdown(descriptor, Int32(SHUT_RDWR))
    }

    private func acceptLoop(_ serve: @Sendable (Int32) -> Void) {
        while true {
            let client = accept(descriptor, nil, nil)
            if client < 0 {
                lock.lock()
                let done = stopped
                lock.unlock()
                if done {
                    close(descriptor)
                    return
                }
                continue
            }
            #if canImport(Darwin)
                var on: Int32 = 1
                setsockopt(client, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
            #endif
            serve(client)
            close(client)
        }
    }
}
