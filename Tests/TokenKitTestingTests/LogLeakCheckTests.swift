import Foundation
import Logging
import Testing
import TokenKitTesting

@testable import TokenKitTestingTraits

/// The trait's bookkeeping, with runs of their own (their own secrets), so the planted leaks here are not
/// leaks of the process's run.
@Suite(.logLeakCheck()) struct LogLeakCheckTests {
    private let secrets = TestSecrets()
    private var run: LogLeakRun { LogLeakRun(secrets: secrets) }
    /// A `Tests` directory of its own (created only by the test that writes a file there), so a run scans no
    /// literal of this repository.
    private let testsRoot = FileManager.default.temporaryDirectory.appending(
        path: "tokenkit-literals-\(UUID().uuidString)/Tests", directoryHint: .isDirectory)
    private var fixture: URL { testsRoot.appending(path: "SomeTests/Fixture.swift") }

    /// Logs `message` through a `Logger(label:)` (the process backend) inside `scope`.
    private func log(_ message: String, in scope: String) {
        ProcessLogCapture.$scope.withValue(scope) {
            Logger(label: "TokenKit.LogLeakCheckTests").trace("\(message)")
        }
    }

    @Test func theProcessLogsAtTraceIntoTheCaptureWithTheTestsScope() throws {
        #expect(ProcessLogCapture.isInstalled)
        let before = ProcessLogCapture.count
        log("a trace line", in: "scope-of-this-test")
        let line = try #require(ProcessLogCapture.lines(after: before).first { $0.scope == "scope-of-this-test" })
        #expect(line.text.hasPrefix("trace TokenKit.LogLeakCheckTests"))
        #expect(ProcessLogCapture.labels.contains("TokenKit.LogLeakCheckTests"))
    }

    @Test func aLogCaptureLineAlsoReachesTheProcessCapture() {
        let before = ProcessLogCapture.count
        ProcessLogCapture.$scope.withValue("scope-of-a-log-capture") {
            LogCapture().logger("TokenKit.Injected").debug("an injected logger's line")
        }
        #expect(
            ProcessLogCapture.lines(after: before).contains {
                $0.scope == "scope-of-a-log-capture" && $0.text.contains("an injected logger's line")
            })
    }

    @Test func aSecretInATestsLinesFailsThatTestWithoutPrintingTheSecret() throws {
        let run = run
        let (scope, problems) = run.begin(testName: "leaky test", testsDirectory: fixture.path)
        #expect(problems.isEmpty)
        let firstLine = ProcessLogCapture.count
        secrets.register("planted-xq-credential-1", as: .refreshToken)
        log("refreshing with planted-xq-credential-1", in: scope)
        log("refreshing with planted-xq-credential-1", in: "another test")
        let reported = run.end(scope: scope, firstLine: firstLine)
        #expect(reported.count == 1, "the other test's line is that test's to report")
        let message = try #require(reported.first)
        #expect(message.contains("refresh token"))
        #expect(!message.contains("planted-xq-credential-1"))
        #expect(!run.summarize().report.contains("planted-xq-credential-1"))
    }

    @Test func aLeakNoTestReportedFailsTheRunAtExit() {
        let run = run
        let (scope, _) = run.begin(testName: "late secret", testsDirectory: fixture.path)
        let firstLine = ProcessLogCapture.count
        log("answer carried planted-zv-late-credential", in: scope)
        #expect(run.end(scope: scope, firstLine: firstLine).isEmpty, "the secret was not known when the test ended")
        secrets.register("planted-zv-late-credential", as: .accessToken)
        let summary = run.summarize()
        #expect(summary.failed)
        #expect(summary.report.contains("Leak outside a test's check: access token"))
        #expect(!summary.report.contains("planted-zv-late-credential"))
    }

    @Test func aRunWithoutLeaksPasses() {
        let run = run
        secrets.register("never-logged-secret", as: .password)
        let summary = run.summarize()
        #expect(!summary.failed)
        #expect(summary.report.contains("searched for 1 secrets (1 password; 0 literals in test sources)"))
        #expect(summary.report.contains("leaks found: 0; secrets too short to search for: 0."))
    }

    @Test func aSecretLiteralTooShortToSearchForIsReportedOnce() throws {
        try FileManager.default.createDirectory(
            at: fixture.deletingLastPathComponent(), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: testsRoot.deletingLastPathComponent()) }
        let file = fixture
        // Built at run time, so the scan of this repository's tests does not find the short literal here.
        let short = "ab" + "c"
        try Data("let token = AuthToken(accessToken: \"\(short)\", refreshToken: \"long-enough-refresh\")".utf8).write(
            to: file)
        let run = run
        let (_, problems) = run.begin(testName: "first", testsDirectory: file.path)
        #expect(problems.count == 1)
        #expect(try #require(problems.first).contains("access token"))
        #expect(try #require(problems.first).contains("Fixture.swift:1"))
        #expect(run.begin(testName: "second", testsDirectory: file.path).problems.isEmpty, "scanned once")
        #expect(Set(secrets.all.map(\.value)) == [short, "long-enough-refresh"])
        #expect(!run.summarize().failed, "already reported by a test")
    }
}
