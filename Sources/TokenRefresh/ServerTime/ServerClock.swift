public import AuthToken
public import Foundation
package import Persistence

/// The token server's clock as this device sees it: the device's wall clock plus an offset learned from the
/// server's answers.
///
/// A device clock that is off by an hour makes a token whose expiry is an absolute `exp` claim look expired at
/// once (and every refresh returns another such token), or look valid long after the server stopped accepting it.
/// Give ``now()`` to the ``TokenRefreshClient`` and the ``TokenEndpoint`` as their wall clock, and wrap the token
/// endpoint's transport in a ``ServerClockTransport``: expiry and proactive refresh are then judged by the
/// server's time.
///
/// One wild `Date` does not move the offset: after the first sample, it is the median of the last
/// ``Configuration/sampleCount`` samples and changes only when most of them agree. Until the first sample, ``now()``
/// is the device's clock. After the user changes the device's clock, call ``reset()``. A client whose
/// ``TokenRefreshClient/Configuration/serverClock`` this is stores the offset with the session and seeds the clock
/// with it when it reads the session. The clock is safe to share between tasks (its state is behind a lock). The
/// article "Judging expiry by the server's clock" in the TokenKit documentation explains the estimate.
public final class ServerClock: Sendable {
    /// How samples become an offset.
    public struct Configuration: Sendable, Hashable {
        /// How many recent samples the median is taken over; at least 1.
        public var sampleCount: Int
        /// How close (seconds) samples must be to the median to agree.
        public var tolerance: TimeInterval
        /// The smallest offset (seconds) applied; a smaller one counts as zero.
        public var minimumOffset: TimeInterval
        /// The largest offset (seconds) a sample may show; a sample further off is dropped.
        public var maximumOffset: TimeInterval

        /// Creates a configuration.
        ///
        /// - Parameters:
        ///   - sampleCount: Samples kept; 5 by default.
        ///   - tolerance: Seconds within which samples agree; 3 by default.
        ///   - minimumOffset: Seconds below which no offset is applied; 2 by default.
        ///   - maximumOffset: Seconds beyond which a sample is dropped; one day by default.
        public init(
            sampleCount: Int = 5, tolerance: TimeInterval = 3, minimumOffset: TimeInterval = 2,
            maximumOffset: TimeInterval = 86_400
        ) {
            self.sampleCount = max(1, sampleCount)
            self.tolerance = tolerance.isFinite ? max(0, tolerance) : 3
            self.minimumOffset = minimumOffset.isFinite ? max(0, minimumOffset) : 2
            self.maximumOffset = maximumOffset.isFinite ? max(0, maximumOffset) : 86_400
        }
    }

    private struct State {
        var samples: [TimeInterval] = []
        var offset: TimeInterval = 0
        /// Whether `samples` holds only a seed (an offset read with a stored session), no sample of this clock's own.
        var seededOnly = false
        /// Whether seeds are ignored: after ``reset()``, a stored offset may predate the change of the device's clock.
        var ignoresSeeds = false
    }

    /// How samples become an offset.
    package let configuration: Configuration
    /// The device's wall clock.
    let deviceNow: @Sendable () -> Date
    /// The samples and the applied offset; every access holds the lock.
    private let state = LockedValue(State())

    /// Creates a clock with no offset yet.
    ///
    /// - Parameters:
    ///   - configuration: How samples become an offset.
    ///   - deviceNow: The device's wall clock; ``/AuthToken/AuthToken/systemNow`` by default.
    public init(
        configuration: Configuration = Configuration(),
        deviceNow: @escaping @Sendable () -> Date = AuthToken.systemNow
    ) {
        self.configuration = configuration
        self.deviceNow = deviceNow
    }

    /// The server's time now: the device's time plus ``offset``.
    ///
    /// - Returns: The estimated server time.
    public func now() -> Date { deviceNow().addingTimeInterval(offset) }

    /// ``now()`` as a closure, for a `now:` parameter.
    public var wallClock: @Sendable () -> Date { { [self] in self.now() } }

    /// The applied offset in seconds: the server's time minus the device's. Zero until the first sample.
    public var offset: TimeInterval { state.withLock { $0.offset } }

    /// Records that the server's time was `serverTime` when the device's was `deviceTime`.
    ///
    /// ``ServerClockTransport`` calls this for every answer with a `Date` header; call it yourself for another
    /// trusted source of the server's time.
    ///
    /// - Parameters:
    ///   - serverTime: The server's time.
    ///   - deviceTime: The device's time at the same moment.
    public func record(serverTime: Date, deviceTime: Date) {
        record(offsets: [serverTime.timeIntervalSince(deviceTime)])
    }

    /// Forgets every sample and the offset (after the device's clock was changed). An offset stored with a session
    /// before is not taken up again by this clock: only new samples set it.
    public func reset() {
        state.withLock { $0 = State(ignoresSeeds: true) }
    }

    /// The offset to store with a session: the applied one once the clock has a sample (its own or a seed), else
    /// `nil`.
    package var learnedOffset: TimeInterval? {
        state.withLock { $0.samples.isEmpty ? nil : $0.offset }
    }

    /// Takes up `offset`, read with a stored session, unless the clock has learned an offset itself: it replaces an
    /// earlier seed and counts as one sample (so a wild first `Date` after it does not move the offset). An offset
    /// that is not finite or is beyond ``Configuration/maximumOffset`` is ignored.
    package func seed(storedOffset offset: TimeInterval) {
        let configuration = self.configuration
        guard offset.isFinite, abs(offset) <= configuration.maximumOffset else { return }
        state.withLock { state in
            guard !state.ignoresSeeds, state.samples.isEmpty || state.seededOnly else { return }
            state.samples = [offset]
            state.seededOnly = true
            state.offset = abs(offset) < configuration.minimumOffset ? 0 : offset
        }
    }

    /// Adds `offsets` (seconds, one per sample) and recomputes the applied offset.
    func record(offsets: [TimeInterval]) {
        let configuration = self.configuration
        let usable = offsets.filter { $0.isFinite && abs($0) <= configuration.maximumOffset }
        guard !usable.isEmpty else { return }
        state.withLock { state in
            state.seededOnly = false
            state.samples.append(contentsOf: usable)
            if state.samples.count > configuration.sampleCount {
                state.samples.removeFirst(state.samples.count - configuration.sampleCount)
            }
            let median = Self.median(state.samples)
            let agreeing = state.samples.filter { abs($0 - median) <= configuration.tolerance }
            let estimate: TimeInterval
            if state.samples.count == 1 {
                estimate = median  // the first sample: better than the device's clock until others come
            } else {
                guard agreeing.count >= 2, agreeing.count * 2 > state.samples.count else { return }
                estimate = Self.median(agreeing)
            }
            state.offset = abs(estimate) < configuration.minimumOffset ? 0 : estimate
        }
    }

    /// The median of `values`, which is not empty.
    private static func median(_ values: [TimeInterval]) -> TimeInterval {
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count.isMultiple(of: 2) ? (sorted[middle - 1] + sorted[middle]) / 2 : sorted[middle]
    }
}

extension TokenRefreshClient.Configuration {
    /// The client's wall clock: the ``serverClock``'s time when one is set, else `now`.
    func wallClock(otherwise now: @escaping @Sendable () -> Date) -> @Sendable () -> Date {
        // Not `??`: its generic result wrapped `now` in two reabstraction thunks, paid on every clock read.
        if let serverClock { return serverClock.wallClock }
        return now
    }
}

extension ServerClock {
    /// Seeds `clock` (when there is one) with the offset stored with the session `read` found, if any.
    package static func seed(_ clock: ServerClock?, from read: TokenStoreRead) {
        guard let clock, case .found(let stored) = read, let offset = stored.serverTimeOffset else { return }
        clock.seed(storedOffset: offset)
    }

    /// `stored` with the offset `clock` has learned, for a write of the session; `stored` itself when there is no
    /// clock or it has learned nothing yet.
    package static func stamp(_ stored: StoredSession, with clock: ServerClock?) -> StoredSession {
        guard let offset = clock?.learnedOffset else { return stored }
        return stored.with(serverTimeOffset: offset)
    }
}
