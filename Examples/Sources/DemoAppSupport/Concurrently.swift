public import Foundation

/// The failed calls of ``runConcurrently(_:_:label:)``.
public struct ConcurrentFailures: Sendable {
    /// One line per failure the library answers for, the call's label first.
    public var lines: [String] = []
    /// Calls that failed with ``TokenOutlivedRequest``: the machine, not the library.
    public var outlived = 0

    /// ` (first: <line>)`, or nothing.
    public var first: String { lines.first.map { " (first: \($0))" } ?? "" }
}

/// Runs `count` calls of `operation` at once and collects the failures.
///
/// - Parameters:
///   - count: How many calls.
///   - operation: One call, given its index.
///   - label: A label for a call's failure line.
/// - Returns: The failures.
public func runConcurrently(
    _ count: Int, _ operation: @escaping @Sendable (Int) async throws -> Void,
    label: @escaping @Sendable (Int) -> String = { _ in "request" }
) async -> ConcurrentFailures {
    await withTaskGroup(of: (any Error, Int)?.self) { group in
        for index in 0..<count {
            group.addTask {
                do {
                    try await operation(index)
                    return nil
                } catch {
                    return (error, index)
                }
            }
        }
        var failures = ConcurrentFailures()
        for await case let (error, index)? in group {
            if error is TokenOutlivedRequest {
                failures.outlived += 1
            } else {
                failures.lines.append("\(label(index)): \(DemoFailure.describe(error))")
            }
        }
        return failures
    }
}

/// Waits in real time until `date` plus `margin` (nothing when it is past): in a demo, this wait is the demo.
///
/// - Parameters:
///   - date: When to wake up, such as a token's expiry.
///   - margin: How long after `date`.
/// - Throws: `CancellationError`.
public func waitInRealTime(until date: Date, margin: Duration = .milliseconds(200)) async throws {
    let seconds = max(0, date.timeIntervalSinceNow)
    try await Task.sleep(for: .milliseconds(Int(seconds * 1000)) + margin)
}
