import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

@Suite(.logLeakCheck()) struct SingleFlightTests {
    @Test func thousandConcurrentCallersWithAnExpiredTokenCauseExactlyOneRefresh() async throws {
        let rig = try await Rig.make()
        await rig.server.enqueue(.hold)
        let client = rig.client
        let tokens = try await withThrowingTaskGroup(of: AuthToken.self) { group in
            for _ in 0..<1000 { group.addTask { try await client.validToken() } }
            // Every caller joins the one refresh before the server answers it.
            await yield { client.refreshWaiterCount == 1000 }
            await rig.server.waitForHeldRequests(count: 1)
            await rig.server.releaseHeldRequests()
            var tokens: [AuthToken] = []
            for try await token in group { tokens.append(token) }
            return tokens
        }
        #expect(tokens.count == 1000)
        #expect(Set(tokens.map(\.accessToken)).count == 1)
        #expect(tokens.first?.accessToken != rig.initial.accessToken)
        #expect(await rig.server.refreshCount == 1)
        #expect(await rig.server.tokenRequestCount == 1)
    }

    @Test func callersArrivingAfterTheRefreshGetTheNewTokenWithoutAnotherRefresh() async throws {
        let rig = try await Rig.make()
        let first = try await rig.client.validToken()
        let second = try await rig.client.validToken()
        #expect(first == second)
        #expect(await rig.server.refreshCount == 1)
    }

    @Test func waitersAreResumedInArrivalOrder() async throws {
        let flight = RefreshFlight()
        let token = AuthToken(
            accessToken: "shared-access-token", receivedAt: Date(timeIntervalSince1970: 0), lifetime: 60)
        var tasks: [Task<AuthToken, any Error>] = []
        for index in 0..<20 {
            tasks.append(Task { try await flight.wait() })
            await yield { flight.waiterCount == index + 1 }
        }
        let order = flight.finish(.success(token))
        #expect(order == Array(0..<20))
        for task in tasks { #expect(try await task.value == token) }
    }

    @Test func aCancelledWaiterLeavesAndIsSkippedWhileTheOthersKeepTheirOrder() async throws {
        let flight = RefreshFlight()
        let token = AuthToken(
            accessToken: "shared-access-token", receivedAt: Date(timeIntervalSince1970: 0), lifetime: 60)
        var tasks: [Task<AuthToken, any Error>] = []
        for index in 0..<5 {
            tasks.append(Task { try await flight.wait() })
            await yield { flight.waiterCount == index + 1 }
        }
        tasks[2].cancel()
        let cancelled = await refreshError { try await tasks[2].value }
        #expect(cancelled == .cancelled)
        #expect(flight.waiterCount == 4)
        #expect(flight.finish(.success(token)) == [0, 1, 3, 4])
        #expect(flight.finish(.failure(.signedOut)).isEmpty)
    }

    @Test func aCancelledCallerLeavesWithoutCancellingTheSharedRefresh() async throws {
        let rig = try await Rig.make()
        await rig.server.enqueue(.hold)
        let client = rig.client
        let first = Task { try await client.validToken() }
        await yield { client.refreshWaiterCount == 1 }
        let second = Task { try await client.validToken() }
        await yield { client.refreshWaiterCount == 2 }
        let third = Task { try await client.validToken() }
        await yield { client.refreshWaiterCount == 3 }

        second.cancel()
        #expect(await refreshError { try await second.value } == .cancelled)
        #expect(client.refreshWaiterCount == 2)

        await rig.server.waitForHeldRequests(count: 1)
        await rig.server.releaseHeldRequests()
        let token = try await first.value
        #expect(try await third.value == token)
        #expect(await rig.server.refreshCount == 1)
        #expect(await rig.stored()?.token == token)
    }

    @Test func theSharedRefreshTimesOutOnTheInjectedClockAndKeepsTheSession() async throws {
        var configuration = TokenRefreshClient.Configuration(refreshTimeout: .seconds(10))
        configuration.backoff.retries = 0
        let rig = try await Rig.make(configuration: configuration)
        await rig.server.enqueue(.hold)
        let client = rig.client
        let caller = Task { try await client.validToken() }
        await rig.server.waitForHeldRequests(count: 1)
        await rig.clock.waitForSleepers(count: 1)
        rig.clock.advance(by: .seconds(10))
        let error = await refreshError { try await caller.value }
        #expect(error == .timeout)
        #expect(error?.isTransient == true)
        #expect(client.isOfflineNow)
        #expect(await rig.stored()?.token == rig.initial)
        #expect(client.currentState == .expired(lastUserID: "user-1"))
    }
}
