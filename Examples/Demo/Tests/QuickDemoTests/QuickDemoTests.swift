import DemoServer
import Foundation
import QuickDemo
import Testing
import TokenKit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Collects a run's lines. `@unchecked Sendable`: `stored` is only touched while holding `lock`.
final class Lines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []

    var all: [String] {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }

    func append(_ line: String) {
        lock.lock()
        stored.append(line)
        lock.unlock()
    }
}

@Suite("tokenkit-demo")
struct QuickDemoTests {
    private static func options(expiries: Int, requests: Int) throws -> QuickDemo.Options {
        try QuickDemo.Options(
            arguments: ["--expiries", "\(expiries)", "--requests", "\(requests)", "--token-lifetime", "2"])
    }

    @Test("each expiry costs one refresh however many requests wait, and a restart needs no sign-in")
    func aRunHoldsEveryExpectation() async throws {
        let lines = Lines()
        let passed = await QuickDemo(options: try Self.options(expiries: 2, requests: 40)) { lines.append($0) }.run()
        #expect(passed, "\(lines.all.joined(separator: "\n"))")
        #expect(lines.all.contains { $0.hasPrefix("[ok ] expiry 2/2") })
        #expect(lines.all.contains { $0.hasPrefix("[ok ] restart") })
        #expect(lines.all.last == "PASS: every expectation held")
    }

    /// The output shown in README.md and Examples/README.md is what the demo prints: each fenced block that follows
    /// the command must match a run line for line, with numbers (ports, counts) left out and the repeated expiry
    /// lines counted once.
    @Test("the READMEs show the output the demo prints")
    func theREADMEsShowWhatTheDemoPrints() async throws {
        let lines = Lines()
        _ = await QuickDemo(options: try Self.options(expiries: 1, requests: 10)) { lines.append($0) }.run()
        let printed = Self.shape(lines.all)
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appending(path: "../../../..")
        var blocks = 0
        for document in ["README.md", "Examples/README.md"] {
            let text = try String(contentsOf: root.appending(path: document), encoding: .utf8)
            for block in Self.outputBlocks(in: text) {
                blocks += 1
                #expect(Self.shape(block) == printed, "\(document) shows output the demo does not print")
            }
        }
        #expect(blocks >= 1, "no README shows the demo's output")
    }

    @Test("a bad command line is refused with the usage")
    func aBadCommandLineIsRefused() throws {
        #expect(throws: QuickDemo.UsageError.self) { try QuickDemo.Options(arguments: ["--expiries", "0"]) }
        #expect(throws: QuickDemo.UsageError.self) { try QuickDemo.Options(arguments: ["--requests"]) }
        #expect(throws: QuickDemo.UsageError.self) { try QuickDemo.Options(arguments: ["--verbose"]) }
        #expect(throws: QuickDemo.UsageError.self) { try QuickDemo.Options(arguments: ["--serve", "70000"]) }
        #expect(try QuickDemo.Options(arguments: ["--serve", "8080"]).servePort == 8080)
    }

    @Test("the server alone takes the port asked for, and refuses one that is taken")
    func theServerTakesThePortAskedFor() async throws {
        let first = try DemoTokenServer(accessTokenLifetime: 2)
        defer { first.stop() }
        let port = try #require(first.baseURL.port)
        #expect(throws: POSIXError.self) { try DemoTokenServer(accessTokenLifetime: 2, port: port) }
    }

    @Test("the server answers an expired or missing token with 401, and counts")
    func theServerRefusesExpiredTokens() async throws {
        let server = try DemoTokenServer(accessTokenLifetime: 2)
        defer { server.stop() }
        var request = URLRequest(url: server.baseURL.appending(path: "api/v1/items/0"))
        request.setValue("Bearer a.eyJleHAiOjF9.c2ln", forHTTPHeaderField: "Authorization")  // exp: 1 (1970)
        let (_, expired) = try await URLSession.shared.data(for: request)
        #expect((expired as? HTTPURLResponse)?.statusCode == 401)
        let (_, missing) = try await URLSession.shared.data(from: server.baseURL.appending(path: "api/v1/items/0"))
        #expect((missing as? HTTPURLResponse)?.statusCode == 401)
        let stats = await server.stats()
        #expect(stats.apiRequests == 2 && stats.unauthorized == 2)
    }

    /// The lines of each ```text block whose first line runs the demo, without that line.
    static func outputBlocks(in text: String) -> [[String]] {
        var blocks: [[String]] = []
        var current: [String]?
        for line in text.components(separatedBy: "\n") {
            if line == "```text", current == nil {
                current = []
            } else if line == "```", let lines = current {
                if lines.first?.hasPrefix("$ swift run --package-path Examples/Demo tokenkit-demo") == true {
                    blocks.append(Array(lines.dropFirst()))
                }
                current = nil
            } else if current != nil {
                current?.append(line)
            }
        }
        return blocks
    }

    /// The lines with every number replaced by `#` and runs of spaces by one, consecutive equal lines once.
    static func shape(_ lines: [String]) -> [String] {
        var shaped: [String] = []
        for line in lines {
            let masked = line.replacingOccurrences(of: "[0-9]+", with: "#", options: .regularExpression)
                .replacingOccurrences(of: " +", with: " ", options: .regularExpression)
            if shaped.last != masked { shaped.append(masked) }
        }
        return shaped
    }
}
