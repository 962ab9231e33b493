import Persistence

// The exclusive-access clauses. None waits for time: a body is held open on a gate while another handle asks for
// the same account, and the held body then makes store round trips, checking after each one that the other body
// has not started. A store that does not exclude lets the other body run within those round trips.

extension TokenStoreConformance {
    /// The holder's body: open the gate, wait until another handle asks, make round trips, (disrupt,) save.
    /// The waiter's body, once it runs, reads what the holder saved and saves the next generation.
    func checkExclusion(_ account: String) async throws {
        let (first, second) = try await (open(), open())
        let sessions = Sessions()
        try await expectNoThrow(.exclusion, "saving generation 1 with .always before the check") {
            try await first.save(sessions.make(generation: 1), account: account, condition: .always)
        }
        let scenario = Scenario()
        let entered = HoldGate()
        let asked = HoldGate()
        let disruption = self.disruption
        let holder = Task {
            defer { entered.open() }
            try await first.withExclusiveAccess(account: account) { () async throws -> Void in
                scenario.update { $0.holderEntered = true }
                entered.open()
                await asked.wait()
                try await watch(first, account, scenario, while: "before its save")
                if let disruption {
                    do {
                        try await disruption()
                    } catch {
                        scenario.update { $0.disruptionError = error }
                        throw error
                    }
                    try await watch(first, account, scenario, while: "after the disruption")
                }
                do {
                    try await first.save(sessions.make(generation: 2), account: account, condition: .generation(1))
                } catch {
                    guard disruption != nil else {
                        throw scenario.fail(
                            Violation(
                                .saveInsideExclusiveAccess,
                                "a save from inside the body (generation 2, .generation(1)) threw \(error)"))
                    }
                    // After a disruption the store may answer with an error and go on retrying in the background;
                    // the next holder must still read generation 2.
                    scenario.update { $0.failedSave = "\(error)" }
                }
            }
        }
        await entered.wait()
        guard scenario.read({ $0.holderEntered }) else {
            let error = await holder.result.failure.map { "\($0)" } ?? "nothing"
            throw Violation(.release, "withExclusiveAccess on a free account threw \(error) without running its body")
        }
        let waiter = Task { () async throws -> TokenStoreRead in
            asked.open()
            // A store may give up waiting when its lock wait is spent (a loaded machine can keep the holder longer
            // than that): the caller asks again, as a refresh client would on its next call.
            var attempt = 1
            while true {
                do {
                    return try await waitingBody(second, account, scenario, sessions)
                } catch let error as PersistenceError where error == .lockTimedOut && attempt < lockWaits {
                    attempt += 1
                }
            }
        }
        let held = await holder.result
        let waited = await waiter.result
        if let violation = scenario.read({ $0.violation }) { throw violation }
        if let error = scenario.read({ $0.disruptionError }) { throw error }
        if let error = held.failure {
            throw Violation(.release, "withExclusiveAccess threw \(error) after its body returned")
        }
        let read: TokenStoreRead
        switch waited {
        case .success(let found): read = found
        case .failure(let error):
            let hint = disruption == nil ? "" : " (errors while acquiring must be retried until the lock wait ends)"
            throw Violation(
                .release,
                "a body waiting on another handle did not run after the holder's body returned: \(error)\(hint)")
        }
        guard case .found(let session) = read, session.generation == 2 else {
            let lost = scenario.read { $0.failedSave }.map {
                "; the holder's save threw \($0) after the disruption and the store did not land it before handing over"
            }
            throw Violation(
                .saveInsideExclusiveAccess,
                "the next holder read \(read.summary), not generation 2 saved inside the previous body\(lost ?? "")")
        }
        try await expectStored(3, on: first, account, .saveInsideExclusiveAccess, after: "a save inside the next body")
    }

    /// How many times the waiter asks for the account when its store's lock wait runs out.
    private var lockWaits: Int { 10 }

    /// The waiter's exclusive access: once its body runs, it reads what the holder saved and saves the next
    /// generation from inside the body.
    private func waitingBody(
        _ second: any TokenStore, _ account: String, _ scenario: Scenario, _ sessions: Sessions
    ) async throws -> TokenStoreRead {
        try await second.withExclusiveAccess(account: account) { () async throws -> TokenStoreRead in
            scenario.update { $0.waiterStarted = true }
            let read = await second.load(account: account)
            if case .found(let session) = read, session.generation == 2 {
                do {
                    try await second.save(
                        sessions.make(generation: 3), account: account, condition: .generation(2))
                } catch {
                    throw scenario.fail(
                        Violation(
                            .saveInsideExclusiveAccess,
                            "a save from inside the next holder's body (generation 3, .generation(2)) threw \(error)"
                        ))
                }
            }
            return read
        }
    }

    /// Store round trips from inside the holder's body, each followed by a check that the other body has not run.
    private func watch(
        _ handle: any TokenStore, _ account: String, _ scenario: Scenario, while phase: String
    ) async throws {
        for trip in 1...roundTrips {
            _ = await handle.load(account: account)
            await Task.yield()
            if scenario.read({ $0.waiterStarted }) {
                throw scenario.fail(
                    Violation(
                        .exclusion,
                        "another handle's body started while a body held the account (\(phase), after \(trip) "
                            + "store round trips)"))
            }
        }
    }

    func checkRelease(_ account: String) async throws {
        struct BodyError: Error {}
        let (first, second) = try await (open(), open())
        let value: Int
        do {
            value = try await first.withExclusiveAccess(account: account) { 42 }
        } catch {
            throw Violation(.release, "withExclusiveAccess of a body returning 42 threw \(error)")
        }
        guard value == 42 else {
            throw Violation(.release, "withExclusiveAccess of a body returning 42 returned \(value)")
        }
        do {
            _ = try await first.withExclusiveAccess(account: account) { () async throws -> Int in throw BodyError() }
            throw Violation(.release, "withExclusiveAccess of a throwing body returned normally")
        } catch is BodyError {
        } catch let violation as Violation {
            throw violation
        } catch {
            throw Violation(.release, "withExclusiveAccess of a body throwing its own error threw \(error) instead")
        }
        do {
            let again = try await second.withExclusiveAccess(account: account) { 7 }
            guard again == 7 else { throw Violation(.release, "withExclusiveAccess returned \(again), not 7") }
        } catch let violation as Violation {
            throw violation
        } catch {
            throw Violation(.release, "after a body threw, another handle's withExclusiveAccess threw \(error)")
        }
    }

    func checkNestedExclusiveAccess(_ account: String) async throws {
        let handle = try await open()
        let session = Sessions().make(generation: 1)
        let value: Int
        do {
            value = try await handle.withExclusiveAccess(account: account) {
                try await handle.withExclusiveAccess(account: account) {
                    try await handle.save(session, account: account, condition: .always)
                    return 42
                }
            }
        } catch {
            throw Violation(.nestedExclusiveAccess, "withExclusiveAccess nested in a body threw \(error)")
        }
        guard value == 42 else {
            throw Violation(.nestedExclusiveAccess, "the nested withExclusiveAccess returned \(value), not 42")
        }
        try await expectStored(1, on: handle, account, .nestedExclusiveAccess, after: "a save in a nested body")
    }

    func checkPerAccountExclusion(_ account: String) async throws {
        let (first, second) = try await (open(), open())
        let other = account + "-other"
        let entered = HoldGate()
        let release = HoldGate()
        let holder = Task {
            defer { entered.open() }
            try await first.withExclusiveAccess(account: account) { () async throws -> Void in
                entered.open()
                await release.wait()
            }
        }
        await entered.wait()
        let outcome: Result<Int, any Error>
        do {
            outcome = .success(try await second.withExclusiveAccess(account: other) { 7 })
        } catch {
            outcome = .failure(error)
        }
        release.open()
        _ = await holder.result
        try? await second.remove(account: other, condition: .always)
        if case .failure(let error) = outcome {
            throw Violation(
                .perAccountExclusion, "withExclusiveAccess for one account threw \(error) while another was held")
        }
    }
}

/// What the two bodies of the exclusion check saw, shared by their tasks.
final class Scenario: Sendable {
    struct State {
        var holderEntered = false
        var waiterStarted = false
        var violation: TokenStoreConformance.Violation?
        var failedSave: String?
        var disruptionError: (any Error)?
    }
    private let state = Locked(State())

    func update(_ change: (inout State) -> Void) { state.withLock { change(&$0) } }

    func read<T>(_ value: (State) -> T) -> T { state.withLock { value($0) } }

    /// Records the first violation and returns it, to be thrown out of the body.
    func fail(_ violation: TokenStoreConformance.Violation) -> TokenStoreConformance.Violation {
        state.withLock { state in
            if state.violation == nil { state.violation = violation }
        }
        return violation
    }
}

extension Result {
    /// The error, if this is a failure.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
