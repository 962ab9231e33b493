import Foundation
import Testing
import TokenKitTesting
import TokenKitTestingTraits

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The demo executables on bad input, run as child processes: each ends with one `error:` line on standard
/// error and exit status 1, never a crash, never token text, and never leaves its temporary store behind.
extension ChildProcessTests {
    @Suite("Demo executables on bad input", .logLeakCheck(), .timeLimit(.minutes(2)))
    struct BadInputTests {
        /// A fresh `TMPDIR` for one child, so that what it leaves behind can be seen.
        static func temporaryDirectory() throws -> URL {
            let directory = FileManager.default.temporaryDirectory.appending(path: "demo-tmp-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            return directory
        }

        /// What a child left in its `TMPDIR`.
        static func leftovers(_ directory: URL) throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: directory.path)
        }

        /// Checks the common contract of a failed run and returns its one error line.
        static func expectOneErrorLine(
            _ run: DemoRun, containing message: String, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            #expect(!run.signalled, "crashed: \(run.stderr)", sourceLocation: sourceLocation)
            #expect(run.status == 1, "exit status \(run.status): \(run.stderr)", sourceLocation: sourceLocation)
            #expect(run.errorLines.count == 1, "stderr: \(run.stderr)", sourceLocation: sourceLocation)
            #expect(run.stderr.hasPrefix("error: "), sourceLocation: sourceLocation)
            #expect(run.stderr.contains(message), "stderr: \(run.stderr)", sourceLocation: sourceLocation)
            #expect(!(run.stdout + run.stderr).contains("eyJ"), "a JWT was printed", sourceLocation: sourceLocation)
        }

        @Test func aClosedStandardOutputStopsThePrintingNotTheDemo() async throws {
            let tmp = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: tmp) }
            let run = try await DemoRun.run(
                "fitiq-demo", ["--expiries", "1", "--token-lifetime", "2", "--requests-per-client", "2"],
                temporaryDirectory: tmp, closedStdout: true)
            #expect(!run.signalled, "killed by a signal (SIGPIPE?): \(run.stderr)")
            #expect(run.status == 0, "\(run.stderr)")
            #expect(run.stderr.isEmpty)
            #expect(try Self.leftovers(tmp).isEmpty, "the temporary store was left behind")
        }

        @Test func aHostNameThatDoesNotResolveIsNamedAsSuch() async throws {
            let tmp = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: tmp) }
            let run = try await DemoRun.run(
                "lume-demo", ["--server", "http://tokenkit-demo.invalid:8080"], temporaryDirectory: tmp)
            Self.expectOneErrorLine(
                run,
                containing: "cannot reach the auth server at http://tokenkit-demo.invalid:8080: the host name does not "
                    + "resolve")
        }

        @Test func aRefusedConnectionIsNamedAsSuch() async throws {
            let tmp = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: tmp) }
            let port = try LoopbackServer.closedPort()
            let run = try await DemoRun.run(
                "fitiq-demo", ["--server", "http://127.0.0.1:\(port)"], temporaryDirectory: tmp)
            Self.expectOneErrorLine(run, containing: "connection refused")
            #expect(try Self.leftovers(tmp).isEmpty, "the temporary store was left behind")
        }

        @Test func httpsToAPlainHTTPServerIsATLSMismatch() async throws {
            let tmp = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: tmp) }
            let server = try TestListener(answering: true)
            defer { server.close() }
            let run = try await DemoRun.run(
                "fitiq-demo", ["--server", "https://127.0.0.1:\(server.port)"], temporaryDirectory: tmp)
            Self.expectOneErrorLine(
                run, containing: "the TLS handshake failed; is it an https URL to a plain http server?")
        }

        @Test func aServerThatAnswersButIsNotTheAuthServerIsNamedAsSuch() async throws {
            let tmp = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: tmp) }
            let server = try LoopbackServer { _, _ in
                .init(status: 404, headers: [("Content-Type", "text/html")], body: Data("<html>nope</html>".utf8))
            }
            defer { server.stop() }
            let run = try await DemoRun.run(
                "lume-demo", ["--server", "http://127.0.0.1:\(server.port)"], temporaryDirectory: tmp)
            Self.expectOneErrorLine(
                run,
                containing: "reached http://127.0.0.1:\(server.port), but it is not a TokenKit demo auth server: "
                    + "GET /debug/stats answered HTTP 404")
        }

        @Test func aServerThatNeverAnswersTimesOutWithProgressLines() async throws {
            let tmp = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: tmp) }
            let listener = try TestListener(answering: false)
            defer { listener.close() }
            let url = "http://127.0.0.1:\(listener.port)"
            let run = try await DemoRun.run("fitiq-demo", ["--server", url, "--timeout", "3"], temporaryDirectory: tmp)
            Self.expectOneErrorLine(run, containing: "cannot reach the auth server at \(url): no answer in time")
            #expect(run.stdout.contains("still waiting for the auth server at \(url) after 2 s"), "\(run.stdout)")
            #expect(try Self.leftovers(tmp).isEmpty, "the temporary store was left behind")
        }

        @Test func sigtermRemovesTheTemporaryStore() async throws {
            let tmp = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: tmp) }
            let run = try await DemoRun.run(
                "fitiq-demo", ["--expiries", "5", "--token-lifetime", "10"], temporaryDirectory: tmp,
                whenPrinted: "[ok ] login"
            ) { pid in
                kill(pid, SIGTERM)
            }
            #expect(run.status == 128 + SIGTERM, "\(run.stdout)\n\(run.stderr)")
            #expect(run.stderr == "error: stopped by SIGTERM\n")
            #expect(try Self.leftovers(tmp).isEmpty, "the temporary store was left behind")
        }

        @Test func aFullRunPassesAndPrintsNoToken() async throws {
            let tmp = try Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: tmp) }
            let run = try await DemoRun.run(
                "fitiq-demo", ["--expiries", "1", "--token-lifetime", "2", "--requests-per-client", "4"],
                temporaryDirectory: tmp)
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.stdout.contains("PASS: every expectation held"))
            #expect(!run.stdout.contains("eyJ"), "a JWT was printed")
            #expect(try Self.leftovers(tmp).isEmpty, "the temporary store was left behind")
        }
    }
}
