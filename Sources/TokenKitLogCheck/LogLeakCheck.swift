public import Testing

/// A Swift Testing trait that runs every test with the whole process logging at trace level into a
/// capture, and fails a test whose log lines contain a secret the run knows of.
///
/// Put it on every suite of a test target: `@Suite(.logLeakCheck()) struct LoginTests { ... }`.
///
/// - The first trait made (Swift Testing makes them while it plans the run, before any test body runs)
///   installs the capture as the process's logging backend, and connects the mock kit of `TokenKitTesting`
///   to ``TestSecrets/shared``: from then on the mocks register every secret that crosses them.
/// - Every line a test logs, at any level, from any `Logger(label:)` or ``LogCapture``, is tagged with
///   the test; when the test ends its lines are searched for every secret registered so far (by the mocks, by
///   ``SecretRegisteringTransport``, or by the test through ``TestSecrets/register(_:as:origin:)``). A secret
///   found fails that test, naming its kind, fingerprint and origin and showing the line with the secret
///   replaced; so does a secret too short to search for.
/// - When the process exits, every line (also those logged outside any test) is searched again for every
///   secret, a one-line summary goes to standard error, and the process exits with status 1 if that last
///   search finds a leak no test reported.
public struct LogLeakCheck: SuiteTrait, TestTrait, TestScoping {
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
        let scope = LogLeakRun.shared.begin(testName: "\(test.id)")
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
    public static func logLeakCheck() -> Self {
        LogLeakRun.install()
        return LogLeakCheck()
    }
}
