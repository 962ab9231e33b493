public import Foundation
import TokenKitSignIn
import TokenKitTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A tiny HTTP/1.1 server on 127.0.0.1 for transport integration tests: one thread, one connection at a
/// time, `Connection: close` on every response. `@unchecked Sendable`: `received` is only touched while holding
/// `lock`; the rest is set once in `init`.
public final class LoopbackServer: @unchecked Sendable {
    /// A request the server received.
    public struct Request: Sendable {
        /// The method, such as `GET`.
        public let method: String
        /// The request target (path and query).
        public let path: String
        /// Header names in lowercase, values in order.
        public let headers: [String: [String]]
        /// The body.
        public let body: Data
    }

    /// What the server answers.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// Header fields, in order.
        public var headers: [(String, String)]
        /// The body.
        public var body: Data

        /// Creates a response.
        ///
        /// - Parameters:
        ///   - status: The status code.
        ///   - headers: Header fields, in order.
        ///   - body: The body.
        public init(status: Int, headers: [(String, String)] = [], body: Data = Data()) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// The port the server listens on.
    public let port: Int
    private let listener: LoopbackListener
    private let lock = NSLock()
    private var requests: [Request] = []
    private let route: @Sendable (Request, Int) -> Response

    /// Every request received so far, in order.
    public var received: [Request] {
        lock.lock()
        defer { lock.unlock() }
        return requests
    }

    /// Starts listening on an ephemeral port; `route` gets each request and the server's port.
    ///
    /// - Parameter route: Answers each request; it gets the request and the server's port.
    /// - Throws: A `POSIXError` when the socket cannot be opened or bound.
    public init(route: @escaping @Sendable (Request, Int) -> Response) throws {
        self.route = route
        listener = try LoopbackListener(backlog: 64)
        port = listener.port
        listener.start { [self] client in serve(client) }
    }

    /// A port nothing listens on (bound, then closed).
    ///
    /// - Returns: The port number.
    /// - Throws: A `POSIXError` when no socket can be had.
    public static func closedPort() throws -> Int {
        let server = try LoopbackServer { _, _ in Response(status: 500) }
        server.stop()
        return server.port
    }

    /// Stops accepting connections and closes the listening socket.
    public func stop() { listener.stop() }

    deinit { stop() }

    private func serve(_ client: Int32) {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 4096)
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headerEnd: Int?
        var contentLength = 0
        while true {
            if headerEnd == nil, let range = firstRange(of: separator, in: buffer) {
                headerEnd = range
                let head = String(decoding: buffer[..<range], as: UTF8.self)
                for line in head.split(separator: "\r\n").dropFirst() {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    if parts.count == 2, parts[0].lowercased() == "content-length" {
                        contentLength = Int(parts[1].trimmingCharacters(in: .whitespaces)) ?? 0
                    }
                }
            }
            if let headerEnd, buffer.count >= headerEnd + 4 + contentLength { break }
            let count = read(client, &chunk, chunk.count)
            guard count > 0 else { return }
            buffer += chunk[..<count]
        }
        guard let headerEnd else { return }
        let head = String(decoding: buffer[..<headerEnd], as: UTF8.self)
        var lines = head.split(separator: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        var headers: [String: [String]] = [:]
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            headers[parts[0].lowercased(), default: []].append(parts[1].trimmingCharacters(in: .whitespaces))
        }
        let request = Request(
            method: String(requestLine.first ?? ""), path: String(requestLine.dropFirst().first ?? ""),
            headers: headers, body: Data(buffer[(headerEnd + 4)..<(headerEnd + 4 + contentLength)]))
        lock.lock()
        requests.append(request)
        lock.unlock()

        registerSecrets(of: request)
        let response = route(request, port)
        SecretCrossings.report(.responseBody(response.body), origin: "LoopbackServer response")
        // A route that sets `Transfer-Encoding: chunked` gets its body in chunks, without a `Content-Length`.
        let chunked = response.headers.contains { $0.0.lowercased() == "transfer-encoding" && $0.1 == "chunked" }
        var text = "HTTP/1.1 \(response.status) Status\r\n"
        if !chunked { text += "Content-Length: \(response.body.count)\r\n" }
        text += "Connection: close\r\n"
        for (name, value) in response.headers { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        var body = Array(response.body)
        if chunked {
            var framed: [UInt8] = []
            var rest = body[...]
            while !rest.isEmpty {
                let chunk = rest.prefix(4096)
                framed += Array((String(chunk.count, radix: 16) + "\r\n").utf8) + chunk + Array("\r\n".utf8)
                rest = rest.dropFirst(chunk.count)
            }
            body = framed + Array("0\r\n\r\n".utf8)
        }
        let bytes = Array(text.utf8) + body
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            written += count
        }
    }

    private func firstRange(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }

    /// Reports the request's credentials to a log check, if one is installed (header values, query, body).
    private func registerSecrets(of request: Request) {
        let origin = "LoopbackServer request"
        for (name, values) in request.headers {
            for value in values { SecretCrossings.report(.header(name: name, value: value), origin: origin) }
        }
        if let query = request.path.split(separator: "?", maxSplits: 1).dropFirst().first {
            SecretCrossings.report(.requestBody(Data(query.utf8)), origin: origin)
        }
        SecretCrossings.report(.requestBody(request.body), origin: origin)
    }
}

/// Opens a TCP socket listening on 127.0.0.1 at an ephemeral port, for the test servers here: the sign-in's
/// redirect listener's socket code (`LoopbackSocket`, package-visible in TokenKitSignIn), written once.
///
/// - Parameter backlog: The listen queue's length.
/// - Returns: The listening descriptor and its port.
/// - Throws: A `POSIXError` when the socket cannot be opened or bound.
func listenOnLoopback(backlog: Int32) throws -> (descriptor: Int32, port: Int) {
    try LoopbackSocket.listening(backlog: backlog)
}
