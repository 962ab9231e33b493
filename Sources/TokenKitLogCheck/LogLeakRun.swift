import Foundation
import TokenKitTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The state of one process's log check: which leaks were already reported by a test, and the search at exit.
final class LogLeakRun: Sendable {
    /// The run of this process: every test with the trait, searched for ``TestSecrets/shared``.
    static let shared = LogLeakRun(secrets: .shared)

    private struct State {
        var serial = 0
        var testCount = 0
        /// `line index / secret value` pairs a test already reported.
        var reported: Set<String> = []
        var reportedShort: Set<String> = []
        var search: (secretCount: Int, search: LogLeakSearch)?
    }

    private let state = Locked(State())
    private let secrets: TestSecrets

    /// A run that searches for the secrets of `secrets`.
    init(secrets: TestSecrets) { self.secrets = secrets }

    /// Installs the process capture, connects the mock kit to ``TestSecrets/shared``, and installs the search
    /// of ``shared`` at exit; only the first call does anything.
    static func install() {
        ProcessLogCapture.bootstrap()
        _ = TestSecrets.shared
        // Its own flag, not `bootstrap()`'s answer: the capture may have been installed by someone else first.
        let first = installed.withLock { installed in
            defer { installed = true }
            return !installed
        }
        if first { atexit { LogLeakRun.shared.finish() } }
    }

    private static let installed = Locked(false)

    /// Starts a test.
    ///
    /// - Parameter testName: The test's name.
    /// - Returns: The test's scope: its name and a serial number, unique in the process.
    func begin(testName: String) -> String {
        Self.install()
        let serial = state.withLock { state in
            state.serial += 1
            state.testCount += 1
            return state.serial
        }
        return "\(testName) #\(serial)"
    }

    /// Ends a test: searches its lines for every secret known now.
    ///
    /// - Returns: One message per problem: a leak, or a secret the test registered that is too short.
    func end(scope: String, firstLine: Int) -> [String] {
        let secrets = secrets.all
        let search = search(for: secrets)
        var problems: [String] = []
        for (offset, line) in ProcessLogCapture.lines(after: firstLine).enumerated() where line.scope == scope {
            for leak in search.leaks(in: line.text) {
                let key = "\(firstLine + offset)/\(leak.secret.value)"
                if state.withLock({ $0.reported.insert(key).inserted }) {
                    problems.append("A log line contains a secret: \(leak)")
                }
            }
        }
        for secret in secrets where secret.scope == scope && secret.value.utf8.count < TestSecrets.minimumLength {
            if state.withLock({ $0.reportedShort.insert(secret.value).inserted }) {
                problems.append(Self.tooShortMessage(secret))
            }
        }
        return problems
    }

    /// What the search at exit found.
    struct Summary {
        /// The one-line summary, then one line per problem no test reported.
        let report: String
        /// Whether there is a problem no test reported.
        let failed: Bool
    }

    /// Searches every line of the process for every secret.
    func summarize() -> Summary {
        let lines = ProcessLogCapture.lines(after: 0)
        let secrets = secrets.all
        let search = LogLeakSearch(secrets: secrets)
        var leaks: [(index: Int, leak: LogLeakSearch.Leak)] = []
        for (index, line) in lines.enumerated() {
            for leak in search.leaks(in: line.text) { leaks.append((index, leak)) }
        }
        let tooShort = secrets.filter { $0.value.utf8.count < TestSecrets.minimumLength }
        let (reported, reportedShort, tests) = state.withLock { ($0.reported, $0.reportedShort, $0.testCount) }
        let unreported = leaks.filter { !reported.contains("\($0.index)/\($0.leak.secret.value)") }
        let unreportedShort = tooShort.filter { !reportedShort.contains($0.value) }
        let kinds = Dictionary(grouping: secrets, by: \.kind.description).map { "\($0.value.count) \($0.key)" }
        let summary =
            "TokenKit log leak check: \(tests) test cases logged \(lines.count) lines at trace level "
            + "from \(ProcessLogCapture.labels.count) loggers; searched for \(secrets.count) secrets "
            + "(\(kinds.sorted().joined(separator: ", "))); "
            + "leaks found: \(leaks.count); secrets too short to search for: \(tooShort.count)."
        var report = [summary]
        report += unreported.map { "Leak outside a test's check: \($0.leak)" }
        report += unreportedShort.map { Self.tooShortMessage($0) }
        return Summary(
            report: report.joined(separator: "\n"), failed: !unreported.isEmpty || !unreportedShort.isEmpty)
    }

    /// At exit: prints the summary to standard error, and exits with 1 on a problem no test reported.
    func finish() {
        let summary = summarize()
        FileHandle.standardError.write(Data((summary.report + "\n").utf8))
        if summary.failed {
            fflush(nil)
            _exit(1)
        }
    }

    private func search(for secrets: [TestSecrets.Secret]) -> LogLeakSearch {
        let cached = state.withLock { $0.search }
        if let cached, cached.secretCount == secrets.count { return cached.search }
        // The registry only appends: the secrets the cached search indexed keep their forms.
        let search = cached?.search.extended(to: secrets) ?? LogLeakSearch(secrets: secrets)
        state.withLock { $0.search = (secrets.count, search) }
        return search
    }

    private static func tooShortMessage(_ secret: TestSecrets.Secret) -> String {
        "Secret too short to search logs for without false alarms (under \(TestSecrets.minimumLength) bytes): "
            + "\(secret); use a longer one."
    }
}
