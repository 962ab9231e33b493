public import Foundation
import UnixSignals

/// What every demo executable does around its work: a closed standard output stops the printing (see
/// ``DemoOutput``), and a temporary directory is removed however the run ends: normally, with an error, or on
/// `SIGINT` or `SIGTERM` (the process then exits with 128 plus the signal number, as a shell expects).
public enum DemoProcess: Sendable {
    /// Runs `body` with that protection.
    ///
    /// - Parameters:
    ///   - temporary: A directory to remove at the end (it need not exist yet), or `nil`.
    ///   - body: The demo.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws, after the directory was removed.
    public static func run<T>(removingAtExit temporary: URL?, _ body: () async throws -> T) async throws -> T {
        DemoOutput.ignoreBrokenPipes()
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        let watcher = Task {
            for await signal in signals {
                remove(temporary)
                DemoOutput.errorLine("error: stopped by \(signal)")
                exit(128 + signal.rawValue)
            }
        }
        defer {
            watcher.cancel()
            remove(temporary)
        }
        return try await body()
    }

    private static func remove(_ directory: URL?) {
        guard let directory else { return }
        try? FileManager.default.removeItem(at: directory)
    }
}
