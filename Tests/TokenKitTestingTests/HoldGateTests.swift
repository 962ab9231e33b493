import Testing
import TokenKitLogCheck
import TokenKitTesting

@Suite(.logLeakCheck()) struct HoldGateTests {
    @Test func anArrivalWaitsUntilTheGateOpensAndLaterArrivalsGoStraightThrough() async {
        let gate = HoldGate()
        let passed = HoldGate(openingAt: 1)
        let first = Task {
            await gate.wait()
            await passed.wait()
        }
        await gate.waitForArrivals(1)
        // Held: the only arrival has not gone on (the gate is closed, and nothing else opens it).
        #expect(passed.arrivals == 0)
        #expect(gate.arrivals == 1)
        gate.open()
        await first.value
        #expect(passed.arrivals == 1)
        await gate.wait()
        #expect(gate.arrivals == 2)
    }

    @Test func aGateOpeningAtACountReleasesEveryArrivalTogether() async {
        let gate = HoldGate(openingAt: 3)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<3 { group.addTask { await gate.wait() } }
        }
        #expect(gate.arrivals == 3)
    }

    @Test func waitingForArrivalsAlreadyMadeReturnsAtOnce() async {
        let gate = HoldGate()
        gate.open()
        await gate.wait()
        await gate.wait()
        await gate.waitForArrivals(2)
        #expect(gate.arrivals == 2)
    }
}
