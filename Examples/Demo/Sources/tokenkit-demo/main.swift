import DemoServer
import Foundation
import QuickDemo

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// A closed pipe (`tokenkit-demo | head -3`) fails a write with EPIPE instead of ending the process.
signal(SIGPIPE, SIG_IGN)

/// Writes `text` to a file descriptor unbuffered; a failed write (a closed pipe) is ignored.
func emit(_ text: String, to descriptor: Int32) {
    var bytes = Array(text.utf8)
    _ = write(descriptor, &bytes, bytes.count)
}

// `swift run --package-path Examples/Demo tokenkit-demo [--expiries N] [--requests N] [--token-lifetime N]`, or
// `... tokenkit-demo --serve PORT` for the server alone.
let options: QuickDemo.Options
do {
    options = try QuickDemo.Options(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    emit("error: \(error)\n", to: 2)
    exit(2)
}
if let port = options.servePort {
    // The server alone, for the README's first sample: until Ctrl-C.
    do {
        let server = try DemoTokenServer(accessTokenLifetime: options.tokenLifetime, port: port)
        let banner = """
            token server at \(server.baseURL.absoluteString): user demo@example.com, password password123, client demo-app
            access tokens live \(options.tokenLifetime) s; GET /api/... answers a valid Bearer token; Ctrl-C stops it

            """
        emit(banner, to: 1)
        while true { try await Task.sleep(for: .seconds(3600)) }
    } catch {
        emit("error: cannot serve on 127.0.0.1:\(port): \(error)\n", to: 2)
        exit(1)
    }
}
let passed = await QuickDemo(options: options) { line in print(line) }.run()
exit(passed ? 0 : 1)
