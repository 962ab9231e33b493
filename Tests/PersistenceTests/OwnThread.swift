import Foundation

/// Runs `body` on a thread of its own and returns what it returns.
///
/// For test work that blocks its thread (waiting for a child process, reading a pipe, burning CPU on purpose): on
/// the cooperative pool, which has one thread per core, it would keep every other test's tasks from running
/// meanwhile (on a 2-core machine, two such waits stop the whole test run).
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
