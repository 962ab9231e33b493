public import Logging
import Synchronization

/// Captures every log line, at every level, as text, so a test can assert that no secret reaches a log.
///
/// Once ``ProcessLogCapture`` is installed, each line also goes to the process-wide capture.
///
/// ```swift
/// let capture = LogCapture()
/// let client = TokenRefreshClient(strategy: strategy, logger: capture.logger("TokenKit"))
/// // ... run a flow ...
/// #expect(!capture.lines.contains { $0.contains(refreshToken) })
/// ```
public final class LogCapture: Sendable {
    private let captured = Mutex<[String]>([])

    /// Creates an empty capture.
    public init() {}

    /// Every line captured so far, in order: level, label, `[source]`, message, then sorted metadata.
    public var lines: [String] { captured.withLock { $0 } }

    /// A logger at `.trace` level whose lines go to this capture.
    ///
    /// - Parameter label: The logger's label.
    /// - Returns: The logger.
    public func logger(_ label: String = "TokenKit") -> Logger {
        Logger(label: label) { _ in Handler(capture: self, label: label) }
    }

    fileprivate func append(_ line: String, label: String) {
        captured.withLock { $0.append(line) }
        ProcessLogCapture.record(line, label: label)
    }

    private struct Handler: LogHandler {
        let capture: LogCapture
        let label: String
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            capture.append(ProcessLogCapture.render(event, label: label, metadata: metadata), label: label)
        }
    }
}
