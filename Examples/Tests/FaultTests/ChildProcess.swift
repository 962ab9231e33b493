import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One demo executable run as a child process: its exit status and everything it printed.
struct DemoRun: Sendable {
    let status: Int32
    let stdout: String
    let stderr: String
    /// Whether the process ended by a signal rather than by exiting.
    let signalled: Bool

    /// The non-empty lines of standard error.
    var errorLines: [String] { stderr.split(separator: "\n").map(String.init) }

    /// The executable `name` in the build products directory, next to this test binary (`swift test` builds every
    /// target).
    static func executable(_ name: String) throws -> URL {
        let testBinary = try #require(Bundle.main.executableURL, "no path for the test binary")
        var directory = testBinary.deletingLastPathComponent()
        // On macOS the test binary sits inside `<products>/<Package>PackageTests.xctest/Contents/MacOS`.
        while directory.pathComponents.contains(where: { $0.hasSuffix(".xctest") }) {
            directory.deleteLastPathComponent()
        }
        let url = directory.appending(path: name)
        try #require(
            FileManager.default.isExecutableFile(atPath: url.path),
            "\(name) is not built in \(directory.path); run `swift build --package-path Examples` first")
        return url
    }

    /// Runs `name` with `arguments` to the end. Standard output goes to a pipe whose reading end is closed at
    /// once when `closedStdout` is set (as `| head -0` does), else to a file.
    ///
    /// - Parameters:
    ///   - name: The executable's name.
    ///   - arguments: Its arguments.
    ///   - temporaryDirectory: Its `TMPDIR`.
    ///   - closedStdout: Whether nobody reads its standard output.
    ///   - whenPrinted: When standard output contains this, `then` runs with the process ID.
    ///   - then: What to do then, such as sending a signal.
    static func run(
        _ name: String, _ arguments: [String], temporaryDirectory: URL, closedStdout: Bool = false,
        whenPrinted marker: String? = nil, then action: @escaping @Sendable (Int32) -> Void = { _ in }
    ) async throws -> DemoRun {
        let process = Process()
        process.executableURL = try executable(name)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = temporaryDirectory.path
        process.environment = environment
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        let collected = Collected(marker: marker, action: action)
        if closedStdout {
            try output.fileHandleForReading.close()
        } else {
            output.fileHandleForReading.readabilityHandler = { handle in collected.appendOutput(handle.availableData) }
        }
        errors.fileHandleForReading.readabilityHandler = { handle in collected.appendError(handle.availableData) }
        let status = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { process in continuation.resume(returning: process.terminationStatus) }
            do {
                try process.run()
                collected.started(process.processIdentifier)
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        if !closedStdout {
            output.fileHandleForReading.readabilityHandler = nil
            collected.appendOutput(try output.fileHandleForReading.readToEnd() ?? Data())
        }
        errors.fileHandleForReading.readabilityHandler = nil
        collected.appendError(try errors.fileHandleForReading.readToEnd() ?? Data())
        let (stdout, stderr) = collected.texts
        return DemoRun(
            status: status, stdout: stdout, stderr: stderr,
            signalled: process.terminationReason == .uncaughtSignal)
    }
}

/// What a child printed so far. `@unchecked Sendable`: the buffers are only touched while holding `lock`.
private final class Collected: @unchecked Sendable {
    private let lock = NSLock()
    private var output = Data()
    private var errors = Data()
    private var marker: String?
    private var pid: Int32 = 0
    private var seen = false
    private let action: @Sendable (Int32) -> Void

    init(marker: String?, action: @escaping @Sendable (Int32) -> Void) {
        self.marker = marker
        self.action = action
    }

    /// Runs the action once the marker was printed and the process ID is known, whichever comes last.
    func started(_ pid: Int32) {
        let fire: Bool = lock.withLock {
            self.pid = pid
            return seen
        }
        if fire { action(pid) }
    }

    func appendOutput(_ data: Data) {
        let fire: Int32? = lock.withLock {
            output.append(data)
            guard let marker, String(decoding: output, as: UTF8.self).contains(marker) else { return nil }
            self.marker = nil
            seen = true
            return pid > 0 ? pid : nil
        }
        if let fire { action(fire) }
    }

    func appendError(_ data: Data) {
        lock.withLock { errors.append(data) }
    }

    var texts: (String, String) {
        lock.withLock { (String(decoding: output, as: UTF8.self), String(decoding: errors, as: UTF8.self)) }
    }
}

/// The suites that start child processes run one at a time: the four-process test measures token expiries in real
/// time, and other children competing for the machine's cores would make its processes miss them.
@Suite(.serialized) enum ChildProcessTests {}

/// A loopback TCP listener for bad-input tests. Silent (no `reply`), it completes connections (the kernel does,
/// from its backlog) and never answers. Answering, it reads each connection's request head, writes `reply`, and
/// closes.
final class TestListener: Sendable {
    let port: Int
    private let descriptor: Int32

    /// What a plain HTTP server answers a TLS handshake with.
    static let badRequest = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"

    /// An HTTP/1.1 answer with `status`, a `Content-Type` and `body`, closing the connection.
    static func response(_ status: String, contentType: String, body: String) -> String {
        "HTTP/1.1 \(status)\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n\(body)"
    }

    /// A port nothing listens on (bound, then closed).
    static func closedPort() throws -> Int {
        let listener = try TestListener(reply: nil)
        listener.close()
        return listener.port
    }

    init(reply: String?) throws {
        #if canImport(Glibc)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        try #require(descriptor >= 0, "socket() failed")
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        try #require(bound, "cannot listen on 127.0.0.1")
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: address.sin_port))
        if let reply { Thread.detachNewThread { Self.answer(on: descriptor, with: Array(reply.utf8)) } }
    }

    /// Accepts until the listener is shut down; answers each connection once, after its request head (or the first
    /// bytes of something that is not HTTP), so that no unread request bytes turn the close into a reset.
    private static func answer(on descriptor: Int32, with reply: [UInt8]) {
        let headEnd = Array("\r\n\r\n".utf8)
        while true {
            let connection = accept(descriptor, nil, nil)
            guard connection >= 0 else { return }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            repeat {
                let count = read(connection, &buffer, buffer.count)
                guard count > 0 else { break }
                received += buffer[..<count]
            } while received.starts(with: Array("GET ".utf8)) && !received.suffix(4).elementsEqual(headEnd)
                && received.count < 65_536
            _ = write(connection, reply, reply.count)
            closeDescriptor(connection)
        }
    }

    func close() {
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
        Self.closeDescriptor(descriptor)
    }

    private static func closeDescriptor(_ descriptor: Int32) {
        #if canImport(Glibc)
            _ = Glibc.close(descriptor)
        #else
            _ = Darwin.close(descriptor)
        #endif
    }
}
