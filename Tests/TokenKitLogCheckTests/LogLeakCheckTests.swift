import Foundation
import Logging
import Testing
import TokenKitTesting

@testable import TokenKitLogCheck

/// The trait's bookkeeping, with runs of their own (their own secrets), so the planted leaks here are not
/// leaks of the process's run.
@Suite(.logLeakCheck()) struct LogLeakCheckTests {
    private let secrets = TestSecrets()
    private var run: LogLeakRun { LogLeakRun(secrets: secrets) }

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
        let scope = run.begin(testName: "leaky test")
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
        let scope = run.begin(testName: "late secret")
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
        #expect(summary.report.contains("searched for 1 secrets (1 password)"))
        #expect(summary.report.contains("leaks found: 0; secrets too short to search for: 0."))
    }

    @Test func aSecretTooShortToSearchForFailsTheTestThatRegisteredItOnce() throws {
        let run = run
        let scope = run.begin(testName: "short secret")
        let firstLine = ProcessLogCapture.count
        ProcessLogCapture.$scope.withValue(scope) { secrets.register("abc", as: .accessToken, origin: "Short.swift:1") }
        let problems = run.end(scope: scope, firstLine: firstLine)
        #expect(problems.count == 1)
        #expect(try #require(problems.first).contains("access token (from Short.swift:1)"))
        #expect(run.end(scope: scope, firstLine: firstLine).isEmpty, "reported once")
        #expect(!run.summarize().failed, "already reported by a test")
    }

    @Test func aTokenThatCrossesAMockIsSearchedFor() throws {
        // The mock kit reports to `TestSecrets.shared` through the observer the trait installed, so a log line that
        // repeats a bearer token a mock was sent is a leak (searched here, not logged: it would fail the run).
        let before = TestSecrets.shared.count
        SecretCrossings.report(
            .header(name: "Authorization", value: "Bearer crossed-mock-access-token"), origin: "a mock in a test")
        #expect(TestSecrets.shared.count == before + 1)
        let search = LogLeakSearch(secrets: TestSecrets.shared.all)
        let leak = try #require(search.leaks(in: "debug token=crossed-mock-access-token").first)
        #expect(leak.secret.kind == .accessToken)
        #expect(leak.secret.origin == "a mock in a test")
    }

    @Test func aUserIDInATestsLinesFailsThatTestWithoutPrintingIt() throws {
        let run = run
        let scope = run.begin(testName: "names the user")
        let firstLine = ProcessLogCapture.count
        secrets.register(.secret("planted-uq-user@example.org", .userID), origin: "a mock in a test")
        log("session ended user: planted-uq-user@example.org", in: scope)
        let message = try #require(run.end(scope: scope, firstLine: firstLine).first)
        #expect(message.contains("user ID"))
        #expect(!message.contains("planted-uq-user"))
        #expect(run.summarize().report.contains("1 user ID"))
    }

    @Test func aMocksUserIDTooShortToSearchForIsLeftOutButOneATestRegistersIsReported() {
        secrets.register(.secret("user-1", .userID), origin: "a mock in a test")
        #expect(secrets.all.isEmpty)
        secrets.register("user-2", as: .userID)
        #expect(secrets.tooShort.map(\.kind) == [.userID])
    }
}
