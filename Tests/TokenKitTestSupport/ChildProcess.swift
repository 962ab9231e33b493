public import Foundation

/// The probe executables (`TokenStoreProbe`, `KeychainSessionProbe`) that `swift build --build-tests` builds next to
/// the test binary, found and run as child processes.
public enum ChildProcess {
    /// A probe that was not built where the tests look for it.
    public struct NotBuilt: Error, CustomStringConvertible {
        /// What was missing, and where.
        public let description: String
    }

    /// The executable `name` in the build products directory, next to the test binary; `TOKENKIT_PROBE`, when set,
    /// names `TokenStoreProbe` instead.
    ///
    /// - Throws: ``NotBuilt`` when no executable file is there.
    public static func executable(named name: String) throws -> URL {
        if name == "TokenStoreProbe", let path = ProcessInfo.processInfo.environment["TOKENKIT_PROBE"] {
            return URL(fileURLWithPath: path)
        }
        #if os(Linux)
            let products = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        #else
            let bundle = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") } ?? Bundle.main
            let products = bundle.bundleURL.deletingLastPathComponent()
        #endif
        let probe = products.appendingPathComponent(name)
        guard FileManager.default.isExecutableFile(atPath: probe.path) else {
            throw NotBuilt(description: "\(name) was not built next to the tests (\(products.path))")
        }
        return probe
    }

    /// Runs `executable` to its end with `arguments` and `environment`, waiting for it on a thread of its own.
    ///
    /// - Returns: The exit status and everything the child wrote to its standard output.
    public static func run(
        _ executable: URL, arguments: [String], environment: [String: String]
    ) async throws -> (status: Int32, output: Data) {
        try await onOwnThread {
            let process = Process()
            process.executableURL = executable
            process.arguments = arguments
            process.environment = environment
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, data)
        }
    }
}

/// Runs `body` on a thread of its own and returns what it returns.
///
/// For test work that blocks its thread (waiting for a child process, reading a pipe, burning CPU on purpose): on
/// the cooperative pool, which has one thread per core, it would keep every other test's tasks from running
/// meanwhile (on a 2-core machine, two such waits stop the whole test run).
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}
