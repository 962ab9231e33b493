import AuthToken
import Foundation
import MetricsTestKit
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// The refresh metrics, recorded into swift-metrics' test backend given to one client (no global bootstrap).
@Suite(.logLeakCheck()) struct RefreshMetricsTests {
    /// A strategy that answers from a script: a token, or an error to throw.
    final class Script: Sendable {
        let answers: Locked<[Result<TokenResponse, TokenRefreshError>]>
        init(_ answers: [Result<TokenResponse, TokenRefreshError>]) { self.answers = Locked(answers) }
        var strategy: ClosureRefreshStrategy {
            ClosureRefreshStrategy { _ in
                try self.answers.withLock { $0.isEmpty ? .failure(.transient) : $0.removeFirst() }.get()
            }
        }
    }

    static func response(_ index: Int) -> TokenResponse {
        let accessToken = "access-token-metrics-\(index)"
        TestSecrets.shared.register(accessToken, as: .accessToken)
        return TokenResponse(accessToken: accessToken, expiresIn: 3600)
    }

    @Test func successesFailuresByClassAndBreakerTripsAreCounted() async throws {
        let metrics = TestMetrics()
        let clock = ManualClock()
        let script = Script([
            .success(Self.response(1)), .failure(.transient.with(connectivityFailure: true)),
            .success(Self.response(2)),
        ])
        let client = TokenRefreshClient(
            strategy: script.strategy,
            configuration: .init(maximumRefreshes: 3, breakerWindow: .seconds(60), backoff: .init(retries: 0)),
            clock: clock, now: { clock.date }, metricsFactory: metrics)
        _ = try await client.validToken()
        await #expect(throws: TokenRefreshError.self) {
            _ = try await client.refreshToken(afterRejectionOf: "access-token-metrics-1")
        }
        clock.advance(by: .seconds(2))
        _ = try await client.refreshToken(afterRejectionOf: "access-token-metrics-1")
        // Three attempts in the window: the fourth is held back by the breaker.
        await #expect(throws: TokenRefreshError.rateLimited) {
            _ = try await client.refreshToken(afterRejectionOf: "access-token-metrics-2")
        }

        #expect(metrics.counterTotal(label: "tokenkit_refreshes_total", dimensions: [("result", "success")]) == 2)
        #expect(metrics.counterTotal(label: "tokenkit_refreshes_total", dimensions: [("result", "failure")]) == 1)
        #expect(
            metrics.counterTotal(label: "tokenkit_refresh_failures_total", dimensions: [("class", "connectivity")]) == 1
        )
        #expect(metrics.counterTotal(label: "tokenkit_refresh_blocked_total", dimensions: [("reason", "breaker")]) == 1)
        #expect(try metrics.expectTimer("tokenkit_refresh_duration_seconds").values.count == 3)
        #expect(try metrics.expectTimer("tokenkit_store_lock_wait_seconds").values.count == 3)
    }

    @Test func failuresAreClassedWithoutAnythingFromTheSession() {
        let table: [(TokenRefreshError, String)] = [
            (.transient, "transient"), (.transient.with(connectivityFailure: true), "connectivity"),
            (.timeout, "timeout"), (.refreshTokenRejected, "rejected"), (.sessionInvalidated, "session_ended"),
            (.configuration, "configuration"), (.storageUnavailable, "storage"), (.malformedResponse, "response"),
            (.cancelled, "cancelled"), (.rateLimited, "other"),
        ]
        for (error, expected) in table {
            #expect(RefreshMetrics.failureClass(of: error) == expected, "\(error)")
            #expect(RefreshMetrics.failureClassNames.contains(expected))
        }
    }
}
