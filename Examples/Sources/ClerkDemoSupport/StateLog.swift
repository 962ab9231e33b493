public import DemoAppSupport
import Synchronization
public import TokenKit

/// The app's `RootView` loop: iterates `states()`, prints each state as it arrives, and keeps them in order.
public final class StateLog: Sendable {
    private let seen: Recorder<AuthState>
    /// The loop.
    public let task: Task<Void, Never>

    /// Starts the loop.
    ///
    /// - Parameters:
    ///   - states: The states.
    ///   - report: Where to print (or `nil`).
    public init(_ states: AuthStateSequence, report: DemoReport?) {
        let seen = Recorder<AuthState>()
        self.seen = seen
        task = Task {
            for await state in states {
                seen.append(state)
                report?.event("state -> \(state)")
            }
        }
    }

    /// The states so far.
    public var all: [AuthState] { seen.all }

    /// Waits (yielding, at most two seconds) until `count` states have arrived.
    ///
    /// - Parameter count: How many.
    /// - Returns: The states then.
    public func wait(for count: Int) async -> [AuthState] {
        await Poll.until { self.all.count >= count }
        return all
    }
}

/// Prints the auth events as they arrive and remembers the sign-out reasons.
public final class EventLog: Sendable {
    private let reasons: Recorder<AuthEvent.SignOutReason?>
    /// The loop.
    public let task: Task<Void, Never>

    /// Starts the loop.
    ///
    /// - Parameters:
    ///   - events: The stream.
    ///   - report: Where to print (or `nil`).
    public init(_ events: AsyncStream<AuthEvent>, report: DemoReport?) {
        let reasons = Recorder<AuthEvent.SignOutReason?>()
        self.reasons = reasons
        task = Task {
            for await event in events {
                if event.kind == .signedOut { reasons.append(event.reason) }
                report?.event("\(event)")
            }
        }
    }

    /// How many sign-outs were published.
    public var signOuts: Int { reasons.all.count }

    /// Waits (yielding, at most two seconds) for a sign-out after the first `count`, and returns the last one's reason.
    ///
    /// - Parameter count: How many sign-outs came before.
    /// - Returns: The reason, or `nil` when none came.
    public func lastSignOutReason(after count: Int) async -> AuthEvent.SignOutReason? {
        await Poll.until { self.signOuts > count }
        let all = reasons.all
        return all.count > count ? all[all.count - 1] : nil
    }
}

/// Waits for a condition that another task makes true (stream delivery): it yields, never sleeps, and gives up
/// after two seconds so that a missing state fails an expectation instead of hanging the run.
enum Poll {
    static func until(_ condition: @Sendable () -> Bool) async {
        let deadline = ContinuousClock.now + .seconds(2)
        while !condition(), ContinuousClock.now < deadline { await Task.yield() }
    }
}

/// Values appended by one task and read by another.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])

    func append(_ value: Value) { values.withLock { $0.append(value) } }

    var all: [Value] { values.withLock { $0 } }
}
