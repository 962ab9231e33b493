#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// This process as a sender of pending sign-outs shared with other processes: a claim on a revocation names the
/// process and machine that sends it, so that a process of the same machine can tell a send in flight from one whose
/// process died mid-send.
package enum SenderProcess {
    /// This process's ID.
    package static var id: Int32 { POSIX.processID }

    /// This machine's host name, or an empty string when it cannot be read.
    package static let host: String = {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }()

    /// Whether the process `id` of machine `host` is known to have ended: it was of this machine, and no process with
    /// that ID runs here now. A process of another machine (or of another PID namespace on a shared volume, which is
    /// taken for ended) is not known to have ended when `host` differs.
    ///
    /// - Parameters:
    ///   - id: The process ID a claim names.
    ///   - host: The host name it names.
    /// - Returns: `true` when that process no longer runs.
    package static func hasEnded(_ id: Int32, on host: String) -> Bool {
        !host.isEmpty && host == Self.host && POSIX.processHasEnded(id)
    }
}
