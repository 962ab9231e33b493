public import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small HTTP/1.1 server on 127.0.0.1, on POSIX sockets and Foundation alone: one thread accepts, each connection
/// gets a thread of its own, and every answer closes its connection. Enough for a demo on one machine; not a web
/// server. `@unchecked Sendable`: `stopped` is only touched while holding `lock`; the rest is set once in `init`.
public final class LoopbackHTTPServer: @unchecked Sendable {
    /// A request as it arrived.
    public struct Request: Sendable {
        /// The method, such as `GET`.
        public let method: String
        /// The request target (path and query).
        public let path: String
        /// Header fields with lowercased names, in order.
        public let headers: [(name: String, value: String)]
        /// The body.
        public let body: Data

        /// The first value of a header field.
        ///
        /// - Parameter name: The field's name, in any case.
        /// - Returns: Its value, or `nil`.
        public func header(_ name: String) -> String? {
            headers.first { $0.name == name.lowercased() }?.value
        }
    }

    /// An answer.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// Header fields (`Content-Length` and `Connection` are added).
        public var headers: [(name: String, value: String)]
        /// The body.
        public var body: Data

        /// Creates an answer.
        ///
        /// - Parameters:
        ///   - status: The status code.
        ///   - headers: Header fields.
        ///   - body: The body.
        public init(status: Int, headers: [(name: String, value: String)] = [], body: Data = Data()) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// The largest request head or body read; a bigger one is answered 413.
    static let maximumRequestSize = 1 << 20

    /// The port it listens on.
    public let port: Int
    private let descriptor: Int32
    private let handler: @Sendable (Request) async -> Response
    private let lock = NSLock()
    private var stopped = false

    /// Opens a socket on 127.0.0.1 and starts accepting.
    ///
    /// - Parameters:
    ///   - port: The port; 0 (the default) lets the system pick a free one.
    ///   - handler: Answers each request.
    /// - Throws: A `POSIXError` when the socket cannot be opened, bound (the port is taken) or listened on.
    public init(port: Int = 0, handler: @escaping @Sendable (Request) async -> Response) throws {
        self.handler = handler
        #if canImport(Darwin)
            let fd = socket(AF_INET, SOCK_STREAM, 0)
        #else
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(clamping: port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        descriptor = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    /// Stops accepting; the accept thread closes the socket as it leaves.
    public func stop() {
        lock.lock()
        let wasStopped = stopped
        stopped = true
        lock.unlock()
        if !wasStopped { shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    private var isStopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopped
    }

    private func acceptLoop() {
        while true {
            let client = accept(descriptor, nil, nil)
            guard client >= 0 else {
                if isStopped {
                    close(descriptor)
                    return
                }
                continue
            }
            #if canImport(Darwin)
                var on: Int32 = 1
                setsockopt(client, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
            #endif
            let connection = Thread { [self] in
                serve(client)
                close(client)
            }
            connection.start()
        }
    }

    private func serve(_ client: Int32) {
        let response: Response
        switch readRequest(client) {
        case .none: return
        case .some(.failure(let failure)): response = Response(status: failure.status)
        case .some(.success(let request)): response = answer(request)
        }
        var head = "HTTP/1.1 \(response.status) \(Self.reason(response.status))\r\n"
        head += "Content-Length: \(response.body.count)\r\nConnection: close\r\n"
        for (name, value) in response.headers { head += "\(name): \(value)\r\n" }
        let bytes = Array((head + "\r\n").utf8) + Array(response.body)
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { buffer in
                #if canImport(Darwin)
                    send(client, buffer.baseAddress, buffer.count, 0)
                #else
                    send(client, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL))
                #endif
            }
            guard count > 0 else { return }
            written += count
        }
    }

    /// Runs the async handler for a connection's thread, which waits for it.
    private func answer(_ request: Request) -> Response {
        let result = ResponseBox()
        let done = DispatchSemaphore(value: 0)
        let handler = self.handler
        Task {
            result.set(await handler(request))
            done.signal()
        }
        done.wait()
        return result.value ?? Response(status: 500)
    }

    /// Reads one request; `nil` when the peer went away, a status code for a request it cannot take.
    private func readRequest(_ client: Int32) -> Result<Request, StatusFailure>? {
        var buffer = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 16_384)
        let separator = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        var contentLength = 0
        while headEnd.map({ buffer.count < $0 + 4 + contentLength }) ?? true {
            let count = read(client, &chunk, chunk.count)
            guard count > 0 else { return nil }
            buffer += chunk[..<count]
            if headEnd == nil, let end = Self.firstIndex(of: separator, in: buffer) {
                headEnd = end
                let head = String(decoding: buffer[..<end], as: UTF8.self)
                for line in head.split(separator: "\r\n").dropFirst() {
                    let parts = line.split(separator: ":", maxSplits: 1)
                    if parts.count == 2, parts[0].lowercased() == "content-length" {
                        guard let length = Int(parts[1].trimmingCharacters(in: .whitespaces)), length >= 0 else {
                            return .failure(StatusFailure(status: 400))
                        }
                        contentLength = length
                    }
                }
            }
            if buffer.count > Self.maximumRequestSize || contentLength > Self.maximumRequestSize {
                return .failure(StatusFailure(status: 413))
            }
        }
        guard let headEnd else { return nil }
        var lines = String(decoding: buffer[..<headEnd], as: UTF8.self).split(separator: "\r\n")
        guard !lines.isEmpty else { return .failure(StatusFailure(status: 400)) }
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return .failure(StatusFailure(status: 400)) }
        var headers: [(name: String, value: String)] = []
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2 else { continue }
            headers.append((parts[0].lowercased(), parts[1].trimmingCharacters(in: .whitespaces)))
        }
        let body = Data(buffer[(headEnd + 4)..<(headEnd + 4 + contentLength)])
        return .success(
            Request(method: String(requestLine[0]), path: String(requestLine[1]), headers: headers, body: body))
    }

    /// A request the server refuses before its handler sees it.
    private struct StatusFailure: Error {
        let status: Int
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count)
        where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }

    private static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 413: "Content Too Large"
        default: "Status"
        }
    }
}

/// The handler's answer, handed from its task to the connection's thread. `@unchecked Sendable`: `stored` is only
/// touched while holding `lock`.
private final class ResponseBox: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: LoopbackHTTPServer.Response?

    var value: LoopbackHTTPServer.Response? {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }

    func set(_ response: LoopbackHTTPServer.Response) {
        lock.lock()
        stored = response
        lock.unlock()
    }
}
