public import HTTPTypes
import Synchronization

extension DemoAuthServer {
    /// Where a ``RefreshGate`` holds a refresh request.
    public enum GatePoint: Sendable, Hashable {
        /// Before the server looks at the refresh token: nothing has rotated yet.
        case beforeRotation
        /// After the server rotated (the new pair is issued and the presented refresh token retired), before the
        /// answer is written: the worst instant to lose the client, its database or its connection.
        case afterRotation
    }

    /// The request header a client may set to say who it is (the session worker sends `session-worker-PID`);
    /// a ``RefreshGate`` records it, so a test knows which process holds the refresh.
    public static let clientTagHeader = HTTPField.Name("X-Client-Tag")!

    /// Holds the next refresh request (on either refresh endpoint) at `point` until the returned gate is
    /// released, so that a test can inject a fault at that exact instant instead of guessing it with sleeps.
    ///
    /// - Parameter point: Before or after the rotation.
    /// - Returns: The gate; it holds one request.
    public func holdNextRefresh(at point: GatePoint) -> RefreshGate {
        let gate = RefreshGate(point: point)
        authority.addGate(gate)
        return gate
    }
}

/// One held refresh request: see ``DemoAuthServer/holdNextRefresh(at:)``.
public final class RefreshGate: Sendable {
    private struct State {
        var holder: String?
        var held = false
        var waiting: CheckedContinuation<Bool, Never>?
        /// Set once the gate is opened: `true` to go on, `false` to abandon the request.
        var decision: Bool?
    }

    /// Where the request is held.
    public let point: DemoAuthServer.GatePoint
    private let state = Mutex(State())

    init(point: DemoAuthServer.GatePoint) { self.point = point }

    /// Whether a request is held now (or was, before the gate was opened).
    public var isHeld: Bool { state.withLock { $0.held } }

    /// The ``DemoAuthServer/clientTagHeader`` of the held request, if it sent one.
    public var holder: String? { state.withLock { $0.holder } }

    /// Lets the held request go on (a request arriving later passes at once).
    public func release() { open(proceed: true) }

    /// Answers the held request `503` without rotating, as a server does whose client went away before the
    /// request was processed. After the rotation this is the same as ``release()``: the rotation happened.
    public func abandon() { open(proceed: false) }

    private func open(proceed: Bool) {
        let continuation: CheckedContinuation<Bool, Never>? = state.withLock { state in
            guard state.decision == nil else { return nil }
            state.decision = proceed
            defer { state.waiting = nil }
            return state.waiting
        }
        continuation?.resume(returning: proceed)
    }

    /// Holds the calling request until the gate is opened; returns whether it goes on.
    func hold(holder: String?) async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let decided: Bool? = state.withLock { state in
                state.holder = holder
                state.held = true
                if let decision = state.decision { return decision }
                state.waiting = continuation
                return nil
            }
            if let decided { continuation.resume(returning: decided) }
        }
    }
}
