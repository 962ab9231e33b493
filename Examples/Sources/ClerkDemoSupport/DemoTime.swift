public import Foundation
import Synchronization

/// The demo's time: real time plus an offset the demo moves forward ("61 seconds later"), so a run shows token
/// expiry, key retirement and JWKS cooldowns without waiting for them. Every party of the demo (issuer, backend,
/// SDK, TokenKit) reads its wall clock here; the backend's JWKS cache reads ``clock``.
public final class DemoTime: Sendable {
    private let offset = Mutex(Duration.zero)

    /// Creates a time with no offset.
    public init() {}

    /// How far the demo has moved time forward.
    public var shift: Duration { offset.withLock { $0 } }

    /// Moves time forward.
    ///
    /// - Parameter duration: How far.
    public func advance(by duration: Duration) { offset.withLock { $0 += duration } }

    /// The wall clock: now plus the offset.
    public var wallClock: @Sendable () -> Date {
        { [self] in Date().addingTimeInterval(Self.seconds(shift)) }
    }

    /// A monotonic clock that jumps with the offset.
    public var clock: ShiftedClock { ShiftedClock(time: self) }

    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// `ContinuousClock` plus a ``DemoTime`` offset.
public struct ShiftedClock: Clock {
    /// The continuous clock's instant.
    public typealias Instant = ContinuousClock.Instant
    let time: DemoTime

    /// Now, shifted.
    public var now: Instant { ContinuousClock.now.advanced(by: time.shift) }
    /// The continuous clock's resolution.
    public var minimumResolution: Duration { ContinuousClock().minimumResolution }

    /// Sleeps until `deadline` in shifted time (an advance during the sleep does not shorten it).
    ///
    /// - Parameters:
    ///   - deadline: When to wake, in shifted time.
    ///   - tolerance: The tolerance.
    /// - Throws: `CancellationError`.
    public func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        try await ContinuousClock().sleep(until: deadline.advanced(by: .zero - time.shift), tolerance: tolerance)
    }
}
