public import Logging
import TokenKitTesting

/// Captures every log line, at every level, as text, so a test can assert that no secret reaches a log.
///
/// Under the ``LogLeakCheck`` trait each line also goes to the process-wide capture, so it is searched for
/// secrets with the test's other lines.
///
/// ```swift
/// let capture = LogCapture()
/// let client = TokenRefreshClient(strategy: strategy, logger: capture.logger("TokenKit"))
/// // ... run a flow ...
/// #expect(!capture.lines.contains { $0.contains(refreshToken) })
/// ```
public final class LogCapture: Sendable {
    private let captured = Locked<[String]>([])

    /// Creates an empty capture.
    public init() {}

    /// Every line captured so far, in order: level, label, `[source]`, message, then sorted metadata.
    public var lines: [String] { captured.withLock { $0 } }

    /// A logger at `.trace` level whose lines go to this capture.
    ///
    /// - Parameter label: The logger's label.
    /// - Returns: The logger.
    public func logger(_ label: String = "TokenKit") -> Logger {
        Logger(label: label) { _ in
            LineHandler(label: label) { line in
                self.captured.withLock { $0.append(line) }
                ProcessLogCapture.record(line, label: label)
            }
        }
    }
}
