import AuthToken
import Foundation
import HTTPTypes
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

@testable import NetworkRetry

/// Every sequence of server answers, explored: a call refreshes at most once and sends its request at most twice,
/// however the nonce challenge and the "401, refresh, retry" rule meet. Once over the retry machine with the real
/// classifier (where a planted bug must be caught), once end to end through `AuthenticatedClient`.
@Suite(.logLeakCheck()) struct DPoPRetryExplorationTests {
    /// What the server may answer to one send.
    enum Answer: CaseIterable {
        case ok, okWithNonce, nonce, nonceAndInvalidToken, nonceWithoutNewNonce, invalidToken, noChallenge
        case invalidProof, insufficientScope, bearerInvalidToken, forbidden, serverError

        /// The answer as sent, with `nonce` as its `DPoP-Nonce` where it carries one.
        func reply(nonce: String) -> MockTransport.Reply {
            switch self {
            case .ok: DPoPAnswer.ok()
            case .okWithNonce: DPoPAnswer.ok(nonce: nonce)
            case .nonce: DPoPAnswer.nonceChallenge(nonce)
            case .nonceAndInvalidToken: DPoPAnswer.nonceChallenge(nonce, alsoInvalidToken: true)
            case .nonceWithoutNewNonce: DPoPAnswer.nonceChallenge(nil)
            case .invalidToken: DPoPAnswer.rejected("invalid_token")
            case .noChallenge: .response(status: .unauthorized)
            case .invalidProof: DPoPAnswer.rejected("invalid_dpop_proof")
            case .insufficientScope: DPoPAnswer.rejected("insufficient_scope")
            case .bearerInvalidToken: unauthorized()
            case .forbidden: .response(status: .forbidden)
            case .serverError: .response(status: .internalServerError)
            }
        }
    }

    /// What a call did with a sequence of answers.
    struct Run: CustomStringConvertible {
        var sends = 0
        var refreshes = 0
        var outcome = ""
        var description: String { "sends \(sends), refreshes \(refreshes), \(outcome)" }
    }

    /// The rules under exploration: the real machine, or a planted bug.
    protocol RetryRules {
        init()
        mutating func answered(_ rejection: RequestRetryMachine.Rejection) -> RequestRetryMachine.Action
    }

    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    /// Every sequence of `length` answers.
    static func sequences(length: Int) -> [[Answer]] {
        guard length > 0 else { return [[]] }
        return sequences(length: length - 1).flatMap { prefix in Answer.allCases.map { prefix + [$0] } }
    }

    /// Drives `Rules` over `answers` with the client's own classifier, counting sends and refreshes.
    static func explore<Rules: RetryRules>(_: Rules.Type, _ answers: [Answer], tokenExpired: Bool) -> Run {
        var rules = Rules()
        var run = Run(sends: 1)
        var expired = tokenExpired
        let token = AuthToken(
            accessToken: "x", tokenType: "DPoP", receivedAt: now.addingTimeInterval(-60), lifetime: 3600)
        let expiredToken = AuthToken(
            accessToken: "x", tokenType: "DPoP", receivedAt: now.addingTimeInterval(-7200), lifetime: 3600)
        for (index, answer) in answers.enumerated() {
            // Each answer has a nonce the client has not seen.
            guard case .response(let response, _) = answer.reply(nonce: "n-\(index)") else { return run }
            let learned = response.headerFields[.dpopNonce] != nil
            let rejection: RequestRetryMachine.Rejection
            if response.status.code == 401 {
                rejection = AuthenticatedClient.dpopRejection(
                    response, code: 401, token: expired ? expiredToken : token, learnedNonce: learned, now: { now })
            } else {
                rejection = .none
            }
            switch rules.answered(rejection) {
            case .deliver:
                run.outcome = "delivered \(response.status.code)"
                return run
            case .fail(let error):
                run.outcome = "\(error)"
                return run
            case .retry(let refreshing):
                if refreshing {
                    run.refreshes += 1
                    expired = false
                }
                run.sends += 1
            }
        }
        run.outcome = "still going after \(answers.count) answers"
        return run
    }

    /// The sequences whose run breaks a bound, with the run.
    static func violations<Rules: RetryRules>(_ rules: Rules.Type) -> [([Answer], Bool, Run)] {
        var found: [([Answer], Bool, Run)] = []
        for answers in sequences(length: 4) {
            for expired in [false, true] {
                let run = explore(rules, answers, tokenExpired: expired)
                if run.sends > 2 || run.refreshes > 1 || run.outcome.hasPrefix("still going") {
                    found.append((answers, expired, run))
                }
            }
        }
        return found
    }

    @Test func theMachineNeverRefreshesTwiceOrSendsThreeTimes() {
        let found = Self.violations(RequestRetryMachine.self)
        #expect(found.isEmpty, "first: \(found.first.map { "\($0.0) expired \($0.1): \($0.2)" } ?? "")")
        // The search covered every sequence of four answers, each with a fresh and an expired token.
        #expect(Self.sequences(length: 4).count == 20_736)
    }

    @Test func theExplorationCatchesAPlantedBug() {
        let found = Self.violations(SeparateNonceAndRefreshRetries.self)
        #expect(!found.isEmpty)
        // The shortest counterexample: a nonce challenge, then a rejected token: three sends.
        let shortest = found.min { $0.0.count < $1.0.count || ($0.0.count == $1.0.count && $0.2.sends > $1.2.sends) }
        #expect(shortest?.2.sends == 3)
    }

    /// Every sequence of three answers, sent through a real `AuthenticatedClient` over a scripted transport.
    @Test(arguments: [false, true])
    func theClientNeverRefreshesTwiceOrSendsThreeTimes(tokenExpired: Bool) async throws {
        var checked = 0
        for answers in Self.sequences(length: 3) {
            let prover = DPoPProver(key: SoftwareDPoPKey(), now: { Self.now })
            let transport = MockTransport(
                script: answers.enumerated().map { $0.element.reply(nonce: "n-\($0.offset)") }
                    + [DPoPAnswer.ok()])
            let provider = DPoPTokenProvider(now: Self.now, expired: tokenExpired)
            let client = AuthenticatedClient(
                transport: transport, tokenProvider: provider,
                configuration: .init(allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!], dpop: prover))
            var status: Int?
            do {
                status = try await client.executeWithAutoRetry(.api()).0.status.code
            } catch is NetworkRetryError {
                status = nil
            }
            let refreshes = await provider.refreshCount
            #expect(transport.requests.count <= 2, "\(answers) expired \(tokenExpired)")
            #expect(refreshes <= 1, "\(answers) expired \(tokenExpired)")
            #expect(status != 401, "\(answers) expired \(tokenExpired)")
            // The machine predicts the same number of sends.
            let predicted = Self.explore(RequestRetryMachine.self, answers, tokenExpired: tokenExpired)
            #expect(predicted.sends == transport.requests.count, "\(answers) expired \(tokenExpired)")
            #expect(predicted.refreshes == refreshes, "\(answers) expired \(tokenExpired)")
            checked += 1
        }
        #expect(checked == 1_728)
    }
}

extension RequestRetryMachine: DPoPRetryExplorationTests.RetryRules {}

/// The planted bug: a nonce retry and a refresh retry, each on its own.
extension SeparateNonceAndRefreshRetries: DPoPRetryExplorationTests.RetryRules {}
