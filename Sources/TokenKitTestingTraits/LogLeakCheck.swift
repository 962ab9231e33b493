public import Testing
import TokenKitTesting

/// A Swift Testing trait that runs every test with the whole process logging at trace level into a
/// capture, and fails a test whose log lines contain a secret the run knows of.
///
/// Put it on every suite of a test target: `@Suite(.logLeakCheck()) struct LoginTests { ... }`.
///
/// - The first test to start installs ``ProcessLogCapture`` as the process's logging backend (the trait is
///   made while Swift Testing plans the run, before any test body runs), and registers in
///   ``TestSecrets/shared`` the secret literals of the tests directory the suite's file is in.
/// - Every line a test logs, at any level, from any `Logger(label:)` or ``LogCapture``, is tagged with
///   the test; when the test ends its lines are searched for every secret registered so far (by the test
///   kit's fakes, by the literal scan, or by the test). A secret found fails that test, naming its kind,
///   fingerprint and origin and showing the line with the secret replaced; so does a secret too short to
///   search for.
/// - When the process exits, every line (also those logged outside any test) is searched again for every
///   secret, a one-line summary goes to standard error, and the process exits with status 1 if that last
///   search finds a leak no test reported.
public struct LogLeakCheck: SuiteTrait, TestTrait, TestScoping {
    let testsDirectory: String

    /// Applies to every test in the suite, nested suites included.
    public var isRecursive: Bool { true }

    /// Scopes each test case (not the suite as a whole), so each test's lines are checked when it ends.
    ///
    /// - Parameters:
    ///   - test: The test or suite.
    ///   - testCase: The test case, or `nil` for a suite.
    /// - Returns: This trait for a test case, `nil` for a suite.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    /// Runs the test with its log lines tagged, then records an issue for every secret found in them.
    ///
    /// - Parameters:
    ///   - test: The test.
    ///   - testCase: The test case.
    ///   - function: The test body.
    /// - Throws: What the test body throws.
    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // Declared on a suite and on a suite nested in it: check once, in the outer scope.
        guard ProcessLogCapture.scope == nil else { return try await function() }
        let (scope, literalProblems) = LogLeakRun.shared.begin(testName: "\(test.id)", testsDirectory: testsDirectory)
        for problem in literalProblems { Issue.record(Comment(rawValue: problem), sourceLocation: test.sourceLocation) }
        let firstLine = ProcessLogCapture.count
        var thrown: (any Error)?
        do {
            try await ProcessLogCapture.$scope.withValue(scope) { try await function() }
        } catch {
            thrown = error
        }
        for problem in LogLeakRun.shared.end(scope: scope, firstLine: firstLine) {
            Issue.record(Comment(rawValue: problem), sourceLocation: test.sourceLocation)
        }
        if let thrown { throw thrown }
    }
}

extension Trait where Self == LogLeakCheck {
    /// Checks each test's log lines for secrets; see ``LogLeakCheck``.
    ///
    /// - Parameter file: The suite's file (the default); the secret literals of the nearest enclosing
    ///   `Tests` directory are registered.
    /// - Returns: The trait.
    public static func logLeakCheck(file: String = #filePath) -> Self {
        LogLeakRun.install()
        return LogLeakCheck(testsDirectory: file)
    }
}
