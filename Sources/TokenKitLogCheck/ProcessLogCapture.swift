import Logging
import TokenKitTesting

/// Captures every log line of the process, at trace level, from every logger made with `Logger(label:)`
/// and from every ``LogCapture``, so a whole test run can be searched for secrets.
///
/// Call ``bootstrap()`` before the first logger is made: a `Logger` keeps the handler it was made with, so one
/// made earlier (a `static let`, say) logs elsewhere. It calls `LoggingSystem.bootstrap`, which swift-log
/// allows once per process: a test process that bootstraps its own backend cannot also use this capture. Each
/// line records the ``scope`` it was logged in, so a leak can be blamed on one test. The ``LogLeakCheck`` trait
/// does all of this for a Swift Testing run.
///
/// ```swift
/// ProcessLogCapture.bootstrap()
/// let before = ProcessLogCapture.count
/// try await ProcessLogCapture.$scope.withValue("login test") { try await runLogin() }
/// let lines = ProcessLogCapture.lines(after: before).filter { $0.scope == "login test" }
/// ```
package enum ProcessLogCapture: Sendable {
    /// One captured line.
    package struct Line: Sendable {
        /// Level, label, `[source]`, message, then metadata sorted by key.
        package let text: String
        /// The scope it was logged in, if any.
        package let scope: String?
    }

    private struct State {
        var installed = false
        var lines: [Line] = []
        var labels: Set<String> = []
    }

    private static let state = Locked(State())

    /// The test (or other unit of work) the current task belongs to; lines logged in it carry it.
    @TaskLocal package static var scope: String?

    /// Installs the capture as the process's logging backend, at trace level. Only the first call in a
    /// process does anything.
    ///
    /// - Returns: Whether this call installed it.
    @discardableResult
    package static func bootstrap() -> Bool {
        let first = state.withLock { state in
            defer { state.installed = true }
            return !state.installed
        }
        if first {
            LoggingSystem.bootstrap { label in
                LineHandler(label: label) { line in ProcessLogCapture.record(line, label: label) }
            }
        }
        return first
    }

    /// Whether ``bootstrap()`` has run in this process.
    package static var isInstalled: Bool { state.withLock { $0.installed } }

    /// The number of lines captured so far.
    package static var count: Int { state.withLock { $0.lines.count } }

    /// The labels of the loggers that logged at least one line.
    package static var labels: Set<String> { state.withLock { $0.labels } }

    /// The lines captured after the first `index` ones.
    ///
    /// - Parameter index: A value ``count`` had earlier; 0 for every line.
    /// - Returns: The lines, in order.
    package static func lines(after index: Int) -> [Line] {
        state.withLock { Array($0.lines.dropFirst(index)) }
    }

    /// Adds a line, tagged with the current ``scope``. Does nothing before ``bootstrap()``.
    ///
    /// - Parameters:
    ///   - text: The rendered line.
    ///   - label: The label of the logger that logged it.
    package static func record(_ text: String, label: String) {
        let line = Line(text: text, scope: scope)
        state.withLock { state in
            guard state.installed else { return }
            state.lines.append(line)
            state.labels.insert(label)
        }
    }
}
