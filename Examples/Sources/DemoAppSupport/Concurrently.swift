public import Foundation

/// Runs `count` calls of `operation` at once and returns one line per failed call, the call's `label` first.
///
/// - Parameters:
///   - count: How many calls.
///   - operation: One call, given its index; returns a label for a failure line.
/// - Returns: The failure lines, in completion order.
public func runConcurrently(
    _ count: Int, _ operation: @escaping @Sendable (Int) async throws -> Void,
    label: @escaping @Sendable (Int) -> String = { _ in "request" }
) async -> [String] {
    await withTaskGroup(of: String?.self) { group in
        for index in 0..<count {
            group.addTask {
                do {
                    try await operation(index)
                    return nil
                } catch {
                    return "\(label(index)): \(DemoFailure.describe(error))"
                }
            }
        }
        var failures: [String] = []
        for await failure in group { if let failure { failures.append(failure) } }
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
