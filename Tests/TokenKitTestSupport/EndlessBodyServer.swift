import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A hostile HTTP/1.1 server on 127.0.0.1 for the bounded-read tests: it answers every request with 200 and a body
/// of `totalBytes` bytes, streamed in chunks (chunked transfer coding, no `Content-Length`, unless
/// `declaresLength`), and counts what it managed to write before the client hung up. One thread, one connection at a
/// time. `@unchecked Sendable`: `sent` and `hungUp` are only touched while holding `lock`; the rest is set once in
/// `init`.
public final class EndlessBodyServer: @unchecked Sendable {
    /// The port the server listens on.
    public let port: Int
    /// The body length each answer streams (or declares).
    public let totalBytes: Int
    private let declaresLength: Bool
    private let listener: LoopbackListener
    private let lock = NSLock()
    private var sent = 0
    private var hungUp = false

    /// Body bytes written so far, over every connection.
    public var bodyBytesSent: Int {
        lock.lock()
        defer { lock.unlock() }
        return sent
    }

    /// Whether a client closed its connection before the whole body was written.
    public var clientHungUp: Bool {
        lock.lock()
        defer { lock.unlock() }
        return hungUp
    }

    /// Starts listening on an ephemeral port.
    ///
    /// - Parameters:
    ///   - totalBytes: The body length of each answer; 64 MiB by default.
    ///   - declaresLength: Whether the answer declares its length in `Content-Length` (otherwise chunked).
    /// - Throws: A `POSIXError` when the socket cannot be opened or bound.
    public init(totalBytes: Int = 64 << 20, declaresLength: Bool = false) throws {
        self.totalBytes = totalBytes
        self.declaresLength = declaresLength
        listener = try LoopbackListener(backlog: 16)
        port = listener.port
        listener.start { [self] client in serve(client) }
    }

    /// Stops accepting connections.
    public func stop() { listener.stop() }

    deinit { stop() }

    private func serve(_ client: Int32) {
        // The request head is enough: what follows it (a form) stays unread.
        var head = [UInt8]()
        var byte = [UInt8](repeating: 0, count: 1)
        let end = Array("\r\n\r\n".utf8)
        while !head.suffix(4).elementsEqual(end) {
            guard read(client, &byte, 1) == 1 else { return }
            head.append(byte[0])
        }
        let framing = declaresLength ? "Content-Length: \(totalBytes)" : "Transfer-Encoding: chunked"
        guard
            write(
                all: Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\(framing)\r\n\r\n".utf8), to: client)
        else { return }
        let piece = [UInt8](repeating: UInt8(ascii: " "), count: 16 * 1024)
        var remaining = totalBytes
        while remaining > 0 {
            let count = min(piece.count, remaining)
            var bytes = Array(piece[..<count])
            if !declaresLength { bytes = Array((String(count, radix: 16) + "\r\n").utf8) + bytes + Array("\r\n".utf8) }
            guard write(all: bytes, to: client) else {
                lock.lock()
                hungUp = true
                lock.unlock()
                return
            }
            lock.lock()
            sent += count
            lock.unlock()
            remaining -= count
        }
        if !declaresLength { _ = write(all: Array("0\r\n\r\n".utf8), to: client) }
    }

    /// Writes every byte, without a `SIGPIPE` when the client has gone; `false` once a write fails.
    private func write(all bytes: [UInt8], to client: Int32) -> Bool {
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { buffer -> Int in
                #if canImport(Glibc)
                    send(client, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
                #else
                    send(client, buffer.baseAddress, buffer.count, 0)
                #endif
            }
            guard count > 0 else { return false }
            written += count
        }
        return true
    }
}
