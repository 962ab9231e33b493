import Foundation
import Synchronization

/// Prints a demo's steps, one line each (what happened, and what it proves), keeps count of failed
/// expectations, and prints the summary table.
public final class DemoReport: Sendable {
    private let failures = Mutex(0)

    /// Creates a report and prints the demo's title.
    ///
    /// - Parameter title: What the demo shows.
    public init(title: String) {
        emit(title)
    }

    /// Whether an expectation failed.
    public var failed: Bool { failures.withLock { $0 > 0 } }

    /// Prints a step that checks nothing.
    ///
    /// - Parameters:
    ///   - name: A short name for the step.
    ///   - happened: What happened.
    public func step(_ name: String, _ happened: String) {
        line("   ", name, happened)
    }

    /// Prints a step and whether its expectation held.
    ///
    /// - Parameters:
    ///   - condition: The expectation.
    ///   - name: A short name for the step.
    ///   - happened: What happened.
    ///   - proves: What the step shows when the expectation holds.
    public func expect(_ condition: Bool, _ name: String, _ happened: String, proves: String) {
        if !condition { failures.withLock { $0 += 1 } }
        line(condition ? "ok " : "FAIL", name, happened + (condition ? " -> " + proves : " -> EXPECTED: " + proves))
    }

    /// Prints an event as it arrives.
    ///
    /// - Parameter event: The event's description.
    public func event(_ event: String) {
        line(" * ", "event", event)
    }

    /// Prints the summary table and a last line saying whether every expectation held.
    ///
    /// - Parameter rows: Label and value, in order.
    public func summary(_ rows: [(String, String)]) {
        let width = rows.map(\.0.count).max() ?? 0
        let valueWidth = max(5, rows.map(\.1.count).max() ?? 0)
        let rule =
            "+-" + String(repeating: "-", count: width) + "-+-" + String(repeating: "-", count: valueWidth) + "-+"
        emit(rule)
        for (label, value) in rows {
            let labelPad = String(repeating: " ", count: width - label.count)
            let valuePad = String(repeating: " ", count: valueWidth - value.count)
            emit("| \(label)\(labelPad) | \(valuePad)\(value) |")
        }
        emit(rule)
        let count = failures.withLock { $0 }
        emit(count == 0 ? "PASS: every expectation held" : "FAIL: \(count) expectation(s) did not hold")
    }

    /// Prints `error: <message>` on standard error.
    ///
    /// - Parameter error: What went wrong.
    public func fatal(_ error: any Error) {
        failures.withLock { $0 += 1 }
        DemoOutput.errorLine("error: \(DemoFailure.describe(error))")
    }

    /// Runs `operation`, printing a `waiting` line every ``progressInterval`` while it has not finished, so that
    /// a slow or silent server never means a silent terminal.
    ///
    /// - Parameters:
    ///   - what: What is awaited, such as `the auth server at http://127.0.0.1:8080`.
    ///   - timeout: The transport's timeout in seconds, for the line.
    ///   - operation: The work.
    /// - Returns: What `operation` returns.
    /// - Throws: What `operation` throws.
    public func waiting<T>(for what: String, timeout: Int, _ operation: () async throws -> T) async throws -> T {
        let ticker = Task { [self] in
            let start = ContinuousClock.now
            while true {
                do { try await Task.sleep(for: Self.progressInterval) } catch { return }
                let waited = (ContinuousClock.now - start).components.seconds
                step("waiting", "still waiting for \(what) after \(waited) s (a request gives up after \(timeout) s)")
            }
        }
        defer { ticker.cancel() }
        return try await operation()
    }

    /// How long a step may take before a `waiting` line says so.
    public static let progressInterval = Duration.seconds(2)

    private func line(_ mark: String, _ name: String, _ text: String) {
        let padded = name.count < 12 ? name + String(repeating: " ", count: 12 - name.count) : name
        emit("[\(mark)] \(padded) \(text)")
    }

    /// Writes one line at once, unbuffered, so lines of concurrent tasks never mix (also when piped); a closed
    /// standard output stops the printing, not the demo.
    private func emit(_ line: String) {
        DemoOutput.line(line)
    }
}
