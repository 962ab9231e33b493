#if os(macOS) || os(Linux)
    public import Foundation

    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Musl)
        import Musl
    #elseif canImport(Darwin)
        import Darwin
    #endif

    /// An app and its extensions as real processes in a test, sharing one session through a ``KeychainSimulator``
    /// file and a shared directory (the App Group container's stand-in: the lock file, notifications), on a wall
    /// clock the test moves.
    ///
    /// It makes a scratch directory holding ``keychainFile`` and ``container``, and writes the clock, in seconds
    /// since 1970, to the file `clock` in the container, which the processes read. Each process is the same
    /// executable, started with the arguments: the Keychain file's path, the container's path, the arguments given
    /// to ``launch(_:arguments:)``, then its name. It is driven over a line protocol: commands to its standard
    /// input, one a line; answers from its standard output, one a line, each `<kind> <value>`; `error <reason>`
    /// answers a command that failed.
    ///
    /// A watchdog is a safety net, not a wait: when the test has not called ``stop()`` within its bound, it runs
    /// `onWatchdog` and kills every process, so their output ends and a test waiting for a line fails instead of
    /// hanging.
    public final class SharedSessionProcesses: Sendable {
        /// The Keychain simulator's file, for a `KeychainSimulator(file:configuration:)` of the test's own.
        public let keychainFile: URL
        /// The shared directory (the App Group container's stand-in).
        public let container: URL
        private let directory: URL
        private let executable: URL
        private let report: @Sendable (String) -> Void
        private let state: Protected<State>
        private struct State {
            var clock: Double
            var processes: [SharedSessionProcess] = []
            var watchdog: Task<Void, Never>?
        }

        /// Makes the directories and sets the clock to `start`.
        ///
        /// - Parameters:
        ///   - executable: The executable every process runs.
        ///   - start: The wall clock at first, in seconds since 1970.
        ///   - watchdog: How long the test may take before the processes are killed.
        ///   - report: Told what went wrong in a process (an `error` answer, a process that would not quit), such as
        ///     `{ Issue.record(Comment(rawValue: $0)) }`.
        ///   - onWatchdog: Runs when the watchdog fires, before the processes are killed.
        /// - Throws: When a directory or the clock file cannot be written.
        public init(
            executable: URL, start: Double, watchdog: Duration, report: @escaping @Sendable (String) -> Void,
            onWatchdog: @escaping @Sendable () -> Void = {}
        ) throws {
            self.executable = executable
            self.report = report
            directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "tokenkit-shared-session-\(UUID().uuidString)", isDirectory: true)
            container = directory.appendingPathComponent("group.com.example.shared", isDirectory: true)
            keychainFile = directory.appendingPathComponent("keychain.json")
            state = Protected(State(clock: start))
            try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
            try setClock(start)
            let watchdogTask = Task { [state] in
                do { try await Task.sleep(for: watchdog) } catch { return }
                onWatchdog()
                for process in state.withLock({ $0.processes }) { process.kill() }
            }
            state.withLock { $0.watchdog = watchdogTask }
        }

        /// The wall clock, for a token server's `now`.
        public var now: @Sendable () -> Date {
            { [state] in Date(timeIntervalSince1970: state.withLock { $0.clock }) }
        }

        /// Moves the wall clock of the test and of every process.
        ///
        /// - Parameter seconds: The new time, in seconds since 1970.
        /// - Throws: When the clock file cannot be written.
        public func setClock(_ seconds: Double) throws {
            state.withLock { $0.clock = seconds }
            try String(seconds).write(
                to: container.appendingPathComponent("clock"), atomically: true, encoding: .utf8)
        }

        /// Starts a process.
        ///
        /// - Parameters:
        ///   - name: Its name (`app`, `widget`), its last argument.
        ///   - arguments: The arguments after the Keychain file and the container, such as the server's URL.
        /// - Returns: The running process.
        /// - Throws: When it cannot be started.
        public func launch(_ name: String, arguments: [String]) throws -> SharedSessionProcess {
            let process = try SharedSessionProcess(
                name: name, executable: executable,
                arguments: [keychainFile.path, container.path] + arguments + [name], report: report)
            state.withLock { $0.processes.append(process) }
            return process
        }

        /// Stops the watchdog, asks every process to quit (killing one that has not within 30 s), and removes the
        /// directories.
        public func stop() {
            let (processes, watchdog) = state.withLock { ($0.processes, $0.watchdog) }
            watchdog?.cancel()
            for process in processes { process.stop() }
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// One process of ``SharedSessionProcesses``: send it commands, read its answers.
    public final class SharedSessionProcess: Sendable {
        /// Its name, its last argument.
        public let name: String
        private let process: Process
        private let input = Pipe()
        private let output = Pipe()
        private let buffer = Protected<[UInt8]>([])
        private let exited = DispatchSemaphore(value: 0)
        private let report: @Sendable (String) -> Void

        init(name: String, executable: URL, arguments: [String], report: @escaping @Sendable (String) -> Void) throws {
            // A process that died (killed by the watchdog, say) must fail the test, not end the test run: writing
            // to its standard input then fails with EPIPE instead of raising SIGPIPE in this process.
            signal(SIGPIPE, SIG_IGN)
            self.name = name
            self.report = report
            process = Process()
            process.executableURL = executable
            process.arguments = arguments
            process.standardInput = input
            process.standardOutput = output
            process.terminationHandler = { [exited] _ in exited.signal() }
            try process.run()
        }

        /// Its process ID.
        public var processIdentifier: Int32 { process.processIdentifier }

        /// Writes `command` and a newline to its standard input (nothing once it has ended).
        ///
        /// - Parameter command: The command.
        public func send(_ command: String) {
            guard process.isRunning else { return }
            try? input.fileHandleForWriting.write(contentsOf: Data((command + "\n").utf8))
        }

        /// The value of the next answer of `kind` (other lines are skipped), read on a thread of its own.
        ///
        /// - Parameter kind: The answer's first word.
        /// - Returns: What follows the kind and a space; `nil` when the output ends first or the process answers
        ///   `error` (reported, so a failure says why instead of waiting for the watchdog).
        public func next(_ kind: String) async -> String? {
            let line: String? = await withCheckedContinuation { continuation in
                Thread.detachNewThread {
                    while let line = self.readLine() {
                        if line.hasPrefix(kind + " ") || line.hasPrefix("error ") {
                            continuation.resume(returning: line)
                            return
                        }
                    }
                    continuation.resume(returning: nil)
                }
            }
            guard let line else { return nil }
            if line.hasPrefix("error ") && !kind.hasPrefix("error") {
                report("\(name) answered \(line) while \(kind) was expected")
                return nil
            }
            return String(line.dropFirst(kind.count + 1))
        }

        /// Whether an answer `<kind> <value>` comes (earlier answers of the kind are skipped) before the output
        /// ends.
        ///
        /// - Parameters:
        ///   - kind: The answer's first word.
        ///   - value: The value awaited.
        /// - Returns: Whether it came.
        public func waitFor(_ kind: String, _ value: String) async -> Bool {
            while let answer = await next(kind) {
                if answer == value { return true }
            }
            return false
        }

        /// Kills the process (`SIGKILL`) and waits until it has ended.
        public func kill() {
            _ = Self.deliver(SIGKILL, to: process.processIdentifier)
            process.waitUntilExit()
        }

        /// Asks the process to quit and waits for it at most 30 s, then kills it: a hung process never holds up the
        /// run.
        func stop() {
            send("quit")
            if exited.wait(timeout: .now() + 30) == .timedOut {
                report("\(name) did not quit within 30 s; killed")
                kill()
            }
        }

        private static func deliver(_ signal: Int32, to process: Int32) -> Int32 {
            #if canImport(Glibc)
                Glibc.kill(process, signal)
            #elseif canImport(Musl)
                Musl.kill(process, signal)
            #else
                Darwin.kill(process, signal)
            #endif
        }

        private func readLine() -> String? {
            while true {
                let line: String? = buffer.withLock { buffer in
                    guard let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
                    let line = String(decoding: buffer[..<newline], as: UTF8.self)
                    buffer.removeSubrange(...newline)
                    return line
                }
                if let line { return line }
                let chunk = output.fileHandleForReading.availableData
                if chunk.isEmpty { return nil }
                buffer.withLock { $0.append(contentsOf: chunk) }
            }
        }
    }

    /// A value behind a lock (`NSLock`: `Synchronization.Mutex` needs macOS 15). `@unchecked Sendable`: every
    /// access goes through ``withLock(_:)``.
    final class Protected<Value>: @unchecked Sendable {
        private let lock = NSLock()
        private var value: Value  // protected by `lock`

        init(_ value: Value) { self.value = value }

        func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
            try lock.withLock { try body(&value) }
        }
    }
#endif
