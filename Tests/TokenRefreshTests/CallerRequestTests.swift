import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// The two requests the session machine answers in one round trip: a caller on the slow path
/// (`callerArrived`), and the FitIQ apps' retry, whose pair the app's own persistence keeps (`appPairAsked`,
/// `appPairRefreshed`).
@Suite(.logLeakCheck()) struct CallerRequestTests {
    static let start = SessionMachineTests.start
    static let due = SessionMachineTests.due
    static let fresh = SessionMachineTests.fresh

    // MARK: - The slow path

    @Test func aDueTokenStartsTheSharedRefreshInOneRoundTrip() {
        var machine = SessionMachineTests.machine()
        guard case .run(let flight, let epoch, nil) = machine.callerArrived(.validToken, now: Self.due, elapsed: .zero)
        else {
            Issue.record("expected the refresh to be started and recorded")
            return
        }
        #expect(machine.flight?.flight === flight)
        #expect(machine.isCurrent(epoch))
        guard case .join(let joined) = machine.callerArrived(.validToken, now: Self.due, elapsed: .zero) else {
            Issue.record("expected the next caller to join")
            return
        }
        #expect(joined === flight)
    }

    @Test func aStoreNeverReadIsReadBeforeAnythingIsDecided() {
        var machine = SessionMachine(configuration: .init(), requiresRefreshToken: true)
        guard case .readStore = machine.callerArrived(.validToken, now: Self.due, elapsed: .zero) else {
            Issue.record("expected the store to be read first")
            return
        }
        #expect(machine.flight == nil)
    }

    @Test func aPendingPairIsWrittenAgainBeforeTheCallerIsAnswered() {
        var machine = SessionMachineTests.machine(configuration: .init(persistRetryInterval: .seconds(30)))
        SessionMachineTests.refresh(
            &machine,
            answering: AuthToken(
                accessToken: "access-token-machine-two", refreshToken: "refresh-token-machine-two",
                receivedAt: Self.due, lifetime: 3600),
            persisted: false, elapsed: .zero)
        guard
            case .retryWrite(.save(let pending, _)) = machine.callerArrived(
                .validToken, now: Self.due, elapsed: .seconds(31))
        else {
            Issue.record("expected the pending pair to be written again first")
            return
        }
        #expect(pending.token.accessToken == "access-token-machine-two")
        guard case .token(let token) = machine.callerArrived(.validToken, now: Self.due, elapsed: .seconds(31)) else {
            Issue.record("expected the caller to be answered once the write is under way")
            return
        }
        #expect(token.accessToken == "access-token-machine-two")
    }

    // MARK: - The app's own pair

    @Test func aRefreshTokenRejectedBeforeIsNeverSentForTheAppsRetry() {
        var machine = SessionMachineTests.machine()
        machine.statelessAttemptFailed(.refreshTokenRejected, refreshToken: "refresh-token-stored-by-the-app")
        let pair = SessionMachine.AppPair(
            rejected: "access-token-machine-one", access: "access-token-machine-one",
            refresh: "refresh-token-stored-by-the-app")
        guard case .fail(.refreshTokenRejected) = machine.appPairAsked(pair, loadFailure: nil, now: Self.fresh) else {
            Issue.record("expected the rejected refresh token to fail the retry")
            return
        }
    }

    @Test func aPairChangedByAnotherSessionIsNotRetried() {
        let machine = SessionMachineTests.machine()
        let pair = SessionMachine.AppPair(
            rejected: "access-token-machine-one", access: "access-token-of-another-session",
            refresh: "refresh-token-machine-one")
        guard case .fail(.sessionChanged) = machine.appPairAsked(pair, loadFailure: nil, now: Self.fresh) else {
            Issue.record("expected a pair of another session to fail the retry")
            return
        }
    }

    @Test func aPairTheAppStoredItselfBecomesTheSessionBeforeItIsRefreshed() {
        let machine = SessionMachineTests.machine()
        let pair = SessionMachine.AppPair(
            rejected: nil, access: "access-token-stored-by-the-app", refresh: "refresh-token-stored-by-the-app")
        guard case .adopt(let token, let then) = machine.appPairAsked(pair, loadFailure: nil, now: Self.fresh),
            case .refresh(.seed("refresh-token-stored-by-the-app"), .some("access-token-stored-by-the-app")) = then
        else {
            Issue.record("expected the app's pair to be adopted, then refreshed")
            return
        }
        #expect(token.accessToken == "access-token-stored-by-the-app")
    }

    @Test func aRefreshedPairIsSavedOnlyOverThePairItStartedFrom() {
        let machine = SessionMachineTests.machine()
        let pair = SessionMachine.AppPair(
            rejected: "access-token-machine-one", access: "access-token-machine-one",
            refresh: "refresh-token-machine-one")
        let token = AuthToken(
            accessToken: "access-token-machine-two", refreshToken: "refresh-token-machine-two", receivedAt: Self.due,
            lifetime: 3600)
        guard
            case .save(_, "refresh-token-machine-two") = machine.appPairRefreshed(
                token, from: pair, storedNow: "refresh-token-machine-one")
        else {
            Issue.record("expected the new pair to be saved over the one the refresh started from")
            return
        }
        guard case .fail(.sessionChanged) = machine.appPairRefreshed(token, from: pair, storedNow: "refresh-of-another")
        else {
            Issue.record("expected a pair the app changed meanwhile to be left alone")
            return
        }
    }
}
