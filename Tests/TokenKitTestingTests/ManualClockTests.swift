import Foundation
import Testing
import TokenKitLogCheck
import TokenKitTesting

@Suite(.logLeakCheck()) struct ManualClockTests {
    @Test func aSleeperWakesOnlyWhenTheClockPassesItsDeadline() async throws {
        let clock = ManualClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(10)) }
        await clock.waitForSleepers(count: 1)
        clock.advance(by: .seconds(9))
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        try await sleeper.value
        #expect(clock.sleeperCount == 0)
        #expect(clock.now.offset == .seconds(10))
    }

    @Test func aCancelledSleeperThrowsAndLeaves() async {
        let clock = ManualClock()
        let sleeper = Task { try await clock.sleep(for: .seconds(10)) }
        await clock.waitForSleepers(count: 1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func aDeadlineInThePastReturnsAtOnce() async throws {
        let clock = ManualClock()
        clock.advance(by: .seconds(5))
        try await clock.sleep(until: .init(offset: .seconds(1)))
        #expect(clock.sleeperCount == 0)
    }

    @Test func theWallClockMovesWithTheClock() {
        let clock = ManualClock(startDate: Date(timeIntervalSince1970: 1000))
        let now = clock.wallClock
        clock.advance(by: .milliseconds(1500))
        #expect(now() == Date(timeIntervalSince1970: 1001.5))
    }
}
