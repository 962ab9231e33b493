import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting

/// `betterauth-demo` as a child process: a full run passes, prints seed 004's messages, and never a cookie; bad
/// input ends with one `error:` line.
extension ChildProcessTests {
    @Suite("betterauth-demo", .logLeakCheck(), .timeLimit(.minutes(2)))
    struct BetterAuthDemoTests {
        @Test func aFullRunPassesShowsTheSeedsMessagesAndPrintsNoCookie() async throws {
            let run = try await BadInputTests.run("betterauth-demo", [])
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.stdout.contains("PASS: every expectation held"))
            #expect(run.stdout.contains("認証方式が更新されました"))
            #expect(run.stdout.contains("セキュリティ向上のため、ユーザー名とパスワードでの再ログインが必要です。"))
            #expect(run.stdout.contains("このユーザー名は既に使用されています"))
            #expect(run.stdout.contains("セッションが期限切れです。再度ログインしてください。"))
            #expect(!run.stdout.contains("session_token="), "a cookie was printed")
            #expect(run.stderr.isEmpty, "\(run.stderr)")
        }

        @Test func aClosedStandardOutputStopsThePrintingNotTheDemo() async throws {
            let run = try await BadInputTests.run("betterauth-demo", ["--language", "en"], closedStdout: true)
            #expect(!run.signalled, "killed by a signal (SIGPIPE?): \(run.stderr)")
            #expect(run.status == 0, "\(run.stderr)")
        }

        @Test func aRefusedConnectionIsOneErrorLine() async throws {
            let run = try await BadInputTests.run("betterauth-demo", ["--server", "http://127.0.0.1:9"])
            BadInputTests.expectOneErrorLine(run, containing: "connection refused")
        }
    }
}
