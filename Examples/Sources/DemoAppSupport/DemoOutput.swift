import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a demo's lines go. A closed standard output (`fitiq-demo | head -3`) stops the printing instead of
/// killing the process: `SIGPIPE` is ignored, and the first failed write turns further lines into no-ops, so the
/// demo still finishes, cleans up and exits with its verdict.
public enum DemoOutput: Sendable {
    /// Whether standard output refused a write (the reader went away).
    private static let closed = Mutex(false)

    /// Ignores `SIGPIPE`, so that a write to a closed pipe fails with `EPIPE` instead of ending the process.
    public static func ignoreBrokenPipes() {
        signal(SIGPIPE, SIG_IGN)
    }

    /// Whether standard output is closed: lines are no longer printed.
    public static var isClosed: Bool { closed.withLock { $0 } }

    /// Writes one line to standard output at once (lines of concurrent tasks never mix), unless it is closed.
    ///
    /// - Parameter line: The line, without its newline.
    public static func line(_ line: String) {
        guard !isClosed else { return }
        do {
            try FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))
        } catch {
            closed.withLock { $0 = true }
        }
    }

    /// Writes one line to standard error; a failure to do so is ignored (there is nowhere left to say it).
    ///
    /// - Parameter line: The line, without its newline.
    public static func errorLine(_ line: String) {
        try? FileHandle.standardError.write(contentsOf: Data((line + "\n").utf8))
    }
}
