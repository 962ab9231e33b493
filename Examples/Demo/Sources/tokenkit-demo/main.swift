import DemoServer
import Foundation
import QuickDemo

// `swift run --package-path Examples/Demo tokenkit-demo [--expiries N] [--requests N] [--token-lifetime N]`, or
// `... tokenkit-demo --serve PORT` for the server alone.
let options: QuickDemo.Options
do {
    options = try QuickDemo.Options(arguments: Array(CommandLine.arguments.dropFirst()))
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
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
        FileHandle.standardOutput.write(Data(banner.utf8))
        while true { try await Task.sleep(for: .seconds(3600)) }
    } catch {
        FileHandle.standardError.write(Data("error: cannot serve on 127.0.0.1:\(port): \(error)\n".utf8))
        exit(1)
    }
}
let passed = await QuickDemo(options: options) { line in print(line) }.run()
exit(passed ? 0 : 1)
